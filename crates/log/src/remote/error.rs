//! [`RemoteError`]: what a [`super::RemoteTier`] call reports, wrapped by the log in
//! [`crate::Error::Remote`].

/// How a remote call failed, for callers deciding whether to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RemoteErrorKind {
    /// The object (a segment, an index) does not exist (Kafka's
    /// `RemoteResourceNotFoundException`).
    NotFound,
    /// A failure a later call may not meet: throttling, a 5xx answer, a timeout (Kafka's
    /// `RetriableRemoteStorageException`).
    Retriable,
    /// Anything else (Kafka's `RemoteStorageException`).
    Other,
}

impl std::fmt::Display for RemoteErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RemoteErrorKind::NotFound => "not found",
            RemoteErrorKind::Retriable => "retriable",
            RemoteErrorKind::Other => "failed",
        })
    }
}

/// The error of a [`super::RemoteTier`] call: a matchable kind, a message naming what was
/// accessed (an object name, a segment), and the implementation's error as the source.
#[derive(Debug, thiserror::Error)]
#[error("remote tier {kind}: {message}")]
pub struct RemoteError {
    /// How it failed.
    pub kind: RemoteErrorKind,
    /// What was being accessed and what went wrong.
    pub message: String,
    /// The implementation's error, when there is one.
    #[source]
    pub source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl RemoteError {
    /// An error of `kind` with `message` and no source.
    pub fn new(kind: RemoteErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// An error of `kind` with `message`, caused by `source`.
    pub fn with_source(
        kind: RemoteErrorKind,
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self {
            kind,
            message: message.into(),
            source: Some(Box::new(source)),
        }
    }

    /// [`RemoteErrorKind::NotFound`] with `message`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(RemoteErrorKind::NotFound, message)
    }

    /// Whether the object does not exist.
    pub fn is_not_found(&self) -> bool {
        self.kind == RemoteErrorKind::NotFound
    }

    /// Whether a later call may succeed.
    pub fn is_retriable(&self) -> bool {
        self.kind == RemoteErrorKind::Retriable
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn the_kind_and_the_source_chain_survive() {
        let io = std::io::Error::new(std::io::ErrorKind::TimedOut, "slow");
        let e = RemoteError::with_source(RemoteErrorKind::Retriable, "get seg.log", io);
        assert!(e.is_retriable() && !e.is_not_found());
        assert_eq!(e.to_string(), "remote tier retriable: get seg.log");
        assert_eq!(e.source().map(ToString::to_string).as_deref(), Some("slow"));
        assert!(RemoteError::not_found("x").is_not_found());
    }
}
