//! Fuzzes segment recovery: arbitrary bytes as a `.log`, recovered in memory (read-only) and
//! on disk (read-write).
//!
//! Properties, besides "never panics":
//! - recovery either succeeds or reports an offset overflow (Kafka's signal to split);
//! - both modes keep the same number of bytes, a prefix of the input made of whole batches
//!   that all pass CRC validation, and the file is cut to exactly that prefix;
//! - the rebuilt indexes are trusted by a plain reopen (no second rebuild), and every kept
//!   batch is found again by offset when the batches' offsets increase.
//!
//! Input: the first byte picks the index interval (x16 bytes); the rest is the `.log`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use seglog_records::Batches;
use seglog_segment::{OpenMode, SegmentOpenOptions, Segment, SegmentConfig};

const BASE_OFFSET: i64 = 1_000;

fuzz_target!(|data: &[u8]| {
    let Some((&knob, log)) = data.split_first() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join(format!("{BASE_OFFSET:020}.log"));
    std::fs::write(&path, log).expect("write the .log");
    let entries_needed = (log.len() / 14 + 2) as u32;
    let config = SegmentConfig {
        index_interval_bytes: u32::from(knob) * 16,
        max_index_bytes: (entries_needed * 12).max(4096),
        ..SegmentConfig::default()
    };
    let recover = |mode| {
        Segment::open(
            dir.path(),
            BASE_OFFSET,
            &config,
            SegmentOpenOptions {
                mode,
                recover: true,
                ..SegmentOpenOptions::default()
            },
        )
    };
    let read_only = match recover(OpenMode::ReadOnly) {
        Ok((_, report)) => report.recovery.expect("a requested recovery ran"),
        Err(seglog_segment::Error::OffsetOverflow { .. }) => {
            // The loader splits such a segment; nothing was written.
            assert_eq!(std::fs::read(&path).expect("read back"), log);
            return;
        }
        Err(e) => panic!("read-only recovery failed: {e}"),
    };
    assert!(!read_only.on_disk);
    let (segment, report) = recover(OpenMode::ReadWrite)
        .unwrap_or_else(|e| panic!("read-write recovery failed after read-only succeeded: {e}"));
    let report = report.recovery.expect("a requested recovery ran");
    assert_eq!(report.valid_bytes, read_only.valid_bytes, "modes disagree");
    assert_eq!(report.batches, read_only.batches, "modes disagree");
    assert_eq!(report.valid_bytes + report.truncated_bytes, log.len() as u64);
    assert_eq!(segment.size(), report.valid_bytes);
    let kept = &log[..report.valid_bytes as usize];
    assert_eq!(std::fs::read(&path).expect("read back"), kept, "not cut to the valid prefix");
    let mut batches = Batches::new(kept, 0).validated();
    let headers: Vec<_> = batches
        .by_ref()
        .map(|b| *b.expect("a kept batch is invalid").header())
        .collect();
    assert_eq!(headers.len() as u64, report.batches);
    assert_eq!(batches.partial_tail_bytes(), 0, "the kept prefix ends in a partial batch");
    drop(segment);

    // The rebuilt indexes are trusted as they are.
    let (segment, reopened) = Segment::open(dir.path(), BASE_OFFSET, &config, SegmentOpenOptions::default())
        .expect("reopen after recovery");
    assert_eq!(reopened.rebuilt, None, "recovered indexes were not trusted");
    let increasing = headers
        .windows(2)
        .all(|w| w[0].last_offset < w[1].base_offset.unwrap_or(w[1].last_offset))
        && headers.first().is_none_or(|h| h.base_offset.unwrap_or(h.last_offset) >= BASE_OFFSET);
    if increasing {
        for header in &headers {
            let found = segment
                .translate_offset(header.last_offset, 0)
                .expect("translate")
                .expect("a kept batch is found");
            assert_eq!(found.position, header.position);
        }
    }
});
