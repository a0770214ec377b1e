//! The producer-state `.snapshot` codec against broker-written files: the Kafka 4.4
//! fixtures and the corpus.

use std::path::{Path, PathBuf};

use seglog::Error;

use crate::support::{corpus_root, partition_dirs};

/// The broker-made fixtures of `tests/fixtures/kafka-4.4`.
fn fixture_dirs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/kafka-4.4");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

/// Every broker-written `.snapshot` of the Kafka 4.4 fixtures decodes, and re-encodes to the
/// same bytes.
#[test]
fn kafka_4_4_producer_snapshots_decode_and_reencode_byte_for_byte() {
    let mut files = 0;
    let mut entries = 0;
    for dir in fixture_dirs() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "snapshot") {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            let snapshot = seglog::ProducerSnapshot::read(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!(snapshot.encode(), bytes, "{}", path.display());
            files += 1;
            entries += snapshot.entries.len();
        }
    }
    assert!(files >= 20, "{files}");
    assert!(
        entries > 0,
        "the idempotent and transactional fixtures have producers"
    );
}

#[test]
fn a_corrupt_snapshot_file_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("00000000000000000010.snapshot");
    let mut bytes = seglog::ProducerSnapshot::default().encode();
    bytes[9] = 1;
    std::fs::write(&path, &bytes).unwrap();
    let e = seglog::ProducerSnapshot::read(&path).unwrap_err();
    assert!(
        matches!(&e, Error::CorruptSnapshot { path: p, problem: seglog::SnapshotProblem::Truncated { .. } } if *p == path),
        "{e}"
    );
}

/// Every `.snapshot` of the corpus (brokers from 2.x to 3.x) decodes and re-encodes to the
/// same bytes.
#[test]
fn corpus_producer_snapshots_decode_and_reencode_byte_for_byte() {
    if corpus_root().is_none() {
        return;
    }
    let mut files = 0;
    for dir in partition_dirs() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "snapshot") {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            let snapshot = seglog::ProducerSnapshot::read(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!(snapshot.encode(), bytes, "{}", path.display());
            files += 1;
        }
    }
    assert!(files >= 20, "{files}");
}
