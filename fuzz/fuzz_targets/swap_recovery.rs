//! Fuzzes the loader's decision about an interrupted cleaner swap (Kafka's `.cleaned` /
//! `.swap` / `.deleted` files), in memory: arbitrary bytes as a leftover file among the files
//! of a small closed, compacted log that was cleaned once (read into memory once per process),
//! decided by `decide_leftovers` (the rule `Log::open` applies).
//!
//! Properties, besides "never panics":
//! - nothing foreign is installed: every record of an installed `.log.swap` is a record the
//!   log held, at its offset, and its batches are whole and valid;
//! - nothing intact is lost: every key's latest record is still in a segment the decision
//!   keeps (a latest tombstone may be gone);
//! - a live segment leaves only for an installed swap: when nothing is installed, every
//!   segment of the log stays under its live name;
//! - every segment the decision names is one of the files.
//!
//! The log-level properties (read-only and read-write opens succeed and serve the same
//! records, the log end does not move, offsets strictly increase) stay in the stable harness
//! (`reliability/tests/it/fuzz.rs`, `log_level::swap_recovery`): they need a log.
//!
//! Input: byte 0 picks the base offset of the leftover (a segment's base, one past it, the
//! log end, or beyond); byte 1 its kind (`.log.swap`, `.index.swap`, `.timeindex.swap`,
//! `.txnindex.swap`, `.log.cleaned`, `.log.deleted`); byte 2 its content (bit 0: the bytes
//! after the header, with their v2 CRCs recomputed; bit 1: a copy of a live segment's `.log`
//! (byte 3 picks which) followed by those bytes); the rest is the bytes.

#![no_main]

use std::collections::{BTreeMap, HashMap, HashSet};

use libfuzzer_sys::fuzz_target;
use seglog::{
    BatchBuilder, Batches, CleanupPolicy, HighWatermarkPolicy, Isolation, Log, LogConfig,
    LogOpenOptions, decide_leftovers,
};
use seglog_reliability::fuzz_support::{TemplateLog, fix_v2_crcs};

const T0: i64 = 1_700_000_000_000;

/// offset, key, value.
type Seen = (i64, Option<Vec<u8>>, Option<Vec<u8>>);

struct Template {
    /// Every file of the closed log: name, bytes.
    files: Vec<(String, Vec<u8>)>,
    bases: Vec<i64>,
    end: i64,
    /// Every record the log holds.
    records: HashSet<Seen>,
    /// The latest record of every key that is not a tombstone.
    latest: Vec<Seen>,
    /// The records of each live `.log`, by name.
    segment_records: HashMap<String, Vec<Seen>>,
}

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

/// 60 updates of 8 keys (every seventh a tombstone), cleaned once, then 16 more updates;
/// closed, and its files read into memory.
fn template() -> &'static Template {
    static TEMPLATE: std::sync::OnceLock<Template> = std::sync::OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let (mut bases, mut end, mut records) = (Vec::new(), 0, Vec::new());
        let log = TemplateLog::build(|dir| {
            // The cleaner cleans below the high watermark: a standalone log's is its end.
            let options = LogOpenOptions {
                high_watermark: HighWatermarkPolicy::LogEnd,
                ..LogOpenOptions::default()
            };
            let log = Log::open_with(dir, config(), options).map_err(std::io::Error::other)?;
            let append = |i: i64| {
                let mut builder = BatchBuilder::new(0);
                let key = [b'k', (i % 8) as u8];
                let value = [i as u8; 24];
                let value = (i % 7 != 6).then_some(&value[..]);
                builder.append(T0 + i, Some(&key), value, &[]);
                log.append(&builder.build().expect("build"))
                    .expect("append");
            };
            (0..60).for_each(append);
            log.roll().expect("roll");
            assert!(log.clean_at(T0).expect("clean").is_some(), "not cleaned");
            (60..76).for_each(append);
            records = log
                .owned_reader(0, Isolation::LogEnd)
                .until_caught_up()
                .map(|r| {
                    let r = r.expect("every record reads back");
                    (
                        r.record.offset,
                        r.record.key.map(|k| k.to_vec()),
                        r.record.value.map(|v| v.to_vec()),
                    )
                })
                .collect();
            bases = log.segments().iter().map(|s| s.base_offset).collect();
            end = log.log_end_offset();
            log.close().map_err(std::io::Error::other)
        })
        .expect("build the template");
        let mut files = Vec::new();
        for entry in std::fs::read_dir(log.dir()).expect("list the template") {
            let entry = entry.expect("list the template");
            let name = entry.file_name().into_string().expect("a UTF-8 name");
            files.push((
                name,
                std::fs::read(entry.path()).expect("read the template"),
            ));
        }
        files.sort();
        let mut latest: BTreeMap<Option<Vec<u8>>, Seen> = BTreeMap::new();
        for record in &records {
            latest.insert(record.1.clone(), record.clone());
        }
        let latest = latest.into_values().filter(|r| r.2.is_some()).collect();
        let segment_records = files
            .iter()
            .filter(|(name, _)| name.ends_with(".log"))
            .map(|(name, bytes)| (name.clone(), self::records(bytes).0))
            .collect();
        Template {
            files,
            bases,
            end,
            records: records.into_iter().collect(),
            latest,
            segment_records,
        }
    })
}

