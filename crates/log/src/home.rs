//! Where a log's directory-level state lives: the lock, the clean-shutdown marker and the two
//! offset checkpoints (recovery point, log start offset).
//!
//! Kafka keeps them in the log-dir root, shared by every partition. seglog does the same and
//! picks the root by one rule ("the state lives where the lock lives"):
//!
//! * [`crate::LogDir`] owns a root: it locks `<root>/.lock`, consumes `<root>/.kafka_cleanshutdown`
//!   and reads/writes the root checkpoints for all its partitions.
//! * A standalone `Log::open(partition_dir)` whose **parent looks like a log-dirs root** (it holds
//!   `meta.properties` or one of Kafka's root checkpoint files or the marker) and whose name is
//!   `<topic>-<partition>` behaves as a one-partition `LogDir` on that root: same lock, same
//!   files, only its own checkpoint entry is updated, and the marker is consumed at open (so the
//!   other partitions are recovered next time: safe) and rewritten at close only if it was there.
//! * Any other standalone directory is its **own root**: `.lock`, `.kafka_cleanshutdown`,
//!   `recovery-point-offset-checkpoint` and `log-start-offset-checkpoint` inside the partition
//!   directory, in Kafka's formats, with one entry keyed by the directory's topic-partition (or
//!   `seglog 0` when the name is not `<topic>-<partition>`). A broker ignores these files.
//! * A read-only open only peeks at the same files and writes nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use crate::sync::{Mutex, lock};

use crate::checkpoint::{
    CLEANER_OFFSET_CHECKPOINT, CheckpointProblem, LOG_START_OFFSET_CHECKPOINT,
    OffsetCheckpointFile, RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT,
};
use crate::clean_shutdown::{CLEAN_SHUTDOWN_FILE, CleanShutdownMarker};
use crate::lock::DirLock;
use crate::{Result, TopicPartition, parse_partition_dir_name};
use seglog_segment::Io;

/// What the loader needs from the directory-level state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InitialState {
    pub(crate) had_clean_shutdown: bool,
    /// From the recovery-point checkpoint; 0 when missing or unreadable.
    pub(crate) recovery_point: i64,
    /// Whether the recovery-point checkpoint had an entry for this log: only then does the
    /// loader's rule for gaps in unflushed territory apply (without one, nothing says where
    /// flushed data ends, and gaps are kept as Kafka keeps them).
    pub(crate) recovery_point_known: bool,
    /// From the log-start-offset checkpoint; 0 when missing or unreadable.
    pub(crate) log_start_offset: i64,
    /// Whether the log-start-offset checkpoint had an entry for this log (Kafka writes one
    /// only for a log start above the first segment's base, or for a tiered log).
    pub(crate) log_start_offset_known: bool,
    /// From the replication-offset checkpoint (the high watermark); `None` when missing or
    /// unreadable. Restored at open, clamped to the log start and end.
    pub(crate) high_watermark: Option<i64>,
}

/// Where a log's state lives; see the module docs.
#[derive(Debug)]
pub(crate) enum StateHome {
    /// A standalone log with its state in `root` (the partition dir itself, or its parent).
    Standalone {
        /// Held for the log's whole life (see [`SharedRoot::lock`]).
        _lock: Arc<DirLock>,
        root: PathBuf,
        key: TopicPartition,
        /// Whether to write the clean-shutdown marker at close: always for an own root; for a
        /// shared parent root only if the marker was there at open (other partitions were
        /// clean too).
        write_marker: bool,
        /// The entries last written (to skip unchanged writes); its mutex serializes them.
        written: Mutex<Option<Entries>>,
        /// The I/O seam of the checkpoint and marker writes' directory fsyncs.
        io: Io,
    },
    /// Part of a [`crate::LogDir`], which writes the root files for all its logs
    /// (`LogDir::checkpoint`, `tick`, `close`); the log rewrites its own entries, under the
    /// `LogDir`'s checkpoint lock, when its own `flush` / `tick` / `close` moved them or when
    /// they must be durable at once (a truncation, a roll across a gap).
    LogDir {
        /// The root's lock, shared with the `LogDir` and its other logs.
        _lock: Arc<DirLock>,
        root: PathBuf,
        key: TopicPartition,
        checkpoint_lock: Arc<Mutex<()>>,
        /// The entries this log last wrote itself (to skip unchanged writes).
        written: Mutex<Option<Entries>>,
        /// The I/O seam of the checkpoint writes' directory fsyncs.
        io: Io,
    },
    /// Opened read-only: nothing is ever written.
    ReadOnly,
}

