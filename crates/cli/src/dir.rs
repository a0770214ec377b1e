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
    /// Files named like segment files, snapshots or the state files seglog reads
    /// (`STATE_FILE_NAMES`) that are not regular files (a directory, a FIFO, a device, a
    /// symlink to one, a dangling or looping symlink), with what they are. They are not in
    /// `segments` or `other`: nothing may open them as data.
    pub irregular: Vec<(PathBuf, String)>,
    /// Files named like segment files but not as Kafka names them (a base offset of other
    /// than 20 digits, e.g. a copy saved as `123.log`): not segments (the loader ignores
    /// them; Kafka would load them).
    pub strays: Vec<PathBuf>,
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
            let Some(parsed) = parse_file_name(&path) else {
                if is_state_file_name(&path) {
                    // Followed through symlinks, as the checked open follows them.
                    match std::fs::metadata(&path) {
                        Ok(meta) if meta.is_file() => listing.other.push(path),
                        Ok(meta) => listing.irregular.push((path, file_kind(&meta).to_owned())),
                        Err(e) => listing
                            .irregular
                            .push((path, format!("cannot be opened ({e})"))),
                    }
                    continue;
                }
                if path.is_dir() {
                    listing.subdirs.push(path);
                } else {
                    listing.other.push(path);
                }
                continue;
            };
            // Base offset i64::MAX holds no record (the offset after it overflows).
            let canonical = path.file_name().and_then(|n| n.to_str())
                == Some(seglog_segment::file_name(parsed.base_offset, parsed.kind).as_str())
                && parsed.base_offset < i64::MAX;
            if !canonical {
                listing.strays.push(path);
                continue;
            }
            // Followed through symlinks: what a reader would open.
            match std::fs::metadata(&path) {
                Ok(meta) if meta.is_file() => {}
                Ok(meta) => {
                    listing.irregular.push((path, file_kind(&meta).to_owned()));
                    continue;
                }
                Err(e) => {
                    listing
                        .irregular
                        .push((path, format!("cannot be opened ({e})")));
                    continue;
                }
            }
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

    /// Lists `dir`, which must be a partition directory (not a `log.dirs` root) whose segment
    /// files are all regular files.
    ///
    /// # Errors
    /// As [`DirListing::read`]; [`Error::WrongKind`] for a `log.dirs` root or a segment file
    /// that is not a regular file.
    pub fn partition(dir: &Path) -> Result<Self, Error> {
        let listing = Self::partition_lenient(dir)?;
        if let Some((path, what)) = listing.irregular.first() {
            return Err(Error::NotRegular {
                path: path.clone(),
                what: what.clone(),
            });
        }
        Ok(listing)
    }

    /// As [`DirListing::partition`], but irregular segment files are only listed (for
    /// `verify`, which reports them as problems).
    ///
    /// # Errors
    /// As [`DirListing::read`]; [`Error::WrongKind`] for a `log.dirs` root.
    pub fn partition_lenient(dir: &Path) -> Result<Self, Error> {
        let mut listing = Self::read(dir)?;
        // A partition inside a `log.dirs` root reads the root's checkpoints and marker.
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            for name in &STATE_FILE_NAMES[..6] {
                let path = parent.join(name);
                if name == &seglog::LEADER_EPOCH_CHECKPOINT || path.symlink_metadata().is_err() {
                    continue;
                }
                match std::fs::metadata(&path) {
                    Ok(meta) if meta.is_file() => {}
                    Ok(meta) => listing.irregular.push((path, file_kind(&meta).to_owned())),
                    Err(e) => listing
                        .irregular
                        .push((path, format!("cannot be opened ({e})"))),
                }
            }
        }
        if listing.is_log_dirs_root() {
            return Err(Error::WrongKind {
                path: dir.to_owned(),
                expected: "a log.dirs root, not a partition directory (`seglog info` lists its partitions)",
            });
        }
        Ok(listing)
    }

    /// Lists `dir`, which must hold a log already: a partition directory with at least one
    /// segment `.log` file. For the commands that write into an existing log (`recover`,
    /// `retain`), so that an unrelated or empty directory is refused before anything is
    /// written into it.
    ///
    /// # Errors
    /// As [`DirListing::partition`]; [`Error::WrongKind`] when no `.log` file is there.
    pub fn existing_log(dir: &Path) -> Result<Self, Error> {
        let listing = Self::partition(dir)?;
        if listing.segments.values().all(|s| s.log.is_none()) {
            return Err(Error::WrongKind {
                path: dir.to_owned(),
                expected: "holds no segment (.log) files: not a partition directory, nothing was changed",
            });
        }
        Ok(listing)
    }

    /// True when the directory looks like a `log.dirs` root rather than a partition: no
    /// segment files, and at least one sub-directory named like a partition (`topic-N`).
    pub fn is_log_dirs_root(&self) -> bool {
        self.segments.is_empty() && !self.partition_dirs().is_empty()
    }

    /// Segments `recover` set aside as `<base>.log.damaged` (damaged from their first byte in
    /// flushed data; bytes unchanged, never loaded), with their base offsets and lengths,
    /// oldest first. Their records are not served: `read` and `verify` say so.
    pub fn set_aside(&self) -> Vec<(PathBuf, i64, u64)> {
        let mut out: Vec<(PathBuf, i64, u64)> = self
            .other
            .iter()
            .filter_map(|path| {
                let name = path.file_name()?.to_str()?;
                let base = name.strip_suffix(".log.damaged")?;
                if base.len() != 20 || !base.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                let len = std::fs::metadata(path).ok().filter(|m| m.is_file())?.len();
                Some((path.clone(), base.parse().ok()?, len))
            })
            .collect();
        out.sort_by_key(|(_, base, _)| *base);
        out
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

/// The state files beside the segments that seglog (or `dump`) reads: the offset
/// checkpoints (in a standalone partition directory or a `log.dirs` root), the
/// `leader-epoch-checkpoint`, the clean-shutdown marker and `partition.metadata`. A FIFO, a
/// directory or a dangling symlink at one of these names is refused like a segment file's.
pub const STATE_FILE_NAMES: [&str; 7] = [
    seglog::RECOVERY_POINT_CHECKPOINT,
    seglog::LOG_START_OFFSET_CHECKPOINT,
    seglog::REPLICATION_OFFSET_CHECKPOINT,
    seglog::CLEANER_OFFSET_CHECKPOINT,
    seglog::LEADER_EPOCH_CHECKPOINT,
    seglog::CLEAN_SHUTDOWN_FILE,
    "partition.metadata",
];

fn is_state_file_name(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| STATE_FILE_NAMES.contains(&n))
}

