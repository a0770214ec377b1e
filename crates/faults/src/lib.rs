//! A test backend of `seglog-segment`'s I/O seam ([`seglog_segment::seam`]): fault injection
//! and durable state, for the reliability suites of the layers above. It is a separate crate
//! that only tests depend on, so no production build (`seglog-cli`, the benchmarks) contains
//! it; it reaches the code under test only through the [`Io`] handle a test passes in
//! `SegmentConfig::io` (or the log's `LogOpenOptions::io`).
//!
//! A [`FaultInjector`] is made for a directory; every `.log` file opened or created below that
//! directory through its handle ([`FaultInjector::io`]) is tracked by it, and so is every
//! directory fsync ([`Io::sync_dir`]) and every index flush (`msync`, by
//! `Segment::flush`) of a path below it; operations on paths outside it go straight to the
//! system. It can fail the Nth data write, the Nth `.log` fsync, the Nth directory
//! fsync, the Nth index flush, the Nth `.log`/`.txnindex` rename or the Nth unlink (each
//! counted separately, over everything tracked, from the moment the failure is armed) with
//! `EIO` or `ENOSPC`. It records two kinds of durable state:
//!
//! - for each tracked `.log`, a **durable image**: the file's bytes as of its last successful
//!   fsync (or as found when it was first opened through the handle; a later open of the same
//!   path keeps the image); an unlinked file's image is kept
//!   ([`FaultInjector::unlinked_images`]) until a directory fsync makes the unlink durable;
//! - for each directory synced through [`Io::sync_dir`], its **durable listing**: the
//!   names `read_dir` listed right before its last successful directory fsync
//!   ([`FaultInjector::durable_names`]). A create, rename or unlink is durable once a
//!   directory fsync that started after it succeeded; the listing is taken before the fsync,
//!   so every change it shows is covered by that fsync.
//!
//! Writing those images under the names of the durable listing produces the state a power
//! loss would have left behind, under the strict model "nothing that was not fsynced
//! survives". Index contents are not imaged (their pages are written back by the kernel at
//! any time); index flushes can only be failed.
//!
//! Injectors share nothing (there is no registry), so tests run in parallel.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use seglog_faults::{FaultInjector, FaultKind};
//! let dir = tempfile::tempdir()?;
//! let faults = FaultInjector::new(dir.path());
//! faults.fail_nth_write(1, FaultKind::Enospc); // the next write fails
//! assert_eq!(faults.durable_names(dir.path()), None); // never synced
//! std::fs::write(dir.path().join("a"), b"")?;
//! faults.io().sync_dir(dir.path())?;
//! assert!(faults.durable_names(dir.path()).is_some_and(|names| names.contains("a")));
//! assert_eq!(faults.dir_syncs(), 1);
//! // The production handle does not see it.
//! seglog_segment::Io::direct().sync_dir(dir.path())?;
//! assert_eq!(faults.dir_syncs(), 1);
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use seglog_segment::Io;
use seglog_segment::seam::{Direct, FileId, IoBackend};

/// The error an injected fault raises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// `EIO`: nothing of the failing write is written.
    Eio,
    /// `ENOSPC`: a failing write first writes the first half of its buffer, as a real
    /// out-of-space write can. A failing fsync, directory fsync or index flush does nothing.
    Enospc,
}

impl FaultKind {
    fn to_io_error(self) -> io::Error {
        match self {
            FaultKind::Eio => io::Error::from_raw_os_error(rustix::io::Errno::IO.raw_os_error()),
            FaultKind::Enospc => {
                io::Error::from_raw_os_error(rustix::io::Errno::NOSPC.raw_os_error())
            }
        }
    }

    fn partial_len(self, len: usize) -> usize {
        match self {
            FaultKind::Eio => 0,
            FaultKind::Enospc => len / 2,
        }
    }
}

