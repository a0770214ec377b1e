//! The fsync protocol of `docs/durability.md` (principles a-c), observed through the segment
//! layer's I/O seam (the `seglog-faults` backend): which `.log` bytes and which directory listing are durable when a call
//! returns.

use std::path::Path;

use seglog::{Error, LogConfig};
use seglog_faults::{FaultInjector, FaultKind};

use crate::support::*;

fn seg(dir: &Path, base: i64, ext: &str) -> std::path::PathBuf {
    dir.join(format!("{base:020}.{ext}"))
}

fn name(base: i64, ext: &str) -> String {
    format!("{base:020}.{ext}")
}

fn config() -> LogConfig {
    small_config(1 << 20)
}

#[test]
fn a_durable_append_syncs_segments_sealed_since_the_last_commit_and_the_directory() {
    let (dir, faults, log) = fresh_with_faults(config());
    log.append(&numbered(T0, "a", 3)).unwrap(); // page cache only
    log.roll().unwrap(); // seals segment 0 without an fsync
    let index_flushes = faults.index_flushes();
    let syncs = faults.syncs();
    log.append_durable(&numbered(T0, "b", 2)).unwrap();
    // Both `.log`s, fdatasync only: no index msync.
    assert_eq!(faults.syncs() - syncs, 2);
    assert_eq!(faults.index_flushes(), index_flushes);
    for base in [0, 3] {
        let path = seg(dir.path(), base, "log");
        assert_eq!(
            faults.durable_image(&path).unwrap(),
            std::fs::read(&path).unwrap(),
            "segment {base}"
        );
    }
    let names = faults
        .durable_names(dir.path())
        .expect("the directory was synced");
    assert!(names.contains(&name(3, "log")), "{names:?}");
    // The recovery point (which vouches for indexes) moves with flushes only.
    assert_eq!(log.recovery_point(), 0);
    // The next commit syncs only the active segment.
    let syncs = faults.syncs();
    log.append_durable(&numbered(T0, "c", 1)).unwrap();
    assert_eq!(faults.syncs() - syncs, 1);
}

#[test]
fn truncate_to_is_durable_before_it_returns() {
    let (dir, faults, log) = fresh_with_faults(config());
    log.append_durable(&numbered(T0, "a", 3)).unwrap();
    log.append_durable(&numbered(T0, "b", 3)).unwrap();
    log.roll().unwrap();
    log.append_durable(&numbered(T0, "c", 3)).unwrap(); // segment 6
    log.truncate_to(3).unwrap();
    // The cut of segment 0 is durable, and segment 6 is durably gone.
    let path = seg(dir.path(), 0, "log");
    let on_disk = std::fs::read(&path).unwrap();
    assert_eq!(faults.durable_image(&path).unwrap(), on_disk);
    let names = faults.durable_names(dir.path()).unwrap();
    assert!(!names.contains(&name(6, "log")), "{names:?}");
    // Unlinked, not left `.deleted` (a later load could rename it back into a hole).
    assert!(
        !names.contains(&format!("{}.deleted", name(6, "log"))),
        "{names:?}"
    );
    assert_eq!(log.recovery_point(), 3);
}

#[test]
fn truncate_fully_makes_the_new_segment_and_the_removals_durable() {
    let (dir, faults, log) = fresh_with_faults(config());
    log.append_durable(&numbered(T0, "a", 3)).unwrap();
    log.truncate_fully_and_start_at(100).unwrap();
    let names = faults.durable_names(dir.path()).unwrap();
    assert!(names.contains(&name(100, "log")), "{names:?}");
    assert!(!names.contains(&name(0, "log")), "{names:?}");
    assert!(
        !names.contains(&format!("{}.deleted", name(0, "log"))),
        "{names:?}"
    );
}

#[test]
fn segments_dropped_at_load_are_durably_gone_before_the_log_is_usable() {
    let (dir, clock, log) = fresh(small_config(1024));
    append_numbered(&log, 30, "r", 2);
    let segments = log.segments();
    assert!(segments.len() >= 3);
    drop(log); // crash
    // Garbage in the first segment: recovery cuts it and drops every later segment.
    let mut bytes = std::fs::read(&segments[0].path).unwrap();
    bytes.extend_from_slice(&[0xAB; 100]);
    std::fs::write(&segments[0].path, bytes).unwrap();
    let faults = FaultInjector::new(dir.path());
    let log = open_with_faults(dir.path(), small_config(1024), &clock, &faults);
    assert!(!log.load_report().deleted_segments.is_empty());
    let names = faults
        .durable_names(dir.path())
        .expect("the load synced the directory");
    for s in &segments[1..] {
        let file = s.path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(!names.contains(&file), "{file} in {names:?}");
        assert!(!names.contains(&format!("{file}.deleted")), "{names:?}");
    }
}

#[test]
fn a_failed_directory_fsync_fails_the_durable_append_and_poisons() {
    let (_dir, faults, log) = fresh_with_faults(config());
    log.append_durable(&numbered(T0, "a", 1)).unwrap();
    log.roll().unwrap(); // the new segment's name needs a directory fsync
    faults.fail_nth_dir_sync(1, FaultKind::Eio);
    assert!(log.append_durable(&numbered(T0, "b", 1)).is_err());
    faults.clear();
    assert!(matches!(
        log.append(&numbered(T0, "c", 1)),
        Err(Error::Poisoned { .. })
    ));
}

#[test]
fn a_failed_directory_fsync_in_truncate_to_poisons() {
    let (_dir, faults, log) = fresh_with_faults(config());
    log.append(&numbered(T0, "a", 3)).unwrap();
    log.roll().unwrap();
    log.append(&numbered(T0, "b", 3)).unwrap();
    faults.fail_nth_dir_sync(1, FaultKind::Eio);
    assert!(log.truncate_to(1).is_err());
    faults.clear();
    assert!(matches!(log.truncate_to(0), Err(Error::Poisoned { .. })));
}

#[test]
fn retention_renames_are_durable_when_the_pass_returns() {
    let (dir, faults, log) = fresh_with_faults(LogConfig {
        retention_bytes: 100,
        file_delete_delay_ms: i64::MAX / 2,
        ..small_config(1024)
    });
    while log.segments().len() < 4 {
        log.append_durable(&numbered(T0, "r", 3)).unwrap();
    }
    log.flush().unwrap();
    let before: Vec<i64> = log.segments().iter().map(|s| s.base_offset).collect();
    log.set_high_watermark(log.log_end_offset()).unwrap();
    let report = log.delete_old_segments().unwrap();
    assert!(!report.deleted.is_empty());
    let names = faults.durable_names(dir.path()).unwrap();
    for deleted in &report.deleted {
        let file = name(deleted.base_offset, "log");
        assert!(!names.contains(&file), "{file} in {names:?}");
        assert!(names.contains(&format!("{file}.deleted")), "{names:?}");
    }
    assert!(before.len() > log.segments().len());
}
