//! Fuzzes the loader's completion of an interrupted cleaner swap (Kafka's `.cleaned` /
//! `.swap` / `.deleted` files): arbitrary bytes as a leftover file beside a small closed,
//! compacted log that was cleaned once, which is then opened read-only and read-write.
//!
//! Properties, besides "never panics":
//! - both opens succeed and serve the same records (a read-only open resolves what a
//!   read-write open would);
//! - nothing intact is lost: every key's latest record is still served (a latest tombstone
//!   may be gone), and the log end does not move;
//! - nothing foreign is served: every record served is one the log held, at its offset;
//! - offsets strictly increase.
//!
//! Input: byte 0 picks the base offset of the leftover (a segment's base, one past it, the
//! log end, or beyond); byte 1 its kind (`.log.swap`, `.index.swap`, `.timeindex.swap`,
//! `.txnindex.swap`, `.log.cleaned`, `.log.deleted`); byte 2 its content (bit 0: the bytes
//! after the header, with their v2 CRCs recomputed; bit 1: a copy of a live segment's `.log`
//! (byte 3 picks which) followed by those bytes); the rest is the bytes.

#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use seglog::{BatchBuilder, CleanupPolicy, HighWatermarkPolicy, Isolation, Log, LogConfig, LogOpenOptions};

const T0: i64 = 1_700_000_000_000;

type Seen = (i64, Option<Vec<u8>>, Option<Vec<u8>>);

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 300,
        cleanup_policy: CleanupPolicy::Compact,
        file_delete_delay_ms: 0,
        segment_index_bytes: 4096,
        message_timestamp_after_max_ms: i64::MAX,
        message_timestamp_before_max_ms: i64::MAX,
        ..LogConfig::default()
    }
}

struct Template {
    dir: std::path::PathBuf,
    bases: Vec<i64>,
    end: i64,
    records: Vec<Seen>,
    _tmp: tempfile::TempDir,
}

fn records(log: &Log) -> Vec<Seen> {
    log.owned_reader(0, Isolation::LogEnd)
        .until_caught_up()
        .map(|r| {
            let r = r.expect("every record reads back");
            (
                r.record.offset,
                r.record.key.map(|k| k.to_vec()),
                r.record.value.map(|v| v.to_vec()),
            )
        })
        .collect()
}

/// Recomputes the CRC-32C of every whole v2 batch in `log`, walking the length fields.
fn fix_crcs(log: &mut [u8]) {
    let mut position = 0usize;
    while position + 61 <= log.len() {
        let length = i32::from_be_bytes(log[position + 8..position + 12].try_into().unwrap());
        let Ok(length) = usize::try_from(length) else {
            return;
        };
        let end = position + 12 + length;
        if length < 49 || end > log.len() {
            return;
        }
        if log[position + 16] == 2 {
            let crc = seglog_records::crc32c(&log[position + 21..end]);
            log[position + 17..position + 21].copy_from_slice(&crc.to_be_bytes());
        }
        position = end;
    }
}

/// 60 updates of 8 keys (every seventh a tombstone), cleaned once, then 16 more updates.
fn template() -> &'static Template {
    static TEMPLATE: std::sync::OnceLock<Template> = std::sync::OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let tmp = tempfile::tempdir().expect("a temp dir");
        let dir = tmp.path().join("t-0");
        // The cleaner cleans below the high watermark: a standalone log's is its end.
        let options = LogOpenOptions {
            high_watermark: HighWatermarkPolicy::LogEnd,
            ..LogOpenOptions::default()
        };
        let log = Log::open_with(&dir, config(), options).expect("open a fresh log");
        let append = |i: i64| {
            let mut builder = BatchBuilder::new(0);
            let key = [b'k', (i % 8) as u8];
            let value = [i as u8; 24];
            let value = (i % 7 != 6).then_some(&value[..]);
            builder.append(T0 + i, Some(&key), value, &[]);
            log.append(&builder.build().expect("build")).expect("append");
        };
        (0..60).for_each(append);
        log.roll().expect("roll");
        let cleaned = log.clean_at(T0).expect("clean");
        assert!(cleaned.is_some(), "the template was not cleaned");
        (60..76).for_each(append);
        let records = records(&log);
        let bases = log.segments().iter().map(|s| s.base_offset).collect();
        let end = log.log_end_offset();
        log.close().expect("close");
        Template {
            dir,
            bases,
            end,
            records,
            _tmp: tmp,
        }
    })
}

fn check(log: &Log, template: &Template, what: &str) -> Vec<Seen> {
    assert_eq!(log.log_end_offset(), template.end, "{what}: the log end moved");
    let served = records(log);
    for pair in served.windows(2) {
        assert!(pair[0].0 < pair[1].0, "{what}: offsets do not increase: {pair:?}");
    }
    for record in &served {
        assert!(
            template.records.contains(record),
            "{what}: a record the log never held is served: {record:?}"
        );
    }
    let mut latest: BTreeMap<&Option<Vec<u8>>, &Seen> = BTreeMap::new();
    for record in &template.records {
        latest.insert(&record.1, record);
    }
    for (key, record) in latest {
        assert!(
            record.2.is_none() || served.contains(record),
            "{what}: the latest record of key {key:?} ({record:?}) is lost"
        );
    }
    served
}

fuzz_target!(|data: &[u8]| {
    let [at, kind, how, which, bytes @ ..] = data else {
        return;
    };
    let template = template();
    let tmp = tempfile::tempdir().expect("a temp dir");
    let dir = tmp.path().join("t-0");
    std::fs::create_dir(&dir).expect("mkdir");
    for entry in std::fs::read_dir(&template.dir).expect("list the template") {
        let entry = entry.expect("list the template");
        std::fs::copy(entry.path(), dir.join(entry.file_name())).expect("copy");
    }
    let mut candidates = Vec::new();
    for &base in &template.bases {
        candidates.extend([base, base + 1]);
    }
    candidates.extend([template.end, template.end + 5]);
    let base = candidates[usize::from(*at) % candidates.len()];
    let suffix = [
        "log.swap",
        "index.swap",
        "timeindex.swap",
        "txnindex.swap",
        "log.cleaned",
        "log.deleted",
    ][usize::from(*kind) % 6];
    let mut content = Vec::new();
    if how & 0b10 != 0 {
        let copied = template.bases[usize::from(*which) % template.bases.len()];
        content = std::fs::read(dir.join(format!("{copied:020}.log"))).expect("read a segment");
    }
    let mut tail = bytes.to_vec();
    if how & 0b01 != 0 {
        fix_crcs(&mut tail);
    }
    content.extend(tail);
    std::fs::write(dir.join(format!("{base:020}.{suffix}")), &content).expect("write");

    let read_only = {
        let log = Log::open_read_only(&dir, config()).expect("a read-only open");
        check(&log, template, "read-only")
    };
    let log = Log::open(&dir, config()).expect("a read-write open");
    let read_write = check(&log, template, "read-write");
    assert_eq!(read_only, read_write, "the read-only open served another log");
});
