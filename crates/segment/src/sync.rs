//! The publication protocol between the one writer and the readers of a segment, over std
//! or loom types under one path (`#[cfg(loom)]`, models in `loom_models.rs`). Every mutex,
//! rwlock and atomic of this crate comes from here (the fault injector's registry in
//! `fault.rs` is test machinery and keeps std's), and every lock is taken through the
//! poison-tolerant helpers ([`lock`], [`read`], [`write`]).
//!
//! * [`PublishedSize`]: the `.log` size readers may see. The writer stores it (Release)
//!   after the bytes are written; readers load it (Acquire) and never read past it.
//! * [`MaxTimestampCell`]: the max timestamp and its offset, read and written as one value
//!   (KAFKA-12981).

#[cfg(loom)]
pub(crate) use loom::sync::{
    Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard,
    atomic::{AtomicBool, AtomicU64, Ordering},
};
#[cfg(not(loom))]
pub(crate) use std::sync::{
    Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard,
    atomic::{AtomicBool, AtomicU64, Ordering},
};

use std::sync::LockResult;

use seglog_index_core::TimestampOffset;

/// Unwraps a lock result, ignoring poisoning: every value guarded in this crate is plain data
/// left consistent before anything that could panic, and a segment has its own I/O poisoning.
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

/// The size readers may see (bytes of whole, written batches).
#[derive(Debug)]
pub(crate) struct PublishedSize(AtomicU64);

impl PublishedSize {
    pub(crate) fn new(size: u64) -> Self {
        PublishedSize(AtomicU64::new(size))
    }

    /// Readers: every byte below the returned size is written and visible.
    pub(crate) fn load(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    /// The writer: publishes `size` after writing every byte below it (or lowers it before
    /// cutting bytes off).
    pub(crate) fn publish(&self, size: u64) {
        self.0.store(size, Ordering::Release);
    }
}

/// `(max timestamp, its offset)` under one lock: never torn.
#[derive(Debug)]
pub(crate) struct MaxTimestampCell(Mutex<TimestampOffset>);

impl MaxTimestampCell {
    pub(crate) fn new(value: TimestampOffset) -> Self {
        MaxTimestampCell(Mutex::new(value))
    }

    pub(crate) fn get(&self) -> TimestampOffset {
        *lock(&self.0)
    }

    pub(crate) fn set(&self, value: TimestampOffset) {
        *lock(&self.0) = value;
    }

    /// Raises the value to `(timestamp_ms, offset)` if `timestamp_ms` is strictly larger
    /// (Kafka's rule); returns the value after the update.
    pub(crate) fn raise(&self, timestamp_ms: i64, offset: i64) -> TimestampOffset {
        let mut max = lock(&self.0);
        if timestamp_ms > max.timestamp_ms {
            *max = TimestampOffset {
                timestamp_ms,
                offset,
            };
        }
        *max
    }
}
