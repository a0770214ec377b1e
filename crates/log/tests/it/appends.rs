//! Leader and follower appends, rolls, reads and ListOffsets.

use seglog::{AppendErrorKind, Error, Isolation, ListOffsets, LogConfig, TimestampType};

use crate::support::*;

#[test]
fn leader_append_assigns_offsets_and_rolls() {
    let (_dir, _clock, log) = fresh(small_config(1024));
    let mut expected = Vec::new();
    for i in 0..40 {
        let info = log.append(&numbered(T0 + i, &format!("b{i}"), 3)).unwrap();
        assert_eq!(info.first_offset, i * 3);
        assert_eq!(info.last_offset, i * 3 + 2);
        for j in 0..3 {
            expected.push((i * 3 + j, format!("b{i}-{j}").into_bytes()));
        }
    }
    assert_eq!(log.log_end_offset(), 120);
    assert!(log.segment_count() > 3, "{}", log.segment_count());
    assert_eq!(values(&log), expected);
    let segments = log.segments();
    for pair in segments.windows(2) {
        assert_eq!(pair[0].next_offset, pair[1].base_offset);
        assert!(pair[0].size_bytes <= 1024);
    }
    assert!(segments.last().unwrap().is_active);
}

#[test]
fn reads_respect_the_high_watermark_and_report_out_of_range() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), small_config(1 << 20), &clock());
    append_numbered(&log, 10, "v", 1);
    assert_eq!(log.high_watermark(), 0);
    assert!(read_all(&log, 0, Isolation::ReadUncommitted).is_empty());
    log.set_high_watermark(4).unwrap();
    let upto_hw: Vec<i64> = read_all(&log, 0, Isolation::ReadUncommitted)
        .iter()
        .map(|r| r.0)
        .collect();
    assert_eq!(upto_hw, vec![0, 1, 2, 3]);
    assert_eq!(log.set_high_watermark(99).unwrap(), 10);
    match log.read(11, 100, Isolation::LogEnd, true) {
        Err(Error::OffsetOutOfRange {
            offset: 11,
            log_start_offset: 0,
            log_end_offset: 10,
        }) => {}
        other => panic!("{other:?}"),
    }
    assert!(
        log.read(10, 100, Isolation::LogEnd, true)
            .unwrap()
            .slice
            .is_empty()
    );
}

#[test]
fn log_append_time_and_list_offsets() {
    let (_dir, clock, log) = fresh(LogConfig {
        message_timestamp_type: TimestampType::LogAppendTime,
        ..small_config(1 << 20)
    });
    let info = log.append(&numbered(5, "x", 2)).unwrap();
    assert_eq!(info.log_append_time_ms, Some(T0));
    let records = read_all(&log, 0, Isolation::LogEnd);
    assert!(records.iter().all(|r| r.1 == T0));

    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), small_config(512), &clock);
    // Timestamps inside one batch: the max is in the middle (KAFKA-16310).
    let mut b = seglog::BatchBuilder::new(0);
    b.append(T0 + 10, None, Some(b"a"), &[]);
    b.append(T0 + 50, None, Some(b"b"), &[]);
    b.append(T0 + 20, None, Some(b"c"), &[]);
    log.append(&b.build().unwrap()).unwrap();
    for i in 0..20 {
        log.append(&numbered(T0 + 30 + i, "y", 1)).unwrap();
    }
    let max = log
        .offset_for_timestamp(ListOffsets::MaxTimestamp)
        .unwrap()
        .unwrap();
    assert_eq!((max.offset, max.timestamp_ms), (1, T0 + 50));
    assert_eq!(
        log.offset_for_timestamp(ListOffsets::Earliest)
            .unwrap()
            .unwrap()
            .offset,
        0
    );
    assert_eq!(
        log.offset_for_timestamp(ListOffsets::Latest)
            .unwrap()
            .unwrap()
            .offset,
        23
    );
    let by_time = log
        .offset_for_timestamp(ListOffsets::Timestamp(T0 + 15))
        .unwrap()
        .unwrap();
    assert_eq!(by_time.offset, 1);
    let by_time = log
        .offset_for_timestamp(ListOffsets::Timestamp(T0 + 45))
        .unwrap()
        .unwrap();
    assert_eq!((by_time.offset, by_time.timestamp_ms), (1, T0 + 50));
    let late = log
        .offset_for_timestamp(ListOffsets::Timestamp(T0 + 49))
        .unwrap()
        .unwrap();
    assert_eq!(late.offset, 1);
    assert!(
        log.offset_for_timestamp(ListOffsets::Timestamp(T0 + 1000))
            .unwrap()
            .is_none()
    );
}

