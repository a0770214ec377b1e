//! The crate's one error type.

use std::fmt;
use std::path::{Path, PathBuf};

/// Everything that can go wrong with a segment.
///
/// I/O errors name the file and the operation; corruption names the file, the byte position
/// and a small matchable [`CorruptKind`]. Errors of the lower crates are wrapped with their
/// source chain intact (index errors already name their file).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O call on a segment file failed.
    #[error("{op} {}: {source}", path.display())]
    Io {
        /// What we were doing.
        op: IoOp,
        /// The file (or directory).
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// An error from an offset or time index.
    #[error(transparent)]
    Index(#[from] seglog_index_core::Error),
    /// An error from the record-batch layer that is not corruption of a file (for example
    /// invalid builder input). Corruption found in a `.log` becomes [`Error::Corrupt`].
    #[error(transparent)]
    Records(#[from] seglog_records::Error),
    /// The `.log` holds invalid bytes at `position`.
    #[error("corrupt segment file {} at byte {position}: {kind}", path.display())]
    Corrupt {
        /// The `.log` file.
        path: PathBuf,
        /// Byte position in the file of the batch (or record) at fault.
        position: u64,
        /// What is wrong.
        kind: CorruptKind,
    },
    /// `offset - base_offset` does not fit in `0..=i32::MAX`, so this offset cannot be
    /// stored in this segment's indexes: the log must roll (Kafka's
    /// `LogSegmentOffsetOverflowException`). Nothing was written.
    #[error("offset {offset} does not fit in segment {} with base offset {base_offset}", path.display())]
    OffsetOverflow {
        /// The segment's `.log` file.
        path: PathBuf,
        /// The segment's base offset.
        base_offset: i64,
        /// The offset that does not fit.
        offset: i64,
    },
    /// The offset or time index has no room for the entry this append would add: the log
    /// must roll. Nothing was written.
    #[error("index {} is full", path.display())]
    IndexFull {
        /// The full index file.
        path: PathBuf,
    },
    /// The append would grow the `.log` past `i32::MAX` bytes, which index positions cannot
    /// address. Nothing was written.
    #[error("segment {} would grow past i32::MAX bytes ({size} + {append_bytes})", path.display())]
    SegmentTooLarge {
        /// The `.log` file.
        path: PathBuf,
        /// The current size.
        size: u64,
        /// The size of the rejected append.
        append_bytes: u64,
    },
    /// An earlier write or fsync of this segment failed; it refuses further writes until it
    /// is reopened and recovered (a failed fsync cannot be retried safely).
    #[error("segment {} is poisoned by an earlier write or fsync failure", path.display())]
    Poisoned {
        /// The `.log` file.
        path: PathBuf,
    },
    /// A read-write open found a segment file that is a symlink. Write paths never follow
    /// one: a truncation or a recovery through a link would cut or rewrite another log's file.
    /// Nothing was changed (replace the link by the file it points at, or open read-only).
    #[error("segment file {} is a symlink; a read-write open never follows one", path.display())]
    SymlinkRefused {
        /// The link.
        path: PathBuf,
    },
    /// A mutating call on a segment opened read-only.
    #[error("segment {} is open read-only", path.display())]
    ReadOnly {
        /// The `.log` file.
        path: PathBuf,
    },
    /// A second writer (or a recovery) was attached to a segment that already has one.
    #[error("segment {} already has a writer", path.display())]
    WriterAttached {
        /// The `.log` file.
        path: PathBuf,
    },
    /// An aborted transaction appended to a `.txnindex` whose last entry's marker is not
    /// below its own (Kafka's `TransactionIndex.append` refuses it). Nothing was written.
    #[error("aborted transaction at {appended} appended to {} after one at {last_offset}", path.display())]
    TxnIndexOrder {
        /// The `.txnindex` file.
        path: PathBuf,
        /// The last entry's marker offset.
        last_offset: i64,
        /// The appended entry's marker offset.
        appended: i64,
    },
    /// A [`crate::SegmentConfig`] field is out of range.
    #[error("invalid segment config: {field} {reason}")]
    InvalidConfig {
        /// The field name.
        field: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// What is corrupt in a `.log` file; carried by [`Error::Corrupt`] and by
/// [`crate::TruncationReason::Corrupt`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CorruptKind {
    /// A batch failed the record layer's checks (size field, magic, CRC, records).
    Batch(seglog_records::CorruptKind),
    /// A batch's first offset is not above the previous batch's last offset. Kafka's
    /// append path never writes this; its recovery would fail on the offset index
    /// (`InvalidOffsetException`) and its loader would then empty the whole segment. We stop
    /// at the batch instead (no checksum covers the offset fields).
    OffsetsNotIncreasing {
        /// The last offset of the previous batch.
        previous_last_offset: i64,
        /// This batch's first offset (its last offset for a legacy compressed wrapper).
        first_offset: i64,
    },
    /// A batch's offsets jump above those of the batch after it, while that batch follows on
    /// from the one before: the jumping batch's offset fields (not covered by any checksum)
    /// are damaged, so recovery cuts there rather than at its successor.
    OffsetJump {
        /// The last offset the damaged batch claims.
        last_offset: i64,
        /// The first offset of the batch after it.
        next_first_offset: i64,
    },
    /// A record's offset lies outside its batch's offset range, or does not increase within
    /// the batch (found when a recovery decodes records,
    /// [`crate::SegmentConfig::decode_records_on_recovery`]; no checksum covers a legacy
    /// wrapper's inner offsets).
    RecordOffset {
        /// The record's offset.
        offset: i64,
        /// The batch's first offset.
        first_offset: i64,
        /// The batch's last offset.
        last_offset: i64,
    },
    /// A read found bytes that are not a whole batch before the segment's published end
    /// (a damaged length field, or a tail no recovery has cut): every batch below the end
    /// of a segment is whole, so this is damage, never the end of the data.
    IncompleteBatch {
        /// The bytes from this position to the segment's end.
        remaining: u64,
    },
    /// A `.txnindex` entry of a version above 0 (Kafka refuses to read it).
    TxnIndexVersion {
        /// The entry's version.
        version: i16,
    },
    /// A `.txnindex` that cannot describe this segment (checked when it is first read,
    /// without reading the `.log`; [`TxnIndexProblem`] says what is wrong).
    TxnIndex(TxnIndexProblem),
}

/// What is wrong with a `.txnindex` ([`CorruptKind::TxnIndex`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TxnIndexProblem {
    /// More entries than the segment could hold ABORT markers: one marker per control batch,
    /// and a segment of `segment_bytes` holds at most `segment_bytes / 61` batches.
    TooLarge {
        /// The file's length.
        len: u64,
        /// The most bytes of entries the segment can need.
        limit: u64,
    },
    /// The length is not a multiple of the 34-byte entry (a torn append, or not an index).
    PartialEntry {
        /// The file's length.
        len: u64,
    },
    /// A producer id, an offset or a last stable offset is negative.
    Negative,
    /// The transaction's first offset is above its ABORT marker's offset.
    FirstAfterLast {
        /// The entry's first offset.
        first_offset: i64,
        /// The entry's marker offset.
        last_offset: i64,
    },
    /// The marker's offset is below the segment's base offset, or too far above it for the
    /// segment's indexes (more than `i32::MAX` past the base).
    OutsideSegment {
        /// The entry's marker offset.
        last_offset: i64,
        /// The segment's base offset.
        base_offset: i64,
    },
    /// The markers' offsets do not increase (Kafka appends them in marker order).
    NotIncreasing {
        /// The previous entry's marker offset.
        previous_last_offset: i64,
        /// This entry's marker offset.
        last_offset: i64,
    },
}

impl fmt::Display for TxnIndexProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TxnIndexProblem::TooLarge { len, limit } => write!(
                f,
                "{len} bytes of aborted transactions, more than the segment can hold ABORT markers for ({limit} bytes)"
            ),
            TxnIndexProblem::PartialEntry { len } => write!(
                f,
                "{len} bytes is not a whole number of 34-byte aborted transaction entries"
            ),
            TxnIndexProblem::Negative => {
                f.write_str("aborted transaction entry with a negative producer id or offset")
            }
            TxnIndexProblem::FirstAfterLast {
                first_offset,
                last_offset,
            } => write!(
                f,
                "aborted transaction starts at {first_offset}, after its ABORT marker at {last_offset}"
            ),
            TxnIndexProblem::OutsideSegment {
                last_offset,
                base_offset,
            } => write!(
                f,
                "ABORT marker offset {last_offset} lies outside the segment based at {base_offset}"
            ),
            TxnIndexProblem::NotIncreasing {
                previous_last_offset,
                last_offset,
            } => write!(
                f,
                "ABORT marker offset {last_offset} is not above the previous entry's {previous_last_offset}"
            ),
        }
    }
}

