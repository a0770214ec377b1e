//! produce -> read round trips through the real binary, binary data included.

use serde_json::{Value, json};

use crate::support::{assert_unchanged, seglog, seglog_stdin};

fn read_json(dir: &std::path::Path, extra: &[&str]) -> Vec<Value> {
    let mut args: Vec<&std::ffi::OsStr> = vec!["read".as_ref(), dir.as_os_str(), "--json".as_ref()];
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    let run = assert_unchanged(dir, || seglog(&args));
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.json_lines()
}

#[test]
fn hex_round_trip_keeps_bytes_nulls_empties_and_headers() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bin-0");
    let input = [
        json!({"key": "00ff10", "value": "deadbeef00", "timestamp": 1_700_000_000_000i64, "headers": [["h", "0001"], ["n", null]]}),
        json!({"key": null, "value": null, "timestamp": 1_700_000_000_001i64}),
        json!({"key": "", "value": "", "timestamp": 1_700_000_000_002i64, "headers": []}),
        json!({"value": "ff".repeat(5000), "timestamp": 1_700_000_000_003i64}),
    ];
    let text: String = input.iter().map(|v| format!("{v}\n")).collect();
    let run = seglog_stdin(
        [
            "produce".as_ref(),
            dir.as_os_str(),
            "--input".as_ref(),
            "-".as_ref(),
            "--encoding".as_ref(),
            "hex".as_ref(),
            "--json".as_ref(),
            "--batch-records".as_ref(),
            "3".as_ref(),
        ],
        &text,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.json_lines(),
        vec![
            json!({"base_offset": 0, "last_offset": 2}),
            json!({"base_offset": 3, "last_offset": 3})
        ]
    );

    let records = read_json(&dir, &["--encoding", "hex"]);
    assert_eq!(records.len(), 4);
    for (i, (got, sent)) in records.iter().zip(&input).enumerate() {
        assert_eq!(got["offset"], i);
        assert_eq!(got["key"], sent.get("key").cloned().unwrap_or(Value::Null));
        assert_eq!(got["value"], sent["value"]);
        assert_eq!(got["timestamp"], sent["timestamp"]);
        assert_eq!(got["timestamp_type"], "create");
        assert_eq!(
            got["headers"],
            sent.get("headers").cloned().unwrap_or(json!([]))
        );
        assert!(got.get("control").is_none());
    }
}

#[test]
fn every_codec_round_trips_and_durable_reports_each_batch() {
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(format!("{codec}-0"));
        let text: String = (0..25)
            .map(|i| {
                format!(
                    "{}\n",
                    json!({"key": format!("k{i}"), "value": format!("v{i}"), "timestamp": 1000 + i})
                )
            })
            .collect();
        let run = seglog_stdin(
            [
                "produce".as_ref(),
                dir.as_os_str(),
                "--input".as_ref(),
                "-".as_ref(),
                "--compression".as_ref(),
                codec.as_ref(),
                "--batch-records".as_ref(),
                "10".as_ref(),
                "--durable".as_ref(),
                "--json".as_ref(),
            ],
            &text,
        );
        assert_eq!(run.code, 0, "{codec}: {}", run.stderr);
        assert_eq!(run.json_lines().len(), 3, "{codec}");
        let records = read_json(&dir, &[]);
        assert_eq!(records.len(), 25);
        assert_eq!(records[24]["value"], "v24");
        let dump = seglog([
            "dump".as_ref(),
            dir.join("00000000000000000000.log").as_os_str(),
            "--json".as_ref(),
        ])
        .json_lines();
        assert!(
            dump.iter()
                .all(|b| b["codec"] == codec && b["crc_valid"] == true),
            "{codec}: {dump:?}"
        );
    }
}

#[test]
fn synthetic_records_config_and_read_positions() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("synth-0");
    let run = seglog([
        "produce".as_ref(),
        dir.as_os_str(),
        "--count".as_ref(),
        "3000".as_ref(),
        "--record-bytes".as_ref(),
        "200".as_ref(),
        "--config".as_ref(),
        "segment.bytes=65536".as_ref(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("appended 3000 records"),
        "{}",
        run.stdout
    );

    let info = assert_unchanged(&dir, || {
        seglog(["info".as_ref(), dir.as_os_str(), "--json".as_ref()])
    })
    .json_lines();
    let info = &info[0];
    assert_eq!(info["log_end_offset"], 3000);
    assert!(info["segments"].as_array().unwrap().len() > 5, "{info}");
    assert_eq!(info["totals"]["records"], 3000);

    let page = read_json(&dir, &["--from", "1234", "--max-records", "3"]);
    assert_eq!(
        page.iter()
            .map(|r| r["offset"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        [1234, 1235, 1236]
    );
    assert_eq!(page[0]["key"], "key-1234");
    assert_eq!(page[0]["value"].as_str().unwrap().len(), 200);

    let ts = page[1]["timestamp"].as_i64().unwrap();
    let from_ts = read_json(
        &dir,
        &["--from-timestamp", &ts.to_string(), "--max-records", "1"],
    );
    assert!(from_ts[0]["timestamp"].as_i64().unwrap() >= ts);
    assert!(from_ts[0]["offset"].as_i64().unwrap() <= 1235);
    assert!(read_json(&dir, &["--from-timestamp", &(ts + 10_000_000).to_string()]).is_empty());
}

#[test]
fn bad_input_lines_exit_2_naming_the_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bad-0");
    let run = seglog_stdin(
        [
            "produce".as_ref(),
            dir.as_os_str(),
            "--input".as_ref(),
            "-".as_ref(),
            "--encoding".as_ref(),
            "hex".as_ref(),
        ],
        "{\"value\":\"00\"}\n{\"value\":\"zz\"}\n",
    );
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("-:2 (byte 15): value: invalid hex"),
        "{}",
        run.stderr
    );
    // the records before the bad line are appended
    assert_eq!(read_json(&dir, &["--encoding", "hex"]).len(), 1);

    let run = seglog([
        "produce".as_ref(),
        dir.as_os_str(),
        "--config".as_ref(),
        "segment.bytes=abc".as_ref(),
        "--count".as_ref(),
        "1".as_ref(),
    ]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("segment.bytes"), "{}", run.stderr);

    let run = seglog(["produce".as_ref(), dir.as_os_str()]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("--input"), "{}", run.stderr);

    let run = seglog([
        "read".as_ref(),
        dir.as_os_str(),
        "--from".as_ref(),
        "99".as_ref(),
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("99"), "{}", run.stderr);
}

#[test]
fn read_and_info_of_an_empty_partition_dir_print_an_empty_log() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("empty-0");
    std::fs::create_dir(&dir).unwrap();
    assert!(read_json(&dir, &[]).is_empty());
    let run = assert_unchanged(&dir, || {
        seglog(["info".as_ref(), dir.as_os_str(), "--json".as_ref()])
    });
    assert_eq!(run.code, 0, "{}", run.stderr);
    let info = &run.json_lines()[0];
    assert_eq!(info["log_start_offset"], 0);
    assert_eq!(info["log_end_offset"], 0);
    assert_eq!(info["segments"], json!([]));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
}
