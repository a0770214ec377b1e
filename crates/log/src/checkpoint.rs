//! Kafka's offset checkpoint files (spec §1.4): `recovery-point-offset-checkpoint`,
//! `log-start-offset-checkpoint` (and the same format for `replication-offset-checkpoint`).
//!
//! ```text
//! 0                 <- version
//! 2                 <- entry count
//! orders 0 1234     <- <topic> <partition> <offset>
//! orders 1 99
//! ```

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use seglog_segment::Io;

use crate::error::CheckpointCorruptKind;
use crate::fsutil::write_atomic;
use crate::{Error, Result, TopicPartition};

/// File name of the recovery-point checkpoint in a log-dir root.
pub const RECOVERY_POINT_CHECKPOINT: &str = "recovery-point-offset-checkpoint";
/// File name of the log-start-offset checkpoint in a log-dir root.
pub const LOG_START_OFFSET_CHECKPOINT: &str = "log-start-offset-checkpoint";
/// The root's log-cleaner checkpoint (Kafka's `LogCleanerManager`): per compacted partition,
/// the offset its dirty section starts at.
pub const CLEANER_OFFSET_CHECKPOINT: &str = "cleaner-offset-checkpoint";
/// The root's high-watermark checkpoint (Kafka's `ReplicaManager` writes it in the same text
/// format).
pub const REPLICATION_OFFSET_CHECKPOINT: &str = "replication-offset-checkpoint";

/// One offset checkpoint file: a map topic-partition -> offset.
#[derive(Debug, Clone)]
pub struct OffsetCheckpointFile {
    path: PathBuf,
    /// The seam the directory fsync of [`OffsetCheckpointFile::write`] goes through.
    io: Io,
}

impl OffsetCheckpointFile {
    /// A handle on the checkpoint at `path` (nothing is read or created yet).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            io: Io::direct(),
        }
    }

    /// The same handle, writing through the I/O seam `io` (a log passes its
    /// [`crate::LogOpenOptions::io`]). Default: [`Io::direct`].
    #[must_use]
    pub fn with_io(self, io: Io) -> Self {
        Self { io, ..self }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the checkpoint. A missing or empty file, or one with only the version line, is an
    /// empty map. Both `\n` and `\r\n` line ends are accepted.
    ///
    /// # Errors
    /// [`Error::Io`] when the file exists but cannot be read; [`Error::Corrupt`] with the line
    /// number when it does not parse (Kafka's rules: version 0 only, exact entry count).
    pub fn read(&self) -> Result<BTreeMap<TopicPartition, i64>> {
        self.read_file().map_err(|failure| match failure {
            ReadFailure::Io(e) => Error::io("read checkpoint", &self.path, e),
            ReadFailure::Corrupt(position, kind) => Error::Corrupt {
                path: self.path.clone(),
                position,
                kind,
            },
        })
    }

    fn read_file(&self) -> Result<BTreeMap<TopicPartition, i64>, ReadFailure> {
        let text = match read_bounded(&self.path) {
            Ok(Some(text)) => text,
            Ok(None) => return Ok(BTreeMap::new()),
            Err(failure) => return Err(failure),
        };
        parse(&text).map_err(|(position, kind)| ReadFailure::Corrupt(position, kind))
    }

    /// Reads the checkpoint the way Kafka's LogManager does: any error (unreadable or corrupt)
    /// yields an empty map, so every partition falls back to offset 0 (full recovery).
    pub fn read_or_empty(&self) -> BTreeMap<TopicPartition, i64> {
        self.read().unwrap_or_default()
    }

    /// [`OffsetCheckpointFile::read_or_empty`], saying why the map is empty when the file
    /// could not be read or did not parse (what the loader reports in
    /// [`crate::LoadReport::checkpoint_problems`]).
    pub fn read_or_report(&self) -> (BTreeMap<TopicPartition, i64>, Option<CheckpointProblem>) {
        let problem = |line, kind| CheckpointProblem {
            path: self.path.clone(),
            line,
            kind,
        };
        match self.read_file() {
            Ok(map) => (map, None),
            Err(ReadFailure::Corrupt(line, kind)) => (
                BTreeMap::new(),
                Some(problem(Some(line), CheckpointProblemKind::Corrupt(kind))),
            ),
            Err(ReadFailure::Io(e)) => {
                let kind = match seglog_segment::not_regular(&e) {
                    Some(kind) => CheckpointProblemKind::NotRegular(kind),
                    None => CheckpointProblemKind::Unreadable(e.kind()),
                };
                (BTreeMap::new(), Some(problem(None, kind)))
            }
        }
    }

    /// Writes the checkpoint atomically: `<file>.tmp`, fsync, rename, fsync the directory.
    ///
    /// # Errors
    /// [`Error::Io`] naming the failing step.
    pub fn write(&self, entries: &BTreeMap<TopicPartition, i64>) -> Result<()> {
        write_atomic(&self.io, &self.path, format(entries).as_bytes())
    }
}

