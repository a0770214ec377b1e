//! The historical Kafka bugs of spec §7 that apply to a segment, one named test each.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use seglog_index_core::CorruptKind as IndexCorrupt;
use seglog_records::Compression;
use seglog_segment::{
    ActiveSegment, Error, FileKind, FileType, OpenMode, RebuildReason, RollParams, Segment,
    SegmentConfig, SegmentOpenOptions,
};

use crate::support::{append_batch, batch, path, read, scan, simple_batch, small_config, tempdir};

/// A segment killed while active: appended, never sealed (untrimmed, zero-padded indexes).
fn killed_active_segment(config: &SegmentConfig, batches: i64) -> tempfile::TempDir {
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, config).unwrap();
    for offset in 0..batches {
        append_batch(&mut active, &simple_batch(offset, 1, 1_000 + offset, 40));
    }
    drop(active);
    dir
}

/// A sealed, closed segment.
fn closed_segment(config: &SegmentConfig, batches: i64) -> tempfile::TempDir {
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, config).unwrap();
    for offset in 0..batches {
        append_batch(&mut active, &simple_batch(offset, 1, 1_000 + offset, 40));
    }
    active.close().unwrap();
    dir
}

fn assert_kafka_indexes(dir: &std::path::Path, config: &SegmentConfig) {
    let oracle = scan(&read(&path(dir, 0, FileKind::LOG)), 0);
    let (index, time) = oracle.kafka_recover_indexes(0, u64::from(config.index_interval_bytes));
    assert_eq!(read(&path(dir, 0, FileKind::INDEX)), index);
    assert_eq!(read(&path(dir, 0, FileKind::TIME_INDEX)), time);
}

fn zero_pad(file: &std::path::Path, len: u64) {
    let f = std::fs::OpenOptions::new().write(true).open(file).unwrap();
    f.set_len(len).unwrap();
}

/// Bug 1 (KAFKA-1112): after `kill -9` the active segment's `.index` is preallocated and
/// zero-padded; it must be rebuilt, not refused and not trusted.
#[test]
fn kafka_1112_zero_padded_index_after_kill_is_rebuilt() {
    let config = small_config();
    let dir = killed_active_segment(&config, 60);
    let index_len = std::fs::metadata(path(dir.path(), 0, FileKind::INDEX))
        .unwrap()
        .len();
    assert_eq!(
        index_len,
        u64::from(config.max_index_bytes),
        "untrimmed after the kill"
    );
    let (segment, report) =
        Segment::open(dir.path(), 0, &config, SegmentOpenOptions::default()).unwrap();
    assert!(
        matches!(
            report.rebuilt,
            Some(RebuildReason::CorruptIndex {
                file_type: FileType::Index,
                kind: IndexCorrupt::ZeroPaddedTail,
                ..
            })
        ),
        "{report:?}"
    );
    assert_eq!(report.recovery.unwrap().truncated_bytes, 0);
    assert_eq!(segment.read_next_offset().unwrap(), 60);
    assert_eq!(segment.translate_offset(33, 0).unwrap().unwrap().offset, 33);
    // The rebuilt indexes are Kafka's recovery output.
    segment.close().unwrap();
    assert_kafka_indexes(dir.path(), &config);
    // It can become active again and take appends; the result is trusted at the next open.
    let mut active = ActiveSegment::resume(segment).unwrap();
    append_batch(&mut active, &simple_batch(60, 1, 2_000, 40));
    active.close().unwrap();
    let (segment, report) =
        Segment::open(dir.path(), 0, &config, SegmentOpenOptions::default()).unwrap();
    assert_eq!(report.rebuilt, None);
    assert_eq!(segment.translate_offset(60, 0).unwrap().unwrap().offset, 60);
}

