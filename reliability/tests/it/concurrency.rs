//! Concurrency stress: one appender (rolling small segments, some durable appends, moving the
//! high watermark), one maintenance thread (retention by size, unlinking deleted segments at
//! once, flushing) and eight readers, for a bounded time. Readers validate every record they
//! are served (CRC, key, value, timestamp) and never see an offset at or beyond the log end
//! offset (or the high watermark, for consumer reads) published when their read was planned.
//! Half of them fetch at random offsets, half consume sequentially and check there is no gap;
//! half of each use the zero-copy `Log::read`, half the copy-out `Log::read_into`.
//!
//! `SEGLOG_STRESS_MILLIS` sets the duration (default 2500).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use seglog::{Batches, Clock, Compression, Error, Isolation, Log};
use seglog_reliability::{RecordId, build_batch, small_config};

use crate::support::{iterations, seeded_rng};

const STREAM: u64 = 42;

/// Checks one fetch of `bytes` read from file position `position`: whole batches valid,
/// records self-verifying, offset = seq, nothing at or beyond `bound`. Returns the offset after
/// the last whole batch (or `from` if none).
fn check_fetch(bytes: &[u8], position: u64, from: i64, bound: i64, context: &str) -> (i64, u64) {
    let mut next = from;
    let mut checked = 0;
    let mut batches = Batches::new(bytes, position);
    for (i, batch) in batches.by_ref().enumerate() {
        let batch = batch.unwrap_or_else(|e| panic!("{context}: served bytes do not parse: {e}"));
        batch
            .ensure_valid()
            .unwrap_or_else(|e| panic!("{context}: served a corrupt batch: {e}"));
        let last = batch.header().last_offset;
        assert!(
            last < bound,
            "{context}: served offset {last}, bound {bound}"
        );
        if i == 0 {
            assert!(
                last >= from,
                "{context}: first batch ends at {last} < {from}"
            );
        }
        for record in batch.records(1 << 24) {
            let record = record.unwrap_or_else(|e| panic!("{context}: {e}"));
            let id = RecordId::parse_key(record.key.as_deref().unwrap_or_default())
                .unwrap_or_else(|| panic!("{context}: unknown key at {}", record.offset));
            assert_eq!(
                id,
                RecordId {
                    stream: STREAM,
                    seq: record.offset as u64
                },
                "{context}: offset {} holds another record",
                record.offset
            );
            assert_eq!(record.value.as_deref(), Some(&id.value()[..]), "{context}");
            assert_eq!(record.timestamp_ms, Some(id.timestamp_ms()), "{context}");
            checked += 1;
        }
        next = last + 1;
    }
    (next, checked)
}

#[test]
fn one_appender_eight_readers_retention_and_rolls() {
    stress("concurrency", None);
}

/// The same workload with a segment cache of two: sealed segments are closed and reopened
/// all the time, racing the readers (which may hold an older snapshot), rolls, retention and
/// immediate unlinks.
#[test]
fn eviction_races_readers_rolls_and_retention() {
    stress("concurrency/eviction", Some(2));
}

