//! One Kafka log segment: the trio `<base offset, 20 digits>.log` / `.index` / `.timeindex`,
//! byte-compatible with the files a Kafka broker writes.
//!
//! * [`Segment`] is the shared read side (`Send + Sync`, in an `Arc`): offset translation,
//!   zero-copy reads ([`FileSlice`]: `pread` or `sendfile`), lookup by timestamp, the next
//!   offset, the max timestamp, flush, rename to `.deleted`, delete, close, recovery.
//! * [`ActiveSegment`] is the one writer: appends with Kafka's index rule, truncation, the
//!   roll decision, and [`ActiveSegment::seal`], which consumes it.
//! * [`Segment::open`] opens existing files under a strict index policy: a missing,
//!   zero-padded, short or inconsistent index is rebuilt by recovering the segment, never
//!   trusted. Read-only opens never write to disk.
//! * [`file_name`] / [`parse_file_name`] build and parse every segment file name.
//! * [`seam`]: the I/O seam. Every `.log` write and fsync, rename, unlink, index-flush check and
//!   directory fsync goes through the [`Io`] handle of [`SegmentConfig::io`]: the system calls
//!   by default ([`Io::direct`]), a fault-injecting backend in tests (`seglog-faults`).
//!
//! * The aborted-transaction index (`.txnindex`, [`AbortedTxn`]): appended, truncated,
//!   replaced, searched ([`Segment::collect_aborted_txns`]), renamed and deleted with its
//!   segment; what goes in it is decided by the log's producer state.
//!
//! * A recovery can also collect a [`RecoveryDigest`] of the batches it kept (leader-epoch
//!   starts, batches with a producer id), so the log builds its epoch cache and producer state
//!   from that one pass ([`Segment::recover_with_digest`]).
//!
//! What it deliberately does not do: it knows nothing of the segment map, the log end
//! offset, retention, checkpoints, producer state or leader epochs. It does not validate or
//! assign offsets of appended batches: the log does. It never fsyncs a directory by itself
//! ([`Io::sync_dir`] is there for the log's protocol; [`sync_dir`] is its direct form).
//!
//! ```
//! use seglog_segment::{ActiveSegment, SegmentConfig};
//! use seglog_records::BatchBuilder;
//!
//! let dir = tempfile::tempdir()?;
//! let mut active = ActiveSegment::create(dir.path(), 0, &SegmentConfig::default())?;
//! let mut builder = BatchBuilder::new(0);
//! builder.append(1_700_000_000_000, None, Some(b"hello"), &[]);
//! let batch = builder.build()?;
//! active.append(0, 1_700_000_000_000, 0, &batch)?;
//!
//! let segment = active.seal()?;
//! let slice = segment.read(0, 1024, u64::MAX, true)?.expect("offset 0 is here");
//! assert_eq!(slice.read_to_vec()?, &batch[..]);
//! assert_eq!(segment.read_next_offset()?, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]

mod active;
mod cache;
mod config;
mod copy_out;
mod digest;
mod error;
mod file_name;
mod io;
#[cfg(all(test, loom))]
mod loom_models;
mod open;
mod producer_batches;
mod read;
mod recover;
mod regular_file;
pub mod seam;
mod segment;
mod slice;
mod sync;
mod txn_index;
mod walk;

pub use crate::active::ActiveSegment;
pub use crate::cache::{DEFAULT_SEGMENT_CACHE_CAPACITY, SegmentCache};
pub use crate::config::{RollParams, SegmentConfig};
pub use crate::copy_out::CopiedRead;
pub use crate::digest::{EpochStart, ProducerBatch, RecoveryDigest, TxnMarker};
pub use crate::error::{CorruptKind, Error, IoOp, TxnIndexProblem};
pub use crate::file_name::{
    FileKind, FileType, ParsedFileName, TempSuffix, file_name, file_path, parse_file_name,
    parse_listed_name,
};
pub use crate::open::{ListedFiles, OpenReport, RebuildReason, SegmentOpenOptions};
pub use crate::producer_batches::ProducerBatches;
pub use crate::read::{BatchHeaders, LogOffsetPosition, TimestampAndOffset, TimestampBatch};
pub use crate::recover::RecoveryReport;
pub use crate::regular_file::{
    NonRegularKind, NotRegularFile, create_regular, not_regular, open_regular,
    open_regular_if_exists,
};
pub use crate::seam::Io;
pub use crate::segment::{OpenMode, Segment, sync_dir};
pub use crate::slice::{FileSlice, SliceOffsets};
pub use crate::txn_index::{
    AbortedTxn, MIN_CONTROL_BATCH_BYTES, TxnIndexSearch, check_txn_entry, decode_txn_index,
    read_txn_index, txn_index_limit,
};
pub use crate::walk::TruncationReason;
pub use seglog_index_core::TimestampOffset;

/// Result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

// The crate README's example compiles and runs as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme {}
