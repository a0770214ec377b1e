//! Injected write/fsync failures and post-crash images (the I/O seam's test backend,
//! `seglog-faults`, passed in `SegmentConfig::io`).

use std::path::Path;

use seglog_faults::{FaultInjector, FaultKind};
use seglog_segment::{
    ActiveSegment, Error, FileKind, IoOp, RebuildReason, Segment, SegmentConfig,
    SegmentOpenOptions, TempSuffix,
};

use crate::support::{append_batch, path, read, simple_batch, small_config, tempdir};

/// `small_config` writing through `faults`.
fn faulty_config(faults: &FaultInjector) -> SegmentConfig {
    SegmentConfig {
        io: faults.io(),
        ..small_config()
    }
}

fn batches(n: i64) -> Vec<Vec<u8>> {
    (0..n)
        .map(|o| simple_batch(o, 1, 1_000 + o, 30 + o as usize % 5))
        .collect()
}

/// Writes `log` (and optionally index files) into a fresh dir, as found after a crash.
fn crash_dir(log: &[u8], indexes_from: Option<&Path>) -> tempfile::TempDir {
    let dir = tempdir();
    std::fs::write(path(dir.path(), 0, FileKind::LOG), log).unwrap();
    if let Some(from) = indexes_from {
        for kind in [FileKind::INDEX, FileKind::TIME_INDEX] {
            std::fs::copy(path(from, 0, kind), path(dir.path(), 0, kind)).unwrap();
        }
    }
    dir
}

#[test]
fn a_failed_write_poisons_the_segment_and_readers_never_see_it() {
    for kind in [FaultKind::Eio, FaultKind::Enospc] {
        let dir = tempdir();
        let faults = FaultInjector::new(dir.path());
        let config = faulty_config(&faults);
        let mut active = ActiveSegment::create(dir.path(), 0, &config).unwrap();
        let all = batches(6);
        for b in &all[..5] {
            append_batch(&mut active, b);
        }
        let size = active.segment().size();
        faults.fail_nth_write(1, kind);
        let err = active.append(5, 1_005, 5, &all[5]).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Io {
                    op: IoOp::Write,
                    ..
                }
            ),
            "{err}"
        );
        assert!(active.segment().is_poisoned());
        // Later writes are refused, even though the injector would let them through.
        let err = active.append(5, 1_005, 5, &all[5]).unwrap_err();
        assert!(matches!(err, Error::Poisoned { .. }), "{err}");
        assert!(matches!(active.truncate_to(0), Err(Error::Poisoned { .. })));
        // Readers see exactly what was published.
        let segment = active.segment().clone();
        assert_eq!(segment.size(), size);
        let slice = segment.read(0, u32::MAX, u64::MAX, true).unwrap().unwrap();
        assert_eq!(slice.read_to_vec().unwrap(), all[..5].concat());
        assert!(segment.read(5, 100, u64::MAX, true).unwrap().is_none());
        // Reopen: the torn half-write (ENOSPC) is cut; the segment takes appends again.
        drop(active);
        drop(segment);
        let (segment, report) =
            Segment::open(dir.path(), 0, &config, SegmentOpenOptions::default()).unwrap();
        assert!(
            report.rebuilt.is_some(),
            "the writer never sealed: {report:?}"
        );
        assert_eq!(segment.size(), size);
        let mut active = ActiveSegment::resume(segment).unwrap();
        append_batch(&mut active, &all[5]);
        assert_eq!(active.segment().read_next_offset().unwrap(), 6);
    }
}

#[test]
fn a_failed_fsync_poisons_and_keeps_the_durable_image() {
    let dir = tempdir();
    let faults = FaultInjector::new(dir.path());
    let config = faulty_config(&faults);
    let mut active = ActiveSegment::create(dir.path(), 0, &config).unwrap();
    let all = batches(4);
    append_batch(&mut active, &all[0]);
    active.flush().unwrap();
    append_batch(&mut active, &all[1]);
    faults.fail_nth_sync(1, FaultKind::Eio);
    let err = active.flush().unwrap_err();
    assert!(matches!(err, Error::Io { op: IoOp::Sync, .. }), "{err}");
    assert!(matches!(
        active.append(2, 0, 2, &all[2]),
        Err(Error::Poisoned { .. })
    ));
    let log_path = active.segment().log_path();
    assert_eq!(faults.durable_image(&log_path).unwrap(), all[0]);
}

