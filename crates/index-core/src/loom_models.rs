//! Loom models of the publish/observe protocol. They drive the public index types: under
//! `cfg(loom)` an in-memory index stores its entries in a `LoomBuffer` (one loom `UnsafeCell`
//! per slot), so loom reports any read of a slot that is not ordered after its write, and the
//! locks and the entry count are loom's.
//!
//! Readers take no lock: they run in grace-period read sections (`crate::grace`), and a
//! replaced buffer is *retired* (under loom: marked with a loom-tracked write instead of being
//! freed, see `LoomBuffer::retire`), so loom reports any reader access that the grace period
//! does not order before the free.
//!
//! Checked sensitivity: publishing the entry count with a `Relaxed` store fails
//! `loom_append_publishes_entry_after_its_bytes`, `loom_time_index_roll_entry_vs_lookup` and
//! `loom_slots_publish_without_a_lock`; a truncation that does not wait for a grace
//! period fails `loom_truncate_then_append_never_tears_a_reader`; a resize that frees the old
//! buffer without one fails `loom_trim_and_resize_under_a_reader`,
//! `loom_grace_period_keeps_a_replaced_buffer_alive` and
//! `loom_truncate_then_trim_under_two_readers` (each a loom causality violation on the retired
//! buffer).
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p seglog-index-core
//! --release --lib loom`.

use loom::sync::Arc;
use loom::thread;

use crate::{Error, OffsetIndex, OffsetPosition, TimeIndex, TimestampOffset};

fn op(offset: i64, position: u32) -> OffsetPosition {
    OffsetPosition { offset, position }
}

fn to(timestamp_ms: i64, offset: i64) -> TimestampOffset {
    TimestampOffset {
        timestamp_ms,
        offset,
    }
}

/// A reader that sees an entry count also sees every byte of those entries.
#[test]
fn loom_append_publishes_entry_after_its_bytes() {
    loom::model(|| {
        let index = Arc::new(OffsetIndex::in_memory("loom.index", 0, 16));
        let writer = index.clone();
        let t = thread::spawn(move || {
            writer.append(1, 10).unwrap();
            writer.append(2, 20).unwrap();
        });
        if let Some(last) = index.entries().checked_sub(1).and_then(|n| index.entry(n)) {
            assert!(last == op(1, 10) || last == op(2, 20), "{last:?}");
        }
        let found = index.lookup(2);
        assert!(
            [op(0, 0), op(1, 10), op(2, 20)].contains(&found),
            "{found:?}"
        );
        t.join().unwrap();
        assert_eq!(index.lookup(2), op(2, 20));
    });
}

/// Truncation followed by an append into the freed slot never tears a concurrent read of it.
#[test]
fn loom_truncate_then_append_never_tears_a_reader() {
    loom::model(|| {
        let index = Arc::new(OffsetIndex::in_memory("loom.index", 0, 16));
        index.append(1, 10).unwrap();
        index.append(2, 20).unwrap();
        let writer = index.clone();
        let t = thread::spawn(move || {
            writer.truncate_to(2).unwrap();
            writer.append(2, 30).unwrap();
        });
        let found = index.lookup(5);
        assert!(
            [op(1, 10), op(2, 20), op(2, 30)].contains(&found),
            "{found:?}"
        );
        t.join().unwrap();
        assert_eq!(index.entry(1), Some(op(2, 30)));
    });
}

/// Trimming and growing the buffer under a reader: the reader sees the old or the new buffer,
/// never a freed one, and never more entries than the buffer holds.
#[test]
fn loom_trim_and_resize_under_a_reader() {
    loom::model(|| {
        let index = Arc::new(OffsetIndex::in_memory("loom.index", 0, 32));
        index.append(1, 10).unwrap();
        let writer = index.clone();
        let t = thread::spawn(move || {
            writer.trim_to_valid_size().unwrap();
            writer.resize(16).unwrap();
            writer.append(2, 20).unwrap();
        });
        let found = index.lookup(5);
        assert!([op(1, 10), op(2, 20)].contains(&found), "{found:?}");
        assert!(index.entries() <= index.max_entries().max(2));
        t.join().unwrap();
        assert_eq!((index.entries(), index.max_entries()), (2, 2));
    });
}

