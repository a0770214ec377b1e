//! `seglog tier DIR --store file://...` and `seglog tier status`.

use crate::support::*;

fn produced(root: &std::path::Path) -> std::path::PathBuf {
    let dir = root.join("orders-0");
    let d = dir.to_str().unwrap();
    seglog([
        "produce",
        d,
        "--count",
        "600",
        "--record-bytes",
        "100",
        "--config",
        "segment.bytes=16384",
        "--json",
    ])
    .ok();
    std::fs::write(
        dir.join("partition.metadata"),
        "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAg\n",
    )
    .unwrap();
    dir
}

#[test]
fn tier_copies_into_kafkas_layout_then_reports_status_and_applies_retention() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = produced(tmp.path());
    let d = dir.to_str().unwrap();
    let remote = tmp.path().join("remote");
    let store = format!("file://{}", remote.display());
    let before = seglog(["read", d, "--json"]).ok();
    let report: serde_json::Value =
        serde_json::from_str(&seglog(["tier", d, "--store", &store, "--json"]).ok()).unwrap();
    let copied = report["copied"].as_array().unwrap();
    assert!(copied.len() >= 3, "{report}");
    assert_eq!(report["topic_id"], "AAAAAAAAAAAAAAAAAAAAAg");
    assert_eq!(
        report["highest_remote_offset"],
        copied.last().unwrap()["end_offset"]
    );
    // Kafka's layout: the data under kafka-tiered-storage/<topic>-<partition>-<topicId>/.
    let first = &copied[0];
    let stem = format!(
        "00000000000000000000-{}",
        first["segment_id"].as_str().unwrap()
    );
    let data = remote.join("kafka-tiered-storage/orders-0-AAAAAAAAAAAAAAAAAAAAAg");
    assert_eq!(
        std::fs::read(data.join(format!("{stem}.log"))).unwrap(),
        std::fs::read(dir.join("00000000000000000000.log")).unwrap()
    );
    for ext in ["index", "timeindex", "snapshot", "leader_epoch_checkpoint"] {
        assert!(data.join(format!("{stem}.{ext}")).is_file(), "{ext}");
    }
    // A second run copies nothing; status lists every segment finished.
    let again: serde_json::Value =
        serde_json::from_str(&seglog(["tier", d, "--store", &store, "--json"]).ok()).unwrap();
    assert_eq!(again["copied"].as_array().unwrap().len(), 0);
    let status: serde_json::Value =
        serde_json::from_str(&seglog(["tier", "status", d, "--store", &store, "--json"]).ok())
            .unwrap();
    let remote_segments = status["remote"].as_array().unwrap();
    assert_eq!(remote_segments.len(), copied.len());
    assert!(
        remote_segments
            .iter()
            .all(|s| s["state"] == "COPY_SEGMENT_FINISHED")
    );
    assert_eq!(status["only_local_segments"], 1);
    // Local retention deletes what is remote; the log still reads whole (across both tiers).
    let local: serde_json::Value = serde_json::from_str(
        &seglog([
            "tier",
            d,
            "--store",
            &store,
            "--local-retention-bytes",
            "0",
            "--json",
        ])
        .ok(),
    )
    .unwrap();
    assert!(
        !local["local_deleted"].as_array().unwrap().is_empty(),
        "{local}"
    );
    assert_eq!(local["log_start_offset"], 0);
    assert!(local["local_log_start_offset"].as_i64().unwrap() > 0);
    // Remote retention by bytes: the oldest remote segments go, the log start moves.
    let expired: serde_json::Value = serde_json::from_str(
        &seglog([
            "tier",
            d,
            "--store",
            &store,
            "--retention-bytes",
            "30000",
            "--json",
        ])
        .ok(),
    )
    .unwrap();
    let deleted = expired["remote_deleted"].as_array().unwrap();
    assert!(
        !deleted.is_empty() && deleted.len() < copied.len(),
        "{expired}"
    );
    assert!(expired["log_start_offset"].as_i64().unwrap() > 0);
    assert!(!data.join(format!("{stem}.log")).exists());
    assert!(before.lines().count() > 0);
}

#[test]
fn tier_refuses_what_it_cannot_name() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = produced(tmp.path());
    let d = dir.to_str().unwrap();
    std::fs::remove_file(dir.join("partition.metadata")).unwrap();
    let store = format!("file://{}", tmp.path().join("remote").display());
    let run = seglog(["tier", d, "--store", &store]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("--topic-id"), "{}", run.stderr);
    let run = seglog([
        "tier",
        d,
        "--store",
        "relative/dir",
        "--topic-id",
        "AAAAAAAAAAAAAAAAAAAAAg",
    ]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("store URL"), "{}", run.stderr);
    let run = seglog(["tier", d, "--store", &store, "--topic-id", "nope"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("uuid"), "{}", run.stderr);
    assert!(
        !tmp.path()
            .join("remote")
            .join("kafka-tiered-storage")
            .exists()
    );
}
