//! Appends (Kafka's index rule), reads, translation, truncation, roll decisions, sealing.

use seglog_records::Compression;
use seglog_segment::{
    ActiveSegment, Error, FileKind, RollParams, Segment, SegmentConfig, SegmentOpenOptions,
};

use crate::support::{append_batch, batch, path, read, scan, simple_batch, small_config, tempdir};

/// Appends `count` single-record batches of `value_len` bytes; returns their bytes.
fn fill(active: &mut ActiveSegment, count: usize, value_len: usize) -> Vec<Vec<u8>> {
    let first = active.segment().read_next_offset().unwrap();
    (0..count)
        .map(|i| {
            let offset = first + i as i64;
            let bytes = simple_batch(offset, 1, 1_000 + offset, value_len + i % 7);
            append_batch(active, &bytes);
            bytes
        })
        .collect()
}

fn index_entries(bytes: &[u8]) -> Vec<(i32, i32)> {
    bytes
        .chunks_exact(8)
        .map(|c| {
            (
                i32::from_be_bytes(c[..4].try_into().unwrap()),
                i32::from_be_bytes(c[4..].try_into().unwrap()),
            )
        })
        .collect()
}

#[test]
fn index_step_is_strictly_greater_than_and_checked_before_counting_the_append() {
    let dir = tempdir();
    let config = SegmentConfig {
        index_interval_bytes: 200,
        ..small_config()
    };
    let mut active = ActiveSegment::create(dir.path(), 0, &config).unwrap();
    // Batches of exactly 100 bytes. The counter is checked before the append is counted:
    // the appends see 0, 100, 200 (not > 200), 300 (> 200: entry, reset), 100, 200.
    let one = simple_batch(0, 1, 5, 1);
    let size = one.len();
    let value_len = 1 + 100 - size; // pad to exactly 100 bytes
    let mut positions = Vec::new();
    for offset in 0..6 {
        let bytes = simple_batch(offset, 1, 5 + offset, value_len);
        assert_eq!(bytes.len(), 100);
        positions.push(active.segment().size());
        append_batch(&mut active, &bytes);
    }
    let segment = active.seal().unwrap();
    let entries = index_entries(&read(&segment.path(seglog_segment::FileType::Index)));
    // Counter before each append: 0, 100, 200, 300 (entry, reset), 100, 200.
    assert_eq!(entries, vec![(3, 300)]);
    assert_eq!(positions[3], 300);
}

#[test]
fn every_batch_of_a_multi_batch_append_takes_the_index_step_as_in_kafka_4_4() {
    let dir = tempdir();
    let config = SegmentConfig {
        index_interval_bytes: 10,
        ..small_config()
    };
    let mut active = ActiveSegment::create(dir.path(), 100, &config).unwrap();
    let first = simple_batch(100, 3, 1_000, 20);
    append_batch(&mut active, &first);
    // One append of three batches (offsets 103..=111).
    let b1 = simple_batch(103, 2, 2_000, 20);
    let b2 = simple_batch(105, 4, 3_000, 20);
    let b3 = simple_batch(109, 3, 2_500, 20);
    let mut chunk = b1.clone();
    chunk.extend(&b2);
    chunk.extend(&b3);
    active.append(111, 3_003, 108, &chunk).unwrap();
    let segment = active.seal().unwrap();
    let entries = index_entries(&read(&segment.path(seglog_segment::FileType::Index)));
    // Kafka 4.4's LogSegment.append: before each batch, more than 10 bytes since the last
    // entry adds (the batch's last offset, its position); the first batch had none before it.
    let p1 = first.len() as i32;
    let p2 = p1 + b1.len() as i32;
    let p3 = p2 + b2.len() as i32;
    assert_eq!(entries, vec![(4, p1), (8, p2), (11, p3)]);
    // Any offset of the chunk translates to its own batch, from the chunk start.
    for offset in 103..=111 {
        let found = segment.translate_offset(offset, 0).unwrap().unwrap();
        assert!(found.offset >= offset && found.position >= first.len() as u64);
    }
    assert_eq!(segment.max_timestamp_and_offset().timestamp_ms, 3_003);
    assert_eq!(segment.max_timestamp_and_offset().offset, 108);
}

