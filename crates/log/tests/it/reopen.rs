//! Close/reopen, crashes (drop without close), torn tails, and where state files live.

use std::fs::OpenOptions;

use seglog::{CLEAN_SHUTDOWN_FILE, Clock, RECOVERY_POINT_CHECKPOINT};

use crate::support::*;

#[test]
fn clean_close_then_reopen_scans_nothing() {
    let (dir, clock, log) = fresh(small_config(1024));
    append_numbered(&log, 30, "r", 2);
    let before = values(&log);
    log.close().unwrap();
    drop(log);
    assert!(dir.path().join(CLEAN_SHUTDOWN_FILE).exists());
    let log = open(dir.path(), small_config(1024), &clock);
    assert!(log.load_report().had_clean_shutdown);
    assert_eq!(log.load_report().recovered().count(), 0);
    assert!(
        !dir.path().join(CLEAN_SHUTDOWN_FILE).exists(),
        "marker consumed at open"
    );
    assert_eq!(log.recovery_point(), 60);
    assert_eq!(values(&log), before);
    log.append(&numbered(T0, "after", 1)).unwrap();
    assert_eq!(log.log_end_offset(), 61);
}

#[test]
fn crash_recovers_from_the_recovery_point_only() {
    let (dir, clock, log) = fresh(small_config(1024));
    append_numbered(&log, 30, "r", 2);
    log.tick(clock.now_ms()).unwrap(); // flushes the sealed segments, writes checkpoints
    let recovery_point = log.recovery_point();
    assert!(recovery_point > 0);
    let before = values(&log);
    drop(log); // crash: no close
    let log = open(dir.path(), small_config(1024), &clock);
    let report = log.load_report();
    assert!(!report.had_clean_shutdown);
    assert_eq!(report.recovery_point_checkpoint, recovery_point);
    let recovered: Vec<i64> = report.recovered().collect();
    assert!(!recovered.is_empty());
    assert!(recovered.iter().all(|&b| b >= recovered[0]));
    let first_recovered = recovered[0];
    assert!(first_recovered <= recovery_point);
    assert_eq!(values(&log), before);
}

#[test]
fn torn_tail_is_cut_and_later_segments_deleted() {
    let (dir, clock, log) = fresh(small_config(1024));
    append_numbered(&log, 30, "r", 2);
    let segments = log.segments();
    assert!(segments.len() >= 3);
    drop(log);
    // Garbage in the middle of the second segment: it and everything after it go.
    let victim = &segments[1];
    let file = OpenOptions::new().write(true).open(&victim.path).unwrap();
    use std::os::unix::fs::FileExt;
    file.write_all_at(&[0xff; 64], 100).unwrap();
    let log = open(dir.path(), small_config(1024), &clock);
    let report = log.load_report();
    let truncations: Vec<(i64, u64)> = report.truncations().collect();
    assert_eq!(truncations.len(), 1, "{report:?}");
    assert_eq!(truncations[0].0, victim.base_offset);
    assert_eq!(report.deleted_segments.len(), segments.len() - 2);
    let vals = values(&log);
    assert!(log.log_end_offset() < segments[2].base_offset);
    assert_eq!(vals.len() as i64, log.log_end_offset());
    assert!(vals.iter().enumerate().all(|(i, v)| v.0 == i as i64));
    // The dropped segments were never opened: their files are unlinked at once (and the
    // directory fsynced), not left as `.deleted` for a power loss to bring back.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.ends_with(".deleted")), "{names:?}");
    for base in &report.deleted_segments {
        assert!(
            !names.iter().any(|n| n.starts_with(&format!("{base:020}."))),
            "{names:?}"
        );
    }
    assert!(report.removed_files.iter().any(|p| {
        p.to_string_lossy()
            .ends_with(&format!("{:020}.log", segments[2].base_offset))
    }));
}

