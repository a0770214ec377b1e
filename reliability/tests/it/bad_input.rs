//! Bad input: invalid configs, malformed and hostile batches, out-of-order and overlapping
//! offsets, out-of-range reads and offsets, and a second process opening the same directory.
//! Each gives a typed, clear error and leaves the log intact: same offsets, same records, not
//! poisoned (the next good append works), and a reopen serves the same.

use std::path::Path;
use std::process::Command;

use seglog::{AppendErrorKind, BatchBuilder, Compression, Error, Isolation, Log, LogConfig};
use seglog_reliability::{RecordId, build_batch, read_log, small_config};

use crate::support::{fill, seeded_rng};

const CHILD: &str = env!("CARGO_BIN_EXE_crash-child");

fn one(stream: u64, seq: u64) -> Vec<u8> {
    build_batch(&[RecordId { stream, seq }], Compression::None).unwrap()
}

/// Rewrites the CRC of the v2 batch at the start of `bytes` after a deliberate edit.
fn fix_crc(bytes: &mut [u8]) {
    let crc = seglog_records::crc32c(&bytes[21..]);
    bytes[17..21].copy_from_slice(&crc.to_be_bytes());
}

/// A log with 60 records; returns it with its contents. The high watermark stays at 0
/// (`Manual`): the out-of-range checks move it themselves.
fn filled(dir: &Path, config: LogConfig) -> (Log, seglog_reliability::LogContents) {
    let log = Log::open_with(dir, config, crate::support::manual()).unwrap();
    let (mut rng, _) = seeded_rng("bad_input");
    fill(&log, 1, &mut 0, 60, &mut rng);
    let contents = read_log(&log).unwrap();
    (log, contents)
}

/// The log still serves exactly `before` and accepts a good append.
fn assert_intact(log: &Log, before: &seglog_reliability::LogContents, context: &str) {
    assert_eq!(
        &read_log(log).unwrap(),
        before,
        "{context}: the log changed"
    );
    let info = log
        .append(&one(2, before.log_end_offset as u64))
        .unwrap_or_else(|e| panic!("{context}: a good append after it failed: {e}"));
    assert_eq!(info.first_offset, before.log_end_offset, "{context}");
    log.truncate_to(before.log_end_offset).unwrap();
}

#[test]
fn invalid_configs_are_refused_before_touching_the_disk() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, LogConfig)> = vec![
        (
            "segment.bytes",
            LogConfig {
                segment_bytes: 13,
                ..LogConfig::default()
            },
        ),
        (
            "segment.bytes",
            LogConfig {
                segment_bytes: i32::MIN,
                ..LogConfig::default()
            },
        ),
        (
            "segment.ms",
            LogConfig {
                segment_ms: 0,
                ..LogConfig::default()
            },
        ),
        (
            "segment.jitter.ms",
            LogConfig {
                segment_jitter_ms: -1,
                ..LogConfig::default()
            },
        ),
        (
            "segment.index.bytes",
            LogConfig {
                segment_index_bytes: 11,
                ..LogConfig::default()
            },
        ),
        (
            "index.interval.bytes",
            LogConfig {
                index_interval_bytes: -1,
                ..LogConfig::default()
            },
        ),
        (
            "retention.ms",
            LogConfig {
                retention_ms: -2,
                ..LogConfig::default()
            },
        ),
        (
            "flush.messages",
            LogConfig {
                flush_messages: 0,
                ..LogConfig::default()
            },
        ),
        (
            "flush.ms",
            LogConfig {
                flush_ms: -1,
                ..LogConfig::default()
            },
        ),
        (
            "file.delete.delay.ms",
            LogConfig {
                file_delete_delay_ms: i64::MIN,
                ..LogConfig::default()
            },
        ),
        (
            "max.message.bytes",
            LogConfig {
                max_message_bytes: -1,
                ..LogConfig::default()
            },
        ),
        (
            "message.timestamp.before.max.ms",
            LogConfig {
                message_timestamp_before_max_ms: -1,
                ..LogConfig::default()
            },
        ),
        (
            "message.timestamp.after.max.ms",
            LogConfig {
                message_timestamp_after_max_ms: -1,
                ..LogConfig::default()
            },
        ),
    ];
    for (i, (key, config)) in cases.into_iter().enumerate() {
        let dir = tmp.path().join(format!("c{i}")).join("t-0");
        match Log::open(&dir, config) {
            Err(Error::InvalidConfig { key: got, .. }) => assert_eq!(got, key),
            other => panic!("{key}: expected InvalidConfig, got {other:?}"),
        }
        assert!(
            !dir.exists(),
            "{key}: an invalid config created {}",
            dir.display()
        );
    }
    let mut config = LogConfig::default();
    for (key, value) in [
        ("segment.bytes", "abc"),
        ("segment.bytes", "99999999999999999999"),
        ("segment.bytes", "-5"),
        ("retention.ms", "-2"),
        ("preallocate", "yes please"),
        ("message.timestamp.type", "WallClock"),
        ("log.retention.hours", "1.5"),
    ] {
        let error = config
            .set(key, value)
            .expect_err(&format!("{key}={value} accepted"));
        assert!(
            matches!(error, Error::InvalidConfig { .. }),
            "{key}={value}: {error:?}"
        );
        assert!(
            error.to_string().contains(value.trim()),
            "{key}={value}: {error}"
        );
    }
    assert_eq!(
        config,
        LogConfig::default(),
        "failed sets changed the config"
    );
    assert!(matches!(
        config.set("no.such.key", "1"),
        Err(Error::UnknownConfig { .. })
    ));
    assert!(LogConfig::from_pairs(["segment.bytes"]).is_err());
    assert!(LogConfig::from_pairs(["segment.bytes=14", "retention.ms=-1"]).is_ok());
}