/// A truncation to 5 removes the tail segment 6; a follower batch at 8 then rolls across the
/// gap, so a `.deleted` segment 6 would lie between segments 0 and 8, where the loader renames
/// a `.deleted` segment back after a crash (hence a truncation unlinks at once, e346946). The
/// truncated record must not come back (second long run, seed 201512: seglog's segments `[0,18,19]`
/// after the crash, Kafka's `[0,19]`, the truncated marker at 18 in the log again).
#[test]
fn a_crash_after_a_roll_across_a_gap_does_not_bring_back_a_truncated_segment() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("t-0");
    let clock = clock();
    let config = small_config(200);
    let log = open(&dir, config.clone(), &clock);
    let batch = |base: i64, values: &[&[u8]]| {
        let mut b = seglog::BatchBuilder::new(base);
        for v in values {
            b.append(T0, None, Some(v), &[]);
        }
        b.build().unwrap()
    };
    log.append(&batch(0, &[b"v0", b"v1", b"v2", b"v3", b"v4"]))
        .unwrap();
    log.append(&batch(0, &[b"cut"])).unwrap();
    log.roll().unwrap();
    log.append(&batch(0, &[b"truncated"])).unwrap();
    let bases =
        |log: &seglog::Log| -> Vec<i64> { log.segments().iter().map(|s| s.base_offset).collect() };
    assert_eq!(bases(&log), [0, 6]);
    log.truncate_to(5).unwrap();
    assert_eq!(bases(&log), [0]);
    log.append_as_follower(&batch(8, &[&[b'x'; 60]])).unwrap();
    assert_eq!(
        bases(&log),
        [0, 8],
        "the follower batch rolled across the gap"
    );
    drop(log); // a crash: no close, the truncated segment's deletion still pending
    let log = open(&dir, config, &clock);
    assert!(!log.load_report().had_clean_shutdown);
    assert!(
        log.load_report().restored_files.is_empty(),
        "{:?}",
        log.load_report().restored_files
    );
    assert_eq!(bases(&log), [0, 8]);
    let offsets: Vec<i64> = values(&log).iter().map(|v| v.0).collect();
    assert_eq!(offsets, vec![0, 1, 2, 3, 4, 8]);
}

#[test]
fn follower_appends_keep_offsets_and_gaps() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), small_config(1 << 20), &clock());
    let mut b = seglog::BatchBuilder::new(10);
    b.append(T0, None, Some(b"ten"), &[]);
    log.append_as_follower(&b.build().unwrap()).unwrap();
    let mut b = seglog::BatchBuilder::new(20);
    b.append(T0, None, Some(b"twenty"), &[]);
    log.append_as_follower(&b.build().unwrap()).unwrap();
    assert_eq!(log.log_end_offset(), 21);
    let offsets: Vec<i64> = values(&log).iter().map(|v| v.0).collect();
    assert_eq!(offsets, vec![10, 20]);
    let mut b = seglog::BatchBuilder::new(15);
    b.append(T0, None, Some(b"late"), &[]);
    let e = log.append_as_follower(&b.build().unwrap()).unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidAppend {
                kind: AppendErrorKind::UnexpectedAppendOffset { .. }
            }
        ),
        "{e}"
    );
}

/// A follower append of legacy messages after a gap that needs a roll rolls at the log end, as
/// Kafka 4.4's `UnifiedLog.maybeRoll` does (`firstOffset` is known only for a v2 first batch, so
/// the roll offset is `last - i32::MAX`, below the log end), not at the first message's
/// offset. Found by the differential histories (issue #25: seglog's segments `[.., 53]`,
/// Kafka's `[.., 49]`).
#[test]
fn a_legacy_follower_append_after_a_gap_rolls_at_the_log_end() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), small_config(200), &clock());
    let mut b = seglog::BatchBuilder::new(0);
    for _ in 0..4 {
        b.append(T0, None, Some(&[7u8; 10]), &[]);
    }
    log.append_as_follower(&b.build().unwrap()).unwrap();
    assert_eq!(log.log_end_offset(), 4);
    // 200 bytes are not enough for both: the append rolls.
    let legacy: Vec<u8> = [
        crate::leader_epochs::legacy_v1_message(9, &[1u8; 30]),
        crate::leader_epochs::legacy_v1_message(10, &[2u8; 30]),
    ]
    .concat();
    let info = log.append_as_follower(&legacy).unwrap();
    assert!(info.rolled);
    assert_eq!(log.log_end_offset(), 11);
    let bases: Vec<i64> = log.segments().iter().map(|s| s.base_offset).collect();
    assert_eq!(bases, vec![0, 4]);
    let offsets: Vec<i64> = values(&log).iter().map(|v| v.0).collect();
    assert_eq!(offsets, vec![0, 1, 2, 3, 9, 10]);
}

