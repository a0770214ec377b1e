//! `tests/fixtures/kafka-4.4-txn-compacted/` (issue #25 finding 3): a compacted topic a real
//! Kafka 4.4.0 broker wrote with transactions v2 (three transactional producers committing and
//! aborting, a plain one between them) while its cleaner ran several rounds, left after a clean
//! shutdown with one transaction open. Beside it, what Kafka's consumers read
//! (`read_committed.jsonl`, `read_uncommitted.jsonl`) and what ListOffsets said (`kafka.json`);
//! `cargo xtask kafka fixtures` remakes it (scenario 1's `txn-compacted` topic).
//!
//! Its `.txnindex` files hold what the cleaner keeps and a rebuild from the batches does not
//! make: an entry of an aborted transaction whose data the cleaner removed in whole or in part,
//! with the ABORT marker it kept.

use std::path::{Path, PathBuf};

use crate::support::{assert_unchanged, copy_dir, seglog};

fn fixture() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/kafka-4.4-txn-compacted"
    ))
}

fn kafka() -> serde_json::Value {
    let text = std::fs::read_to_string(fixture().join("kafka.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn partition() -> PathBuf {
    fixture().join(kafka()["dir"].as_str().unwrap())
}

/// The records of a `.jsonl` file of Kafka's consumer.
fn consumer(file: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(fixture().join(file))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `seglog read DIR --json --encoding hex [--isolation I]`, each record cut to the fields
/// Kafka's consumer gives (offset, timestamp and its type, key, value, headers).
fn read(dir: &Path, isolation: &str) -> Vec<serde_json::Value> {
    let run = seglog([
        "read".as_ref(),
        dir.as_os_str(),
        "--json".as_ref(),
        "--encoding".as_ref(),
        "hex".as_ref(),
        "--isolation".as_ref(),
        isolation.as_ref(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.json_lines()
        .into_iter()
        .map(|r| {
            let mut cut = serde_json::Map::new();
            for field in [
                "offset",
                "timestamp",
                "timestamp_type",
                "key",
                "value",
                "headers",
            ] {
                cut.insert(field.to_owned(), r[field].clone());
            }
            serde_json::Value::Object(cut)
        })
        .collect()
}

/// The first record where seglog and Kafka differ, for the failure message.
fn first_difference(kafka: &[serde_json::Value], ours: &[serde_json::Value]) -> String {
    let at = kafka
        .iter()
        .zip(ours)
        .position(|(k, o)| k != o)
        .unwrap_or(kafka.len().min(ours.len()));
    format!(
        "Kafka {} records, seglog {}; first difference at {at}: Kafka {:?}, seglog {:?}",
        kafka.len(),
        ours.len(),
        kafka.get(at),
        ours.get(at)
    )
}

#[test]
fn a_brokers_compacted_transactional_partition_verifies_clean() {
    let dir = partition();
    let verify = assert_unchanged(&dir, || {
        seglog(["verify".as_ref(), dir.as_os_str(), "--json".as_ref()])
    });
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
    assert_eq!(verify.json_lines()[0]["ok"], true, "{}", verify.stdout);
}

#[test]
fn a_brokers_compacted_transactional_partition_reads_as_kafkas_consumers_read_it() {
    let dir = partition();
    for (isolation, file) in [
        ("read-committed", "read_committed.jsonl"),
        ("read-uncommitted", "read_uncommitted.jsonl"),
    ] {
        let kafka = consumer(file);
        let ours = assert_unchanged(&dir, || read(&dir, isolation));
        assert!(
            kafka == ours,
            "{isolation}: {}",
            first_difference(&kafka, &ours)
        );
    }
    // The committed view is a strict subset: aborted data and the open transaction are left out.
    assert!(consumer("read_committed.jsonl").len() < consumer("read_uncommitted.jsonl").len());
}

#[test]
fn a_brokers_compacted_transactional_partition_has_kafkas_offsets_and_open_transaction() {
    let kafka = kafka();
    let dir = partition();
    let info = seglog(["info".as_ref(), dir.as_os_str(), "--json".as_ref()]);
    assert_eq!(info.code, 0, "{}", info.stderr);
    let info = &info.json_lines()[0];
    for field in ["log_start_offset", "log_end_offset", "last_stable_offset"] {
        assert_eq!(info[field], kafka[field], "{field}");
    }
    assert_eq!(
        info["ongoing_transactions"].as_array().unwrap().len() as u64,
        kafka["open_transactions"].as_u64().unwrap(),
        "{}",
        info["ongoing_transactions"]
    );
    assert!(
        kafka["last_stable_offset"].as_i64() < kafka["log_end_offset"].as_i64(),
        "the open transaction keeps the LSO below the log end"
    );
}

/// What makes the fixture worth keeping: its `.txnindex` files are not what a rebuild from the
/// batches gives (`seglog recover` on a copy rewrites them), and the copy still reads the same.
#[test]
fn a_brokers_cleaned_txn_indexes_differ_from_a_rebuild_and_read_the_same() {
    let dir = partition();
    let (_tmp, copy) = copy_dir(&dir);
    let txn_indexes = |d: &Path| -> Vec<(String, Vec<u8>)> {
        let mut out: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "txnindex"))
            .map(|p| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read(&p).unwrap())
            })
            .filter(|(_, bytes)| !bytes.is_empty())
            .collect();
        out.sort();
        out
    };
    let brokers = txn_indexes(&dir);
    assert!(!brokers.is_empty(), "the broker wrote aborted transactions");
    for file in std::fs::read_dir(&copy).unwrap() {
        let path = file.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".txnindex") || name.ends_with(".snapshot") {
            std::fs::remove_file(&path).unwrap();
        }
    }
    std::fs::remove_file(copy.join(".kafka_cleanshutdown")).ok();
    let recover = seglog(["recover".as_ref(), copy.as_os_str(), "--json".as_ref()]);
    assert_eq!(recover.code, 0, "{}{}", recover.stdout, recover.stderr);
    assert_ne!(
        brokers,
        txn_indexes(&copy),
        "the broker's cleaner kept entries a rebuild does not make"
    );
    for (isolation, file) in [
        ("read-committed", "read_committed.jsonl"),
        ("read-uncommitted", "read_uncommitted.jsonl"),
    ] {
        let kafka = consumer(file);
        let ours = read(&copy, isolation);
        assert!(
            kafka == ours,
            "recovered copy, {isolation}: {}",
            first_difference(&kafka, &ours)
        );
    }
}
