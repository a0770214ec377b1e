//! A damaged `.txnindex` is never trusted (issue #26): after a clean shutdown a truncated,
//! garbage, version-5, negative, inverted, unsorted, oversized, missing, empty or
//! wrong-producer index (or a stray `.txnindex.swap`) used to make `read --isolation
//! read-committed` exit 0 serving aborted records or hiding committed ones; now the first
//! `read_committed` use checks it against the segment's ABORT markers and rebuilds it from
//! them (in memory for a read-only `read`), serving Kafka's answer, `verify` flags it and
//! `recover` rewrites it.
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

/// Every file of `dir` by name, with its bytes (nothing here is large).
fn listing(dir: &Path) -> Vec<(std::ffi::OsString, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let bytes = std::fs::read(e.path()).unwrap_or_default();
            (e.file_name(), bytes)
        })
        .collect();
    out.sort();
    out
}

fn values(read: &crate::support::Run) -> Vec<String> {
    read.json_lines()
        .iter()
        .map(|l| l["value"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Kafka's `read_committed` answer for [`txn_log`]: the aborted records hidden.
const COMMITTED: [&str; 2] = ["plain-1", "committed-1"];

fn copy_log(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// Each hostile `.txnindex` of issue #26 item 5 after a clean shutdown: `read --isolation
/// read-committed` checks it against the segment's ABORT markers at first use and serves
/// exactly Kafka's answer with exit 0, the rebuild logged at WARN naming the file and why; the
/// read-only read changes no file; `verify` still flags the file and `recover` rewrites it.
/// (Before: the structurally bad ones failed the read, and a missing, empty or wrong-producer
/// index served the aborted records with exit 0.)
#[test]
fn a_damaged_txn_index_is_rebuilt_at_first_use_flagged_and_rewritten_by_recover() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("txn-0");
    txn_log(&base);
    let index = "00000000000000000000.txnindex";
    let good = std::fs::read(base.join(index)).unwrap();
    assert_eq!(good, entry(8, 1, 3, 4));
    let mut version5 = good.clone();
    version5[1] = 5;
    let cases: [(&str, Option<Vec<u8>>, &str); 12] = [
        ("truncated", Some(good[..17].to_vec()), "not a whole number"),
        ("version 5", Some(version5), "unknown version 5"),
        (
            "garbage",
            Some(vec![
                0x00, 0x00, 0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99, 0x88, 0x77, 0x66, 0x55, 0x44,
                0x33, 0x22, 0x11, 0x00, 0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99, 0x88, 0x77, 0x66,
                0x55, 0x44, 0x33, 0x22, 0x11, 0x00,
            ]),
            "negative",
        ),
        ("negative", Some(entry(8, -1, 3, 4)), "negative"),
        (
            "inverted",
            Some(entry(8, 3, 1, 4)),
            "after its ABORT marker",
        ),
        (
            "unsorted",
            Some([entry(8, 1, 3, 4), entry(8, 1, 2, 4)].concat()),
            "not above the previous",
        ),
        (
            "oversized",
            Some(vec![0; 1 << 20]),
            "more than the segment can hold",
        ),
        (
            "missing",
            None,
            "no entry for the ABORT marker of producer 8 at offset 3",
        ),
        (
            "empty",
            Some(Vec::new()),
            "no entry for the ABORT marker of producer 8 at offset 3",
        ),
        (
            "wrong producer",
            Some(entry(7, 1, 3, 4)),
            "no entry for the ABORT marker of producer 8 at offset 3",
        ),
        (
            "an entry on the COMMIT marker",
            Some([entry(8, 1, 3, 4), entry(8, 4, 5, 6)].concat()),
            "names no ABORT marker of producer 8",
        ),
        (
            "a later first offset",
            Some(entry(8, 2, 3, 4)),
            "not the transaction's first offset 1",
        ),
    ];
    for (what, bytes, says) in cases {
        let dir = tmp.path().join("t-0");
        copy_log(&base, &dir);
        // The log was closed cleanly: the index is not rebuilt by the open.
        assert!(dir.join(".kafka_cleanshutdown").exists(), "{what}");
        match &bytes {
            Some(bytes) => std::fs::write(dir.join(index), bytes).unwrap(),
            None => std::fs::remove_file(dir.join(index)).unwrap(),
        }
        let before = listing(&dir);
        let read = run(
            &["read", "--json", "--isolation", "read-committed", "-v"],
            &dir,
        );
        assert_eq!(read.code, 0, "{what}: {}", read.stderr);
        assert_eq!(values(&read), COMMITTED, "{what}");
        assert!(
            read.stderr.contains("WARN")
                && read.stderr.contains(index)
                && read.stderr.contains(says),
            "{what}: {}",
            read.stderr
        );
        assert_eq!(listing(&dir), before, "{what}: the read changed a file");
        let read = run(&["read", "--json"], &dir);
        assert_eq!(
            values(&read),
            ["plain-1", "aborted-1", "aborted-2", "committed-1"],
            "{what}: read_uncommitted"
        );
        let verify = run(&["verify", "--json"], &dir);
        assert_eq!(verify.code, 1, "{what}: {}", verify.stdout);
        assert!(
            verify.stdout.contains("txn_index_mismatch"),
            "{what}: {}",
            verify.stdout
        );
        let recover = run(&["recover", "--json"], &dir);
        assert_eq!(recover.code, 0, "{what}: {}", recover.stderr);
        assert_eq!(std::fs::read(dir.join(index)).unwrap(), good, "{what}");
        let read = committed(&dir);
        assert_eq!(read.code, 0, "{what}: {}", read.stderr);
        assert_eq!(values(&read), COMMITTED, "{what}");
        assert_eq!(run(&["verify"], &dir).code, 0, "{what}");
    }
}

/// A stray `.txnindex.swap` (issue #26 item 5: one was renamed over the live index by a
/// `produce`): beside a segment without a `.txnindex` it takes that name (a swap's last
/// rename), so one naming a COMMIT marker hid committed records; now the first
/// `read_committed` use checks it against the markers and serves Kafka's answer, before and
/// after a `produce`, with exit 0 and no `.log` byte changed.
#[test]
fn a_stray_txn_index_swap_never_changes_a_read_committed_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("txn-0");
    // plain-1 (0), committed-1 (1, COMMIT at 2): no abort, no `.txnindex`.
    produce(&dir, &[], &["plain-1"]);
    let txn = [
        "--producer-id",
        "8",
        "--producer-epoch",
        "0",
        "--transactional",
    ];
    produce(&dir, &txn, &["committed-1"]);
    let out = run(
        &[
            "marker",
            "--producer-id",
            "8",
            "--producer-epoch",
            "0",
            "--commit",
        ],
        &dir,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!dir.join("00000000000000000000.txnindex").exists());
    // An "aborted transaction" of producer 8 ending at its COMMIT marker.
    std::fs::write(
        dir.join("00000000000000000000.txnindex.swap"),
        entry(8, 1, 2, 3),
    )
    .unwrap();
    let log_bytes = std::fs::read(dir.join("00000000000000000000.log")).unwrap();
    let read = committed(&dir);
    assert_eq!(read.code, 0, "{}", read.stderr);
    assert_eq!(values(&read), COMMITTED);
    produce(&dir, &[], &["plain-2"]);
    let read = committed(&dir);
    assert_eq!(read.code, 0, "{}", read.stderr);
    assert_eq!(values(&read), ["plain-1", "committed-1", "plain-2"]);
    let now = std::fs::read(dir.join("00000000000000000000.log")).unwrap();
    assert_eq!(&now[..log_bytes.len()], &log_bytes[..]);
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