/// The time index's roll-time entry (skip_full_check) against a reader.
#[test]
fn loom_time_index_roll_entry_vs_lookup() {
    loom::model(|| {
        let index = Arc::new(TimeIndex::in_memory("loom.timeindex", 0, 24));
        let writer = index.clone();
        let t = thread::spawn(move || {
            writer.maybe_append(10, 1, false).unwrap();
            assert!(matches!(
                writer.maybe_append(20, 2, false),
                Err(Error::IndexFull { .. })
            ));
            writer.maybe_append(20, 2, true).unwrap();
        });
        let last = index.last_entry();
        assert!(
            [to(-1, 0), to(10, 1), to(20, 2)].contains(&last),
            "{last:?}"
        );
        let found = index.lookup(15);
        assert!([to(-1, 0), to(10, 1)].contains(&found), "{found:?}");
        t.join().unwrap();
        assert_eq!(index.last_entry(), to(20, 2));
    });
}

/// Two appenders racing for the same offset: exactly one wins, the other sees its entry.
#[test]
fn loom_concurrent_appenders_are_serialized() {
    loom::model(|| {
        let index = Arc::new(OffsetIndex::in_memory("loom.index", 0, 16));
        let other = index.clone();
        let t = thread::spawn(move || other.append(1, 10).is_ok());
        let here = index.append(1, 10).is_ok();
        let there = t.join().unwrap();
        assert!(here ^ there);
        assert_eq!((index.entries(), index.entry(0)), (1, Some(op(1, 10))));
    });
}

/// The publish/observe protocol of `Slots` on its own: only the `Release` store / `Acquire`
/// load of the entry count orders the entry bytes. Turning the store `Relaxed` fails this
/// model.
#[test]
fn loom_slots_publish_without_a_lock() {
    use crate::mmap::{Backing, LoomBuffer, Slots};
    loom::model(|| {
        let slots = Arc::new(Slots::new(Backing::Loom(LoomBuffer::zeroed(16, 8)), 8, 0));
        let w = slots.clone();
        let t = thread::spawn(move || {
            w.push_with(|_, _| Ok::<_, ()>(Some([1u8; 8]))).unwrap();
        });
        let got = slots.read(|b| b.to_vec());
        assert!(got.is_empty() || got == vec![1u8; 8]);
        t.join().unwrap();
    });
}

/// A resize swaps in a new buffer while a reader and an appender run: the reader reads the old
/// or the new buffer, never a retired one, and an entry appended after the resize is only ever
/// read from the buffer that holds it.
#[test]
fn loom_grace_period_keeps_a_replaced_buffer_alive() {
    use crate::mmap::{Backing, LoomBuffer, Slots};
    loom::model(|| {
        let slots = Arc::new(Slots::new(Backing::Loom(LoomBuffer::zeroed(16, 8)), 8, 0));
        slots.push_with(|_, _| Ok::<_, ()>(Some([1u8; 8]))).unwrap();
        let w = slots.clone();
        let t = thread::spawn(move || {
            let grown = w.resize(|_, _| Ok::<_, std::io::Error>(Some(24)), |e| e);
            assert!(matches!(grown, Ok(true)));
            w.push_with(|_, _| Ok::<_, ()>(Some([2u8; 8]))).unwrap();
        });
        let got = slots.read(|b| b.to_vec());
        assert!(
            got == [1u8; 8] || got == [[1u8; 8], [2u8; 8]].concat(),
            "{got:?}"
        );
        t.join().unwrap();
        assert_eq!(slots.capacity(), 3);
    });
}

/// Truncation, then a trim that shrinks the buffer, under two readers: each sees the entries
/// before or after the truncation, and neither touches the retired buffer.
#[test]
fn loom_truncate_then_trim_under_two_readers() {
    loom::model(|| {
        let index = Arc::new(OffsetIndex::in_memory("loom.index", 0, 24));
        index.append(1, 10).unwrap();
        index.append(2, 20).unwrap();
        let writer = index.clone();
        let t = thread::spawn(move || {
            writer.truncate_to(2).unwrap();
            writer.trim_to_valid_size().unwrap();
        });
        let other = index.clone();
        let r = thread::spawn(move || other.lookup(9));
        let here = index.lookup(9);
        let there = r.join().unwrap();
        for found in [here, there] {
            assert!([op(1, 10), op(2, 20)].contains(&found), "{found:?}");
        }
        t.join().unwrap();
        assert_eq!((index.entries(), index.max_entries()), (1, 1));
    });
}
