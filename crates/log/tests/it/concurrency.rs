//! One appender, several readers, retention and rolls running: every record a reader sees is
//! the one that was appended at that offset, and nothing past the published end is seen.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use seglog::{Batches, Durability, Error, Isolation, LogConfig};

use crate::support::*;

fn value_for(offset: i64) -> Vec<u8> {
    format!("value-{offset}").into_bytes()
}

#[test]
fn appender_readers_retention_and_durable_appends_run_together() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let config = LogConfig {
        retention_bytes: 16 * 1024,
        file_delete_delay_ms: 0,
        ..small_config(2048)
    };
    let log = Arc::new(open(dir.path(), config, &clock));
    let done = Arc::new(AtomicBool::new(false));
    const TOTAL: i64 = 3000;

    let appender = {
        let log = Arc::clone(&log);
        std::thread::spawn(move || {
            let mut next = 0i64;
            while next < TOTAL {
                let n = 1 + (next % 3);
                let values: Vec<Vec<u8>> = (next..next + n).map(value_for).collect();
                let refs: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
                let durability = if next % 50 == 0 {
                    Durability::Fsync
                } else {
                    Durability::PageCache
                };
                let info = log
                    .append_with(&batch(T0 + next, &refs), durability)
                    .unwrap();
                assert_eq!(info.first_offset, next);
                next = info.last_offset + 1;
                log.set_high_watermark(next - (next % 7)).unwrap();
            }
        })
    };
    let maintenance = {
        let (log, done) = (Arc::clone(&log), Arc::clone(&done));
        std::thread::spawn(move || {
            let mut ticks = 0;
            while !done.load(Ordering::Acquire) {
                log.tick(T0 + ticks).unwrap();
                ticks += 1;
                std::thread::yield_now();
            }
        })
    };
    let readers: Vec<_> = (0..3)
        .map(|r| {
            let (log, done) = (Arc::clone(&log), Arc::clone(&done));
            std::thread::spawn(move || {
                let isolation = if r == 0 {
                    Isolation::ReadUncommitted
                } else {
                    Isolation::LogEnd
                };
                let mut checked = 0u64;
                while !done.load(Ordering::Acquire) {
                    let start = log.log_start_offset();
                    let data = match log.read(start, 4096, isolation, true) {
                        Ok(d) => d,
                        // Retention moved the start between the two calls.
                        Err(Error::OffsetOutOfRange { .. }) => continue,
                        Err(e) => panic!("{e}"),
                    };
                    let bound = match isolation {
                        Isolation::ReadUncommitted => data.high_watermark,
                        Isolation::LogEnd => data.log_end_offset,
                        Isolation::ReadCommitted => data.last_stable_offset,
                    };
                    let bytes = match data.slice.read_to_vec() {
                        Ok(b) => b,
                        Err(e) => panic!("slice read: {e}"),
                    };
                    for b in Batches::new(&bytes, 0) {
                        let b = b.unwrap();
                        b.ensure_valid().unwrap();
                        assert!(
                            b.header().last_offset < bound,
                            "read past the published end"
                        );
                        for rec in b.records(1 << 20) {
                            let rec = rec.unwrap();
                            assert_eq!(rec.value.as_deref(), Some(&value_for(rec.offset)[..]));
                            checked += 1;
                        }
                    }
                }
                checked
            })
        })
        .collect();
    appender.join().unwrap();
    done.store(true, Ordering::Release);
    maintenance.join().unwrap();
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    assert_eq!(log.log_end_offset(), TOTAL);
    assert!(log.log_start_offset() > 0, "retention ran");
    let vals = values(&log);
    assert_eq!(vals.last().unwrap().0, TOTAL - 1);
    for (offset, value) in vals {
        assert_eq!(value, value_for(offset));
    }
    log.close().unwrap();
}