fn stress(label: &str, segment_cache_capacity: Option<i64>) {
    let millis = iterations("SEGLOG_STRESS_MILLIS", 2500);
    let (mut rng, seed) = seeded_rng(label);
    let tmp = tempfile::tempdir().unwrap();
    let mut config = small_config(8 * 1024);
    config.retention_bytes = 48 * 1024;
    config.file_delete_delay_ms = 0;
    config.index_interval_bytes = 1024;
    if let Some(capacity) = segment_cache_capacity {
        config.segment_cache_capacity = capacity;
    }
    // Manual: the appender moves the high watermark at random (forwards and refused
    // backwards), so high-watermark reads run behind the log end.
    let log =
        Arc::new(Log::open_with(tmp.path().join("t-0"), config, crate::support::manual()).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let (reads, records) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let deadline = Instant::now() + Duration::from_millis(millis);
    // On a loaded machine the appender may need longer before retention has work to do.
    let hard_deadline = deadline + Duration::from_millis(4 * millis);

    let appender = {
        let (log, stop) = (Arc::clone(&log), Arc::clone(&stop));
        let mut rng = StdRng::seed_from_u64(rng.random());
        std::thread::spawn(move || {
            let mut seq = 0u64;
            while Instant::now() < deadline
                || (log.log_start_offset() == 0 && Instant::now() < hard_deadline)
            {
                let n = rng.random_range(1..=8u64);
                let ids: Vec<RecordId> = (seq..seq + n)
                    .map(|seq| RecordId {
                        stream: STREAM,
                        seq,
                    })
                    .collect();
                let compression = Compression::ALL[rng.random_range(0..Compression::ALL.len())];
                let batch = build_batch(&ids, compression).unwrap();
                let info = if rng.random_bool(0.1) {
                    log.append_durable(&batch).unwrap()
                } else {
                    log.append(&batch).unwrap()
                };
                assert_eq!(info.first_offset, seq as i64, "offsets follow the appends");
                seq += n;
                if rng.random_bool(0.3) {
                    // A backward move is refused (the high watermark is monotonic).
                    match log.set_high_watermark(rng.random_range(0..=seq as i64)) {
                        Ok(_) | Err(Error::HighWatermarkRegression { .. }) => {}
                        Err(e) => panic!("set_high_watermark: {e}"),
                    }
                }
                if rng.random_bool(0.01) {
                    log.roll().unwrap();
                }
            }
            stop.store(true, Ordering::Release);
            seq
        })
    };
    let maintenance = {
        let (log, stop) = (Arc::clone(&log), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut ticks = 0u64;
            while !stop.load(Ordering::Acquire) {
                log.tick(seglog::SystemClock.now_ms()).unwrap();
                if ticks.is_multiple_of(7) {
                    log.flush().unwrap();
                }
                ticks += 1;
                std::thread::sleep(Duration::from_millis(2));
            }
            ticks
        })
    };
    let readers: Vec<_> = (0..8)
        .map(|r| {
            let (log, stop) = (Arc::clone(&log), Arc::clone(&stop));
            let (reads, records) = (Arc::clone(&reads), Arc::clone(&records));
            let mut rng = StdRng::seed_from_u64(rng.random());
            std::thread::spawn(move || {
                let sequential = r % 2 == 0;
                let copy_out = r >= 4;
                let mut buf = Vec::new();
                let mut next = 0i64;
                while !stop.load(Ordering::Acquire) {
                    let isolation = if r % 4 < 2 {
                        Isolation::LogEnd
                    } else {
                        Isolation::ReadUncommitted
                    };
                    let from = if sequential {
                        next
                    } else {
                        let (start, end) = (log.log_start_offset(), log.log_end_offset());
                        if end <= start {
                            continue;
                        }
                        rng.random_range(start..end)
                    };
                    let max_bytes = rng.random_range(1..64 * 1024);
                    let context = format!("seed {seed}, reader {r}, read {from} ({isolation:?})");
                    // (bytes, their file position, the bound the read was planned against)
                    let fetched = if copy_out {
                        log.read_into(from, max_bytes, isolation, true, &mut buf)
                            .map(|fetch| {
                                let bound = match isolation {
                                    Isolation::ReadUncommitted => fetch.high_watermark,
                                    _ => fetch.log_end_offset,
                                };
                                (std::mem::take(&mut buf), fetch.position, bound)
                            })
                    } else {
                        log.read(from, max_bytes, isolation, true).map(|data| {
                            let bytes = data
                                .slice
                                .read_to_vec()
                                .unwrap_or_else(|e| panic!("{context}: reading the slice: {e}"));
                            let bound = match isolation {
                                Isolation::ReadUncommitted => data.high_watermark,
                                _ => data.log_end_offset,
                            };
                            (bytes, data.slice.position(), bound)
                        })
                    };
                    match fetched {
                        Ok((bytes, position, bound)) => {
                            let (after, checked) =
                                check_fetch(&bytes, position, from, bound, &context);
                            if copy_out {
                                buf = bytes;
                            }
                            if sequential && after > next {
                                next = after;
                            }
                            reads.fetch_add(1, Ordering::Relaxed);
                            records.fetch_add(checked, Ordering::Relaxed);
                            // Let the appender run (2 cores, 10 threads): a short pause
                            // after each read, a longer one at the end of the log.
                            let pause = if checked == 0 { 200 } else { 20 };
                            std::thread::sleep(Duration::from_micros(pause));
                        }
                        Err(Error::OffsetOutOfRange {
                            log_start_offset, ..
                        }) if log_start_offset > from => {
                            // Retention moved the start past us: a consumer resets.
                            next = log_start_offset;
                        }
                        Err(e) => panic!("{context}: {e}"),
                    }
                }
            })
        })
        .collect();
    let appended = appender.join().unwrap();
    let ticks = maintenance.join().unwrap();
    for reader in readers {
        reader.join().unwrap();
    }
    let (reads, records) = (
        reads.load(Ordering::Relaxed),
        records.load(Ordering::Relaxed),
    );
    eprintln!(
        "concurrency: {appended} records appended, {} segments now, log start {}, {ticks} ticks, \
         {reads} reads validated {records} records",
        log.segment_count(),
        log.log_start_offset()
    );
    assert!(
        reads > 100 && records > 1000,
        "seed {seed}: the readers barely ran"
    );
    assert!(
        log.log_start_offset() > 0,
        "seed {seed}: retention never ran"
    );
    // The survivors are intact after a clean reopen.
    log.close().unwrap();
    let dir = log.dir().to_path_buf();
    drop(log);
    let reopened = Log::open(&dir, small_config(8 * 1024)).unwrap();
    let contents = seglog_reliability::read_log(&reopened).unwrap();
    assert_eq!(contents.log_end_offset, appended as i64);
    for record in &contents.records {
        assert_eq!(record.id.seq, record.offset as u64);
    }
}
