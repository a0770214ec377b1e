//! Recovery: torn tails at every byte, corrupted bytes, zero-filled tails, offset overflow,
//! read-only (in-memory) recovery. Recovery never panics and never keeps a corrupt batch.

use std::path::Path;

use proptest::prelude::*;
use seglog_records::{Compression, CorruptKind as RecordsCorrupt};
use seglog_segment::{
    ActiveSegment, CorruptKind, Error, FileKind, FileType, RebuildReason, Segment, SegmentConfig,
    SegmentOpenOptions, TruncationReason,
};

use crate::support::{
    append_batch, batch, copy_dir, path, read, scan, simple_batch, small_config, tempdir,
};

/// A closed segment at base 0 with mixed batches; returns the dir and the batch sizes.
fn closed_segment(config: &SegmentConfig) -> (tempfile::TempDir, Vec<usize>) {
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, config).unwrap();
    let mut sizes = Vec::new();
    let mut next = 0;
    for i in 0..12i64 {
        let compression =
            [Compression::None, Compression::Gzip, Compression::Snappy][i as usize % 3];
        let records: Vec<(i64, usize)> = (0..3)
            .map(|j| (10_000 + i * 10 - j, 20 + j as usize))
            .collect();
        let bytes = batch(next, &records, compression);
        append_batch(&mut active, &bytes);
        next += 3;
        sizes.push(bytes.len());
    }
    active.close().unwrap();
    (dir, sizes)
}

fn write_log(dir: &Path, bytes: &[u8]) {
    std::fs::write(path(dir, 0, FileKind::LOG), bytes).unwrap();
}

/// Recovers the segment in `dir` (read-write) and checks the result against the oracle of
/// the bytes it held; returns the report, or `None` when a valid batch's offsets do not fit
/// the segment (damage to the offset field, which no checksum covers): then recovery must
/// raise `OffsetOverflow` and leave the `.log` alone.
fn try_recover_and_check(
    dir: &Path,
    config: &SegmentConfig,
) -> Option<seglog_segment::RecoveryReport> {
    let before = read(&path(dir, 0, FileKind::LOG));
    let oracle = scan(&before, 0);
    let options = SegmentOpenOptions {
        recover: true,
        ..SegmentOpenOptions::default()
    };
    let (segment, report) = match Segment::open(dir, 0, config, options) {
        Ok(opened) => opened,
        Err(Error::OffsetOverflow { offset, .. }) => {
            // A batch of the file claims it (the oracle may have cut that batch already).
            assert!(
                seglog_records::Batches::new(&before, 0)
                    .map_while(Result::ok)
                    .any(|b| b.last_offset() == offset)
            );
            assert!(offset < 0 || offset > i64::from(i32::MAX));
            assert_eq!(read(&path(dir, 0, FileKind::LOG)), before);
            return None;
        }
        Err(e) => panic!("{e}"),
    };
    let recovery = report.recovery.unwrap();
    assert_eq!(recovery.valid_bytes, oracle.valid_bytes);
    assert_eq!(
        recovery.truncated_bytes,
        before.len() as u64 - oracle.valid_bytes
    );
    assert_eq!(recovery.batches as usize, oracle.batches.len());
    assert_eq!(recovery.next_offset, oracle.next_offset(0));
    assert_eq!(segment.size(), oracle.valid_bytes);
    segment.close().unwrap();
    drop(segment);
    let after = read(&path(dir, 0, FileKind::LOG));
    assert_eq!(
        after,
        &before[..oracle.valid_bytes as usize],
        "kept bytes are a prefix"
    );
    // What is kept validates completely, and the indexes are Kafka's.
    assert_eq!(scan(&after, 0).valid_bytes, after.len() as u64);
    let (index, time) = oracle.kafka_recover_indexes(0, u64::from(config.index_interval_bytes));
    assert_eq!(read(&path(dir, 0, FileKind::INDEX)), index);
    assert_eq!(read(&path(dir, 0, FileKind::TIME_INDEX)), time);
    Some(recovery)
}