/// Fails chosen writes/fsyncs of the `.log` files, directory fsyncs and index flushes under
/// one directory, and records the durable images of the `.log` files and the durable
/// listings of the directories. Cloning shares the same state.
#[derive(Clone, Debug)]
pub struct FaultInjector {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    writes: u64,
    syncs: u64,
    fail_write: Option<(u64, FaultKind)>,
    fail_sync: Option<(u64, FaultKind)>,
    dir_syncs: u64,
    fail_dir_sync: Option<(u64, FaultKind)>,
    index_flushes: u64,
    fail_index_flush: Option<(u64, FaultKind)>,
    renames: u64,
    fail_rename: Option<(u64, FaultKind)>,
    removes: u64,
    fail_remove: Option<(u64, FaultKind)>,
    next_id: u64,
    files: HashMap<u64, Image>,
    /// Directory -> the names listed at its last successful directory fsync.
    durable_dirs: HashMap<PathBuf, BTreeSet<String>>,
    /// Images of tracked files unlinked since the last successful fsync of their directory.
    unlinked: Vec<Image>,
}

#[derive(Debug)]
struct Image {
    path: PathBuf,
    durable: Vec<u8>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding this lock can only come from a test assertion elsewhere; the
    // state stays usable.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl FaultInjector {
    /// An injector for the paths below `dir`; it sees what goes through [`FaultInjector::io`].
    pub fn new(dir: &Path) -> FaultInjector {
        FaultInjector {
            inner: Arc::new(Inner {
                dir: dir.to_path_buf(),
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// The seam handle to pass to the code under test (`SegmentConfig::io`, the log's
    /// `LogOpenOptions::io`): every `.log` opened or created through it below the directory is
    /// tracked from then on. All handles of one injector share its state.
    pub fn io(&self) -> Io {
        Io::new(Arc::new(self.clone()))
    }

    /// Arms a failure of the `n`th data write from now (`n = 1`: the next one). Replaces
    /// any armed write failure. Later writes succeed again.
    pub fn fail_nth_write(&self, n: u64, kind: FaultKind) {
        let mut state = lock(&self.inner.state);
        state.fail_write = Some((state.writes + n.max(1), kind));
    }

    /// Arms a failure of the `n`th fsync from now (`n = 1`: the next one). A failed fsync
    /// does not advance the durable image.
    pub fn fail_nth_sync(&self, n: u64, kind: FaultKind) {
        let mut state = lock(&self.inner.state);
        state.fail_sync = Some((state.syncs + n.max(1), kind));
    }

    /// Arms a failure of the `n`th directory fsync ([`Io::sync_dir`] of a directory
    /// below the installed one) from now (`n = 1`: the next one). A failed directory fsync
    /// does not advance the durable listing.
    pub fn fail_nth_dir_sync(&self, n: u64, kind: FaultKind) {
        let mut state = lock(&self.inner.state);
        state.fail_dir_sync = Some((state.dir_syncs + n.max(1), kind));
    }

    /// Arms a failure of the `n`th index flush from now (`n = 1`: the next one). Each
    /// `.index` and each `.timeindex` flush (`Segment::flush` flushes both, offset
    /// index first) counts as one; the failing one does not `msync`.
    pub fn fail_nth_index_flush(&self, n: u64, kind: FaultKind) {
        let mut state = lock(&self.inner.state);
        state.fail_index_flush = Some((state.index_flushes + n.max(1), kind));
    }

    /// Arms a failure of the `n`th rename of a `.log` (or `.txnindex`) file through the seam
    /// from now (`n = 1`: the next one): nothing is renamed. Index renames are done by
    /// `seglog-index-core` and cannot fail this way.
    pub fn fail_nth_rename(&self, n: u64, kind: FaultKind) {
        let mut state = lock(&self.inner.state);
        state.fail_rename = Some((state.renames + n.max(1), kind));
    }

    /// Arms a failure of the `n`th unlink attempt through the seam from now (`n = 1`: the
    /// next one): nothing is unlinked. `Segment::delete_files` attempts `.log`,
    /// `.index`, `.timeindex` and `.txnindex` in that order, existing or not: four attempts.
    pub fn fail_nth_remove(&self, n: u64, kind: FaultKind) {
        let mut state = lock(&self.inner.state);
        state.fail_remove = Some((state.removes + n.max(1), kind));
    }

    /// Disarms all failures.
    pub fn clear(&self) {
        let mut state = lock(&self.inner.state);
        state.fail_write = None;
        state.fail_sync = None;
        state.fail_dir_sync = None;
        state.fail_index_flush = None;
        state.fail_rename = None;
        state.fail_remove = None;
    }

    /// Data writes attempted so far on tracked files (including failed ones).
    pub fn writes(&self) -> u64 {
        lock(&self.inner.state).writes
    }

    /// fsyncs attempted so far on tracked files (including failed ones).
    pub fn syncs(&self) -> u64 {
        lock(&self.inner.state).syncs
    }

    /// Directory fsyncs attempted so far below the installed directory (including failed
    /// ones).
    pub fn dir_syncs(&self) -> u64 {
        lock(&self.inner.state).dir_syncs
    }

    /// Index flushes attempted so far below the installed directory (including failed ones).
    pub fn index_flushes(&self) -> u64 {
        lock(&self.inner.state).index_flushes
    }

    /// The durable listing of `dir`: the names of all its entries (files and
    /// subdirectories) as listed right before its last successful directory fsync
    /// ([`Io::sync_dir`]). A name created or renamed to since is not in it; a name
    /// removed or renamed away since still is.
    ///
    /// `None` when `dir` has not been synced successfully since the injector was installed
    /// (its durable listing is then unknown: whatever was there at install time may or may
    /// not be durable), or is not below the installed directory. `dir` is compared as a
    /// path, component by component: pass it as the code under test does.
    pub fn durable_names(&self, dir: &Path) -> Option<BTreeSet<String>> {
        lock(&self.inner.state).durable_dirs.get(dir).cloned()
    }

    /// The durable images of tracked files unlinked since the last successful directory
    /// fsync of their directory (as of the unlink, by the path they had), oldest first. A
    /// power loss may undo such an unlink; a successful [`Io::sync_dir`] of the
    /// directory makes it durable and drops the image from this list.
    pub fn unlinked_images(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let state = lock(&self.inner.state);
        state
            .unlinked
            .iter()
            .map(|image| (image.path.clone(), image.durable.clone()))
            .collect()
    }

    /// The durable image of the tracked file now named `path`, if any.
    pub fn durable_image(&self, path: &Path) -> Option<Vec<u8>> {
        let state = lock(&self.inner.state);
        state
            .files
            .values()
            .find(|image| image.path == path)
            .map(|image| image.durable.clone())
    }

    /// The durable images of all tracked files that still exist, by current path.
    pub fn durable_images(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let state = lock(&self.inner.state);
        let mut images: Vec<_> = state
            .files
            .values()
            .map(|image| (image.path.clone(), image.durable.clone()))
            .collect();
        images.sort();
        images
    }

    /// Tracks the `.log` at `path`: a path tracked already keeps its image (a reopen, e.g.
    /// by a file-handle cache, must not make unsynced bytes durable); an existing file seen
    /// for the first time is taken as durable as found; a created one is empty.
    fn attach(&self, path: &Path, file: &File, created: bool) -> FileId {
        if !created {
            let state = lock(&self.inner.state);
            if let Some((id, _)) = state.files.iter().find(|(_, image)| image.path == path) {
                return FileId(*id);
            }
        }
        let durable = if created {
            Vec::new()
        } else {
            read_all(file).unwrap_or_default()
        };
        let mut state = lock(&self.inner.state);
        let id = state.next_id;
        state.next_id += 1;
        state.files.insert(
            id,
            Image {
                path: path.to_path_buf(),
                durable,
            },
        );
        FileId(id)
    }

    fn tracks(&self, path: &Path) -> bool {
        path.starts_with(&self.inner.dir)
    }

    /// Counts one operation of a kind; returns the fault to raise if it is the armed one.
    fn count(
        &self,
        pick: impl FnOnce(&mut State) -> (&mut u64, Option<(u64, FaultKind)>),
    ) -> Option<FaultKind> {
        let mut state = lock(&self.inner.state);
        let (counter, armed) = pick(&mut state);
        *counter += 1;
        match armed {
            Some((n, kind)) if n == *counter => Some(kind),
            _ => None,
        }
    }

    /// Records the file's current bytes as its durable image.
    fn after_sync(&self, id: FileId, file: &File) -> io::Result<()> {
        let bytes = read_all(file)?;
        let mut state = lock(&self.inner.state);
        if let Some(image) = state.files.get_mut(&id.0) {
            image.durable = bytes;
        }
        Ok(())
    }
}

impl IoBackend for FaultInjector {
    fn opened(&self, path: &Path, file: &File, created: bool) -> FileId {
        if self.tracks(path) {
            self.attach(path, file, created)
        } else {
            FileId::UNTRACKED
        }
    }

    /// A tracked write is done as one positioned write of the joined parts, so a fault sees
    /// exactly the bytes a single write would carry.
    fn write_all_vectored_at(
        &self,
        id: FileId,
        file: &File,
        parts: &[&[u8]],
        position: u64,
    ) -> io::Result<()> {
        if id == FileId::UNTRACKED {
            return Direct.write_all_vectored_at(id, file, parts, position);
        }
        let buf = parts.concat();
        if let Some(fault) = self.count(|s| (&mut s.writes, s.fail_write)) {
            // A failing ENOSPC write may have written a prefix, as a real one can.
            let partial = fault.partial_len(buf.len());
            if partial > 0 {
                file.write_all_at(&buf[..partial], position)?;
            }
            return Err(fault.to_io_error());
        }
        file.write_all_at(&buf, position)
    }

    /// A successful tracked sync advances the durable image.
    fn sync_data(&self, id: FileId, file: &File) -> io::Result<()> {
        if id == FileId::UNTRACKED {
            return Direct.sync_data(id, file);
        }
        if let Some(fault) = self.count(|s| (&mut s.syncs, s.fail_sync)) {
            return Err(fault.to_io_error());
        }
        file.sync_data()?;
        self.after_sync(id, file)
    }

    /// Images follow their file.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        if !self.tracks(from) {
            return Direct.rename(from, to);
        }
        if let Some(fault) = self.count(|s| (&mut s.renames, s.fail_rename)) {
            return Err(fault.to_io_error());
        }
        std::fs::rename(from, to)?;
        let mut state = lock(&self.inner.state);
        for image in state.files.values_mut() {
            if image.path == from {
                image.path = to.to_path_buf();
            }
        }
        Ok(())
    }

    /// The image is kept aside until the unlink is durable.
    fn remove(&self, path: &Path) -> io::Result<()> {
        if !self.tracks(path) {
            return Direct.remove(path);
        }
        if let Some(fault) = self.count(|s| (&mut s.removes, s.fail_remove)) {
            return Err(fault.to_io_error());
        }
        std::fs::remove_file(path)?;
        let mut state = lock(&self.inner.state);
        let gone: Vec<u64> = state
            .files
            .iter()
            .filter(|(_, image)| image.path == path)
            .map(|(id, _)| *id)
            .collect();
        for id in gone {
            if let Some(image) = state.files.remove(&id) {
                state.unlinked.push(image);
            }
        }
        Ok(())
    }

    /// The listing is read before the fsync (everything it shows happened before the fsync
    /// started, so the fsync covers it) and recorded only when the fsync succeeds.
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        if !self.tracks(dir) {
            return Direct.sync_dir(dir);
        }
        if let Some(fault) = self.count(|s| (&mut s.dir_syncs, s.fail_dir_sync)) {
            return Err(fault.to_io_error());
        }
        let mut names = BTreeSet::new();
        for entry in std::fs::read_dir(dir)? {
            names.insert(entry?.file_name().to_string_lossy().into_owned());
        }
        Direct.sync_dir(dir)?;
        let mut state = lock(&self.inner.state);
        // Every unlink in `dir` so far happened before the listing was read: durable now.
        state
            .unlinked
            .retain(|image| image.path.parent() != Some(dir));
        state.durable_dirs.insert(dir.to_path_buf(), names);
        Ok(())
    }

    fn before_index_flush(&self, path: &Path) -> io::Result<()> {
        if !self.tracks(path) {
            return Ok(());
        }
        match self.count(|s| (&mut s.index_flushes, s.fail_index_flush)) {
            Some(fault) => Err(fault.to_io_error()),
            None => Ok(()),
        }
    }
}

/// The whole file, read with positioned reads (the file offset is not moved).
fn read_all(file: &File) -> io::Result<Vec<u8>> {
    let len = file.metadata()?.len();
    let mut bytes = vec![0; usize::try_from(len).unwrap_or(usize::MAX)];
    let mut done = 0;
    while done < bytes.len() {
        match file.read_at(&mut bytes[done..], done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    bytes.truncate(done);
    Ok(bytes)
}
