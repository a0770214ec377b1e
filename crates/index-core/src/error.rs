//! The crate's one error type.

use std::path::PathBuf;

/// Errors from opening, appending to, resizing or checking an index.
///
/// Every variant names the index file; corruption also names the byte position in that file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O call failed.
    #[error("{op} {}: {source}", path.display())]
    Io {
        /// The index file.
        path: PathBuf,
        /// What we were doing (`"open"`, `"create"`, `"map"`, `"resize"`, `"flush"`, ...).
        op: &'static str,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file's contents are not a valid index (from `sanity_check`).
    #[error("corrupt index {} at byte {position}: {kind}", path.display())]
    Corrupt {
        /// The index file.
        path: PathBuf,
        /// Byte position in the index file of the first bad entry (or the file length).
        position: u64,
        /// What is wrong.
        kind: CorruptKind,
    },
    /// No room for another entry.
    #[error("index {} is full ({entries} entries)", path.display())]
    IndexFull {
        /// The index file.
        path: PathBuf,
        /// Entries in the index.
        entries: usize,
    },
    /// An offset-index append whose offset is not larger than the last one, or a time-index
    /// append whose offset is smaller than the last one (Kafka's `InvalidOffsetException`).
    #[error("index {}: offset {offset} is not after the last offset {last_offset}", path.display())]
    InvalidOffset {
        /// The index file.
        path: PathBuf,
        /// The offset passed in.
        offset: i64,
        /// The last offset in the index.
        last_offset: i64,
    },
    /// A time-index append whose timestamp is below the last one.
    #[error(
        "time index {}: timestamp {timestamp_ms} is below the last timestamp {last_timestamp_ms}",
        path.display()
    )]
    TimestampRegression {
        /// The index file.
        path: PathBuf,
        /// The timestamp passed in.
        timestamp_ms: i64,
        /// The last timestamp in the index.
        last_timestamp_ms: i64,
    },
    /// `offset - base_offset` does not fit in `0..=i32::MAX` (Kafka's
    /// `IndexOffsetOverflowException`).
    #[error("index {}: offset {offset} is not in 0..=i32::MAX of base offset {base_offset}", path.display())]
    OffsetOverflow {
        /// The index file.
        path: PathBuf,
        /// The segment's base offset.
        base_offset: i64,
        /// The offset passed in.
        offset: i64,
    },
    /// A `.log` position above `i32::MAX`, which the on-disk format cannot store.
    #[error("index {}: position {position} does not fit in an i32", path.display())]
    PositionOverflow {
        /// The index file.
        path: PathBuf,
        /// The position passed in.
        position: u32,
    },
    /// A size that is too small for one entry, below the current entries, or too large.
    #[error("index {}: invalid size {size} (entry size {entry_size})", path.display())]
    InvalidSize {
        /// The index file.
        path: PathBuf,
        /// The size asked for, in bytes.
        size: u64,
        /// The entry size of this index.
        entry_size: usize,
    },
    /// A mutating call on an index opened with `open_read_only`.
    #[error("index {} is open read-only", path.display())]
    ReadOnly {
        /// The index file.
        path: PathBuf,
    },
}

/// What `sanity_check` found wrong. Small and matchable so callers can decide to rebuild.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CorruptKind {
    /// The file length is not a whole number of entries.
    LengthNotMultiple,
    /// The entries end in all-zero entries: a preallocated file that was never trimmed
    /// (KAFKA-1112, KAFKA-10207, KAFKA-19200).
    ZeroPaddedTail,
    /// An offset (or `.index` position) is not above the previous entry's.
    NotMonotonic,
    /// A stored relative offset is negative.
    NegativeRelativeOffset,
    /// A `.index` position is negative or not below the `.log` size.
    PositionOutOfRange,
    /// An offset is above the largest offset the caller says the segment holds.
    OffsetOutOfRange,
    /// A `.timeindex` timestamp is not above the previous entry's.
    TimestampNotIncreasing,
    /// A `.timeindex` timestamp is negative (Kafka never indexes one).
    NegativeTimestamp,
    /// The file is larger than any index of its `.log` can be (more entries than the `.log`
    /// could hold batches, and above the configured index size): a damaged or hostile file,
    /// not read (it would cost its size in memory).
    LargerThanItsLog,
}

impl std::fmt::Display for CorruptKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CorruptKind::LengthNotMultiple => "the length is not a whole number of entries",
            CorruptKind::ZeroPaddedTail => "the entries end in zero padding (never trimmed)",
            CorruptKind::NotMonotonic => "an entry is not above the previous one",
            CorruptKind::NegativeRelativeOffset => "an entry's relative offset is negative",
            CorruptKind::PositionOutOfRange => "an entry's position is outside the .log",
            CorruptKind::OffsetOutOfRange => "an entry's offset is past the segment's last offset",
            CorruptKind::TimestampNotIncreasing => "a timestamp is not above the previous one",
            CorruptKind::LargerThanItsLog => {
                "the file is larger than any index of its .log can be; not read"
            }
            CorruptKind::NegativeTimestamp => "a timestamp is negative",
        })
    }
}
