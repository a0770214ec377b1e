//! The log-level halves of the fuzz targets that fuzz a parser, the readers or the swap
//! decision in memory: each installs its
//! input (in the target's input format) in a copy of a small closed log built once per
//! process and reopens it, checking what only a log can show. They run here, on stable, over
//! the same seeds and mutations as the targets' in-memory bodies (a libFuzzer run of these
//! would do about a hundred executions a second: the copy, the open and the close cost
//! several file operations and fsyncs).

use seglog::{
    BatchBuilder, CLEAN_SHUTDOWN_FILE, Durability, HighWatermarkPolicy, Isolation,
    LEADER_EPOCH_CHECKPOINT, Log, LogConfig, LogOpenOptions, ProducerSnapshot, ProducerStateEntry,
    TxnResult,
};
use seglog_reliability::fuzz_support::{TemplateLog, fix_snapshot_crc};

/// The log-level body of a target, if it has one.
pub fn body(target: &str) -> Option<fn(&[u8])> {
    Some(match target {
        "producer_snapshot" => producer_snapshot,
        "txn_index" => txn_index,
        "leader_epoch_checkpoint" => leader_epoch_checkpoint,
        "record_readers" => record_readers,
        "swap_recovery" => swap_recovery,
        _ => return None,
    })
}

fn config(segment_bytes: i32) -> LogConfig {
    LogConfig {
        segment_bytes,
        segment_index_bytes: 4096,
        message_timestamp_after_max_ms: i64::MAX,
        message_timestamp_before_max_ms: i64::MAX,
        ..LogConfig::default()
    }
}

fn io(e: seglog::Error) -> std::io::Error {
    std::io::Error::other(e)
}

/// The template's `(offset)` of every record, read back.
fn offsets(log: &Log, isolation: Isolation) -> Vec<i64> {
    log.owned_reader(0, isolation)
        .until_caught_up()
        .map(|r| r.expect("every record reads back").record.offset)
        .collect()
}

mod snapshot {
    use super::*;

    /// Now, so that no producer of the template expires (`producer.id.expiration.ms`).
    pub fn t0() -> i64 {
        static T0: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
        *T0.get_or_init(|| {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
            now.expect("a clock after 1970").as_millis() as i64
        })
    }

    pub fn batch(producer: Option<(i64, i16, i32)>, transactional: bool, i: i64) -> seglog::Bytes {
        let mut builder = BatchBuilder::new(0);
        if let Some((id, epoch, sequence)) = producer {
            builder = builder
                .producer(id, epoch, sequence)
                .transactional(transactional);
        }
        builder.append(t0() + i, Some(&[i as u8]), Some(&[i as u8; 40]), &[]);
        builder.build().expect("build")
    }

    /// What a producer's state answers: id, epoch, coordinator epoch, open transaction,
    /// last sequence and last offset.
    pub type Observed = (i64, i16, i32, Option<i64>, i32, i64);