/// A log's checkpoint entries: (recovery point, log start offset when Kafka writes it, high
/// watermark).
pub(crate) type Entries = (i64, Option<i64>, i64);

/// What a read-write [`crate::LogDir`] shares with every log it opens.
#[derive(Debug, Clone)]
pub(crate) struct SharedRoot {
    /// The root directory.
    pub(crate) root: PathBuf,
    /// The root's lock: the `LogDir` and each of its logs hold a handle, so the root stays
    /// locked while any of them is alive. A closed log keeps it too, until it is dropped: it
    /// still serves reads from files it maps, which a new owner could shrink under it.
    pub(crate) lock: Arc<DirLock>,
    /// Serializes writes of the root checkpoints (by `LogDir::checkpoint` and by logs that
    /// write their own entries).
    pub(crate) checkpoint_lock: Arc<Mutex<()>>,
    /// The I/O seam of the root's directory fsyncs.
    pub(crate) io: Io,
}

impl SharedRoot {
    /// The home of the partition directory `dir` under this root.
    pub(crate) fn home_for(&self, dir: &Path) -> StateHome {
        StateHome::LogDir {
            _lock: Arc::clone(&self.lock),
            root: self.root.clone(),
            key: key_for(dir),
            checkpoint_lock: Arc::clone(&self.checkpoint_lock),
            written: Mutex::new(None),
            io: self.io.clone(),
        }
    }
}

/// Files in a directory that make it look like a Kafka `log.dirs` root.
const ROOT_FILES: &[&str] = &[
    "meta.properties",
    RECOVERY_POINT_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CLEANER_OFFSET_CHECKPOINT,
    CLEAN_SHUTDOWN_FILE,
];

/// The topic-partition a partition directory's checkpoint entry is keyed by.
pub(crate) fn key_for(dir: &Path) -> TopicPartition {
    // A topic with white space (no Kafka topic has any) would write a checkpoint line that
    // does not parse back: such a directory is keyed like an unnamed one.
    dir.file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| parse_partition_dir_name(n).ok())
        .filter(|p| !p.topic_partition.topic.chars().any(char::is_whitespace))
        .map_or_else(|| TopicPartition::new("seglog", 0), |p| p.topic_partition)
}

/// The root whose files hold this standalone directory's state, and whether it is shared.
fn root_for(dir: &Path) -> (PathBuf, bool) {
    let named = dir
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| parse_partition_dir_name(n).is_ok());
    if named
        && let Some(parent) = dir.parent()
        && !parent.as_os_str().is_empty()
        && ROOT_FILES.iter().any(|f| parent.join(f).exists())
    {
        return (parent.to_path_buf(), true);
    }
    (dir.to_path_buf(), false)
}

/// Reads one entry of a checkpoint: the key's offset, or the only entry of a one-entry file
/// (an own-root directory that was renamed), or none. Unreadable files count as empty, as in
/// Kafka's LogManager, and are added to `problems`.
fn entry(
    file: &OffsetCheckpointFile,
    key: &TopicPartition,
    own_root: bool,
    problems: &mut Vec<CheckpointProblem>,
) -> Option<i64> {
    let (map, problem) = file.read_or_report();
    problems.extend(problem);
    if let Some(offset) = map.get(key) {
        return Some(*offset);
    }
    // A standalone directory's own checkpoint describes only it: an entry for another
    // partition (a copied or renamed directory, a stray edit) is reported, never applied.
    if own_root && let Some(other) = map.keys().next() {
        let prefix = format!("{} {} ", other.topic, other.partition);
        let line = crate::checkpoint::read_bounded(file.path())
            .ok()
            .flatten()
            .and_then(|text| {
                text.lines()
                    .position(|l| l.starts_with(&prefix))
                    .map(|i| i as u64 + 1)
            });
        problems.push(CheckpointProblem {
            path: file.path().to_path_buf(),
            line,
            kind: crate::checkpoint::CheckpointProblemKind::OtherPartition,
        });
    }
    None
}

