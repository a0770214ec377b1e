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

    /// Whether the marker exists, without touching it (read-only opens). Only a regular file
    /// is a marker (the one checked open, [`seglog_segment::open_regular`]): a dangling symlink
    /// is none, and a directory or a FIFO at the name is an error, never a clean shutdown.
    ///
    /// # Errors
    /// [`crate::Error::Io`] naming the marker when it cannot be opened or is not a regular
    /// file.
    pub(crate) fn exists(&self) -> Result<bool> {
        match seglog_segment::open_regular_if_exists(&self.path) {
            Ok(found) => Ok(found.is_some()),
            Err(e) => Err(crate::Error::io(
                "open clean-shutdown marker",
                &self.path,
                e,
            )),
        }
    }

    /// Reads and deletes the marker, fsyncing the directory so the deletion is durable before
    /// any loading starts. Returns whether the last shutdown was clean.
    ///
    /// # Errors
    /// As [`CleanShutdownMarker::exists`]; [`crate::Error::Io`] if the marker cannot be
    /// deleted or the directory synced.
    pub(crate) fn consume(&self) -> Result<bool> {
        if !self.exists()? {
            return Ok(false);
        }
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
        assert!(marker.exists().unwrap());
        assert!(marker.consume().unwrap());
        assert!(!marker.exists().unwrap());
        // Older brokers wrote an empty file: existence is all that matters.
        std::fs::write(dir.path().join(CLEAN_SHUTDOWN_FILE), b"").unwrap();
        assert!(marker.consume().unwrap());
    }

    /// Only a regular file is a marker: a directory or a FIFO at its name is an error (a
    /// directory used to count as a clean shutdown), a dangling symlink is no marker and is
    /// left where it is.
    #[test]
    fn a_marker_that_is_not_a_regular_file_is_no_clean_shutdown() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CLEAN_SHUTDOWN_FILE);
        let marker = CleanShutdownMarker::new(dir.path(), &Io::direct());
        std::fs::create_dir(&path).unwrap();
        assert!(marker.exists().is_err());
        assert!(marker.consume().is_err());
        assert!(path.is_dir());
        std::fs::remove_dir(&path).unwrap();
        let ok = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap()
            .success();
        assert!(ok, "mkfifo");
        assert!(marker.exists().is_err());
        assert!(marker.consume().is_err());
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &path).unwrap();
        assert!(!marker.exists().unwrap());
        assert!(!marker.consume().unwrap());
        assert!(path.symlink_metadata().is_ok());
    }
}
