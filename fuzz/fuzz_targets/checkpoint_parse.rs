//! Fuzzes the checkpoint files and the clean-shutdown marker: arbitrary bytes as
//! `recovery-point-offset-checkpoint` (parsed directly), then as both checkpoints and the
//! marker of a small standalone log that is reopened.
//!
//! Properties, besides "never panics":
//! - `read` either parses or reports `Corrupt` (with a 1-based line number inside the text)
//!   or an I/O error (text that is not UTF-8); `read_or_empty` is empty exactly on error;
//! - what parses is written back and reads back equal;
//! - the log opens whatever the files hold and loses no record, unless the log-start
//!   checkpoint names an offset beyond the log end (Kafka then restarts the log there).

#![no_main]

use libfuzzer_sys::fuzz_target;
use seglog::{
    BatchBuilder, CLEAN_SHUTDOWN_FILE, LOG_START_OFFSET_CHECKPOINT, Log, LogConfig,
    OffsetCheckpointFile, RECOVERY_POINT_CHECKPOINT, TopicPartition,
};

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 200,
        message_timestamp_after_max_ms: i64::MAX,
        ..LogConfig::default()
    }
}

/// A closed log of 6 records in 3 segments, built once per process.
fn template() -> &'static std::path::Path {
    static TEMPLATE: std::sync::OnceLock<(tempfile::TempDir, std::path::PathBuf)> =
        std::sync::OnceLock::new();
    &TEMPLATE
        .get_or_init(|| {
            let tmp = tempfile::tempdir().expect("a temp dir");
            let log = Log::open(tmp.path().join("t-0"), config()).expect("open a fresh log");
            for i in 0..6i64 {
                let mut builder = BatchBuilder::new(0);
                builder.append(1_700_000_000_000 + i, None, Some(&[i as u8; 50]), &[]);
                log.append(&builder.build().expect("build")).expect("append");
            }
            log.close().expect("close");
            let path = tmp.path().join("t-0");
            (tmp, path)
        })
        .1
}

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().expect("a temp dir");
    // Apart from the log below: a checkpoint file in a directory makes it a log-dirs root.
    let parse_dir = dir.path().join("parse");
    std::fs::create_dir(&parse_dir).expect("mkdir");
    let path = parse_dir.join(RECOVERY_POINT_CHECKPOINT);
    std::fs::write(&path, data).expect("write");
    let file = OffsetCheckpointFile::new(&path);
    match file.read() {
        Ok(map) => {
            assert_eq!(file.read_or_empty(), map);
            let copy = OffsetCheckpointFile::new(parse_dir.join("copy"));
            copy.write(&map).expect("write back");
            assert_eq!(copy.read().expect("read back"), map);
        }
        Err(seglog::Error::Corrupt { position, .. }) => {
            let lines = data.split(|b| *b == b'\n').count() as u64;
            assert!(position >= 1 && position <= lines + 1, "line {position} of {lines}");
            assert!(file.read_or_empty().is_empty());
        }
        Err(seglog::Error::Io { .. }) => assert!(std::str::from_utf8(data).is_err()),
        Err(e) => panic!("unexpected error: {e}"),
    }

    // The same bytes as every state file of a small log (a copy of a template built once:
    // building and closing a log per input would cost several fsyncs).
    let log_dir = dir.path().join("t-0");
    std::fs::create_dir(&log_dir).expect("mkdir");
    for entry in std::fs::read_dir(template()).expect("list the template") {
        let entry = entry.expect("list the template");
        std::fs::copy(entry.path(), log_dir.join(entry.file_name())).expect("copy");
    }
    for name in [RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT, CLEAN_SHUTDOWN_FILE] {
        std::fs::write(log_dir.join(name), data).expect("write");
    }
    // The standalone log's rule: its own entry (`t 0`), else 0 (a file that does not parse
    // reads as empty; another partition's entry is reported, not applied).
    let entries = OffsetCheckpointFile::new(log_dir.join(LOG_START_OFFSET_CHECKPOINT)).read_or_empty();
    let log_start = entries.get(&TopicPartition::new("t", 0)).copied().unwrap_or(0);
    let log = Log::open(&log_dir, config()).expect("the log opens whatever its state files hold");
    if log_start > 6 {
        // Beyond the log end: reported and ignored, nothing is deleted.
        assert_eq!(log.load_report().log_start_beyond_end, Some(log_start));
        assert_eq!(log.log_start_offset(), 0);
        assert_eq!(log.log_end_offset(), 6, "records lost");
    } else {
        assert_eq!(log.log_end_offset(), 6, "records lost");
        assert_eq!(log.log_start_offset(), log_start.clamp(0, 6));
    }
});