/// The largest checkpoint file seglog reads: 64 MiB, room for a few hundred thousand
/// partitions' entries (a broker's root checkpoint) and far more than a leader-epoch
/// checkpoint holds. A larger file is reported as corrupt ([`CheckpointCorruptKind::TooLarge`]) and not
/// read, so a damaged or hostile file (a 2 GB sparse one) costs nothing.
pub const MAX_CHECKPOINT_BYTES: u64 = 64 << 20;

/// Reads a checkpoint's text, at most [`MAX_CHECKPOINT_BYTES`]; `None` when it does not exist.
/// Every checkpoint file (offset checkpoints, `leader-epoch-checkpoint`) is opened through the
/// one checked open, [`seglog_segment::open_regular`]: a FIFO, a directory or a device is an
/// error ([`seglog_segment::NotRegularFile`] inside the I/O error), never a blocked read.
pub(crate) fn read_bounded(path: &Path) -> Result<Option<String>, ReadFailure> {
    use std::io::Read;
    let (file, meta) = match seglog_segment::open_regular_if_exists(path) {
        Ok(Some(opened)) => opened,
        Ok(None) => return Ok(None),
        Err(e) => return Err(ReadFailure::Io(e)),
    };
    let len = meta.len();
    let too_large = |len| {
        ReadFailure::Corrupt(
            1,
            CheckpointCorruptKind::TooLarge {
                len,
                limit: MAX_CHECKPOINT_BYTES,
            },
        )
    };
    if len > MAX_CHECKPOINT_BYTES {
        return Err(too_large(len));
    }
    let mut text = String::new();
    // One byte more than the bound: a file that grew after the length check is refused too.
    let read = file
        .take(MAX_CHECKPOINT_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(ReadFailure::Io)?;
    if read as u64 > MAX_CHECKPOINT_BYTES {
        return Err(too_large(read as u64));
    }
    Ok(Some(text))
}

/// Why a checkpoint file could not be read.
pub(crate) enum ReadFailure {
    Io(io::Error),
    /// 1-based line, what is wrong.
    Corrupt(u64, CheckpointCorruptKind),
}

/// A checkpoint file that could not be used at open. It was read as empty (Kafka's rule), so
/// the logs it should have described fell back to recovery point 0 (a full recovery after an
/// unclean shutdown) and to a log start at their first segment's base.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckpointProblem {
    /// The checkpoint file.
    pub path: PathBuf,
    /// 1-based number of the offending line; `None` when the file could not be read.
    pub line: Option<u64>,
    /// What was wrong.
    pub kind: CheckpointProblemKind,
}

/// What was wrong with a [`CheckpointProblem`]'s file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CheckpointProblemKind {
    /// It does not parse.
    Corrupt(CheckpointCorruptKind),
    /// It exists but could not be read.
    Unreadable(io::ErrorKind),
    /// A standalone log's own checkpoint holds an entry for another topic-partition only
    /// (a copied or renamed directory, or a stray edit): it is not applied to this log.
    OtherPartition,
    /// A FIFO, a directory, a device or a socket at the checkpoint's name: not read (the
    /// checked open, [`seglog_segment::open_regular`]).
    NotRegular(seglog_segment::NonRegularKind),
}

impl std::fmt::Display for CheckpointProblemKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Corrupt(kind) => write!(f, "corrupt: {kind}"),
            Self::Unreadable(kind) => write!(f, "unreadable: {kind}"),
            Self::NotRegular(kind) => write!(f, "{kind}"),
            Self::OtherPartition => f.write_str(
                "its entry is for another topic-partition than this directory's; not applied",
            ),
        }
    }
}

impl std::fmt::Display for CheckpointProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, " line {line}")?;
        }
        write!(f, ": {}; read as empty", self.kind)
    }
}