/// Bug 2 (KAFKA-7283): Kafka trusts indexes below the recovery point without checks. Our
/// policy: every open checks them; a corrupt index below the recovery point is rebuilt.
#[test]
fn kafka_7283_corrupt_index_below_the_recovery_point_is_not_trusted() {
    let config = small_config();
    let dir = closed_segment(&config, 80);
    let index_path = path(dir.path(), 0, FileKind::INDEX);
    let mut index = read(&index_path);
    assert!(index.len() >= 16);
    // Swap two entries: offsets no longer increase.
    let (a, b) = index.split_at_mut(8);
    a.swap_with_slice(&mut b[..8]);
    std::fs::write(&index_path, &index).unwrap();
    let (segment, report) =
        Segment::open(dir.path(), 0, &config, SegmentOpenOptions::default()).unwrap();
    assert!(
        matches!(
            report.rebuilt,
            Some(RebuildReason::CorruptIndex {
                file_type: FileType::Index,
                kind: IndexCorrupt::NotMonotonic,
                ..
            })
        ),
        "{report:?}"
    );
    for offset in 0..80 {
        assert_eq!(
            segment.translate_offset(offset, 0).unwrap().unwrap().offset,
            offset
        );
    }
    segment.close().unwrap();
    assert_kafka_indexes(dir.path(), &config);

    // An index entry that points into the middle of a batch is caught by the tail walk.
    let mut index = read(&index_path);
    let n = index.len();
    let position = i32::from_be_bytes(index[n - 4..].try_into().unwrap());
    index[n - 4..].copy_from_slice(&(position + 3).to_be_bytes());
    std::fs::write(&index_path, &index).unwrap();
    let (_, report) = Segment::open(dir.path(), 0, &config, SegmentOpenOptions::default()).unwrap();
    assert!(
        matches!(
            report.rebuilt,
            Some(RebuildReason::IndexEntryMismatch { .. })
        ),
        "{report:?}"
    );
}

/// Bug 3 (KAFKA-10207 / KAFKA-19200): a `.timeindex` that was never trimmed reopens "full"
/// with a last entry of (0, base): `largestTimestamp` would be 0 (immediate deletion by
/// time retention) and the close-time append would overflow. Checked in both modes.
#[test]
fn kafka_10207_untrimmed_time_index_does_not_report_timestamp_zero() {
    let config = small_config();
    for options in [
        SegmentOpenOptions::default(),
        SegmentOpenOptions::read_only(),
    ] {
        let dir = closed_segment(&config, 50);
        zero_pad(
            &path(dir.path(), 0, FileKind::TIME_INDEX),
            u64::from(config.max_index_bytes) / 12 * 12,
        );
        let (segment, report) = Segment::open(dir.path(), 0, &config, options).unwrap();
        assert!(
            matches!(
                report.rebuilt,
                Some(RebuildReason::CorruptIndex {
                    file_type: FileType::TimeIndex,
                    kind: IndexCorrupt::ZeroPaddedTail,
                    ..
                })
            ),
            "{options:?}: {report:?}"
        );
        assert_eq!(segment.largest_timestamp().unwrap(), 1_049);
        assert_eq!(segment.max_timestamp_and_offset().offset, 49);
        // KAFKA-19200: closing does not overflow the "full" index.
        segment.close().unwrap();
        if options.mode == OpenMode::ReadWrite {
            assert_kafka_indexes(dir.path(), &config);
        }
    }
}

/// Bug 3, the roll variant: an untrimmed time index on the segment that becomes active
/// again must not make it look full (no spurious roll), nor overflow at the next seal.
#[test]
fn kafka_19200_untrimmed_time_index_on_the_active_segment() {
    let config = small_config();
    let dir = killed_active_segment(&config, 30);
    let (segment, _) =
        Segment::open(dir.path(), 0, &config, SegmentOpenOptions::default()).unwrap();
    let mut active = ActiveSegment::resume(segment).unwrap();
    let params = RollParams {
        max_segment_ms: i64::MAX,
        max_segment_bytes: u32::MAX,
        max_timestamp_in_messages: 2_000,
        max_offset_in_messages: 30,
        messages_size: 100,
        now_ms: 0,
    };
    assert!(!active.should_roll(&params).unwrap());
    append_batch(&mut active, &simple_batch(30, 1, 2_000, 40));
    let segment = active.seal().unwrap();
    assert_eq!(segment.largest_record_timestamp(), Some(2_000));
}