#[test]
fn durable_appends_leave_the_recovery_point_to_flushes() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), small_config(1 << 20), &clock());
    log.append(&numbered(T0, "a", 2)).unwrap();
    assert_eq!(log.recovery_point(), 0);
    // A durable append syncs the `.log` data only (group commit): the recovery point, which
    // also vouches for the indexes, moves with flushes.
    log.append_durable(&numbered(T0, "b", 2)).unwrap();
    assert_eq!(log.recovery_point(), 0);
    log.flush().unwrap();
    assert_eq!(log.recovery_point(), 4);
    let config = LogConfig {
        flush_messages: 3,
        ..small_config(1 << 20)
    };
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), config, &clock());
    log.append(&numbered(T0, "a", 2)).unwrap();
    assert_eq!(log.recovery_point(), 0);
    log.append(&numbered(T0, "a", 2)).unwrap();
    assert_eq!(log.recovery_point(), 4);
}

#[test]
fn read_only_and_closed_logs_refuse_writes() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), small_config(1 << 20), &clock());
    log.append(&numbered(T0, "a", 2)).unwrap();
    log.close().unwrap();
    assert!(matches!(
        log.append(&numbered(T0, "a", 1)),
        Err(Error::Closed { .. })
    ));
    assert_eq!(values(&log).len(), 2);
    let ro = seglog::Log::open_read_only(dir.path(), small_config(1 << 20)).unwrap();
    assert!(matches!(
        ro.append(&numbered(T0, "a", 1)),
        Err(Error::ReadOnly { .. })
    ));
    assert_eq!(values(&ro).len(), 2);
}

#[test]
fn a_second_open_gets_a_clear_lock_error() {
    let dir = tempfile::tempdir().unwrap();
    let _log = open(dir.path(), small_config(1 << 20), &clock());
    let e = seglog::Log::open(dir.path(), small_config(1 << 20)).unwrap_err();
    assert!(matches!(e, Error::Locked { .. }), "{e}");
    // A read-only open needs no lock.
    seglog::Log::open_read_only(dir.path(), small_config(1 << 20)).unwrap();
}

#[test]
fn append_info_names_the_max_timestamp_and_its_offset() {
    let (_dir, _clock, log) = fresh(small_config(1 << 20));
    // Two concatenated batches; the max timestamp (T0 + 52, the third record) is in the first.
    let mut both = numbered(T0 + 50, "a", 3);
    both.extend_from_slice(&numbered(T0 + 20, "b", 2));
    let info = log.append(&both).unwrap();
    assert_eq!(info.max_timestamp_ms, Some(T0 + 52));
    assert_eq!(info.max_timestamp_offset, 2);
    assert_eq!(info.batch_count, 2);

    // A batch whose records carry no timestamp (-1, Kafka's NO_TIMESTAMP): `None`, and the
    // offset is the first batch's last offset, as Kafka's shallowOffsetOfMaxTimestamp.
    let mut builder = seglog::BatchBuilder::new(0);
    builder.append(-1, None, Some(b"c"), &[]);
    builder.append(-1, None, Some(b"d"), &[]);
    let info = log.append(&builder.build().unwrap()).unwrap();
    assert_eq!(info.max_timestamp_ms, None);
    assert_eq!(info.max_timestamp_offset, 6);
}