    pub fn observed(producers: Vec<ProducerStateEntry>) -> Vec<Observed> {
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

    pub struct Template {
        pub log: TemplateLog,
        pub end: i64,
        pub offsets: Vec<i64>,
        pub producers: Vec<Observed>,
    }

    /// An idempotent producer (id 7), two transactions of producer 9 (one aborted, one
    /// committed), plain batches between them, over several segments; closed cleanly (the
    /// close writes the snapshot at the log end).
    pub fn template() -> &'static Template {
        static TEMPLATE: std::sync::OnceLock<Template> = std::sync::OnceLock::new();
        TEMPLATE.get_or_init(|| {
            let mut end = 0;
            let mut all = Vec::new();
            let log = TemplateLog::build(|dir| {
                let log = Log::open(dir, config(400)).map_err(io)?;
                let mut i = 0;
                let mut next = || {
                    i += 1;
                    i
                };
                for sequence in 0..3 {
                    log.append(&batch(Some((7, 0, sequence)), false, next()))
                        .map_err(io)?;
                }
                log.append(&batch(Some((9, 1, 0)), true, next()))
                    .map_err(io)?;
                log.append(&batch(None, false, next())).map_err(io)?;
                log.write_txn_marker(9, 1, 0, TxnResult::Abort, None, Durability::PageCache)
                    .map_err(io)?;
                log.append(&batch(Some((9, 1, 1)), true, next()))
                    .map_err(io)?;
                log.append(&batch(Some((7, 0, 3)), false, next()))
                    .map_err(io)?;
                log.write_txn_marker(9, 1, 0, TxnResult::Commit, None, Durability::PageCache)
                    .map_err(io)?;
                log.append(&batch(None, false, next())).map_err(io)?;
                end = log.log_end_offset();
                all = offsets(&log, Isolation::LogEnd);
                log.close().map_err(io)
            })
            .expect("build the template");
            // As a reopen with the intact snapshot loads it.
            let reopened = Log::open(log.dir(), config(400)).expect("reopen the template");
            let producers = observed(reopened.producer_states());
            assert_eq!(producers.len(), 2, "the template has two producers");
            reopened.close().expect("close");
            Template {
                log,
                end,
                offsets: all,
                producers,
            }
        })
    }
}

/// `producer_snapshot`: the input (flags byte, then the file) as the latest snapshot of a log
/// with idempotent and transactional producers, reopened. The log opens whatever the snapshot
/// holds and serves every record it had; a snapshot that does not decode leaves the producer
/// state as the log rebuilds it from the segments (each producer's epoch, coordinator epoch,
/// open transaction, last sequence and last offset as with the intact snapshot); the
/// reopened log takes a plain append and closes again.
pub fn producer_snapshot(data: &[u8]) {
    use snapshot::{batch, observed, template};
    let Some((&flags, file)) = data.split_first() else {
        return;
    };
    let mut file = file.to_vec();
    if flags & 1 == 1 {
        fix_snapshot_crc(&mut file);
    }
    let decoded = ProducerSnapshot::decode(&file);
    let template = template();
    let (_tmp, dir) = template.log.copy().expect("copy the template");
    let snapshot = dir.join(format!("{:020}.snapshot", template.end));
    assert!(
        snapshot.exists(),
        "the close left no snapshot at the log end"
    );
    std::fs::write(&snapshot, &file).expect("write the snapshot");

    let log = Log::open(&dir, config(400)).expect("the log opens whatever its snapshot holds");
    assert_eq!(log.log_end_offset(), template.end, "records lost");
    assert_eq!(
        offsets(&log, Isolation::LogEnd),
        template.offsets,
        "records lost or changed"
    );
    if decoded.is_err() {
        assert_eq!(
            observed(log.producer_states()),
            template.producers,
            "a skipped snapshot changed the rebuilt producer state"
        );
    }
    log.append(&batch(None, false, 100))
        .expect("a plain append after the reopen");
    log.close().expect("close");
    drop(log);
    let log = Log::open(&dir, config(400)).expect("reopen");
    assert_eq!(log.log_end_offset(), template.end + 1);
}

struct TxnTemplate {
    log: TemplateLog,
    bases: Vec<i64>,
    all: Vec<i64>,
    committed: Vec<i64>,
}

