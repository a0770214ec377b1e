//! Scratch directories and small file-system helpers.

use std::fs;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

use crate::{Result, io_error};

/// A directory for one run's logs, deleted when dropped. It lives under the output directory
/// (`target/bench/tmp`), on the same disk as the repository, never in a `/tmp` that may be tmpfs.
pub struct Scratch {
    root: TempDir,
}

impl Scratch {
    /// A fresh directory under `parent`.
    ///
    /// # Errors
    ///
    /// If `parent` cannot be created or written.
    pub fn new(parent: &Path) -> Result<Self> {
        fs::create_dir_all(parent).map_err(|e| io_error("create directory", parent, e))?;
        let root = tempfile::Builder::new()
            .prefix("run-")
            .tempdir_in(parent)
            .map_err(|e| io_error("create temporary directory in", parent, e))?;
        Ok(Self { root })
    }

    /// The scratch root.
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// `root/name`, created empty (an existing one is removed first).
    ///
    /// # Errors
    ///
    /// On any I/O error.
    pub fn dir(&self, name: &str) -> Result<PathBuf> {
        let path = self.root.path().join(name);
        if path.exists() {
            fs::remove_dir_all(&path).map_err(|e| io_error("remove", &path, e))?;
        }
        fs::create_dir_all(&path).map_err(|e| io_error("create directory", &path, e))?;
        Ok(path)
    }
}

/// Writes `bytes` zero bytes to a scratch file in `dir` and deletes it: the page cache takes
/// that much memory and gives it straight back.
///
/// Why: on a VM whose balloon reports free memory to the host (Firecracker here), memory that
/// has been free for a couple of seconds is handed back, and the next process to touch it pays
/// a host fault per page, as CPU time. Whichever contender happened to write first after a
/// pause paid it, by up to 5x. Done untimed before every write trial, for every contender,
/// it leaves each of them the same recently used memory.
///
/// # Errors
///
/// On any I/O error.
pub fn recycle_page_cache(dir: &Path, bytes: u64) -> Result<()> {
    use std::io::Write;
    let path = dir.join("recycle.tmp");
    let mut file = fs::File::create(&path).map_err(|e| io_error("create", &path, e))?;
    let chunk = vec![0u8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        let len = usize::try_from(left.min(chunk.len() as u64)).unwrap_or(chunk.len());
        file.write_all(&chunk[..len])
            .map_err(|e| io_error("write", &path, e))?;
        left -= len as u64;
    }
    drop(file);
    fs::remove_file(&path).map_err(|e| io_error("remove", &path, e))
}

/// Copies the files of the flat directory `from` into a fresh `to` (removed first if present).
///
/// # Errors
///
/// On any I/O error.
pub fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    if to.exists() {
        fs::remove_dir_all(to).map_err(|e| io_error("remove", to, e))?;
    }
    fs::create_dir_all(to).map_err(|e| io_error("create directory", to, e))?;
    for entry in fs::read_dir(from).map_err(|e| io_error("list", from, e))? {
        let entry = entry.map_err(|e| io_error("list", from, e))?;
        let source = entry.path();
        if source.is_file() {
            let target = to.join(entry.file_name());
            fs::copy(&source, &target).map_err(|e| io_error("copy", &source, e))?;
        }
    }
    Ok(())
}

/// The files of one kind in a directory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileSizes {
    /// How many.
    pub count: u64,
    /// Their total length.
    pub total: u64,
    /// The longest one's length.
    pub largest: u64,
}

/// The files in `dir` whose name ends with `suffix`.
///
/// # Errors
///
/// If `dir` cannot be listed.
pub fn file_sizes(dir: &Path, suffix: &str) -> Result<FileSizes> {
    let mut sizes = FileSizes::default();
    for entry in fs::read_dir(dir).map_err(|e| io_error("list", dir, e))? {
        let entry = entry.map_err(|e| io_error("list", dir, e))?;
        if entry.file_name().to_string_lossy().ends_with(suffix) {
            let length = entry
                .metadata()
                .map_err(|e| io_error("stat", &entry.path(), e))?
                .len();
            sizes.count += 1;
            sizes.total += length;
            sizes.largest = sizes.largest.max(length);
        }
    }
    Ok(sizes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_and_measures_a_flat_directory() {
        let scratch = Scratch::new(&std::env::temp_dir().join("seglog-benches-test")).unwrap();
        let from = scratch.dir("from").unwrap();
        fs::write(from.join("a.log"), b"12345").unwrap();
        fs::write(from.join("b.log"), b"12").unwrap();
        fs::write(from.join("b.index"), b"1").unwrap();
        let to = scratch.root().join("to");
        copy_dir(&from, &to).unwrap();
        let logs = file_sizes(&to, ".log").unwrap();
        assert_eq!(
            logs,
            FileSizes {
                count: 2,
                total: 7,
                largest: 5
            }
        );
        assert_eq!(file_sizes(&to, ".index").unwrap().count, 1);
    }
}
