//! A Kafka log segment (work in progress).
#![forbid(unsafe_code)]

mod config;
mod error;
#[cfg(feature = "fault-injection")]
pub mod fault;
#[cfg(all(test, not(feature = "fault-injection")))]
mod fault;
mod file_name;
mod io;
mod slice;

pub use crate::config::{RollParams, SegmentConfig};
pub use crate::error::{CorruptKind, Error, IoOp};
pub use crate::file_name::{
    FileKind, FileType, ParsedFileName, TempSuffix, file_name, file_path, parse_file_name,
};
pub use crate::slice::{FileSlice, SliceOffsets};

/// Result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
