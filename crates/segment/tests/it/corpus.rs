//! Every segment of the Kafka corpus (on copies): open, read every offset, look up
//! timestamps; rebuild the indexes and compare them with Kafka's recovery rule and with the
//! broker's own files.

use std::path::Path;

use seglog_segment::{FileKind, RebuildReason, Segment, SegmentConfig, SegmentOpenOptions};

use crate::support::{Scan, copy_dir, corpus_segments, path, read, scan};

/// The corpus brokers ran with Kafka's defaults.
fn config() -> SegmentConfig {
    SegmentConfig::default()
}

/// Checks the lookups of `segment` against the oracle `scan` of its `.log`: every offset and
/// up to 2000 timestamps when `every_offset`, otherwise a sample of about 300 of each (the
/// suite runs in debug builds; one full pass per segment is enough).
fn check_lookups(segment: &Segment, oracle: &Scan, label: &str, every_offset: bool) {
    let base = segment.base_offset();
    assert_eq!(segment.size(), oracle.valid_bytes, "{label}: size");
    assert_eq!(
        segment.read_next_offset().unwrap(),
        oracle.next_offset(base),
        "{label}: next offset"
    );
    // Every record offset, every gap below a batch, and one past the end.
    let mut offsets: Vec<i64> = oracle.records.iter().map(|r| r.offset).collect();
    offsets.extend(oracle.batches.iter().map(|b| b.last_offset));
    offsets.push(base);
    offsets.push(oracle.next_offset(base));
    offsets.sort_unstable();
    offsets.dedup();
    let stride = if every_offset {
        1
    } else {
        (offsets.len() / 300).max(1)
    };
    for offset in offsets.into_iter().step_by(stride) {
        let expected = oracle.translate(offset);
        let got = segment.translate_offset(offset, 0).unwrap();
        assert_eq!(
            got.map(|g| (g.position, g.size, g.offset)),
            expected.map(|b| (b.position, b.size, b.last_offset)),
            "{label}: translate {offset}"
        );
        let slice = segment.read(offset, 1, u64::MAX, true).unwrap();
        match (slice, expected) {
            (Some(slice), Some(batch)) => {
                assert_eq!(slice.position(), batch.position, "{label}: read {offset}");
                assert_eq!(slice.len(), u64::from(batch.size), "{label}: read {offset}");
            }
            (None, None) => {}
            (slice, batch) => panic!("{label}: read {offset}: {slice:?} vs {batch:?}"),
        }
    }
    // Timestamps: every distinct record timestamp, and one below and above each.
    let mut timestamps: Vec<i64> = oracle
        .records
        .iter()
        .flat_map(|r| [r.timestamp_ms - 1, r.timestamp_ms, r.timestamp_ms + 1])
        .collect();
    timestamps.sort_unstable();
    timestamps.dedup();
    let stride = (timestamps.len() / if every_offset { 2000 } else { 300 }).max(1);
    for &ts in timestamps.iter().step_by(stride) {
        let expected = oracle.find_by_timestamp(ts, base);
        let got = segment.find_offset_by_timestamp(ts, base).unwrap();
        assert_eq!(
            got.map(|g| (g.timestamp_ms, g.offset)),
            expected.map(|r| (r.timestamp_ms, r.offset)),
            "{label}: find by timestamp {ts}"
        );
    }
    // The max timestamp comes from the time index's last entry (or recovery).
    let max_record = oracle.batches.iter().map(|b| b.max_timestamp_ms).max();
    assert_eq!(
        segment.largest_record_timestamp(),
        max_record.filter(|ts| *ts >= 0),
        "{label}: largest record timestamp"
    );
}

fn label(dir: &Path, base: i64) -> String {
    let parent = dir.parent().and_then(Path::file_name).unwrap_or_default();
    format!(
        "{}/{}/{base}",
        parent.to_string_lossy(),
        dir.file_name().unwrap_or_default().to_string_lossy()
    )
}