/// Producers 5 and 6 interleave transactions over several segments; every second one of
/// each is aborted, so several segments hold ABORT markers and `.txnindex` entries.
fn txn_template() -> &'static TxnTemplate {
    static TEMPLATE: std::sync::OnceLock<TxnTemplate> = std::sync::OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let txn_batch = |producer_id: i64, sequence: i32, i: i64| {
            let mut builder = BatchBuilder::new(0)
                .producer(producer_id, 0, sequence)
                .transactional(true);
            builder.append(
                1_700_000_000_000 + i,
                Some(&[i as u8]),
                Some(&[i as u8; 30]),
                &[],
            );
            builder.build().expect("build")
        };
        let (mut bases, mut all, mut committed) = (Vec::new(), Vec::new(), Vec::new());
        let log = TemplateLog::build(|dir| {
            let log = Log::open(dir, config(300)).map_err(io)?;
            let mut sequences = [0i32; 2];
            for round in 0..6i64 {
                for (slot, producer_id) in [5i64, 6].into_iter().enumerate() {
                    for _ in 0..2 {
                        log.append(&txn_batch(producer_id, sequences[slot], round))
                            .map_err(io)?;
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
                        .map_err(io)?;
                }
            }
            log.set_high_watermark(log.log_end_offset()).map_err(io)?;
            all = offsets(&log, Isolation::LogEnd);
            committed = offsets(&log, Isolation::ReadCommitted);
            bases = log.segments().iter().map(|s| s.base_offset).collect();
            log.close().map_err(io)
        })
        .expect("build the template");
        assert!(committed.len() < all.len(), "the template aborts nothing");
        TxnTemplate {
            log,
            bases,
            all,
            committed,
        }
    })
}

/// `txn_index`: the input (byte 0 picks the segment, low 4 bits modulo the segment count, and
/// whether its file is removed instead, bit 7; the rest is the file) as one segment's
/// `.txnindex` in a log with committed and aborted transactions of two producers, reopened
/// after its clean shutdown and read `read_committed`. The log opens whatever the file holds
/// and serves every record it had; `read_committed` always answers exactly what the segments'
/// markers give (aborted records hidden, committed ones shown), never an error, from a
/// read-only open (which changes no file) and from a read-write one: the first
/// `read_committed` use of a segment checks its `.txnindex` against the segment's ABORT
/// markers and rebuilds it from them when it differs (docs/durability.md, the `.txnindex`
/// rows), whether it fails the structural checks, was removed, or passes them and is wrong.
/// After the read-write open rebuilt it, a reopen answers the same.
pub fn txn_index(data: &[u8]) {
    let Some((&pick, file)) = data.split_first() else {
        return;
    };
    let template = txn_template();
    let (_tmp, dir) = template.log.copy().expect("copy the template");
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
        config(300),
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
        let log = Log::open(&dir, config(300)).expect("the log opens whatever its .txnindex holds");
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
}

/// The `read_committed` answer: every record's offset, failing on any error (a typed error
/// is no answer: the index is rebuilt instead).
fn committed(log: &Log) -> Vec<i64> {
    log.owned_reader(0, Isolation::ReadCommitted)
        .until_caught_up()
        .map(|r| r.expect("read_committed answers").record.offset)
        .collect()
}

struct EpochTemplate {
    log: TemplateLog,
    /// Every record's offset with its batch's leader epoch.
    records: Vec<(i64, i32)>,
}

fn epoch_records(log: &Log) -> Vec<(i64, i32)> {
    log.owned_reader(0, Isolation::LogEnd)
        .until_caught_up()
        .map(|r| {
            let r = r.expect("every record reads back");
            (r.record.offset, r.batch.partition_leader_epoch)
        })
        .collect()
}

/// A log whose batches carry leader epochs 0, 2 and 5 (four one-record batches each).
fn epoch_template() -> &'static EpochTemplate {
    static TEMPLATE: std::sync::OnceLock<EpochTemplate> = std::sync::OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let mut records = Vec::new();
        let log = TemplateLog::build(|dir| {
            let log = Log::open(dir, config(300)).map_err(io)?;
            for (i, epoch) in [0, 2, 5].into_iter().enumerate() {
                for j in 0..4i64 {
                    let mut builder = BatchBuilder::new(0);
                    builder.append(1_700_000_000_000 + j, None, Some(&[i as u8; 40]), &[]);
                    let batch = builder.build().expect("build");
                    log.append_as_leader(&batch, epoch, Durability::PageCache)
                        .map_err(io)?;
                }
            }
            records = epoch_records(&log);
            assert_eq!(log.leader_epochs().len(), 3, "the template has its epochs");
            log.close().map_err(io)
        })
        .expect("build the template");
        EpochTemplate { log, records }
    })
}

