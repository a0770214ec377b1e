//! Loom models of the publication protocol (`sync.rs`). Run with
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p seglog-segment --lib --release loom_`.

use loom::sync::Arc;
use loom::sync::atomic::{AtomicU8, Ordering};
use loom::thread;
use seglog_index_core::TimestampOffset;

use crate::sync::{MaxTimestampCell, PublishedSize};

/// Stands in for the `.log` bytes. Relaxed atomics (the crate forbids `unsafe`, so no
/// `UnsafeCell`): loom lets a relaxed load return a stale value unless the size's
/// Release/Acquire pair orders it after the write, so a weaker publish fails the model.
struct Bytes([AtomicU8; 3]);

#[test]
fn loom_published_size_covers_written_bytes() {
    loom::model(|| {
        let bytes = Arc::new(Bytes([
            AtomicU8::new(0),
            AtomicU8::new(0),
            AtomicU8::new(0),
        ]));
        let size = Arc::new(PublishedSize::new(0));
        let writer = {
            let (bytes, size) = (Arc::clone(&bytes), Arc::clone(&size));
            thread::spawn(move || {
                for (i, cell) in bytes.0.iter().enumerate() {
                    cell.store(i as u8 + 1, Ordering::Relaxed);
                    size.publish(i as u64 + 1);
                }
            })
        };
        let visible = size.load() as usize;
        for (i, cell) in bytes.0.iter().take(visible).enumerate() {
            assert_eq!(cell.load(Ordering::Relaxed), i as u8 + 1);
        }
        writer.join().unwrap();
    });
}

#[test]
fn loom_max_timestamp_and_offset_are_one_value() {
    loom::model(|| {
        let max = Arc::new(MaxTimestampCell::new(TimestampOffset {
            timestamp_ms: -1,
            offset: -1,
        }));
        let writer = {
            let max = Arc::clone(&max);
            thread::spawn(move || {
                max.raise(10, 1);
                max.raise(20, 2);
                max.raise(15, 3); // not larger: ignored
            })
        };
        let seen = max.get();
        assert!(seen.timestamp_ms == -1 || seen.timestamp_ms == 10 * seen.offset);
        writer.join().unwrap();
        assert_eq!(
            max.get(),
            TimestampOffset {
                timestamp_ms: 20,
                offset: 2
            }
        );
    });
}