/// A follower append whose batch starts at or below the previous batch's last offset while
/// ending above it (`[6]` then `[6, 8]` in one append) is refused, nothing written: seglog's
/// load takes such a batch for damage (`CorruptKind::OffsetsNotIncreasing`), so accepting it
/// wrote what the next open would not serve (interop/kafka/README.md, Findings, S2; Kafka 4.4
/// accepts it, docs/format.md, "Overlapping follower batches"). Before the fix the append was
/// accepted and a read after a clean reopen stopped before the second batch.
#[test]
fn a_follower_batch_overlapping_the_previous_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), small_config(1 << 20), &clock());
    let mut b = seglog::BatchBuilder::new(0);
    for _ in 0..6 {
        b.append(T0, None, Some(b"early"), &[]);
    }
    log.append_as_follower(&b.build().unwrap()).unwrap();
    let one = |base: i64, count: usize| {
        let mut b = seglog::BatchBuilder::new(base);
        for _ in 0..count {
            b.append(T0, None, Some(b"x"), &[]);
        }
        b.build().unwrap()
    };
    let overlapping = [one(6, 1), one(6, 3)].concat();
    let e = log.append_as_follower(&overlapping).unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidAppend {
                kind: AppendErrorKind::OverlappingBatch {
                    previous_last_offset: 6,
                    first_offset: 6,
                    ..
                }
            }
        ),
        "{e}"
    );
    assert_eq!(log.log_end_offset(), 6);
    // What the append accepts, the next open serves: the same batches with proper offsets.
    log.append_as_follower(&[one(6, 1), one(7, 2)].concat())
        .unwrap();
    let before: Vec<i64> = values(&log).iter().map(|v| v.0).collect();
    assert_eq!(before, (0..9).collect::<Vec<_>>());
    log.close().unwrap();
    drop(log);
    let log = open(dir.path(), small_config(1 << 20), &clock());
    let after: Vec<i64> = values(&log).iter().map(|v| v.0).collect();
    assert_eq!(after, before);
}

/// A v2 batch of `count` one-byte records from `base`, all at `T0`.
fn batch_of(base: i64, count: usize) -> seglog::Bytes {
    let mut b = seglog::BatchBuilder::new(base);
    for _ in 0..count {
        b.append(T0, None, Some(b"x"), &[]);
    }
    b.build().unwrap()
}

/// A follower's legacy compressed wrapper whose inner offsets begin inside the previous batch
/// (or below the log end) is refused too, nothing written, though it passes the log-end check
/// by its last offset (the only one its header has, and Kafka 4.4's check): it would put an
/// offset in the log twice, and Kafka 4.4 then serves a fetch from that offset from the wrapper
/// and skips the other batch holding it (long-run seeds 100360 and 100097 of the differential
/// histories: `read_uncommitted.batches` seglog `[[44,46],[46,48]]`, Kafka `[[46,48]]`; the high
/// watermark at the old log end inside the wrapper, Kafka's lowered to its base). Before the fix
/// both appends below were accepted.
#[test]
fn a_legacy_wrapper_overlapping_the_log_or_the_previous_batch_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), small_config(1 << 20), &clock());
    log.append_as_follower(&batch_of(0, 7)).unwrap();
    // Inner offsets 6..=8 after the log's 0..=6: the wrapper (offset 8) is above the log end.
    let e = log
        .append_as_follower(&crate::legacy_cleaning::gzip_v1_set(6, &["a", "b", "c"]))
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidAppend {
                kind: AppendErrorKind::OverlappingBatch {
                    position: 0,
                    previous_last_offset: 6,
                    first_offset: 6,
                }
            }
        ),
        "{e}"
    );
    assert_eq!(log.log_end_offset(), 7);
    // In one append: inner offsets 8..=10 after the batch 7..=8.
    let mut append = batch_of(7, 2).to_vec();
    let at = append.len() as u64;
    append.extend(crate::legacy_cleaning::gzip_v1_set(8, &["a", "b", "c"]));
    let e = log.append_as_follower(&append).unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidAppend {
                kind: AppendErrorKind::OverlappingBatch {
                    previous_last_offset: 8,
                    first_offset: 8,
                    position,
                }
            } if position == at
        ),
        "{e}"
    );
    assert_eq!(log.log_end_offset(), 7);
    // Inner offsets from the log end on: written, every offset once.
    log.append_as_follower(&crate::legacy_cleaning::gzip_v1_set(7, &["a", "b", "c"]))
        .unwrap();
    let offsets: Vec<i64> = values(&log).iter().map(|v| v.0).collect();
    assert_eq!(offsets, (0..10).collect::<Vec<_>>());
}

