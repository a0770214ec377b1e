//! Fault injection under the I/O seam (tests, and the `fault-injection` feature).
//!
//! A [`FaultInjector`] is installed for a directory; every `.log` file opened or created
//! below that directory afterwards is tracked by it, and so is every directory fsync
//! ([`crate::sync_dir`]) and every index flush (`msync`, by [`crate::Segment::flush`]) of a
//! path below it. It can fail the Nth data write, the Nth `.log` fsync, the Nth directory
//! fsync, the Nth index flush, the Nth `.log`/`.txnindex` rename or the Nth unlink (each
//! counted separately, over everything tracked, from the moment the failure is armed) with
//! `EIO` or `ENOSPC`. It records two kinds of durable state:
//!
//! - for each tracked `.log`, a **durable image**: the file's bytes as of its last successful
//!   fsync (or as found when it was opened); an unlinked file's image is kept
//!   ([`FaultInjector::unlinked_images`]) until a directory fsync makes the unlink durable;
//! - for each directory synced through [`crate::sync_dir`], its **durable listing**: the
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
//! Injectors for different directories do not interfere, so tests can run in parallel.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use seglog_segment::fault::{FaultInjector, FaultKind};
//! let dir = tempfile::tempdir()?;
//! let faults = FaultInjector::install(dir.path());
//! faults.fail_nth_write(1, FaultKind::Enospc); // the next write fails
//! assert_eq!(faults.durable_names(dir.path()), None); // never synced
//! std::fs::write(dir.path().join("a"), b"")?;
//! seglog_segment::sync_dir(dir.path())?;
//! assert!(faults.durable_names(dir.path()).is_some_and(|names| names.contains("a")));
//! # Ok(()) }
//! ```

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

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
    pub(crate) fn to_io_error(self) -> io::Error {
        match self {
            FaultKind::Eio => io::Error::from_raw_os_error(rustix::io::Errno::IO.raw_os_error()),
            FaultKind::Enospc => {
                io::Error::from_raw_os_error(rustix::io::Errno::NOSPC.raw_os_error())
            }
        }
    }

    pub(crate) fn partial_len(self, len: usize) -> usize {
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

static REGISTRY: Mutex<Vec<Weak<Inner>>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding this lock can only come from a test assertion elsewhere; the
    // state stays usable.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl FaultInjector {
    /// Starts tracking every `.log` file opened or created below `dir` from now on.
    pub fn install(dir: &Path) -> FaultInjector {
        let inner = Arc::new(Inner {
            dir: dir.to_path_buf(),
            state: Mutex::new(State::default()),
        });
        let mut registry = lock(&REGISTRY);
        registry.retain(|w| w.strong_count() > 0);
        registry.push(Arc::downgrade(&inner));
        FaultInjector { inner }
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

    /// Arms a failure of the `n`th directory fsync ([`crate::sync_dir`] of a directory
    /// below the installed one) from now (`n = 1`: the next one). A failed directory fsync
    /// does not advance the durable listing.
    pub fn fail_nth_dir_sync(&self, n: u64, kind: FaultKind) {
        let mut state = lock(&self.inner.state);
        state.fail_dir_sync = Some((state.dir_syncs + n.max(1), kind));
    }

    /// Arms a failure of the `n`th index flush from now (`n = 1`: the next one). Each
    /// `.index` and each `.timeindex` flush ([`crate::Segment::flush`] flushes both, offset
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
    /// next one): nothing is unlinked. [`crate::Segment::delete_files`] attempts `.log`,
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
    /// ([`crate::sync_dir`]). A name created or renamed to since is not in it; a name
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
    /// power loss may undo such an unlink; a successful [`crate::sync_dir`] of the
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

    fn attach(self: &FaultInjector, path: &Path, file: &File, created: bool) -> Tracked {
        // An existing file is taken as durable as found.
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
        Tracked {
            injector: self.clone(),
            id,
        }
    }
}

/// A tracked file's link to its injector (held by the seam's `LogFile`).
#[derive(Debug)]
pub(crate) struct Tracked {
    injector: FaultInjector,
    id: u64,
}

impl Tracked {
    /// Counts a write; returns the fault to raise, if this write is the armed one.
    pub(crate) fn before_write(&self) -> Option<FaultKind> {
        let mut state = lock(&self.injector.inner.state);
        state.writes += 1;
        match state.fail_write {
            Some((n, kind)) if n == state.writes => Some(kind),
            _ => None,
        }
    }

    /// Counts an fsync; returns the fault to raise, if this fsync is the armed one.
    pub(crate) fn before_sync(&self) -> Option<FaultKind> {
        let mut state = lock(&self.injector.inner.state);
        state.syncs += 1;
        match state.fail_sync {
            Some((n, kind)) if n == state.syncs => Some(kind),
            _ => None,
        }
    }

    /// Records the file's current bytes as its durable image.
    pub(crate) fn after_sync(&self, file: &File) -> io::Result<()> {
        let bytes = read_all(file)?;
        let mut state = lock(&self.injector.inner.state);
        if let Some(image) = state.files.get_mut(&self.id) {
            image.durable = bytes;
        }
        Ok(())
    }
}

impl FaultInjector {
    /// Counts a directory fsync; returns the fault to raise, if this one is the armed one.
    fn before_dir_sync(&self) -> Option<FaultKind> {
        let mut state = lock(&self.inner.state);
        state.dir_syncs += 1;
        match state.fail_dir_sync {
            Some((n, kind)) if n == state.dir_syncs => Some(kind),
            _ => None,
        }
    }

    /// Counts a rename; returns the fault to raise, if this one is the armed one.
    fn before_rename(&self) -> Option<FaultKind> {
        let mut state = lock(&self.inner.state);
        state.renames += 1;
        match state.fail_rename {
            Some((n, kind)) if n == state.renames => Some(kind),
            _ => None,
        }
    }

    /// Counts an unlink; returns the fault to raise, if this one is the armed one.
    fn before_remove(&self) -> Option<FaultKind> {
        let mut state = lock(&self.inner.state);
        state.removes += 1;
        match state.fail_remove {
            Some((n, kind)) if n == state.removes => Some(kind),
            _ => None,
        }
    }

    /// Counts an index flush; returns the fault to raise, if this one is the armed one.
    fn before_index_flush(&self) -> Option<FaultKind> {
        let mut state = lock(&self.inner.state);
        state.index_flushes += 1;
        match state.fail_index_flush {
            Some((n, kind)) if n == state.index_flushes => Some(kind),
            _ => None,
        }
    }
}

/// Called by the seam around a directory fsync: `sync` is the real fsync. The listing is
/// read before it (everything it shows happened before the fsync started, so the fsync
/// covers it) and recorded only when it succeeds.
pub(crate) fn sync_dir(dir: &Path, sync: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
    let Some(injector) = injector_for(dir) else {
        return sync();
    };
    if let Some(fault) = injector.before_dir_sync() {
        return Err(fault.to_io_error());
    }
    let mut names = BTreeSet::new();
    for entry in std::fs::read_dir(dir)? {
        names.insert(entry?.file_name().to_string_lossy().into_owned());
    }
    sync()?;
    let mut state = lock(&injector.inner.state);
    // Every unlink in `dir` so far happened before the listing was read: durable now.
    state
        .unlinked
        .retain(|image| image.path.parent() != Some(dir));
    state.durable_dirs.insert(dir.to_path_buf(), names);
    Ok(())
}

/// Called by the seam before an index flush of the index file `path`: the fault to raise,
/// if this flush is the armed one.
pub(crate) fn before_index_flush(path: &Path) -> Option<FaultKind> {
    injector_for(path).and_then(|injector| injector.before_index_flush())
}

fn read_all(file: &File) -> io::Result<Vec<u8>> {
    let len = file.metadata()?.len();
    let mut bytes = vec![0; usize::try_from(len).unwrap_or(usize::MAX)];
    let n = crate::io::read_at_most(file, &mut bytes, 0)?;
    bytes.truncate(n);
    Ok(bytes)
}

fn injector_for(path: &Path) -> Option<FaultInjector> {
    let registry = lock(&REGISTRY);
    registry
        .iter()
        .filter_map(Weak::upgrade)
        .find(|inner| path.starts_with(&inner.dir))
        .map(|inner| FaultInjector { inner })
}

/// Called by the seam when a `.log` file is opened or created.
pub(crate) fn attach(path: &Path, file: &File, created: bool) -> Option<Tracked> {
    injector_for(path).map(|injector| injector.attach(path, file, created))
}

/// Called by the seam before a rename of `from`: the fault to raise, if armed.
pub(crate) fn before_rename(from: &Path) -> Option<FaultKind> {
    injector_for(from).and_then(|injector| injector.before_rename())
}

/// Called by the seam before an unlink of `path`: the fault to raise, if armed.
pub(crate) fn before_remove(path: &Path) -> Option<FaultKind> {
    injector_for(path).and_then(|injector| injector.before_remove())
}

/// Called by the seam after a rename, so images follow their file.
pub(crate) fn renamed(from: &Path, to: &Path) {
    if let Some(injector) = injector_for(from) {
        let mut state = lock(&injector.inner.state);
        for image in state.files.values_mut() {
            if image.path == from {
                image.path = to.to_path_buf();
            }
        }
    }
}

/// Called by the seam after an unlink: the image is kept aside until the unlink is durable.
pub(crate) fn removed(path: &Path) {
    if let Some(injector) = injector_for(path) {
        let mut state = lock(&injector.inner.state);
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
    }
}