impl fmt::Display for CorruptKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CorruptKind::Batch(kind) => write!(f, "{kind}"),
            CorruptKind::OffsetsNotIncreasing {
                previous_last_offset,
                first_offset,
            } => write!(
                f,
                "batch offset {first_offset} is not above the previous last offset {previous_last_offset}"
            ),
            CorruptKind::OffsetJump {
                last_offset,
                next_first_offset,
            } => write!(
                f,
                "batch claims offsets up to {last_offset}, above the next batch's first offset \
                 {next_first_offset}, which follows on from the batch before it"
            ),
            CorruptKind::RecordOffset {
                offset,
                first_offset,
                last_offset,
            } => write!(
                f,
                "record offset {offset} is out of order or outside its batch's {first_offset}..={last_offset}"
            ),
            CorruptKind::IncompleteBatch { remaining } => write!(
                f,
                "not a whole batch, {remaining} bytes before the segment's end (a damaged length field?)"
            ),
            CorruptKind::TxnIndexVersion { version } => write!(
                f,
                "aborted transaction entry of unknown version {version} (expected 0)"
            ),
            CorruptKind::TxnIndex(problem) => write!(f, "{problem}"),
        }
    }
}

/// The operation of an [`Error::Io`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum IoOp {
    /// Creating a file.
    Create,
    /// Opening a file.
    Open,
    /// Reading.
    Read,
    /// Writing.
    Write,
    /// `fdatasync`/`fsync`.
    Sync,
    /// Changing a file's length.
    SetLength,
    /// `fallocate`.
    Preallocate,
    /// Reading metadata (length, mtime).
    Metadata,
    /// Renaming.
    Rename,
    /// Unlinking.
    Remove,
    /// `fsync` of a directory.
    SyncDir,
    /// `sendfile`.
    SendFile,
}