/// The state of `key` in `root`'s checkpoints, and the checkpoint files that were read as
/// empty because they could not be read or parsed.
fn read_state(
    root: &Path,
    key: &TopicPartition,
    own_root: bool,
    clean: bool,
) -> (InitialState, Vec<CheckpointProblem>) {
    let mut problems = Vec::new();
    let recovery_point = entry(
        &OffsetCheckpointFile::new(root.join(RECOVERY_POINT_CHECKPOINT)),
        key,
        own_root,
        &mut problems,
    );
    let log_start_offset = entry(
        &OffsetCheckpointFile::new(root.join(LOG_START_OFFSET_CHECKPOINT)),
        key,
        own_root,
        &mut problems,
    );
    let high_watermark = entry(
        &OffsetCheckpointFile::new(root.join(REPLICATION_OFFSET_CHECKPOINT)),
        key,
        own_root,
        &mut problems,
    );
    let state = InitialState {
        had_clean_shutdown: clean,
        recovery_point: recovery_point.unwrap_or(0),
        recovery_point_known: recovery_point.is_some(),
        log_start_offset: log_start_offset.unwrap_or(0),
        log_start_offset_known: log_start_offset.is_some(),
        high_watermark,
    };
    (state, problems)
}

/// Opens a standalone directory's state: lock, then consume the marker (before anything is
/// loaded: KAFKA-10471), then read the checkpoints.
///
/// # Errors
/// [`crate::Error::Locked`] if the root is locked; I/O errors of the lock or marker.
pub(crate) fn open_standalone(
    dir: &Path,
    io: &Io,
) -> Result<(StateHome, InitialState, Vec<CheckpointProblem>)> {
    let (root, shared) = root_for(dir);
    let lock = Arc::new(DirLock::acquire(&root)?);
    let clean = CleanShutdownMarker::new(&root, io).consume()?;
    let key = key_for(dir);
    let (state, problems) = read_state(&root, &key, !shared, clean);
    let write_marker = !shared || clean;
    Ok((
        StateHome::Standalone {
            _lock: lock,
            root,
            key,
            write_marker,
            written: Mutex::new(None),
            io: io.clone(),
        },
        state,
        problems,
    ))
}

/// Peeks at a directory's state for a read-only open: nothing is locked, created or deleted.
///
/// # Errors
/// [`crate::Error::Io`] when the clean-shutdown marker's name holds something other than a
/// regular file.
pub(crate) fn peek_read_only(dir: &Path) -> Result<(InitialState, Vec<CheckpointProblem>)> {
    let (root, shared) = root_for(dir);
    let clean = CleanShutdownMarker::new(&root, &Io::direct()).exists()?;
    Ok(read_state(&root, &key_for(dir), !shared, clean))
}

impl StateHome {
    /// Writes this log's entries into its root's checkpoints, keeping the other partitions'
    /// entries (a read-only home writes nothing). `entries` is called under the lock that
    /// serializes every write of them (a `LogDir`'s checkpoint lock, which its own
    /// `checkpoint` holds too, or the standalone home's), so an older value never lands
    /// after a newer one: a truncation's lowered recovery point is never overwritten by a
    /// stale, higher one. With `force` false the write is skipped when the entries are the
    /// ones this home last wrote.
    ///
    /// # Errors
    /// I/O errors of the atomic checkpoint writes.
    pub(crate) fn write_checkpoints(
        &self,
        force: bool,
        entries: impl FnOnce() -> Entries,
    ) -> Result<()> {
        let (root, key, written, io, _guard) = match self {
            Self::Standalone {
                root,
                key,
                written,
                io,
                ..
            } => (root, key, written, io, None),
            Self::LogDir {
                root,
                key,
                checkpoint_lock,
                written,
                io,
                ..
            } => (root, key, written, io, Some(lock(checkpoint_lock))),
            Self::ReadOnly => return Ok(()),
        };
        let mut written = lock(written);
        let entries = entries();
        if !force && *written == Some(entries) {
            return Ok(());
        }
        write_entries(io, root, key, entries)?;
        *written = Some(entries);
        Ok(())
    }

