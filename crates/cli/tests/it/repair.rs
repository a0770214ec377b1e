//! `recover` repairs what `verify` reports; `retain` deletes what retention says; the demo runs.

use std::path::Path;

use crate::support::{Run, copy_dir, corpus, seglog, seglog_stdin};

fn verify_ok(dir: &Path) -> bool {
    seglog(["verify".as_ref(), dir.as_os_str()]).code == 0
}

/// `seglog produce` of the JSON lines `text` into `dir`, 10 records a batch, 8 KiB segments.
fn produce_small_segments(dir: &Path, text: &str) -> Run {
    seglog_stdin(
        [
            "produce".as_ref(),
            dir.as_os_str(),
            "--input".as_ref(),
            "-".as_ref(),
            "--batch-records".as_ref(),
            "10".as_ref(),
            "--config".as_ref(),
            "segment.bytes=8192".as_ref(),
        ],
        text,
    )
}

#[test]
fn recover_repairs_a_flipped_byte_a_zero_padded_index_and_a_wrong_entry() {
    let Some(src) = corpus().map(|c| c.join("NikhilDighe9975-kafka_setup/__consumer_offsets-12"))
    else {
        return;
    };
    let (_tmp, dir) = copy_dir(&src);
    let log = dir.join("00000000000000000000.log");
    let index = dir.join("00000000000000000000.index");
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[5000] ^= 0x40; // inside the batch at 4830, which holds offsets 61..=66
    std::fs::write(&log, bytes).unwrap();
    let mut entries = std::fs::read(&index).unwrap();
    entries[3] += 1;
    entries.extend_from_slice(&[0; 800]);
    std::fs::write(&index, entries).unwrap();
    assert!(!verify_ok(&dir));

    let run = seglog(["recover".as_ref(), dir.as_os_str(), "--json".as_ref()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = &run.json_lines()[0];
    let first = &report["segments"][0];
    assert_eq!(first["truncated_at"], 4830, "{report}");
    assert_eq!(first["truncation"], "corrupt");
    assert_eq!(
        report["deleted_segments"],
        serde_json::json!([862]),
        "Kafka deletes every segment after a cut"
    );
    assert_eq!(report["log_end_offset"], 61);
    assert!(
        verify_ok(&dir),
        "{}",
        seglog(["verify".as_ref(), dir.as_os_str()]).stdout
    );

    let records = seglog(["read".as_ref(), dir.as_os_str(), "--json".as_ref()]).json_lines();
    assert_eq!(records.last().unwrap()["offset"], 60);
}

#[test]
fn recover_cuts_a_torn_tail_and_rebuilds_a_missing_index() {
    let Some(src) = corpus().map(|c| c.join("dipendrasaini-kafka-learnning-series/invoice-1"))
    else {
        return;
    };
    let (_tmp, dir) = copy_dir(&src);
    let active = dir.join("00000000000000090748.log");
    let len = std::fs::metadata(&active).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&active)
        .unwrap()
        .set_len(len - 100)
        .unwrap();
    std::fs::remove_file(dir.join("00000000000000030620.index")).unwrap();

    let text = seglog(["recover".as_ref(), dir.as_os_str()]).ok();
    assert!(text.contains("torn tail"), "{text}");
    assert!(
        text.contains("segment 30620: 65 batches") && text.contains(".index was missing"),
        "{text}"
    );
    assert!(verify_ok(&dir));
    assert!(dir.join("00000000000000030620.index").exists());
    let info = &seglog(["info".as_ref(), dir.as_os_str(), "--json".as_ref()]).json_lines()[0];
    assert_eq!(info["segments"].as_array().unwrap().len(), 4);
    assert!(info["log_end_offset"].as_i64().unwrap() < 99523);
    assert_eq!(info["clean_shutdown"], true);
}

#[test]
fn recover_validates_every_segment_even_after_a_clean_shutdown() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("clean-0");
    let text: String = (0..200)
        .map(|i| format!("{{\"value\":\"{}\"}}\n", "x".repeat(100 + i % 7)))
        .collect();
    let produced = produce_small_segments(&dir, &text);
    assert_eq!(produced.code, 0, "{}", produced.stderr);
    // A flipped byte inside the second batch of the first segment (of a cleanly closed log).
    let log = dir.join("00000000000000000000.log");
    let mut bytes = std::fs::read(&log).unwrap();
    let first_batch = 12 + u32::from_be_bytes(bytes[8..12].try_into().unwrap()) as usize;
    bytes[first_batch + 100] ^= 0x01;
    std::fs::write(&log, bytes).unwrap();

    // Flushed data is never cut: the damage is kept, reported, and recover exits 1.
    let run = seglog(["recover".as_ref(), dir.as_os_str(), "--json".as_ref()]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let report = &run.json_lines()[0];
    let segments = report["segments"].as_array().unwrap();
    assert!(segments.len() > 1, "later segments are kept: {report}");
    assert_eq!(segments[0]["damaged_tail_kept"], true, "{report}");
    assert_eq!(segments[0]["truncated_at"], first_batch);
    assert!(report["deleted_segments"].as_array().unwrap().is_empty());
    assert!(!verify_ok(&dir), "verify still flags the kept damage");

    // The explicit destructive repair cuts it as Kafka does.
    let run = seglog([
        "recover".as_ref(),
        dir.as_os_str(),
        "--truncate-damaged".as_ref(),
        "--json".as_ref(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = &run.json_lines()[0];
    assert_eq!(report["was_clean"], true, "{report}");
    let segments = report["segments"].as_array().unwrap();
    assert_eq!(segments.len(), 1, "{report}");
    assert_eq!(segments[0]["truncation"], "corrupt");
    assert_eq!(segments[0]["truncated_at"], first_batch);
    assert_eq!(segments[0]["batches"], 1);
    assert!(!report["deleted_segments"].as_array().unwrap().is_empty());
    assert_eq!(report["log_end_offset"], 10);
    assert!(verify_ok(&dir));
    let info = &seglog(["info".as_ref(), dir.as_os_str(), "--json".as_ref()]).json_lines()[0];
    assert_eq!(info["clean_shutdown"], true);
    assert_eq!(info["segments"].as_array().unwrap().len(), 1);
}

#[test]
fn retain_by_size_time_and_log_start_offset() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ret-0");
    let produce = |now: i64| {
        let text: String = (0..400)
            .map(|i| {
                format!(
                    "{{\"value\":\"{}\",\"timestamp\":{}}}\n",
                    "x".repeat(100),
                    now + i
                )
            })
            .collect();
        produce_small_segments(&dir, &text)
    };
    assert_eq!(produce(1_000_000).code, 0);
    let info = |d: &Path| {
        seglog(["info".as_ref(), d.as_os_str(), "--json".as_ref()])
            .json_lines()
            .remove(0)
    };
    let before = info(&dir);
    let segments = before["segments"].as_array().unwrap().len();
    assert!(segments > 4, "{before}");

    // nothing is old at now = 1_000_400 with 1 hour retention
    let run = seglog([
        "retain".as_ref(),
        dir.as_os_str(),
        "--retention-ms".as_ref(),
        "3600000".as_ref(),
        "--now".as_ref(),
        "1000400".as_ref(),
        "--json".as_ref(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json_lines()[0]["deleted"], serde_json::json!([]));

    // everything is older than 10 ms at now = 2_000_000: all but a new empty active segment
    let run = seglog([
        "retain".as_ref(),
        dir.as_os_str(),
        "--retention-ms".as_ref(),
        "10".as_ref(),
        "--now".as_ref(),
        "2000000".as_ref(),
        "--json".as_ref(),
    ]);
    let report = &run.json_lines()[0];
    assert_eq!(
        report["deleted"].as_array().unwrap().len(),
        segments,
        "{report}"
    );
    assert!(
        report["deleted"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["reason"] == "time")
    );
    assert_eq!(report["log_start_offset"], 400);
    assert_eq!(info(&dir)["log_start_offset"], 400);

    assert_eq!(produce(3_000_000).code, 0);
    let run = seglog([
        "retain".as_ref(),
        dir.as_os_str(),
        "--log-start-offset".as_ref(),
        "700".as_ref(),
        "--json".as_ref(),
    ]);
    let report = &run.json_lines()[0];
    assert_eq!(report["log_start_offset"], 700);
    assert!(
        report["deleted"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["reason"] == "log_start_offset")
    );
    let first = seglog([
        "read".as_ref(),
        dir.as_os_str(),
        "--json".as_ref(),
        "--max-records".as_ref(),
        "1".as_ref(),
    ])
    .json_lines();
    assert_eq!(first[0]["offset"], 700);

    let run = seglog([
        "retain".as_ref(),
        dir.as_os_str(),
        "--retention-bytes".as_ref(),
        "1".as_ref(),
    ]);
    assert_eq!(run.code, 0);
    assert!(run.stdout.contains("size"), "{}", run.stdout);
    assert!(verify_ok(&dir));
}

#[test]
fn the_demo_runs_and_every_check_passes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    let run = seglog([
        "demo".as_ref(),
        dir.as_os_str(),
        "--records".as_ref(),
        "20000".as_ref(),
    ]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("demo OK: every check passed"),
        "{}",
        run.stdout
    );
    for phase in [
        "produce",
        "read by offset",
        "read by timestamp",
        "scan",
        "retention",
        "recovery",
        "records",
        "tiered storage",
    ] {
        assert!(
            run.stdout.contains(&format!("\n  {phase} ")),
            "{phase} missing from the summary: {}",
            run.stdout
        );
    }
    // The tiering step: segments left the disk and every record came back from the store.
    let tiered = run
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("tiered storage:"))
        .unwrap_or_else(|| panic!("no tiering step: {}", run.stdout));
    assert!(
        tiered.contains("copied to file://") && tiered.contains("local segments "),
        "{tiered}"
    );
    assert!(
        run.stdout
            .contains("20000 records from offset 0 read back through the log from the remote tier"),
        "{}",
        run.stdout
    );
    assert!(verify_ok(&dir));
    // An existing, non-empty directory is refused.
    let again = seglog([
        "demo".as_ref(),
        dir.as_os_str(),
        "--records".as_ref(),
        "20000".as_ref(),
    ]);
    assert_eq!(again.code, 2);
}

/// Issue 12, bug 6: a corrupt checkpoint is named, with its line, in `recover`'s report
/// (text and JSON) instead of silently resetting the log start offset.
#[test]
fn recover_reports_a_corrupt_checkpoint_with_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ckpt-0");
    let text: String = (0..50)
        .map(|i| format!("{{\"value\":\"v{i}\"}}\n"))
        .collect();
    let produced = produce_small_segments(&dir, &text);
    assert_eq!(produced.code, 0, "{}", produced.stderr);
    let checkpoint = dir.join("log-start-offset-checkpoint");
    std::fs::write(&checkpoint, "0\n1\nckpt 0 oops\n").unwrap();

    let run = seglog(["recover".as_ref(), dir.as_os_str(), "--json".as_ref()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = &run.json_lines()[0];
    let problems = report["checkpoint_problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{report}");
    assert_eq!(problems[0]["file"], checkpoint.display().to_string());
    assert_eq!(problems[0]["line"], 3);
    assert_eq!(problems[0]["problem"], "corrupt: malformed line");

    std::fs::write(&checkpoint, "7\n").unwrap();
    let text = seglog(["recover".as_ref(), dir.as_os_str()]).ok();
    assert!(
        text.contains(&format!(
            "checkpoint {} line 1: corrupt: unsupported checkpoint version 7",
            checkpoint.display()
        )),
        "{text}"
    );
}
