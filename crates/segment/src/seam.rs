//! The I/O seam: the operations of this crate (and of the log above it) that can fail or
//! change what survives a power loss, behind one replaceable backend.
//!
//! Every write and `fdatasync` of a `.log` file, every `.log` / `.txnindex` rename and every
//! unlink of a segment file, every directory fsync ([`Io::sync_dir`]) and the check before each
//! index flush (`msync`) go through the [`Io`] handle carried by [`crate::SegmentConfig::io`]
//! (and so by every [`crate::Segment`] and [`crate::ActiveSegment`] opened or created with that
//! config). Reads do not: a backend cannot change what a read returns.
//!
//! The default handle, [`Io::direct`], performs the system calls and nothing else: no registry,
//! no lookup, no counter. A test backend (the `seglog-faults` crate of this workspace, used by
//! the reliability suites) implements [`IoBackend`] to fail the Nth operation and to record
//! what is durable; it is injected per segment or per log through the config, never globally,
//! so production builds and benchmarks contain no fault hook.
//!
//! Index files are memory-mapped by `seglog-index-core`: their stores, `msync` and `ftruncate`
//! are done there; only [`IoBackend::before_index_flush`] passes through here.

use std::fmt;
use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, IoOp};

/// Which `.log` file an operation is about: the token [`IoBackend::opened`] returned for it.
/// [`Direct`] returns [`FileId::UNTRACKED`] for every file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileId(pub u64);

impl FileId {
    /// A file the backend does not follow.
    pub const UNTRACKED: FileId = FileId(u64::MAX);
}

/// A backend of the I/O seam. Each method performs the operation (or fails it) and reports
/// the outcome; [`Direct`] is the production backend, and a backend that only observes calls
/// it for the real work.
pub trait IoBackend: Send + Sync + fmt::Debug {
    /// A `.log` file was opened (`created`: it was just created, empty). Returns the token
    /// later operations on that file carry.
    fn opened(&self, path: &Path, file: &File, created: bool) -> FileId;

    /// Writes the concatenation of `parts` at `position` of the file `id`.
    ///
    /// # Errors
    /// The write's I/O error (a failed write may have written a prefix).
    fn write_all_vectored_at(
        &self,
        id: FileId,
        file: &File,
        parts: &[&[u8]],
        position: u64,
    ) -> io::Result<()>;

    /// `fdatasync` of the file `id`.
    ///
    /// # Errors
    /// The fsync's I/O error.
    fn sync_data(&self, id: FileId, file: &File) -> io::Result<()>;

    /// Renames `from` to `to` (an atomic move; no directory fsync).
    ///
    /// # Errors
    /// The rename's I/O error.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// Unlinks `path`.
    ///
    /// # Errors
    /// The unlink's I/O error (`NotFound` for a missing file).
    fn remove(&self, path: &Path) -> io::Result<()>;

    /// fsyncs the directory `dir`, making created, renamed and removed names durable.
    ///
    /// # Errors
    /// The open's or the fsync's I/O error.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;

    /// Called before the index file `path` is flushed (`msync`): an error here fails the
    /// flush before it starts.
    ///
    /// # Errors
    /// The error to fail the flush with.
    fn before_index_flush(&self, path: &Path) -> io::Result<()>;
}

/// The production backend: the system calls, nothing else.
#[derive(Clone, Copy, Debug, Default)]
pub struct Direct;

/// The most parts one `pwritev` takes (Linux's `IOV_MAX`).
pub(crate) const MAX_PARTS: usize = 1024;

impl IoBackend for Direct {
    fn opened(&self, _path: &Path, _file: &File, _created: bool) -> FileId {
        FileId::UNTRACKED
    }

