//! The one durable-file protocol: write a temp file, fsync it, rename it over, fsync the directory.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use seglog_segment::Io;

use crate::Result;
use crate::error::IoContext;

/// Atomically replaces `path` with `bytes`: write `<path>.tmp`, fsync it, rename it over `path`,
/// then fsync the parent directory (through `io`) so the rename survives a power loss
/// (KAFKA-3968, KAFKA-16541).
///
/// # Errors
/// [`crate::Error::Io`] naming the step and the file that failed.
pub(crate) fn write_atomic(io: &Io, path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = tmp_path(path);
    {
        // The checked open: a FIFO left at the temp name cannot block the write.
        let mut file = seglog_segment::create_regular(&tmp).ctx("create", &tmp)?;
        file.set_len(0).ctx("truncate", &tmp)?;
        file.write_all(bytes).ctx("write", &tmp)?;
        file.sync_all().ctx("fsync", &tmp)?;
    }
    fs::rename(&tmp, path).ctx("rename", path)?;
    sync_parent(io, path)
}

/// `<path>.tmp`.
fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".tmp");
    PathBuf::from(name)
}

/// fsyncs the directory holding `path`.
///
/// # Errors
/// [`crate::Error::Io`] if the directory cannot be opened or synced.
pub(crate) fn sync_parent(io: &Io, path: &Path) -> Result<()> {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => sync_dir(io, parent),
        _ => sync_dir(io, Path::new(".")),
    }
}

/// fsyncs a directory so that creates, renames and deletes inside it are durable. Every
/// directory fsync of the log (partition directories, checkpoints, the clean-shutdown marker,
/// a `log.dirs` root) goes through the segment crate's I/O seam (`io`: the handle of the log's
/// `OpenOptions::io`), so a test backend can fail it and record the durable listing.
///
/// # Errors
/// [`crate::Error::Segment`] wrapping the directory fsync's I/O error.
pub(crate) fn sync_dir(io: &Io, dir: &Path) -> Result<()> {
    io.sync_dir(dir).map_err(crate::Error::Segment)
}

/// Removes a file, treating "already gone" as success.
///
/// # Errors
/// [`crate::Error::Io`] for any other failure.
pub(crate) fn remove_if_exists(path: &Path) -> Result<bool> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(crate::Error::io("delete", path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_atomically_and_leaves_no_tmp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cp");
        write_atomic(&Io::direct(), &path, b"one").unwrap();
        write_atomic(&Io::direct(), &path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert!(!tmp_path(&path).exists());
        assert!(remove_if_exists(&path).unwrap());
        assert!(!remove_if_exists(&path).unwrap());
    }
}