#[test]
fn standalone_state_lives_in_the_partition_dir_or_its_log_dir_root() {
    // Own root: the parent is not a log dir.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("orders-3");
    let clock = clock();
    let log = open(&dir, small_config(1 << 20), &clock);
    log.append(&numbered(T0, "x", 3)).unwrap();
    log.close().unwrap();
    drop(log);
    assert!(dir.join(CLEAN_SHUTDOWN_FILE).exists());
    assert_eq!(
        std::fs::read_to_string(dir.join(RECOVERY_POINT_CHECKPOINT)).unwrap(),
        "0\n1\norders 3 3\n"
    );

    // Shared root: the parent holds Kafka's root files.
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("meta.properties"), "version=0\n").unwrap();
    let dir = root.path().join("orders-3");
    let log = open(&dir, small_config(1 << 20), &clock);
    log.append(&numbered(T0, "x", 3)).unwrap();
    log.close().unwrap();
    drop(log);
    assert!(!dir.join(RECOVERY_POINT_CHECKPOINT).exists());
    assert_eq!(
        std::fs::read_to_string(root.path().join(RECOVERY_POINT_CHECKPOINT)).unwrap(),
        "0\n1\norders 3 3\n"
    );
    // The root had no marker at open (another partition may be unclean): none written.
    assert!(!root.path().join(CLEAN_SHUTDOWN_FILE).exists());
}

#[test]
fn read_only_open_writes_nothing() {
    let (dir, _clock, log) = fresh(small_config(1024));
    append_numbered(&log, 20, "r", 2);
    let before = values(&log);
    drop(log); // crash, with a preallocated active index
    let listing = |p: &std::path::Path| {
        let mut v: Vec<(String, u64, std::time::SystemTime)> = std::fs::read_dir(p)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let m = e.metadata().unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    m.len(),
                    m.modified().unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let snapshot = listing(dir.path());
    let ro = seglog::Log::open_read_only(dir.path(), small_config(1024)).unwrap();
    assert_eq!(values(&ro), before);
    drop(ro);
    assert_eq!(listing(dir.path()), snapshot);
}

/// `recover_all` validates every segment even after a clean shutdown: a corrupt batch in the
/// first segment is cut, every later segment is deleted, and the report names the index
/// problem it found first.
#[test]
fn recover_all_validates_every_segment_after_a_clean_shutdown() {
    use std::os::unix::fs::FileExt;

    let (dir, clock, log) = fresh(small_config(1024));
    append_numbered(&log, 40, "r", 2);
    let segments = log.segments();
    assert!(segments.len() > 2);
    let before = values(&log);
    log.close().unwrap();
    drop(log);

    // Undamaged: every segment is recovered, nothing is cut.
    let options = || seglog::LogOpenOptions {
        clock: clock.clone(),
        recover_all: true,
        ..seglog::LogOpenOptions::default()
    };
    let log = seglog::Log::open_with(dir.path(), small_config(1024), options()).unwrap();
    let report = log.load_report();
    assert!(
        report.had_clean_shutdown,
        "the report keeps what the marker said"
    );
    assert_eq!(report.recovered().count(), segments.len());
    assert_eq!(report.truncations().count(), 0);
    assert_eq!(values(&log), before);
    assert_eq!(log.recovery_point(), 0, "nothing recovered is trusted yet");
    log.close().unwrap();
    drop(log);

    // A flipped byte in the second batch of segment 0 and a zero-padded index on segment 1.
    let first = dir.path().join("00000000000000000000.log");
    let second_batch = numbered(T0, "r", 2).len() as u64;
    let file = OpenOptions::new().write(true).open(&first).unwrap();
    file.write_all_at(&[0xff], second_batch + 70).unwrap();
    let index = dir
        .path()
        .join(format!("{:020}.index", segments[1].base_offset));
    let len = std::fs::metadata(&index).unwrap().len();
    OpenOptions::new()
        .write(true)
        .open(&index)
        .unwrap()
        .set_len(len + 80)
        .unwrap();
    // The damage is in flushed data (the log was closed cleanly): recovery keeps the damaged
    // bytes on disk, serves segment 0 up to them, and keeps every later segment (a gap).
    let log = seglog::Log::open_with(dir.path(), small_config(1024), options()).unwrap();
    let report = log.load_report().clone();
    let kept: Vec<(i64, u64, i64)> = report.damaged_tails().collect();
    assert_eq!(kept, [(0, second_batch, 2)]);
    assert!(report.deleted_segments.is_empty(), "{report:?}");
    let first_lost = 2;
    let resume = usize::try_from(segments[1].base_offset).unwrap();
    let mut served = before[..first_lost].to_vec();
    served.extend_from_slice(&before[resume..]);
    assert_eq!(values(&log), served);
    log.close().unwrap();
    drop(log);
    assert_eq!(
        std::fs::metadata(&first).unwrap().len(),
        segments[0].size_bytes,
        "the damaged bytes are still on disk"
    );

    // A destructive repair applies Kafka's rule: cut at the bad batch, delete what follows.
    let destructive = seglog::LogOpenOptions {
        repair_destructively: true,
        ..options()
    };
    let log = seglog::Log::open_with(dir.path(), small_config(1024), destructive).unwrap();
    let report = log.load_report().clone();
    let cut: Vec<(i64, u64)> = report.truncations().collect();
    assert_eq!(cut.len(), 1);
    assert_eq!(cut[0].0, 0);
    let deleted: Vec<i64> = segments[1..].iter().map(|s| s.base_offset).collect();
    assert_eq!(report.deleted_segments, deleted);
    assert_eq!(values(&log), before[..2].to_vec());
    log.close().unwrap();
    drop(log);
    // Only the cut segment is left, and the deleted files are gone after the close.
    let logs = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            let name = name.to_string_lossy();
            name.ends_with(".log") || name.ends_with(".deleted")
        })
        .count();
    assert_eq!(logs, 1);
}