/// Bug 4 (KAFKA-4451, 5413, 6264, 6530): relative offsets at `i32::MAX` fit, at
/// `i32::MAX + 1` they do not: a typed error so the log rolls, and `should_roll` says so.
#[test]
fn kafka_4451_relative_offset_at_int_max_and_int_max_plus_one() {
    let dir = tempdir();
    let base = 1_000;
    let config = SegmentConfig {
        index_interval_bytes: 0,
        ..small_config()
    };
    let mut active = ActiveSegment::create(dir.path(), base, &config).unwrap();
    append_batch(&mut active, &simple_batch(base, 1, 10, 10));
    let at_max = base + i64::from(i32::MAX);
    let mut params = RollParams {
        max_segment_ms: i64::MAX,
        max_segment_bytes: u32::MAX,
        max_timestamp_in_messages: 11,
        max_offset_in_messages: at_max,
        messages_size: 80,
        now_ms: 0,
    };
    assert!(!active.should_roll(&params).unwrap());
    append_batch(&mut active, &simple_batch(at_max, 1, 11, 10));
    assert_eq!(active.segment().read_next_offset().unwrap(), at_max + 1);
    params.max_offset_in_messages = at_max + 1;
    assert!(active.should_roll(&params).unwrap());
    let size = active.segment().size();
    let err = active
        .append(
            at_max + 1,
            12,
            at_max + 1,
            &simple_batch(at_max + 1, 1, 12, 10),
        )
        .unwrap_err();
    assert!(matches!(err, Error::OffsetOverflow { .. }), "{err}");
    assert_eq!(active.segment().size(), size);
    // The entry for the second batch stores relative offset i32::MAX.
    let segment = active.close().unwrap();
    let index = read(&segment.path(FileType::Index));
    assert_eq!(index[..4], i32::MAX.to_be_bytes());
    drop(segment);
    let (segment, report) =
        Segment::open(dir.path(), base, &config, SegmentOpenOptions::default()).unwrap();
    assert_eq!(report.rebuilt, None);
    assert_eq!(
        segment.translate_offset(at_max, 0).unwrap().unwrap().offset,
        at_max
    );
}

/// Bug 5 (KAFKA-6388): an empty active segment whose indexes are zero-length
/// (`maxEntries == 0` reports full) must not force a roll to the same base offset.
#[test]
fn kafka_6388_zero_length_indexes_on_an_empty_active_segment() {
    let dir = tempdir();
    let config = small_config();
    for kind in [FileKind::LOG, FileKind::INDEX, FileKind::TIME_INDEX] {
        std::fs::write(path(dir.path(), 5, kind), b"").unwrap();
    }
    let (segment, report) =
        Segment::open(dir.path(), 5, &config, SegmentOpenOptions::default()).unwrap();
    assert_eq!(
        report.rebuilt, None,
        "empty indexes of an empty log are consistent"
    );
    let mut active = ActiveSegment::resume(segment).unwrap();
    let params = RollParams {
        max_segment_ms: i64::MAX,
        max_segment_bytes: u32::MAX,
        max_timestamp_in_messages: 1,
        max_offset_in_messages: 5,
        messages_size: 100,
        now_ms: 0,
    };
    assert!(
        !active.should_roll(&params).unwrap(),
        "resume resized the indexes"
    );
    append_batch(&mut active, &simple_batch(5, 1, 1, 10));
    active.close().unwrap();
}

