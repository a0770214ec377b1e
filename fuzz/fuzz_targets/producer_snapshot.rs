//! Fuzzes producer-state snapshots (`<offset>.snapshot`, Kafka's `ProducerStateManager`
//! format): arbitrary bytes decoded directly, then installed as the latest snapshot of a small
//! closed log with idempotent and transactional producers, which is reopened.
//!
//! Properties, besides "never panics":
//! - what decodes encodes to bytes that decode to the same snapshot;
//! - the log opens whatever the snapshot holds and serves every record it had (the snapshot
//!   is derived state: a corrupt one is skipped and the state rebuilt from the log);
//! - a snapshot that does not decode leaves the producer state as the log rebuilds it from
//!   the segments: each producer's epoch, coordinator epoch, open transaction, last sequence
//!   and last offset as with the intact snapshot (a snapshot keeps only the last batch of a
//!   producer, a replay up to five, so the batch lists may differ);
//! - the reopened log takes a plain append and closes again.
//!
//! Input: byte 0 is a set of flags (bit 0: rewrite the CRC so the fuzzer reaches the entries);
//! the rest is the file.

#![no_main]

use libfuzzer_sys::fuzz_target;
use seglog::{
    BatchBuilder, Durability, Isolation, Log, LogConfig, ProducerSnapshot, ProducerStateEntry,
    TxnResult,
};

/// Now, so that no producer of the template expires (`producer.id.expiration.ms`).
fn t0() -> i64 {
    static T0: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    *T0.get_or_init(|| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        now.expect("a clock after 1970").as_millis() as i64
    })
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 400,
        segment_index_bytes: 4096,
        message_timestamp_after_max_ms: i64::MAX,
        message_timestamp_before_max_ms: i64::MAX,
        ..LogConfig::default()
    }
}

fn batch(producer: Option<(i64, i16, i32)>, transactional: bool, i: i64) -> seglog::Bytes {
    let mut builder = BatchBuilder::new(0);
    if let Some((id, epoch, sequence)) = producer {
        builder = builder.producer(id, epoch, sequence).transactional(transactional);
    }
    builder.append(t0() + i, Some(&[i as u8]), Some(&[i as u8; 40]), &[]);
    builder.build().expect("build")
}

/// What the template log was before its close.
struct Template {
    dir: std::path::PathBuf,
    end: i64,
    offsets: Vec<i64>,
    producers: Vec<Observed>,
    _tmp: tempfile::TempDir,
}

fn offsets(log: &Log) -> Vec<i64> {
    log.owned_reader(0, Isolation::LogEnd)
        .until_caught_up()
        .map(|r| r.expect("every record of the template reads back").record.offset)
        .collect()
}

/// What a producer's state answers: id, epoch, coordinator epoch, open transaction, last
/// sequence and last offset.
type Observed = (i64, i16, i32, Option<i64>, i32, i64);

fn observed(producers: Vec<ProducerStateEntry>) -> Vec<Observed> {
    let mut out: Vec<Observed> = producers
        .iter()
        .map(|p| {
            (
                p.producer_id,
                p.producer_epoch,
                p.coordinator_epoch,
                p.current_txn_first_offset,
                p.last_sequence(),
                p.last_data_offset(),
            )
        })
        .collect();
    out.sort();
    out
}

/// An idempotent producer (id 7), two transactions of producer 9 (one aborted, one
/// committed), plain batches between them, over several segments; closed cleanly (the close
/// writes the snapshot at the log end).
fn template() -> &'static Template {
    static TEMPLATE: std::sync::OnceLock<Template> = std::sync::OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let tmp = tempfile::tempdir().expect("a temp dir");
        let dir = tmp.path().join("t-0");
        let log = Log::open(&dir, config()).expect("open a fresh log");
        let mut i = 0;
        let mut next = || {
            i += 1;
            i
        };
        for sequence in 0..3 {
            log.append(&batch(Some((7, 0, sequence)), false, next())).expect("append");
        }
        log.append(&batch(Some((9, 1, 0)), true, next())).expect("append");
        log.append(&batch(None, false, next())).expect("append");
        log.write_txn_marker(9, 1, 0, TxnResult::Abort, None, Durability::PageCache)
            .expect("abort");
        log.append(&batch(Some((9, 1, 1)), true, next())).expect("append");
        log.append(&batch(Some((7, 0, 3)), false, next())).expect("append");
        log.write_txn_marker(9, 1, 0, TxnResult::Commit, None, Durability::PageCache)
            .expect("commit");
        log.append(&batch(None, false, next())).expect("append");
        let end = log.log_end_offset();
        let offsets = offsets(&log);
        log.close().expect("close");
        drop(log);
        // As a reopen with the intact snapshot loads it.
        let log = Log::open(&dir, config()).expect("reopen the template");
        let producers = observed(log.producer_states());
        assert_eq!(producers.len(), 2, "the template has two producers");
        log.close().expect("close");
        Template {
            dir,
            end,
            offsets,
            producers,
            _tmp: tmp,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, file)) = data.split_first() else {
        return;
    };
    let mut file = file.to_vec();
    if flags & 1 == 1 && file.len() >= 10 {
        let crc = seglog_records::crc32c(&file[6..]);
        file[2..6].copy_from_slice(&crc.to_be_bytes());
    }
    let decoded = ProducerSnapshot::decode(&file);
    if let Ok(snapshot) = &decoded {
        assert_eq!(
            ProducerSnapshot::decode(&snapshot.encode()).as_ref(),
            Ok(snapshot),
            "a decoded snapshot does not round trip"
        );
    }

    let template = template();
    let tmp = tempfile::tempdir().expect("a temp dir");
    let dir = tmp.path().join("t-0");
    std::fs::create_dir(&dir).expect("mkdir");
    for entry in std::fs::read_dir(&template.dir).expect("list the template") {
        let entry = entry.expect("list the template");
        std::fs::copy(entry.path(), dir.join(entry.file_name())).expect("copy");
    }
    let snapshot = dir.join(format!("{:020}.snapshot", template.end));
    assert!(snapshot.exists(), "the close left no snapshot at the log end");
    std::fs::write(&snapshot, &file).expect("write the snapshot");

    let log = Log::open(&dir, config()).expect("the log opens whatever its snapshot holds");
    assert_eq!(log.log_end_offset(), template.end, "records lost");
    assert_eq!(offsets(&log), template.offsets, "records lost or changed");
    if decoded.is_err() {
        assert_eq!(
            observed(log.producer_states()),
            template.producers,
            "a skipped snapshot changed the rebuilt producer state"
        );
    }
    log.append(&batch(None, false, 100)).expect("a plain append after the reopen");
    log.close().expect("close");
    drop(log);
    let log = Log::open(&dir, config()).expect("reopen");
    assert_eq!(log.log_end_offset(), template.end + 1);
});
