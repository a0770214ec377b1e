//! Synchronisation primitives: std normally, loom's under `--cfg loom` so the loom models
//! (`loom_*` tests) exercise the same publication code the log runs.

#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};

#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};

/// Locks a mutex, ignoring poisoning: every critical section in this crate leaves its data
/// consistent before anything that could panic, and the log has its own I/O poisoning.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}
