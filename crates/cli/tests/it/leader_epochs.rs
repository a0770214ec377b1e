//! The leader-epoch cache in `info --json`, `dump` and `recover`, on the broker-made fixtures.

use std::path::PathBuf;

use crate::support::{assert_unchanged, copy_dir, seglog};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/kafka-4.4"
    ))
    .join(name)
}

#[test]
fn info_json_lists_the_leader_epochs() {
    let dir = fixture("retention-0");
    let run = assert_unchanged(&dir, || {
        seglog(["info".as_ref(), dir.as_os_str(), "--json".as_ref()])
    });
    assert_eq!(run.code, 0, "{}", run.stderr);
    let info = &run.json_lines()[0];
    // The broker wrote `0 800` (retention moved the log start to 800).
    assert_eq!(info["leader_epochs"], serde_json::json!([[0, 800]]));
    let text = seglog(["info".as_ref(), dir.as_os_str()]).ok();
    assert!(
        text.contains("leader epochs (epoch@start offset): 0@800"),
        "{text}"
    );
}

#[test]
fn dump_decodes_the_checkpoint_in_text_and_json() {
    let (_tmp, dir) = copy_dir(&fixture("codec-none-0"));
    let file = dir.join("leader-epoch-checkpoint");
    std::fs::write(&file, "0\n2\n0 0\n3 139\n").unwrap();
    let text = seglog(["dump".as_ref(), file.as_os_str()]).ok();
    assert!(
        text.contains("epoch: 0 startOffset: 0\nepoch: 3 startOffset: 139\n"),
        "{text}"
    );
    let run = seglog(["dump".as_ref(), file.as_os_str(), "--json".as_ref()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines = run.json_lines();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["epoch"], 3);
    assert_eq!(lines[1]["start_offset"], 139);
    assert_eq!(lines[1]["slot"], 1);
    // A file that does not parse is a problem at its line (exit code 1).
    std::fs::write(&file, "0\n2\n0 0\n").unwrap();
    let run = seglog(["dump".as_ref(), file.as_os_str(), "--json".as_ref()]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert_eq!(run.json_lines()[0]["position"], 2);
}

#[test]
fn recover_rebuilds_a_missing_or_corrupt_checkpoint_as_the_broker_wrote_it() {
    for name in ["retention-0", "compacted-0", "txn-0"] {
        let broker =
            std::fs::read_to_string(fixture(name).join("leader-epoch-checkpoint")).unwrap();
        for damage in [None, Some("0\n7\n"), Some("garbage")] {
            let (_tmp, dir) = copy_dir(&fixture(name));
            let file = dir.join("leader-epoch-checkpoint");
            match damage {
                None => std::fs::remove_file(&file).unwrap(),
                Some(text) => std::fs::write(&file, text).unwrap(),
            }
            let run = seglog(["recover".as_ref(), dir.as_os_str(), "--json".as_ref()]);
            assert_eq!(run.code, 0, "{name}: {}{}", run.stdout, run.stderr);
            let report = &run.json_lines()[0];
            let source = if damage.is_none() {
                "rebuilt"
            } else {
                "rebuilt_after_problem"
            };
            assert_eq!(report["leader_epoch_source"], source, "{name}");
            assert_eq!(std::fs::read_to_string(&file).unwrap(), broker, "{name}");
        }
    }
}

#[test]
fn dump_decodes_producer_snapshots_as_dump_log_segments_prints_them() {
    let dir = fixture("txn-0");
    let file = dir.join("00000000000000000972.snapshot");
    let text = assert_unchanged(&dir, || seglog(["dump".as_ref(), file.as_os_str()])).ok();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("Dumping "), "{text}");
    // The broker's file: two producers, one with a retained batch and one without.
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[1].starts_with(
            "producerId: 6 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty lastTimestamp: "
        ),
        "{text}"
    );
    assert!(
        lines[1].ends_with(" firstSequence: 220 lastSequence: 239 lastOffset: 970 offsetDelta: 19 timestamp: 1796115250590"),
        "{text}"
    );
    // No batch retained (the transactional producer after its markers): Kafka's line ends
    // after the timestamp, with its trailing space.
    assert_eq!(
        lines[2],
        "producerId: 7 producerEpoch: 12 coordinatorEpoch: 0 currentTxnFirstOffset: OptionalLong.empty lastTimestamp: 1796115845946 "
    );
    let run = seglog(["dump".as_ref(), file.as_os_str(), "--json".as_ref()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let entries = run.json_lines();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0]["producer_id"], 6);
    assert_eq!(entries[0]["coordinator_epoch"], -1);
    assert_eq!(entries[0]["first_sequence"], 220);
    assert_eq!(entries[1]["first_sequence"], serde_json::Value::Null);
    assert_eq!(entries[0]["last_offset"], 970);
    assert_eq!(
        entries[0]["current_txn_first_offset"],
        serde_json::Value::Null
    );
    // A corrupt snapshot is a problem (exit code 1).
    let (_tmp, copy) = copy_dir(&dir);
    let bad = copy.join("00000000000000000972.snapshot");
    let mut bytes = std::fs::read(&bad).unwrap();
    bytes[12] ^= 1;
    std::fs::write(&bad, bytes).unwrap();
    let run = seglog(["dump".as_ref(), bad.as_os_str()]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("CRC is no longer valid"),
        "{}",
        run.stdout
    );
}

#[test]
fn verify_checks_snapshot_crcs_and_the_epoch_checkpoint() {
    let (_tmp, dir) = copy_dir(&fixture("txn-0"));
    let run = seglog(["verify".as_ref(), dir.as_os_str(), "--json".as_ref()]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let snapshot = dir.join("00000000000000000447.snapshot");
    let mut bytes = std::fs::read(&snapshot).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    std::fs::write(&snapshot, bytes).unwrap();
    std::fs::write(dir.join("leader-epoch-checkpoint"), "0\n1\n").unwrap();
    let run = seglog(["verify".as_ref(), dir.as_os_str(), "--json".as_ref()]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let report = &run.json_lines()[0];
    let kinds: Vec<&str> = report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["corrupt_snapshot", "corrupt_leader_epoch_checkpoint"],
        "{report}"
    );
}
