//! `read` and `info` on every broker-written directory, in place: counts and contents equal
//! the independent walker's, and nothing on disk changes.

use crate::support::{assert_unchanged, corpus, corpus_partitions, seglog};
use crate::walker::{Rec, walk_dir};

fn rec_of(v: &serde_json::Value) -> Rec {
    let s = |x: &serde_json::Value| x.as_str().map(str::to_owned);
    Rec {
        offset: v["offset"].as_i64().unwrap(),
        timestamp: v["timestamp"].as_i64(),
        timestamp_type: v["timestamp_type"].as_str().map(|t| {
            if t == "create" {
                "create"
            } else {
                "log_append"
            }
        }),
        key: s(&v["key"]),
        value: s(&v["value"]),
        headers: v["headers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| (h[0].as_str().unwrap().to_owned(), s(&h[1])))
            .collect(),
    }
}

#[test]
fn read_matches_an_independent_parse_of_every_corpus_directory() {
    for dir in corpus_partitions() {
        let walk = walk_dir(&dir);
        let run = assert_unchanged(&dir, || {
            seglog([
                "read".as_ref(),
                dir.as_os_str(),
                "--json".as_ref(),
                "--encoding".as_ref(),
                "hex".as_ref(),
            ])
        });
        assert_eq!(run.code, 0, "{}: {}", dir.display(), run.stderr);
        let lines = run.json_lines();
        assert_eq!(lines.len() as u64, walk.data_records, "{}", dir.display());
        let by_offset: std::collections::BTreeMap<i64, Rec> = lines
            .iter()
            .map(|l| (l["offset"].as_i64().unwrap(), rec_of(l)))
            .collect();
        assert_eq!(
            by_offset.len(),
            lines.len(),
            "offsets are unique in {}",
            dir.display()
        );
        assert!(
            lines
                .windows(2)
                .all(|w| w[0]["offset"].as_i64() < w[1]["offset"].as_i64()),
            "offset order"
        );
        for expected in &walk.decoded {
            assert_eq!(
                by_offset.get(&expected.offset),
                Some(expected),
                "{} offset {}",
                dir.display(),
                expected.offset
            );
        }
        for (first, last, count) in &walk.compressed {
            let inside = by_offset.range(first..=last).count() as u64;
            assert_eq!(
                inside,
                *count,
                "{} compressed batch {first}..={last}",
                dir.display()
            );
        }
    }
}

#[test]
fn control_records_appear_only_when_asked() {
    let Some(dir) = corpus().map(|c| c.join("christseng89-RealTime_Analysis/__cluster_metadata-0"))
    else {
        return;
    };
    let walk = walk_dir(&dir);
    let all = seglog([
        "read".as_ref(),
        dir.as_os_str(),
        "--json".as_ref(),
        "--include-control".as_ref(),
    ])
    .json_lines();
    assert_eq!(all.len() as u64, walk.data_records + walk.control_records);
    let control: Vec<_> = all.iter().filter(|r| r.get("control").is_some()).collect();
    assert_eq!(control.len(), 5);
    assert!(control.iter().all(|r| r["control"] == "LEADER_CHANGE"));
}

#[test]
fn log_append_time_batches_report_the_batch_max_timestamp() {
    let Some(dir) = corpus().map(|c| c.join("rjmfernandes-flink-on-prem/_confluent-monitoring-0"))
    else {
        return;
    };
    let records = seglog([
        "read".as_ref(),
        dir.as_os_str(),
        "--json".as_ref(),
        "--max-records".as_ref(),
        "50".as_ref(),
    ])
    .json_lines();
    assert_eq!(records.len(), 50);
    assert!(
        records
            .iter()
            .all(|r| r["timestamp_type"] == "log_append" && r["timestamp"].is_i64())
    );
    let dumped = seglog([
        "dump".as_ref(),
        dir.join("00000000000000000000.log").as_os_str(),
        "--json".as_ref(),
    ])
    .json_lines();
    let first = &dumped[0];
    assert_eq!(records[0]["timestamp"], first["max_timestamp"]);
}

#[test]
fn v0_v1_messages_have_timestamps_as_consumers_see_them() {
    let Some(dir) = corpus().map(|c| c.join("xpxwo100-bullShit/topic1-0")) else {
        return;
    };
    let records = seglog(["read".as_ref(), dir.as_os_str(), "--json".as_ref()]).json_lines();
    assert_eq!(records.len(), 5);
    assert_eq!(records[0]["value"], "Message_1");
    assert_eq!(records[0]["key"], serde_json::Value::Null);
    assert_eq!(records[0]["timestamp_type"], "create");
}

#[test]
fn info_describes_every_corpus_directory_and_a_log_dirs_root() {
    for dir in corpus_partitions() {
        let walk = walk_dir(&dir);
        let run = assert_unchanged(&dir, || {
            seglog(["info".as_ref(), dir.as_os_str(), "--json".as_ref()])
        });
        assert_eq!(run.code, 0, "{}: {}", dir.display(), run.stderr);
        let info = &run.json_lines()[0];
        assert_eq!(info["totals"]["batches"], walk.batches, "{}", dir.display());
        assert_eq!(
            info["totals"]["records"],
            walk.data_records + walk.control_records,
            "{}",
            dir.display()
        );
    }
    let Some(root) = corpus().map(|c| c.join("rjmfernandes-flink-on-prem")) else {
        return;
    };
    let run = assert_unchanged(&root, || {
        seglog(["info".as_ref(), root.as_os_str(), "--json".as_ref()])
    });
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines = run.json_lines();
    assert_eq!(lines.len(), 10);
    assert!(
        lines
            .iter()
            .any(|l| l["topic"] == "loyalty_levels" && l["partition"] == 0)
    );
    let text = seglog(["info".as_ref(), root.join("loyalty_levels-0").as_os_str()]).ok();
    assert!(text.contains("log end offset 17204"), "{text}");
}
