//! Fuzzes opening index files: arbitrary bytes as a `.index` or `.timeindex`, opened by
//! index-core (read-write and read-only), sanity-checked and looked up; and the same bytes
//! beside a valid `.log`, opened as a segment under the strict index policy.
//!
//! Properties, besides "never panics":
//! - an existing file keeps its length; `entries = len / entry size`;
//! - lookups return Kafka's fallback or an entry at or below the target; when the sanity
//!   check passes, they equal a linear-scan oracle;
//! - a segment opened over a damaged index finds every batch of its `.log` by offset and by
//!   timestamp (the index is either consistent or rebuilt).
//!
//! Input: byte 0 picks the file (even: `.index`, odd: `.timeindex`); the rest is its content.

#![no_main]

use libfuzzer_sys::fuzz_target;
use seglog_index_core::{OffsetIndex, OffsetPosition, TimeIndex, TimestampOffset};
use seglog_records::BatchBuilder;
use seglog_segment::{SegmentOpenOptions, Segment, SegmentConfig};

const BASE_OFFSET: i64 = 100;
const T0: i64 = 1_700_000_000_000;

/// Targets to look up: every 8 bytes of the input as a big-endian number, plus edges.
fn targets(bytes: &[u8], base: i64) -> Vec<i64> {
    let mut out = vec![i64::MIN, -1, 0, base, base + 1, i64::MAX];
    out.extend(bytes.chunks(8).take(32).map(|c| {
        let mut buf = [0u8; 8];
        buf[..c.len()].copy_from_slice(c);
        i64::from_be_bytes(buf)
    }));
    out
}

fn offset_index(dir: &std::path::Path, bytes: &[u8]) {
    let path = dir.join("raw.index");
    std::fs::write(&path, bytes).expect("write");
    let index = OffsetIndex::open(&path, BASE_OFFSET, 4096).expect("open an existing index");
    assert_eq!(index.file_len(), bytes.len() as u64, "open changed the length");
    assert_eq!(index.entries(), bytes.len() / 8);
    let sane = index.sanity_check(Some(u64::MAX >> 1)).is_ok();
    let entries: Vec<OffsetPosition> = (0..index.entries()).filter_map(|n| index.entry(n)).collect();
    for target in targets(bytes, BASE_OFFSET) {
        let found = index.lookup(target);
        let fallback = OffsetPosition { offset: BASE_OFFSET, position: 0 };
        assert!(found == fallback || found.offset <= target, "lookup({target}) = {found:?}");
        if sane {
            let oracle = entries.iter().rev().find(|e| e.offset <= target).copied();
            assert_eq!(found, oracle.unwrap_or(fallback), "lookup({target})");
        }
    }
    drop(index);
    let read_only = OffsetIndex::open_read_only(&path, BASE_OFFSET).expect("open read-only");
    assert_eq!(read_only.entries(), bytes.len() / 8);
}

fn time_index(dir: &std::path::Path, bytes: &[u8]) {
    let path = dir.join("raw.timeindex");
    std::fs::write(&path, bytes).expect("write");
    let index = TimeIndex::open(&path, BASE_OFFSET, 4096).expect("open an existing index");
    assert_eq!(index.file_len(), bytes.len() as u64, "open changed the length");
    assert_eq!(index.entries(), bytes.len() / 12);
    let sane = index.sanity_check(None).is_ok();
    let entries: Vec<TimestampOffset> = (0..index.entries()).filter_map(|n| index.entry(n)).collect();
    for target in targets(bytes, T0) {
        let found = index.lookup(target);
        let fallback = TimestampOffset { timestamp_ms: -1, offset: BASE_OFFSET };
        assert!(found == fallback || found.timestamp_ms <= target, "lookup({target}) = {found:?}");
        if sane {
            let oracle = entries.iter().rev().find(|e| e.timestamp_ms <= target).copied();
            assert_eq!(found, oracle.unwrap_or(fallback), "lookup({target})");
        }
    }
    drop(index);
    let read_only = TimeIndex::open_read_only(&path, BASE_OFFSET).expect("open read-only");
    assert_eq!(read_only.entries(), bytes.len() / 12);
}

/// A valid `.log` of 12 batches (offsets 100-135, timestamps T0 + offset) beside `bytes` as
/// its index; every batch must be found.
fn segment(dir: &std::path::Path, time: bool, bytes: &[u8]) {
    let mut log = Vec::new();
    for b in 0..12i64 {
        let mut builder = BatchBuilder::new(BASE_OFFSET + b * 3);
        for r in 0..3 {
            let offset = BASE_OFFSET + b * 3 + r;
            builder.append(T0 + offset, None, Some(&[b as u8; 40]), &[]);
        }
        log.extend_from_slice(&builder.build().expect("build"));
    }
    let name = |ext: &str| dir.join(format!("{BASE_OFFSET:020}.{ext}"));
    std::fs::write(name("log"), &log).expect("write");
    std::fs::write(name(if time { "timeindex" } else { "index" }), bytes).expect("write");
    let config = SegmentConfig {
        index_interval_bytes: 100,
        max_index_bytes: 4096,
        ..SegmentConfig::default()
    };
    let (segment, _) = Segment::open(dir, BASE_OFFSET, &config, SegmentOpenOptions::default())
        .expect("a segment with a damaged index opens");
    assert_eq!(segment.size(), log.len() as u64, "a valid .log lost bytes");
    for offset in BASE_OFFSET..BASE_OFFSET + 36 {
        let found = segment.translate_offset(offset, 0).expect("translate").expect("found");
        assert!(found.offset >= offset && found.offset < offset + 3, "offset {offset}: {found:?}");
        let by_time = segment
            .find_offset_by_timestamp(T0 + offset, BASE_OFFSET)
            .expect("time lookup")
            .expect("found by time");
        assert_eq!(by_time.offset, offset, "timestamp lookup");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, bytes)) = data.split_first() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let time = selector % 2 == 1;
    if time {
        time_index(dir.path(), bytes);
    } else {
        offset_index(dir.path(), bytes);
    }
    segment(dir.path(), time, bytes);
});