    /// One `pwritev` per 1,024 parts unless the kernel returns a short write; short and
    /// interrupted writes are retried.
    fn write_all_vectored_at(
        &self,
        _id: FileId,
        file: &File,
        parts: &[&[u8]],
        mut position: u64,
    ) -> io::Result<()> {
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

    fn sync_data(&self, _id: FileId, file: &File) -> io::Result<()> {
        file.sync_data()
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn before_index_flush(&self, _path: &Path) -> io::Result<()> {
        Ok(())
    }
}

/// A handle on the I/O seam's backend, carried by [`crate::SegmentConfig::io`]. Cloning shares
/// the backend. [`Io::direct`] (the default) is the production backend; two handles are equal
/// when both are direct or both share one backend.
#[derive(Clone, Default)]
pub struct Io {
    /// `None`: [`Direct`], without an allocation or an indirect call.
    backend: Option<Arc<dyn IoBackend>>,
}

impl Io {
    /// The production backend ([`Direct`]).
    pub fn direct() -> Io {
        Io { backend: None }
    }

    /// A handle on `backend` (a test backend; production code uses [`Io::direct`]).
    pub fn new(backend: Arc<dyn IoBackend>) -> Io {
        Io {
            backend: Some(backend),
        }
    }

    /// Whether this is the production backend.
    pub fn is_direct(&self) -> bool {
        self.backend.is_none()
    }

    /// fsyncs the directory `dir` through the backend (KAFKA-3968): what the log calls after
    /// every create, rename or unlink that changes which segments (or checkpoints) exist.
    ///
    /// # Errors
    /// [`Error::Io`] with [`IoOp::SyncDir`].
    pub fn sync_dir(&self, dir: &Path) -> crate::Result<()> {
        match &self.backend {
            None => Direct.sync_dir(dir),
            Some(backend) => backend.sync_dir(dir),
        }
        .map_err(Error::io(IoOp::SyncDir, dir))
    }

    pub(crate) fn opened(&self, path: &Path, file: &File, created: bool) -> FileId {
        match &self.backend {
            None => FileId::UNTRACKED,
            Some(backend) => backend.opened(path, file, created),
        }
    }

    pub(crate) fn write_all_vectored_at(
        &self,
        id: FileId,
        file: &File,
        parts: &[&[u8]],
        position: u64,
    ) -> io::Result<()> {
        match &self.backend {
            None => Direct.write_all_vectored_at(id, file, parts, position),
            Some(backend) => backend.write_all_vectored_at(id, file, parts, position),
        }
    }

    pub(crate) fn sync_data(&self, id: FileId, file: &File) -> io::Result<()> {
        match &self.backend {
            None => file.sync_data(),
            Some(backend) => backend.sync_data(id, file),
        }
    }

    pub(crate) fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        match &self.backend {
            None => std::fs::rename(from, to),
            Some(backend) => backend.rename(from, to),
        }
    }

    pub(crate) fn remove(&self, path: &Path) -> io::Result<()> {
        match &self.backend {
            None => std::fs::remove_file(path),
            Some(backend) => backend.remove(path),
        }
    }

    pub(crate) fn before_index_flush(&self, path: &Path) -> io::Result<()> {
        match &self.backend {
            None => Ok(()),
            Some(backend) => backend.before_index_flush(path),
        }
    }
}

impl PartialEq for Io {
    fn eq(&self, other: &Io) -> bool {
        match (&self.backend, &other.backend) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for Io {}

impl fmt::Debug for Io {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.backend {
            None => f.write_str("Io::Direct"),
            Some(backend) => f.debug_tuple("Io").field(backend).finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_equal_when_they_share_a_backend() {
        assert_eq!(Io::direct(), Io::default());
        assert!(Io::default().is_direct());
        let backend: Arc<dyn IoBackend> = Arc::new(Direct);
        let a = Io::new(Arc::clone(&backend));
        assert_eq!(a, a.clone());
        assert_ne!(a, Io::new(Arc::new(Direct)));
        assert_ne!(a, Io::direct());
        assert!(!a.is_direct());
        assert_eq!(format!("{:?}", Io::direct()), "Io::Direct");
    }
}