#[test]
fn the_durable_image_advances_only_on_fsync_and_reopens_cleanly() {
    let dir = tempdir();
    let faults = FaultInjector::new(dir.path());
    let config = faulty_config(&faults);
    let mut active = ActiveSegment::create(dir.path(), 0, &config).unwrap();
    let log_path = active.segment().log_path();
    let all = batches(40);
    assert_eq!(faults.durable_image(&log_path).unwrap(), b"");
    for b in &all[..20] {
        append_batch(&mut active, b);
    }
    active.flush().unwrap();
    for b in &all[20..] {
        append_batch(&mut active, b);
    }
    let image = faults.durable_image(&log_path).unwrap();
    assert_eq!(image, all[..20].concat());
    assert!(faults.writes() >= 40 && faults.syncs() == 1);

    // Power loss: the `.log` is the durable image, the (mapped) indexes are as the kernel
    // wrote them back: here, all of them, pointing past the end of the log.
    let crashed = crash_dir(&image, Some(dir.path()));
    let (segment, report) =
        Segment::open(crashed.path(), 0, &config, SegmentOpenOptions::default()).unwrap();
    assert!(
        matches!(report.rebuilt, Some(RebuildReason::CorruptIndex { .. })),
        "{report:?}"
    );
    assert_eq!(segment.read_next_offset().unwrap(), 20);
    assert_eq!(segment.size(), image.len() as u64);

    // Without index files at all.
    let crashed = crash_dir(&image, None);
    let (segment, report) =
        Segment::open(crashed.path(), 0, &config, SegmentOpenOptions::default()).unwrap();
    assert!(matches!(
        report.rebuilt,
        Some(RebuildReason::MissingIndex { .. })
    ));
    assert_eq!(segment.read_next_offset().unwrap(), 20);

    // Images follow renames; unlinked files have none.
    active.segment().mark_deleted().unwrap();
    let deleted = path(
        dir.path(),
        0,
        FileKind::LOG.with_suffix(Some(TempSuffix::Deleted)),
    );
    assert_eq!(faults.durable_image(&deleted).unwrap(), image);
    active.segment().delete_files().unwrap();
    assert!(faults.durable_images().is_empty());
}

/// Fail each write and each fsync of a scripted run in turn; after every failure the
/// durable image reopens to a prefix of the appended batches that holds at least every
/// batch acknowledged by a successful flush.
#[test]
fn a_crash_at_every_write_and_fsync_leaves_a_recoverable_prefix() {
    let config = small_config();
    let all = batches(12);
    for fail_sync in [false, true] {
        for n in 1..=12 {
            let dir = tempdir();
            let faults = FaultInjector::new(dir.path());
            if fail_sync {
                faults.fail_nth_sync(n, FaultKind::Eio);
            } else {
                faults.fail_nth_write(n, FaultKind::Enospc);
            }
            let mut active = ActiveSegment::create(dir.path(), 0, &faulty_config(&faults)).unwrap();
            let log_path = active.segment().log_path();
            let mut flushed = 0;
            for (i, b) in all.iter().enumerate() {
                let offset = i as i64;
                if active.append(offset, 1_000 + offset, offset, b).is_err() {
                    break;
                }
                if i % 3 == 2 {
                    if active.flush().is_err() {
                        break;
                    }
                    flushed = i + 1;
                }
            }
            let image = faults.durable_image(&log_path).unwrap();
            drop(active);
            let crashed = crash_dir(&image, None);
            let (segment, _) =
                Segment::open(crashed.path(), 0, &config, SegmentOpenOptions::default()).unwrap();
            let kept = segment.read_next_offset().unwrap() as usize;
            assert!(
                kept >= flushed,
                "fail_sync={fail_sync} n={n}: {kept} < {flushed}"
            );
            let bytes = read(&path(crashed.path(), 0, FileKind::LOG));
            assert_eq!(bytes, all[..kept].concat(), "fail_sync={fail_sync} n={n}");
        }
    }
}

/// `sync_log_data` is one fsync of the `.log` through the seam: it advances the durable
/// image like `flush`, fails (and poisons) like it, and a crash after it (with the indexes
/// in whatever state the kernel left them) reopens with every synced batch.
#[test]
fn sync_log_data_makes_the_log_durable_and_fails_like_flush() {
    let dir = tempdir();
    let faults = FaultInjector::new(dir.path());
    let config = faulty_config(&faults);
    let mut active = ActiveSegment::create(dir.path(), 0, &config).unwrap();
    let log_path = active.segment().log_path();
    let all = batches(30);
    for b in &all[..15] {
        append_batch(&mut active, b);
    }
    active.segment().sync_log_data().unwrap();
    assert_eq!(faults.syncs(), 1);
    for b in &all[15..] {
        append_batch(&mut active, b);
    }
    let image = faults.durable_image(&log_path).unwrap();
    assert_eq!(image, all[..15].concat());

    // The indexes were never synced: the kernel may have written back all of them (pointing
    // past the durable end) or none.
    for indexes_from in [Some(dir.path()), None] {
        let crashed = crash_dir(&image, indexes_from);
        let (segment, report) =
            Segment::open(crashed.path(), 0, &config, SegmentOpenOptions::default()).unwrap();
        assert!(report.rebuilt.is_some(), "{report:?}");
        assert_eq!(segment.read_next_offset().unwrap(), 15);
    }

    faults.fail_nth_sync(1, FaultKind::Eio);
    let err = active.segment().sync_log_data().unwrap_err();
    assert!(matches!(err, Error::Io { op: IoOp::Sync, .. }), "{err}");
    assert!(active.segment().is_poisoned());
    assert_eq!(faults.durable_image(&log_path).unwrap(), image);
}