fn recover_and_check(dir: &Path, config: &SegmentConfig) -> seglog_segment::RecoveryReport {
    try_recover_and_check(dir, config).expect("offsets fit")
}

#[test]
fn torn_tail_at_every_byte_of_the_last_batch() {
    let config = small_config();
    let (dir, sizes) = closed_segment(&config);
    let full = read(&path(dir.path(), 0, FileKind::LOG));
    let last_start = full.len() - sizes[sizes.len() - 1];
    for len in last_start..full.len() {
        let copy = copy_dir(dir.path());
        write_log(copy.path(), &full[..len]);
        let recovery = recover_and_check(copy.path(), &config);
        assert_eq!(recovery.valid_bytes, last_start as u64, "cut at {len}");
        let expected = (len > last_start).then_some(TruncationReason::PartialTail {
            position: last_start as u64,
        });
        assert_eq!(recovery.reason, expected, "cut at {len}");
    }
}

#[test]
fn a_flipped_byte_is_never_kept() {
    let config = small_config();
    let (dir, sizes) = closed_segment(&config);
    let full = read(&path(dir.path(), 0, FileKind::LOG));
    // Every byte of a middle batch: 0..16 are not covered by the CRC (offset, length, epoch),
    // the rest are.
    let start: usize = sizes[..5].iter().sum();
    for at in start..start + sizes[5] {
        let copy = copy_dir(dir.path());
        let mut bytes = full.clone();
        bytes[at] ^= 0x5a;
        write_log(copy.path(), &bytes);
        let Some(recovery) = try_recover_and_check(copy.path(), &config) else {
            assert!(at - start < 8, "only the offset field can overflow: {at}");
            continue;
        };
        let covered_by_crc = at - start >= 17;
        if covered_by_crc {
            assert_eq!(recovery.valid_bytes, start as u64, "flip at {at}");
            assert!(
                matches!(recovery.reason, Some(TruncationReason::Corrupt { position, .. }) if position == start as u64),
                "flip at {at}: {:?}",
                recovery.reason
            );
        } else {
            assert!(recovery.valid_bytes <= full.len() as u64, "flip at {at}");
        }
    }
}

#[test]
fn zero_filled_tails_are_cut() {
    let config = small_config();
    let (dir, _) = closed_segment(&config);
    let full = read(&path(dir.path(), 0, FileKind::LOG));
    for zeros in [1, 12, 17, 18, 61, 100, 4096] {
        let copy = copy_dir(dir.path());
        let mut bytes = full.clone();
        bytes.resize(full.len() + zeros, 0);
        write_log(copy.path(), &bytes);
        let recovery = recover_and_check(copy.path(), &config);
        assert_eq!(recovery.valid_bytes, full.len() as u64);
        assert_eq!(recovery.truncated_bytes, zeros as u64);
        let position = full.len() as u64;
        if zeros <= 17 {
            assert_eq!(
                recovery.reason,
                Some(TruncationReason::PartialTail { position })
            );
        } else {
            assert!(
                matches!(
                    recovery.reason,
                    Some(TruncationReason::Corrupt {
                        position: p,
                        kind: CorruptKind::Batch(RecordsCorrupt::SizeBelowMinimum { size: 0, .. }),
                    }) if p == position
                ),
                "{zeros}: {:?}",
                recovery.reason
            );
        }
    }
}

