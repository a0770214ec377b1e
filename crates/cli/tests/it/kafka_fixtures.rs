//! The broker-made directories of `tests/fixtures/kafka-4.4/` (a real Kafka 4.4.0 broker wrote
//! them; `cargo xtask kafka fixtures` remakes them): read in place, every one must verify clean
//! and give the records, log start and log end offsets Kafka's consumer and ListOffsets gave,
//! and the same null keys, null values, headers, key and value bytes and timestamps, as
//! `manifest.json` beside them records.

use std::path::PathBuf;

use crate::support::{assert_unchanged, seglog};

fn fixtures() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/kafka-4.4"
    ))
}

fn manifest() -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(fixtures().join("manifest.json")).unwrap();
    let entries: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
    assert!(
        entries.len() >= 10,
        "the manifest lists every codec, acks=1, LogAppendTime, txn, compacted, retention"
    );
    entries
}

#[test]
fn every_kafka_4_4_fixture_verifies_clean_and_reads_what_the_consumer_read() {
    for entry in manifest() {
        let dir = fixtures().join(entry["dir"].as_str().unwrap());
        let name = dir.display().to_string();

        let verify = assert_unchanged(&dir, || {
            seglog(["verify".as_ref(), dir.as_os_str(), "--json".as_ref()])
        });
        assert_eq!(verify.code, 0, "{name}: {}{}", verify.stdout, verify.stderr);
        assert_eq!(verify.json_lines()[0]["ok"], true, "{name}");

        let read = assert_unchanged(&dir, || {
            seglog([
                "read".as_ref(),
                dir.as_os_str(),
                "--json".as_ref(),
                "--encoding".as_ref(),
                "hex".as_ref(),
            ])
        });
        assert_eq!(read.code, 0, "{name}: {}", read.stderr);
        let records = read.json_lines();
        assert_eq!(
            records.len() as u64,
            entry["records"].as_u64().unwrap(),
            "{name}: records the consumer read"
        );
        let offsets: Vec<i64> = records
            .iter()
            .map(|r| r["offset"].as_i64().unwrap())
            .collect();
        assert!(
            offsets.windows(2).all(|w| w[0] < w[1]),
            "{name}: offsets increase"
        );
        assert_eq!(
            offsets.first().copied(),
            entry["first_offset"].as_i64(),
            "{name}"
        );
        assert_eq!(
            offsets.last().copied(),
            entry["last_offset"].as_i64(),
            "{name}"
        );
        assert_eq!(
            content(&records),
            Content::of(&entry),
            "{name}: what the consumer read"
        );

        let info = seglog(["info".as_ref(), dir.as_os_str(), "--json".as_ref()]);
        assert_eq!(info.code, 0, "{name}: {}", info.stderr);
        let info = &info.json_lines()[0];
        assert_eq!(
            info["log_start_offset"], entry["log_start_offset"],
            "{name}: ListOffsets EARLIEST"
        );
        assert_eq!(
            info["log_end_offset"], entry["log_end_offset"],
            "{name}: ListOffsets LATEST"
        );
        assert_eq!(
            info["segments"].as_array().unwrap().len() as u64,
            entry["segments"].as_u64().unwrap(),
            "{name}: segments"
        );
    }
}

/// Aggregates of a partition's records: what the manifest keeps of Kafka's consumer's answer.
#[derive(Debug, PartialEq, Eq, Default)]
struct Content {
    null_keys: u64,
    null_values: u64,
    headers: u64,
    key_bytes: u64,
    value_bytes: u64,
    log_append_time_records: u64,
    max_timestamp: i64,
}

impl Content {
    fn of(entry: &serde_json::Value) -> Self {
        let n = |field: &str| entry[field].as_u64().unwrap();
        Content {
            null_keys: n("null_keys"),
            null_values: n("null_values"),
            headers: n("headers"),
            key_bytes: n("key_bytes"),
            value_bytes: n("value_bytes"),
            log_append_time_records: n("log_append_time_records"),
            max_timestamp: entry["max_timestamp"].as_i64().unwrap(),
        }
    }
}

/// The same aggregates over `seglog read --json --encoding hex` lines.
fn content(records: &[serde_json::Value]) -> Content {
    let mut c = Content {
        max_timestamp: -1,
        ..Content::default()
    };
    let hex_len = |v: &serde_json::Value| v.as_str().map(|s| s.len() as u64 / 2);
    for r in records {
        match hex_len(&r["key"]) {
            None => c.null_keys += 1,
            Some(len) => c.key_bytes += len,
        }
        match hex_len(&r["value"]) {
            None => c.null_values += 1,
            Some(len) => c.value_bytes += len,
        }
        c.headers += r["headers"].as_array().unwrap().len() as u64;
        if r["timestamp_type"] == "log_append" {
            c.log_append_time_records += 1;
        }
        c.max_timestamp = c.max_timestamp.max(r["timestamp"].as_i64().unwrap());
    }
    c
}

#[test]
fn kafka_4_4_fixtures_cover_what_the_readme_promises() {
    let entries = manifest();
    let dirs: Vec<&str> = entries.iter().map(|e| e["dir"].as_str().unwrap()).collect();
    for wanted in [
        "codec-none-0",
        "codec-gzip-0",
        "codec-snappy-0",
        "codec-lz4-0",
        "codec-zstd-0",
        "append-time-0",
        "txn-0",
        "compacted-0",
        "retention-0",
        "__transaction_state-0",
    ] {
        assert!(dirs.contains(&wanted), "{wanted} missing from {dirs:?}");
    }
    // Rolled segments (the broker's own transaction log keeps its 100 MiB default), and
    // retention that moved the log start.
    for entry in entries
        .iter()
        .filter(|e| e["dir"] != "__transaction_state-0")
    {
        assert!(entry["segments"].as_u64().unwrap() > 1, "{entry}");
    }
    let by_dir = |dir: &str| entries.iter().find(|e| e["dir"] == dir).unwrap();
    assert!(by_dir("codec-none-0")["null_keys"].as_u64().unwrap() > 0);
    assert!(by_dir("codec-none-0")["null_values"].as_u64().unwrap() > 0);
    assert!(by_dir("codec-none-0")["headers"].as_u64().unwrap() > 0);
    assert!(
        by_dir("compacted-0")["null_values"].as_u64().unwrap() > 0,
        "tombstones"
    );
    let retention = by_dir("retention-0");
    assert!(retention["log_start_offset"].as_i64().unwrap() > 0);
    // The transactional partition has markers: the log end is past the last data record.
    let txn = by_dir("txn-0");
    assert!(txn["log_end_offset"].as_i64().unwrap() > txn["last_offset"].as_i64().unwrap() + 1);
    // A LogAppendTime fixture must report log_append timestamps.
    let dir = fixtures().join("append-time-0");
    let read = seglog([
        "read".as_ref(),
        dir.as_os_str(),
        "--json".as_ref(),
        "--max-records".as_ref(),
        "1".as_ref(),
    ]);
    assert_eq!(read.json_lines()[0]["timestamp_type"], "log_append");
}
