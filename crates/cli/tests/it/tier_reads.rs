//! `read`, `info` and `verify` on a tiered partition: with `--store` across both tiers (and
//! the remote segments checked), without it saying that older data is remote.

use std::path::{Path, PathBuf};

use crate::support::{seglog, seglog_stdin};

const SEGMENT: &str = "segment.bytes=4096";

/// `--from-timestamp` targets in the remote part: before the aborted transaction, and after it
/// (the ABORT marker's timestamp is the wall clock, so a later target finds the marker first,
/// as in Kafka). (-3, the largest timestamp, is looked up in the local segments only, by the
/// log: not a reading across tiers.)
const TIMESTAMPS: [&str; 2] = ["1005", "1050"];

fn produce(dir: &Path, extra: &[&str], lines: &str) {
    let mut args: Vec<String> = vec!["produce".into(), dir.display().to_string()];
    args.extend(["--input", "-", "--batch-records", "10", "--config", SEGMENT].map(String::from));
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    let run = seglog_stdin(args, lines);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

fn plain(range: std::ops::Range<u64>) -> String {
    range
        .map(|i| {
            format!(
                "{{\"key\":\"k{i}\",\"value\":\"v-{i:05}\",\"timestamp\":{}}}\n",
                1_000 + i
            )
        })
        .collect()
}

/// A partition of plain records with an aborted transaction among its first offsets, tiered
/// to a `file://` store and its local segments deleted (only the last sealed and the active
/// segment stay local). Returns the directory, the store URL, the store directory and the
/// records `read --json` gave before tiering: read-uncommitted, read-committed, and the first
/// record by timestamp for each of [`TIMESTAMPS`].
fn tiered() -> (tempfile::TempDir, PathBuf, String, PathBuf, [String; 3]) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("orders-0");
    produce(&dir, &[], &plain(0..20));
    let txn = [
        "--producer-id",
        "8",
        "--producer-epoch",
        "0",
        "--transactional",
    ];
    let aborted: String = (0..10)
        .map(|i| format!("{{\"value\":\"aborted-{i}\",\"timestamp\":1015}}\n"))
        .collect();
    produce(&dir, &txn, &aborted);
    let d = dir.to_str().unwrap();
    let marker = seglog([
        "marker",
        d,
        "--producer-id",
        "8",
        "--producer-epoch",
        "0",
        "--abort",
    ]);
    assert_eq!(marker.code, 0, "{}", marker.stderr);
    produce(&dir, &[], &plain(20..600));
    std::fs::write(
        dir.join("partition.metadata"),
        "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAw\n",
    )
    .unwrap();
    let by_time: String = TIMESTAMPS
        .iter()
        .map(|t| {
            seglog([
                "read",
                d,
                "--json",
                "--from-timestamp",
                t,
                "--max-records",
                "3",
            ])
            .ok()
        })
        .collect();
    let before = [
        seglog(["read", d, "--json"]).ok(),
        seglog(["read", d, "--json", "--isolation", "read-committed"]).ok(),
        by_time,
    ];
    assert!(before[1].lines().count() < before[0].lines().count());
    let remote = tmp.path().join("remote");
    let store = format!("file://{}", remote.display());
    let report: serde_json::Value = serde_json::from_str(
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
        report["local_deleted"].as_array().unwrap().len() >= 3,
        "{report}"
    );
    assert_eq!(report["log_start_offset"], 0);
    (tmp, dir, store, remote, before)
}

fn local_start(dir: &Path) -> i64 {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".log")?.parse::<i64>().ok()
        })
        .min()
        .unwrap()
}