/// Bug 6 (KAFKA-13603): an empty active segment with no `.index` on disk (Kafka's index is
/// lazy) after a clean shutdown is not corruption.
#[test]
fn kafka_13603_empty_active_segment_without_index_files() {
    let dir = tempdir();
    let config = small_config();
    std::fs::write(path(dir.path(), 9, FileKind::LOG), b"").unwrap();
    for options in [
        SegmentOpenOptions::read_only(),
        SegmentOpenOptions::default(),
    ] {
        let (segment, report) = Segment::open(dir.path(), 9, &config, options).unwrap();
        assert!(
            matches!(
                report.rebuilt,
                Some(RebuildReason::MissingIndex {
                    file_type: FileType::Index
                })
            ),
            "{report:?}"
        );
        let recovery = report.recovery.unwrap();
        assert_eq!(
            (
                recovery.valid_bytes,
                recovery.truncated_bytes,
                recovery.reason
            ),
            (0, 0, None)
        );
        assert_eq!(segment.read_next_offset().unwrap(), 9);
        assert!(segment.read(9, 100, u64::MAX, true).unwrap().is_none());
    }
    // The read-write open created them (trimmed, empty).
    assert_eq!(read(&path(dir.path(), 9, FileKind::INDEX)), b"");
    assert_eq!(read(&path(dir.path(), 9, FileKind::TIME_INDEX)), b"");
}