#[test]
fn hostile_leader_appends_are_refused_and_the_log_stays_intact() {
    let tmp = tempfile::tempdir().unwrap();
    let mut config = small_config(8192);
    config.max_message_bytes = 2000;
    config.message_timestamp_after_max_ms = 3_600_000;
    let (log, before) = filled(&tmp.path().join("t-0"), config);
    let good = one(3, 0);

    let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
    cases.push(("empty", Vec::new()));
    cases.push(("eleven bytes", good[..11].to_vec()));
    cases.push(("torn batch", good[..good.len() - 1].to_vec()));
    let mut trailing = good.clone();
    trailing.extend_from_slice(&[0; 20]);
    cases.push(("trailing bytes", trailing));
    let mut bad_crc = good.clone();
    let last = bad_crc.len() - 1;
    bad_crc[last] ^= 1;
    cases.push(("bad crc", bad_crc));
    for magic in [0u8, 1, 3, 0xff] {
        let mut wrong = good.clone();
        wrong[16] = magic;
        cases.push(("wrong magic", wrong));
    }
    let mut negative_size = good.clone();
    negative_size[8..12].copy_from_slice(&(-1i32).to_be_bytes());
    cases.push(("negative size", negative_size));
    let mut huge_size = good.clone();
    huge_size[8..12].copy_from_slice(&i32::MAX.to_be_bytes());
    cases.push(("huge size", huge_size));
    let big: Vec<RecordId> = (0..40).map(|seq| RecordId { stream: 4, seq }).collect();
    cases.push((
        "batch over max.message.bytes",
        build_batch(&big, Compression::None).unwrap(),
    ));
    let mut control = BatchBuilder::new(0)
        .control(true)
        .transactional(true)
        .producer(1, 0, -1);
    control.append(
        seglog_reliability::T0_MS,
        Some(&[0, 0, 0, 0]),
        Some(&[0, 0, 0, 0, 0, 0]),
        &[],
    );
    cases.push(("control batch", control.build().unwrap().to_vec()));
    let mut count = good.clone();
    count[57..61].copy_from_slice(&5i32.to_be_bytes());
    fix_crc(&mut count);
    cases.push(("record count differs from lastOffsetDelta", count));
    let mut negative_count = good.clone();
    negative_count[57..61].copy_from_slice(&(-1i32).to_be_bytes());
    fix_crc(&mut negative_count);
    cases.push(("negative record count", negative_count));
    let mut delta = good.clone();
    delta[23..27].copy_from_slice(&(-1i32).to_be_bytes());
    fix_crc(&mut delta);
    cases.push(("negative lastOffsetDelta", delta));
    let mut future = BatchBuilder::new(0);
    future.append(i64::MAX - 1, Some(b"k"), Some(b"v"), &[]);
    cases.push((
        "timestamp far in the future",
        future.build().unwrap().to_vec(),
    ));
    let mut codec = good.clone();
    codec[22] |= 0x07; // compression codec 7
    fix_crc(&mut codec);
    cases.push(("unknown codec", codec));

    for (name, bytes) in cases {
        let error = log.append(&bytes).expect_err(&format!("{name}: accepted"));
        assert!(
            matches!(error, Error::InvalidAppend { .. } | Error::Records(_)),
            "{name}: expected a typed append error, got {error:?}"
        );
        assert!(!error.to_string().is_empty());
        assert_intact(&log, &before, name);
    }
    // Too large for a segment at all.
    let mut config = small_config(1024);
    config.max_message_bytes = i32::MAX;
    let dir = tmp.path().join("small").join("t-0");
    let small = Log::open(&dir, config).unwrap();
    let error = small
        .append(&build_batch(&big, Compression::None).unwrap())
        .unwrap_err();
    assert!(
        matches!(
            error,
            Error::InvalidAppend {
                kind: AppendErrorKind::AppendTooLarge { .. }
            }
        ),
        "{error:?}"
    );
    assert_eq!(small.log_end_offset(), 0);
}

