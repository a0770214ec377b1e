//! Validating appended batches and assigning offsets in place (Kafka's
//! `analyzeAndValidateRecords` + `LogValidator`, spec §5.4), as pure functions over a buffer.

use seglog_records::{BatchHeader, Batches, MAGIC_V2};

use crate::TimestampType;
use crate::config::LogConfig;
use crate::{AppendErrorKind, Error, Result};

/// Who is appending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// The leader: offsets are assigned, batches fully validated.
    Leader,
    /// The leader writing a transaction coordinator's marker: as `Leader`, but control
    /// batches are allowed (Kafka's `AppendOrigin.COORDINATOR`).
    Coordinator,
    /// A follower: offsets are kept and must increase; a partial trailing batch (a fetch cut
    /// mid-batch) is dropped as Kafka does.
    Follower,
}

/// One batch of an append buffer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BatchSpan {
    pub(crate) position: usize,
    pub(crate) header: BatchHeader,
}

impl BatchSpan {
    fn range(&self) -> std::ops::Range<usize> {
        self.position..self.position + self.header.total_size as usize
    }

    /// Number of offsets the batch spans (`lastOffsetDelta + 1` for v2).
    fn offset_span(&self) -> i64 {
        self.header.last_offset - self.header.base_offset.unwrap_or(self.header.last_offset) + 1
    }
}

/// What an append buffer holds, after validation (and, for the leader, offset assignment).
#[derive(Debug, Clone)]
pub(crate) struct Analysis {
    pub(crate) batches: Vec<BatchSpan>,
    /// Bytes of whole batches; the buffer is cut here before writing.
    pub(crate) valid_bytes: usize,
}

impl Analysis {
    /// First offset: the first batch's base offset, or for a legacy compressed wrapper its
    /// last offset (the first is unknown without decompressing).
    pub(crate) fn first_offset(&self) -> i64 {
        self.batches
            .first()
            .map_or(-1, |b| b.header.base_offset.unwrap_or(b.header.last_offset))
    }

    /// The offset to roll at when a roll is needed: v2 (and uncompressed legacy) knows its
    /// first offset; a legacy compressed wrapper uses `last − i32::MAX` (KAFKA-4451/6530).
    pub(crate) fn roll_offset(&self) -> i64 {
        self.batches
            .first()
            .map_or(-1, |b| match b.header.base_offset {
                Some(base) => base,
                None => b.header.last_offset - i64::from(i32::MAX),
            })
    }

    /// Last offset of the last batch.
    pub(crate) fn last_offset(&self) -> i64 {
        self.batches.last().map_or(-1, |b| b.header.last_offset)
    }

    /// The largest batch max timestamp and the last offset of the first batch holding it
    /// (Kafka's `shallowOffsetOfMaxTimestamp`); `(-1, first batch's last offset)` when no
    /// batch has a timestamp.
    pub(crate) fn max_timestamp(&self) -> (i64, i64) {
        let mut max = (
            -1,
            self.batches.first().map_or(-1, |b| b.header.last_offset),
        );
        for b in &self.batches {
            if b.header.max_timestamp_ms > max.0 {
                max = (b.header.max_timestamp_ms, b.header.last_offset);
            }
        }
        max
    }
}