/// `leader_epoch_checkpoint`: the input (byte 0 bit 0 removes the clean-shutdown marker, an
/// unclean open; the rest is the file) as the checkpoint of a log whose batches carry epochs
/// 0, 2 and 5, reopened. The log opens whatever the file holds and serves every record it
/// had; the reopened cache increases, every start offset but the first inside the log; a
/// checkpoint that does not parse is rebuilt from the batches.
pub fn leader_epoch_checkpoint(data: &[u8]) {
    let Some((&flags, file)) = data.split_first() else {
        return;
    };
    let parsed = std::str::from_utf8(file)
        .ok()
        .and_then(|text| seglog::parse_leader_epoch_checkpoint(text).ok());
    let template = epoch_template();
    let (_tmp, dir) = template.log.copy().expect("copy the template");
    std::fs::write(dir.join(LEADER_EPOCH_CHECKPOINT), file).expect("write the checkpoint");
    if flags & 1 == 1 {
        std::fs::remove_file(dir.join(CLEAN_SHUTDOWN_FILE)).expect("remove the marker");
    }

    let log = Log::open(&dir, config(300)).expect("the log opens whatever its checkpoint holds");
    assert_eq!(
        epoch_records(&log),
        template.records,
        "records lost or changed"
    );
    let epochs = log.leader_epochs();
    for pair in epochs.windows(2) {
        assert!(
            pair[0].0 < pair[1].0 && pair[0].1 < pair[1].1,
            "the cache does not increase: {epochs:?}"
        );
    }
    let (start, end) = (log.log_start_offset(), log.log_end_offset());
    for &(epoch, start_offset) in &epochs {
        assert!(
            (start..=end).contains(&start_offset) || epochs.first() == Some(&(epoch, start_offset)),
            "entry ({epoch}, {start_offset}) outside the log [{start}, {end}]: {epochs:?}"
        );
    }
    if parsed.is_some() {
        return;
    }
    let cache = log.leader_epoch_cache();
    for &(offset, epoch) in &template.records {
        assert_eq!(
            cache.epoch_for_offset(offset),
            Some(epoch),
            "offset {offset} of epoch {epoch}: the cache says otherwise ({epochs:?})"
        );
    }
}

/// offset, key, value.
type Seen = (i64, Option<Vec<u8>>, Option<Vec<u8>>);

struct ReadersTemplate {
    log: TemplateLog,
    bases: Vec<i64>,
    records: Vec<Seen>,
}

/// The owned reader's records until it ends or fails.
fn owned_records(log: &Log, isolation: Isolation) -> (Vec<Seen>, bool) {
    let mut out = Vec::new();
    let mut reader = log.owned_reader(0, isolation);
    for record in reader.until_caught_up() {
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
fn borrowed_records(log: &Log, isolation: Isolation) -> (Vec<Seen>, bool) {
    let mut out = Vec::new();
    let mut reader = log.reader(0, isolation);
    let result = reader.poll::<seglog::Error>(|_, record| {
        out.push((
            record.offset(),
            record.key().map(<[u8]>::to_vec),
            record.value().map(<[u8]>::to_vec),
        ));
        Ok(std::ops::ControlFlow::Continue(()))
    });
    (out, result.is_err())
}

/// Plain, idempotent and transactional batches in three codecs over several segments, an
/// aborted and a committed transaction.
fn readers_template() -> &'static ReadersTemplate {
    static TEMPLATE: std::sync::OnceLock<ReadersTemplate> = std::sync::OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let (mut bases, mut records) = (Vec::new(), Vec::new());
        let log = TemplateLog::build(|dir| {
            let log = Log::open(dir, config(500)).map_err(io)?;
            let codecs = [
                seglog::Compression::None,
                seglog::Compression::Gzip,
                seglog::Compression::Lz4,
            ];
            for i in 0..12i64 {
                let mut builder = BatchBuilder::new(0).compression(codecs[i as usize % 3]);
                if i % 4 == 1 {
                    builder = builder.producer(3, 0, (i / 4) as i32 * 3);
                } else if i % 4 == 3 {
                    builder = builder
                        .producer(4, 0, (i / 4) as i32 * 3)
                        .transactional(true);
                }
                for j in 0..3 {
                    let key = [i as u8, j];
                    builder.append(1_700_000_000_000 + i, Some(&key), Some(&[j; 20]), &[]);
                }
                log.append(&builder.build().expect("build")).map_err(io)?;
                if i % 4 == 3 {
                    let result = if i % 8 == 3 {
                        TxnResult::Abort
                    } else {
                        TxnResult::Commit
                    };
                    log.write_txn_marker(4, 0, 0, result, None, Durability::PageCache)
                        .map_err(io)?;
                }
            }
            let (all, failed) = owned_records(&log, Isolation::LogEnd);
            assert!(!failed);
            records = all;
            bases = log.segments().iter().map(|s| s.base_offset).collect();
            log.close().map_err(io)
        })
        .expect("build the template");
        assert!(bases.len() >= 4, "the template has too few segments");
        ReadersTemplate {
            log,
            bases,
            records,
        }
    })
}

