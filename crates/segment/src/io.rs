//! The I/O seam: every read, write, fsync, length change, rename and unlink of a `.log`
//! file, every directory fsync ([`crate::sync_dir`]) and the fault check before each index
//! flush go through here.
//!
//! It is deliberately small so that the fault injector (module `fault`, compiled for tests
//! and with the `fault-injection` feature) can sit under it: fail the Nth write, fsync,
//! directory fsync, index flush, rename or unlink, keep per `.log` a "durable image" that only advances on a
//! successful fsync, and per directory a "durable listing" that only advances on a
//! successful directory fsync. Without the feature the hooks compile away.
//!
//! Index files are memory-mapped by `seglog-index-core`: their writes, `msync` and
//! `ftruncate` are done there; only the flush passes a fault check here
//! ([`before_index_flush`]).

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::time::UNIX_EPOCH;

#[cfg(any(test, feature = "fault-injection"))]
use crate::fault;

/// An open `.log` file. The handle is shared (`Arc<File>`) with every [`crate::FileSlice`]
/// cut from it, so a slice keeps reading after the file is renamed or unlinked.
#[derive(Debug)]
pub(crate) struct LogFile {
    file: Arc<File>,
    #[cfg(any(test, feature = "fault-injection"))]
    tracked: Option<fault::Tracked>,
}

impl LogFile {
    /// Creates a new, empty file; fails if `path` exists.
    pub(crate) fn create_new(path: &Path) -> io::Result<LogFile> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)?;
        Ok(LogFile::wrap(file, path, true))
    }

    /// Opens an existing file, for reading and writing or only for reading.
    pub(crate) fn open(path: &Path, writable: bool) -> io::Result<LogFile> {
        let file = OpenOptions::new().read(true).write(writable).open(path)?;
        Ok(LogFile::wrap(file, path, false))
    }

    #[cfg_attr(not(any(test, feature = "fault-injection")), allow(unused_variables))]
    fn wrap(file: File, path: &Path, created: bool) -> LogFile {
        #[cfg(any(test, feature = "fault-injection"))]
        let tracked = fault::attach(path, &file, created);
        LogFile {
            file: Arc::new(file),
            #[cfg(any(test, feature = "fault-injection"))]
            tracked,
        }
    }

    /// The shared handle, for slices.
    pub(crate) fn handle(&self) -> &Arc<File> {
        &self.file
    }

    /// Writes all of `buf` at `position` with positioned writes (one `pwrite` unless the
    /// kernel returns a short write), through the fault injector.
    #[cfg(any(test, feature = "fault-injection"))]
    fn write_all_at(&self, buf: &[u8], position: u64) -> io::Result<()> {
        if let Some(tracked) = &self.tracked
            && let Some(fault) = tracked.before_write()
        {
            // A failing ENOSPC write may have written a prefix, as a real one can.
            let partial = fault.partial_len(buf.len());
            if partial > 0 {
                self.file.write_all_at(&buf[..partial], position)?;
            }
            return Err(fault.to_io_error());
        }
        self.file.write_all_at(buf, position)
    }

    /// Writes the concatenation of `parts` at `position` with positioned vectored writes (one
    /// `pwritev` per 1,024 parts unless the kernel returns a short write). With the fault
    /// injector the parts are joined and written as one [`LogFile::write_all_at`], so a fault
    /// sees exactly the bytes a single write would carry.
    pub(crate) fn write_all_vectored_at(&self, parts: &[&[u8]], position: u64) -> io::Result<()> {
        #[cfg(any(test, feature = "fault-injection"))]
        if self.tracked.is_some() {
            return self.write_all_at(&parts.concat(), position);
        }
        write_all_vectored_at(&self.file, parts, position)
    }

    /// `fdatasync`. With the fault injector, a successful sync advances the durable image.
    pub(crate) fn sync_data(&self) -> io::Result<()> {
        #[cfg(any(test, feature = "fault-injection"))]
        if let Some(tracked) = &self.tracked {
            if let Some(fault) = tracked.before_sync() {
                return Err(fault.to_io_error());
            }
            self.file.sync_data()?;
            return tracked.after_sync(&self.file);
        }
        self.file.sync_data()
    }

    /// Sets the file length (truncate or extend with zeros). Not durable until a sync.
    pub(crate) fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }

    /// Allocates `len` bytes of disk for the file with `fallocate` (mode 0: the file length
    /// becomes `len`, the new tail reads as zeros), falling back to `set_len` where the file
    /// system does not support it.
    pub(crate) fn preallocate(&self, len: u64) -> io::Result<()> {
        match rustix::fs::fallocate(&*self.file, rustix::fs::FallocateFlags::empty(), 0, len) {
            Ok(()) => Ok(()),
            Err(e) if e == rustix::io::Errno::OPNOTSUPP || e == rustix::io::Errno::NOSYS => {
                self.file.set_len(len)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The current file length.
    pub(crate) fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    /// The modification time in milliseconds since the epoch.
    pub(crate) fn modified_ms(&self) -> io::Result<i64> {
        modified_ms(&self.file)
    }

    /// Reads exactly `buf.len()` bytes at `position`.
    pub(crate) fn read_exact_at(&self, buf: &mut [u8], position: u64) -> io::Result<()> {
        read_exact_at(&self.file, buf, position)
    }
}

/// The most parts one `pwritev` takes (Linux's `IOV_MAX`).
const MAX_PARTS: usize = 1024;

/// Writes the concatenation of `parts` at `position`, retrying short and interrupted writes.
fn write_all_vectored_at(file: &File, parts: &[&[u8]], mut position: u64) -> io::Result<()> {
    let mut slices: Vec<io::IoSlice<'_>> = parts
        .iter()
        .filter(|part| !part.is_empty())
        .map(|part| io::IoSlice::new(part))
        .collect();
    let mut pending = &mut slices[..];
    while !pending.is_empty() {
        let batch = pending.len().min(MAX_PARTS);
        match rustix::io::pwritev(file, &pending[..batch], position) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "failed to write the whole append",
                ));
            }
            Ok(written) => {
                position += written as u64;
                io::IoSlice::advance_slices(&mut pending, written);
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Reads exactly `buf.len()` bytes at `position` from `file`.
pub(crate) fn read_exact_at(file: &File, buf: &mut [u8], position: u64) -> io::Result<()> {
    file.read_exact_at(buf, position)
}

/// Reads up to `buf.len()` bytes at `position`, stopping early only at end of file.
pub(crate) fn read_at_most(file: &File, buf: &mut [u8], position: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], position + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// The modification time of `file` in milliseconds since the epoch.
pub(crate) fn modified_ms(file: &File) -> io::Result<i64> {
    let modified = file.metadata()?.modified()?;
    let ms = match modified.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
    };
    Ok(ms)
}

/// Renames `from` to `to` (an atomic move, no directory fsync).
pub(crate) fn rename(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(any(test, feature = "fault-injection"))]
    if let Some(fault) = fault::before_rename(from) {
        return Err(fault.to_io_error());
    }
    fs::rename(from, to)?;
    #[cfg(any(test, feature = "fault-injection"))]
    fault::renamed(from, to);
    Ok(())
}

