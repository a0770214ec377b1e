//! Synchronisation primitives: std normally, loom's under `--cfg loom` so the loom models
//! (`loom_*` tests) exercise the same code the log runs. Every mutex, rwlock, condvar and
//! atomic of this crate comes from here (the one exception is the process-wide registry of
//! held directory locks in `lock.rs`: a `static` needs a `const` constructor, which loom's
//! types do not have, and no model involves it), and every lock is taken through the
//! poison-tolerant helpers below.

#[cfg(loom)]
pub(crate) use loom::sync::{
    Arc, Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard,
    atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering},
};

#[cfg(not(loom))]
pub(crate) use std::sync::{
    Arc, Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard,
    atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering},
};

use std::sync::LockResult;

/// Unwraps a lock result, ignoring poisoning: every critical section in this crate leaves its
/// data consistent before anything that could panic, and the log has its own I/O poisoning.
pub(crate) fn unpoison<G>(result: LockResult<G>) -> G {
    result.unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Locks a mutex, ignoring poisoning (see [`unpoison`]).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    unpoison(mutex.lock())
}

/// Read-locks an rwlock, ignoring poisoning (see [`unpoison`]).
pub(crate) fn read<T>(rwlock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    unpoison(rwlock.read())
}

/// Write-locks an rwlock, ignoring poisoning (see [`unpoison`]).
pub(crate) fn write<T>(rwlock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    unpoison(rwlock.write())
}
