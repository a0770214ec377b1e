//! Which records of a batch the cleaner keeps, and the bytes it writes for them (Kafka's
//! `Cleaner.cleanInto` filter over `MemoryRecords.filterTo`).
//!
//! Per batch: an aborted transaction's data may go, a marker may go once its transaction's
//! data is gone and its delete horizon passed; a batch is kept (emptied if need be) when it is
//! its producer's last, or the last batch below the high watermark (Kafka 4.4 passes
//! `log.highWatermark()` where 4.0 passed the round's upper bound). Per record: kept if newer than the offset map
//! covers, or if it is its key's latest and either has a value or is a tombstone whose delete
//! horizon has not passed; keyless records go. A v2 batch whose records all stay and that needs
//! no new horizon is copied byte for byte; otherwise it is rebuilt with the same base and last
//! offsets, producer fields, codec, timestamp type and leader epoch, stamped with
//! `deleteHorizonMs = now + delete.retention.ms` the first time it holds a tombstone or a
//! discardable marker (KIP-534). A legacy (v0/v1) set is never copied: whatever is kept of it
//! becomes one v2 batch from its first to its last kept record, in its codec, CreateTime for
//! v0 (LogAppendTime keeps the set's time), no producer, leader epoch -1, and a horizon when it
//! keeps a tombstone (Kafka 4.4's `MemoryRecords.filterTo` / `buildRetainedRecordsInto`).

use std::collections::HashMap;
use std::path::Path;

use bytes::Bytes;
use seglog_records::{BatchBuilder, BatchRef, MAGIC_V2, Record, TimestampType};

use super::offset_map::{OffsetMap, hash_key};
use super::txn::{CleanedTxns, LastRecord, damaged};
use crate::Result;

/// The rules of one round.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rules<'a> {
    pub(crate) map: &'a OffsetMap,
    pub(crate) now_ms: i64,
    pub(crate) delete_retention_ms: i64,
    pub(crate) last_records: &'a HashMap<i64, LastRecord>,
    /// The log's high watermark when the segment being cleaned was started (Kafka reads
    /// `log.highWatermark()` per segment): the batch ending just below it is kept.
    pub(crate) high_watermark: i64,
    /// Decompression bound per batch.
    pub(crate) max_decompressed_bytes: usize,
}

/// What becomes of one batch.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Kept {
    /// Nothing of it is written.
    Dropped,
    /// Written as it is.
    Original,
    /// Written as these bytes (fewer records, a new horizon, or an empty header).
    Rewritten(Bytes),
}