#[test]
fn a_crashed_preallocated_segment_is_rebuilt_on_open() {
    let dir = tempdir();
    let config = SegmentConfig {
        preallocate: true,
        segment_bytes: 32 * 1024,
        ..small_config()
    };
    let mut active = ActiveSegment::create(dir.path(), 0, &config).unwrap();
    for offset in 0..40 {
        append_batch(&mut active, &simple_batch(offset, 1, 100 + offset, 40));
    }
    let size = active.segment().size();
    drop(active); // a kill: nothing trimmed
    assert_eq!(
        std::fs::metadata(path(dir.path(), 0, FileKind::LOG))
            .unwrap()
            .len(),
        32 * 1024
    );
    let (segment, report) =
        Segment::open(dir.path(), 0, &config, SegmentOpenOptions::default()).unwrap();
    // The indexes are zero-padded (caught first) and the log has a zero tail.
    assert!(report.rebuilt.is_some(), "{report:?}");
    let recovery = report.recovery.unwrap();
    assert_eq!(recovery.valid_bytes, size);
    assert_eq!(recovery.truncated_bytes, 32 * 1024 - size);
    assert_eq!(segment.read_next_offset().unwrap(), 40);
    assert_eq!(
        std::fs::metadata(path(dir.path(), 0, FileKind::LOG))
            .unwrap()
            .len(),
        size
    );
}

#[test]
fn offset_overflow_in_the_log_is_raised_and_the_log_kept() {
    let dir = tempdir();
    let config = small_config();
    let mut log = simple_batch(0, 2, 10, 10);
    let far = i64::from(i32::MAX) + 5;
    log.extend(simple_batch(far, 1, 20, 10));
    write_log(dir.path(), &log);
    let options = SegmentOpenOptions {
        recover: true,
        ..SegmentOpenOptions::default()
    };
    let err = Segment::open(dir.path(), 0, &config, options).unwrap_err();
    assert!(
        matches!(err, Error::OffsetOverflow { offset, base_offset: 0, .. } if offset == far),
        "{err}"
    );
    assert_eq!(read(&path(dir.path(), 0, FileKind::LOG)), log);
}

/// Written with room for every entry, then recovered under a `segment.index.bytes` too small
/// for what the rule produces: the rebuild stops adding to the full indexes and keeps every batch.
#[test]
fn recovery_that_needs_more_index_entries_than_the_file_holds_keeps_every_batch() {
    // Written with room for every entry, then recovered under a `segment.index.bytes` too
    // small for what the rule produces (as a segment written over several opens can need).
    let (dir, sizes) = closed_segment(&small_config());
    let config = SegmentConfig {
        max_index_bytes: 24,
        ..small_config()
    };
    let before = read(&path(dir.path(), 0, FileKind::LOG));
    let oracle = scan(&before, 0);
    let options = SegmentOpenOptions {
        recover: true,
        ..SegmentOpenOptions::default()
    };
    let (segment, report) = Segment::open(dir.path(), 0, &config, options).unwrap();
    let recovery = report.recovery.unwrap();
    assert_eq!(recovery.batches as usize, sizes.len());
    assert_eq!(recovery.truncated_bytes, 0);
    assert_eq!(
        recovery.index_entries, 3,
        "the offset index is full, not overfull"
    );
    assert_eq!(
        recovery.time_index_entries, 2,
        "one entry and the final one"
    );
    assert_eq!(segment.read_next_offset().unwrap(), 36);
    for offset in 0..36 {
        let found = segment.translate_offset(offset, 0).unwrap().unwrap();
        let expected = oracle.translate(offset).unwrap();
        assert_eq!(
            (found.position, found.offset),
            (expected.position, expected.last_offset)
        );
    }
    segment.close().unwrap();
    drop(segment);
    assert_eq!(read(&path(dir.path(), 0, FileKind::LOG)), before);
    assert_eq!(
        std::fs::metadata(path(dir.path(), 0, FileKind::INDEX))
            .unwrap()
            .len(),
        24
    );
}