    /// The root's `cleaner-offset-checkpoint` entry of this log (where its dirty section
    /// starts), with the problem when the file does not parse (read as empty, as Kafka does).
    /// `None` for a read-only home.
    pub(crate) fn cleaner_checkpoint(&self) -> (Option<i64>, Option<CheckpointProblem>) {
        let Some((root, key, _, _guard)) = self.root() else {
            return (None, None);
        };
        let file = OffsetCheckpointFile::new(root.join(CLEANER_OFFSET_CHECKPOINT));
        let (map, problem) = file.read_or_report();
        (map.get(key).copied(), problem)
    }

    /// Sets this log's entry of the cleaner checkpoint (`None` removes it), keeping the other
    /// partitions' entries (atomic write, directory fsync). With `only_lower`, an entry is only
    /// ever lowered (Kafka's `maybeTruncateCheckpoint` after a truncation) and a missing one is
    /// left missing.
    ///
    /// # Errors
    /// I/O errors of the checkpoint write.
    pub(crate) fn write_cleaner_checkpoint(&self, offset: i64, only_lower: bool) -> Result<()> {
        let Some((root, key, io, _guard)) = self.root() else {
            return Ok(());
        };
        let file =
            OffsetCheckpointFile::new(root.join(CLEANER_OFFSET_CHECKPOINT)).with_io(io.clone());
        if only_lower {
            if !file.path().exists() {
                return Ok(());
            }
            match file.read_or_empty().get(key) {
                Some(current) if *current > offset => {}
                _ => return Ok(()),
            }
        }
        update(&file, key, Some(offset))
    }

    /// Root, key and seam of a writable home, holding the lock that serializes root writes.
    fn root(
        &self,
    ) -> Option<(
        &PathBuf,
        &TopicPartition,
        &Io,
        Option<crate::sync::MutexGuard<'_, ()>>,
    )> {
        match self {
            Self::Standalone { root, key, io, .. } => Some((root, key, io, None)),
            Self::LogDir {
                root,
                key,
                io,
                checkpoint_lock,
                ..
            } => Some((root, key, io, Some(lock(checkpoint_lock)))),
            Self::ReadOnly => None,
        }
    }

    /// Writes the clean-shutdown marker if this home owns it (standalone; see `write_marker`).
    ///
    /// # Errors
    /// I/O errors of the marker write.
    pub(crate) fn write_clean_marker(&self) -> Result<()> {
        match self {
            Self::Standalone {
                root,
                write_marker: true,
                io,
                ..
            } => CleanShutdownMarker::new(root, io).write(),
            _ => Ok(()),
        }
    }
}

/// Writes `key`'s entries into both checkpoints of `root`.
fn write_entries(
    io: &Io,
    root: &Path,
    key: &TopicPartition,
    (recovery_point, log_start_offset, high_watermark): Entries,
) -> Result<()> {
    update(
        &OffsetCheckpointFile::new(root.join(RECOVERY_POINT_CHECKPOINT)).with_io(io.clone()),
        key,
        Some(recovery_point),
    )?;
    update(
        &OffsetCheckpointFile::new(root.join(LOG_START_OFFSET_CHECKPOINT)).with_io(io.clone()),
        key,
        log_start_offset,
    )?;
    update(
        &OffsetCheckpointFile::new(root.join(REPLICATION_OFFSET_CHECKPOINT)).with_io(io.clone()),
        key,
        Some(high_watermark),
    )
}

