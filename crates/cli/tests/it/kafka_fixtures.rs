//! The broker-made directories of `tests/fixtures/kafka-4.4/` (a real Kafka 4.4.0 broker wrote
//! them; `cargo xtask kafka fixtures` remakes them): read in place, every one must verify clean
//! and give the records, log start and log end offsets Kafka's consumer and ListOffsets gave,
//! as `manifest.json` beside them records.

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
    ] {
        assert!(dirs.contains(&wanted), "{wanted} missing from {dirs:?}");
    }
    // Rolled segments, and retention that moved the log start.
    for entry in &entries {
        assert!(entry["segments"].as_u64().unwrap() > 1, "{entry}");
    }
    let retention = entries.iter().find(|e| e["dir"] == "retention-0").unwrap();
    assert!(retention["log_start_offset"].as_i64().unwrap() > 0);
    // The transactional partition has markers: the log end is past the last data record.
    let txn = entries.iter().find(|e| e["dir"] == "txn-0").unwrap();
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
