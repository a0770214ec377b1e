//! seglog's reliability suites: the shared machinery of the tests in `tests/it/` and of the
//! `crash-child` binary.
//!
//! The promise under test: a log loses nothing it acknowledged as durable and never serves a
//! corrupt byte, under process kills, power loss, I/O faults, damaged files, bad input and
//! concurrent readers. `docs/durability.md` states the crash model and maps every guarantee
//! (and every Kafka storage bug of spec section 7) to the test that checks it.
//!
//! What is here:
//! - [`RecordId`]: self-verifying record content. The key names `(stream, seq)` and the value and
//!   timestamp are functions of it, so any record read back is checked byte for byte.
//! - [`read_log`] / [`check_acknowledged`]: read a whole log and check CRCs, contents, the absence
//!   of gaps and of anything past the end, and that every acknowledged record is there.
//! - [`CrashImage`]: the post-power-loss state of a directory, built from the durable images
//!   that the I/O seam's test backend (`seglog-faults`) keeps (with torn pages, lost directory entries and
//!   index files in any state the crash could leave).
//! - [`child`]: the kill -9 protocol between the test and the `crash-child` process.
//! - [`fuzz_support`]: what the cargo-fuzz targets and their stable harness share (CRC
//!   fix-ups, the copy of a template log).
//!
//! What it deliberately does not do: it is test support, not a library for users; its checks
//! return a human-readable [`Violation`] rather than a matchable error.
//!
//! ```
//! use seglog::{Log, LogConfig};
//! use seglog_reliability::{RecordId, build_batch, check_acknowledged, read_log};
//!
//! let dir = tempfile::tempdir()?;
//! let log = Log::open(dir.path().join("t-0"), seglog_reliability::small_config(4096))?;
//! let ids: Vec<RecordId> = (0..3).map(|seq| RecordId { stream: 1, seq }).collect();
//! let info = log.append_durable(&build_batch(&ids, seglog::Compression::None)?)?;
//! let acked = ids.iter().enumerate().map(|(i, id)| (info.first_offset + i as i64, *id)).collect();
//! check_acknowledged(&read_log(&log)?, &acked)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]

pub mod child;
mod crash_image;
pub mod fuzz_support;
mod payload;
mod verify;
mod workload;

pub use crate::crash_image::{CrashImage, CrashOptions, IndexFate, Listing};
pub use crate::payload::{Fnv, RecordId, T0_MS};
pub use crate::verify::{
    LogContents, ServedRecord, Violation, check_acknowledged, read_log, read_log_with_gaps,
};
pub use crate::workload::{build_batch, env_u64, small_config};

/// The result type of the checks.
pub type Result<T, E = Violation> = std::result::Result<T, E>;