#[test]
fn single_batch_appends_build_the_same_indexes_as_recovery() {
    let dir = tempdir();
    let config = small_config();
    let mut active = ActiveSegment::create(dir.path(), 0, &config).unwrap();
    fill(&mut active, 300, 30);
    let segment = active.seal().unwrap();
    let appended = (
        read(&segment.path(seglog_segment::FileType::Index)),
        read(&segment.path(seglog_segment::FileType::TimeIndex)),
    );
    let oracle = scan(&read(&segment.log_path()), 0);
    assert_eq!(
        appended,
        oracle.kafka_recover_indexes(0, u64::from(config.index_interval_bytes))
    );
    assert!(appended.0.len() > 8 * 10);
    segment.recover().unwrap();
    segment.close().unwrap();
    assert_eq!(
        appended,
        (
            read(&segment.path(seglog_segment::FileType::Index)),
            read(&segment.path(seglog_segment::FileType::TimeIndex)),
        )
    );
}

#[test]
fn read_limits_follow_kafka() {
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 10, &small_config()).unwrap();
    let batches = fill(&mut active, 20, 40);
    let segment = active.segment().clone();
    let all: Vec<u8> = batches.concat();
    let size = segment.size();
    assert_eq!(size, all.len() as u64);

    // From offset 13: starts at batch 3.
    let start = batches[..3].iter().map(Vec::len).sum::<usize>() as u64;
    let slice = segment
        .read(13, 1_000_000, u64::MAX, false)
        .unwrap()
        .unwrap();
    assert_eq!(slice.position(), start);
    assert_eq!(slice.read_to_vec().unwrap(), &all[start as usize..]);
    assert_eq!(slice.offsets().start_offset, 13);
    assert_eq!(slice.offsets().first_batch_last_offset, 13);

    // max_bytes smaller than the first batch: cut (first entry incomplete) unless
    // min_one_message.
    let cut = segment.read(13, 5, u64::MAX, false).unwrap().unwrap();
    assert_eq!(cut.len(), 5);
    assert!(cut.offsets().first_entry_incomplete);
    let one = segment.read(13, 5, u64::MAX, true).unwrap().unwrap();
    assert_eq!(one.len(), batches[3].len() as u64);
    assert!(!one.offsets().first_entry_incomplete);
    let empty = segment.read(13, 0, u64::MAX, false).unwrap().unwrap();
    assert!(empty.is_empty());

    // max_position caps the slice.
    let capped = segment
        .read(13, 1_000_000, start + 7, true)
        .unwrap()
        .unwrap();
    assert_eq!(capped.len(), 7);

    // Below the base: the first batch. At or past the end: none.
    let below = segment.read(0, 100, u64::MAX, true).unwrap().unwrap();
    assert_eq!(below.position(), 0);
    assert!(segment.read(30, 100, u64::MAX, true).unwrap().is_none());
    assert!(segment.translate_offset(30, 0).unwrap().is_none());
    assert_eq!(segment.read_next_offset().unwrap(), 30);

    // translate_offset honours a starting position.
    let from = segment.translate_offset(11, start).unwrap().unwrap();
    assert_eq!(from.position, start);
}

#[test]
fn sendfile_sends_a_segment_slice() {
    use std::io::{Read, Seek};
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, &small_config()).unwrap();
    let batches = fill(&mut active, 10, 100);
    let slice = active
        .segment()
        .read(4, 10_000, u64::MAX, true)
        .unwrap()
        .unwrap();
    let mut out = tempfile::tempfile().unwrap();
    assert_eq!(slice.send_all_to(&out).unwrap(), slice.len());
    out.rewind().unwrap();
    let mut got = Vec::new();
    out.read_to_end(&mut got).unwrap();
    assert_eq!(got, batches[4..].concat());
}