/// `recover_all` reports what was wrong with an index before rebuilding it.
#[test]
fn recover_all_names_index_problems() {
    let (dir, clock, log) = fresh(small_config(1024));
    append_numbered(&log, 10, "r", 2);
    log.close().unwrap();
    drop(log);
    std::fs::remove_file(dir.path().join("00000000000000000000.index")).unwrap();
    let options = seglog::LogOpenOptions {
        clock: clock.clone(),
        recover_all: true,
        ..seglog::LogOpenOptions::default()
    };
    let log = seglog::Log::open_with(dir.path(), small_config(1024), options).unwrap();
    let first = &log.load_report().segments[0];
    assert!(
        matches!(
            first.rebuilt,
            Some(seglog::RebuildReason::MissingIndex { .. })
        ),
        "{first:?}"
    );
    assert!(first.recovery.is_some());
    assert!(
        log.load_report().segments[1..]
            .iter()
            .all(|s| s.rebuilt == Some(seglog::RebuildReason::Requested))
    );
}

/// A read-only open of a directory without segments is an empty log at the checkpointed log
/// start offset, and writes nothing.
#[test]
fn read_only_open_of_a_directory_without_segments_is_an_empty_log() {
    let dir = tempfile::tempdir().unwrap();
    for (files, start) in [
        (vec![], 0),
        (vec![("leader-epoch-checkpoint", "0\n0\n")], 0),
        (
            vec![(seglog::LOG_START_OFFSET_CHECKPOINT, "0\n1\nseglog 0 42\n")],
            42,
        ),
    ] {
        for (name, text) in &files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let before = snapshot(dir.path());
        let log = seglog::Log::open_read_only(dir.path(), seglog::LogConfig::default()).unwrap();
        assert!(log.segments().is_empty());
        assert_eq!(log.segment_count(), 0);
        assert_eq!(
            (log.log_start_offset(), log.log_end_offset()),
            (start, start)
        );
        assert_eq!(log.high_watermark(), start);
        for isolation in [
            seglog::Isolation::LogEnd,
            seglog::Isolation::ReadUncommitted,
        ] {
            let data = log.read(start, 1 << 20, isolation, true).unwrap();
            assert!(data.slice.is_empty());
            assert_eq!(data.slice.read_to_vec().unwrap(), Vec::<u8>::new());
            assert_eq!(data.log_end_offset, start);
        }
        assert!(matches!(
            log.read(start + 1, 1 << 20, seglog::Isolation::LogEnd, true),
            Err(seglog::Error::OffsetOutOfRange { .. })
        ));
        assert_eq!(
            log.offset_for_timestamp(seglog::ListOffsets::MaxTimestamp)
                .unwrap(),
            None
        );
        assert_eq!(
            log.offset_for_timestamp(seglog::ListOffsets::Timestamp(0))
                .unwrap(),
            None
        );
        assert!(matches!(
            log.append(&numbered(T0, "x", 1)),
            Err(seglog::Error::ReadOnly { .. })
        ));
        log.close().unwrap();
        assert_eq!(snapshot(dir.path()), before, "nothing written");
        for (name, _) in &files {
            std::fs::remove_file(dir.path().join(name)).unwrap();
        }
    }
    let missing = dir.path().join("missing-0");
    assert!(seglog::Log::open_read_only(&missing, seglog::LogConfig::default()).is_err());
    assert!(!missing.exists());
}