#[test]
fn corpus_segments_open_read_and_rebuild() {
    if seglog_test_corpus::root().is_none() {
        return;
    }
    let segments = corpus_segments();
    assert_eq!(segments.len(), 40, "PROVENANCE.md lists 40 segments");
    for (dir, base) in segments {
        let label = label(&dir, base);
        let copy = copy_dir(&dir);
        let log = read(&path(copy.path(), base, FileKind::LOG));
        let oracle = scan(&log, 0);
        assert_eq!(
            oracle.valid_bytes,
            log.len() as u64,
            "{label}: corpus logs are clean"
        );
        let had_indexes = path(copy.path(), base, FileKind::INDEX).exists();

        // 1. Open as found (read-only first: nothing may change on disk).
        let before: Vec<_> = [FileKind::LOG, FileKind::INDEX, FileKind::TIME_INDEX]
            .map(|k| std::fs::read(path(copy.path(), base, k)).ok())
            .into();
        {
            let (segment, report) = Segment::open(
                copy.path(),
                base,
                &config(),
                SegmentOpenOptions::read_only(),
            )
            .unwrap();
            if !had_indexes {
                assert!(
                    matches!(report.rebuilt, Some(RebuildReason::MissingIndex { .. })),
                    "{label}: {report:?}"
                );
            }
            check_lookups(&segment, &oracle, &format!("{label} (read-only)"), false);
        }
        let after: Vec<_> = [FileKind::LOG, FileKind::INDEX, FileKind::TIME_INDEX]
            .map(|k| std::fs::read(path(copy.path(), base, k)).ok())
            .into();
        assert_eq!(before, after, "{label}: a read-only open wrote to disk");

        // 2. Read-write open (rebuilds missing indexes on disk).
        {
            let (segment, report) =
                Segment::open(copy.path(), base, &config(), SegmentOpenOptions::default()).unwrap();
            if let Some(recovery) = &report.recovery {
                assert_eq!(recovery.truncated_bytes, 0, "{label}: {report:?}");
            }
            check_lookups(&segment, &oracle, &format!("{label} (read-write)"), false);
            segment.close().unwrap();
        }

        // 3. Delete the indexes, recover, close: the rebuilt indexes answer the same, and are
        //    byte-identical to Kafka's recovery rule.
        std::fs::remove_file(path(copy.path(), base, FileKind::INDEX)).unwrap();
        std::fs::remove_file(path(copy.path(), base, FileKind::TIME_INDEX)).unwrap();
        {
            let (segment, report) =
                Segment::open(copy.path(), base, &config(), SegmentOpenOptions::default()).unwrap();
            assert!(
                matches!(report.rebuilt, Some(RebuildReason::MissingIndex { .. })),
                "{label}: {report:?}"
            );
            let recovery = report.recovery.unwrap();
            assert_eq!(recovery.truncated_bytes, 0, "{label}");
            assert_eq!(recovery.reason, None, "{label}");
            assert_eq!(recovery.batches as usize, oracle.batches.len(), "{label}");
            assert_eq!(recovery.next_offset, oracle.next_offset(base), "{label}");
            check_lookups(&segment, &oracle, &format!("{label} (rebuilt)"), true);
            segment.close().unwrap();
        }
        let (index, time) = oracle.kafka_recover_indexes(base, 4096);
        assert_eq!(
            read(&path(copy.path(), base, FileKind::INDEX)),
            index,
            "{label}: .index"
        );
        assert_eq!(
            read(&path(copy.path(), base, FileKind::TIME_INDEX)),
            time,
            "{label}: .timeindex"
        );

        // 4. Reopen the rebuilt files: trusted as they are.
        let (segment, report) =
            Segment::open(copy.path(), base, &config(), SegmentOpenOptions::default()).unwrap();
        assert_eq!(report.rebuilt, None, "{label}");
        check_lookups(&segment, &oracle, &format!("{label} (reopened)"), false);
    }
}

/// How a broker-written index file compares with ours after recover + close.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Comparison {
    /// Byte-identical.
    Identical,
    /// `.timeindex`: the same timestamps, but the broker recorded the offset of the max
    /// timestamp record inside the batch (Kafka 3.6/3.7 live appends of uncompressed
    /// batches), where `recover()` records the batch's last offset.
    RecordLevelOffsets,
    /// `.timeindex`: ours plus earlier entries written by earlier clean shutdowns (each close
    /// appends the max timestamp so far).
    ExtraCloseEntries,
    /// Different entries: the broker restarted mid-segment, which resets the interval
    /// counter (both are valid indexes; the strict open trusts the broker's).
    RestartShifted,
}