/// The records of the valid batches of `bytes` (up to the first invalid one), and whether
/// every byte is in a whole, valid batch.
fn records(bytes: &[u8]) -> (Vec<Seen>, bool) {
    let mut out = Vec::new();
    let mut batches = Batches::new(bytes, 0).validated();
    for batch in batches.by_ref() {
        let Ok(batch) = batch else {
            return (out, false);
        };
        for record in batch.records(1 << 20) {
            let Ok(r) = record else { return (out, false) };
            out.push((
                r.offset,
                r.key.map(|k| k.to_vec()),
                r.value.map(|v| v.to_vec()),
            ));
        }
    }
    let whole = batches.partial_tail_bytes() == 0;
    (out, whole)
}

fuzz_target!(|data: &[u8]| {
    let [at, kind, how, which, bytes @ ..] = data else {
        return;
    };
    let template = template();
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
        let copied = format!(
            "{:020}.log",
            template.bases[usize::from(*which) % template.bases.len()]
        );
        let live = template.files.iter().find(|(n, _)| *n == copied);
        content = live.expect("a live segment").1.clone();
    }
    let mut tail = bytes.to_vec();
    if how & 0b01 != 0 {
        fix_v2_crcs(&mut tail);
    }
    content.extend(tail);
    // The leftover's name is never a template file's (those are all live files).
    let leftover = format!("{base:020}.{suffix}");
    let files = template
        .files
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .chain([(leftover.as_str(), content.as_slice())]);

    let decision = decide_leftovers(files, T0);
    let mut kept: HashSet<&Seen> = HashSet::new();
    let mut leftover_records = Vec::new();
    for (segment_base, name) in &decision.segments {
        if let Some(records) = template.segment_records.get(name) {
            kept.extend(records);
            continue;
        }
        assert_eq!(*name, leftover, "segment {segment_base}: {name} is no file");
        let (records, whole) = records(&content);
        if name.ends_with(".swap") {
            assert!(
                whole,
                "an installed swap {name} holds a damaged or torn batch"
            );
            for record in &records {
                assert!(
                    template.records.contains(record),
                    "the installed {name} holds a record the log never held: {record:?}"
                );
            }
        }
        leftover_records = records;
    }
    kept.extend(&leftover_records);
    for record in &template.latest {
        assert!(
            kept.contains(record),
            "the latest record of key {:?} ({record:?}) is lost: {decision:?}",
            record.1
        );
    }
    if decision.installed.is_empty() {
        for &segment_base in &template.bases {
            assert_eq!(
                decision.segments.get(&segment_base),
                Some(&format!("{segment_base:020}.log")),
                "segment {segment_base} left without an installed swap: {decision:?}"
            );
        }
    }
});