/// Names and contents of the files in `dir`.
fn snapshot(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

/// Leftovers of Kafka's cleaner (spec §5.5 passes 1–3): a complete swap replaces the old
/// segments in its offset range (its `.index.swap` / `.timeindex.swap` too); a swap at or
/// above the lowest `.cleaned` file belongs to an unfinished operation and is deleted with
/// the `.cleaned` files, leaving the old segments.
#[test]
fn swap_and_cleaned_leftovers_follow_kafkas_rules() {
    for unfinished in [false, true] {
        let (dir, clock, log) = fresh(small_config(1024));
        append_numbered(&log, 30, "c", 2);
        let bases: Vec<i64> = log.segments().iter().map(|s| s.base_offset).collect();
        assert!(bases.len() >= 3);
        let before = values(&log);
        log.close().unwrap();
        drop(log);
        let path = |base: i64, suffix: &str| dir.path().join(format!("{base:020}{suffix}"));
        // The "cleaner" merged the first two segments into one at the first base.
        let mut merged = std::fs::read(path(bases[0], ".log")).unwrap();
        merged.extend(std::fs::read(path(bases[1], ".log")).unwrap());
        std::fs::write(path(bases[0], ".log.swap"), &merged).unwrap();
        std::fs::write(path(bases[0], ".index.swap"), []).unwrap();
        std::fs::write(path(bases[0], ".timeindex.swap"), []).unwrap();
        if unfinished {
            std::fs::write(path(bases[0], ".log.cleaned"), &merged[..100]).unwrap();
        }
        let log = open(dir.path(), small_config(1024), &clock);
        let report = log.load_report();
        let now: Vec<i64> = log.segments().iter().map(|s| s.base_offset).collect();
        if unfinished {
            assert!(report.completed_swaps.is_empty());
            assert_eq!(now, bases);
            assert!(report.removed_files.contains(&path(bases[0], ".log.swap")));
            assert!(
                report
                    .removed_files
                    .contains(&path(bases[0], ".log.cleaned"))
            );
        } else {
            assert_eq!(report.completed_swaps.len(), 3, "{report:?}");
            assert_eq!(now[0], bases[0]);
            assert_eq!(now[1..], bases[2..]);
            assert!(report.removed_files.contains(&path(bases[1], ".log")));
            assert!(!path(bases[1], ".index").exists());
        }
        assert_eq!(values(&log), before);
        let leftovers = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".swap") || n.ends_with(".cleaned"))
            .count();
        assert_eq!(leftovers, 0);
    }
}