/// A read-only open copies indexes into memory: one larger than any index of its `.log`
/// can be (a 2 GiB sparse file) is rebuilt in memory instead, never read, and the file is
/// left alone.
#[test]
fn read_only_open_rebuilds_an_index_larger_than_its_log_can_need() {
    let config = small_config();
    let (dir, _) = closed_segment(&config);
    for file_type in [FileType::Index, FileType::TimeIndex] {
        let index = path(dir.path(), 0, FileKind::new(file_type));
        let before = read(&index);
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&index)
            .unwrap();
        f.set_len(2 << 30).unwrap();
        let (segment, report) =
            Segment::open(dir.path(), 0, &config, SegmentOpenOptions::read_only()).unwrap();
        assert!(
            matches!(
                report.rebuilt,
                Some(RebuildReason::CorruptIndex {
                    file_type: t,
                    kind: seglog_index_core::CorruptKind::LargerThanItsLog,
                    ..
                }) if t == file_type
            ),
            "{report:?}"
        );
        assert_eq!(segment.read_next_offset().unwrap(), 36);
        assert_eq!(std::fs::metadata(&index).unwrap().len(), 2 << 30);
        f.set_len(0).unwrap();
        std::fs::write(&index, before).unwrap();
    }
}

#[test]
fn read_only_recovery_changes_nothing_on_disk() {
    let config = small_config();
    let (dir, sizes) = closed_segment(&config);
    let full = read(&path(dir.path(), 0, FileKind::LOG));
    let mut torn = full.clone();
    torn.truncate(full.len() - 5);
    torn.extend([0u8; 100]);
    write_log(dir.path(), &torn);
    let before: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (p.clone(), read(&p))
        })
        .collect();
    let (segment, report) =
        Segment::open(dir.path(), 0, &config, SegmentOpenOptions::read_only()).unwrap();
    assert!(
        matches!(report.rebuilt, Some(RebuildReason::LogTail { .. })),
        "{report:?}"
    );
    let recovery = report.recovery.unwrap();
    assert!(!recovery.on_disk);
    let valid = (full.len() - sizes[sizes.len() - 1]) as u64;
    assert_eq!(recovery.valid_bytes, valid);
    assert_eq!(segment.size(), valid);
    // Reads stop at the valid length.
    let all = segment.read(0, u32::MAX, u64::MAX, true).unwrap().unwrap();
    assert_eq!(all.len(), valid);
    assert_eq!(segment.read_next_offset().unwrap(), 33);
    assert!(segment.read(34, 100, u64::MAX, true).unwrap().is_none());
    // Writes are refused; flush and close are no-ops.
    assert!(matches!(
        segment.mark_deleted(),
        Err(Error::ReadOnly { .. })
    ));
    segment.flush().unwrap();
    segment.close().unwrap();
    for (p, bytes) in before {
        assert_eq!(read(&p), bytes, "{}", p.display());
    }
}