fn names(list: &[&str]) -> std::collections::BTreeSet<String> {
    list.iter().map(|n| (*n).to_owned()).collect()
}

#[test]
fn the_durable_listing_advances_only_on_a_directory_fsync() {
    let dir = tempdir();
    let faults = FaultInjector::new(dir.path());
    assert_eq!(faults.durable_names(dir.path()), None, "never synced");
    let mut active = ActiveSegment::create(dir.path(), 0, &faulty_config(&faults)).unwrap();
    append_batch(&mut active, &batches(1)[0]);
    let segment = active.seal().unwrap();
    assert_eq!(faults.durable_names(dir.path()), None);

    faults.io().sync_dir(dir.path()).unwrap();
    let trio = names(&[
        "00000000000000000000.log",
        "00000000000000000000.index",
        "00000000000000000000.timeindex",
    ]);
    assert_eq!(faults.durable_names(dir.path()), Some(trio.clone()));
    assert_eq!(faults.dir_syncs(), 1);

    // A rename is not durable until the next directory fsync.
    segment.mark_deleted().unwrap();
    assert_eq!(faults.durable_names(dir.path()), Some(trio));
    faults.io().sync_dir(dir.path()).unwrap();
    assert_eq!(
        faults.durable_names(dir.path()),
        Some(names(&[
            "00000000000000000000.log.deleted",
            "00000000000000000000.index.deleted",
            "00000000000000000000.timeindex.deleted",
        ]))
    );

    // Nor is an unlink: the `.log`'s image is kept until it is.
    let log_image = faults
        .durable_image(&path(
            dir.path(),
            0,
            FileKind::LOG.with_suffix(Some(TempSuffix::Deleted)),
        ))
        .unwrap();
    segment.delete_files().unwrap();
    assert_eq!(faults.durable_names(dir.path()).map(|n| n.len()), Some(3));
    assert_eq!(faults.durable_images(), vec![]);
    assert_eq!(
        faults.unlinked_images(),
        vec![(
            path(
                dir.path(),
                0,
                FileKind::LOG.with_suffix(Some(TempSuffix::Deleted))
            ),
            log_image
        )]
    );
    faults.io().sync_dir(dir.path()).unwrap();
    assert_eq!(faults.durable_names(dir.path()), Some(names(&[])));
    assert_eq!(faults.unlinked_images(), vec![]);

    // A directory outside the injector's one is not observed, nor is a sync through the
    // production handle.
    let other = tempdir();
    faults.io().sync_dir(other.path()).unwrap();
    assert_eq!(faults.durable_names(other.path()), None);
    seglog_segment::sync_dir(dir.path()).unwrap();
    seglog_segment::Io::direct().sync_dir(dir.path()).unwrap();
    assert_eq!(faults.dir_syncs(), 3);
}

#[test]
fn a_failed_directory_fsync_is_a_typed_error_and_keeps_the_durable_listing() {
    for kind in [FaultKind::Eio, FaultKind::Enospc] {
        let dir = tempdir();
        let faults = FaultInjector::new(dir.path());
        faults.io().sync_dir(dir.path()).unwrap();
        assert_eq!(faults.durable_names(dir.path()), Some(names(&[])));
        let active = ActiveSegment::create(dir.path(), 0, &faulty_config(&faults)).unwrap();
        faults.fail_nth_dir_sync(2, kind);
        faults.io().sync_dir(dir.path()).unwrap(); // the 1st from now succeeds
        assert_eq!(faults.durable_names(dir.path()).map(|n| n.len()), Some(3));
        let segment = active.seal().unwrap();
        segment.mark_deleted().unwrap();
        let err = faults.io().sync_dir(dir.path()).unwrap_err();
        match &err {
            Error::Io { op, path, source } => {
                assert_eq!(*op, IoOp::SyncDir);
                assert_eq!(path, dir.path());
                let errno = match kind {
                    FaultKind::Eio => 5,
                    FaultKind::Enospc => 28,
                };
                assert_eq!(source.raw_os_error(), Some(errno), "{err}");
            }
            other => panic!("{other}"),
        }
        // The rename is still not durable; the next directory fsync succeeds again.
        assert!(
            faults
                .durable_names(dir.path())
                .unwrap()
                .contains("00000000000000000000.log")
        );
        faults.io().sync_dir(dir.path()).unwrap();
        assert!(
            faults
                .durable_names(dir.path())
                .unwrap()
                .contains("00000000000000000000.log.deleted")
        );
        assert_eq!(faults.dir_syncs(), 4);
    }
}

