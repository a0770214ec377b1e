//! One appender that also trims, resizes, truncates and resets, against concurrent readers, on
//! a mapped file (a shrink under a reader would SIGBUS) and in memory. Every entry the writer
//! ever writes satisfies `position == 10 * offset`, so a torn or unwritten entry shows up as a
//! broken invariant.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use seglog_index_core::{OffsetIndex, TimeIndex};

const ROUNDS: u64 = 60;
const PER_ROUND: i64 = 300;

fn writer(index: &OffsetIndex, times: &TimeIndex) {
    let mut next = 0i64;
    for round in 0..ROUNDS {
        for _ in 0..PER_ROUND {
            if index.is_full() {
                break;
            }
            index
                .append(next, u32::try_from(next * 10).unwrap())
                .unwrap();
            times.maybe_append(next * 7, next, false).unwrap();
            next += 1;
        }
        match round % 4 {
            0 => {
                index.trim_to_valid_size().unwrap();
                times.trim_to_valid_size().unwrap();
                index.resize(64 * 1024).unwrap();
                times.resize(96 * 1024).unwrap();
            }
            1 => {
                next = (next - PER_ROUND / 2).max(0);
                index.truncate_to(next).unwrap();
                times.truncate_to(next).unwrap();
            }
            2 => index.flush().unwrap(),
            _ if round % 20 == 19 => {
                next = 0;
                index.reset().unwrap();
                times.reset().unwrap();
            }
            _ => {}
        }
    }
}

fn reader(index: &OffsetIndex, times: &TimeIndex, done: &AtomicBool) -> u64 {
    let mut checks = 0;
    let mut t = 1i64;
    while !done.load(Ordering::Acquire) {
        t = (t * 7919 + 13) % 20_000;
        let found = index.lookup(t);
        assert!(found.offset <= t.max(0));
        assert_eq!(
            i64::from(found.position),
            found.offset * 10,
            "torn lookup {found:?}"
        );
        let n = index.entries();
        if let Some(last) = n.checked_sub(1).and_then(|n| index.entry(n)) {
            assert_eq!(
                i64::from(last.position),
                last.offset * 10,
                "torn entry {last:?}"
            );
        }
        let found = times.lookup(t * 7);
        assert!(
            found.timestamp_ms == -1 || found.timestamp_ms == found.offset * 7,
            "{found:?}"
        );
        if let Some(e) = times.entry(0) {
            assert_eq!(e.timestamp_ms, e.offset * 7);
        }
        checks += 1;
    }
    checks
}

fn run(index: OffsetIndex, times: TimeIndex) {
    let index = Arc::new(index);
    let times = Arc::new(times);
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (index, times, done) = (index.clone(), times.clone(), done.clone());
            std::thread::spawn(move || reader(&index, &times, &done))
        })
        .collect();
    writer(&index, &times);
    done.store(true, Ordering::Release);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
}

#[test]
fn readers_race_appends_trims_resizes_and_truncations_on_a_mapped_file() {
    let dir = tempfile::tempdir().unwrap();
    let index = OffsetIndex::open(dir.path().join("0.index"), 0, 64 * 1024).unwrap();
    let times = TimeIndex::open(dir.path().join("0.timeindex"), 0, 96 * 1024).unwrap();
    run(index, times);
}

#[test]
fn readers_race_appends_trims_resizes_and_truncations_in_memory() {
    run(
        OffsetIndex::in_memory("mem.index", 0, 64 * 1024),
        TimeIndex::in_memory("mem.timeindex", 0, 96 * 1024),
    );
}

#[test]
fn concurrent_appenders_are_serialized() {
    let index = Arc::new(OffsetIndex::in_memory("mem.index", 0, 8 * 4000));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let index = index.clone();
            std::thread::spawn(move || {
                let mut ok = 0;
                for _ in 0..1000 {
                    let next = index.last_offset() + 1;
                    if index
                        .append(next, u32::try_from(next * 10).unwrap())
                        .is_ok()
                    {
                        ok += 1;
                    }
                }
                ok
            })
        })
        .collect();
    let appended: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(index.entries(), appended);
    for n in 1..index.entries() {
        let (a, b) = (index.entry(n - 1).unwrap(), index.entry(n).unwrap());
        assert!(a.offset < b.offset);
        assert_eq!(i64::from(b.position), b.offset * 10);
    }
}
