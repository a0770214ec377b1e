//! Async durable appends (`Log::append_durable_async`, `Log::sync_to_async`) under tokio.

use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

use seglog::{Error, Log, LogOpenOptions};
use seglog_faults::FaultKind;
use seglog_segment::Io;
use seglog_segment::seam::{Direct, FileId, IoBackend};

use crate::support::*;

/// The production backend, recording which thread runs each `fdatasync`.
#[derive(Debug, Default)]
struct SyncThreads {
    names: Mutex<Vec<Option<String>>>,
}

impl IoBackend for SyncThreads {
    fn opened(&self, path: &Path, file: &File, created: bool) -> FileId {
        Direct.opened(path, file, created)
    }
    fn write_all_vectored_at(
        &self,
        id: FileId,
        file: &File,
        parts: &[&[u8]],
        position: u64,
    ) -> io::Result<()> {
        Direct.write_all_vectored_at(id, file, parts, position)
    }
    fn sync_data(&self, id: FileId, file: &File) -> io::Result<()> {
        let name = std::thread::current().name().map(str::to_owned);
        self.names.lock().unwrap().push(name);
        Direct.sync_data(id, file)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        Direct.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        Direct.remove(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        Direct.sync_dir(dir)
    }
    fn before_index_flush(&self, path: &Path) -> io::Result<()> {
        Direct.before_index_flush(path)
    }
}

#[test]
fn durable_async_appends_complete_without_fsyncing_on_the_executor_thread() {
    let dir = tempfile::tempdir().unwrap();
    let threads = Arc::new(SyncThreads::default());
    let log = Arc::new(
        Log::open_with(
            dir.path(),
            small_config(4096),
            LogOpenOptions {
                clock: clock(),
                io: Io::new(threads.clone()),
                ..LogOpenOptions::default()
            },
        )
        .unwrap(),
    );
    // One executor thread: every poll runs on it.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (tasks, appends) = (8, 25);
    runtime.block_on(async {
        let handles: Vec<_> = (0..tasks)
            .map(|t| {
                let log = Arc::clone(&log);
                tokio::spawn(async move {
                    for i in 0..appends {
                        let info = log
                            .append_durable_async(&numbered(T0 + i, &format!("t{t}"), 2))
                            .await
                            .unwrap();
                        assert!(log.durable_end_offset() > info.last_offset);
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.await.unwrap();
        }
        // Already durable: completes at once, with no fsync.
        let end = log.log_end_offset();
        log.sync_to_async(end).await.unwrap();
    });
    assert_eq!(log.log_end_offset(), tasks * appends * 2);
    assert_eq!(log.durable_end_offset(), log.log_end_offset());
    let names = threads.names.lock().unwrap().clone();
    assert!(!names.is_empty());
    assert!(
        names.iter().all(|n| n.as_deref() == Some("seglog-sync")),
        "an fsync ran on another thread than the log's sync thread: {names:?}"
    );
}

#[test]
fn async_durability_reports_a_failed_fsync_and_offsets_never_written() {
    let (_dir, faults, log) = fresh_with_faults(small_config(4096));
    let log = Arc::new(log);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        match log.sync_to_async(5).await {
            Err(Error::OffsetOutOfRange {
                offset: 4,
                log_end_offset: 0,
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
        log.append_durable_async(&numbered(T0, "a", 3))
            .await
            .unwrap();
        faults.fail_nth_sync(1, FaultKind::Eio);
        let err = log
            .append_durable_async(&numbered(T0, "b", 3))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Poisoned { .. }), "{err:?}");
        // Poisoned: the append itself fails, and the future says so.
        let err = log
            .append_durable_async(&numbered(T0, "c", 1))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Poisoned { .. }), "{err:?}");
    });
    assert_eq!(log.durable_end_offset(), 3);
}
