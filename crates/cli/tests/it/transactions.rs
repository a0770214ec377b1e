//! Idempotent and transactional producers from the command line: `produce --producer-id`,
//! `marker`, `read --isolation`, `info --json` (`last_stable_offset`, `producers`), `dump` of
//! a `.txnindex`, `verify` of it and `recover` rebuilding it.

use std::path::{Path, PathBuf};

use crate::support::{copy_dir, seglog};

fn run<const N: usize>(args: [&str; N], dir: &Path) -> crate::support::Run {
    let mut all: Vec<std::ffi::OsString> = vec![args[0].into(), dir.as_os_str().to_owned()];
    all.extend(args[1..].iter().map(|a| a.into()));
    seglog(all)
}

fn values(dir: &Path, isolation: &str) -> Vec<String> {
    let out = run(["read", "--json", "--isolation", isolation], dir);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.json_lines()
        .iter()
        .map(|l| l["value"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn info(dir: &Path) -> serde_json::Value {
    let out = run(["info", "--json"], dir);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.json_lines().remove(0)
}

fn produce(dir: &Path, extra: &[&str], values: &[&str]) -> crate::support::Run {
    let input = values
        .iter()
        .map(|v| format!("{{\"value\":\"{v}\"}}\n"))
        .collect::<String>();
    let mut args: Vec<String> = vec!["produce".into(), dir.display().to_string()];
    args.extend(["--input".into(), "-".into(), "--json".into()]);
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    crate::support::seglog_stdin(args, &input)
}

#[test]
fn an_idempotent_retry_is_answered_from_the_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("idem-0");
    let p = [
        "--producer-id",
        "7",
        "--producer-epoch",
        "0",
        "--batch-records",
        "2",
    ];
    let first = produce(&dir, &p, &["a", "b", "c", "d"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(first.json_lines().len(), 2);
    // The second batch again (sequence 2): the log answers with its offsets, writes nothing.
    let retry_args = [&p[..], &["--base-sequence", "2"]].concat();
    let retry = produce(&dir, &retry_args, &["c", "d"]);
    assert_eq!(retry.code, 0, "{}", retry.stderr);
    let line = &retry.json_lines()[0];
    assert_eq!(line["base_offset"], 2);
    assert_eq!(line["duplicate"], true);
    assert_eq!(info(&dir)["log_end_offset"], 4);
    assert_eq!(info(&dir)["producers"], 1);
    // A gap in the sequence is refused.
    let gap = produce(&dir, &[&p[..], &["--base-sequence", "9"]].concat(), &["x"]);
    assert_ne!(gap.code, 0);
    assert!(
        gap.stderr.contains("out of order sequence"),
        "{}",
        gap.stderr
    );
}

#[test]
fn transactions_markers_read_committed_dump_verify_and_recover() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("txn-0");
    assert_eq!(produce(&dir, &[], &["plain-1"]).code, 0);
    let txn = [
        "--producer-id",
        "8",
        "--producer-epoch",
        "0",
        "--transactional",
    ];
    assert_eq!(produce(&dir, &txn, &["aborted-1", "aborted-2"]).code, 0);
    let i = info(&dir);
    assert_eq!(i["last_stable_offset"], 1);
    assert_eq!(i["producers"], 1);
    assert_eq!(values(&dir, "read-committed"), vec!["plain-1"]);
    let abort = run(
        [
            "marker",
            "--producer-id",
            "8",
            "--producer-epoch",
            "0",
            "--abort",
            "--json",
        ],
        &dir,
    );
    assert_eq!(abort.code, 0, "{}", abort.stderr);
    assert_eq!(abort.json_lines()[0]["offset"], 3);
    assert_eq!(abort.json_lines()[0]["last_stable_offset"], 4);
    let committed = [&txn[..], &["--base-sequence", "2"]].concat();
    assert_eq!(produce(&dir, &committed, &["committed-1"]).code, 0);
    let commit = run(
        [
            "marker",
            "--producer-id",
            "8",
            "--producer-epoch",
            "0",
            "--commit",
            "--coordinator-epoch",
            "3",
        ],
        &dir,
    );
    assert_eq!(commit.code, 0, "{}", commit.stderr);
    assert!(commit.stdout.contains("commit marker"), "{}", commit.stdout);
    assert_eq!(
        values(&dir, "read-committed"),
        vec!["plain-1", "committed-1"]
    );
    assert_eq!(values(&dir, "read-uncommitted").len(), 4);
    assert_eq!(
        info(&dir)["last_stable_offset"],
        info(&dir)["log_end_offset"]
    );
    // A fenced coordinator epoch is refused, naming it.
    let fenced = run(
        [
            "marker",
            "--producer-id",
            "8",
            "--producer-epoch",
            "0",
            "--abort",
            "--coordinator-epoch",
            "1",
        ],
        &dir,
    );
    assert_ne!(fenced.code, 0);
    assert!(
        fenced.stderr.contains("coordinator epoch"),
        "{}",
        fenced.stderr
    );

    // dump decodes the `.txnindex` as Kafka's DumpLogSegments.
    let index = dir.join("00000000000000000000.txnindex");
    let text = seglog(["dump".as_ref(), index.as_os_str()]).ok();
    assert!(
        text.contains("version: 0 producerId: 8 firstOffset: 1 lastOffset: 3 lastStableOffset: 4"),
        "{text}"
    );
    let json = seglog(["dump".as_ref(), index.as_os_str(), "--json".as_ref()]);
    assert_eq!(json.json_lines()[0]["last_stable_offset"], 4);

    // verify checks it against the markers; recover rebuilds it.
    assert_eq!(run(["verify"], &dir).code, 0);
    let bytes = std::fs::read(&index).unwrap();
    std::fs::write(&index, []).unwrap();
    let bad = run(["verify", "--json"], &dir);
    assert_eq!(bad.code, 1, "{}", bad.stdout);
    assert!(bad.stdout.contains("txn_index_mismatch"), "{}", bad.stdout);
    let recovered = run(["recover", "--json"], &dir);
    assert_eq!(recovered.code, 0, "{}", recovered.stderr);
    let report = &recovered.json_lines()[0];
    assert_eq!(report["rebuilt_txn_indexes"], serde_json::json!([0]));
    assert_eq!(report["producers"], 1);
    assert_eq!(report["producer_snapshot"], 6);
    assert_eq!(std::fs::read(&index).unwrap(), bytes);
    assert!(dir.join("00000000000000000006.snapshot").exists());
    assert_eq!(run(["verify"], &dir).code, 0);
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/kafka-4.4"
    ))
    .join(name)
}

#[test]
fn the_brokers_transactional_fixture_reads_committed_and_verifies() {
    let (_tmp, dir) = copy_dir(&fixture("txn-0"));
    let all = values(&dir, "read-uncommitted");
    let committed = values(&dir, "read-committed");
    assert!(
        !committed.is_empty() && committed.len() < all.len(),
        "{} {}",
        committed.len(),
        all.len()
    );
    // The broker's producer state is read, less the producers expired by now: the directory
    // has no clean-shutdown marker, and Kafka's recovery (`loadFromSnapshot`) drops a producer
    // whose last batch is older than `producer.id.expiration.ms` (1 day) too. So the count
    // depends on the fixture's age; the snapshot itself must hold the broker's producers.
    let snapshot = ::seglog::ProducerSnapshot::read(&dir.join("00000000000000000972.snapshot"))
        .expect("the broker's last snapshot");
    assert!(!snapshot.entries.is_empty());
    let now_ms = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    let i = info(&dir);
    let live = snapshot
        .entries
        .iter()
        .filter(|e| now_ms - e.timestamp_ms < 86_400_000)
        .count();
    assert_eq!(i["producers"].as_u64().unwrap() as usize, live);
    assert_eq!(i["last_stable_offset"], i["log_end_offset"]);
    assert_eq!(run(["verify"], &dir).code, 0);
}

/// `read --isolation read-committed --json`: key → (offset, value) of the latest record per
/// key that has a value (what compaction must keep).
fn latest_committed(dir: &Path) -> std::collections::BTreeMap<String, (i64, String)> {
    let out = run(
        ["read", "--json", "--quiet", "--isolation", "read-committed"],
        dir,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mut latest = std::collections::BTreeMap::new();
    for line in out.json_lines() {
        let Some(key) = line["key"].as_str() else {
            continue;
        };
        let value = line["value"].as_str().map(str::to_owned);
        latest.insert(key.to_owned(), (line["offset"].as_i64().unwrap(), value));
    }
    latest
        .into_iter()
        .filter_map(|(k, (o, v))| Some((k, (o, v?))))
        .collect()
}

/// A compacted log of one transactional producer whose epoch is bumped at every transaction
/// end (transactions v2), aborted and committed transactions alternating with plain records,
/// written with seglog's API and cleaned in several rounds (the delete horizon passing in
/// between): after every round `verify` passes and `read --isolation read-committed` keeps the
/// latest committed value of every key. The first round removes aborted data and keeps its
/// ABORT marker with its `.txnindex` entry, as Kafka's cleaner does; the old `verify`, which
/// wanted the index a rebuild gives (no entry: the transaction has no data left), reported
/// `txn_index_mismatch` on it.
#[test]
fn a_compacted_transactional_log_with_epoch_bumps_verifies_and_reads_committed_every_round() {
    use seglog::{BatchBuilder, Durability, TxnResult};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("txn-compacted-0");
    let config = seglog::LogConfig {
        segment_bytes: 1024,
        cleanup_policy: seglog::CleanupPolicy::Compact,
        delete_retention_ms: 1_000,
        file_delete_delay_ms: 0,
        ..seglog::LogConfig::default()
    };
    let options = seglog::LogOpenOptions {
        high_watermark: seglog::HighWatermarkPolicy::LogEnd,
        ..seglog::LogOpenOptions::default()
    };
    let log = seglog::Log::open_with(&dir, config, options).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let (producer, mut epoch) = (42, 0i16);
    for t in 0..18 {
        let mut sequence = 0;
        for b in 0..2 {
            let mut builder = BatchBuilder::new(0)
                .producer(producer, epoch, sequence)
                .transactional(true);
            for key in [format!("shared{}", (t + b) % 3), format!("t{t}-b{b}")] {
                let value = format!("txn{t}-{key}");
                builder.append(now, Some(key.as_bytes()), Some(value.as_bytes()), &[]);
                sequence += 1;
            }
            log.append(&builder.build().unwrap()).unwrap();
            let mut plain = BatchBuilder::new(0);
            let value = format!("plain-{t}-{b}");
            plain.append(
                now,
                Some(format!("plain{}", t % 4).as_bytes()),
                Some(value.as_bytes()),
                &[],
            );
            log.append(&plain.build().unwrap()).unwrap();
        }
        let result = if t % 2 == 0 || t % 7 == 3 {
            TxnResult::Abort
        } else {
            TxnResult::Commit
        };
        epoch += 1;
        log.write_txn_marker(producer, epoch, 0, result, None, Durability::PageCache)
            .unwrap();
        if t % 3 == 2 {
            log.roll().unwrap();
        }
    }
    log.roll().unwrap();
    log.close().unwrap();
    drop(log);
    let before = latest_committed(&dir);
    assert!(
        before.values().all(|(_, v)| !v.starts_with("txn0-")),
        "aborted"
    );
    let verify = run(["verify"], &dir);
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
    for round in 0..4 {
        let at = (now + round * 1_001).to_string();
        let cleaned = run(
            [
                "compact",
                "--now",
                &at,
                "--config",
                "delete.retention.ms=1000",
            ],
            &dir,
        );
        assert_eq!(cleaned.code, 0, "{}", cleaned.stderr);
        let verify = run(["verify"], &dir);
        assert_eq!(
            verify.code, 0,
            "round {round}: {}{}",
            verify.stdout, verify.stderr
        );
        assert_eq!(latest_committed(&dir), before, "round {round}");
    }
    // What the relaxed comparison still refuses: an entry whose first offset is moved back
    // over the producer's earlier (committed) transaction would make a consumer drop it, and
    // an entry that names no ABORT marker would hide the producer's later records.
    let (index, entries) = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "txnindex"))
        .find_map(|p| {
            let entries = seglog::decode_txn_index(&std::fs::read(&p).unwrap()).unwrap();
            (!entries.is_empty()).then_some((p, entries))
        })
        .expect("a round-one .txnindex entry stays while its marker does");
    let original = std::fs::read(&index).unwrap();
    let tampered = |last: seglog::AbortedTxn, message: &str| {
        let mut bytes = Vec::new();
        for entry in &entries[..entries.len() - 1] {
            bytes.extend(entry.encode());
        }
        bytes.extend(last.encode());
        std::fs::write(&index, bytes).unwrap();
        let verify = run(["verify", "--json"], &dir);
        std::fs::write(&index, &original).unwrap();
        assert_eq!(verify.code, 1, "{}", verify.stdout);
        assert!(
            verify.stdout.contains("txn_index_mismatch"),
            "{}",
            verify.stdout
        );
        assert!(verify.stdout.contains(message), "{}", verify.stdout);
    };
    let last = entries[entries.len() - 1];
    tampered(
        seglog::AbortedTxn {
            producer_id: 7,
            ..last
        },
        "names no ABORT marker",
    );
    assert_eq!(run(["verify"], &dir).code, 0);
}