/// Renders the checkpoint text (`\n` line ends, as Kafka writes on Unix).
pub(crate) fn format(entries: &BTreeMap<TopicPartition, i64>) -> String {
    let mut out = format!("0\n{}\n", entries.len());
    for (tp, offset) in entries {
        out.push_str(&format!("{} {} {}\n", tp.topic, tp.partition, offset));
    }
    out
}

/// Parses checkpoint text; errors carry a 1-based line number.
pub(crate) fn parse(
    text: &str,
) -> Result<BTreeMap<TopicPartition, i64>, (u64, CheckpointCorruptKind)> {
    let entries = parse_entries(text, |tokens| {
        let [topic, partition, offset] = tokens else {
            return None;
        };
        Some((
            TopicPartition::new(*topic, partition.parse().ok()?),
            offset.parse().ok()?,
        ))
    })?;
    Ok(entries.into_iter().collect())
}

/// Kafka's `CheckpointFile` text layout, shared by every checkpoint: a version line (0), a
/// count line, then `count` entry lines of white-space separated tokens, each turned into an
/// entry by `entry` (`None`: a malformed line). A missing version or count line is an empty
/// file; blank lines after the last entry are ignored; `\r\n` line ends are accepted. Errors
/// carry the 1-based line number.
pub(crate) fn parse_entries<T>(
    text: &str,
    entry: impl Fn(&[&str]) -> Option<T>,
) -> Result<Vec<T>, (u64, CheckpointCorruptKind)> {
    let mut lines = text.lines().map(|l| l.strip_suffix('\r').unwrap_or(l));
    let Some(version) = lines.next() else {
        return Ok(Vec::new());
    };
    let version: i64 = version
        .trim()
        .parse()
        .map_err(|_| (1, CheckpointCorruptKind::MalformedVersion))?;
    if version != 0 {
        return Err((1, CheckpointCorruptKind::UnsupportedVersion(version)));
    }
    let Some(count) = lines.next() else {
        return Ok(Vec::new());
    };
    let expected: u64 = count
        .trim()
        .parse()
        .map_err(|_| (2, CheckpointCorruptKind::MalformedCount))?;
    let mut entries = Vec::new();
    for (index, line) in lines.enumerate() {
        let line_no = index as u64 + 3;
        if line.trim().is_empty() && entries.len() as u64 == expected {
            continue;
        }
        let tokens: Vec<&str> = line.split_whitespace().collect();
        entries.push(entry(&tokens).ok_or((line_no, CheckpointCorruptKind::MalformedLine))?);
    }
    let found = entries.len() as u64;
    if found != expected {
        return Err((2, CheckpointCorruptKind::CountMismatch { expected, found }));
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// A checkpoint larger than the bound (a 2 GiB sparse file costs no disk) is reported as
    /// corrupt at line 1 and never read: it used to be read whole, costing its size.
    #[test]
    fn a_checkpoint_above_the_bound_is_corrupt_and_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(RECOVERY_POINT_CHECKPOINT);
        fs::File::create(&path).unwrap().set_len(2 << 30).unwrap();
        let file = OffsetCheckpointFile::new(&path);
        let (map, problem) = file.read_or_report();
        assert!(map.is_empty());
        let problem = problem.unwrap();
        assert_eq!(problem.line, Some(1));
        assert_eq!(
            problem.kind,
            CheckpointProblemKind::Corrupt(CheckpointCorruptKind::TooLarge {
                len: 2 << 30,
                limit: MAX_CHECKPOINT_BYTES
            })
        );
        let epochs = crate::LeaderEpochCheckpointFile::in_dir(dir.path());
        fs::File::create(epochs.path())
            .unwrap()
            .set_len(2 << 30)
            .unwrap();
        assert!(matches!(
            epochs.read(),
            Err(Error::Corrupt {
                kind: CheckpointCorruptKind::TooLarge { .. },
                ..
            })
        ));
    }

    fn mkfifo(path: &Path) {
        let ok = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap()
            .success();
        assert!(ok, "mkfifo");
    }

    /// A FIFO or a directory at a checkpoint's name is refused at once (it used to block the
    /// open of every command, issue #26): a typed error naming the file, nothing read.
    #[test]
    fn a_checkpoint_that_is_not_a_regular_file_is_refused_without_blocking() {
        use seglog_segment::NonRegularKind;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join(RECOVERY_POINT_CHECKPOINT);
        mkfifo(&fifo);
        let subdir = dir.path().join(LOG_START_OFFSET_CHECKPOINT);
        fs::create_dir(&subdir).unwrap();
        for (path, want) in [
            (&fifo, NonRegularKind::Fifo),
            (&subdir, NonRegularKind::Directory),
        ] {
            let file = OffsetCheckpointFile::new(path);
            match file.read() {
                Err(Error::Io {
                    path: p, source, ..
                }) => {
                    assert_eq!(&p, path);
                    assert_eq!(seglog_segment::not_regular(&source), Some(want));
                }
                other => panic!("{other:?}"),
            }
            let (map, problem) = file.read_or_report();
            assert!(map.is_empty());
            assert_eq!(
                problem.unwrap().kind,
                CheckpointProblemKind::NotRegular(want)
            );
        }
        let epochs = crate::LeaderEpochCheckpointFile::in_dir(dir.path());
        mkfifo(epochs.path());
        assert!(matches!(epochs.read(), Err(Error::Io { .. })));
        // A FIFO left at the temp name cannot block a write either.
        let ok = dir.path().join("ok");
        mkfifo(&tmp_path_for_test(&ok));
        let file = OffsetCheckpointFile::new(&ok);
        file.write(&BTreeMap::new()).unwrap_err();
    }

    fn tmp_path_for_test(path: &Path) -> PathBuf {
        let mut name = path.as_os_str().to_owned();
        name.push(".tmp");
        PathBuf::from(name)
    }

    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let file = OffsetCheckpointFile::new(dir.path().join(RECOVERY_POINT_CHECKPOINT));
        assert!(file.read().unwrap().is_empty());
        let mut map = BTreeMap::new();
        map.insert(TopicPartition::new("a-b", 3), 17);
        map.insert(TopicPartition::new("__consumer_offsets", 0), 0);
        file.write(&map).unwrap();
        assert_eq!(file.read().unwrap(), map);
        let text = fs::read_to_string(file.path()).unwrap();
        assert_eq!(text, "0\n2\n__consumer_offsets 0 0\na-b 3 17\n");
    }

    #[test]
    fn kafka_reading_rules() {
        assert!(parse("").unwrap().is_empty());
        assert!(parse("0\n").unwrap().is_empty());
        assert_eq!(
            parse("0\r\n1\r\nt 0 5\r\n").unwrap()[&TopicPartition::new("t", 0)],
            5
        );
        assert_eq!(parse("0\n1\nt  0\t5\n").unwrap().len(), 1);
        assert_eq!(
            parse("1\n0\n").unwrap_err(),
            (1, CheckpointCorruptKind::UnsupportedVersion(1))
        );
        assert_eq!(
            parse("x\n").unwrap_err().1,
            CheckpointCorruptKind::MalformedVersion
        );
        assert_eq!(
            parse("0\nx\n").unwrap_err().1,
            CheckpointCorruptKind::MalformedCount
        );
        assert_eq!(
            parse("0\n1\nt 0\n").unwrap_err(),
            (3, CheckpointCorruptKind::MalformedLine)
        );
        assert_eq!(
            parse("0\n1\nt x 5\n").unwrap_err(),
            (3, CheckpointCorruptKind::MalformedLine)
        );
        assert_eq!(
            parse("0\n2\nt 0 5\n").unwrap_err().1,
            CheckpointCorruptKind::CountMismatch {
                expected: 2,
                found: 1
            }
        );
    }

    #[test]
    fn corrupt_file_reads_as_empty_for_the_loader() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_START_OFFSET_CHECKPOINT);
        fs::write(&path, "0\n3\nt 0 1\n").unwrap();
        let file = OffsetCheckpointFile::new(&path);
        assert!(matches!(
            file.read(),
            Err(Error::Corrupt { position: 2, .. })
        ));
        assert!(file.read_or_empty().is_empty());
        let (map, problem) = file.read_or_report();
        assert!(map.is_empty());
        let problem = problem.unwrap();
        assert_eq!(problem.path, path);
        assert_eq!(problem.line, Some(2));
        assert_eq!(
            problem.kind,
            CheckpointProblemKind::Corrupt(CheckpointCorruptKind::CountMismatch {
                expected: 3,
                found: 1
            })
        );
        assert!(problem.to_string().contains("line 2"), "{problem}");
        fs::write(&path, "0\n1\nt 0 1\n").unwrap();
        assert_eq!(file.read_or_report().1, None);
    }
}
