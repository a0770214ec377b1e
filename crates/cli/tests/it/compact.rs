//! `seglog compact`: one cleaner round on a log `produce --config cleanup.policy=compact`
//! wrote, and on the broker's compacted partition (its own cleaner ran there first).

use std::collections::BTreeMap;
use std::path::Path;

use crate::support::{copy_dir, seglog, seglog_stdin};

/// key → (offset, value) of the latest record of every key `seglog read` prints.
fn latest(dir: &Path) -> BTreeMap<String, (i64, Option<String>)> {
    let run = seglog(["read".as_ref(), dir.as_os_str(), "--json".as_ref()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.json_lines()
        .into_iter()
        .filter_map(|line| {
            let key = line["key"].as_str()?.to_owned();
            let offset = line["offset"].as_i64()?;
            Some((key, (offset, line["value"].as_str().map(str::to_owned))))
        })
        .collect()
}

/// The keys whose latest record has a value (tombstones may go once their horizon passed).
fn live(m: &BTreeMap<String, (i64, Option<String>)>) -> BTreeMap<String, (i64, String)> {
    m.iter()
        .filter_map(|(k, (o, v))| Some((k.clone(), (*o, v.clone()?))))
        .collect()
}

#[test]
fn produce_compacted_then_compact_keeps_every_key_latest_value() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("table-0");
    let mut input = String::new();
    for i in 0..600 {
        let key = format!("k{}", i % 25);
        if i % 37 == 0 {
            input.push_str(&format!("{{\"key\":\"{key}\",\"value\":null}}\n"));
        } else {
            input.push_str(&format!(
                "{{\"key\":\"{key}\",\"value\":\"v{i}-{}\"}}\n",
                "x".repeat(40)
            ));
        }
    }
    let produce = |input: &str| {
        seglog_stdin(
            [
                "produce".as_ref(),
                dir.as_os_str(),
                "--input".as_ref(),
                "-".as_ref(),
                "--config".as_ref(),
                "cleanup.policy=compact".as_ref(),
                "--config".as_ref(),
                "segment.bytes=4096".as_ref(),
                "--batch-records".as_ref(),
                "10".as_ref(),
            ],
            input,
        )
    };
    produce(&input).ok();
    // A compacted log refuses a record without a key.
    let keyless = produce("{\"value\":\"no key\"}\n");
    assert_ne!(keyless.code, 0);
    assert!(keyless.stderr.contains("key"), "{}", keyless.stderr);
    let before = latest(&dir);
    let run = seglog([
        "compact".as_ref(),
        dir.as_os_str(),
        "--json".as_ref(),
        "--config".as_ref(),
        "delete.retention.ms=0".as_ref(),
    ]);
    let report: serde_json::Value = serde_json::from_str(run.ok().trim()).unwrap();
    assert_eq!(report["cleaned"], true, "{report}");
    let (records_before, records_after) = (
        report["records_before"].as_u64().unwrap(),
        report["records_after"].as_u64().unwrap(),
    );
    assert!(records_after * 4 < records_before, "{report}");
    assert!(report["bytes_after"].as_u64() < report["bytes_before"].as_u64());
    assert_eq!(
        report["cleaner_checkpoint"],
        report["first_uncleanable_offset"]
    );
    let after = latest(&dir);
    // Every live key keeps its latest value at its offset; tombstones past their horizon
    // (delete.retention.ms=0) are gone.
    assert_eq!(live(&after), live(&before));
    // The round stamped the tombstones' horizon; the next one removes them.
    seglog(["compact".as_ref(), dir.as_os_str()]).ok();
    let verify = seglog(["verify".as_ref(), dir.as_os_str()]);
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
    // A round with nothing dirty says so.
    let again = seglog(["compact".as_ref(), dir.as_os_str(), "--json".as_ref()]);
    let again: serde_json::Value = serde_json::from_str(again.ok().trim()).unwrap();
    assert_eq!(again["cleaned"], false, "{again}");
    // A delete-only policy is a usage error.
    let bad = seglog([
        "compact".as_ref(),
        dir.as_os_str(),
        "--config".as_ref(),
        "cleanup.policy=delete".as_ref(),
    ]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
}

#[test]
fn compacting_the_brokers_compacted_partition_keeps_what_a_consumer_reads() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/kafka-4.4/compacted-0");
    let (_tmp, dir) = copy_dir(&fixture);
    let before = latest(&dir);
    let run = seglog(["compact".as_ref(), dir.as_os_str(), "--json".as_ref()]);
    let report: serde_json::Value = serde_json::from_str(run.ok().trim()).unwrap();
    assert!(!before.is_empty());
    assert_eq!(live(&latest(&dir)), live(&before), "{report}");
    let verify = seglog(["verify".as_ref(), dir.as_os_str()]);
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
}

/// A round that keeps tombstones says when the next purge can happen (their delete horizon,
/// `delete.retention.ms` after it), in JSON and in text; a round at that time removes them.
#[test]
fn compact_says_when_the_next_tombstone_purge_can_happen() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("purge-0");
    let mut input = String::new();
    for i in 0..300 {
        let key = format!("k{}", i % 10);
        if i < 10 && i % 2 == 0 {
            input.push_str(&format!("{{\"key\":\"{key}-gone\",\"value\":null}}\n"));
        }
        input.push_str(&format!(
            "{{\"key\":\"{key}\",\"value\":\"v{i}-{}\"}}\n",
            "x".repeat(40)
        ));
    }
    seglog_stdin(
        [
            "produce".as_ref(),
            dir.as_os_str(),
            "--input".as_ref(),
            "-".as_ref(),
            "--config".as_ref(),
            "cleanup.policy=compact".as_ref(),
            "--config".as_ref(),
            "segment.bytes=4096".as_ref(),
            "--batch-records".as_ref(),
            "10".as_ref(),
        ],
        &input,
    )
    .ok();
    let tombstones = |dir: &Path| {
        latest(dir)
            .iter()
            .filter(|(k, (_, v))| k.ends_with("-gone") && v.is_none())
            .count()
    };
    assert_eq!(tombstones(&dir), 5);
    let now: i64 = 4_000_000_000_000;
    let compact = |now: i64| {
        let now = now.to_string();
        seglog([
            "compact".as_ref(),
            dir.as_os_str(),
            "--now".as_ref(),
            now.as_ref(),
            "--config".as_ref(),
            "delete.retention.ms=60000".as_ref(),
            "--json".as_ref(),
        ])
        .ok()
    };
    let text = {
        let (_copy_tmp, copy) = copy_dir(&dir);
        let out = seglog([
            "compact".as_ref(),
            copy.as_os_str(),
            "--now".as_ref(),
            now.to_string().as_ref(),
            "--config".as_ref(),
            "delete.retention.ms=60000".as_ref(),
        ]);
        out.ok()
    };
    let report: serde_json::Value = serde_json::from_str(compact(now).trim()).unwrap();
    assert_eq!(report["cleaned"], true, "{report}");
    assert_eq!(report["next_purge_ms"], now + 60_000, "{report}");
    assert!(
        text.contains(&format!(
            "the next purge can happen at {} (60000 ms after --now {now}",
            now + 60_000
        )),
        "{text}"
    );
    assert_eq!(tombstones(&dir), 5, "kept until their horizon");
    let report: serde_json::Value = serde_json::from_str(compact(now + 60_000).trim()).unwrap();
    assert_eq!(report["cleaned"], true, "{report}");
    assert_eq!(report["next_purge_ms"], serde_json::Value::Null, "{report}");
    assert_eq!(tombstones(&dir), 0, "purged at their horizon");
}