/// Issue 12, bug 6: a corrupt checkpoint is still read as empty (Kafka's rule), but the load
/// report says which file and which line, instead of a silent reset of the log start.
#[test]
fn corrupt_checkpoints_are_reported_with_file_and_line() {
    use seglog::{CheckpointCorruptKind, CheckpointProblemKind, LOG_START_OFFSET_CHECKPOINT};
    let (dir, clock, log) = fresh(small_config(1024));
    append_numbered(&log, 30, "r", 2);
    log.set_high_watermark(60).unwrap();
    log.delete_records_before(7).unwrap();
    log.close().unwrap();
    drop(log);
    let log_start = dir.path().join(LOG_START_OFFSET_CHECKPOINT);
    let recovery = dir.path().join(RECOVERY_POINT_CHECKPOINT);
    assert_eq!(
        std::fs::read_to_string(&log_start).unwrap(),
        "0\n1\nseglog 0 7\n"
    );
    std::fs::write(&log_start, "0\n1\nseglog 0 x\n").unwrap();
    std::fs::write(&recovery, "1\n0\n").unwrap();
    let log = open(dir.path(), small_config(1024), &clock);
    assert_eq!(log.log_start_offset(), 0, "read as empty, as Kafka does");
    let problems = &log.load_report().checkpoint_problems;
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert_eq!(problems[0].path, recovery);
    assert_eq!(problems[0].line, Some(1));
    assert_eq!(
        problems[0].kind,
        CheckpointProblemKind::Corrupt(CheckpointCorruptKind::UnsupportedVersion(1))
    );
    assert_eq!(problems[1].path, log_start);
    assert_eq!(problems[1].line, Some(3));
    assert_eq!(
        problems[1].kind,
        CheckpointProblemKind::Corrupt(CheckpointCorruptKind::MalformedLine)
    );
    let text = problems[1].to_string();
    assert!(
        text.contains("log-start-offset-checkpoint line 3"),
        "{text}"
    );
    log.close().unwrap();
    drop(log);
    // Rewritten at close: the next open finds nothing wrong.
    let log = open(dir.path(), small_config(1024), &clock);
    assert!(log.load_report().checkpoint_problems.is_empty());
    // A read-only open reports the same way.
    drop(log);
    std::fs::write(&recovery, "0\n2\nseglog 0 1\n").unwrap();
    let log = seglog::Log::open_read_only(dir.path(), small_config(1024)).unwrap();
    let problems = &log.load_report().checkpoint_problems;
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(
        (problems[0].path.clone(), problems[0].line),
        (recovery, Some(2))
    );
}

/// After a crash the active segment's preallocated index was never trimmed: the load rebuilds
/// it and says so at INFO without calling it corrupt (it is what every kill leaves), and the
/// load's duration prints as milliseconds with at most 3 decimals.
#[test]
fn a_crashed_active_segment_rebuild_is_not_called_corrupt_and_durations_are_rounded() {
    let (dir, clock, log) = fresh(small_config(1024));
    append_numbered(&log, 30, "r", 2);
    drop(log); // a crash: the active segment's indexes keep their preallocated zeros
    let events = events_during(|| drop(open(dir.path(), small_config(1024), &clock)));
    let rebuilt: Vec<_> = events
        .iter()
        .filter(|e| e.message == "indexes rebuilt")
        .collect();
    assert_eq!(rebuilt.len(), 1, "{events:?}");
    assert_eq!(rebuilt[0].level, tracing::Level::INFO);
    assert_eq!(
        rebuilt[0].field("base_offset"),
        Some("48"),
        "the active segment"
    );
    let reason = rebuilt[0].field("reason").unwrap();
    assert!(!reason.to_lowercase().contains("corrupt"), "{reason}");
    assert!(
        reason.contains("not trimmed before an unclean shutdown"),
        "{reason}"
    );

    let loaded = events.iter().find(|e| e.message == "log loaded").unwrap();
    let duration = loaded.field("duration_ms").unwrap();
    let decimals = duration.split_once('.').map_or(0, |(_, d)| d.len());
    assert!(decimals <= 3, "duration_ms = {duration}");
    duration.parse::<f64>().unwrap();
}

/// A sealed segment's index is trimmed when it is sealed: zeros at its end are damage, and
/// the rebuild keeps naming them as such.
#[test]
fn a_zero_padded_sealed_index_is_still_called_corrupt() {
    let (dir, clock, log) = fresh(small_config(1024));
    append_numbered(&log, 30, "r", 2);
    log.close().unwrap();
    drop(log);
    let index = dir.path().join("00000000000000000000.index");
    let len = std::fs::metadata(&index).unwrap().len();
    OpenOptions::new()
        .write(true)
        .open(&index)
        .unwrap()
        .set_len(len + 64)
        .unwrap();
    let events = events_during(|| {
        let log = open(dir.path(), small_config(1024), &clock);
        assert_eq!(values(&log).len(), 60, "every record still reads");
    });
    let rebuilt: Vec<_> = events
        .iter()
        .filter(|e| e.message == "indexes rebuilt" || e.message.contains("rebuilt the indexes"))
        .collect();
    assert_eq!(rebuilt.len(), 1, "{events:?}");
    let reason = rebuilt[0].field("reason").unwrap();
    assert!(
        reason.contains("CorruptIndex") && reason.contains("ZeroPaddedTail"),
        "{reason}"
    );
}