#[test]
fn find_offset_by_timestamp_scans_records_inside_batches() {
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, &small_config()).unwrap();
    for (base, compression) in [
        (0, Compression::None),
        (3, Compression::Gzip),
        (6, Compression::Lz4),
    ] {
        let bytes = batch(
            base,
            &[(100 + base, 10), (50, 10), (120 + base, 10)],
            compression,
        );
        append_batch(&mut active, &bytes);
    }
    let segment = active.segment();
    // ts 101: the first batch's max is 100, so the answer is record 2 (ts 120).
    let found = segment.find_offset_by_timestamp(101, 0).unwrap().unwrap();
    assert_eq!((found.offset, found.timestamp_ms), (2, 120));
    // Inside the compressed batches.
    let found = segment.find_offset_by_timestamp(121, 0).unwrap().unwrap();
    assert_eq!((found.offset, found.timestamp_ms), (5, 123));
    let found = segment.find_offset_by_timestamp(124, 0).unwrap().unwrap();
    assert_eq!((found.offset, found.timestamp_ms), (8, 126));
    // starting_offset skips records below it.
    let found = segment.find_offset_by_timestamp(0, 4).unwrap().unwrap();
    assert_eq!(found.offset, 4);
    assert!(segment.find_offset_by_timestamp(127, 0).unwrap().is_none());
    assert_eq!(found.leader_epoch, None);
}

#[test]
fn truncate_to_cuts_whole_batches_and_recomputes_the_max_timestamp() {
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, &small_config()).unwrap();
    let b0 = simple_batch(0, 3, 500, 50);
    let b1 = simple_batch(3, 3, 900, 50);
    let b2 = simple_batch(6, 3, 700, 50);
    for b in [&b0, &b1, &b2] {
        append_batch(&mut active, b);
    }
    assert_eq!(active.segment().largest_record_timestamp(), Some(902));
    // Offset 4 is inside b1: b1 and b2 go.
    let removed = active.truncate_to(4).unwrap();
    assert_eq!(removed, (b1.len() + b2.len()) as u64);
    assert_eq!(active.segment().size(), b0.len() as u64);
    assert_eq!(active.segment().largest_record_timestamp(), Some(502));
    assert_eq!(active.segment().read_next_offset().unwrap(), 3);
    // Past the end: nothing.
    assert_eq!(active.truncate_to(10).unwrap(), 0);
    // Appends continue at the cut.
    append_batch(&mut active, &simple_batch(3, 1, 600, 5));
    assert_eq!(active.segment().read_next_offset().unwrap(), 4);
    // To the base: empty.
    let removed = active.truncate_to(0).unwrap();
    assert_eq!(active.segment().size(), 0);
    assert!(removed > 0);
    let segment = active.seal().unwrap();
    assert_eq!(std::fs::metadata(segment.log_path()).unwrap().len(), 0);
}

/// One append of several batches that needs more index entries than the indexes have left
/// (a segment written over several opens restarts the byte count at each one): the entries
/// that do not fit are left out, every batch is written and found, and the segment asks to
/// roll. The old code refused the append (IndexFull) when the plan did not fit, and when it
/// fitted all but the time index's spare slot it wrote and published the batches, then
/// returned IndexFull from the index step.
#[test]
fn an_append_needing_more_index_entries_than_are_left_writes_every_batch_and_rolls_next() {
    for batches in [2_usize, 4] {
        let dir = tempdir();
        let config = SegmentConfig {
            index_interval_bytes: 0,
            max_index_bytes: 24, // three offset entries; two time slots, one usable
            ..small_config()
        };
        let mut active = ActiveSegment::create(dir.path(), 0, &config).unwrap();
        append_batch(&mut active, &simple_batch(0, 1, 1, 10));
        let mut whole = Vec::new();
        for i in 0..batches {
            let offset = 1 + i as i64;
            whole.extend(simple_batch(offset, 1, 2 + i as i64, 10));
        }
        let before = active.segment().size();
        append_batch(&mut active, &whole);
        assert_eq!(
            active.segment().size(),
            before + whole.len() as u64,
            "{batches} batches"
        );
        let oracle = scan(&read(&path(dir.path(), 0, FileKind::LOG)), 0);
        for offset in 0..=batches as i64 {
            let found = active
                .segment()
                .translate_offset(offset, 0)
                .unwrap()
                .unwrap();
            let expected = oracle.translate(offset).unwrap();
            assert_eq!(
                (found.position, found.offset),
                (expected.position, expected.last_offset),
                "offset {offset} of {batches} batches"
            );
        }
        let params = RollParams {
            max_segment_ms: i64::MAX,
            max_segment_bytes: u32::MAX,
            max_timestamp_in_messages: 100,
            max_offset_in_messages: 100,
            messages_size: 10,
            now_ms: 0,
        };
        assert!(active.should_roll(&params).unwrap(), "{batches} batches");
        let segment = active.seal().unwrap();
        assert_eq!(segment.read_next_offset().unwrap(), 1 + batches as i64);
    }
}

