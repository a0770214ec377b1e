//! The crate's error type, and its mapping onto openraft's `StorageError`.

use std::path::PathBuf;

use openraft::{AnyError, StorageError, StorageIOError};

/// What went wrong in the log store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The seglog log failed (I/O, corruption, a poisoned log, an offset out of range).
    #[error("seglog: {0}")]
    Log(#[from] seglog::Error),
    /// I/O on a side file (vote, committed, purged, truncation) or the store's directory.
    #[error("{op} {path}: {source}")]
    Io {
        /// The operation (`write`, `fsync`, `rename`, `read`, ...).
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A side file that does not parse.
    #[error("{path}: not a valid side file: {source}")]
    SideFile {
        /// The file.
        path: PathBuf,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// A record of the log that is not a Raft entry as this crate encodes them (see the
    /// crate docs, "Encoding").
    #[error("{dir}: offset {offset}: not a Raft entry: {reason}")]
    Corrupt {
        /// The log directory.
        dir: PathBuf,
        /// The offset (log index) of the record.
        offset: i64,
        /// What is wrong.
        reason: String,
    },
    /// Entries that cannot be written as a batch (a payload serde refuses, a batch over
    /// `i32::MAX` bytes).
    #[error("log index {index}: cannot encode the entry: {reason}")]
    Encode {
        /// The index of the entry (or of the batch's first entry).
        index: u64,
        /// What failed.
        reason: String,
    },
    /// A term that does not fit a batch's `partitionLeaderEpoch` (a non-negative `i32`).
    #[error("term {term} of log index {index} does not fit in a partition leader epoch (at most {max})", max = i32::MAX)]
    TermTooLarge {
        /// The term.
        term: u64,
        /// The entry's index.
        index: u64,
    },
    /// A log index above `i64::MAX` (a Kafka offset).
    #[error("log index {index} does not fit in a Kafka offset")]
    IndexTooLarge {
        /// The index.
        index: u64,
    },
    /// Entries that would leave a hole in the log or overwrite it without a truncation.
    #[error("append at log index {index}, but the next index is {expected}")]
    NotContiguous {
        /// The index the log expects next.
        expected: u64,
        /// The index of the entry offered.
        index: u64,
    },
    /// An earlier append did not become durable (its fsync failed: the log is poisoned until
    /// the store is reopened).
    #[error("{dir}: an earlier append did not become durable: {reason}")]
    FlushFailed {
        /// The log directory.
        dir: PathBuf,
        /// The flush error, as the flush thread reported it.
        reason: String,
    },
    /// A [`crate::ProposerConfig`] that cannot work.
    #[error("invalid proposer config: {reason}")]
    InvalidProposerConfig {
        /// What is wrong.
        reason: &'static str,
    },
    /// The flusher thread is gone (the store is being dropped, or it could not be started).
    #[error("the flush thread of {dir} is not running")]
    FlusherGone {
        /// The log directory.
        dir: PathBuf,
    },
}

impl Error {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }

    /// As a `StorageError` for reading logs.
    pub(crate) fn read_logs(self) -> StorageError<u64> {
        StorageIOError::read_logs(AnyError::new(&self)).into()
    }

    /// As a `StorageError` for writing logs.
    pub(crate) fn write_logs(self) -> StorageError<u64> {
        StorageIOError::write_logs(AnyError::new(&self)).into()
    }

    /// As a `StorageError` for writing the vote.
    pub(crate) fn write_vote(self) -> StorageError<u64> {
        StorageIOError::write_vote(AnyError::new(&self)).into()
    }
}

/// Any store error as openraft's: an I/O error of the store (`ErrorSubject::Store`), the
/// source kept as text and type name in its `AnyError`.
impl From<Error> for StorageError<u64> {
    fn from(e: Error) -> Self {
        StorageIOError::new(
            openraft::ErrorSubject::Store,
            openraft::ErrorVerb::Write,
            AnyError::new(&e),
        )
        .into()
    }
}