/// What a non-regular file is, for messages.
fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory, not a file"
    } else if t.is_fifo() {
        "a FIFO, not a file"
    } else if t.is_char_device() || t.is_block_device() {
        "a device, not a file"
    } else if t.is_socket() {
        "a socket, not a file"
    } else {
        "not a regular file"
    }
}

/// Checks that `dir`'s name is one a Kafka broker loads as a live partition directory,
/// `<topic>-<partition>`: a topic of 1 to 249 characters of `[A-Za-z0-9._-]` (not `.` or `..`)
/// and a partition number from 0. For logs this command creates: a directory Kafka cannot
/// load would strand its data. A topic ending in `-` is refused too (`topic--1` reads as
/// partition -1, though Kafka would take it as topic `topic-`, partition 1).
///
/// # Errors
/// [`Error::BadPartitionName`] saying what is wrong.
pub fn check_new_partition_name(dir: &Path) -> Result<(), Error> {
    let bad = |reason: &str| Error::BadPartitionName {
        path: dir.to_owned(),
        reason: reason.to_owned(),
    };
    let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
        return Err(bad("the name is not UTF-8 text"));
    };
    let Some((topic, partition)) = name.rsplit_once('-') else {
        return Err(bad("no `-<partition>` at the end of the name"));
    };
    if partition.is_empty() || !partition.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad(
            "the partition after the last `-` is not a number from 0",
        ));
    }
    if partition.parse::<i32>().is_err() {
        return Err(bad("the partition number does not fit in 32 bits"));
    }
    if topic.is_empty() || topic.len() > 249 {
        return Err(bad("the topic must be 1 to 249 characters"));
    }
    if topic == "." || topic == ".." {
        return Err(bad("the topic cannot be `.` or `..`"));
    }
    if let Some(c) = topic
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(bad(&format!(
            "the topic holds {c:?}; Kafka topics use only letters, digits, `.`, `_` and `-`"
        )));
    }
    if topic.ends_with('-') {
        return Err(bad(
            "the topic ends in `-` (a negative partition?); name it `<topic>-<partition>`",
        ));
    }
    Ok(())
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
    fn new_partition_names_follow_kafka() {
        for good in ["orders-0", "a.b_c-d-12", "__consumer_offsets-49"] {
            assert!(check_new_partition_name(Path::new(good)).is_ok(), "{good}");
        }
        for bad in [
            "notpartition2",
            "topic--1",
            "we ird:top!c-0",
            "-0",
            "t-",
            "t-x",
            "t-99999999999",
            "..-1",
        ] {
            assert!(
                matches!(
                    check_new_partition_name(Path::new(bad)),
                    Err(Error::BadPartitionName { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn irregular_segment_files_are_listed_and_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("t-0");
        std::fs::create_dir(&dir).unwrap();
        std::fs::create_dir(dir.join("00000000000000000000.log")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.join("00000000000000000005.log")).unwrap();
        std::os::unix::fs::symlink(
            dir.join("00000000000000000009.log"),
            dir.join("00000000000000000009.log"),
        )
        .unwrap();
        let listing = DirListing::partition_lenient(&dir).unwrap();
        assert!(listing.segments.is_empty());
        let what: Vec<&str> = listing.irregular.iter().map(|(_, w)| w.as_str()).collect();
        assert_eq!(what.len(), 3, "{what:?}");
        assert!(what[0].contains("directory") && what[1].contains("device"));
        assert!(what[2].contains("cannot be opened"), "{what:?}");
        assert!(matches!(
            DirListing::partition(&dir),
            Err(Error::NotRegular { .. })
        ));
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