#[test]
fn append_errors_write_nothing() {
    let dir = tempdir();
    let config = SegmentConfig {
        index_interval_bytes: 0,
        max_index_bytes: 24, // three offset entries; two time slots, one usable
        ..small_config()
    };
    let mut active = ActiveSegment::create(dir.path(), 1_000, &config).unwrap();
    append_batch(&mut active, &simple_batch(1_000, 1, 1, 10));
    append_batch(&mut active, &simple_batch(1_001, 1, 2, 10));
    let size = active.segment().size();
    // The time index's usable slot is taken: the next index step fails before writing.
    let err = active
        .append(1_002, 3, 1_002, &simple_batch(1_002, 1, 3, 10))
        .unwrap_err();
    assert!(matches!(err, Error::IndexFull { .. }), "{err}");
    assert_eq!(active.segment().size(), size);
    let params = RollParams {
        max_segment_ms: i64::MAX,
        max_segment_bytes: u32::MAX,
        max_timestamp_in_messages: 3,
        max_offset_in_messages: 1_002,
        messages_size: 10,
        now_ms: 0,
    };
    assert!(active.should_roll(&params).unwrap());

    // A last offset beyond base + i32::MAX: typed error, nothing written.
    let far = 1_000 + i64::from(i32::MAX) + 1;
    let err = active
        .append(far, 3, far, &simple_batch(far, 1, 3, 10))
        .unwrap_err();
    assert!(
        matches!(err, Error::OffsetOverflow { offset, .. } if offset == far),
        "{err}"
    );
    assert_eq!(active.segment().size(), size);
    assert_eq!(
        std::fs::metadata(active.segment().log_path())
            .unwrap()
            .len(),
        size
    );
}

#[test]
fn should_roll_on_size_age_and_offsets() {
    let dir = tempdir();
    let config = SegmentConfig {
        segment_ms: 1_000,
        ..small_config()
    };
    let mut active = ActiveSegment::create(dir.path(), 0, &config).unwrap();
    let params = |ts, size, offset| RollParams {
        max_segment_ms: 1_000,
        max_segment_bytes: 1_000,
        max_timestamp_in_messages: ts,
        max_offset_in_messages: offset,
        messages_size: size,
        now_ms: 0,
    };
    // Empty segment: never by age.
    assert!(!active.should_roll(&params(1_000_000, 10, 0)).unwrap());
    append_batch(&mut active, &simple_batch(0, 1, 10_000, 100));
    let size = active.segment().size();
    // Age is measured from the first batch's max timestamp to the incoming one.
    assert!(!active.should_roll(&params(11_000, 10, 1)).unwrap());
    assert!(active.should_roll(&params(11_001, 10, 1)).unwrap());
    // Size: size > max - incoming.
    assert!(
        !active
            .should_roll(&params(10_000, 1_000 - size, 1))
            .unwrap()
    );
    assert!(
        active
            .should_roll(&params(10_000, 1_000 - size + 1, 1))
            .unwrap()
    );
    // Offsets that do not fit.
    assert!(
        active
            .should_roll(&params(10_000, 1, i64::from(i32::MAX) + 1))
            .unwrap()
    );
    assert!(
        !active
            .should_roll(&params(10_000, 1, i64::from(i32::MAX)))
            .unwrap()
    );

    // Without timestamps: the wall clock from creation.
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, &config).unwrap();
    append_batch(&mut active, &simple_batch(0, 1, -1, 10));
    active.set_created_ms(5_000);
    let mut p = params(-1, 1, 1);
    p.now_ms = 6_000;
    assert!(!active.should_roll(&p).unwrap());
    p.now_ms = 6_001;
    assert!(active.should_roll(&p).unwrap());
}

#[test]
fn roll_jitter_is_drawn_per_segment_below_its_bounds() {
    let config = SegmentConfig {
        segment_ms: 500,
        segment_jitter_ms: 10_000,
        ..small_config()
    };
    let mut seen = std::collections::BTreeSet::new();
    for base in 0..20 {
        let dir = tempdir();
        let active = ActiveSegment::create(dir.path(), base, &config).unwrap();
        assert!((0..500).contains(&active.roll_jitter_ms()));
        seen.insert(active.roll_jitter_ms());
    }
    assert!(seen.len() > 1, "jitter is random per segment");
}