/// `verify` accepts a `.txnindex` entry that differs from the rebuilt one only where a
/// consumer reads the same; one whose first offset lies before the producer's committed
/// transaction (it names the right marker, but a consumer would drop the committed records)
/// is still a `txn_index_mismatch`.
#[test]
fn an_entry_stretched_over_a_committed_transaction_is_a_mismatch() {
    use seglog::{BatchBuilder, Durability, TxnResult};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("txn-stretched-0");
    let log = seglog::Log::open(&dir, seglog::LogConfig::default()).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    for (epoch, result) in [(0i16, TxnResult::Commit), (1, TxnResult::Abort)] {
        let mut builder = BatchBuilder::new(0)
            .producer(42, epoch, 0)
            .transactional(true);
        builder.append(now, Some(b"k"), Some(b"v"), &[]);
        log.append(&builder.build().unwrap()).unwrap();
        log.write_txn_marker(42, epoch + 1, 0, result, None, Durability::PageCache)
            .unwrap();
    }
    log.close().unwrap();
    drop(log);
    assert_eq!(run(["verify"], &dir).code, 0);
    let index = dir.join("00000000000000000000.txnindex");
    let entries = seglog::decode_txn_index(&std::fs::read(&index).unwrap()).unwrap();
    assert_eq!(entries.len(), 1);
    let stretched = seglog::AbortedTxn {
        first_offset: 0,
        ..entries[0]
    };
    std::fs::write(&index, stretched.encode()).unwrap();
    let verify = run(["verify", "--json"], &dir);
    assert_eq!(verify.code, 1, "{}", verify.stdout);
    assert!(
        verify
            .stdout
            .contains("a read_committed consumer would treat the batch ending at offset 0"),
        "{}",
        verify.stdout
    );
}

