//! openraft's storage conformance suite (`openraft::testing::Suite::test_all`) over
//! [`LogStore`], each case in a fresh directory.

use openraft::StorageError;
use openraft::testing::{StoreBuilder, Suite};
use seglog_raft::{KvConfig, KvStateMachine, LogStore};
use tempfile::TempDir;

struct Builder;

impl StoreBuilder<KvConfig, LogStore<KvConfig>, KvStateMachine, TempDir> for Builder {
    async fn build(
        &self,
    ) -> Result<(TempDir, LogStore<KvConfig>, KvStateMachine), StorageError<u64>> {
        let dir = tempfile::tempdir().map_err(|e| {
            StorageError::from_io_error(openraft::ErrorSubject::Logs, openraft::ErrorVerb::Write, e)
        })?;
        let store = LogStore::open(dir.path().join("log"))?;
        let sm = KvStateMachine::open(dir.path().join("sm"))?;
        Ok((dir, store, sm))
    }
}

#[test]
fn openraft_storage_suite_passes() {
    Suite::test_all(Builder).unwrap();
}