/// `record_readers`: the input (byte 0 picks the segment, bits 0-1: first, second, middle or
/// last; recomputes the v2 CRCs, bit 2; an unclean shutdown, bit 3; the isolation, bits 4-5;
/// the rest is the `.log`) as one segment's `.log` in a small closed log, reopened and read
/// by the borrowed and the owned reader. The log opens or fails with an error; both readers
/// return the same records and both fail or neither; offsets strictly increase; every record
/// below the replaced segment is served as it was written.
pub fn record_readers(data: &[u8]) {
    let Some((&pick, file)) = data.split_first() else {
        return;
    };
    let mut file = file.to_vec();
    if pick & 0b100 != 0 {
        seglog_reliability::fuzz_support::fix_v2_crcs(&mut file);
    }
    let template = readers_template();
    let (_tmp, dir) = template.log.copy().expect("copy the template");
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

    let Ok(log) = Log::open(&dir, config(500)) else {
        return;
    };
    if log.set_high_watermark(log.log_end_offset()).is_err() {
        return;
    }
    let (owned, owned_failed) = owned_records(&log, isolation);
    let (borrowed, borrowed_failed) = borrowed_records(&log, isolation);
    assert_eq!(owned, borrowed, "the two readers disagree");
    assert_eq!(
        owned_failed, borrowed_failed,
        "one reader failed, the other did not"
    );
    for pair in owned.windows(2) {
        assert!(pair[0].0 < pair[1].0, "offsets do not increase: {pair:?}");
    }
    if isolation == Isolation::LogEnd {
        let below = |records: &[Seen]| -> Vec<Seen> {
            records.iter().filter(|r| r.0 < base).cloned().collect()
        };
        assert_eq!(
            below(&owned),
            below(&template.records),
            "records below the replaced segment {base} changed"
        );
    }
}

struct SwapTemplate {
    log: TemplateLog,
    bases: Vec<i64>,
    end: i64,
    records: Vec<Seen>,
}

fn swap_config() -> LogConfig {
    LogConfig {
        cleanup_policy: seglog::CleanupPolicy::Compact,
        file_delete_delay_ms: 0,
        ..config(300)
    }
}

fn served(log: &Log) -> Vec<Seen> {
    owned_records(log, Isolation::LogEnd).0
}