#[test]
fn seal_trims_a_preallocated_log_and_both_indexes() {
    let dir = tempdir();
    let config = SegmentConfig {
        preallocate: true,
        segment_bytes: 64 * 1024,
        ..small_config()
    };
    let mut active = ActiveSegment::create(dir.path(), 7, &config).unwrap();
    let log_path = active.segment().log_path();
    assert_eq!(std::fs::metadata(&log_path).unwrap().len(), 64 * 1024);
    assert_eq!(active.segment().size(), 0);
    fill(&mut active, 50, 20);
    let size = active.segment().size();
    let segment = active.seal().unwrap();
    assert_eq!(std::fs::metadata(&log_path).unwrap().len(), size);
    let index_len = std::fs::metadata(path(dir.path(), 7, FileKind::INDEX))
        .unwrap()
        .len();
    let time_len = std::fs::metadata(path(dir.path(), 7, FileKind::TIME_INDEX))
        .unwrap()
        .len();
    assert_eq!(index_len, 8 * segment.offset_index_entries() as u64);
    assert_eq!(time_len, 12 * segment.time_index_entries() as u64);
    // Sealed: a second writer may be attached only through `resume`, and a read-only
    // segment refuses it.
    drop(segment);
    let (ro, _) = Segment::open(dir.path(), 7, &config, SegmentOpenOptions::read_only()).unwrap();
    assert!(matches!(
        ActiveSegment::resume(ro),
        Err(Error::ReadOnly { .. })
    ));
}

#[test]
fn one_writer_at_a_time() {
    let dir = tempdir();
    let active = ActiveSegment::create(dir.path(), 0, &small_config()).unwrap();
    let segment = active.segment().clone();
    assert!(matches!(
        ActiveSegment::resume(segment.clone()),
        Err(Error::WriterAttached { .. })
    ));
    assert!(matches!(
        segment.recover(),
        Err(Error::WriterAttached { .. })
    ));
    drop(active);
    let again = ActiveSegment::resume(segment).unwrap();
    again.close().unwrap();
}

#[test]
fn rename_to_deleted_then_delete_while_a_reader_holds_a_slice() {
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, &small_config()).unwrap();
    let batches = fill(&mut active, 100, 50);
    let segment = active.seal().unwrap();
    let slice = segment.read(0, u32::MAX, u64::MAX, true).unwrap().unwrap();
    segment.mark_deleted().unwrap();
    for kind in [FileKind::LOG, FileKind::INDEX, FileKind::TIME_INDEX] {
        let deleted = kind.with_suffix(Some(seglog_segment::TempSuffix::Deleted));
        assert!(path(dir.path(), 0, deleted).exists(), "{deleted}");
        assert!(!path(dir.path(), 0, kind).exists(), "{kind}");
    }
    segment.delete_files().unwrap();
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    // The slice and the segment itself keep working on the unlinked files.
    assert_eq!(slice.read_to_vec().unwrap(), batches.concat());
    let found = segment.translate_offset(77, 0).unwrap().unwrap();
    assert_eq!(found.offset, 77);
    assert!(
        segment
            .find_offset_by_timestamp(1_050, 0)
            .unwrap()
            .is_some()
    );
}

#[test]
fn largest_timestamp_falls_back_to_the_log_mtime() {
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, &small_config()).unwrap();
    append_batch(
        &mut active,
        &batch(0, &[(-1, 10), (-1, 10)], Compression::None),
    );
    let segment = active.seal().unwrap();
    assert_eq!(segment.largest_record_timestamp(), None);
    let mtime = segment.last_modified_ms().unwrap();
    assert_eq!(segment.largest_timestamp().unwrap(), mtime);
    assert!(mtime > 1_600_000_000_000);
}

