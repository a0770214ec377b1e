//! The topic id of a partition directory, from Kafka's `partition.metadata` (`version: 0` then
//! `topic_id: <Uuid>`, `PartitionMetadataFile`), which the remote layout's directory names need.

use std::path::Path;

use crate::{Error, Result, Uuid};

/// The file's name in a partition directory.
pub const PARTITION_METADATA_FILE: &str = "partition.metadata";

/// Reads the `topic_id` of the partition in `dir`.
///
/// # Errors
/// [`Error::Partition`] when the file is missing or has no `topic_id` line; [`Error::BadName`]
/// when the id is not a Kafka Uuid.
pub fn read_topic_id(dir: &Path) -> Result<Uuid> {
    let path = dir.join(PARTITION_METADATA_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| Error::Partition {
        dir: dir.to_path_buf(),
        reason: format!("cannot read {PARTITION_METADATA_FILE} (its topic id): {e}"),
    })?;
    let id = text
        .lines()
        .find_map(|line| line.strip_prefix("topic_id:"))
        .map(str::trim)
        .ok_or_else(|| Error::Partition {
            dir: dir.to_path_buf(),
            reason: format!("{PARTITION_METADATA_FILE} has no topic_id line"),
        })?;
    Uuid::parse(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_kafkas_file_and_says_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            read_topic_id(dir.path()),
            Err(Error::Partition { .. })
        ));
        let id = Uuid::random();
        std::fs::write(
            dir.path().join(PARTITION_METADATA_FILE),
            format!("version: 0\ntopic_id: {id}\n"),
        )
        .unwrap();
        assert_eq!(read_topic_id(dir.path()).unwrap(), id);
        std::fs::write(dir.path().join(PARTITION_METADATA_FILE), "version: 0\n").unwrap();
        assert!(matches!(
            read_topic_id(dir.path()),
            Err(Error::Partition { reason, .. }) if reason.contains("topic_id")
        ));
    }
}
