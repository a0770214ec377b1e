//! Raft entries as Kafka records (docs/format.md, "Raft entries"): one v2 batch per run of
//! entries of the same term, `partitionLeaderEpoch` = term, offset = log index, record key =
//! the proposing leader's node id (8 bytes, big-endian), record value = the entry's payload as
//! JSON (openraft's serde form of `EntryPayload`).

use std::path::Path;

use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId, RaftTypeConfig};
use seglog::{BatchBuilder, BatchRef};

use crate::Error;

/// Bytes of one record key: the leader's node id, big-endian.
pub(crate) const KEY_BYTES: usize = 8;

/// The batch `partitionLeaderEpoch` for `term`.
///
/// # Errors
/// [`Error::TermTooLarge`] above `i32::MAX`.
pub(crate) fn epoch_of(term: u64, index: u64) -> Result<i32, Error> {
    i32::try_from(term).map_err(|_| Error::TermTooLarge { term, index })
}

/// The Kafka offset of `index`.
///
/// # Errors
/// [`Error::IndexTooLarge`] above `i64::MAX`.
pub(crate) fn offset_of(index: u64) -> Result<i64, Error> {
    i64::try_from(index).map_err(|_| Error::IndexTooLarge { index })
}

/// Encodes `entries` (consecutive indexes) as back-to-back batches, one per run of the same
/// term, stamped with `timestamp_ms`.
///
/// # Errors
/// A term or index that does not fit; a payload serde cannot write.
pub(crate) fn encode<C>(entries: &[Entry<C>], timestamp_ms: i64) -> Result<Vec<u8>, Error>
where
    C: RaftTypeConfig<NodeId = u64>,
{
    let mut out = Vec::new();
    let mut start = 0;
    while start < entries.len() {
        let term = entries[start].log_id.leader_id.term;
        let end = entries[start..]
            .iter()
            .position(|e| e.log_id.leader_id.term != term)
            .map_or(entries.len(), |n| start + n);
        let first_index = entries[start].log_id.index;
        let mut builder = BatchBuilder::new(offset_of(first_index)?)
            .partition_leader_epoch(epoch_of(term, first_index)?);
        let mut value = Vec::new();
        for entry in &entries[start..end] {
            value.clear();
            serde_json::to_writer(&mut value, &entry.payload).map_err(|e| Error::Encode {
                index: entry.log_id.index,
                reason: format!("the payload does not serialize: {e}"),
            })?;
            let key = entry.log_id.leader_id.node_id.to_be_bytes();
            builder
                .append_with_offset(
                    offset_of(entry.log_id.index)?,
                    timestamp_ms,
                    Some(&key),
                    Some(&value),
                    &[],
                )
                .map_err(|e| Error::Encode {
                    index: entry.log_id.index,
                    reason: format!("entries are not consecutive: {e}"),
                })?;
        }
        let batch = builder.build().map_err(|e| Error::Encode {
            index: first_index,
            reason: format!("the batch does not build: {e}"),
        })?;
        out.extend_from_slice(&batch);
        start = end;
    }
    Ok(out)
}

/// One decoded record of a Raft batch: its log id and, when asked for, its payload.
pub(crate) struct Decoded<C: RaftTypeConfig<NodeId = u64>> {
    pub(crate) log_id: LogId<u64>,
    pub(crate) payload: Option<EntryPayload<C>>,
}

/// Decodes the records of `batch` whose offsets lie in `[from, to)`; payloads only when
/// `payloads` (a log-id scan reads keys only).
///
/// # Errors
/// [`Error::Corrupt`] for a batch or record that is not a Raft entry (compressed, control,
/// a key that is not 8 bytes, a negative epoch, a value that does not parse).
pub(crate) fn decode<C>(
    dir: &Path,
    batch: &BatchRef<'_>,
    from: i64,
    to: i64,
    payloads: bool,
    out: &mut Vec<Decoded<C>>,
) -> Result<(), Error>
where
    C: RaftTypeConfig<NodeId = u64>,
{
    let header = batch.header();
    let corrupt = |offset: i64, reason: String| Error::Corrupt {
        dir: dir.to_path_buf(),
        offset,
        reason,
    };
    let base = header.base_offset.unwrap_or(header.last_offset);
    if header.is_control {
        return Err(corrupt(base, "a control batch".into()));
    }
    let term = u64::try_from(header.partition_leader_epoch)
        .map_err(|_| corrupt(base, format!("epoch {}", header.partition_leader_epoch)))?;
    let records = batch
        .records_borrowed()
        .ok_or_else(|| corrupt(base, "not an uncompressed v2 batch".into()))?;
    for record in records {
        let record = record.map_err(|e| corrupt(base, format!("record: {e}")))?;
        if record.offset < from || record.offset >= to {
            continue;
        }
        let key: [u8; KEY_BYTES] = record
            .key
            .and_then(|k| k.try_into().ok())
            .ok_or_else(|| corrupt(record.offset, "the key is not an 8-byte node id".into()))?;
        let index = u64::try_from(record.offset)
            .map_err(|_| corrupt(record.offset, "negative offset".into()))?;
        let payload = if payloads {
            let value = record
                .value
                .ok_or_else(|| corrupt(record.offset, "no value".into()))?;
            Some(
                serde_json::from_slice(value)
                    .map_err(|e| corrupt(record.offset, format!("payload: {e}")))?,
            )
        } else {
            None
        };
        out.push(Decoded {
            log_id: LogId {
                leader_id: CommittedLeaderId::new(term, u64::from_be_bytes(key)),
                index,
            },
            payload,
        });
    }
    Ok(())
}