/// Kafka 4.4's `appendAsFollower(records, leaderEpoch)` skips the batches from the first one
/// whose partition leader epoch is above the replica's leader epoch (a newer leader it does not
/// know yet); seglog's `append_as_follower_in_epoch` does the same, and writes nothing when
/// that is the first batch. A batch without an epoch is never skipped.
#[test]
fn a_follower_append_in_an_epoch_skips_batches_from_a_newer_leader() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), small_config(1 << 20), &clock());
    let one = |base: i64, count: usize, epoch: i32| {
        let mut b = seglog::BatchBuilder::new(base).partition_leader_epoch(epoch);
        for _ in 0..count {
            b.append(T0, None, Some(b"x"), &[]);
        }
        b.build().unwrap()
    };
    let durability = seglog::Durability::PageCache;
    // Epochs 0, -1, 2, then 1 after the newer one: the last two are skipped.
    let append = [one(0, 2, 0), one(2, 1, -1), one(3, 1, 2), one(4, 1, 1)].concat();
    let info = log
        .append_as_follower_in_epoch(&append, 1, durability)
        .unwrap()
        .expect("the first batches are written");
    assert_eq!((info.first_offset, info.last_offset), (0, 2));
    assert_eq!(log.log_end_offset(), 3);
    assert_eq!(log.latest_epoch(), Some(0));
    // Only batches from a newer leader: nothing written.
    let newer = one(3, 2, 5);
    assert!(
        log.append_as_follower_in_epoch(&newer, 4, durability)
            .unwrap()
            .is_none()
    );
    assert_eq!(log.log_end_offset(), 3);
    // In that epoch they are written.
    let info = log
        .append_as_follower_in_epoch(&newer, 5, durability)
        .unwrap()
        .unwrap();
    assert_eq!((info.first_offset, info.last_offset), (3, 4));
    assert_eq!(log.latest_epoch(), Some(5));
}

/// A follower append that holds an overlapping batch and, later, one whose last offset goes
/// back is refused as Kafka 4.4 refuses it, with `OffsetsOutOfOrder`: the overlap (which Kafka
/// accepts) is reported only when the rest of the append is valid (differential histories, seed
/// 3161 of `--histories 300 --seed 3001`: `[29, 30]`, `[29, 31]`, `[29, 30]`; seglog
/// `OverlappingBatch`, Kafka `OffsetsOutOfOrderException`).
#[test]
fn an_overlap_is_reported_after_the_append_is_otherwise_valid() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), small_config(1 << 20), &clock());
    let one = |base: i64, count: usize| {
        let mut b = seglog::BatchBuilder::new(base);
        for _ in 0..count {
            b.append(T0, None, Some(b"x"), &[]);
        }
        b.build().unwrap()
    };
    let e = log
        .append_as_follower(&[one(0, 2), one(0, 3), one(0, 2)].concat())
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidAppend {
                kind: AppendErrorKind::OffsetsOutOfOrder { .. }
            }
        ),
        "{e}"
    );
    assert_eq!(log.log_end_offset(), 0);
}

/// A follower append whose first batch begins below the log end and whose second overlaps the
/// first is refused as Kafka 4.4 refuses it, with `UnexpectedAppendOffset`: seglog's own overlap
/// refusal comes after Kafka's log-end check (third long run of the differential histories,
/// seed 305774: `[45]`, `[45, 46]` at log end 46; seglog `OverlappingBatch`, Kafka
/// `UnexpectedAppendOffsetException`). Before the fix the overlap was reported.
#[test]
fn an_overlap_is_reported_after_the_log_end_check() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), small_config(1 << 20), &clock());
    log.append_as_follower(&batch_of(0, 46)).unwrap();
    let e = log
        .append_as_follower(&[batch_of(45, 1), batch_of(45, 2)].concat())
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidAppend {
                kind: AppendErrorKind::UnexpectedAppendOffset {
                    first_offset: 45,
                    log_end_offset: 46,
                }
            }
        ),
        "{e}"
    );
    assert_eq!(log.log_end_offset(), 46);
    // At the log end the overlap is still seglog's refusal, nothing written.
    let e = log
        .append_as_follower(&[batch_of(46, 1), batch_of(46, 2)].concat())
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidAppend {
                kind: AppendErrorKind::OverlappingBatch {
                    previous_last_offset: 46,
                    first_offset: 46,
                    ..
                }
            }
        ),
        "{e}"
    );
    assert_eq!(log.log_end_offset(), 46);
}