/// #26/7: the broker's transactional fixture compacted by seglog (twice: the second round
/// meets the first round's markers without data) verifies and reads the same latest committed
/// values.
#[test]
fn the_brokers_transactional_fixture_compacted_verifies_and_reads_the_same() {
    let (_tmp, dir) = copy_dir(&fixture("txn-0"));
    let before = latest_committed(&dir);
    assert!(!before.is_empty());
    for round in 0..2 {
        let cleaned = run(
            [
                "compact",
                "--config",
                "cleanup.policy=compact",
                "--config",
                "delete.retention.ms=0",
            ],
            &dir,
        );
        assert_eq!(cleaned.code, 0, "{}", cleaned.stderr);
        let verify = run(["verify"], &dir);
        assert_eq!(
            verify.code, 0,
            "round {round}: {}{}",
            verify.stdout, verify.stderr
        );
        assert_eq!(latest_committed(&dir), before, "round {round}");
    }
}

/// Issue #25 finding 6 (KIP-1228, Kafka 4.4's `ProducerAppendInfo.checkProducerEpoch`):
/// `marker --transaction-version 2` wants the producer epoch bumped past the transaction's,
/// and accepts a repeat of the completed marker at that epoch; the default (0, as a
/// WriteTxnMarkers request without the field) keeps the old rule (fenced only below).
#[test]
fn marker_transaction_version_2_wants_a_bumped_epoch_and_accepts_a_completed_repeat() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tv2-0");
    let txn = [
        "--producer-id",
        "4",
        "--producer-epoch",
        "5",
        "--transactional",
    ];
    assert_eq!(produce(&dir, &txn, &["t-1"]).code, 0);
    let marker = |epoch: &str, version: &str| {
        run(
            [
                "marker",
                "--producer-id",
                "4",
                "--producer-epoch",
                epoch,
                "--commit",
                "--transaction-version",
                version,
                "--json",
            ],
            &dir,
        )
    };
    // TV2: the transaction's own epoch (5) is fenced while it is open, so is an older one
    // (a rejected append exits 2).
    let fenced =
        |out: crate::support::Run| out.code == 2 && out.stderr.contains("fenced by its epoch");
    for epoch in ["4", "5"] {
        let out = marker(epoch, "2");
        assert!(
            out.code == 2 && out.stderr.contains("is fenced by its epoch 5"),
            "epoch {epoch}: {}",
            out.stderr
        );
    }
    assert_eq!(values(&dir, "read-committed"), Vec::<String>::new());
    // The bumped epoch commits.
    let out = marker("6", "2");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json_lines()[0]["offset"], 1);
    assert_eq!(out.json_lines()[0]["transaction_version"], 2);
    assert_eq!(values(&dir, "read-committed"), vec!["t-1"]);
    // A retry of the completed marker at the current epoch is written, as Kafka writes it.
    let out = marker("6", "2");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json_lines()[0]["offset"], 2);
    // Below the current epoch: fenced under TV2 and under the default rule alike.
    assert!(fenced(marker("5", "2")));
    assert!(fenced(marker("5", "0")));
    // The default rule accepts the current epoch.
    let out = run(
        [
            "marker",
            "--producer-id",
            "4",
            "--producer-epoch",
            "6",
            "--abort",
        ],
        &dir,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    // Only 0, 1 and 2 are transaction versions.
    let out = marker("6", "3");
    assert!(
        out.code == 2 && out.stderr.contains("--transaction-version"),
        "{}",
        out.stderr
    );
}

