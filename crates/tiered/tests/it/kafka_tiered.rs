//! What a Kafka 4.4 broker tiered, read by seglog across both tiers.
//!
//! The fixture (`tests/fixtures/kafka-4.4-tiered/`, written by `cargo xtask kafka kafka-tiered`,
//! interop/kafka's `KafkaTieredScenario`): a broker with remote storage on and Kafka's
//! `LocalTieredStorage` as its RemoteStorageManager tiered a partition (plain records, six
//! transactions, every other aborted) and deleted the tiered segments from its disk.
//! `broker/kafka-tiered-0/` is its partition directory after a clean stop, `remote/` the
//! `LocalTieredStorage` directory, `read_uncommitted.jsonl` and `read_committed.jsonl` what
//! Kafka's consumer read (as `seglog read --json --encoding hex` prints records), `kafka.json`
//! the broker's log start, local log start and log end offsets.
//!
//! `SEGLOG_KAFKA_TIERED_DIR` points the test at another such directory (`cargo xtask kafka`
//! runs it on the broker's output of the same run).

use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;

use object_store::local::LocalFileSystem;
use object_store::path::Path;
use seglog::{Isolation, Log, LogConfig};
use seglog_tiered::{Layout, ObjectTier, PartitionTier, TopicIdPartition, Uuid};
use serde_json::Value;

fn fixture() -> PathBuf {
    match std::env::var_os("SEGLOG_KAFKA_TIERED_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            FsPath::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/kafka-4.4-tiered")
        }
    }
}

/// A record as the fixture's JSON lines hold it: offset, timestamp, key, value, headers (hex).
type Line = (
    i64,
    i64,
    Option<String>,
    Option<String>,
    Vec<(String, Option<String>)>,
);

fn lines(file: &FsPath) -> Vec<Line> {
    let text = std::fs::read_to_string(file).unwrap();
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let text = |v: &Value| v.as_str().map(str::to_owned);
            let headers = v["headers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| (h[0].as_str().unwrap().to_owned(), text(&h[1])))
                .collect();
            (
                v["offset"].as_i64().unwrap(),
                v["timestamp"].as_i64().unwrap(),
                text(&v["key"]),
                text(&v["value"]),
                headers,
            )
        })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn read(log: &Log, from: i64, isolation: Isolation) -> Vec<Line> {
    let mut reader = log.owned_reader(from, isolation);
    let mut out = Vec::new();
    while let Some(r) = reader.next_available().unwrap().into_record() {
        let r = r.record;
        out.push((
            r.offset,
            r.timestamp_ms.unwrap(),
            r.key.as_deref().map(hex),
            r.value.as_deref().map(hex),
            r.headers
                .iter()
                .map(|h| (h.key.clone(), h.value.as_deref().map(hex)))
                .collect(),
        ));
    }
    out
}

fn copy_tree(from: &FsPath, to: &FsPath) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The topic id from `partition.metadata` (`topic_id: <Uuid>`).
fn topic_id(dir: &FsPath) -> Uuid {
    let text = std::fs::read_to_string(dir.join("partition.metadata")).unwrap();
    let id = text
        .lines()
        .find_map(|l| l.strip_prefix("topic_id:"))
        .unwrap();
    Uuid::parse(id.trim()).unwrap()
}

#[test]
fn kafka_tiered_seglog_reads_what_a_kafka_broker_tiered_across_both_tiers() {
    let fixture = fixture();
    let work = tempfile::tempdir().unwrap();
    // Adopting writes seglog's metadata beside the data: work on copies, the fixture stays as is.
    let dir = work.path().join("kafka-tiered-0");
    let remote = work.path().join("remote");
    copy_tree(&fixture.join("broker/kafka-tiered-0"), &dir);
    copy_tree(&fixture.join("remote"), &remote);
    let kafka: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture.join("kafka.json")).unwrap())
            .unwrap();

    let tp = TopicIdPartition::new("kafka-tiered", 0, topic_id(&dir)).unwrap();
    let store = Arc::new(LocalFileSystem::new_with_prefix(&remote).unwrap());
    let tier = ObjectTier::from_partition_tier(PartitionTier::new(
        store,
        Layout::new(Path::default(), tp),
        0,
    ))
    .unwrap();
    let adopted = tier.block_on(tier.partition_tier().adopt()).unwrap();
    assert!(adopted.adopted.len() >= 3, "{adopted:?}");
    let config = LogConfig {
        remote_storage_enable: true,
        ..LogConfig::default()
    };
    let log = Log::open_read_only(&dir, config).unwrap();
    let local_start = log.local_log_start_offset();
    assert!(
        local_start >= kafka["local_log_start_offset"].as_i64().unwrap(),
        "the broker deleted tiered segments from its disk"
    );
    log.set_remote_tier(Arc::new(tier)).unwrap();
    assert_eq!(
        log.log_start_offset(),
        kafka["log_start_offset"].as_i64().unwrap()
    );
    assert_eq!(
        log.log_end_offset(),
        kafka["log_end_offset"].as_i64().unwrap()
    );
    assert_eq!(log.highest_remote_offset(), local_start - 1);
    // Kafka's ListOffsets LATEST is the high watermark (in the broker's
    // replication-offset-checkpoint, outside the partition directory).
    log.set_high_watermark(kafka["log_end_offset"].as_i64().unwrap())
        .unwrap();

    let uncommitted = lines(&fixture.join("read_uncommitted.jsonl"));
    let committed = lines(&fixture.join("read_committed.jsonl"));
    assert!(
        committed.len() < uncommitted.len(),
        "some transactions were aborted"
    );
    assert!(
        uncommitted.iter().any(|l| l.0 < local_start)
            && uncommitted.iter().any(|l| l.0 >= local_start)
    );
    let got = read(&log, 0, Isolation::ReadUncommitted);
    assert_eq!(got.len(), uncommitted.len());
    for (kafka, seglog) in uncommitted.iter().zip(&got) {
        assert_eq!(kafka, seglog, "read_uncommitted at offset {}", kafka.0);
    }
    let got = read(&log, 0, Isolation::ReadCommitted);
    assert_eq!(got.len(), committed.len());
    for (kafka, seglog) in committed.iter().zip(&got) {
        assert_eq!(kafka, seglog, "read_committed at offset {}", kafka.0);
    }
    // From inside a remote segment and from the boundary of the tiers.
    for from in [
        uncommitted[uncommitted.len() / 3].0,
        local_start - 1,
        local_start,
    ] {
        let want: Vec<_> = uncommitted
            .iter()
            .filter(|l| l.0 >= from)
            .cloned()
            .collect();
        assert_eq!(
            read(&log, from, Isolation::ReadUncommitted),
            want,
            "from {from}"
        );
    }
}