/// Follower appends keep their offsets; ones that go backwards or overlap are refused.
#[test]
fn out_of_order_and_overlapping_follower_offsets_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (log, before) = filled(&tmp.path().join("t-0"), small_config(8192));
    let end = before.log_end_offset;
    let at = |base: i64, n: u64| -> Vec<u8> {
        let mut builder = BatchBuilder::new(base);
        for seq in 0..n {
            let id = RecordId { stream: 5, seq };
            builder.append(id.timestamp_ms(), Some(&id.key()), Some(&id.value()), &[]);
        }
        builder.build().unwrap().to_vec()
    };
    let mut out_of_order = at(end + 10, 2);
    out_of_order.extend(at(end + 5, 2));
    let mut repeated = at(end, 2);
    repeated.extend(at(end, 2));
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("overlaps the log end", at(end - 1, 2)),
        ("far below the log end", at(0, 1)),
        ("negative base offset", at(-10, 1)),
        ("out of order", out_of_order),
        ("same offsets twice", repeated),
        ("last offset overflows i64", at(i64::MAX - 1, 3)),
    ];
    for (name, bytes) in cases {
        let error = log
            .append_as_follower(&bytes)
            .expect_err(&format!("{name}: accepted"));
        assert!(
            matches!(
                error,
                Error::InvalidAppend { .. } | Error::Records(_) | Error::Segment(_)
            ),
            "{name}: {error:?}"
        );
        assert_intact(&log, &before, name);
    }
}

#[test]
fn out_of_range_reads_and_offsets_give_typed_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let (log, before) = filled(&tmp.path().join("t-0"), small_config(8192));
    let end = before.log_end_offset;
    for offset in [-1, i64::MIN, end + 1, i64::MAX] {
        match log.read(offset, 1024, Isolation::LogEnd, true) {
            Err(Error::OffsetOutOfRange {
                offset: got,
                log_start_offset: 0,
                log_end_offset,
            }) => {
                assert_eq!((got, log_end_offset), (offset, end));
            }
            other => panic!("read {offset}: {other:?}"),
        }
    }
    assert!(
        log.read(end, 1024, Isolation::LogEnd, true)
            .unwrap()
            .slice
            .is_empty()
    );
    assert!(
        log.read(0, 0, Isolation::LogEnd, false)
            .unwrap()
            .slice
            .is_empty()
    );
    for offset in [end + 1, -2, i64::MIN] {
        assert!(
            matches!(
                log.delete_records_before(offset),
                Err(Error::OffsetOutOfRange { .. })
            ),
            "delete_records_before({offset})"
        );
    }
    assert_eq!(log.set_high_watermark(i64::MIN).unwrap(), 0);
    assert_eq!(log.set_high_watermark(i64::MAX).unwrap(), end);
    assert_intact(&log, &before, "out-of-range calls");
}

/// Regression (fixed; was a bug in seglog `maintenance.rs` `truncate_to` / `truncate_fully_and_start_at`): a negative
/// offset is not refused: `truncate_to(-5)` deletes every segment and restarts the log at
/// offset -5 (a segment file named with a minus sign), where Kafka only ever truncates to
/// valid offsets. Expected: a typed error, the log intact.
#[test]
fn truncating_to_a_negative_offset_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (log, before) = filled(&tmp.path().join("t-0"), small_config(8192));
    let result = log.truncate_to(-5);
    assert!(
        result.is_err(),
        "truncate_to(-5) was accepted: log {}..{}, segments {:?}",
        log.log_start_offset(),
        log.log_end_offset(),
        log.segments()
            .iter()
            .map(|s| s.path.clone())
            .collect::<Vec<_>>()
    );
    assert_intact(&log, &before, "truncate_to(-5)");
}

#[test]
fn a_second_process_opening_the_directory_gets_a_lock_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t-0");
    let (log, before) = filled(&dir, seglog_reliability::child::config());
    // Same process.
    assert!(matches!(
        Log::open(&dir, seglog_reliability::child::config()),
        Err(Error::Locked { .. })
    ));
    // Another process.
    let output = Command::new(CHILD)
        .args(["open", &dir.display().to_string()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        stdout.trim(),
        "locked",
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_intact(&log, &before, "second open");
    log.close().unwrap();
    drop(log);
    // Once closed, the other process may open it.
    let output = Command::new(CHILD)
        .args(["open", &dir.display().to_string()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.starts_with("opened"), "{stdout}");
    // A read-only open never needs the lock.
    let holder = Log::open(&dir, seglog_reliability::child::config()).unwrap();
    let reader = Log::open_read_only(&dir, seglog_reliability::child::config()).unwrap();
    assert_eq!(read_log(&reader).unwrap(), read_log(&holder).unwrap());
}
