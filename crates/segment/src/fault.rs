//! Fault injection under the `.log` I/O seam (tests, and the `fault-injection` feature).
//!
//! A [`FaultInjector`] is installed for a directory; every `.log` file opened or created
//! below that directory afterwards is tracked by it. It can fail the Nth data write or the
//! Nth fsync (counted over all tracked files from the moment the failure is armed) with
//! `EIO` or `ENOSPC`, and it keeps for each tracked file a **durable image**: the file's
//! bytes as of its last successful fsync (or as found when it was opened). Writing those
//! images to a directory produces the state a power loss would have left behind, under the
//! strict model "nothing that was not fsynced survives".
//!
//! Injectors for different directories do not interfere, so tests can run in parallel.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use seglog_segment::fault::{FaultInjector, FaultKind};
//! let dir = tempfile::tempdir()?;
//! let faults = FaultInjector::install(dir.path());
//! faults.fail_nth_write(1, FaultKind::Enospc); // the next write fails
//! # Ok(()) }
//! ```

use std::collections::HashMap;
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
    /// out-of-space write can.
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

/// Fails chosen writes/fsyncs of the `.log` files under one directory and records their
/// durable images. Cloning shares the same state.
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
    next_id: u64,
    files: HashMap<u64, Image>,
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

    /// Disarms all failures.
    pub fn clear(&self) {
        let mut state = lock(&self.inner.state);
        state.fail_write = None;
        state.fail_sync = None;
    }

    /// Data writes attempted so far on tracked files (including failed ones).
    pub fn writes(&self) -> u64 {
        lock(&self.inner.state).writes
    }

    /// fsyncs attempted so far on tracked files (including failed ones).
    pub fn syncs(&self) -> u64 {
        lock(&self.inner.state).syncs
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

/// Called by the seam after an unlink.
pub(crate) fn removed(path: &Path) {
    if let Some(injector) = injector_for(path) {
        let mut state = lock(&injector.inner.state);
        state.files.retain(|_, image| image.path != path);
    }
}
