//! The crate's one error type.

use std::path::PathBuf;

use crate::state::RemoteLogSegmentState;

/// What went wrong in the remote tier. Every variant names the object key or local path it is
/// about; store errors keep `object_store`'s error as their source.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An object store call failed.
    #[error("object store {op} of {key}: {source}")]
    Store {
        /// The operation (`put`, `get`, `delete`, `list`, ...).
        op: &'static str,
        /// The object key (or listing prefix).
        key: String,
        /// The store's error.
        #[source]
        source: object_store::Error,
    },
    /// Reading a local file to upload failed.
    #[error("{op} {}: {source}", path.display())]
    Io {
        /// The operation (`open`, `read`).
        op: &'static str,
        /// The local file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A name does not follow Kafka's remote layout.
    #[error("{name:?} is not a remote {what}: {reason}")]
    BadName {
        /// The name (an object key, a file name or a directory name).
        name: String,
        /// What it was expected to be (`segment file`, `partition directory`, `uuid`).
        what: &'static str,
        /// Why it does not parse.
        reason: &'static str,
    },
    /// A metadata record does not decode.
    #[error("corrupt metadata record {key} at byte {position}: {kind}")]
    Corrupt {
        /// The metadata object's key.
        key: String,
        /// The byte position inside the object where decoding failed.
        position: u64,
        /// What is wrong.
        kind: CorruptKind,
    },
    /// A fileset found by listing (to adopt) is incomplete or its `.log` is damaged.
    #[error("cannot adopt remote segment {key}: at byte {position}: {problem}")]
    Adopt {
        /// The fileset's `.log` object key.
        key: String,
        /// The byte position in the `.log` (0 when the problem is not inside it).
        position: u64,
        /// What is wrong.
        #[source]
        problem: crate::adopt::AdoptProblem,
    },
    /// The store holds complete filesets without seglog metadata (a Kafka broker's
    /// `LocalTieredStorage` copies, or a remote store not yet adopted): recovery would delete
    /// them as orphans, so it refuses until they are adopted.
    #[error(
        "{key}: {filesets} complete remote segment fileset(s) without seglog metadata (tiered by another writer, such as a Kafka broker's LocalTieredStorage, and not adopted): run `seglog tier --adopt` on this partition first; nothing was deleted"
    )]
    NotAdopted {
        /// The first such fileset's `.log` object key.
        key: String,
        /// How many such filesets the partition's data directory holds.
        filesets: usize,
    },
    /// A state change the protocol does not allow (from the segment's current state).
    #[error("segment {key}: the metadata state {from:?} cannot move to {to:?}")]
    InvalidTransition {
        /// The segment's metadata prefix.
        key: String,
        /// Its current state (`None`: no metadata at all).
        from: Option<RemoteLogSegmentState>,
        /// The state asked for.
        to: RemoteLogSegmentState,
    },
    /// Another writer moved the segment's metadata first (a lost compare-and-swap): the copy
    /// it was part of must not be counted finished.
    #[error(
        "segment {key}: another writer set slot {slot} to {winner:?} first (wanted {wanted:?})"
    )]
    Conflict {
        /// The metadata slot's key prefix.
        key: String,
        /// The slot both writers tried to create.
        slot: u8,
        /// What this writer wanted to write.
        wanted: RemoteLogSegmentState,
        /// What the slot holds.
        winner: RemoteLogSegmentState,
    },
    /// A range or argument outside what the segment holds.
    #[error("segment {key}: {reason}")]
    InvalidArgument {
        /// The segment's object key.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// The log refused a call of the tier driver (listing candidates, raising an offset).
    #[error(transparent)]
    Log(#[from] seglog::Error),
    /// A setting of the tiering service is out of Kafka's range.
    #[error("{name}: must be {reason}")]
    InvalidConfig {
        /// The Kafka setting (`remote.log.manager.copier.thread.pool.size`, ...).
        name: &'static str,
        /// The valid range.
        reason: &'static str,
    },
    /// A partition directory cannot be tiered: no topic id (`partition.metadata`), or a name
    /// Kafka's remote layout does not take.
    #[error("{}: {reason}", dir.display())]
    Partition {
        /// The partition directory.
        dir: PathBuf,
        /// Why.
        reason: String,
    },
    /// A task of the tiering service panicked (a bug): counted as the partition's failure so
    /// the other partitions and the service go on.
    #[error("the {task} task of {partition} panicked: {message}")]
    Panicked {
        /// `copy` or `expiry`.
        task: &'static str,
        /// The partition (`<topic>-<partition>`).
        partition: String,
        /// The panic's message, when it was a string.
        message: String,
    },
    /// The service's thread could not start.
    #[error("cannot start the tiering service's thread: {0}")]
    Thread(#[source] std::io::Error),
    /// The blocking facade could not start its runtime.
    #[error("cannot start the tier's runtime: {0}")]
    Runtime(#[source] std::io::Error),
}

/// What is wrong with a metadata record (matchable).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CorruptKind {
    /// Not a metadata record's JSON document (the decoder's message).
    #[error("not a metadata record: {0}")]
    Json(String),
    /// A record of a newer format version than this code reads.
    #[error("format version {0} (this build reads 0)")]
    Version(u16),
    /// The record is for another segment or slot than its key says.
    #[error("the record names segment {found} but its key says {expected}")]
    WrongSegment {
        /// What the key says.
        expected: String,
        /// What the record says.
        found: String,
    },
    /// A state chain with a hole or a transition the protocol never writes.
    #[error("slot {slot} holds {state:?}, which cannot follow {previous:?}")]
    BadChain {
        /// The slot.
        slot: u8,
        /// Its state.
        state: String,
        /// The state of the slot before it.
        previous: String,
    },
}

impl Error {
    /// Whether the error says the object does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            Error::Store {
                source: object_store::Error::NotFound { .. },
                ..
            }
        )
    }

    /// Whether trying again later may succeed: a store's generic failure (what object_store
    /// reports for HTTP 5xx, throttling such as S3's 503 SlowDown, timeouts and dropped
    /// connections once its own retries are spent), a task that did not join, or a log error
    /// that says its remote tier was retriable. Not retriable: a missing object, a denied or
    /// unauthenticated request, a lost compare-and-swap ([`Error::Conflict`]), corruption,
    /// local I/O, a bad name or argument (Kafka's `RetriableRemoteStorageException` against
    /// `RemoteStorageException`).
    pub fn is_retriable(&self) -> bool {
        match self {
            Error::Store { source, .. } => matches!(
                source,
                object_store::Error::Generic { .. } | object_store::Error::JoinError { .. }
            ),
            Error::Log(seglog::Error::Remote { source, .. }) => source.is_retriable(),
            _ => false,
        }
    }

    pub(crate) fn store(
        op: &'static str,
        key: &object_store::path::Path,
        source: object_store::Error,
    ) -> Self {
        Error::Store {
            op,
            key: key.to_string(),
            source,
        }
    }
}