/// Unlinks `path`.
pub(crate) fn remove(path: &Path) -> io::Result<()> {
    #[cfg(any(test, feature = "fault-injection"))]
    if let Some(fault) = fault::before_remove(path) {
        return Err(fault.to_io_error());
    }
    fs::remove_file(path)?;
    #[cfg(any(test, feature = "fault-injection"))]
    fault::removed(path);
    Ok(())
}

/// fsyncs the directory `dir`, making created, renamed and removed names durable. With the
/// fault injector, it may fail as armed, and a success records `dir`'s durable listing.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    let sync = || File::open(dir)?.sync_all();
    #[cfg(any(test, feature = "fault-injection"))]
    return fault::sync_dir(dir, sync);
    #[cfg(not(any(test, feature = "fault-injection")))]
    sync()
}

/// The fault check before flushing (`msync`) the index file `path`: an injected error, or
/// `Ok`. Only with the fault injector (callers compile it away without).
#[cfg(any(test, feature = "fault-injection"))]
pub(crate) fn before_index_flush(path: &Path) -> io::Result<()> {
    if let Some(fault) = fault::before_index_flush(path) {
        return Err(fault.to_io_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectored_write_covers_more_parts_than_one_pwritev_takes_and_skips_empty_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.log");
        let file = LogFile::create_new(&path).unwrap();
        let owned: Vec<Vec<u8>> = (0..2 * MAX_PARTS + 7)
            .map(|i| vec![(i % 251) as u8; i % 5])
            .collect();
        let parts: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        file.write_all_vectored_at(&[b"head"], 0).unwrap();
        write_all_vectored_at(&file.file, &parts, 4).unwrap();
        let mut expected = b"head".to_vec();
        expected.extend(parts.concat());
        assert_eq!(fs::read(&path).unwrap(), expected);
        // Rewriting inside the file lands at the position given, not at the end.
        write_all_vectored_at(&file.file, &[b"HE", b"", b"AD"], 0).unwrap();
        expected[..4].copy_from_slice(b"HEAD");
        assert_eq!(fs::read(&path).unwrap(), expected);
    }
}
