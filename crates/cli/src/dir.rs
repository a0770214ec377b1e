//! What a partition directory holds, by file name only (nothing is opened).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use seglog_segment::{FileType, parse_file_name};

use crate::error::Error;

/// The files of one segment (any may be missing).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SegmentFiles {
    /// `.log`
    pub log: Option<PathBuf>,
    /// `.index`
    pub index: Option<PathBuf>,
    /// `.timeindex`
    pub time_index: Option<PathBuf>,
    /// `.txnindex`
    pub txn_index: Option<PathBuf>,
}

/// A partition directory's files, classified.
#[derive(Debug, Clone, Default)]
pub struct DirListing {
    /// The directory.
    pub dir: PathBuf,
    /// Segment files (without a temporary suffix) by base offset.
    pub segments: BTreeMap<i64, SegmentFiles>,
    /// Producer-state snapshots (`N.snapshot`).
    pub snapshots: Vec<PathBuf>,
    /// Files with a `.deleted`, `.cleaned` or `.swap` suffix: an interrupted deletion,
    /// cleaning or swap that the loader finishes or removes.
    pub leftovers: Vec<PathBuf>,
    /// Everything else (checkpoints, `partition.metadata`, KRaft files, unknown files).
    pub other: Vec<PathBuf>,
    /// Sub-directories.
    pub subdirs: Vec<PathBuf>,
}

impl DirListing {
    /// Lists `dir`.
    ///
    /// # Errors
    /// [`Error::NotFound`], [`Error::WrongKind`] when `dir` is not a directory, or
    /// [`Error::Io`].
    pub fn read(dir: &Path) -> Result<Self, Error> {
        let meta = std::fs::metadata(dir).map_err(Error::io("stat", dir))?;
        if !meta.is_dir() {
            return Err(Error::WrongKind {
                path: dir.to_owned(),
                expected: "not a directory",
            });
        }
        let mut listing = DirListing {
            dir: dir.to_owned(),
            ..Default::default()
        };
        let mut paths = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(Error::io("list", dir))? {
            let entry = entry.map_err(Error::io("list", dir))?;
            paths.push(entry.path());
        }
        paths.sort();
        for path in paths {
            if path.is_dir() {
                listing.subdirs.push(path);
                continue;
            }
            let Some(parsed) = parse_file_name(&path) else {
                listing.other.push(path);
                continue;
            };
            if parsed.kind.suffix.is_some() {
                listing.leftovers.push(path);
                continue;
            }
            if parsed.kind.file_type == FileType::Snapshot {
                listing.snapshots.push(path);
                continue;
            }
            let files = listing.segments.entry(parsed.base_offset).or_default();
            match parsed.kind.file_type {
                FileType::Log => files.log = Some(path),
                FileType::Index => files.index = Some(path),
                FileType::TimeIndex => files.time_index = Some(path),
                FileType::TxnIndex | FileType::Snapshot => files.txn_index = Some(path),
            }
        }
        Ok(listing)
    }

    /// Lists `dir`, which must be a partition directory (not a `log.dirs` root).
    ///
    /// # Errors
    /// As [`DirListing::read`]; [`Error::WrongKind`] for a `log.dirs` root.
    pub fn partition(dir: &Path) -> Result<Self, Error> {
        let listing = Self::read(dir)?;
        if listing.is_log_dirs_root() {
            return Err(Error::WrongKind {
                path: dir.to_owned(),
                expected: "a log.dirs root, not a partition directory (`seglog info` lists its partitions)",
            });
        }
        Ok(listing)
    }

    /// True when the directory looks like a `log.dirs` root rather than a partition: no
    /// segment files, and at least one sub-directory named like a partition (`topic-N`).
    pub fn is_log_dirs_root(&self) -> bool {
        self.segments.is_empty() && !self.partition_dirs().is_empty()
    }

    /// Sub-directories whose names parse as partition directories.
    pub fn partition_dirs(&self) -> Vec<PathBuf> {
        self.subdirs
            .iter()
            .filter(|d| {
                d.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| seglog::parse_partition_dir_name(n).is_ok())
            })
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_a_partition_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("orders-3");
        std::fs::create_dir(&dir).unwrap();
        for name in [
            "00000000000000000000.log",
            "00000000000000000000.index",
            "00000000000000000000.timeindex",
            "00000000000000000042.log",
            "00000000000000000042.snapshot",
            "00000000000000000007.log.deleted",
            "00000000000000000099.index",
            "leader-epoch-checkpoint",
        ] {
            std::fs::write(dir.join(name), b"").unwrap();
        }
        let listing = DirListing::read(&dir).unwrap();
        assert_eq!(
            listing.segments.keys().copied().collect::<Vec<_>>(),
            [0, 42, 99]
        );
        assert!(listing.segments[&0].index.is_some() && listing.segments[&42].index.is_none());
        assert!(listing.segments[&99].log.is_none());
        assert_eq!(listing.snapshots.len(), 1);
        assert_eq!(listing.leftovers.len(), 1);
        assert_eq!(listing.other.len(), 1);
        assert!(!listing.is_log_dirs_root());
        let root = DirListing::read(tmp.path()).unwrap();
        assert!(root.is_log_dirs_root());
        assert_eq!(root.partition_dirs(), vec![dir]);
    }

    #[test]
    fn missing_and_wrong_kind() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(matches!(
            DirListing::read(&tmp.path().join("nope")),
            Err(Error::NotFound { .. })
        ));
        let file = tmp.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        assert!(matches!(
            DirListing::read(&file),
            Err(Error::WrongKind { .. })
        ));
    }
}
