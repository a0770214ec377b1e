//! std or loom synchronisation types under one path (`#[cfg(loom)]`), plus lock helpers that
//! ignore poisoning: every critical section leaves the index consistent (the entry count is
//! published with one atomic store), so a panic elsewhere never makes the state unusable.

#[cfg(loom)]
pub(crate) use loom::sync::{
    Mutex, MutexGuard,
    atomic::{AtomicPtr, AtomicUsize, Ordering},
};
#[cfg(loom)]
pub(crate) use loom::thread::yield_now;
#[cfg(not(loom))]
pub(crate) use std::sync::{
    Mutex, MutexGuard,
    atomic::{AtomicPtr, AtomicUsize, Ordering},
};
#[cfg(not(loom))]
pub(crate) use std::thread::yield_now;

use std::sync::PoisonError;

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
