//! Fuzzes `.txnindex` files (Kafka's `TransactionIndex`: 34-byte aborted-transaction entries):
//! arbitrary bytes decoded directly, then installed as (or in place of) one segment's
//! `.txnindex` in a small closed log with committed and aborted transactions of two
//! producers, which is reopened after its clean shutdown and read `read_committed`.
//!
//! Properties, besides "never panics":
//! - every entry that decodes at version 0 encodes back to its 34 bytes;
//! - the log opens whatever the file holds and serves every record it had;
//! - `read_committed` always answers exactly what the segments' markers give (the answer of
//!   the undamaged log: aborted records hidden, committed ones shown), never an error, from a
//!   read-only open (which changes no file) and from a read-write one: the first
//!   `read_committed` use of a segment checks its `.txnindex` against the segment's ABORT
//!   markers and rebuilds it from them when it differs (docs/durability.md, the `.txnindex`
//!   rows), whether it fails the structural checks, was removed, or passes them and is wrong
//!   (another producer, a missing entry, an entry where no ABORT marker is);
//! - after the read-write open rebuilt it, a reopen answers the same.
//!
//! Input: byte 0 picks the segment (its low 4 bits, modulo the segment count) and whether the
//! file is removed instead (bit 7); the rest is the file.

#![no_main]

use libfuzzer_sys::fuzz_target;
use seglog::{
    AbortedTxn, BatchBuilder, Durability, HighWatermarkPolicy, Isolation, Log, LogConfig,
    LogOpenOptions, TxnResult,
};

const T0: i64 = 1_700_000_000_000;

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 300,
        segment_index_bytes: 4096,
        message_timestamp_after_max_ms: i64::MAX,
        message_timestamp_before_max_ms: i64::MAX,
        ..LogConfig::default()
    }
}

fn txn_batch(producer_id: i64, sequence: i32, i: i64) -> seglog::Bytes {
    let mut builder = BatchBuilder::new(0)
        .producer(producer_id, 0, sequence)
        .transactional(true);
    builder.append(T0 + i, Some(&[i as u8]), Some(&[i as u8; 30]), &[]);
    builder.build().expect("build")
}

struct Template {
    dir: std::path::PathBuf,
    bases: Vec<i64>,
    all: Vec<i64>,
    committed: Vec<i64>,
    _tmp: tempfile::TempDir,
}

fn offsets(log: &Log, isolation: Isolation) -> Vec<i64> {
    log.owned_reader(0, isolation)
        .until_caught_up()
        .map(|r| r.expect("every record reads back").record.offset)
        .collect()
}

/// Producers 5 and 6 interleave transactions over several segments; every second one of
/// each is aborted, so several segments hold ABORT markers and `.txnindex` entries.
fn template() -> &'static Template {
    static TEMPLATE: std::sync::OnceLock<Template> = std::sync::OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let tmp = tempfile::tempdir().expect("a temp dir");
        let dir = tmp.path().join("t-0");
        let log = Log::open(&dir, config()).expect("open a fresh log");
        let mut sequences = [0i32; 2];
        for round in 0..6i64 {
            for (slot, producer_id) in [5i64, 6].into_iter().enumerate() {
                for _ in 0..2 {
                    let batch = txn_batch(producer_id, sequences[slot], round);
                    log.append(&batch).expect("append");
                    sequences[slot] += 1;
                }
            }
            for producer_id in [5i64, 6] {
                let result = if (round + producer_id) % 2 == 0 {
                    TxnResult::Abort
                } else {
                    TxnResult::Commit
                };
                log.write_txn_marker(producer_id, 0, 0, result, None, Durability::PageCache)
                    .expect("marker");
            }
        }
        log.set_high_watermark(log.log_end_offset())
            .expect("high watermark");
        let all = offsets(&log, Isolation::LogEnd);
        let committed = offsets(&log, Isolation::ReadCommitted);
        assert!(committed.len() < all.len(), "the template aborts nothing");
        let bases = log.segments().iter().map(|s| s.base_offset).collect();
        log.close().expect("close");
        Template {
            dir,
            bases,
            all,
            committed,
            _tmp: tmp,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, file)) = data.split_first() else {
        return;
    };
    for (i, chunk) in file.chunks_exact(AbortedTxn::SIZE).enumerate() {
        let decoded = seglog::decode_txn_index(chunk);
        if i16::from_be_bytes([chunk[0], chunk[1]]) == AbortedTxn::CURRENT_VERSION {
            let entry = decoded.expect("a version 0 entry decodes")[0];
            assert_eq!(&entry.encode()[..], chunk, "entry {i} does not round trip");
        }
    }

    let template = template();
    let tmp = tempfile::tempdir().expect("a temp dir");
    let dir = tmp.path().join("t-0");
    std::fs::create_dir(&dir).expect("mkdir");
    for entry in std::fs::read_dir(&template.dir).expect("list the template") {
        let entry = entry.expect("list the template");
        std::fs::copy(entry.path(), dir.join(entry.file_name())).expect("copy");
    }
    let base = template.bases[usize::from(pick & 0x0f) % template.bases.len()];
    let path = dir.join(format!("{base:020}.txnindex"));
    if pick & 0x80 != 0 {
        let _ = std::fs::remove_file(&path);
    } else {
        std::fs::write(&path, file).expect("write the .txnindex");
    }

    let before = std::fs::read(&path).ok();
    let read_only = Log::open_with(
        &dir,
        config(),
        LogOpenOptions {
            read_only: true,
            high_watermark: HighWatermarkPolicy::LogEnd,
            ..LogOpenOptions::default()
        },
    )
    .expect("a read-only open takes whatever its .txnindex holds");
    assert_eq!(
        committed(&read_only),
        template.committed,
        "read-only, segment {base}"
    );
    drop(read_only);
    assert_eq!(
        std::fs::read(&path).ok(),
        before,
        "a read-only open wrote the .txnindex"
    );
    for reopen in [false, true] {
        let log = Log::open(&dir, config()).expect("the log opens whatever its .txnindex holds");
        log.set_high_watermark(log.log_end_offset())
            .expect("high watermark");
        assert_eq!(
            offsets(&log, Isolation::LogEnd),
            template.all,
            "records lost"
        );
        assert_eq!(
            committed(&log),
            template.committed,
            "read_committed of segment {base}'s .txnindex, reopened {reopen}"
        );
        log.close().expect("close");
    }
});

/// The `read_committed` answer: every record's offset, failing on any error (a typed error
/// is no answer: the index is rebuilt instead).
fn committed(log: &Log) -> Vec<i64> {
    log.owned_reader(0, Isolation::ReadCommitted)
        .until_caught_up()
        .map(|r| r.expect("read_committed answers").record.offset)
        .collect()
}