/// The outcome for one batch, with the records it held and kept.
#[derive(Debug)]
pub(crate) struct Filtered {
    pub(crate) kept: Kept,
    pub(crate) records_read: u64,
    pub(crate) records_kept: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum BatchRetention {
    Delete,
    RetainEmpty,
    DeleteEmpty,
}

/// Filters `batch` (CRC already checked), as Kafka's `checkBatchRetention` and
/// `shouldRetainRecord`. `retain_legacy_deletes` is Kafka's rule for tombstones of v0/v1 messages (no horizon field:
/// kept while their segment is younger than the legacy delete horizon).
///
/// # Errors
/// [`crate::Error::DamagedBatch`] when its records do not decode.
pub(crate) fn filter_batch(
    path: &Path,
    batch: &BatchRef<'_>,
    rules: &Rules<'_>,
    txns: &mut CleanedTxns,
    retain_legacy_deletes: bool,
) -> Result<Filtered> {
    let header = batch.header();
    let v2 = header.magic == MAGIC_V2;
    let can_discard = if header.is_control {
        let control = batch
            .control_record()
            .map_err(|e| damaged(path, e))?
            .map(|c| c.control_type);
        txns.on_control(header, control)
    } else {
        txns.on_batch(header)
    };
    let discard_records = if header.is_control {
        can_discard
            && header
                .delete_horizon_ms()
                .is_some_and(|horizon| horizon <= rules.now_ms)
    } else {
        can_discard
    };
    let last_of_producer = header.producer_id >= 0
        && rules
            .last_records
            .get(&header.producer_id)
            .is_some_and(|last| match last.last_data_offset {
                Some(offset) => header.last_offset == offset,
                None => header.is_control && header.producer_epoch == last.producer_epoch,
            });
    // Kafka keeps a producer's last batch and the batch ending at the high watermark, emptied
    // if need be; every other batch left without records goes.
    let retain_empty = (v2 && last_of_producer) || header.next_offset() == rules.high_watermark;
    let retention = if retain_empty {
        BatchRetention::RetainEmpty
    } else if discard_records {
        BatchRetention::Delete
    } else {
        BatchRetention::DeleteEmpty
    };
    let marker_for_empty_txn = can_discard && header.is_control;
    let mut out = Filtered {
        kept: Kept::Dropped,
        records_read: 0,
        records_kept: 0,
    };
    if retention == BatchRetention::Delete {
        return Ok(out);
    }
    let mut retained: Vec<Record> = Vec::new();
    let mut all_retained = true;
    let mut tombstones = false;
    for record in batch.records(rules.max_decompressed_bytes) {
        let record = record.map_err(|e| damaged(path, e))?;
        out.records_read += 1;
        let keep = if discard_records {
            false
        } else if header.is_control {
            true
        } else {
            retain_record(rules, header, &record, retain_legacy_deletes)
        };
        if keep {
            tombstones |= record.value.is_none();
            retained.push(record);
        } else {
            all_retained = false;
        }
    }
    out.records_kept = retained.len() as u64;
    if !retained.is_empty() {
        // Kafka's `filterTo`: a legacy set has no horizon field (`deleteHorizonMs()` is empty),
        // so kept tombstones of one stamp the v2 batch it becomes; and only a v2 batch is ever
        // copied as it is (`writeOriginalBatch = batch.magic() >= 2`): every legacy set it
        // keeps anything of is written again as v2.
        let needs_horizon =
            (tombstones || marker_for_empty_txn) && header.delete_horizon_ms().is_none();
        out.kept = if v2 && all_retained && !needs_horizon {
            Kept::Original
        } else {
            let horizon = if needs_horizon {
                Some(rules.now_ms.saturating_add(rules.delete_retention_ms))
            } else {
                header.delete_horizon_ms()
            };
            Kept::Rewritten(rebuild(batch, &retained, horizon)?)
        };
    } else if retention == BatchRetention::RetainEmpty {
        out.kept = Kept::Rewritten(empty_shell(batch)?);
    }
    Ok(out)
}

/// Kafka's `shouldRetainRecord`.
fn retain_record(
    rules: &Rules<'_>,
    header: &seglog_records::BatchHeader,
    record: &Record,
    retain_legacy_deletes: bool,
) -> bool {
    if record.offset > rules.map.latest_offset() {
        return true;
    }
    let Some(key) = &record.key else {
        return false;
    };
    let latest = record.offset >= rules.map.get(&hash_key(key));
    let retain_deletes = if header.magic == MAGIC_V2 {
        header
            .delete_horizon_ms()
            .is_none_or(|horizon| rules.now_ms < horizon)
    } else {
        retain_legacy_deletes
    };
    latest && (record.value.is_some() || retain_deletes)
}

/// A v2 batch of `retained` with `batch`'s fields (Kafka's `buildRetainedRecordsInto`); a
/// legacy message set becomes a v2 batch from its first to its last retained offset, as Kafka
/// 4.4's cleaner writes it (a v2 batch keeps its last offset: its producer's sequence ends
/// there).
fn rebuild(batch: &BatchRef<'_>, retained: &[Record], horizon: Option<i64>) -> Result<Bytes> {
    let header = batch.header();
    let (base_offset, last_offset) = match header.base_offset.filter(|_| header.magic == MAGIC_V2) {
        Some(base) => (base, header.last_offset),
        None => (
            retained.first().map_or(header.last_offset, |r| r.offset),
            retained.last().map_or(header.last_offset, |r| r.offset),
        ),
    };
    let mut builder = BatchBuilder::new(base_offset)
        .compression(header.compression)
        .producer(
            header.producer_id,
            header.producer_epoch,
            header.base_sequence,
        )
        .transactional(header.is_transactional)
        .control(header.is_control)
        .partition_leader_epoch(header.partition_leader_epoch)
        .last_offset(last_offset);
    if header.timestamp_type == Some(TimestampType::LogAppendTime) {
        builder = builder.log_append_time(header.max_timestamp_ms);
    }
    if let Some(horizon) = horizon {
        builder = builder.delete_horizon_ms(horizon);
    }
    for record in retained {
        let headers: Vec<(&str, Option<&[u8]>)> = record
            .headers
            .iter()
            .map(|h| (h.key.as_str(), h.value.as_deref()))
            .collect();
        builder.append_with_offset(
            record.offset,
            record.timestamp_ms.unwrap_or(-1),
            record.key.as_deref(),
            record.value.as_deref(),
            &headers,
        )?;
    }
    Ok(builder.build()?)
}

/// The empty header Kafka keeps of a batch it must retain (a legacy message set gets a v2
/// one at its last offset).
fn empty_shell(batch: &BatchRef<'_>) -> Result<Bytes> {
    let mut header = *batch.header();
    if header.magic != MAGIC_V2 {
        header.magic = MAGIC_V2;
        header.base_offset = Some(header.last_offset);
    }
    Ok(BatchBuilder::empty_batch(&header)?)
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    const NOW: i64 = 1_700_000_000_000;

    fn batch(base: i64, records: &[(&str, Option<&str>)]) -> Bytes {
        let mut builder = BatchBuilder::new(base);
        for (key, value) in records {
            builder.append(NOW, Some(key.as_bytes()), value.map(str::as_bytes), &[]);
        }
        builder.build().unwrap()
    }

    fn run(bytes: &Bytes, map: &OffsetMap, now_ms: i64, high_watermark: i64) -> Filtered {
        let last = HashMap::new();
        let rules = Rules {
            map,
            now_ms,
            delete_retention_ms: 1000,
            last_records: &last,
            high_watermark,
            max_decompressed_bytes: 1 << 20,
        };
        let parsed = BatchRef::parse(bytes, 0).unwrap();
        filter_batch(
            Path::new("x.log"),
            &parsed,
            &rules,
            &mut CleanedTxns::default(),
            true,
        )
        .unwrap()
    }

    fn keys(bytes: &Bytes) -> Vec<(i64, String, bool)> {
        let b = BatchRef::parse(bytes, 0).unwrap();
        b.ensure_valid().unwrap();
        b.records(1 << 20)
            .map(|r| {
                let r = r.unwrap();
                let key = String::from_utf8(r.key.unwrap().to_vec()).unwrap();
                (r.offset, key, r.value.is_some())
            })
            .collect()
    }

    #[test]
    fn keeps_latest_per_key_stamps_a_horizon_then_drops_tombstones_after_it() {
        let mut map = OffsetMap::new(1 << 16, 10);
        for (offset, key) in [(0, "a"), (1, "b"), (2, "a"), (3, "c")] {
            map.put(hash_key(key.as_bytes()), offset);
        }
        let bytes = batch(
            0,
            &[
                ("a", Some("1")),
                ("b", None),
                ("a", Some("2")),
                ("c", Some("3")),
            ],
        );
        let out = run(&bytes, &map, NOW, 100);
        let Kept::Rewritten(cleaned) = &out.kept else {
            panic!("{:?}", out.kept)
        };
        assert_eq!((out.records_read, out.records_kept), (4, 3));
        assert_eq!(
            keys(cleaned),
            [
                (1, "b".into(), false),
                (2, "a".into(), true),
                (3, "c".into(), true)
            ]
        );
        let h = *BatchRef::parse(cleaned, 0).unwrap().header();
        assert_eq!(h.delete_horizon_ms(), Some(NOW + 1000));
        assert_eq!((h.base_offset, h.last_offset), (Some(0), 3));
        // Before the horizon the stamped batch is kept as it is; after it the tombstone goes.
        assert_eq!(run(cleaned, &map, NOW + 999, 100).kept, Kept::Original);
        let out = run(cleaned, &map, NOW + 1000, 100);
        let Kept::Rewritten(after) = &out.kept else {
            panic!()
        };
        assert_eq!(keys(after), [(2, "a".into(), true), (3, "c".into(), true)]);
    }

    #[test]
    fn records_beyond_the_map_stay_and_empty_batches_go_unless_they_end_at_the_high_watermark() {
        let mut map = OffsetMap::new(1 << 16, 10);
        map.put(hash_key(b"a"), 5);
        let old = batch(0, &[("a", Some("old"))]);
        assert_eq!(run(&old, &map, NOW, 100).kept, Kept::Dropped);
        let out = run(&old, &map, NOW, 1);
        let Kept::Rewritten(shell) = out.kept else {
            panic!()
        };
        assert_eq!(shell.len(), seglog_records::RECORD_BATCH_OVERHEAD);
        let newer = batch(6, &[("a", Some("newer")), ("z", Some("1"))]);
        assert_eq!(run(&newer, &map, NOW, 100).kept, Kept::Original);
        // A tombstone beyond the map stays, and its batch gets a horizon (as in Kafka).
        let tombstone = batch(8, &[("z", None)]);
        let Kept::Rewritten(stamped) = run(&tombstone, &map, NOW, 100).kept else {
            panic!()
        };
        assert_eq!(keys(&stamped), [(8, "z".into(), false)]);
    }
}