#[test]
fn temporary_suffixes_cleaned_swap_and_back() {
    use seglog_segment::TempSuffix;
    let dir = tempdir();
    let config = small_config();
    let mut active = ActiveSegment::create(dir.path(), 40, &config).unwrap();
    for offset in 40..50 {
        append_batch(&mut active, &simple_batch(offset, 1, offset, 30));
    }
    let segment = active.close().unwrap();
    segment.rename_suffix(Some(TempSuffix::Cleaned)).unwrap();
    segment.rename_suffix(Some(TempSuffix::Swap)).unwrap();
    assert_eq!(segment.suffix(), Some(TempSuffix::Swap));
    drop(segment);
    for kind in [FileKind::LOG, FileKind::INDEX, FileKind::TIME_INDEX] {
        assert!(path(dir.path(), 40, kind.with_suffix(Some(TempSuffix::Swap))).exists());
    }
    // The loader opens `.swap` segments by suffix, then renames them to their final names.
    let options = SegmentOpenOptions {
        suffix: Some(TempSuffix::Swap),
        ..SegmentOpenOptions::default()
    };
    let (segment, report) = Segment::open(dir.path(), 40, &config, options).unwrap();
    assert_eq!(report.rebuilt, None);
    assert_eq!(segment.read_next_offset().unwrap(), 50);
    segment.rename_suffix(None).unwrap();
    assert_eq!(segment.log_path(), path(dir.path(), 40, FileKind::LOG));
    let (segment, _) =
        Segment::open(dir.path(), 40, &config, SegmentOpenOptions::default()).unwrap();
    assert_eq!(segment.translate_offset(45, 0).unwrap().unwrap().offset, 45);
}

#[test]
fn a_failed_create_leaves_no_files() {
    let dir = tempdir();
    // An existing `.log` is refused and kept as it was.
    std::fs::write(path(dir.path(), 3, FileKind::LOG), b"x").unwrap();
    let err = ActiveSegment::create(dir.path(), 3, &small_config()).unwrap_err();
    assert!(
        matches!(&err, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::AlreadyExists),
        "{err}"
    );
    assert_eq!(read(&path(dir.path(), 3, FileKind::LOG)), b"x");
    // An index that cannot be created (a directory in its place) removes the new `.log`.
    std::fs::create_dir(path(dir.path(), 4, FileKind::TIME_INDEX)).unwrap();
    assert!(ActiveSegment::create(dir.path(), 4, &small_config()).is_err());
    assert!(!path(dir.path(), 4, FileKind::LOG).exists());
    assert!(!path(dir.path(), 4, FileKind::INDEX).exists());
}

/// A read-write open never goes through a symlink (issue #26: `truncate` cut another log's
/// file through one): a linked `.log` or index is refused, naming the link, and the file it
/// points at keeps its bytes; a read-only open follows the link.
#[test]
fn a_read_write_open_refuses_segment_files_that_are_symlinks() {
    let (theirs, ours) = (tempdir(), tempdir());
    let config = small_config();
    let mut active = ActiveSegment::create(theirs.path(), 0, &config).unwrap();
    append_batch(&mut active, &simple_batch(0, 3, 1_000, 20));
    drop(active.seal().unwrap());
    for file_type in [
        seglog_segment::FileType::Log,
        seglog_segment::FileType::Index,
        seglog_segment::FileType::TimeIndex,
    ] {
        for t in [
            seglog_segment::FileType::Log,
            seglog_segment::FileType::Index,
            seglog_segment::FileType::TimeIndex,
        ] {
            let kind = FileKind::new(t);
            let (from, to) = (path(theirs.path(), 0, kind), path(ours.path(), 0, kind));
            let _ = std::fs::remove_file(&to);
            if t == file_type {
                std::os::unix::fs::symlink(&from, &to).unwrap();
            } else {
                std::fs::copy(&from, &to).unwrap();
            }
        }
        let before: Vec<Vec<u8>> = std::fs::read_dir(theirs.path())
            .unwrap()
            .map(|e| read(&e.unwrap().path()))
            .collect();
        let link = path(ours.path(), 0, FileKind::new(file_type));
        match Segment::open(ours.path(), 0, &config, SegmentOpenOptions::default()) {
            Err(Error::SymlinkRefused { path }) => assert_eq!(path, link),
            other => panic!("{file_type:?}: {other:?}"),
        }
        let after: Vec<Vec<u8>> = std::fs::read_dir(theirs.path())
            .unwrap()
            .map(|e| read(&e.unwrap().path()))
            .collect();
        assert_eq!(before, after, "{file_type:?}");
        let (segment, _) =
            Segment::open(ours.path(), 0, &config, SegmentOpenOptions::read_only()).unwrap();
        assert_eq!(segment.read_next_offset().unwrap(), 3);
    }
}
