//! The crate's one error type.
//!
//! Corruption is a separate variant with the absolute byte position where it was found and a
//! small matchable [`CorruptKind`]. This crate knows bytes, not files: the segment layer adds the
//! path when it wraps these errors.

use crate::Compression;

/// Everything that can go wrong while reading or writing record batches.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The bytes are not a valid batch / record. `position` is absolute: the base position the
    /// caller gave plus the offset inside the region. For errors inside the records of a batch
    /// it is the position of the record when the records are stored uncompressed, and the
    /// position of the batch when they are compressed (a position inside the decompressed stream
    /// would point nowhere on disk).
    #[error("corrupt record data at byte position {position}: {kind}")]
    Corrupt {
        /// Absolute byte position of the batch, record or field at fault.
        position: u64,
        /// What was wrong.
        kind: CorruptKind,
    },

    /// [`BatchHeader::parse`](crate::BatchHeader::parse) was given a prefix shorter than the
    /// header of the batch it starts, although more bytes remain. A bug in the caller, not
    /// corruption: read `min(RECORD_BATCH_OVERHEAD, remaining)` bytes.
    #[error("header prefix at byte position {position} has {len} bytes; this batch needs {needed}")]
    ShortPrefix {
        /// Absolute byte position of the batch.
        position: u64,
        /// Length of the prefix given.
        len: usize,
        /// Number of bytes this batch's header needs.
        needed: usize,
    },

    /// An operation that only exists for one format was called on another (for example an
    /// in-place rewrite of a legacy v0/v1 message).
    #[error("operation needs a batch with magic {expected}, found magic {found}")]
    WrongMagic {
        /// The magic the operation supports.
        expected: u8,
        /// The magic of the batch.
        found: u8,
    },

    /// A batch could not be built from the inputs given to the builder.
    #[error("cannot build batch: {reason}")]
    InvalidInput {
        /// What was wrong with the input.
        reason: &'static str,
    },

    /// Compressing records while building a batch failed.
    #[error("{codec} compression failed: {detail}")]
    Compress {
        /// The codec in use.
        codec: Compression,
        /// The codec library's message.
        detail: String,
    },

    /// A compression name was not one of Kafka's (`none`, `gzip`, `snappy`, `lz4`, `zstd`).
    #[error("unknown compression type name {name:?}")]
    UnknownCompressionName {
        /// The name that was given.
        name: String,
    },
}

/// What exactly was corrupt; carried by [`Error::Corrupt`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CorruptKind {
    /// The size field promises fewer bytes than the smallest valid batch or message of this
    /// magic (`size` is the batch's length field; `minimum` is the smallest valid length field).
    #[error("batch length field {size} is below the minimum {minimum}")]
    SizeBelowMinimum {
        /// The length field read (bytes after the offset and length fields).
        size: i32,
        /// The smallest valid length field for this magic.
        minimum: i32,
    },
    /// The magic byte is not 0, 1 or 2.
    #[error("unsupported magic byte {magic}")]
    BadMagic {
        /// The magic byte read.
        magic: u8,
    },
    /// The stored checksum does not match the bytes (CRC-32C for v2, CRC-32 for v0/v1).
    #[error("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    CrcMismatch {
        /// The checksum stored in the batch.
        stored: u32,
        /// The checksum of the bytes as they are.
        computed: u32,
    },
    /// The v2 header's record count is negative or larger than its offset range allows.
    #[error("record count {count} is inconsistent with last offset delta {last_offset_delta}")]
    InvalidRecordCount {
        /// The record count field.
        count: i32,
        /// The last offset delta field.
        last_offset_delta: i32,
    },
    /// The records ran out before the declared number of records was read.
    #[error("batch declares {declared} records but its data holds only {decoded}")]
    RecordCountMismatch {
        /// The header's record count.
        declared: i32,
        /// The number of records decoded before the data ran out.
        decoded: i32,
    },
    /// Bytes remain after the declared number of records.
    #[error("{count} bytes remain after the declared records")]
    TrailingBytes {
        /// How many bytes were left over.
        count: usize,
    },
    /// A varint or varlong is longer than 5 or 10 bytes.
    #[error("varint is too long")]
    InvalidVarint,
    /// A field runs past the end of the record, message or batch that contains it.
    #[error("field runs past the end of its record")]
    Truncated,
    /// A record's fields did not use exactly the bytes its length prefix promised.
    #[error("record length {declared} does not match the {actual} bytes its fields use")]
    RecordLengthMismatch {
        /// The record's length prefix.
        declared: i64,
        /// The bytes its fields actually took.
        actual: i64,
    },
    /// A key, value or header length is below -1 (or a header key length is negative).
    #[error("invalid length {length}")]
    InvalidLength {
        /// The length read.
        length: i64,
    },
    /// A negative header count.
    #[error("invalid header count {count}")]
    InvalidHeaderCount {
        /// The count read.
        count: i32,
    },
    /// A record header key is not valid UTF-8.
    #[error("record header key is not valid UTF-8")]
    InvalidHeaderKey,
    /// The compression codec bits name no codec (or zstd in a v0/v1 message).
    #[error("unknown compression codec id {codec}")]
    UnknownCompression {
        /// The codec id (attribute bits 0-2).
        codec: u8,
    },
    /// Decompressing the records would exceed the caller's limit.
    #[error("decompressed records exceed the limit of {limit} bytes")]
    DecompressedTooLarge {
        /// The caller-given limit in bytes.
        limit: usize,
    },
    /// The codec library rejected the compressed bytes.
    #[error("{codec} decompression failed: {detail}")]
    Decompression {
        /// The codec in use.
        codec: Compression,
        /// The codec library's message.
        detail: String,
    },
    /// An offset computed from a base and a delta does not fit in an i64.
    #[error("offset overflows")]
    OffsetOverflow,
    /// A control record's key or an end-transaction marker's value is malformed.
    #[error("invalid control record: {reason}")]
    InvalidControlRecord {
        /// What was wrong.
        reason: &'static str,
    },
    /// A compressed v0/v1 wrapper message is malformed (null value, no inner messages, nested
    /// compression, inner magic differing from the wrapper, inner offsets out of order).
    #[error("invalid compressed wrapper message: {reason}")]
    InvalidWrapper {
        /// What was wrong.
        reason: &'static str,
    },
}

impl Error {
    pub(crate) fn corrupt(position: u64, kind: CorruptKind) -> Self {
        Error::Corrupt { position, kind }
    }

    /// The corruption kind, when this is [`Error::Corrupt`].
    pub fn corrupt_kind(&self) -> Option<&CorruptKind> {
        match self {
            Error::Corrupt { kind, .. } => Some(kind),
            _ => None,
        }
    }

    /// The absolute byte position, when this error has one.
    pub fn position(&self) -> Option<u64> {
        match self {
            Error::Corrupt { position, .. } | Error::ShortPrefix { position, .. } => {
                Some(*position)
            }
            _ => None,
        }
    }
}
