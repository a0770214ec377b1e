//! The leftovers rule: hostile `.swap` and `.deleted` files never cost a record, a genuine
//! interrupted swap still completes, and a read-only open resolves every crash state of a swap
//! exactly as a read-write open does.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use seglog_records::{BatchBuilder, Batches};

use super::SwapProblem;
use crate::{CleanupPolicy, Isolation, Log, LogConfig, LogOpenOptions, ManualClock};

const T0: i64 = 1_700_000_000_000;

fn config(policy: CleanupPolicy) -> LogConfig {
    LogConfig {
        segment_bytes: 1024,
        index_interval_bytes: 64,
        segment_index_bytes: 4096,
        retention_ms: -1,
        message_timestamp_after_max_ms: i64::MAX,
        message_timestamp_before_max_ms: i64::MAX,
        cleanup_policy: policy,
        file_delete_delay_ms: 0,
        ..LogConfig::default()
    }
}

fn open_with(dir: &Path, read_only: bool, clock: &Arc<ManualClock>) -> Log {
    Log::open_with(
        dir,
        config(CleanupPolicy::Compact),
        LogOpenOptions {
            clock: clock.clone(),
            read_only,
            high_watermark: crate::HighWatermarkPolicy::LogEnd,
            ..LogOpenOptions::default()
        },
    )
    .unwrap()
}

fn open(dir: &Path) -> Log {
    open_with(dir, false, &Arc::new(ManualClock::new(T0)))
}

fn put(log: &Log, key: &str, value: Option<&str>) {
    let mut builder = BatchBuilder::new(0);
    builder.append(T0, Some(key.as_bytes()), value.map(str::as_bytes), &[]);
    log.append(&builder.build().unwrap()).unwrap();
}

/// (offset, key, value) of every record a reader sees.
fn records(log: &Log) -> Vec<(i64, String, Option<String>)> {
    let mut out = Vec::new();
    let mut next = log.log_start_offset();
    loop {
        let data = log.read(next, 1 << 20, Isolation::LogEnd, true).unwrap();
        if data.slice.is_empty() {
            return out;
        }
        let bytes = data.slice.read_to_vec().unwrap();
        for batch in Batches::new(&bytes, 0) {
            let batch = batch.unwrap();
            for record in batch.records(1 << 20) {
                let record = record.unwrap();
                if record.offset >= next {
                    let text =
                        |b: Option<bytes::Bytes>| b.map(|b| String::from_utf8(b.to_vec()).unwrap());
                    out.push((record.offset, text(record.key).unwrap(), text(record.value)));
                }
            }
            next = next.max(batch.header().last_offset + 1);
        }
    }
}

/// A log of unique keys over several segments, closed.
fn unique_log(dir: &Path) -> Vec<i64> {
    let log = open(dir);
    for i in 0..60 {
        put(&log, &format!("key-{i}"), Some(&"u".repeat(40)));
    }
    let bases = log.segments().iter().map(|s| s.base_offset).collect();
    log.close().unwrap();
    bases
}

fn path(dir: &Path, base: i64, suffix: &str) -> PathBuf {
    dir.join(format!("{base:020}{suffix}"))
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// Opens `dir` read-write with a leftover written by `plant`: every record is still served
/// and the swap was refused (set aside, bytes unchanged) with `expect`.
fn refused(plant: impl Fn(&Path, &[i64]), expect: impl Fn(&SwapProblem) -> bool) {
    let tmp = tempfile::tempdir().unwrap();
    let bases = unique_log(tmp.path());
    assert!(bases.len() >= 3, "{bases:?}");
    let before = records(&open_with(
        tmp.path(),
        true,
        &Arc::new(ManualClock::new(T0)),
    ));
    plant(tmp.path(), &bases);
    let planted: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".swap"))
        .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
        .collect();
    assert!(!planted.is_empty());
    // A read-only open serves the same and changes nothing.
    let read_only = open_with(tmp.path(), true, &Arc::new(ManualClock::new(T0)));
    assert_eq!(records(&read_only), before);
    assert!(!read_only.load_report().rejected_swaps.is_empty());
    drop(read_only);
    let log = open(tmp.path());
    let report = log.load_report().clone();
    assert_eq!(records(&log), before, "{report:?}");
    assert!(report.completed_swaps.is_empty(), "{report:?}");
    assert_eq!(report.rejected_swaps.len(), planted.len(), "{report:?}");
    for rejected in &report.rejected_swaps {
        assert!(expect(&rejected.problem), "{rejected:?}");
    }
    for (swap, bytes) in planted {
        let aside = super::rejected_name(&swap);
        assert_eq!(std::fs::read(&aside).unwrap(), bytes, "{}", aside.display());
        assert!(!swap.exists());
    }
    let bases_now: Vec<i64> = log.segments().iter().map(|s| s.base_offset).collect();
    assert_eq!(bases_now, bases);
}

