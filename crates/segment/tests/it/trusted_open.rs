//! `SegmentOpenOptions::trust_clean_shutdown`: after a clean shutdown a segment opens without
//! reading `.log` bytes, and the data-free checks still catch what a crash leaves.

use seglog_index_core::CorruptKind;
use seglog_segment::{
    ActiveSegment, FileKind, FileType, OpenReport, RebuildReason, Segment, SegmentOpenOptions,
};

use crate::support::{append_batch, path, read, simple_batch, small_config, tempdir};

/// Asserts that the open rebuilt the indexes because `file_type` failed the check with `kind`.
fn assert_rebuilt_for(report: &OpenReport, file_type: FileType, kind: CorruptKind) {
    assert!(
        matches!(
            report.rebuilt,
            Some(RebuildReason::CorruptIndex { file_type: f, kind: k, .. }) if f == file_type && k == kind
        ),
        "{report:?}"
    );
}

fn trusted() -> SegmentOpenOptions {
    SegmentOpenOptions {
        trust_clean_shutdown: true,
        ..SegmentOpenOptions::default()
    }
}

/// A segment at base 0 holding 20 batches, closed (clean) or dropped (as after a crash).
fn segment(clean: bool) -> (tempfile::TempDir, Vec<u8>) {
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, &small_config()).unwrap();
    let mut bytes = Vec::new();
    for o in 0..20i64 {
        let batch = simple_batch(o * 2, 2, 1_000 + o, 40);
        append_batch(&mut active, &batch);
        bytes.extend_from_slice(&batch);
    }
    if clean {
        active.close().unwrap();
    }
    (dir, bytes)
}

#[test]
fn a_clean_segment_opens_without_reading_the_log() {
    let (dir, bytes) = segment(true);
    let config = small_config();
    let (segment, report) = Segment::open(dir.path(), 0, &config, trusted()).unwrap();
    assert_eq!(report.rebuilt, None);
    assert!(segment.offset_index_entries() > 1);
    assert_eq!(segment.size(), bytes.len() as u64);
    assert_eq!(
        segment.max_timestamp_and_offset().timestamp_ms,
        1_000 + 19 + 1
    );
    assert_eq!(segment.read_next_offset().unwrap(), 40);
    drop(segment);

    // Proof that no `.log` byte is read: zero the `.log` (same length). The trusted open
    // does not notice; the strict open walks the tail and rebuilds.
    let log = path(dir.path(), 0, FileKind::LOG);
    std::fs::write(&log, vec![0u8; bytes.len()]).unwrap();
    let (_, report) = Segment::open(dir.path(), 0, &config, trusted()).unwrap();
    assert_eq!(report.rebuilt, None);
    let (_, report) = Segment::open(dir.path(), 0, &config, SegmentOpenOptions::default()).unwrap();
    assert!(report.rebuilt.is_some(), "{report:?}");
}

#[test]
fn trusted_checks_still_catch_a_crashed_segment() {
    // Never closed: both indexes are preallocated and end in zeros.
    let (dir, bytes) = segment(false);
    let config = small_config();
    let (segment, report) = Segment::open(dir.path(), 0, &config, trusted()).unwrap();
    assert_rebuilt_for(&report, FileType::Index, CorruptKind::ZeroPaddedTail);
    assert_eq!(segment.read_next_offset().unwrap(), 40);
    assert_eq!(read(&path(dir.path(), 0, FileKind::LOG)), bytes);
}

#[test]
fn trusted_checks_catch_a_short_log_and_a_missing_index() {
    let config = small_config();
    // The `.log` lost its tail (an index entry points past its end).
    let (dir, bytes) = segment(true);
    let log = path(dir.path(), 0, FileKind::LOG);
    std::fs::write(&log, &bytes[..bytes.len() / 3]).unwrap();
    let (_, report) = Segment::open(dir.path(), 0, &config, trusted()).unwrap();
    assert_rebuilt_for(&report, FileType::Index, CorruptKind::PositionOutOfRange);

    // An empty `.log` with a time index that names offsets.
    let (dir, _) = segment(true);
    std::fs::remove_file(path(dir.path(), 0, FileKind::INDEX)).unwrap();
    std::fs::write(path(dir.path(), 0, FileKind::INDEX), b"").unwrap();
    std::fs::write(path(dir.path(), 0, FileKind::LOG), b"").unwrap();
    let (_, report) = Segment::open(dir.path(), 0, &config, trusted()).unwrap();
    assert_rebuilt_for(&report, FileType::TimeIndex, CorruptKind::OffsetOutOfRange);

    // A missing index.
    let (dir, _) = segment(true);
    std::fs::remove_file(path(dir.path(), 0, FileKind::TIME_INDEX)).unwrap();
    let (segment, report) = Segment::open(dir.path(), 0, &config, trusted()).unwrap();
    assert_eq!(
        report.rebuilt,
        Some(RebuildReason::MissingIndex {
            file_type: FileType::TimeIndex
        })
    );
    assert_eq!(segment.read_next_offset().unwrap(), 40);
}

/// KAFKA-7283 after a clean shutdown: a damaged entry in the middle of the offset index is
/// caught by the full index check (memory only); without it, it is trusted as Kafka does.
#[test]
fn the_full_index_check_still_runs_when_trusting() {
    use std::os::unix::fs::FileExt;
    let (dir, _) = segment(true);
    let config = small_config();
    let index = path(dir.path(), 0, FileKind::INDEX);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&index)
        .unwrap();
    // Entry 0 now claims a position beyond entry 1's.
    file.write_all_at(&[0, 0, 0, 1, 0, 0, 0x7f, 0], 0).unwrap();
    let (_, report) = Segment::open(dir.path(), 0, &config, trusted()).unwrap();
    assert!(
        matches!(
            report.rebuilt,
            Some(RebuildReason::CorruptIndex {
                file_type: FileType::Index,
                ..
            })
        ),
        "{report:?}"
    );
    let (dir, _) = segment(true);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path(dir.path(), 0, FileKind::INDEX))
        .unwrap();
    file.write_all_at(&[0, 0, 0, 1, 0, 0, 0x7f, 0], 0).unwrap();
    let quick = SegmentOpenOptions {
        full_index_check: false,
        ..trusted()
    };
    let (_, report) = Segment::open(dir.path(), 0, &config, quick).unwrap();
    assert_eq!(report.rebuilt, None);
}