fn time_entries(bytes: &[u8]) -> Vec<(i64, i64)> {
    bytes
        .chunks_exact(12)
        .map(|c| {
            let ts = i64::from_be_bytes(c[..8].try_into().unwrap());
            let rel = i32::from_be_bytes(c[8..].try_into().unwrap());
            (ts, i64::from(rel))
        })
        .collect()
}

fn compare_time(broker: &[u8], ours: &[u8], oracle: &Scan, base: i64) -> Comparison {
    if broker == ours {
        return Comparison::Identical;
    }
    let (b, o) = (time_entries(broker), time_entries(ours));
    let same_batch =
        |x: i64, y: i64| oracle.translate(base + x).map(|b| b.last_offset) == Some(base + y);
    if b.len() == o.len()
        && b.iter()
            .zip(&o)
            .all(|(&(bt, bo), &(ot, oo))| bt == ot && same_batch(bo, oo))
    {
        return Comparison::RecordLevelOffsets;
    }
    if b.len() > o.len() && o.iter().all(|e| b.contains(e)) {
        return Comparison::ExtraCloseEntries;
    }
    Comparison::RestartShifted
}

/// Broker-written indexes of closed segments against our recover + close: byte-identical
/// wherever Kafka's recovery rule produces the broker's bytes; every difference is one of
/// the documented causes (PROVENANCE.md), checked entry by entry.
#[test]
fn broker_closed_indexes_against_recover_and_close() {
    use Comparison::*;
    let expected_differences = [
        (
            "William0423-kafka/__consumer_offsets-28/0",
            RestartShifted,
            RestartShifted,
        ),
        (
            "William0423-kafka/debug_topic-0/0",
            Identical,
            ExtraCloseEntries,
        ),
        (
            "dipendrasaini-kafka-learnning-series/invoice-1/0",
            Identical,
            RecordLevelOffsets,
        ),
        (
            "dipendrasaini-kafka-learnning-series/invoice-1/30620",
            Identical,
            RecordLevelOffsets,
        ),
        (
            "dipendrasaini-kafka-learnning-series/invoice-1/60492",
            Identical,
            RecordLevelOffsets,
        ),
        (
            "rjmfernandes-flink-on-prem/__consumer_offsets-36/0",
            Identical,
            RecordLevelOffsets,
        ),
        (
            "rjmfernandes-flink-on-prem/loyalty_levels-0/0",
            Identical,
            RecordLevelOffsets,
        ),
    ];
    if seglog_test_corpus::root().is_none() {
        return;
    }
    let mut compared = 0;
    for (dir, base) in corpus_segments() {
        let broker_index = path(&dir, base, FileKind::INDEX);
        let broker_time = path(&dir, base, FileKind::TIME_INDEX);
        if !broker_index.exists() || !broker_time.exists() {
            continue;
        }
        let label = label(&dir, base);
        let copy = copy_dir(&dir);
        let options = SegmentOpenOptions {
            recover: true,
            ..SegmentOpenOptions::default()
        };
        let (segment, _) = Segment::open(copy.path(), base, &config(), options).unwrap();
        segment.close().unwrap();
        drop(segment);
        let oracle = scan(&read(&path(&dir, base, FileKind::LOG)), 0);
        let index = if read(&broker_index) == read(&path(copy.path(), base, FileKind::INDEX)) {
            Identical
        } else {
            RestartShifted
        };
        let time = compare_time(
            &read(&broker_time),
            &read(&path(copy.path(), base, FileKind::TIME_INDEX)),
            &oracle,
            base,
        );
        let expected = expected_differences
            .iter()
            .find(|(l, ..)| *l == label)
            .map_or((Identical, Identical), |&(_, i, t)| (i, t));
        assert_eq!((index, time), expected, "{label}");
        compared += 1;
    }
    assert_eq!(compared, 25, "broker-closed segments with both index files");
}