/// 60 updates of 8 keys (every seventh a tombstone), cleaned once, then 16 more updates.
fn swap_template() -> &'static SwapTemplate {
    static TEMPLATE: std::sync::OnceLock<SwapTemplate> = std::sync::OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let (mut bases, mut end, mut records) = (Vec::new(), 0, Vec::new());
        let log = TemplateLog::build(|dir| {
            // The cleaner cleans below the high watermark: a standalone log's is its end.
            let options = seglog::LogOpenOptions {
                high_watermark: seglog::HighWatermarkPolicy::LogEnd,
                ..seglog::LogOpenOptions::default()
            };
            let log = Log::open_with(dir, swap_config(), options).map_err(io)?;
            let append = |i: i64| {
                let mut builder = BatchBuilder::new(0);
                let key = [b'k', (i % 8) as u8];
                let value = [i as u8; 24];
                let value = (i % 7 != 6).then_some(&value[..]);
                builder.append(1_700_000_000_000 + i, Some(&key), value, &[]);
                log.append(&builder.build().expect("build"))
                    .expect("append");
            };
            (0..60).for_each(append);
            log.roll().map_err(io)?;
            let cleaned = log.clean_at(1_700_000_000_000).map_err(io)?;
            assert!(cleaned.is_some(), "the template was not cleaned");
            (60..76).for_each(append);
            records = served(&log);
            bases = log.segments().iter().map(|s| s.base_offset).collect();
            end = log.log_end_offset();
            log.close().map_err(io)
        })
        .expect("build the template");
        SwapTemplate {
            log,
            bases,
            end,
            records,
        }
    })
}

fn check_swap(log: &Log, template: &SwapTemplate, what: &str) -> Vec<Seen> {
    assert_eq!(
        log.log_end_offset(),
        template.end,
        "{what}: the log end moved"
    );
    let served = served(log);
    for pair in served.windows(2) {
        assert!(
            pair[0].0 < pair[1].0,
            "{what}: offsets do not increase: {pair:?}"
        );
    }
    for record in &served {
        assert!(
            template.records.contains(record),
            "{what}: a record the log never held is served: {record:?}"
        );
    }
    let mut latest: std::collections::BTreeMap<&Option<Vec<u8>>, &Seen> = Default::default();
    for record in &template.records {
        latest.insert(&record.1, record);
    }
    for (key, record) in latest {
        assert!(
            record.2.is_none() || served.contains(record),
            "{what}: the latest record of key {key:?} ({record:?}) is lost"
        );
    }
    served
}

/// `swap_recovery`: the input (the `swap_recovery` target's format: where, which kind, how,
/// which segment to copy, then the bytes) as a leftover file beside a small closed, compacted
/// log cleaned once, opened read-only and read-write. Both opens succeed and serve the same
/// records; nothing intact is lost (every key's latest record is still served, the log end
/// does not move); nothing foreign is served; offsets strictly increase.
pub fn swap_recovery(data: &[u8]) {
    let [at, kind, how, which, bytes @ ..] = data else {
        return;
    };
    let template = swap_template();
    let (_tmp, dir) = template.log.copy().expect("copy the template");
    let mut candidates = Vec::new();
    for &base in &template.bases {
        candidates.extend([base, base + 1]);
    }
    candidates.extend([template.end, template.end + 5]);
    let base = candidates[usize::from(*at) % candidates.len()];
    let suffix = [
        "log.swap",
        "index.swap",
        "timeindex.swap",
        "txnindex.swap",
        "log.cleaned",
        "log.deleted",
    ][usize::from(*kind) % 6];
    let mut content = Vec::new();
    if how & 0b10 != 0 {
        let copied = template.bases[usize::from(*which) % template.bases.len()];
        content = std::fs::read(dir.join(format!("{copied:020}.log"))).expect("read a segment");
    }
    let mut tail = bytes.to_vec();
    if how & 0b01 != 0 {
        seglog_reliability::fuzz_support::fix_v2_crcs(&mut tail);
    }
    content.extend(tail);
    std::fs::write(dir.join(format!("{base:020}.{suffix}")), &content).expect("write");

    let read_only = {
        let log = Log::open_read_only(&dir, swap_config()).expect("a read-only open");
        check_swap(&log, template, "read-only")
    };
    let log = Log::open(&dir, swap_config()).expect("a read-write open");
    let read_write = check_swap(&log, template, "read-write");
    assert_eq!(
        read_only, read_write,
        "the read-only open served another log"
    );
}