#[test]
fn decoding_records_on_recovery_cuts_a_valid_crc_batch_that_does_not_decode() {
    let config = small_config();
    let (dir, sizes) = closed_segment(&config);
    let mut log = read(&path(dir.path(), 0, FileKind::LOG));
    // Batch 3 (uncompressed): record count lowered by one, CRC recomputed.
    let at = sizes[..3].iter().sum::<usize>();
    let batch = &mut log[at..at + sizes[3]];
    let count = i32::from_be_bytes(batch[57..61].try_into().unwrap());
    batch[57..61].copy_from_slice(&(count - 1).to_be_bytes());
    let crc = seglog_records::crc32c(&batch[21..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
    write_log(dir.path(), &log);
    let recover = SegmentOpenOptions {
        recover: true,
        ..SegmentOpenOptions::default()
    };

    // Kafka's cost (CRCs only): the batch is kept, in memory as on disk.
    let (_, report) =
        Segment::open(dir.path(), 0, &config, SegmentOpenOptions::read_only()).unwrap();
    assert!(report.recovery.is_none_or(|r| r.truncated_bytes == 0));
    let kept = copy_dir(dir.path());
    let (_, report) = Segment::open(kept.path(), 0, &config, recover).unwrap();
    assert_eq!(report.recovery.unwrap().truncated_bytes, 0);

    // Decoding: corrupt at the batch's own position, the intact batches before it kept.
    let decoding = SegmentConfig {
        decode_records_on_recovery: true,
        ..config.clone()
    };
    let (segment, report) = Segment::open(dir.path(), 0, &decoding, recover).unwrap();
    let recovery = report.recovery.unwrap();
    assert_eq!(recovery.valid_bytes, at as u64);
    assert_eq!(recovery.batches, 3);
    assert!(
        matches!(
            recovery.reason,
            Some(TruncationReason::Corrupt {
                position,
                kind: CorruptKind::Batch(RecordsCorrupt::TrailingBytes { .. })
            }) if position == at as u64
        ),
        "{:?}",
        recovery.reason
    );
    assert_eq!(segment.read_next_offset().unwrap(), 9);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Arbitrary damage (overwritten runs of random bytes, cuts, appended garbage): recovery
    /// never panics, keeps a prefix that validates completely, and agrees with the oracle.
    #[test]
    fn recovery_survives_arbitrary_damage(
        damage in proptest::collection::vec((0.0f64..1.0, proptest::collection::vec(any::<u8>(), 1..40)), 0..4),
        cut in proptest::option::of(0.0f64..1.0),
        garbage in proptest::collection::vec(any::<u8>(), 0..80),
    ) {
        let config = small_config();
        let (dir, _) = closed_segment(&config);
        let mut bytes = read(&path(dir.path(), 0, FileKind::LOG));
        for (at, run) in damage {
            let at = (at * bytes.len() as f64) as usize;
            for (i, b) in run.into_iter().enumerate() {
                if let Some(x) = bytes.get_mut(at + i) {
                    *x = b;
                }
            }
        }
        if let Some(cut) = cut {
            let len = (cut * bytes.len() as f64) as usize;
            bytes.truncate(len);
        }
        bytes.extend(garbage);
        write_log(dir.path(), &bytes);
        try_recover_and_check(dir.path(), &config);
    }
}

/// A batch whose base offset (outside every checksum) was flipped upwards passes its own
/// checks; its successor then looks out of order. The successor follows on from the batch
/// before the damaged one, so recovery cuts at the damaged batch and never serves it.
#[test]
fn an_upward_base_offset_flip_is_cut_at_the_damaged_batch() {
    let config = small_config();
    let (dir, sizes) = closed_segment(&config);
    let log_path = path(dir.path(), 0, FileKind::LOG);
    let mut bytes = read(&log_path);
    let damaged_position = (sizes[0] + sizes[1]) as u64;
    // Byte 5 of the base offset: + 2^19.
    bytes[damaged_position as usize + 5] ^= 1 << 3;
    write_log(dir.path(), &bytes);
    let options = SegmentOpenOptions {
        recover: true,
        ..SegmentOpenOptions::default()
    };
    let (segment, report) = Segment::open(dir.path(), 0, &config, options).unwrap();
    let recovery = report.recovery.unwrap();
    assert_eq!(recovery.valid_bytes, damaged_position);
    assert_eq!(recovery.batches, 2);
    assert_eq!(recovery.next_offset, 6);
    match recovery.reason {
        Some(TruncationReason::Corrupt {
            position,
            kind:
                CorruptKind::OffsetJump {
                    last_offset,
                    next_first_offset,
                },
        }) => {
            assert_eq!(position, damaged_position);
            assert_eq!(last_offset, 8 + (1 << 19));
            assert_eq!(next_first_offset, 9);
        }
        other => panic!("expected an offset jump, got {other:?}"),
    }
    assert_eq!(segment.size(), damaged_position);
    assert_eq!(segment.read_next_offset().unwrap(), 6);
}

/// The digest a recovery collects is what a walk of the kept batches gives: the first batch,
/// the epoch changes, every batch with a producer id (a marker decoded), none of a batch the
/// offset-jump rule takes back or of one after the cut; past its entry limit there is none.
#[test]
fn the_recovery_digest_describes_exactly_the_kept_batches() {
    use seglog_records::{BatchBuilder, ControlRecordType, EndTransactionMarker};
    use seglog_segment::{EpochStart, ProducerBatch, RecoveryDigest, TxnMarker};

    // (base, epoch, producer id, transactional)
    let plan = [
        (0, -1, -1, false),
        (2, 0, -1, false),
        (4, 0, 7, true),
        (6, 3, -1, false),
        (8, 3, 8, false),
        (10, 5, 9, false),
    ];
    let mut batches: Vec<Vec<u8>> = plan
        .iter()
        .map(|&(base, epoch, pid, txn)| {
            let mut b = BatchBuilder::new(base).partition_leader_epoch(epoch);
            if pid >= 0 {
                b = b.producer(pid, 1, base as i32).transactional(txn);
            }
            b.append(1_000 + base, None, Some(b"a"), &[]);
            b.append(1_001 + base, None, Some(b"b"), &[]);
            b.build().unwrap().to_vec()
        })
        .collect();
    let marker = BatchBuilder::end_transaction_marker(
        12,
        5_000,
        5,
        7,
        1,
        ControlRecordType::Abort,
        EndTransactionMarker {
            version: 0,
            coordinator_epoch: 4,
        },
    )
    .unwrap();
    batches.push(marker.to_vec());
    let whole: Vec<u8> = batches.concat();
    let expected = |kept: usize| {
        let mut digest = RecoveryDigest::default();
        let mut last_epoch = None;
        for bytes in &batches[..kept] {
            let batch = seglog_records::BatchRef::parse(bytes, 0).unwrap();
            let h = *batch.header();
            let base = h.base_offset.unwrap();
            digest
                .first_batch
                .get_or_insert((h.partition_leader_epoch, base));
            if h.partition_leader_epoch >= 0 && last_epoch != Some(h.partition_leader_epoch) {
                last_epoch = Some(h.partition_leader_epoch);
                digest.epoch_starts.push(EpochStart {
                    epoch: h.partition_leader_epoch,
                    base_offset: base,
                });
            }
            if h.producer_id >= 0 {
                digest
                    .producer_batches
                    .push(ProducerBatch::from_batch(&batch).unwrap());
            }
            digest.next_offset = h.last_offset + 1;
        }
        digest
    };
    let recover = |bytes: &[u8], limit: usize| {
        let dir = tempdir();
        write_log(dir.path(), bytes);
        let options = SegmentOpenOptions {
            recover: true,
            digest_entries: limit,
            ..SegmentOpenOptions::default()
        };
        let (_segment, report) = Segment::open(dir.path(), 0, &small_config(), options).unwrap();
        report.recovery.unwrap()
    };

    let full = recover(&whole, 100);
    let digest = full.digest.clone().unwrap();
    assert_eq!(digest, expected(batches.len()));
    assert_eq!(digest.next_offset, full.next_offset);
    assert_eq!(
        digest.producer_batches.last().unwrap().marker,
        Some(TxnMarker {
            timestamp_ms: 5_000,
            coordinator_epoch: 4,
            is_abort: true
        })
    );
    assert_eq!(
        digest
            .epoch_starts
            .iter()
            .map(|e| e.epoch)
            .collect::<Vec<_>>(),
        [0, 3, 5]
    );
    // Exactly at the limit it is kept; one entry fewer allowed, there is none.
    assert!(recover(&whole, digest.entries()).digest.is_some());
    assert_eq!(recover(&whole, digest.entries() - 1).digest, None);
    assert_eq!(recover(&whole, 0).digest, None);

    // A torn tail: the cut batch is not in it.
    let torn = &whole[..whole.len() - 3];
    assert_eq!(
        recover(torn, 100).digest.unwrap(),
        expected(batches.len() - 1)
    );

    // The batch at base 8 (epoch 3, producer 8) has its base offset flipped upwards: its
    // successor follows on from the batch before it, so it is taken back.
    let mut jumped = batches.clone();
    jumped[4][5] ^= 1 << 3;
    let report = recover(&jumped.concat(), 100);
    assert!(matches!(
        report.reason,
        Some(TruncationReason::Corrupt {
            kind: CorruptKind::OffsetJump { .. },
            ..
        })
    ));
    assert_eq!(report.next_offset, 8);
    assert_eq!(report.digest.unwrap(), expected(4));
}
