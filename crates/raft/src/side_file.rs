//! The small state files beside the log (docs/format.md, "Raft side files"): `vote`,
//! `committed`, `purged` (JSON) and `truncation` (one Kafka batch), each replaced atomically
//! as KRaft replaces `quorum-state`: write `NAME.tmp`, fsync it, rename it over `NAME`, fsync
//! the directory. A crash leaves either the old file or the new one, never a mix; a leftover
//! `NAME.tmp` is ignored and overwritten by the next write.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::Error;

/// The vote file.
pub const VOTE_FILE: &str = "vote";
/// The committed log id file.
pub const COMMITTED_FILE: &str = "committed";
/// The last purged log id file.
pub const PURGED_FILE: &str = "purged";
/// The pending truncation inside a batch: the batch of kept entries to append again.
pub const TRUNCATION_FILE: &str = "truncation";

/// Replaces `dir/name` with `bytes`: temp file, fsync, rename, directory fsync.
///
/// # Errors
/// [`Error::Io`] naming the file and the step that failed.
pub(crate) fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), Error> {
    let path = dir.join(name);
    let tmp = dir.join(format!("{name}.tmp"));
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .map_err(|e| Error::io("create", &tmp, e))?;
    file.write_all(bytes)
        .map_err(|e| Error::io("write", &tmp, e))?;
    file.sync_all().map_err(|e| Error::io("fsync", &tmp, e))?;
    drop(file);
    fs::rename(&tmp, &path).map_err(|e| Error::io("rename", &path, e))?;
    sync_dir(dir)
}

/// Removes `dir/name` (when present) and fsyncs the directory.
///
/// # Errors
/// [`Error::Io`].
pub(crate) fn remove(dir: &Path, name: &str) -> Result<(), Error> {
    let path = dir.join(name);
    match fs::remove_file(&path) {
        Ok(()) => sync_dir(dir),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io("remove", &path, e)),
    }
}

/// fsyncs a directory (its entries: creates, renames, removes).
///
/// # Errors
/// [`Error::Io`].
pub(crate) fn sync_dir(dir: &Path) -> Result<(), Error> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io("fsync directory", dir, e))
}

/// The bytes of `dir/name`, `None` when it does not exist.
///
/// # Errors
/// [`Error::Io`].
pub(crate) fn read(dir: &Path, name: &str) -> Result<Option<Vec<u8>>, Error> {
    let path = dir.join(name);
    match fs::read(&path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io("read", &path, e)),
    }
}

/// Writes `value` as JSON to `dir/name`, atomically.
///
/// # Errors
/// As [`write_atomic`].
pub(crate) fn write_json<T: Serialize>(dir: &Path, name: &str, value: &T) -> Result<(), Error> {
    let bytes = serde_json::to_vec(value).map_err(|source| Error::SideFile {
        path: dir.join(name),
        source,
    })?;
    write_atomic(dir, name, &bytes)
}

/// Reads the JSON of `dir/name`; `None` when the file does not exist.
///
/// # Errors
/// [`Error::Io`]; [`Error::SideFile`] when it does not parse.
pub(crate) fn read_json<T: DeserializeOwned>(dir: &Path, name: &str) -> Result<Option<T>, Error> {
    let Some(bytes) = read(dir, name)? else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|source| Error::SideFile {
            path: PathBuf::from(dir).join(name),
            source,
        })
}
