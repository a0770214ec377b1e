//! Fuzzes the record readers over hostile batches: arbitrary bytes as one segment's `.log` in
//! a small closed log (plain, idempotent and transactional batches, an aborted transaction),
//! reopened after a clean or an unclean shutdown and read by the borrowed reader
//! (`RecordReader::poll`) and the owned one (`OwnedRecordReader`) in every isolation.
//!
//! Properties, besides "never panics":
//! - the log opens or fails with an error (never a panic or a signal);
//! - both readers return the same records (offset, key, value) and both stop with an error
//!   or both do not;
//! - offsets strictly increase;
//! - every record below the replaced segment is served as it was written.
//!
//! Input: byte 0 picks the segment (bits 0-1: first, second, middle or last), whether the
//! CRCs of the v2 batches in the bytes are recomputed (bit 2, so the fuzzer reaches the
//! records), an unclean shutdown (bit 3) and the isolation (bits 4-5); the rest is the `.log`.

#![no_main]

use std::ops::ControlFlow;

use libfuzzer_sys::fuzz_target;
use seglog::{
    BatchBuilder, CLEAN_SHUTDOWN_FILE, Compression, Durability, Isolation, Log, LogConfig,
    TxnResult,
};

const T0: i64 = 1_700_000_000_000;

type Seen = (i64, Option<Vec<u8>>, Option<Vec<u8>>);

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 500,
        segment_index_bytes: 4096,
        message_timestamp_after_max_ms: i64::MAX,
        message_timestamp_before_max_ms: i64::MAX,
        ..LogConfig::default()
    }
}

struct Template {
    dir: std::path::PathBuf,
    bases: Vec<i64>,
    records: Vec<Seen>,
    _tmp: tempfile::TempDir,
}

/// Recomputes the CRC-32C of every whole v2 batch in `log`, walking the length fields.
fn fix_crcs(log: &mut [u8]) {
    let mut position = 0usize;
    while position + 61 <= log.len() {
        let length = i32::from_be_bytes(log[position + 8..position + 12].try_into().unwrap());
        let Ok(length) = usize::try_from(length) else {
            return;
        };
        let end = position + 12 + length;
        if length < 49 || end > log.len() {
            return;
        }
        if log[position + 16] == 2 {
            let crc = seglog_records::crc32c(&log[position + 21..end]);
            log[position + 17..position + 21].copy_from_slice(&crc.to_be_bytes());
        }
        position = end;
    }
}

/// The owned reader's records until it ends or fails.
fn owned(log: &Log, isolation: Isolation) -> (Vec<Seen>, bool) {
    let mut out = Vec::new();
    for record in log.owned_reader(0, isolation).until_caught_up() {
        match record {
            Ok(r) => out.push((
                r.record.offset,
                r.record.key.map(|k| k.to_vec()),
                r.record.value.map(|v| v.to_vec()),
            )),
            Err(_) => return (out, true),
        }
    }
    (out, false)
}

/// The borrowed reader's records until it catches up or fails.
fn borrowed(log: &Log, isolation: Isolation) -> (Vec<Seen>, bool) {
    let mut out = Vec::new();
    let mut reader = log.reader(0, isolation);
    let result = reader.poll::<seglog::Error>(|_, record| {
        out.push((
            record.offset(),
            record.key().map(<[u8]>::to_vec),
            record.value().map(<[u8]>::to_vec),
        ));
        Ok(ControlFlow::Continue(()))
    });
    let failed = result.is_err();
    (out, failed)
}

fn template() -> &'static Template {
    static TEMPLATE: std::sync::OnceLock<Template> = std::sync::OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let tmp = tempfile::tempdir().expect("a temp dir");
        let dir = tmp.path().join("t-0");
        let log = Log::open(&dir, config()).expect("open a fresh log");
        let codecs = [Compression::None, Compression::Gzip, Compression::Lz4];
        for i in 0..12i64 {
            let mut builder = BatchBuilder::new(0).compression(codecs[i as usize % 3]);
            if i % 4 == 1 {
                builder = builder.producer(3, 0, (i / 4) as i32 * 3);
            } else if i % 4 == 3 {
                builder = builder.producer(4, 0, (i / 4) as i32 * 3).transactional(true);
            }
            for j in 0..3 {
                let key = [i as u8, j];
                builder.append(T0 + i, Some(&key), Some(&[j; 20]), &[]);
            }
            log.append(&builder.build().expect("build")).expect("append");
            if i % 4 == 3 {
                let result = if i % 8 == 3 {
                    TxnResult::Abort
                } else {
                    TxnResult::Commit
                };
                log.write_txn_marker(4, 0, 0, result, None, Durability::PageCache)
                    .expect("marker");
            }
        }
        let (records, failed) = owned(&log, Isolation::LogEnd);
        assert!(!failed);
        let bases: Vec<i64> = log.segments().iter().map(|s| s.base_offset).collect();
        assert!(bases.len() >= 4, "the template has too few segments");
        log.close().expect("close");
        Template {
            dir,
            bases,
            records,
            _tmp: tmp,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, file)) = data.split_first() else {
        return;
    };
    let mut file = file.to_vec();
    if pick & 0b100 != 0 {
        fix_crcs(&mut file);
    }
    let template = template();
    let tmp = tempfile::tempdir().expect("a temp dir");
    let dir = tmp.path().join("t-0");
    std::fs::create_dir(&dir).expect("mkdir");
    for entry in std::fs::read_dir(&template.dir).expect("list the template") {
        let entry = entry.expect("list the template");
        std::fs::copy(entry.path(), dir.join(entry.file_name())).expect("copy");
    }
    let n = template.bases.len();
    let slot = [0, 1, n / 2, n - 1][usize::from(pick & 0b11)];
    let base = template.bases[slot];
    std::fs::write(dir.join(format!("{base:020}.log")), &file).expect("write the .log");
    if pick & 0b1000 != 0 {
        std::fs::remove_file(dir.join(CLEAN_SHUTDOWN_FILE)).expect("remove the marker");
    }
    let isolation = [
        Isolation::LogEnd,
        Isolation::LogEnd,
        Isolation::ReadCommitted,
        Isolation::ReadCommitted,
    ][usize::from(pick >> 4 & 0b11)];

    let Ok(log) = Log::open(&dir, config()) else {
        return;
    };
    if log.set_high_watermark(log.log_end_offset()).is_err() {
        return;
    }
    let (owned_records, owned_failed) = owned(&log, isolation);
    let (borrowed_records, borrowed_failed) = borrowed(&log, isolation);
    assert_eq!(owned_records, borrowed_records, "the two readers disagree");
    assert_eq!(owned_failed, borrowed_failed, "one reader failed, the other did not");
    for pair in owned_records.windows(2) {
        assert!(pair[0].0 < pair[1].0, "offsets do not increase: {pair:?}");
    }
    if isolation == Isolation::LogEnd {
        let below = |records: &[Seen]| -> Vec<Seen> {
            records.iter().filter(|r| r.0 < base).cloned().collect()
        };
        assert_eq!(
            below(&owned_records),
            below(&template.records),
            "records below the replaced segment {base} changed"
        );
    }
});