#[test]
fn an_empty_swap_is_refused_and_the_segment_it_would_replace_stays() {
    refused(
        |dir, bases| std::fs::write(path(dir, bases[0], ".log.swap"), []).unwrap(),
        |p| matches!(p, SwapProblem::MissingRecord { offset: 0 }),
    );
}

#[test]
fn a_garbage_swap_is_refused() {
    refused(
        |dir, bases| std::fs::write(path(dir, bases[0], ".log.swap"), vec![0x5a; 300]).unwrap(),
        |p| matches!(p, SwapProblem::Damaged { position: 0, .. }),
    );
}

#[test]
fn a_copy_of_the_active_segment_under_an_older_base_is_refused() {
    refused(
        |dir, bases| {
            let last = *bases.last().unwrap();
            std::fs::copy(path(dir, last, ".log"), path(dir, bases[0], ".log.swap")).unwrap();
        },
        |p| matches!(p, SwapProblem::MissingRecord { offset: 0 }),
    );
}

#[test]
fn a_swap_based_inside_a_segment_is_refused() {
    refused(
        |dir, bases| {
            let copy = std::fs::read(path(dir, bases[1], ".log")).unwrap();
            std::fs::write(path(dir, bases[0] + 1, ".log.swap"), copy).unwrap();
        },
        |p| matches!(p, SwapProblem::OverlapsSegment { base_offset: 0, .. }),
    );
}

#[test]
fn overlapping_swaps_are_refused() {
    refused(
        |dir, bases| {
            let first = std::fs::read(path(dir, bases[0], ".log")).unwrap();
            let second = std::fs::read(path(dir, bases[1], ".log")).unwrap();
            let merged = [first.clone(), second].concat();
            std::fs::write(path(dir, bases[0], ".log.swap"), merged).unwrap();
            std::fs::write(path(dir, bases[1], ".log.swap"), first).unwrap();
        },
        |p| {
            matches!(
                p,
                SwapProblem::Overlapping { .. } | SwapProblem::UnknownRecord { .. }
            )
        },
    );
}

#[test]
fn a_swap_with_a_changed_record_is_refused() {
    refused(
        |dir, bases| {
            // The same offsets, other values: a batch built at the segment's base.
            let mut builder = BatchBuilder::new(bases[0]);
            builder.append(T0, Some(b"key-0"), Some(b"forged"), &[]);
            std::fs::write(
                path(dir, bases[0], ".log.swap"),
                builder.build().unwrap().as_ref(),
            )
            .unwrap();
        },
        |p| matches!(p, SwapProblem::UnknownRecord { offset: 0 }),
    );
}