impl fmt::Display for IoOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IoOp::Create => "create",
            IoOp::Open => "open",
            IoOp::Read => "read",
            IoOp::Write => "write",
            IoOp::Sync => "fsync",
            IoOp::SetLength => "set length of",
            IoOp::Preallocate => "preallocate",
            IoOp::Metadata => "stat",
            IoOp::Rename => "rename",
            IoOp::Remove => "remove",
            IoOp::SyncDir => "fsync directory",
            IoOp::SendFile => "sendfile from",
        })
    }
}

impl Error {
    /// A closure that wraps an `io::Error` with `op` and `path`, for `map_err`.
    pub(crate) fn io(op: IoOp, path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
        move |source| Error::Io {
            op,
            path: path.to_path_buf(),
            source,
        }
    }

    /// Wraps a record-layer error found in the `.log` at `path`: corruption gets the path.
    pub(crate) fn from_records(path: &Path, error: seglog_records::Error) -> Error {
        match error {
            seglog_records::Error::Corrupt { position, kind } => Error::Corrupt {
                path: path.to_path_buf(),
                position,
                kind: CorruptKind::Batch(kind),
            },
            other => Error::Records(other),
        }
    }

    /// Whether this error means the segment files hold invalid bytes (as opposed to an I/O
    /// failure or a caller error).
    pub fn is_corruption(&self) -> bool {
        matches!(
            self,
            Error::Corrupt { .. } | Error::Index(seglog_index_core::Error::Corrupt { .. })
        )
    }
}