#[test]
fn read_with_store_returns_both_tiers_also_read_committed_and_by_timestamp() {
    let (_tmp, dir, store, _remote, before) = tiered();
    let d = dir.to_str().unwrap();
    assert!(local_start(&dir) > 100);
    let all = seglog(["read", d, "--store", &store, "--json"]).ok();
    assert_eq!(all, before[0]);
    let from_zero = seglog(["read", d, "--store", &store, "--json", "--from", "0"]).ok();
    assert_eq!(from_zero, before[0]);
    let committed = seglog([
        "read",
        d,
        "--store",
        &store,
        "--json",
        "--isolation",
        "read-committed",
    ])
    .ok();
    assert_eq!(committed, before[1]);
    // Offsets for timestamps, found in the remote part as they were locally.
    let by_time: String = TIMESTAMPS
        .iter()
        .map(|t| {
            let args = [
                "read",
                d,
                "--store",
                &store,
                "--json",
                "--from-timestamp",
                t,
            ];
            seglog([&args[..], &["--max-records", "3"]].concat()).ok()
        })
        .collect();
    assert_eq!(by_time, before[2]);
    let first: serde_json::Value = serde_json::from_str(by_time.lines().next().unwrap()).unwrap();
    assert_eq!(first["value"], "v-00005");
    assert_eq!(
        by_time
            .lines()
            .filter(|l| l.contains("v-00005") || l.contains("v-00020"))
            .count(),
        2,
        "{by_time}"
    );
    // The topic id may be given instead of partition.metadata's; a wrong one finds no remote
    // data, and the offsets below the local start are then out of range of that tier.
    let explicit = seglog([
        "read",
        d,
        "--store",
        &store,
        "--topic-id",
        "AAAAAAAAAAAAAAAAAAAAAw",
        "--json",
    ])
    .ok();
    assert_eq!(explicit, before[0]);
}

#[test]
fn read_without_store_says_older_data_is_remote_instead_of_out_of_range() {
    let (_tmp, dir, _store, _remote, before) = tiered();
    let d = dir.to_str().unwrap();
    let start = local_start(&dir);
    let run = seglog(["read", d, "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "offsets 0..{} are in the partition's remote tier",
            start - 1
        )) && run.stderr.contains("--store"),
        "{}",
        run.stderr
    );
    let local: Vec<&str> = before[0]
        .lines()
        .filter(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["offset"].as_i64() >= Some(start)
        })
        .collect();
    assert!(!local.is_empty());
    assert!(run.stdout.lines().eq(local), "{}", run.stdout.len());
    let run = seglog(["read", d, "--from", "5"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("offset 5 is in the partition's remote tier")
            && run.stderr.contains("give --store URL")
            && !run.stderr.contains("out of range"),
        "{}",
        run.stderr
    );
    // From the local part: no note.
    let run = seglog(["read", d, "--from", &start.to_string()]);
    assert_eq!(run.code, 0);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
}

#[test]
fn info_shows_the_remote_segments_and_both_log_starts() {
    let (_tmp, dir, store, _remote, _before) = tiered();
    let d = dir.to_str().unwrap();
    let start = local_start(&dir);
    let info: serde_json::Value =
        serde_json::from_str(&seglog(["info", d, "--store", &store, "--json"]).ok()).unwrap();
    assert_eq!(info["log_start_offset"], 0);
    assert_eq!(info["local_log_start_offset"], start);
    let remote = &info["remote"];
    assert_eq!(remote["store"], store.as_str());
    assert_eq!(remote["topic_id"], "AAAAAAAAAAAAAAAAAAAAAw");
    let segments = remote["segments"].as_array().unwrap();
    assert_eq!(segments[0]["base_offset"], 0);
    for pair in segments.windows(2) {
        assert_eq!(
            pair[1]["base_offset"].as_i64().unwrap(),
            pair[0]["end_offset"].as_i64().unwrap() + 1
        );
    }
    assert!(segments.last().unwrap()["end_offset"].as_i64().unwrap() >= start - 1);
    assert_eq!(
        remote["highest_remote_offset"],
        segments.last().unwrap()["end_offset"]
    );
    let text = seglog(["info", d, "--store", &store]).ok();
    assert!(
        text.contains(&format!(
            "log start offset 0, local log start offset {start}"
        )) && text.contains(&format!("remote tier {store}: {} segments", segments.len())),
        "{text}"
    );
    // Without the store: what the checkpoint says, and how to see more.
    let bare: serde_json::Value =
        serde_json::from_str(&seglog(["info", d, "--json"]).ok()).unwrap();
    assert_eq!(bare["log_start_offset"], 0);
    assert_eq!(bare["local_log_start_offset"], start);
    assert!(bare["remote"]["store"].is_null(), "{bare}");
    let text = seglog(["info", d]).ok();
    assert!(text.contains("not attached: give --store URL"), "{text}");
    // A partition with only local data has no remote part.
    let tmp = tempfile::tempdir().unwrap();
    let local = tmp.path().join("plain-0");
    produce(&local, &[], &plain(0..5));
    let plain: serde_json::Value =
        serde_json::from_str(&seglog(["info", local.to_str().unwrap(), "--json"]).ok()).unwrap();
    assert!(plain["remote"].is_null(), "{plain}");
}

