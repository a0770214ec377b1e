//! Kafka-compatible sparse indexes for one log segment: the offset index (`.index`) and the
//! time index (`.timeindex`).
//!
//! The on-disk format is Kafka's, byte for byte: no header, big-endian fixed-size entries
//! (`.index`: relative offset `i32` + position `i32`; `.timeindex`: timestamp `i64` + relative
//! offset `i32`). A file written by a Kafka broker opens unchanged and a file written here opens
//! in Kafka. Lifecycle (preallocate, trim, resize, truncate, msync) and lookups (including the
//! warm/cold split of the binary search) follow Kafka's `AbstractIndex`, `OffsetIndex` and
//! `TimeIndex`, byte for byte.
//!
//! What this crate deliberately does not do: it knows nothing about segments, `.log` files,
//! directories or locks. It does not decide *when* to add an entry (the segment layer applies
//! `index.interval.bytes`), does not fsync directories, and does not rebuild a broken index: a
//! stricter-than-Kafka [`OffsetIndex::sanity_check`] / [`TimeIndex::sanity_check`] reports
//! corruption so that the segment layer can rebuild.
//!
//! Concurrency: both index types are `Send + Sync`. One appender at a time (appends are
//! serialized internally) and any number of concurrent readers. An entry becomes visible only
//! after its bytes are written, and readers never touch mapped bytes beyond the end of the file,
//! even while the index is trimmed, resized or truncated.
//!
//! ```
//! use seglog_index_core::{OffsetIndex, OffsetPosition, TimeIndex, TimestampOffset};
//!
//! let index = OffsetIndex::in_memory("00000000000000000050.index", 50, 1024);
//! index.append(55, 4096)?;
//! index.append(60, 8192)?;
//! assert_eq!(index.lookup(57), OffsetPosition { offset: 55, position: 4096 });
//! assert_eq!(index.lookup(10), OffsetPosition { offset: 50, position: 0 });
//!
//! let times = TimeIndex::in_memory("00000000000000000050.timeindex", 50, 1024);
//! times.maybe_append(1_700_000_000_000, 55, false)?;
//! assert_eq!(times.lookup(1_700_000_000_001), TimestampOffset { timestamp_ms: 1_700_000_000_000, offset: 55 });
//! # Ok::<(), seglog_index_core::Error>(())
//! ```

mod core;
mod entry;
mod error;
mod grace;
mod lifecycle;
#[cfg(all(test, loom))]
mod loom_models;
mod mmap;
mod offset_index;
mod sanity;
mod search;
mod sync;
mod time_index;

pub use crate::entry::{
    IndexEntry, OffsetEntry, OffsetPosition, TimeEntry, TimestampOffset, relative_offset,
};
pub use crate::error::{CorruptKind, Error};
pub use crate::offset_index::OffsetIndex;
pub use crate::search::{
    Column, WARM_SECTION_BYTES, ceiling_slot, floor_slot, largest_lower_bound, smallest_upper_bound,
};
pub use crate::time_index::TimeIndex;

/// Result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

// The crate README's example compiles and runs as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme {}
