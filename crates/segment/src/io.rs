//! `.log` file I/O: [`LogFile`] (every write and `fdatasync` through the [`Io`] seam of
//! module `seam`), positioned reads, and the file's length and modification time.
//!
//! Renames, unlinks, directory fsyncs and the check before index flushes are methods of
//! [`Io`] itself; reads never pass through the seam.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use crate::seam::{FileId, Io};

/// An open `.log` file. The handle is shared (`Arc<File>`) with every [`crate::FileSlice`]
/// cut from it, so a slice keeps reading after the file is renamed or unlinked.
#[derive(Debug)]
pub(crate) struct LogFile {
    file: Arc<File>,
    /// The seam its writes and syncs go through, and its token there.
    io: Io,
    id: FileId,
}

impl LogFile {
    /// Creates a new, empty file; fails if `path` exists (also as a symlink, dangling or not).
    pub(crate) fn create_new(io: &Io, path: &Path) -> io::Result<LogFile> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .custom_flags(NO_FOLLOW)
            .open(path)?;
        Ok(LogFile::wrap(io, file, path, true))
    }

    /// Opens an existing file, for reading and writing or only for reading. A writable open
    /// never follows a symlink (`O_NOFOLLOW`: the open fails with `ELOOP`, see
    /// [`is_symlink_refusal`]): a write path must not cut or extend another log's file
    /// through a link. A read-only open follows links (a reader reads what they point at).
    pub(crate) fn open(io: &Io, path: &Path, writable: bool) -> io::Result<LogFile> {
        let mut options = OpenOptions::new();
        options.read(true).write(writable);
        if writable {
            options.custom_flags(NO_FOLLOW);
        }
        let file = options.open(path)?;
        Ok(LogFile::wrap(io, file, path, false))
    }

    fn wrap(io: &Io, file: File, path: &Path, created: bool) -> LogFile {
        let id = io.opened(path, &file, created);
        LogFile {
            file: Arc::new(file),
            io: io.clone(),
            id,
        }
    }

    /// The shared handle, for slices.
    pub(crate) fn handle(&self) -> &Arc<File> {
        &self.file
    }

    /// Writes the concatenation of `parts` at `position` through the seam (the production
    /// backend: one `pwritev` per 1,024 parts unless the kernel returns a short write).
    pub(crate) fn write_all_vectored_at(&self, parts: &[&[u8]], position: u64) -> io::Result<()> {
        self.io
            .write_all_vectored_at(self.id, &self.file, parts, position)
    }

    /// `fdatasync`, through the seam.
    pub(crate) fn sync_data(&self) -> io::Result<()> {
        self.io.sync_data(self.id, &self.file)
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

/// `O_NOFOLLOW` for [`OpenOptionsExt::custom_flags`].
#[allow(clippy::cast_possible_wrap)]
const NO_FOLLOW: i32 = rustix::fs::OFlags::NOFOLLOW.bits() as i32;

/// Whether `e` is what an `O_NOFOLLOW` open of a symlink returns (`ELOOP`).
pub(crate) fn is_symlink_refusal(e: &io::Error) -> bool {
    e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seam::{Direct, IoBackend, MAX_PARTS};
    use std::fs;

    #[test]
    fn vectored_write_covers_more_parts_than_one_pwritev_takes_and_skips_empty_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.log");
        let file = LogFile::create_new(&Io::direct(), &path).unwrap();
        let owned: Vec<Vec<u8>> = (0..2 * MAX_PARTS + 7)
            .map(|i| vec![(i % 251) as u8; i % 5])
            .collect();
        let parts: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        file.write_all_vectored_at(&[b"head"], 0).unwrap();
        Direct
            .write_all_vectored_at(FileId::UNTRACKED, &file.file, &parts, 4)
            .unwrap();
        let mut expected = b"head".to_vec();
        expected.extend(parts.concat());
        assert_eq!(fs::read(&path).unwrap(), expected);
        // Rewriting inside the file lands at the position given, not at the end.
        Direct
            .write_all_vectored_at(FileId::UNTRACKED, &file.file, &[b"HE", b"", b"AD"], 0)
            .unwrap();
        expected[..4].copy_from_slice(b"HEAD");
        assert_eq!(fs::read(&path).unwrap(), expected);
    }
}
