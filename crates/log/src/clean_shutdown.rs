//! The clean-shutdown marker `.kafka_cleanshutdown` (spec §1.5, KAFKA-10471).
//!
//! Only the file's existence matters. It is consumed (read, then deleted and the deletion made
//! durable) before anything else is loaded, so a crash while loading counts as unclean; it is
//! written last at close, after every flush and checkpoint.

use std::path::{Path, PathBuf};

use seglog_segment::Io;

use crate::Result;
use crate::fsutil::{remove_if_exists, sync_dir, write_atomic};

/// Name of the marker file.
pub const CLEAN_SHUTDOWN_FILE: &str = ".kafka_cleanshutdown";

/// The marker of one directory (a log-dir root, or a standalone partition directory).
#[derive(Debug, Clone)]
pub(crate) struct CleanShutdownMarker {
    path: PathBuf,
    /// The seam its directory fsyncs go through.
    io: Io,
}

impl CleanShutdownMarker {
    pub(crate) fn new(dir: &Path, io: &Io) -> Self {
        Self {
            path: dir.join(CLEAN_SHUTDOWN_FILE),
            io: io.clone(),
        }
    }

    /// Whether the marker exists, without touching it (read-only opens).
    pub(crate) fn exists(&self) -> bool {
        self.path.exists()
    }

    /// Reads and deletes the marker, fsyncing the directory so the deletion is durable before
    /// any loading starts. Returns whether the last shutdown was clean.
    ///
    /// # Errors
    /// [`crate::Error::Io`] if the marker cannot be deleted or the directory synced.
    pub(crate) fn consume(&self) -> Result<bool> {
        let existed = remove_if_exists(&self.path)?;
        if existed && let Some(dir) = self.path.parent() {
            sync_dir(&self.io, dir)?;
        }
        Ok(existed)
    }

    /// Writes the marker in Kafka 3.7+'s JSON form (`brokerEpoch` -1: no broker), durably.
    ///
    /// # Errors
    /// [`crate::Error::Io`] naming the failing step.
    pub(crate) fn write(&self) -> Result<()> {
        write_atomic(&self.io, &self.path, br#"{"version":0,"brokerEpoch":-1}"#)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consume_deletes_and_reports() {
        let dir = tempfile::tempdir().unwrap();
        let marker = CleanShutdownMarker::new(dir.path(), &Io::direct());
        assert!(!marker.consume().unwrap());
        marker.write().unwrap();
        assert!(marker.exists());
        assert!(marker.consume().unwrap());
        assert!(!marker.exists());
        // Older brokers wrote an empty file: existence is all that matters.
        std::fs::write(dir.path().join(CLEAN_SHUTDOWN_FILE), b"").unwrap();
        assert!(marker.consume().unwrap());
    }
}