#[test]
fn a_failed_index_flush_poisons_the_segment() {
    for (n, file) in [(1, FileKind::INDEX), (2, FileKind::TIME_INDEX)] {
        let dir = tempdir();
        let faults = FaultInjector::new(dir.path());
        let mut active = ActiveSegment::create(dir.path(), 0, &faulty_config(&faults)).unwrap();
        let all = batches(3);
        append_batch(&mut active, &all[0]);
        let before = faults.index_flushes();
        faults.fail_nth_index_flush(n, FaultKind::Eio);
        let err = active.segment().flush().unwrap_err();
        match &err {
            Error::Io { op, path: p, .. } => {
                assert_eq!(*op, IoOp::Sync);
                assert_eq!(p, &path(dir.path(), 0, file));
            }
            other => panic!("{other}"),
        }
        assert_eq!(faults.index_flushes(), before + n);
        assert!(active.segment().is_poisoned());
        let err = active.append(1, 1_001, 1, &all[1]).unwrap_err();
        assert!(matches!(err, Error::Poisoned { .. }), "{err}");
        // The `.log` fsync before the index flush went through: the data is durable.
        let image = faults
            .durable_image(&path(dir.path(), 0, FileKind::LOG))
            .unwrap();
        assert!(image.starts_with(&all[0]), "{} bytes", image.len());
    }
}

#[test]
fn a_failed_rename_or_unlink_is_a_typed_error_and_changes_nothing_of_that_file() {
    let dir = tempdir();
    let faults = FaultInjector::new(dir.path());
    let mut active = ActiveSegment::create(dir.path(), 0, &faulty_config(&faults)).unwrap();
    append_batch(&mut active, &batches(1)[0]);
    let segment = active.seal().unwrap();
    let log = path(dir.path(), 0, FileKind::LOG);

    faults.fail_nth_rename(1, FaultKind::Eio);
    let err = segment.mark_deleted().unwrap_err();
    assert!(
        matches!(&err, Error::Io { op: IoOp::Rename, path, .. } if *path == log),
        "{err}"
    );
    assert!(log.exists());
    assert_eq!(segment.path(seglog_segment::FileType::Log), log);
    segment.mark_deleted().unwrap(); // the next one succeeds

    let deleted = path(
        dir.path(),
        0,
        FileKind::LOG.with_suffix(Some(TempSuffix::Deleted)),
    );
    faults.fail_nth_remove(1, FaultKind::Eio);
    let err = segment.delete_files().unwrap_err();
    assert!(
        matches!(&err, Error::Io { op: IoOp::Remove, path, .. } if *path == deleted),
        "{err}"
    );
    // The `.log` stays; the other files were still tried and removed.
    assert!(deleted.exists());
    assert!(
        !path(
            dir.path(),
            0,
            FileKind::INDEX.with_suffix(Some(TempSuffix::Deleted))
        )
        .exists()
    );
    segment.delete_files().unwrap();
    assert!(!deleted.exists());
}

/// Reopening a `.log` through the same injector (a reopened segment, a file-handle cache) does
/// not make its unsynced bytes durable: the path keeps its image until the next fsync.
#[test]
fn a_reopen_through_the_same_injector_keeps_the_durable_image() {
    let dir = tempdir();
    let faults = FaultInjector::new(dir.path());
    let config = faulty_config(&faults);
    let all = batches(3);
    let mut active = ActiveSegment::create(dir.path(), 0, &config).unwrap();
    let log_path = active.segment().log_path();
    append_batch(&mut active, &all[0]);
    append_batch(&mut active, &all[1]);
    active.flush().unwrap();
    append_batch(&mut active, &all[2]); // page cache only
    drop(active);
    let (segment, _) =
        Segment::open(dir.path(), 0, &config, SegmentOpenOptions::default()).unwrap();
    assert_eq!(segment.read_next_offset().unwrap(), 3);
    assert_eq!(faults.durable_image(&log_path).unwrap(), all[..2].concat());
    assert_eq!(faults.durable_images().len(), 1, "one image per path");
    segment.flush().unwrap();
    assert_eq!(faults.durable_image(&log_path).unwrap(), all.concat());
    // A fresh injector knows nothing of the past: it takes the file as durable as found.
    let fresh = FaultInjector::new(dir.path());
    let fresh_config = faulty_config(&fresh);
    drop(segment);
    let (_segment, _) =
        Segment::open(dir.path(), 0, &fresh_config, SegmentOpenOptions::default()).unwrap();
    assert_eq!(fresh.durable_image(&log_path).unwrap(), all.concat());
}
