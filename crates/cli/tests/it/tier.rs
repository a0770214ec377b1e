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

/// Every file under `root`, relative to it.
fn files_under(root: &std::path::Path) -> std::collections::BTreeSet<std::path::PathBuf> {
    let mut out = std::collections::BTreeSet::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.insert(path.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    out
}

/// A produced partition tiered by seglog to a `file://` store whose metadata tree is then
/// removed: exactly what a broker's `LocalTieredStorage` leaves (the data half of the layout).
/// Returns the directory, the store directory, its URL and how many segments were copied.
fn broker_store(root: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf, String, usize) {
    let dir = produced(root);
    let d = dir.to_str().unwrap();
    let remote = root.join("remote");
    let store = format!("file://{}", remote.display());
    let first: serde_json::Value =
        serde_json::from_str(&seglog(["tier", d, "--store", &store, "--json"]).ok()).unwrap();
    let copied = first["copied"].as_array().unwrap().len();
    assert!(copied >= 3, "{first}");
    std::fs::remove_dir_all(remote.join("seglog-remote-log-metadata")).unwrap();
    (dir, remote, store, copied)
}

/// A store holding a broker's `LocalTieredStorage` filesets (here: seglog's copies with their
/// metadata tree removed, which is exactly what a broker leaves: the data half of the layout)
/// is refused by a copy until it is adopted. Before, the copy's recovery deleted every such
/// fileset as an orphan.
#[test]
fn tier_refuses_a_store_with_segments_not_yet_adopted_and_deletes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, remote, store, copied) = broker_store(tmp.path());
    let d = dir.to_str().unwrap();
    let before = files_under(&remote);
    let run = seglog(["tier", d, "--store", &store, "--json"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--adopt"), "{}", run.stderr);
    assert!(run.stderr.contains(d), "{}", run.stderr);
    // The first fileset's object, by name.
    assert!(
        run.stderr
            .contains("kafka-tiered-storage/orders-0-AAAAAAAAAAAAAAAAAAAAAg/00000000000000000000-"),
        "{}",
        run.stderr
    );
    assert_eq!(
        files_under(&remote),
        before,
        "the refused copy deleted something"
    );
    // Adopted, the same copy runs: nothing is deleted, nothing copied again.
    let adopted: serde_json::Value =
        serde_json::from_str(&seglog(["tier", d, "--store", &store, "--adopt", "--json"]).ok())
            .unwrap();
    assert_eq!(adopted["adopted"].as_array().unwrap().len(), copied);
    let again: serde_json::Value =
        serde_json::from_str(&seglog(["tier", d, "--store", &store, "--json"]).ok()).unwrap();
    assert_eq!(again["orphans"], 0, "{again}");
    assert_eq!(again["copied"].as_array().unwrap().len(), 0, "{again}");
    assert!(before.is_subset(&files_under(&remote)));
}

/// A broker's store with one incomplete fileset (an abandoned copy: its `.snapshot` missing)
/// beside complete ones. Before, the copy refused the store until adoption and `--adopt`
/// refused the incomplete fileset: nothing ran until the user deleted objects by hand. Now
/// `--adopt` adopts the complete filesets and names the incomplete one, and the next copy
/// deletes it as an orphan and copies its segment again.
#[test]
fn adopt_names_an_incomplete_fileset_and_the_next_copy_replaces_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, remote, store, copied) = broker_store(tmp.path());
    let d = dir.to_str().unwrap();
    let snapshot = files_under(&remote)
        .into_iter()
        .filter(|f| f.to_string_lossy().ends_with(".snapshot"))
        .max()
        .unwrap();
    std::fs::remove_file(remote.join(&snapshot)).unwrap();
    let run = seglog(["tier", d, "--store", &store, "--adopt"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("not adopted"), "{}", run.stdout);
    assert!(run.stdout.contains("no .snapshot part"), "{}", run.stdout);
    let again: serde_json::Value =
        serde_json::from_str(&seglog(["tier", d, "--store", &store, "--json"]).ok()).unwrap();
    assert_eq!(again["orphans"], 1, "{again}");
    assert_eq!(again["copied"].as_array().unwrap().len(), 1, "{again}");
    assert!(
        files_under(&remote)
            .iter()
            .filter(|f| f.to_string_lossy().ends_with(".snapshot"))
            .count()
            >= copied
    );
}