/// Checks every batch of `buffer` for `origin`: framing, CRC, and for the leader magic v2,
/// `max.message.bytes`, record counts, no control batches and the CreateTime window.
///
/// # Errors
/// [`Error::InvalidAppend`] or [`Error::Records`] (a corrupt batch); nothing is written.
pub(crate) fn analyze(
    buffer: &[u8],
    origin: Origin,
    config: &LogConfig,
    now_ms: i64,
) -> Result<Analysis> {
    let mut batches = Vec::new();
    let mut iter = Batches::new(buffer, 0);
    for batch in iter.by_ref() {
        let batch = batch.map_err(Error::Records)?;
        let header = *batch.header();
        let position = header.position;
        if origin != Origin::Follower {
            check_leader_batch(&header, config, now_ms, origin)?;
        }
        batch.ensure_valid().map_err(Error::Records)?;
        if origin == Origin::Follower
            && let Some(previous) = batches.last().map(|b: &BatchSpan| b.header.last_offset)
            && header.last_offset <= previous
        {
            return Err(invalid(AppendErrorKind::OffsetsOutOfOrder {
                previous_last_offset: previous,
                last_offset: header.last_offset,
            }));
        }
        batches.push(BatchSpan {
            position: position as usize,
            header,
        });
    }
    let valid_bytes = iter.valid_bytes() as usize;
    if batches.is_empty() {
        return Err(invalid(AppendErrorKind::Empty {
            size: buffer.len() as u64,
        }));
    }
    if origin != Origin::Follower && valid_bytes < buffer.len() {
        return Err(invalid(AppendErrorKind::TrailingBytes {
            trailing: (buffer.len() - valid_bytes) as u64,
        }));
    }
    Ok(Analysis {
        batches,
        valid_bytes,
    })
}

fn check_leader_batch(
    header: &BatchHeader,
    config: &LogConfig,
    now_ms: i64,
    origin: Origin,
) -> Result<()> {
    let position = header.position;
    if header.magic != MAGIC_V2 {
        return Err(invalid(AppendErrorKind::UnsupportedMagic {
            position,
            magic: header.magic as i8,
        }));
    }
    if i64::from(header.total_size) > i64::from(config.max_message_bytes) {
        return Err(invalid(AppendErrorKind::BatchTooLarge {
            position,
            size: header.total_size.into(),
            max: config.max_message_bytes.into(),
        }));
    }
    if header.is_control && origin != Origin::Coordinator {
        return Err(invalid(AppendErrorKind::ControlBatch { position }));
    }
    if !header.is_control && header.producer_id >= 0 && header.base_sequence < 0 {
        return Err(invalid(AppendErrorKind::InvalidSequence {
            position,
            producer_id: header.producer_id,
            sequence: header.base_sequence,
        }));
    }
    let base = header.base_offset.unwrap_or(header.last_offset);
    let last_offset_delta = (header.last_offset - base) as i32;
    let count = header.record_count.unwrap_or(0);
    if count <= 0 || i64::from(count) != i64::from(last_offset_delta) + 1 {
        return Err(invalid(AppendErrorKind::InconsistentCount {
            position,
            last_offset_delta,
            count,
        }));
    }
    if config.message_timestamp_type == TimestampType::CreateTime
        && header.timestamp_type == Some(TimestampType::CreateTime)
    {
        let min_ms = now_ms.saturating_sub(config.message_timestamp_before_max_ms);
        let max_ms = now_ms.saturating_add(config.message_timestamp_after_max_ms);
        let ts = header.max_timestamp_ms;
        if ts >= 0 && (ts < min_ms || ts > max_ms) {
            return Err(invalid(AppendErrorKind::TimestampOutOfRange {
                position,
                timestamp_ms: ts,
                min_ms,
                max_ms,
            }));
        }
    }
    Ok(())
}

/// Leader: stamps every batch with LogAppendTime `now_ms` (recomputing its CRC). Done before
/// taking the writer lock: it does not depend on the offsets.
///
/// # Errors
/// [`Error::Records`] if a rewrite fails (it cannot for a buffer `analyze` accepted).
pub(crate) fn stamp_log_append_time(
    buffer: &mut [u8],
    analysis: &mut Analysis,
    now_ms: i64,
) -> Result<()> {
    for span in &mut analysis.batches {
        seglog_records::set_log_append_time(&mut buffer[span.range()], now_ms)
            .map_err(Error::Records)?;
        span.header.max_timestamp_ms = now_ms;
        span.header.timestamp_type = Some(TimestampType::LogAppendTime);
    }
    Ok(())
}

