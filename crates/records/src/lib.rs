//! Kafka record batch formats: bytes in, batches and records out.
//!
//! `seglog-records` reads every batch format a Kafka `.log` can hold and writes v2 batches,
//! byte-compatible with Kafka:
//!
//! - [`BatchHeader::parse`]: the shallow header of a batch of any magic from a prefix of at most
//!   61 bytes, with Kafka's rules for end of data, partial tails and corruption;
//! - [`Batches`] / [`OwnedBatches`]: batch after batch over a region of bytes, reading only
//!   headers (optionally checking every CRC), the hot path of recovery and offset translation;
//! - [`BatchRef`] / [`OwnedBatch`]: one whole batch; [`BatchRef::ensure_valid`] checks the
//!   CRC-32C (v2) or CRC-32 (v0/v1) over exactly the bytes Kafka covers, and
//!   [`BatchRef::records`] decodes records, decompressing gzip, snappy, lz4 or zstd into at most a
//!   caller-given number of bytes; [`BatchRef::records_borrowed`] decodes the records of an
//!   uncompressed v2 batch as [`RecordRef`]s borrowing the batch's bytes (no copy, no refcount);
//! - control records ([`ControlRecord`]): transaction markers and KRaft control types;
//! - [`BatchBuilder`]: writes v2 batches with any codec; [`set_base_offset`],
//!   [`set_partition_leader_epoch`] and [`set_log_append_time`] rewrite one in place;
//! - [`crc32c()`]: the v2 batch checksum, for re-checksumming hand-edited bytes.
//!
//! It deliberately knows nothing of files, segments or indexes: positions are plain byte
//! positions the caller chooses (the segment layer passes file positions and adds the path to
//! errors). It never writes the legacy v0/v1 formats. No input makes it panic: every problem is
//! an [`Error`] naming the byte position.
//!
//! ```
//! use seglog_records::{BatchBuilder, Batches, Compression};
//!
//! let mut builder = BatchBuilder::new(0).compression(Compression::Gzip);
//! builder.append(1_700_000_000_000, Some(b"key"), Some(b"value"), &[]);
//! let log = builder.build()?;
//!
//! for batch in Batches::new(&log, 0).validated() {
//!     let batch = batch?;
//!     for record in batch.records(1 << 20) {
//!         let record = record?;
//!         assert_eq!(record.offset, 0);
//!         assert_eq!(record.value.as_deref(), Some(&b"value"[..]));
//!     }
//! }
//! # Ok::<(), seglog_records::Error>(())
//! ```

#![forbid(unsafe_code)]

mod batch;
mod batches;
mod builder;
mod codec;
mod compression;
mod control;
mod crc;
mod error;
mod header;
mod layout;
mod legacy;
mod record;
mod record_ref;
mod records;
mod rewrite;
#[cfg(test)]
mod test_vectors;
mod timestamp;
mod varint;
mod xxhash32;

pub use crate::{
    batch::{BatchRef, OwnedBatch},
    batches::{Batches, OwnedBatches},
    builder::BatchBuilder,
    compression::Compression,
    control::{ControlRecord, ControlRecordType, EndTransactionMarker},
    crc::crc32c,
    error::{CorruptKind, Error},
    header::{BatchHeader, HeaderRead},
    layout::{
        HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, MAGIC_OFFSET, MAGIC_V0, MAGIC_V1, MAGIC_V2,
        RECORD_BATCH_OVERHEAD, RECORD_OVERHEAD_V0, RECORD_OVERHEAD_V1,
    },
    record::{Header, Record},
    record_ref::{HeaderRefs, RecordRef, RecordRefs},
    records::Records,
    rewrite::{
        set_base_offset, set_log_append_time, set_max_timestamp, set_partition_leader_epoch,
    },
    timestamp::TimestampType,
};

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

// The crate README's example compiles and runs as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme {}
