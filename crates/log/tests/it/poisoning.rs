//! After a failed write or fsync the log refuses writes until reopened, and recovers then.

use seglog::Error;
use seglog_faults::{FaultInjector, FaultKind};

use crate::support::*;

#[test]
fn failed_write_poisons_until_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let faults = FaultInjector::new(dir.path());
    let clock = clock();
    let log = open_with_faults(dir.path(), small_config(1 << 20), &clock, &faults);
    log.append(&numbered(T0, "ok", 2)).unwrap();
    faults.fail_nth_write(1, FaultKind::Enospc);
    assert!(log.append(&numbered(T0, "bad", 2)).is_err());
    faults.clear();
    let e = log.append(&numbered(T0, "after", 1)).unwrap_err();
    assert!(matches!(e, Error::Poisoned { .. }), "{e}");
    // Readers still see what was published.
    assert_eq!(values(&log).len(), 2);
    assert!(
        log.close().is_err(),
        "no clean-shutdown marker after a failure"
    );
    drop(log);
    let log = open(dir.path(), small_config(1 << 20), &clock);
    assert!(!log.load_report().had_clean_shutdown);
    assert_eq!(values(&log).len(), 2);
    assert_eq!(
        log.append(&numbered(T0, "again", 1)).unwrap().first_offset,
        2
    );
}

#[test]
fn failed_fsync_poisons_durable_appends() {
    let (_dir, faults, log) = fresh_with_faults(small_config(1 << 20));
    log.append_durable(&numbered(T0, "ok", 1)).unwrap();
    faults.fail_nth_sync(1, FaultKind::Eio);
    assert!(log.append_durable(&numbered(T0, "bad", 1)).is_err());
    faults.clear();
    assert!(matches!(
        log.append(&numbered(T0, "x", 1)),
        Err(Error::Poisoned { .. })
    ));
    assert!(matches!(log.flush(), Err(Error::Poisoned { .. })));
}

#[test]
fn background_ticker_applies_retention() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let config = seglog::LogConfig {
        retention_ms: 1000,
        file_delete_delay_ms: 0,
        ..small_config(1024)
    };
    let log = std::sync::Arc::new(open(dir.path(), config, &clock));
    append_numbered(&log, 30, "r", 2);
    log.set_high_watermark(log.log_end_offset()).unwrap();
    clock.advance(10_000);
    let ticker = log.spawn_ticker(std::time::Duration::from_millis(5));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while log.log_start_offset() != 60 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    ticker.stop();
    assert_eq!(log.log_start_offset(), 60);
    assert_eq!(log.segment_count(), 1);
}