/// Leader: assigns offsets so the append starts at `next_offset` and returns every batch's
/// new big-endian base offset, the 8 bytes that replace the first 8 of the batch when it is
/// written ([`write_parts`]). The base offset is outside the CRC: no checksum work under the
/// writer lock and no copy of the caller's bytes. Updates `analysis` to match.
///
/// # Errors
/// [`Error::Records`] if an offset would overflow (it cannot below `i64::MAX` records).
pub(crate) fn assign_offsets(analysis: &mut Analysis, next_offset: i64) -> Result<Vec<[u8; 8]>> {
    let mut next = next_offset;
    let mut bases = Vec::with_capacity(analysis.batches.len());
    for span in &mut analysis.batches {
        let delta = span.offset_span() - 1;
        let last =
            next.checked_add(delta)
                .ok_or(Error::Records(seglog_records::Error::InvalidInput {
                    reason: "base offset plus last offset delta overflows",
                }))?;
        bases.push(next.to_be_bytes());
        span.header.base_offset = Some(next);
        span.header.last_offset = last;
        next = last.saturating_add(1);
    }
    Ok(bases)
}

/// Leader with a leader epoch: the first 16 bytes of every batch as they are written — the
/// new base offset from `bases`, the batch length as it is, and `epoch` as the
/// `partitionLeaderEpoch` (Kafka's `LogValidator` stamps it). Both fields lie before the
/// CRC-covered bytes: no checksum work, no copy of the caller's bytes. Updates `analysis`.
pub(crate) fn stamp_leader_epoch(
    bytes: &[u8],
    analysis: &mut Analysis,
    bases: &[[u8; 8]],
    epoch: i32,
) -> Vec<[u8; 16]> {
    let mut prefixes = Vec::with_capacity(bases.len());
    for (span, base) in analysis.batches.iter_mut().zip(bases) {
        let mut prefix = [0u8; 16];
        prefix[..BASE_OFFSET_LEN].copy_from_slice(base);
        prefix[BASE_OFFSET_LEN..PARTITION_LEADER_EPOCH_AT]
            .copy_from_slice(&bytes[span.position + BASE_OFFSET_LEN..][..4]);
        prefix[PARTITION_LEADER_EPOCH_AT..].copy_from_slice(&epoch.to_be_bytes());
        span.header.partition_leader_epoch = epoch;
        prefixes.push(prefix);
    }
    prefixes
}

/// The pieces an append writes, in order: `bytes` as they are, except that each batch's
/// first `N` bytes come from `prefixes` when the leader rewrote them (8: the base offset it
/// assigned; 16: with the partition leader epoch, [`stamp_leader_epoch`]); an empty
/// `prefixes` writes `bytes` whole. One vectored write, no copy.
pub(crate) fn write_parts<'a, const N: usize>(
    bytes: &'a [u8],
    analysis: &Analysis,
    prefixes: &'a [[u8; N]],
) -> Vec<&'a [u8]> {
    if prefixes.is_empty() {
        return vec![&bytes[..analysis.valid_bytes]];
    }
    let mut parts = Vec::with_capacity(2 * prefixes.len());
    for (span, prefix) in analysis.batches.iter().zip(prefixes) {
        let range = span.range();
        parts.push(&prefix[..]);
        parts.push(&bytes[range.start + N..range.end]);
    }
    parts
}

/// Length of the v2 base offset field, the first field of a batch.
const BASE_OFFSET_LEN: usize = 8;
/// Where the v2 `partitionLeaderEpoch` field starts (after the base offset and the length).
const PARTITION_LEADER_EPOCH_AT: usize = 12;

