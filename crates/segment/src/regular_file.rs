//! The one checked open for every file seglog reads beside a segment's `.log`: checkpoints,
//! producer snapshots, `.txnindex`, `leader-epoch-checkpoint`, `partition.metadata` and the
//! CLI's dump inputs (issue #26).
//!
//! A FIFO, a device, a directory or a socket at one of those names must never be read: a FIFO
//! blocks the open itself and every read after it, a device never ends. So the file is opened
//! with `O_NONBLOCK` (opening a FIFO for reading returns at once instead of waiting for a
//! writer; the flag means nothing for a regular file's reads), then `fstat`ed through the
//! handle (no window between a check and the open), and anything but a regular file is refused
//! with a [`NotRegularFile`] error. Symlinks are followed (an administrator may link a file);
//! a dangling one is `NotFound`, as a missing file. The caller bounds the size by the
//! [`Metadata`] returned with the handle, before it reads a byte.

use std::fmt;
use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// What a refused file is instead of a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NonRegularKind {
    /// A directory.
    Directory,
    /// A named pipe.
    Fifo,
    /// A character or block device.
    Device,
    /// A Unix socket.
    Socket,
    /// Anything else that is not a regular file.
    Other,
}

impl NonRegularKind {
    /// What `file_type` is, or `None` for a regular file.
    pub fn of(file_type: std::fs::FileType) -> Option<Self> {
        Some(if file_type.is_file() {
            return None;
        } else if file_type.is_dir() {
            NonRegularKind::Directory
        } else if file_type.is_fifo() {
            NonRegularKind::Fifo
        } else if file_type.is_char_device() || file_type.is_block_device() {
            NonRegularKind::Device
        } else if file_type.is_socket() {
            NonRegularKind::Socket
        } else {
            NonRegularKind::Other
        })
    }
}

impl fmt::Display for NonRegularKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NonRegularKind::Directory => "a directory, not a regular file",
            NonRegularKind::Fifo => "a FIFO, not a regular file",
            NonRegularKind::Device => "a device, not a regular file",
            NonRegularKind::Socket => "a socket, not a regular file",
            NonRegularKind::Other => "not a regular file",
        })
    }
}

/// The error inside the [`io::Error`] (kind [`io::ErrorKind::InvalidInput`]) that
/// [`open_regular`] returns for a file that is not a regular file. Callers attach the path and
/// the operation as for any I/O error; [`not_regular`] finds it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{kind}")]
pub struct NotRegularFile {
    /// What the file is.
    pub kind: NonRegularKind,
}

/// The [`NotRegularFile`] inside `error`, if [`open_regular`] refused the file.
pub fn not_regular(error: &io::Error) -> Option<NonRegularKind> {
    error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<NotRegularFile>())
        .map(|e| e.kind)
}

/// Opens `path` for reading (and writing when `writable`), refusing anything that is not a
/// regular file without blocking; returns the handle and its metadata (from `fstat`).
///
/// # Errors
/// The open's own error (`NotFound` for a missing file or a dangling symlink); an
/// [`io::ErrorKind::InvalidInput`] error holding a [`NotRegularFile`] for a FIFO, a directory,
/// a device or a socket.
pub fn open_regular(path: &Path, writable: bool) -> io::Result<(File, Metadata)> {
    let file = OpenOptions::new()
        .read(true)
        .write(writable)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .map_err(map_open_error)?;
    let meta = file.metadata()?;
    if let Some(kind) = NonRegularKind::of(meta.file_type()) {
        return Err(refused(kind));
    }
    Ok((file, meta))
}

/// [`open_regular`] for reading, `None` when the file does not exist.
///
/// # Errors
/// As [`open_regular`], except `NotFound`.
pub fn open_regular_if_exists(path: &Path) -> io::Result<Option<(File, Metadata)>> {
    match open_regular(path, false) {
        Ok(opened) => Ok(Some(opened)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Opens `path` for reading and writing, creating it if missing (never truncating), with the
/// same refusal of non-regular files as [`open_regular`].
///
/// # Errors
/// As [`open_regular`].
pub fn create_regular(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .map_err(map_open_error)?;
    let meta = file.metadata()?;
    if let Some(kind) = NonRegularKind::of(meta.file_type()) {
        return Err(refused(kind));
    }
    Ok(file)
}

fn map_open_error(e: io::Error) -> io::Error {
    match e.raw_os_error() {
        // Opening a directory for writing fails before the type check could.
        Some(code) if code == rustix::io::Errno::ISDIR.raw_os_error() => {
            refused(NonRegularKind::Directory)
        }
        // O_NONBLOCK with write access on a FIFO that has no reader.
        Some(code) if code == rustix::io::Errno::NXIO.raw_os_error() => {
            refused(NonRegularKind::Fifo)
        }
        _ => e,
    }
}

fn refused(kind: NonRegularKind) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, NotRegularFile { kind })
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    fn mkfifo(path: &Path) {
        let ok = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap()
            .success();
        assert!(ok, "mkfifo");
    }

    #[test]
    fn regular_files_open_and_report_their_length() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"12345").unwrap();
        let (_, meta) = open_regular(&path, false).unwrap();
        assert_eq!(meta.len(), 5);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert_eq!(open_regular(&link, true).unwrap().1.len(), 5);
        assert!(
            open_regular_if_exists(&dir.path().join("missing"))
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn fifos_directories_devices_and_dangling_links_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        for writable in [false, true] {
            let e = open_regular(&fifo, writable).unwrap_err();
            assert_eq!(not_regular(&e), Some(NonRegularKind::Fifo), "{e}");
            assert_eq!(e.to_string(), "a FIFO, not a regular file");
            let e = open_regular(dir.path(), writable).unwrap_err();
            assert_eq!(not_regular(&e), Some(NonRegularKind::Directory), "{e}");
            let e = open_regular(Path::new("/dev/zero"), writable).unwrap_err();
            assert_eq!(not_regular(&e), Some(NonRegularKind::Device), "{e}");
        }
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        assert!(open_regular_if_exists(&dangling).unwrap().is_none());
        for path in [&fifo, &dir.path().to_path_buf()] {
            let e = create_regular(path).unwrap_err();
            assert!(not_regular(&e).is_some(), "{e}");
        }
        let e = std::io::Error::other("plain");
        assert_eq!(not_regular(&e), None);
    }
}
