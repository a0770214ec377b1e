//! Loom models of the log's publication protocol. They run the real [`Published`] /
//! [`LogView::plan_read`] code, the real [`GroupCommit`] and the real [`DurabilityState`]
//! (flusher lock, marks) against fake segments.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p seglog --release --lib loom`.

use loom::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use loom::thread;

use crate::durability::DurabilityState;
use crate::group_commit::GroupCommit;
use crate::segment_map::SegmentMap;
use crate::sync::Arc;
use crate::view::{Isolation, LogView, OffsetMetadata, Published, SegmentSize, WaitEnd};

/// A segment whose "file" is a byte counter: the writer bumps it before publishing, as the
/// real writer appends to the `.log` before publishing the new log end.
#[derive(Debug)]
struct FakeSegment {
    base_offset: i64,
    written: AtomicU64,
}

type Handle = Arc<FakeSegment>;

impl SegmentSize for Handle {
    fn size_bytes(&self) -> u64 {
        self.written.load(Ordering::Acquire)
    }
}

fn segment(base_offset: i64) -> Handle {
    Arc::new(FakeSegment {
        base_offset,
        written: AtomicU64::new(0),
    })
}

fn meta(offset: i64, segment: &Handle) -> OffsetMetadata {
    OffsetMetadata {
        offset,
        segment_base_offset: segment.base_offset,
        position: segment.written.load(Ordering::Relaxed),
    }
}

/// Checks one snapshot the way a reader relies on it.
fn check_snapshot(view: &LogView<Handle>) {
    // The segment the log end points into is in the same snapshot's map.
    let (_, active) = view.segments.last().expect("never empty");
    assert_eq!(active.base_offset, view.end.segment_base_offset);
    assert!(view.segments.first().expect("never empty").0 <= view.log_start_offset);
    let plan = view
        .plan_read(view.log_start_offset, Isolation::LogEnd, None)
        .expect("in range");
    for (segment, bound) in &plan.steps {
        // Never a byte beyond what was written before publication.
        assert!(*bound <= segment.written.load(Ordering::Relaxed));
    }
}

#[test]
fn loom_reader_sees_end_offset_with_its_segment_across_append_roll_delete() {
    loom::model(|| {
        let first = segment(0);
        let mut map = SegmentMap::new();
        map.insert(0, Arc::clone(&first));
        let published = Arc::new(Published::new(LogView {
            segments: std::sync::Arc::new(map),
            log_start_offset: 0,
            end: meta(0, &first),
            high_watermark: meta(0, &first),
            txns: Default::default(),
        }));

        let writer = {
            let published = Arc::clone(&published);
            thread::spawn(move || {
                // Append one batch to segment 0: write, then publish.
                first.written.fetch_add(100, Ordering::Release);
                let old = published.load();
                published.publish(old.appended(meta(1, &first)));
                // Roll: new map and new end in one snapshot.
                let second = segment(1);
                let old = published.load();
                let mut map = (*old.segments).clone();
                map.insert(1, Arc::clone(&second));
                published.publish(old.rolled(std::sync::Arc::new(map), 1));
                second.written.fetch_add(50, Ordering::Release);
                let old = published.load();
                let next = old.appended(meta(2, &second));
                published.publish(LogView {
                    high_watermark: next.end,
                    ..next
                });
                // Retention: drop segment 0 and raise the log start in one snapshot.
                let old = published.load();
                let mut map = (*old.segments).clone();
                map.remove(0);
                published.publish(old.trimmed(std::sync::Arc::new(map), 1, old.high_watermark));
            })
        };

        let mut last_end = 0;
        let mut last_start = 0;
        for _ in 0..2 {
            let view = published.load();
            check_snapshot(&view);
            assert!(view.end.offset >= last_end);
            assert!(view.log_start_offset >= last_start);
            last_end = view.end.offset;
            last_start = view.log_start_offset;
        }
        writer.join().expect("writer");
        let view = published.load();
        check_snapshot(&view);
        assert_eq!(view.end.offset, 2);
        assert_eq!(view.log_start_offset, 1);
    });
}