fn invalid(kind: AppendErrorKind) -> Error {
    Error::InvalidAppend { kind }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use seglog_records::{BatchBuilder, BatchRef};

    fn batch(base: i64, records: usize, ts: i64) -> Vec<u8> {
        let mut b = BatchBuilder::new(base);
        for i in 0..records {
            b.append(ts + i as i64, None, Some(b"value"), &[]);
        }
        b.build().unwrap().to_vec()
    }

    fn config() -> LogConfig {
        LogConfig {
            message_timestamp_after_max_ms: i64::MAX,
            ..LogConfig::default()
        }
    }

    #[test]
    fn leader_assigns_contiguous_offsets_and_keeps_crcs_valid() {
        let mut buf = batch(0, 3, 100);
        buf.extend(batch(0, 2, 50));
        let mut a = analyze(&buf, Origin::Leader, &config(), 0).unwrap();
        let bases = assign_offsets(&mut a, 10).unwrap();
        let buf = write_parts(&buf, &a, &bases).concat();
        assert_eq!((a.first_offset(), a.last_offset()), (10, 14));
        assert_eq!(a.max_timestamp(), (102, 12));
        let mut next = 10;
        for b in Batches::new(&buf, 0) {
            let b = b.unwrap();
            b.ensure_valid().unwrap();
            assert_eq!(b.header().base_offset, Some(next));
            next = b.header().last_offset + 1;
        }
        assert_eq!(next, 15);
    }

    #[test]
    fn log_append_time_restamps() {
        let mut buf = batch(0, 2, 100);
        let mut a = analyze(&buf, Origin::Leader, &config(), 0).unwrap();
        stamp_log_append_time(&mut buf, &mut a, 777).unwrap();
        let bases = assign_offsets(&mut a, 0).unwrap();
        let buf = write_parts(&buf, &a, &bases).concat();
        let b = BatchRef::parse(&buf, 0).unwrap();
        b.ensure_valid().unwrap();
        assert_eq!(b.header().max_timestamp_ms, 777);
        assert_eq!(a.max_timestamp(), (777, 1));
    }

    #[test]
    fn leader_rejections() {
        let buf = batch(0, 1, 100);
        let small = LogConfig {
            max_message_bytes: 10,
            ..config()
        };
        let e = analyze(&buf, Origin::Leader, &small, 0).unwrap_err();
        assert!(matches!(
            e,
            Error::InvalidAppend {
                kind: AppendErrorKind::BatchTooLarge { .. }
            }
        ));
        let mut bad = buf.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert!(matches!(
            analyze(&bad, Origin::Leader, &config(), 0),
            Err(Error::Records(_))
        ));
        let mut trailing = buf.clone();
        trailing.extend([0u8; 10]);
        let e = analyze(&trailing, Origin::Leader, &config(), 0).unwrap_err();
        assert!(matches!(
            e,
            Error::InvalidAppend {
                kind: AppendErrorKind::TrailingBytes { .. }
            }
        ));
        let e = analyze(&[], Origin::Leader, &config(), 0).unwrap_err();
        assert!(matches!(
            e,
            Error::InvalidAppend {
                kind: AppendErrorKind::Empty { .. }
            }
        ));
        let window = LogConfig {
            message_timestamp_after_max_ms: 10,
            ..config()
        };
        let e = analyze(&buf, Origin::Leader, &window, 0).unwrap_err();
        assert!(matches!(
            e,
            Error::InvalidAppend {
                kind: AppendErrorKind::TimestampOutOfRange { .. }
            }
        ));
    }

    #[test]
    fn follower_needs_increasing_offsets_and_drops_a_partial_tail() {
        let mut buf = batch(5, 2, 100);
        buf.extend(batch(7, 1, 100));
        let mut with_tail = buf.clone();
        with_tail.extend(&batch(8, 1, 1)[..30]);
        let a = analyze(&with_tail, Origin::Follower, &config(), 0).unwrap();
        assert_eq!(a.valid_bytes, buf.len());
        assert_eq!((a.first_offset(), a.last_offset()), (5, 7));
        let mut out_of_order = batch(5, 2, 100);
        out_of_order.extend(batch(6, 1, 100));
        let e = analyze(&out_of_order, Origin::Follower, &config(), 0).unwrap_err();
        assert!(matches!(
            e,
            Error::InvalidAppend {
                kind: AppendErrorKind::OffsetsOutOfOrder { .. }
            }
        ));
    }
}
