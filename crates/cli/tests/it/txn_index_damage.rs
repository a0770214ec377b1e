//! A damaged `.txnindex` is never trusted (issue #26): after a clean shutdown a truncated,
//! garbage, version-5, negative, inverted, unsorted or oversized index used to make
//! `read --isolation read-committed` exit 0 serving aborted records; now the read fails naming
//! the file and the entry, `verify` flags it and `recover` rebuilds it from the ABORT markers.
//! `dump` reports the first invalid entry and stops (a 4 GiB all-zero index printed 126
//! million lines). A `leader-epoch-checkpoint` whose epochs go backwards or repeat is flagged
//! by `verify` and rebuilt from the batches by `recover`.

use std::path::Path;

use crate::support::{seglog, seglog_stdin};

fn run(args: &[&str], dir: &Path) -> crate::support::Run {
    let mut all: Vec<std::ffi::OsString> = vec![args[0].into(), dir.as_os_str().to_owned()];
    all.extend(args[1..].iter().map(|a| a.into()));
    seglog(all)
}

fn produce(dir: &Path, extra: &[&str], values: &[&str]) {
    let input: String = values
        .iter()
        .map(|v| format!("{{\"value\":\"{v}\"}}\n"))
        .collect();
    let mut args: Vec<String> = vec!["produce".into(), dir.display().to_string()];
    args.extend(["--input".into(), "-".into(), "--quiet".into()]);
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    let out = seglog_stdin(args, &input);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

/// plain-1 (0), an aborted transaction of producer 8 (1, 2, ABORT at 3), committed-1 (4,
/// COMMIT at 5): the `.txnindex` holds producer 8, first 1, last 3, LSO 4.
fn txn_log(dir: &Path) {
    produce(dir, &[], &["plain-1"]);
    let txn = [
        "--producer-id",
        "8",
        "--producer-epoch",
        "0",
        "--transactional",
    ];
    produce(dir, &txn, &["aborted-1", "aborted-2"]);
    let marker = |kind: &str| {
        let out = run(
            &[
                "marker",
                "--producer-id",
                "8",
                "--producer-epoch",
                "0",
                kind,
            ],
            dir,
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
    };
    marker("--abort");
    produce(
        dir,
        &[&txn[..], &["--base-sequence", "2"]].concat(),
        &["committed-1"],
    );
    marker("--commit");
}

fn committed(dir: &Path) -> crate::support::Run {
    run(&["read", "--json", "--isolation", "read-committed"], dir)
}

fn entry(producer_id: i64, first: i64, last: i64, lso: i64) -> Vec<u8> {
    let mut out = vec![0u8, 0];
    for v in [producer_id, first, last, lso] {
        out.extend_from_slice(&v.to_be_bytes());
    }
    out
}

#[test]
fn a_damaged_txn_index_fails_read_committed_is_flagged_and_rebuilt() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("txn-0");
    txn_log(&base);
    let index = "00000000000000000000.txnindex";
    let good = std::fs::read(base.join(index)).unwrap();
    assert_eq!(good, entry(8, 1, 3, 4));
    let mut version5 = good.clone();
    version5[1] = 5;
    let cases: [(&str, Vec<u8>, &str); 7] = [
        ("truncated", good[..17].to_vec(), "not a whole number"),
        ("version 5", version5, "unknown version 5"),
        (
            "garbage",
            vec![
                0x00, 0x00, 0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99, 0x88, 0x77, 0x66, 0x55, 0x44,
                0x33, 0x22, 0x11, 0x00, 0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99, 0x88, 0x77, 0x66,
                0x55, 0x44, 0x33, 0x22, 0x11, 0x00,
            ],
            "negative",
        ),
        ("negative", entry(8, -1, 3, 4), "negative"),
        ("inverted", entry(8, 3, 1, 4), "after its ABORT marker"),
        (
            "unsorted",
            [entry(8, 1, 3, 4), entry(8, 1, 2, 4)].concat(),
            "not above the previous",
        ),
        (
            "oversized",
            vec![0; 1 << 20],
            "more than the segment can hold",
        ),
    ];
    for (what, bytes, says) in cases {
        let dir = tmp.path().join("t-0");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        for e in std::fs::read_dir(&base).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
        }
        // The log was closed cleanly: the index is not rebuilt by the open.
        assert!(dir.join(".kafka_cleanshutdown").exists(), "{what}");
        std::fs::write(dir.join(index), &bytes).unwrap();
        let read = committed(&dir);
        assert_ne!(read.code, 0, "{what}: served {}", read.stdout);
        assert!(
            read.stderr.contains(index) && read.stderr.contains(says),
            "{what}: {}",
            read.stderr
        );
        assert!(
            !read.stdout.contains("aborted-1"),
            "{what}: {}",
            read.stdout
        );
        let verify = run(&["verify", "--json"], &dir);
        assert_eq!(verify.code, 1, "{what}: {}", verify.stdout);
        assert!(
            verify.stdout.contains("txn_index_mismatch") && verify.stdout.contains(says),
            "{what}: {}",
            verify.stdout
        );
        let recover = run(&["recover", "--json"], &dir);
        assert_eq!(recover.code, 0, "{what}: {}", recover.stderr);
        assert_eq!(std::fs::read(dir.join(index)).unwrap(), good, "{what}");
        let read = committed(&dir);
        assert_eq!(read.code, 0, "{what}: {}", read.stderr);
        let values: Vec<String> = read
            .json_lines()
            .iter()
            .map(|l| l["value"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(values, ["plain-1", "committed-1"], "{what}");
        assert_eq!(run(&["verify"], &dir).code, 0, "{what}");
    }
}

#[test]
fn dump_reports_the_first_invalid_txn_index_entry_and_stops() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("txn-0");
    txn_log(&dir);
    let index = dir.join("00000000000000000000.txnindex");
    // Beside its segment: an index larger than the segment can need is refused before any
    // entry is read (a 4 GiB hole).
    let good = std::fs::read(&index).unwrap();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&index)
        .unwrap();
    f.set_len(4 << 30).unwrap();
    drop(f);
    let out = seglog(["dump".as_ref(), index.as_os_str()]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stdout.contains("more than the segment can hold"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.lines().count() < 5, "{}", out.stdout);
    // Alone (no .log to bound it): all zeros stops at the second entry, whose marker offset
    // does not increase.
    let alone = tmp.path().join("alone");
    std::fs::create_dir(&alone).unwrap();
    let copy = alone.join("00000000000000000000.txnindex");
    std::fs::File::create(&copy)
        .unwrap()
        .set_len(4 << 30)
        .unwrap();
    let out = seglog(["dump".as_ref(), copy.as_os_str(), "--json".as_ref()]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let lines = out.json_lines();
    assert_eq!(lines.len(), 2, "{}", out.stdout);
    assert!(
        lines[1]["problem"]
            .as_str()
            .unwrap()
            .contains("entry 1: ABORT marker offset 0 is not above"),
        "{}",
        out.stdout
    );
    // Version 5 and a partial entry.
    let mut v5 = good.clone();
    v5[1] = 5;
    std::fs::write(&index, &v5).unwrap();
    let out = seglog(["dump".as_ref(), index.as_os_str()]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stdout.contains("unknown version 5"), "{}", out.stdout);
    std::fs::write(&index, [&good[..], &good[..10]].concat()).unwrap();
    let out = seglog(["dump".as_ref(), index.as_os_str()]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stdout.contains("lastOffset: 3"), "{}", out.stdout);
    assert!(out.stdout.contains("not a whole number"), "{}", out.stdout);
    std::fs::write(&index, &good).unwrap();
    assert_eq!(seglog(["dump".as_ref(), index.as_os_str()]).code, 0);
}

#[test]
fn a_leader_epoch_checkpoint_that_does_not_increase_is_flagged_and_rebuilt() {
    let fixture = std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/kafka-4.4/retention-0"
    ));
    let broker = std::fs::read_to_string(fixture.join("leader-epoch-checkpoint")).unwrap();
    // Every batch says epoch 0; retention moved the log start to 800.
    assert_eq!(broker, "0\n1\n0 800\n");
    for text in [
        "0\n2\n0 800\n0 900\n",
        "0\n2\n3 800\n1 900\n",
        "0\n2\n0 900\n1 850\n",
    ] {
        let (_tmp, dir) = crate::support::copy_dir(&fixture);
        let path = dir.join("leader-epoch-checkpoint");
        std::fs::write(&path, text).unwrap();
        let verify = run(&["verify"], &dir);
        assert_eq!(verify.code, 1, "{text:?}: {}", verify.stdout);
        assert!(
            verify.stdout.contains("leader-epoch-checkpoint")
                && verify.stdout.contains("must increase"),
            "{text:?}: {}",
            verify.stdout
        );
        let recover = run(&["recover", "--json"], &dir);
        assert_eq!(recover.code, 0, "{text:?}: {}", recover.stderr);
        assert_eq!(
            recover.json_lines()[0]["leader_epoch_source"],
            "rebuilt_after_problem",
            "{text:?}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), broker, "{text:?}");
        assert_eq!(run(&["verify"], &dir).code, 0, "{text:?}");
    }
}