/// Sets (or removes, with `None`) one entry of a checkpoint, keeping the others.
fn update(file: &OffsetCheckpointFile, key: &TopicPartition, value: Option<i64>) -> Result<()> {
    let mut map: BTreeMap<TopicPartition, i64> = file.read_or_empty();
    match value {
        Some(v) => {
            map.insert(key.clone(), v);
        }
        None => {
            map.remove(key);
        }
    }
    file.write(&map)
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    #[test]
    fn own_root_when_parent_is_not_a_log_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("orders-3");
        std::fs::create_dir(&dir).unwrap();
        let (home, state, problems) = open_standalone(&dir, &Io::direct()).unwrap();
        assert!(problems.is_empty());
        assert!(!state.had_clean_shutdown);
        assert_eq!(state.recovery_point, 0);
        home.write_checkpoints(true, || (42, Some(7), 40)).unwrap();
        home.write_clean_marker().unwrap();
        assert!(dir.join(CLEAN_SHUTDOWN_FILE).exists());
        let text = std::fs::read_to_string(dir.join(RECOVERY_POINT_CHECKPOINT)).unwrap();
        assert_eq!(text, "0\n1\norders 3 42\n");
        assert!(matches!(
            open_standalone(&dir, &Io::direct()),
            Err(crate::Error::Locked { .. })
        ));
        drop(home);
        let (peek, _) = peek_read_only(&dir).unwrap();
        assert_eq!(
            peek,
            InitialState {
                had_clean_shutdown: true,
                recovery_point: 42,
                recovery_point_known: true,
                log_start_offset: 7,
                log_start_offset_known: true,
                high_watermark: Some(40),
            }
        );
        let (_home, state, _) = open_standalone(&dir, &Io::direct()).unwrap();
        assert!(state.had_clean_shutdown);
        assert!(!dir.join(CLEAN_SHUTDOWN_FILE).exists());
    }

    /// The library itself never blocks on a FIFO at a state file's name (the CLI refuses
    /// them first; a program using `Log` directly has no such guard): a read-only open of a
    /// log whose checkpoints, leader-epoch checkpoint and `.txnindex` are FIFOs returns, the
    /// checkpoints reported as not regular files and read as empty, the FIFO `.txnindex` an
    /// error at its first use.
    #[test]
    fn fifos_at_state_file_names_never_block_an_open() {
        use std::sync::mpsc;
        use std::time::Duration;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("orders-3");
        {
            let log = crate::Log::open(&dir, crate::LogConfig::default()).unwrap();
            let mut builder = seglog_records::BatchBuilder::new(0);
            builder.append(1_700_000_000_000, Some(b"k"), Some(b"v"), &[]);
            log.append(&builder.build().unwrap()).unwrap();
            log.close().unwrap();
        }
        for name in [
            RECOVERY_POINT_CHECKPOINT,
            LOG_START_OFFSET_CHECKPOINT,
            crate::LEADER_EPOCH_CHECKPOINT,
            "00000000000000000000.txnindex",
        ] {
            let path = dir.join(name);
            let _ = std::fs::remove_file(&path);
            let ok = std::process::Command::new("mkfifo")
                .arg(&path)
                .status()
                .unwrap()
                .success();
            assert!(ok, "mkfifo");
        }
        let (tx, rx) = mpsc::channel();
        let opened = dir.clone();
        std::thread::spawn(move || {
            let result =
                crate::Log::open_read_only(&opened, crate::LogConfig::default()).map(|log| {
                    let problems = log.load_report().checkpoint_problems.clone();
                    let txns = log.txn_index_entries().map(|_| ());
                    (problems, txns)
                });
            let _ = tx.send(result.map_err(|e| e.to_string()));
        });
        let (problems, txns) = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the open blocked on a FIFO")
            .unwrap();
        assert!(
            problems.iter().any(|p| p.kind
                == crate::CheckpointProblemKind::NotRegular(seglog_segment::NonRegularKind::Fifo)),
            "{problems:?}"
        );
        let e = txns.unwrap_err();
        assert!(e.to_string().contains("a FIFO, not a regular file"), "{e}");
    }

    #[test]
    fn shared_root_keeps_other_entries_and_marker_rule() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("meta.properties"), "version=1\n").unwrap();
        std::fs::write(
            tmp.path().join(RECOVERY_POINT_CHECKPOINT),
            "0\n2\nother 0 5\norders 3 9\n",
        )
        .unwrap();
        let dir = tmp.path().join("orders-3");
        std::fs::create_dir(&dir).unwrap();
        let (home, state, _) = open_standalone(&dir, &Io::direct()).unwrap();
        assert_eq!(state.recovery_point, 9);
        assert!(!state.had_clean_shutdown);
        home.write_checkpoints(true, || (11, None, 11)).unwrap();
        home.write_clean_marker().unwrap();
        // The root was not clean at open, so the marker is not written for everybody.
        assert!(!tmp.path().join(CLEAN_SHUTDOWN_FILE).exists());
        let text = std::fs::read_to_string(tmp.path().join(RECOVERY_POINT_CHECKPOINT)).unwrap();
        assert_eq!(text, "0\n2\norders 3 11\nother 0 5\n");
        assert!(tmp.path().join(".lock").exists());
        assert!(!dir.join(".lock").exists());
    }
}
