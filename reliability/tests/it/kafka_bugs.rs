//! Kafka's crash-related storage bugs (spec section 7), end to end: a real killed process, a
//! real restart. The unit-level tests of the same bugs live in the crates' own `kafka_bugs`
//! modules; `docs/durability.md` maps all 18 to their tests.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use seglog::{CLEAN_SHUTDOWN_FILE, Clock, Compression, Log};
use seglog_reliability::{RecordId, T0_MS, build_batch, child, read_log};

use crate::support::{copy_dir, fill, seeded_rng};

const CHILD: &str = env!("CARGO_BIN_EXE_crash-child");

/// Starts `crash-child open <dir> hold`, waits until it reports `opened`, then kills it.
fn open_and_kill(dir: &std::path::Path) {
    let mut running = Command::new(CHILD)
        .args(["open", &dir.display().to_string(), "hold"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(running.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("opened"), "child said {line:?}");
    running.kill().unwrap();
    running.wait().unwrap();
}

/// KAFKA-1112: after `kill -9` the active segment's `.index` is untrimmed (preallocated,
/// zero-padded) and looks full; the restart must rebuild it rather than refuse to start.
#[test]
fn kafka_1112_restart_after_kill_with_a_zero_padded_active_index() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t-0");
    let log = Log::open(&dir, child::config()).unwrap();
    let (mut rng, _) = seeded_rng("kafka_1112");
    let written = fill(&log, 1, &mut 0, 80, &mut rng);
    log.flush().unwrap();
    let active = log.segments().last().unwrap().clone();
    drop(log); // The process "dies": nothing trims the active segment's indexes.
    let index = active.path.with_extension("index");
    let len = std::fs::metadata(&index).unwrap().len();
    assert_eq!(
        len, 4096,
        "the active index is preallocated (zero-padded) on disk"
    );
    // A real process opens it after the "kill", and is killed itself while holding it.
    open_and_kill(&dir);
    let log = Log::open(&dir, child::config()).unwrap();
    let contents = read_log(&log).unwrap();
    seglog_reliability::check_acknowledged(&contents, &written).unwrap();
    assert!(log.load_report().recovered().count() > 0);
}

/// KAFKA-10471: the clean-shutdown marker is consumed before loading, so a process killed
/// while (or after) loading leaves an unclean state and the next open recovers.
#[test]
fn kafka_10471_a_kill_after_open_is_not_a_clean_shutdown() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t-0");
    let log = Log::open(&dir, child::config()).unwrap();
    let (mut rng, _) = seeded_rng("kafka_10471");
    fill(&log, 1, &mut 0, 30, &mut rng);
    log.close().unwrap();
    drop(log);
    assert!(dir.join(CLEAN_SHUTDOWN_FILE).exists());
    open_and_kill(&dir);
    assert!(
        !dir.join(CLEAN_SHUTDOWN_FILE).exists(),
        "the marker survived an open that was killed"
    );
    let log = Log::open(&dir, child::config()).unwrap();
    assert!(!log.load_report().had_clean_shutdown);
    assert_eq!(read_log(&log).unwrap().records.len(), 30);
}

/// KAFKA-10207 / KAFKA-19200: a never-trimmed (zero-padded) `.timeindex` below the recovery
/// point after a clean shutdown must not make time retention see timestamp 0 and delete the
/// segment at once.
#[test]
fn kafka_10207_a_zero_padded_time_index_does_not_trigger_time_retention() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t-0");
    let mut config = seglog_reliability::small_config(4096);
    // Keep records up to a day older than their 2023 timestamps.
    config.retention_ms = seglog::SystemClock.now_ms() - T0_MS + 86_400_000;
    let log = Log::open(&dir, config.clone()).unwrap();
    let (mut rng, _) = seeded_rng("kafka_10207");
    fill(&log, 1, &mut 0, 100, &mut rng);
    log.close().unwrap();
    let segments = log.segments();
    drop(log);
    assert!(segments.len() > 2);
    let copy = tmp.path().join("padded").join("t-0");
    copy_dir(&dir, &copy);
    for segment in &segments[..segments.len() - 1] {
        let name = segment.path.with_extension("timeindex");
        let path = copy.join(name.file_name().unwrap());
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.resize(4092, 0);
        std::fs::write(&path, bytes).unwrap();
    }
    let log = Log::open(&copy, config).unwrap();
    assert!(log.load_report().had_clean_shutdown);
    log.set_high_watermark(log.log_end_offset()).unwrap();
    let report = log.delete_old_segments().unwrap();
    assert!(
        report.deleted.is_empty(),
        "time retention deleted {:?}",
        report.deleted
    );
    assert_eq!(read_log(&log).unwrap().records.len(), 100);
}

/// KAFKA-6388 / KAFKA-13603: an empty active segment (its index possibly never written) at a
/// kill, then a roll on it: the restart neither treats it as corrupt nor rolls onto an
/// existing base offset.
#[test]
fn kafka_6388_13603_kill_with_an_empty_active_segment() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t-0");
    let log = Log::open(&dir, child::config()).unwrap();
    let (mut rng, _) = seeded_rng("kafka_6388");
    fill(&log, 1, &mut 0, 20, &mut rng);
    log.roll().unwrap();
    let empty = log.segments().last().unwrap().clone();
    assert_eq!(empty.size_bytes, 0);
    drop(log);
    let _ = std::fs::remove_file(empty.path.with_extension("index"));
    let _ = std::fs::remove_file(empty.path.with_extension("timeindex"));
    open_and_kill(&dir);
    let log = Log::open(&dir, child::config()).unwrap();
    log.roll().unwrap(); // a roll on the empty active segment is a no-op
    let info = log
        .append(&build_batch(&[RecordId { stream: 2, seq: 0 }], Compression::None).unwrap())
        .unwrap();
    assert_eq!(info.first_offset, 20);
    assert_eq!(read_log(&log).unwrap().records.len(), 21);
    log.close().unwrap();
}