/// Bug 8 (KAFKA-4614, 19390, 1757, 9704, 8398, 6324): rename and delete while readers are
/// active; maps and handles stay valid, nothing is unmapped twice.
#[test]
fn kafka_8398_rename_and_delete_while_readers_are_active() {
    let config = small_config();
    let dir = closed_segment(&config, 200);
    let (segment, _) =
        Segment::open(dir.path(), 0, &config, SegmentOpenOptions::default()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|r| {
            let segment = Arc::clone(&segment);
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut reads = 0u64;
                while !stop.load(Ordering::Relaxed) || reads < 50 {
                    let offset = (reads * 7 + r) as i64 % 200;
                    let slice = segment.read(offset, 500, u64::MAX, true).unwrap().unwrap();
                    let bytes = slice.read_to_vec().unwrap();
                    assert!(
                        scan(&bytes, slice.position())
                            .batches
                            .first()
                            .is_some_and(|b| b.last_offset == offset)
                    );
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    segment.mark_deleted().unwrap();
    segment.delete_files().unwrap();
    stop.store(true, Ordering::Relaxed);
    for reader in readers {
        assert!(reader.join().unwrap() >= 50);
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// Bug 11 (KAFKA-4734): a sealed segment's time index is trimmed and ends with the max
/// timestamp. (KAFKA-12981, the max timestamp and its offset as one value, is exercised by
/// `concurrency::max_timestamp_and_offset_are_read_as_one_value`.)
#[test]
fn kafka_4734_sealed_time_index_is_trimmed_and_ends_with_the_max() {
    let dir = tempdir();
    let config = small_config();
    let mut active = ActiveSegment::create(dir.path(), 0, &config).unwrap();
    // Timestamps go backwards at the end: the max (1_050) is in the middle.
    for offset in 0..60 {
        let ts = if offset < 50 { 1_000 + offset } else { 900 };
        append_batch(&mut active, &simple_batch(offset, 1, ts, 40));
    }
    let segment = active.seal().unwrap();
    let time = read(&segment.path(FileType::TimeIndex));
    assert_eq!(time.len(), 12 * segment.time_index_entries());
    let last = &time[time.len() - 12..];
    assert_eq!(i64::from_be_bytes(last[..8].try_into().unwrap()), 1_049);
    assert_eq!(i32::from_be_bytes(last[8..].try_into().unwrap()), 49);
}

/// Bug 17 (KAFKA-16310): the max-timestamp lookup finds the record inside a multi-record
/// batch, while the time index keeps the batch's last offset (Kafka's recover rule).
#[test]
fn kafka_16310_max_timestamp_lookup_inside_a_multi_record_batch() {
    let dir = tempdir();
    let config = small_config();
    let mut active = ActiveSegment::create(dir.path(), 0, &config).unwrap();
    for compression in [Compression::None, Compression::Zstd] {
        let base = active.segment().read_next_offset().unwrap();
        let bytes = batch(
            base,
            &[(10, 5), (500 + base, 5), (20, 5), (30, 5)],
            compression,
        );
        append_batch(&mut active, &bytes);
    }
    let segment = active.seal().unwrap();
    let max = segment.max_timestamp_and_offset();
    assert_eq!(
        (max.timestamp_ms, max.offset),
        (504, 7),
        "shallow: the batch's last offset"
    );
    let found = segment.find_offset_by_timestamp(504, 0).unwrap().unwrap();
    assert_eq!((found.timestamp_ms, found.offset), (504, 5), "record level");
    let found = segment.find_offset_by_timestamp(500, 0).unwrap().unwrap();
    assert_eq!((found.timestamp_ms, found.offset), (500, 1));
}

/// Bug 18 (KAFKA-6482, 18929, 20609): future timestamps are reported as they are (the
/// log's retention keeps such a segment, as Kafka does).
#[test]
fn kafka_6482_future_timestamps_are_reported_as_they_are() {
    let dir = tempdir();
    let config = small_config();
    let future_us = 1_700_000_000_000_000; // microseconds by mistake
    let mut active = ActiveSegment::create(dir.path(), 0, &config).unwrap();
    append_batch(&mut active, &simple_batch(0, 2, future_us, 10));
    let segment = active.close().unwrap();
    assert_eq!(segment.largest_timestamp().unwrap(), future_us + 1);
    drop(segment);
    let (segment, _) =
        Segment::open(dir.path(), 0, &config, SegmentOpenOptions::default()).unwrap();
    assert_eq!(segment.largest_timestamp().unwrap(), future_us + 1);
}

/// Bug 13 (KAFKA-3968), the segment's half: a segment never fsyncs its directory by itself
/// (create, append, flush, seal, rename to `.deleted`, delete: none), so the log decides where
/// the protocol needs one (its half: seglog's `kafka_bugs::kafka_3968_*`); the directory fsync it
/// calls goes through the same seam as the segment's files, which observes it, and its errors
/// name the directory.
#[test]
fn kafka_3968_segments_leave_directory_fsyncs_to_the_log_through_the_seam() {
    let dir = tempdir();
    let faults = seglog_faults::FaultInjector::new(dir.path());
    let config = seglog_segment::SegmentConfig {
        io: faults.io(),
        ..small_config()
    };
    let mut active = ActiveSegment::create(dir.path(), 0, &config).unwrap();
    append_batch(&mut active, &simple_batch(0, 2, 1_000, 10));
    active.flush().unwrap();
    let segment = active.seal().unwrap();
    segment.flush().unwrap();
    segment.mark_deleted().unwrap();
    assert_eq!(faults.dir_syncs(), 0, "a segment fsynced its directory");
    assert_eq!(faults.durable_names(dir.path()), None);

    config.io.sync_dir(dir.path()).unwrap();
    assert_eq!(faults.dir_syncs(), 1);
    assert!(
        faults
            .durable_names(dir.path())
            .is_some_and(|names| names.contains("00000000000000000000.log.deleted"))
    );
    segment.delete_files().unwrap();
    assert_eq!(faults.dir_syncs(), 1, "a delete fsynced the directory");

    let missing = dir.path().join("no-such-dir");
    for io in [config.io.clone(), seglog_segment::Io::direct()] {
        let err = io.sync_dir(&missing).unwrap_err();
        assert!(
            matches!(&err, Error::Io { op: seglog_segment::IoOp::SyncDir, path, .. } if *path == missing),
            "{err}"
        );
    }
}
