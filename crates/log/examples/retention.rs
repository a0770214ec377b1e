//! Retention: a log of small segments trimmed by size and then by age, driven by `tick(now)`.
//!
//! Retention deletes whole segments, oldest first, and only below the high watermark (here it
//! follows the log end: `HighWatermarkPolicy::LogEnd`, the default, spelled out; with `Manual`,
//! a replication layer's policy, nothing is deleted until someone moves it). `retention.bytes` keeps *at least* the limit: a segment
//! goes only while the log without it still holds that many bytes. `retention.ms` compares each
//! segment's largest record timestamp with the `now` passed to `tick`. Deleted segments are
//! renamed `.deleted` and unlinked `file.delete.delay.ms` after that `now`. The active segment
//! is never deleted by size; by age it is rolled first, so the log keeps its end offset.
//!
//! `cargo run -p seglog --example retention`

use seglog::{BatchBuilder, HighWatermarkPolicy, Log, LogConfig, LogOpenOptions};

const HOUR_MS: i64 = 3_600_000;
const T0: i64 = 1_700_000_000_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    let config = LogConfig {
        segment_bytes: 4096,
        retention_bytes: 16 * 1024,
        retention_ms: 24 * HOUR_MS,
        file_delete_delay_ms: 0,
        ..LogConfig::default()
    };
    let options = LogOpenOptions {
        high_watermark: HighWatermarkPolicy::LogEnd,
        ..LogOpenOptions::default()
    };
    let log = Log::open_with(tmp.path().join("events-0"), config, options)?;
    // 100 batches of 10 records, one batch a minute, about 40 KiB in segments of 4 KiB.
    for minute in 0..100 {
        let mut batch = BatchBuilder::new(0);
        for i in 0..10 {
            let value = format!("event {minute}-{i} ..............................");
            batch.append(T0 + minute * 60_000, None, Some(value.as_bytes()), &[]);
        }
        log.append(&batch.build()?)?;
    }
    let bytes = |log: &Log| log.segments().iter().map(|s| s.size_bytes).sum::<u64>();
    println!(
        "before: {} segments, {} bytes, offsets {}..{}",
        log.segments().len(),
        bytes(&log),
        log.log_start_offset(),
        log.log_end_offset()
    );

    // By size: just after the last append, nothing is old enough for retention.ms.
    let report = log.tick(T0 + 100 * 60_000)?;
    println!(
        "by size: deleted {} segments; log start offset {}, {} bytes left",
        report.retention.deleted.len(),
        report.retention.log_start_offset,
        bytes(&log)
    );
    assert!(
        bytes(&log) >= 16 * 1024,
        "retention.bytes keeps at least the limit"
    );
    assert_eq!(log.log_start_offset(), report.retention.log_start_offset);

    // By age: two days later every segment is older than retention.ms. The active one is
    // rolled and deleted too; the log keeps its end offset and starts there.
    let end = log.log_end_offset();
    let report = log.tick(T0 + 48 * HOUR_MS)?;
    println!(
        "by age: deleted {} segments (rolled the active one: {}); log start offset {}, end {}",
        report.retention.deleted.len(),
        report.retention.rolled,
        log.log_start_offset(),
        log.log_end_offset()
    );
    assert_eq!(log.log_start_offset(), end);
    assert_eq!(log.log_end_offset(), end);
    log.close()?;
    Ok(())
}
