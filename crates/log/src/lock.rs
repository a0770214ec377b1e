//! The exclusive directory lock (`.lock`, as Kafka's LogManager keeps in each log dir).

use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;

use crate::error::IoContext;
use crate::{Error, Result};

/// Name of the lock file.
pub const LOCK_FILE: &str = ".lock";

/// Holds an exclusive advisory lock (`flock`) on `<dir>/.lock` until dropped.
///
/// `flock` locks belong to the open file description, so a second `Log` in the same process is
/// refused just like another process. The lock file itself is left in place (Kafka does too).
#[derive(Debug)]
pub(crate) struct DirLock {
    // Held only for its lock; closing the descriptor releases it.
    _file: File,
}

impl DirLock {
    /// Creates `<dir>/.lock` if needed and takes the lock without waiting.
    ///
    /// # Errors
    /// [`Error::Locked`] when someone else holds it; [`Error::Io`] if the file cannot be opened.
    pub(crate) fn acquire(dir: &Path) -> Result<Self> {
        let path = dir.join(LOCK_FILE);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .ctx("create lock file", &path)?;
        match file.try_lock() {
            Ok(()) => Ok(Self { _file: file }),
            Err(TryLockError::WouldBlock) => Err(Error::Locked { path }),
            Err(TryLockError::Error(e)) => Err(Error::io("lock", &path, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lock_is_refused_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let first = DirLock::acquire(dir.path()).unwrap();
        assert!(dir.path().join(LOCK_FILE).exists());
        let err = DirLock::acquire(dir.path()).unwrap_err();
        assert!(matches!(err, Error::Locked { .. }), "{err}");
        assert!(err.to_string().contains("locked"));
        drop(first);
        DirLock::acquire(dir.path()).unwrap();
    }
}
