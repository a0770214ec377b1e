//! The exclusive directory lock (`.lock`, as Kafka's LogManager keeps in each log dir).
//!
//! Two locks are taken on `<dir>/.lock`, because the two kinds do not see each other on Linux:
//!
//! * an `flock` (std's `File::try_lock`), which other seglog processes take, and which belongs
//!   to the open file description (so a second `Log` in this process conflicts too);
//! * a POSIX `fcntl` write lock over the whole file (`F_SETLK`, rustix's `fcntl_lock`), which is
//!   what a Kafka broker takes: the JVM implements `FileChannel.tryLock` with `F_SETLK`. So
//!   seglog refuses a directory a running broker holds, and a broker refuses one seglog holds.
//!
//! POSIX locks belong to the **process**: any `close` of any descriptor of that file in this
//! process releases it (and a second lock from this process never conflicts). The Linux-only
//! open-file-description variant (`F_OFD_SETLK`) would not have that flaw, but no safe wrapper
//! for it exists (rustix has none, and this crate forbids `unsafe`). So a process-wide registry
//! of held lock files (device, inode) is checked **before** opening the file, under one mutex,
//! and a second lock attempt in this process is refused without ever opening (and closing) a
//! descriptor of a held file. What remains: other code in this process that opens and closes
//! a held `.lock` (e.g. copying the directory while a `Log` is open) silently drops the POSIX
//! half; the `flock` half still excludes other seglog processes.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions, TryLockError};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
// Plain std mutex, not the loom shim: a `static` needs a `const` constructor (see `sync.rs`).
use std::sync::{Mutex, MutexGuard};

use rustix::fs::FlockOperation;

use crate::error::IoContext;
use crate::{Error, Result};

/// Name of the lock file.
pub const LOCK_FILE: &str = ".lock";

/// How often a conflicting `flock` is retried before `Locked` (see `DirLock::acquire`), and
/// the pause between attempts: 100 ms in all.
const FLOCK_RETRIES: u32 = 20;
const FLOCK_RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(5);

/// (device, inode) of every lock file a `DirLock` of this process holds.
static HELD: Mutex<BTreeSet<(u64, u64)>> = Mutex::new(BTreeSet::new());

fn held() -> MutexGuard<'static, BTreeSet<(u64, u64)>> {
    // The set is always left consistent.
    crate::sync::unpoison(HELD.lock())
}

/// Holds an exclusive `flock` and a POSIX write lock on `<dir>/.lock` until dropped. The lock
/// file itself is left in place (Kafka does too). Shared (`Arc`) by a `LogDir` and every log
/// of its root, so the root stays locked while any of them is alive.
#[derive(Debug)]
pub(crate) struct DirLock {
    /// Held only for its locks; closing it releases them. `None` only inside `drop`.
    file: Option<File>,
    id: (u64, u64),
}

impl DirLock {
    /// Creates `<dir>/.lock` if needed and takes both locks without waiting.
    ///
    /// # Errors
    /// [`Error::Locked`] when another `DirLock` of this process, another seglog process or a
    /// Kafka broker holds it; [`Error::Io`] if the file cannot be opened or locked.
    pub(crate) fn acquire(dir: &Path) -> Result<Self> {
        let path = dir.join(LOCK_FILE);
        let locked = |in_this_process| Error::Locked {
            path: path.clone(),
            in_this_process,
        };
        let mut held = held();
        if let Ok(metadata) = std::fs::metadata(&path)
            && held.contains(&(metadata.dev(), metadata.ino()))
        {
            return Err(locked(true));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .ctx("create lock file", &path)?;
        let metadata = file.metadata().ctx("read metadata", &path)?;
        let id = (metadata.dev(), metadata.ino());
        // No `DirLock` of this process holds the file (the registry says so), so a conflict is
        // another process — or a child this process is forking: until it `exec`s, it shares
        // every open file description, including the one behind a `flock` a `DirLock` of ours
        // just released by closing it. That lasts microseconds to milliseconds, so retry a
        // little before reporting `Locked`.
        let mut attempts = 0;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(TryLockError::WouldBlock) if attempts < FLOCK_RETRIES => {
                    attempts += 1;
                    std::thread::sleep(FLOCK_RETRY_PAUSE);
                }
                Err(TryLockError::WouldBlock) => return Err(locked(false)),
                Err(TryLockError::Error(e)) => return Err(Error::io("lock (flock)", &path, e)),
            }
        }
        match rustix::fs::fcntl_lock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(e) if e == rustix::io::Errno::AGAIN || e == rustix::io::Errno::ACCESS => {
                return Err(locked(false));
            }
            Err(e) => return Err(Error::io("lock (fcntl)", &path, e.into())),
        }
        held.insert(id);
        Ok(Self {
            file: Some(file),
            id,
        })
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        // Close (releasing both locks) and forget the file under the registry's mutex, so no
        // other acquire in this process opens it in between.
        let mut held = held();
        drop(self.file.take());
        held.remove(&self.id);
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
        // The refused attempt did not open (and close) the file: both locks are still held.
        let probe = File::open(dir.path().join(LOCK_FILE)).unwrap();
        assert!(matches!(probe.try_lock(), Err(TryLockError::WouldBlock)));
        drop(probe); // (this close drops the POSIX half; see the module docs)
        drop(first);
        DirLock::acquire(dir.path()).unwrap();
    }

    #[test]
    fn the_same_file_through_another_path_is_the_same_lock() {
        let dir = tempfile::tempdir().unwrap();
        let _first = DirLock::acquire(dir.path()).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path(), &link).unwrap();
        assert!(matches!(DirLock::acquire(&link), Err(Error::Locked { .. })));
    }
}