#[test]
fn a_middle_segment_renamed_deleted_is_restored_and_an_old_prefix_or_tail_is_not() {
    let tmp = tempfile::tempdir().unwrap();
    let bases = unique_log(tmp.path());
    let before = records(&open_with(
        tmp.path(),
        true,
        &Arc::new(ManualClock::new(T0)),
    ));
    for suffix in [".log", ".index", ".timeindex"] {
        let live = path(tmp.path(), bases[1], suffix);
        std::fs::rename(&live, format!("{}.deleted", live.display())).unwrap();
    }
    // Read-only: served in memory, nothing renamed.
    let read_only = open_with(tmp.path(), true, &Arc::new(ManualClock::new(T0)));
    assert_eq!(records(&read_only), before);
    drop(read_only);
    assert!(!path(tmp.path(), bases[1], ".log").exists());
    let log = open(tmp.path());
    assert_eq!(records(&log), before);
    let report = log.load_report().clone();
    assert!(
        report
            .restored_files
            .contains(&path(tmp.path(), bases[1], ".log")),
        "{report:?}"
    );
    assert!(path(tmp.path(), bases[1], ".log").exists());
    log.close().unwrap();
    drop(log);
    // The first segment (retention's `.deleted`) goes, as in Kafka.
    let first = path(tmp.path(), bases[0], ".log");
    std::fs::rename(&first, format!("{}.deleted", first.display())).unwrap();
    let log = open(tmp.path());
    assert!(log.load_report().restored_files.is_empty());
    assert_eq!(log.log_start_offset(), bases[1]);
}

/// Every crash state of a cleaning round's first swap (a crash after each of its steps), and
/// each of them with one more file renamed than the step did: a read-only open serves exactly
/// what a read-write open of the same state serves, and every key keeps its latest value.
#[test]
fn a_read_only_open_resolves_every_crash_state_of_a_swap_as_a_read_write_open() {
    let clock = Arc::new(ManualClock::new(T0));
    let template = tempfile::tempdir().unwrap();
    {
        let log = open_with(template.path(), false, &clock);
        for round in 0..20 {
            for key in 0..10 {
                put(
                    &log,
                    &format!("k{key}"),
                    Some(&format!("v{round}-{}", "x".repeat(20))),
                );
            }
        }
        put(&log, "k3", None);
        log.roll().unwrap();
        log.close().unwrap();
    }
    let latest = |records: &[(i64, String, Option<String>)]| {
        let mut map = std::collections::BTreeMap::new();
        for (_, key, value) in records {
            map.insert(key.clone(), value.clone());
        }
        map
    };
    let expected = latest(&records(&open_with(template.path(), true, &clock)));
    let crash_after = |k: usize| {
        let crashed = tempfile::tempdir().unwrap();
        copy_dir(template.path(), crashed.path());
        let log = open_with(crashed.path(), false, &clock);
        log.clean_with(T0, true, k).unwrap();
        drop(log); // a crash: no close
        crashed
    };
    let check = |dir: &Path, context: &str| {
        let read_only = records(&open_with(dir, true, &clock));
        let writable_dir = tempfile::tempdir().unwrap();
        copy_dir(dir, writable_dir.path());
        let writable = records(&open_with(writable_dir.path(), false, &clock));
        assert_eq!(read_only, writable, "{context}");
        assert_eq!(latest(&read_only), expected, "{context}");
    };
    let mut states = 0;
    let mut previous = crash_after(0);
    for k in 1..=12 {
        let next = crash_after(k);
        check(previous.path(), &format!("crash after step {}", k - 1));
        states += 1;
        // The renames from one step's state to the next, file by file, in the order a
        // segment renames its files: every prefix is a crash state too.
        for j in 1..renames(previous.path(), next.path()).len() {
            let partial = tempfile::tempdir().unwrap();
            copy_dir(previous.path(), partial.path());
            for (from, to) in renames(previous.path(), next.path()).into_iter().take(j) {
                std::fs::rename(partial.path().join(from), partial.path().join(to)).unwrap();
            }
            check(
                partial.path(),
                &format!("crash in step {k} after {j} renames"),
            );
            states += 1;
        }
        previous = next;
    }
    assert!(states > 12, "{states}");
}