/// Issue #26 item 6: `truncate --to 4` inside the batch 3..=5 reports log end 4 (Kafka's
/// `truncateTo` answer), and every later command sees 4 too (each reopen said 3); the next
/// produce takes offset 4.
#[test]
fn truncate_inside_a_batch_reports_the_end_every_reopen_sees() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cut-0");
    assert_eq!(produce(&dir, &[], &["a", "b", "c"]).code, 0);
    assert_eq!(produce(&dir, &[], &["d", "e", "f"]).code, 0);
    let out = run(["truncate", "--to", "4", "--json"], &dir);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json_lines()[0]["log_end_offset"], 4);
    for _ in 0..2 {
        assert_eq!(info(&dir)["log_end_offset"], 4);
        assert_eq!(values(&dir, "read-uncommitted"), vec!["a", "b", "c"]);
    }
    let out = produce(&dir, &[], &["g"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json_lines()[0]["base_offset"], 4);
    assert_eq!(info(&dir)["log_end_offset"], 5);
    assert_eq!(seglog(["verify".as_ref(), dir.as_os_str()]).code, 0);
}

/// `verify` and the open path agree on an index Kafka's cleaner leaves (issue #25 item 3; the
/// long run's seed 205590): a first round removes an aborted transaction's data while its ABORT
/// marker lies above the round, the second cleans the marker's segment and drops the entry (no
/// batch of the transaction left), as Kafka's `CleanedTransactionMetadata` does. The producer
/// snapshot at the marker's segment, taken before the cleaning, still has the transaction
/// open. `verify` (whose expectation is a full recovery's rebuild) accepts the index; before
/// the fix the open path's first-use check expected the entry again and rebuilt the index with
/// it, so the two disagreed.
#[test]
fn an_index_without_the_entry_of_removed_aborted_data_verifies_and_is_kept() {
    use seglog::{BatchBuilder, Durability, TxnResult};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("txn-cleaned-0");
    let now = 1_700_000_000_000;
    let config = seglog::LogConfig {
        segment_bytes: 1024,
        retention_ms: -1,
        cleanup_policy: seglog::CleanupPolicy::Compact,
        min_cleanable_dirty_ratio: seglog::DirtyRatio(0.0),
        min_compaction_lag_ms: 0,
        delete_retention_ms: 86_400_000,
        file_delete_delay_ms: 0,
        ..seglog::LogConfig::default()
    };
    let options = seglog::LogOpenOptions {
        high_watermark: seglog::HighWatermarkPolicy::LogEnd,
        clock: std::sync::Arc::new(seglog::ManualClock::new(now)),
        ..seglog::LogOpenOptions::default()
    };
    let reopen = (config.clone(), options.clone());
    let log = seglog::Log::open_with(&dir, config, options).unwrap();
    // A record of `key` padded to `bytes`; `producer` is (id, sequence, transactional).
    let put = |producer: Option<(i64, i32, bool)>, key: &str, bytes: usize| {
        let mut builder = BatchBuilder::new(0);
        if let Some((id, sequence, transactional)) = producer {
            builder = builder
                .producer(id, 0, sequence)
                .transactional(transactional);
        }
        let value = format!("{key:<bytes$}");
        builder.append(now, Some(key.as_bytes()), Some(value.as_bytes()), &[]);
        log.append(&builder.build().unwrap()).unwrap();
    };
    let abort = |producer_id: i64| {
        log.write_txn_marker(
            producer_id,
            0,
            0,
            TxnResult::Abort,
            None,
            Durability::PageCache,
        )
        .unwrap();
    };
    put(None, "k0", 500);
    put(Some((8, 0, true)), "a8", 2);
    log.roll().unwrap();
    put(Some((9, 0, true)), "a9", 2);
    abort(8);
    put(None, "k1", 560);
    put(Some((8, 1, false)), "p8", 2);
    log.clean_at(now).unwrap();
    abort(9);
    put(None, "k2", 2);
    log.roll().unwrap();
    log.clean_at(now).unwrap();
    log.close().unwrap();
    drop(log);
    let index = dir.join("00000000000000000002.txnindex");
    let cleaned = std::fs::read(&index).unwrap();
    let entries = seglog::decode_txn_index(&cleaned).unwrap();
    assert_eq!(
        entries.iter().map(|t| t.producer_id).collect::<Vec<_>>(),
        [9]
    );
    let verify = run(["verify"], &dir);
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
    // The open path (a clean open: the first-use check) uses the file as it is, as `verify`
    // (a full recovery's rebuild) accepted it, also when a fetch from the marker's segment
    // uses its index first (the check then replays from the snapshot at 2). Before the fix
    // that check put producer 8's entry back.
    let log = seglog::Log::open_with(&dir, reopen.0, reopen.1).unwrap();
    let fetched: Vec<i64> = log
        .aborted_transactions(2, log.log_end_offset())
        .unwrap()
        .iter()
        .map(|t| t.producer_id)
        .collect();
    assert_eq!(fetched, [9]);
    let checked: Vec<_> = log
        .txn_index_entries()
        .unwrap()
        .into_iter()
        .filter(|(base, _)| *base == 2)
        .flat_map(|(_, entries)| entries)
        .collect();
    assert_eq!(checked, entries);
    drop(log);
    let committed: Vec<String> = values(&dir, "read-committed")
        .iter()
        .map(|v| v.trim_end().to_owned())
        .collect();
    assert_eq!(committed, ["k0", "k1", "p8", "k2"]);
    assert_eq!(
        std::fs::read(&index).unwrap(),
        cleaned,
        "the index was rewritten"
    );
}
