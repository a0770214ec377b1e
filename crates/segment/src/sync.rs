//! The publication protocol between the one writer and the readers of a segment, over std
//! or loom types under one path (`#[cfg(loom)]`, models in `loom_models.rs`).
//!
//! * [`PublishedSize`]: the `.log` size readers may see. The writer stores it (Release)
//!   after the bytes are written; readers load it (Acquire) and never read past it.
//! * [`MaxTimestampCell`]: the max timestamp and its offset, read and written as one value
//!   (KAFKA-12981).

#[cfg(loom)]
pub(crate) use loom::sync::{
    Mutex,
    atomic::{AtomicU64, Ordering},
};
#[cfg(not(loom))]
pub(crate) use std::sync::{
    Mutex,
    atomic::{AtomicU64, Ordering},
};

use seglog_index_core::TimestampOffset;

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
        // The value is plain data, always consistent: ignore poisoning.
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn set(&self, value: TimestampOffset) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = value;
    }

    /// Raises the value to `(timestamp_ms, offset)` if `timestamp_ms` is strictly larger
    /// (Kafka's rule); returns the value after the update.
    pub(crate) fn raise(&self, timestamp_ms: i64, offset: i64) -> TimestampOffset {
        let mut max = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if timestamp_ms > max.timestamp_ms {
            *max = TimestampOffset {
                timestamp_ms,
                offset,
            };
        }
        *max
    }
}