#[test]
fn loom_group_commit_covers_every_waiter() {
    loom::model(|| {
        let commit = Arc::new(GroupCommit::new(0));
        let appended = Arc::new(AtomicU64::new(0));
        let syncs = Arc::new(AtomicU64::new(0));
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let (commit, appended, syncs) = (
                    Arc::clone(&commit),
                    Arc::clone(&appended),
                    Arc::clone(&syncs),
                );
                thread::spawn(move || {
                    let end = appended.fetch_add(1, Ordering::SeqCst) + 1;
                    commit
                        .wait_durable(end as i64, || {
                            syncs.fetch_add(1, Ordering::SeqCst);
                            Ok(appended.load(Ordering::SeqCst) as i64)
                        })
                        .expect("sync");
                    assert!(commit.durable_end_offset() >= end as i64);
                })
            })
            .collect();
        for w in waiters {
            w.join().expect("waiter");
        }
        assert_eq!(commit.durable_end_offset(), 2);
        assert!(syncs.load(Ordering::SeqCst) <= 2);
    });
}

/// A truncation (lowering the marks under the flusher lock, publishing the shorter end before
/// releasing it) races a flush (which loads the end under the lock) and a group-commit sync
/// that may have read the old end: whatever the interleaving, no mark ends above the log end.
#[test]
fn loom_a_truncation_is_never_overtaken_by_a_flush_or_a_sync_in_flight() {
    loom::model(|| {
        let state = Arc::new(DurabilityState::new(0, 0, seglog_segment::Io::direct()));
        // The published log end offset.
        let end = Arc::new(AtomicI64::new(10));
        let flush = {
            let (state, end) = (Arc::clone(&state), Arc::clone(&end));
            thread::spawn(move || {
                let mut flusher = state.lock_flusher();
                let target = end.load(Ordering::Acquire);
                flusher.flushed_to(target, 1);
            })
        };
        let sync = {
            let (state, end) = (Arc::clone(&state), Arc::clone(&end));
            thread::spawn(move || {
                // A durable appender of offsets below 10; the sync reads the end under the
                // flusher lock, as `sync_appended` does. Whether it is told its offsets were
                // kept depends on the order; the marks are checked below.
                state
                    .wait_durable(10, || {
                        let _flusher = state.lock_flusher();
                        Ok(end.load(Ordering::Acquire))
                    })
                    .expect("sync");
            })
        };
        let mut flusher = state.lock_flusher();
        end.store(4, Ordering::Release);
        flusher.truncated_to(4);
        drop(flusher);
        flush.join().expect("flush");
        sync.join().expect("sync");
        let flusher = state.lock_flusher();
        assert!(
            flusher.recovery_point() <= 4,
            "{}",
            flusher.recovery_point()
        );
        assert!(
            flusher.durable_end_offset() <= 4,
            "{}",
            flusher.durable_end_offset()
        );
    });
}

/// Tail-follow never loses a wakeup: a waiter that checks the published end just before the
/// writer publishes past it still wakes (loom's `wait_timeout` never times out, so a lost
/// wakeup is a deadlock loom reports).
#[test]
fn loom_wait_until_sees_every_publication() {
    loom::model(|| {
        let first = segment(0);
        let mut map = SegmentMap::new();
        map.insert(0, first.clone());
        let published = Arc::new(Published::new(LogView {
            segments: std::sync::Arc::new(map),
            log_start_offset: 0,
            end: meta(0, &first),
            high_watermark: meta(0, &first),
            txns: Default::default(),
        }));
        let waiter = {
            let published = published.clone();
            thread::spawn(move || {
                let (view, end) = published.wait_until(|v| v.end.offset >= 2, None);
                assert!(end == WaitEnd::Done && view.end.offset >= 2);
            })
        };
        for end in 1..=2 {
            first.written.fetch_add(10, Ordering::Release);
            let old = published.load();
            published.publish(old.appended(meta(end, &first)));
        }
        waiter.join().expect("waiter");
    });
}