/// The remote object of segment `base`'s part `suffix`.
fn object(remote: &Path, base: i64, suffix: &str) -> PathBuf {
    let data = remote.join("kafka-tiered-storage/orders-0-AAAAAAAAAAAAAAAAAAAAAw");
    std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            name.starts_with(&format!("{base:020}-")) && name.ends_with(suffix)
        })
        .unwrap_or_else(|| panic!("no {base} {suffix} in {}", data.display()))
}

#[test]
fn verify_checks_the_remote_segments_and_names_a_damaged_or_missing_object() {
    let (_tmp, dir, store, remote, _before) = tiered();
    let d = dir.to_str().unwrap();
    let report: serde_json::Value =
        serde_json::from_str(&seglog(["verify", d, "--store", &store, "--json"]).ok()).unwrap();
    assert_eq!(report["ok"], true, "{report}");
    let remote_segments = report["remote_segments"].as_u64().unwrap();
    assert!(remote_segments >= 3, "{report}");
    assert!(report["segments"].as_u64().unwrap() > remote_segments);
    assert!(report["records"].as_u64().unwrap() >= 610, "{report}");
    // Without the store: OK, with a note that the remote part was not checked.
    let bare: serde_json::Value =
        serde_json::from_str(&seglog(["verify", d, "--json"]).ok()).unwrap();
    assert_eq!(bare["ok"], true);
    assert_eq!(bare["remote_segments"], 0);
    assert!(
        bare["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["message"].as_str().unwrap().contains("remote tier")),
        "{bare}"
    );
    // A flipped byte in a remote batch: a CRC mismatch naming the object and position.
    let log = object(&remote, 0, ".log");
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[100] ^= 0xff;
    std::fs::write(&log, &bytes).unwrap();
    // A missing part of another segment.
    let second = report_second_base(&dir, &store);
    let time_index = object(&remote, second, ".timeindex");
    std::fs::remove_file(&time_index).unwrap();
    let run = seglog(["verify", d, "--store", &store, "--json"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let problems = report["problems"].as_array().unwrap();
    let crc = problems
        .iter()
        .find(|p| p["kind"] == "crc_mismatch")
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(
        crc["file"].as_str().unwrap(),
        format!(
            "{store}/kafka-tiered-storage/orders-0-AAAAAAAAAAAAAAAAAAAAAw/{}",
            log.file_name().unwrap().to_str().unwrap()
        )
    );
    assert_eq!(crc["position"], 0);
    let missing = problems
        .iter()
        .find(|p| p["kind"] == "remote_part_missing")
        .unwrap_or_else(|| panic!("{report}"));
    assert!(
        missing["file"]
            .as_str()
            .unwrap()
            .ends_with(time_index.file_name().unwrap().to_str().unwrap()),
        "{missing}"
    );
    // The text names the object too.
    let text = seglog(["verify", d, "--store", &store]);
    assert_eq!(text.code, 1);
    assert!(
        text.stdout
            .contains(&format!("problem: {}", crc["file"].as_str().unwrap())),
        "{}",
        text.stdout
    );
    // A store that is not there is an error naming it, not a verdict on the data.
    let nowhere = format!("file://{}", remote.join("nowhere").display());
    let run = seglog(["verify", d, "--store", &nowhere, "--json"]);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["remote_segments"], 0, "{report}");
    assert!(
        report["problems"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["kind"] == "remote_gap"),
        "{report}"
    );
}

/// The base offset of the second remote segment.
fn report_second_base(dir: &Path, store: &str) -> i64 {
    let info: serde_json::Value = serde_json::from_str(
        &seglog(["info", dir.to_str().unwrap(), "--store", store, "--json"]).ok(),
    )
    .unwrap();
    info["remote"]["segments"][1]["base_offset"]
        .as_i64()
        .unwrap()
}

/// A tier holding a former leader's copies beside the lineage's (an unclean leader election:
/// the log was truncated below what it had copied, then went on in a new epoch and copied
/// again). Before, `verify --store` checked the copies `PartitionTier::segments` keeps (the
/// first by start offset: here the former leader's) and never the lineage's copy at the same
/// start, which reads serve: it now checks every finished copy's parts and walks the offsets
/// along the chain the reads serve, by the log's leader-epoch lineage.
#[test]
fn verify_walks_the_lineages_chain_past_a_former_leaders_overlapping_copies() {
    use seglog::{BatchBuilder, HighWatermarkPolicy, Log, LogConfig, LogOpenOptions};
    use seglog_tiered::{Layout, ObjectTier, Tier, TopicIdPartition, Uuid, open_store};

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("orders-0");
    let remote = tmp.path().join("remote");
    let store = format!("file://{}", remote.display());
    let config = LogConfig {
        segment_bytes: 1024,
        retention_ms: -1,
        message_timestamp_after_max_ms: i64::MAX,
        message_timestamp_before_max_ms: i64::MAX,
        remote_storage_enable: true,
        ..LogConfig::default()
    };
    let options = LogOpenOptions {
        high_watermark: HighWatermarkPolicy::LogEnd,
        ..LogOpenOptions::default()
    };
    let log = Log::open_with(&dir, config, options).unwrap();
    std::fs::write(
        dir.join("partition.metadata"),
        "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAg\n",
    )
    .unwrap();
    let append = |epoch: i32, count: usize| {
        for i in 0..count {
            let mut b = BatchBuilder::new(0).partition_leader_epoch(epoch);
            let value = format!("e{epoch}-{i}-{}", "x".repeat(60));
            b.append(1_000 + i as i64, None, Some(value.as_bytes()), &[]);
            log.append(&b.build().unwrap()).unwrap();
        }
    };
    let opened = open_store(&store).unwrap();
    let layout = Layout::new(
        opened.root,
        TopicIdPartition::new("orders", 0, Uuid::from_halves(0, 2)).unwrap(),
    );
    let tier = Tier::new(std::sync::Arc::new(
        ObjectTier::new(opened.store, layout, 1).unwrap(),
    ));
    append(0, 60);
    tier.attach(&log).unwrap();
    let old = tier.copy(&log).unwrap().copied;
    assert!(old.len() >= 4, "{old:?}");
    let truncation = old[2].base_offset + 2;
    log.truncate_to(truncation).unwrap();
    log.assign_epoch_start_offset(1, truncation).unwrap();
    append(1, 60);
    let new = tier.copy(&log).unwrap().copied;
    assert_eq!(new[0].base_offset, old[2].base_offset, "{new:?}");
    log.set_config(LogConfig {
        local_retention_bytes: 0,
        ..log.config()
    })
    .unwrap();
    log.delete_old_segments().unwrap();
    assert!(log.local_log_start_offset() > old.last().unwrap().end_offset);
    log.close().unwrap();

    let d = dir.to_str().unwrap();
    let run = seglog(["verify", d, "--store", &store, "--json"]);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(run.code, 0, "{report}");
    assert_eq!(report["ok"], true, "{report}");
    // Every copy's parts were checked, the former leader's too (the lineage's are the first
    // two old copies and the new ones).
    assert_eq!(
        report["remote_segments"].as_u64().unwrap(),
        (old.len() + new.len()) as u64,
        "{report}"
    );
}