/// The renames that turn the directory `from` into `to` (names only in one of them, paired
/// by base offset and file type), in the order `Segment::rename_suffix` does them.
fn renames(from: &Path, to: &Path) -> Vec<(String, String)> {
    use seglog_segment::{FileType, parse_file_name};
    let names = |dir: &Path| -> std::collections::BTreeSet<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| parse_file_name(Path::new(n)).is_some())
            .collect()
    };
    let (before, after) = (names(from), names(to));
    let order = |t: FileType| {
        [
            FileType::Log,
            FileType::Index,
            FileType::TimeIndex,
            FileType::TxnIndex,
        ]
        .iter()
        .position(|x| *x == t)
        .unwrap_or(9)
    };
    let mut pairs = Vec::new();
    for old in before.difference(&after) {
        let o = parse_file_name(Path::new(old)).unwrap();
        if let Some(new) = after.difference(&before).find(|n| {
            let n = parse_file_name(Path::new(n)).unwrap();
            n.base_offset == o.base_offset && n.kind.file_type == o.kind.file_type
        }) {
            pairs.push((
                o.base_offset,
                order(o.kind.file_type),
                old.clone(),
                new.clone(),
            ));
        }
    }
    pairs.sort();
    pairs.into_iter().map(|(_, _, a, b)| (a, b)).collect()
}

/// The read-only reload rule: a roll (new live files above every segment) or a cleaner's
/// `.cleaned` output is no reason to load again; a rename or removal of a listed name is, and
/// so is a new `.swap` or `.deleted` name or a live name below the last segment.
#[test]
fn a_read_only_load_is_redone_only_when_a_name_it_listed_moved() {
    use std::collections::BTreeMap;
    use std::ffi::OsString;
    let listing = |names: &[&str]| -> BTreeMap<OsString, seglog_segment::ParsedFileName> {
        names
            .iter()
            .map(|n| {
                let parsed = seglog_segment::parse_file_name(Path::new(n)).unwrap();
                (OsString::from(n), parsed)
            })
            .collect()
    };
    let before = listing(&["00000000000000000000.log", "00000000000000000010.log"]);
    let still = |after: &[&str]| super::reload::unchanged_for_a_reader(&before, &listing(after));
    assert!(still(&[
        "00000000000000000000.log",
        "00000000000000000010.log"
    ]));
    assert!(still(&[
        "00000000000000000000.log",
        "00000000000000000010.log",
        "00000000000000000020.log",
        "00000000000000000020.index",
        "00000000000000000000.log.cleaned",
    ]));
    assert!(!still(&[
        "00000000000000000000.log.deleted",
        "00000000000000000010.log"
    ]));
    assert!(!still(&[
        "00000000000000000000.log",
        "00000000000000000010.log",
        "00000000000000000000.log.swap",
    ]));
    assert!(!still(&[
        "00000000000000000000.log",
        "00000000000000000005.log",
        "00000000000000000010.log",
    ]));
}

/// A swapped index without its `.log.swap`: beside a segment that lacks that index (a crash
/// between the renames of a swap's last step) it takes its final name; beside one that has it,
/// it is set aside and the live index stays.
#[test]
fn a_swapped_index_completes_a_half_renamed_swap_and_is_refused_otherwise() {
    let tmp = tempfile::tempdir().unwrap();
    let bases = unique_log(tmp.path());
    let before = records(&open(tmp.path()));
    let index = path(tmp.path(), bases[0], ".index");
    let time_index = path(tmp.path(), bases[0], ".timeindex");
    let (index_bytes, time_bytes) = (
        std::fs::read(&index).unwrap(),
        std::fs::read(&time_index).unwrap(),
    );
    std::fs::rename(&index, path(tmp.path(), bases[0], ".index.swap")).unwrap();
    std::fs::write(path(tmp.path(), bases[0], ".timeindex.swap"), [0u8; 12]).unwrap();
    let log = open(tmp.path());
    let report = log.load_report().clone();
    assert_eq!(records(&log), before);
    assert_eq!(report.completed_swaps, vec![index.clone()], "{report:?}");
    assert_eq!(report.rejected_swaps.len(), 1, "{report:?}");
    assert_eq!(report.rejected_swaps[0].problem, SwapProblem::StrayIndex);
    assert_eq!(std::fs::read(&index).unwrap(), index_bytes);
    assert_eq!(std::fs::read(&time_index).unwrap(), time_bytes);
    assert!(path(tmp.path(), bases[0], ".timeindex.swap.rejected").exists());
}
