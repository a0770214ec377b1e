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
    /// Which of the appended buffers holds the batch.
    pub(crate) chunk: usize,
    /// Where the batch starts in that buffer (`header.position` counts from the start of the
    /// first buffer, as if the buffers were one).
    pub(crate) at: usize,
    pub(crate) header: BatchHeader,
    /// The batch's first offset: its base offset; for a follower's legacy compressed wrapper
    /// the first inner message's offset, decompressed (the last offset when the inner set does
    /// not decode: then it is written as Kafka writes it and its reader finds the damage).
    pub(crate) first_record_offset: i64,
    /// Leader on a CreateTime log: the max timestamp the header must carry (the largest
    /// record timestamp, -1 when none) when it differs from the header's or the producer
    /// flagged the batch LogAppendTime (Kafka's `setMaxTimestamp(CREATE_TIME, max)`); the
    /// batch is then rewritten, its CRC recomputed ([`restamp`]).
    pub(crate) restamp: Option<i64>,
}

impl BatchSpan {
    fn range(&self) -> std::ops::Range<usize> {
        self.at..self.at + self.header.total_size as usize
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
    /// Bytes of whole batches in all chunks together: what is written.
    pub(crate) valid_bytes: usize,
    /// Bytes of whole batches at the start of each chunk (a follower's last chunk is cut
    /// here before writing).
    chunk_valid: Vec<usize>,
    /// A follower batch starting at or below the previous one's last offset
    /// ([`AppendErrorKind::OverlappingBatch`]): seglog's own refusal (Kafka 4.4 accepts it),
    /// so the append raises it only after Kafka's checks, the log-end one included.
    pub(crate) overlap: Option<AppendErrorKind>,
}

impl Analysis {
    /// First offset: the first batch's base offset, or for a legacy compressed wrapper its
    /// last offset (the first is unknown without decompressing).
    pub(crate) fn first_offset(&self) -> i64 {
        self.batches
            .first()
            .map_or(-1, |b| b.header.base_offset.unwrap_or(b.header.last_offset))
    }

    /// The first batch's first record offset ([`BatchSpan::first_record_offset`]) and
    /// position: for a legacy compressed wrapper its first inner offset, which
    /// [`first_offset`](Self::first_offset) does not know.
    pub(crate) fn first_record(&self) -> Option<(i64, u64)> {
        self.batches
            .first()
            .map(|b| (b.first_record_offset, b.header.position))
    }

    /// The offset to roll at when a roll is needed (the new segment's base is the larger of it
    /// and the log end): a v2 first batch's base offset; for a legacy first batch, compressed
    /// or not, `last − i32::MAX` (KAFKA-4451/6530), as Kafka 4.4's `UnifiedLog.maybeRoll`
    /// takes it: `analyzeAndValidateRecords` sets `firstOffset` only for magic >= 2, so after a
    /// gap Kafka rolls a legacy append at the log end, not at its first offset.
    pub(crate) fn roll_offset(&self) -> i64 {
        self.batches.first().map_or(-1, |b| {
            match b.header.base_offset.filter(|_| b.header.magic >= MAGIC_V2) {
                Some(base) => base,
                None => b.header.last_offset - i64::from(i32::MAX),
            }
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

/// Checks every batch of the concatenation of `chunks` (each holding whole batches; empty
/// chunks are allowed) for `origin`, as one append: framing, CRC, and for the leader Kafka's
/// `LogValidator` rules for v2 applied to each batch (magic v2, `max.message.bytes`, record
/// counts, no control batches, a sequence and a producer id where needed, and per record:
/// its key on a compacted log, its timestamp against the CreateTime window, no
/// producer-chosen LogAppendTime). Batch positions in errors count from the start of the
/// first chunk.
/// A follower's partial trailing batch is dropped only at the end of the last chunk: one inside
/// the concatenation is [`AppendErrorKind::TrailingBytes`] for leader and follower alike.
///
/// # Errors
/// [`Error::InvalidAppend`] or [`Error::Records`] (a corrupt batch); nothing is written.
pub(crate) fn analyze(
    chunks: &[&[u8]],
    origin: Origin,
    config: &LogConfig,
    now_ms: i64,
) -> Result<Analysis> {
    let mut batches = Vec::new();
    let mut valid_bytes = 0usize;
    let mut total = 0usize;
    let mut chunk_valid = Vec::with_capacity(chunks.len());
    let mut overlap = None;
    for (chunk, buffer) in chunks.iter().enumerate() {
        let start = total;
        total += buffer.len();
        let mut iter = Batches::new(buffer, start as u64);
        for batch in iter.by_ref() {
            let batch = batch.map_err(Error::Records)?;
            let header = *batch.header();
            if origin != Origin::Follower {
                check_leader_batch(&header, config, origin)?;
            }
            batch.ensure_valid().map_err(Error::Records)?;
            let restamp = if origin == Origin::Follower {
                None
            } else {
                let keys = origin == Origin::Leader && config.cleanup_policy.compact();
                check_records(&batch, config, now_ms, keys)?
            };
            if origin == Origin::Follower
                && let Some(previous) = batches.last().map(|b: &BatchSpan| b.header.last_offset)
                && header.last_offset <= previous
            {
                return Err(invalid(AppendErrorKind::OffsetsOutOfOrder {
                    previous_last_offset: previous,
                    last_offset: header.last_offset,
                }));
            }
            // seglog's load refuses a batch that starts at or below the previous one's last
            // offset (the segment's `OffsetsNotIncreasing`, with the same first offset: a legacy
            // compressed wrapper's is its last), so the append refuses it too: seglog never
            // writes what its next open would not serve (Kafka 4.4 accepts it: docs/format.md,
            // "Overlapping follower batches").
            // Reported after the whole append is checked, and by the append after its log-end
            // check: a later batch out of order (or otherwise invalid), or a first offset below
            // the log end, is the error Kafka gives for the append. A legacy compressed
            // wrapper's first offset is its first inner message's: one whose inner offsets
            // begin inside the previous batch would put an offset in the log twice (long-run
            // seeds 100360 and 100097; `Log::append_as_follower` checks the first batch against
            // the log end the same way).
            let first_offset = match header.base_offset {
                Some(base) => base,
                None => wrapper_first_offset(&batch).unwrap_or(header.last_offset),
            };
            if origin == Origin::Follower
                && overlap.is_none()
                && let Some(previous) = batches.last().map(|b: &BatchSpan| b.header.last_offset)
                && first_offset <= previous
            {
                overlap = Some(AppendErrorKind::OverlappingBatch {
                    position: header.position,
                    previous_last_offset: previous,
                    first_offset,
                });
            }
            batches.push(BatchSpan {
                chunk,
                at: header.position as usize - start,
                header,
                first_record_offset: first_offset,
                restamp,
            });
        }
        let valid = iter.valid_bytes() as usize;
        let last = chunk + 1 == chunks.len();
        if valid < buffer.len() && (origin != Origin::Follower || !last) {
            return Err(invalid(AppendErrorKind::TrailingBytes {
                trailing: (buffer.len() - valid) as u64,
            }));
        }
        valid_bytes += valid;
        chunk_valid.push(valid);
    }
    if batches.is_empty() {
        return Err(invalid(AppendErrorKind::Empty { size: total as u64 }));
    }
    Ok(Analysis {
        batches,
        valid_bytes,
        chunk_valid,
        overlap,
    })
}

/// The first inner message's offset of a legacy compressed wrapper, or `None` when the batch
/// is none (v2, uncompressed) or its inner set does not decode. Only a follower appends legacy
/// messages, and only the overlap check needs this, so only it decompresses.
fn wrapper_first_offset(batch: &seglog_records::BatchRef<'_>) -> Option<i64> {
    let header = batch.header();
    if !header.is_legacy() || header.compression == seglog_records::Compression::None {
        return None;
    }
    match batch
        .records(crate::config::DEFAULT_MAX_DECOMPRESSED_BYTES)
        .next()
    {
        Some(Ok(record)) => Some(record.offset),
        _ => None,
    }
}

/// Kafka's `validateBatch` for a leader batch (the header's rules; `max.message.bytes` is
/// `analyzeAndValidateRecords`'), plus a producer id for a transactional batch.
fn check_leader_batch(header: &BatchHeader, config: &LogConfig, origin: Origin) -> Result<()> {
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
    if header.is_transactional && header.producer_id < 0 {
        return Err(invalid(AppendErrorKind::TransactionalWithoutProducerId {
            position,
        }));
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
    Ok(())
}

/// The decompression bound of the per-record checks (the consumer's default bound).
const RECORD_CHECK_MAX_DECOMPRESSED_BYTES: usize = 64 << 20;

/// Kafka's per-record `validateRecord` over a leader batch (`validateKey`, then
/// `validateTimestamp`), and the max timestamp its header must then carry on a CreateTime log
/// (`None`: it carries it already). Every record is decoded: an uncompressed batch borrows its
/// bytes (no copy, no allocation), a compressed one is decompressed (bounded as a consumer's
/// reads are), its inner offsets checked to be consecutive. On a LogAppendTime log without
/// the key check an uncompressed batch is not decoded: no record's timestamp is looked at.
///
/// As in Kafka, a timestamp error wins over a key error of an earlier record (Kafka collects
/// the errors of every record and raises `InvalidTimestampException` if any is one).
fn check_records(
    batch: &seglog_records::BatchRef<'_>,
    config: &LogConfig,
    now_ms: i64,
    keys: bool,
) -> Result<Option<i64>> {
    let header = batch.header();
    let position = header.position;
    let create_time = config.message_timestamp_type == TimestampType::CreateTime;
    let producer_log_append_time = header.timestamp_type == Some(TimestampType::LogAppendTime);
    if !create_time && !keys && header.compression == seglog_records::Compression::None {
        // Every record would fail the same way: refuse at the first (the count is > 0).
        return match producer_log_append_time {
            true => Err(invalid(AppendErrorKind::LogAppendTimeFromProducer {
                position,
                record_index: 0,
            })),
            false => Ok(None),
        };
    }
    // `i64::MAX` is unlimited (Kafka's `now - timestamp > i64::MAX` is never true): no bound,
    // rather than a bound of `now - i64::MAX` that reads as a timestamp.
    let min_ms = (config.message_timestamp_before_max_ms != i64::MAX)
        .then(|| now_ms.saturating_sub(config.message_timestamp_before_max_ms));
    let max_ms = (config.message_timestamp_after_max_ms != i64::MAX)
        .then(|| now_ms.saturating_add(config.message_timestamp_after_max_ms));
    let mut max_timestamp_ms = -1i64;
    let mut key_error = None;
    let mut check = |record_index: usize, timestamp_ms: i64, has_key: bool| -> Result<()> {
        if keys && !has_key {
            key_error.get_or_insert(AppendErrorKind::MissingKey {
                position,
                record_index,
            });
        } else if create_time && timestamp_ms != -1 {
            if min_ms.is_some_and(|min| timestamp_ms < min)
                || max_ms.is_some_and(|max| timestamp_ms > max)
            {
                return Err(invalid(AppendErrorKind::TimestampOutOfRange {
                    position,
                    record_index,
                    timestamp_ms,
                    min_ms,
                    max_ms,
                }));
            }
        } else if producer_log_append_time {
            return Err(invalid(AppendErrorKind::LogAppendTimeFromProducer {
                position,
                record_index,
            }));
        }
        max_timestamp_ms = max_timestamp_ms.max(timestamp_ms);
        Ok(())
    };
    match batch.records_borrowed() {
        Some(records) => {
            for (index, record) in records.enumerate() {
                let record = record.map_err(Error::Records)?;
                check(index, record.timestamp_ms, record.key.is_some())?;
            }
        }
        None => {
            for (index, record) in batch
                .records(RECORD_CHECK_MAX_DECOMPRESSED_BYTES)
                .enumerate()
            {
                let record = record.map_err(Error::Records)?;
                // Kafka's compressed path rebuilds a batch whose inner offsets are not
                // consecutive (`inPlaceAssignment = false`); seglog writes the bytes as given.
                let offset_delta = record.offset - header.base_offset.unwrap_or(0);
                if offset_delta != index as i64 {
                    return Err(invalid(AppendErrorKind::InnerOffsetsNotConsecutive {
                        position,
                        record_index: index,
                        offset_delta,
                    }));
                }
                check(
                    index,
                    record.timestamp_ms.unwrap_or(-1),
                    record.key.is_some(),
                )?;
            }
        }
    }
    if let Some(kind) = key_error {
        return Err(invalid(kind));
    }
    let stamped_as_is = header.timestamp_type == Some(TimestampType::CreateTime)
        && header.max_timestamp_ms == max_timestamp_ms;
    Ok((create_time && !stamped_as_is).then_some(max_timestamp_ms))
}

/// Leader: the bytes to write when some batch's CRC-covered header must change — every batch
/// stamped LogAppendTime `now_ms` when `log_append_time_ms` is given ([`stamp_log_append_time`]),
/// else the batches whose max timestamp is restamped ([`BatchSpan::restamp`]) rewritten in a
/// copy; `None` (the caller's bytes are written as they are) when neither applies.
///
/// # Errors
/// As [`stamp_log_append_time`].
pub(crate) fn restamp(
    chunks: &[&[u8]],
    analysis: &mut Analysis,
    log_append_time_ms: Option<i64>,
) -> Result<Option<Vec<u8>>> {
    if let Some(now_ms) = log_append_time_ms {
        return stamp_log_append_time(chunks, analysis, now_ms).map(Some);
    }
    if analysis.batches.iter().all(|b| b.restamp.is_none()) {
        return Ok(None);
    }
    let mut copy = copy_whole_batches(chunks, analysis);
    for span in &mut analysis.batches {
        if let Some(max_timestamp_ms) = span.restamp.take() {
            seglog_records::set_max_timestamp(
                &mut copy[span.range()],
                TimestampType::CreateTime,
                max_timestamp_ms,
            )
            .map_err(Error::Records)?;
            span.header.max_timestamp_ms = max_timestamp_ms;
            span.header.timestamp_type = Some(TimestampType::CreateTime);
        }
    }
    Ok(Some(copy))
}

/// Copies the whole batches of `chunks` into one buffer; `analysis` then describes the copy
/// (one chunk).
fn copy_whole_batches(chunks: &[&[u8]], analysis: &mut Analysis) -> Vec<u8> {
    let mut copy = Vec::with_capacity(analysis.valid_bytes);
    let mut starts = Vec::with_capacity(chunks.len());
    for (chunk, valid) in chunks.iter().zip(&analysis.chunk_valid) {
        starts.push(copy.len());
        copy.extend_from_slice(&chunk[..*valid]);
    }
    for span in &mut analysis.batches {
        span.at += starts[span.chunk];
        span.chunk = 0;
    }
    analysis.chunk_valid = vec![copy.len()];
    copy
}

/// Leader: copies the whole batches of `chunks` into one buffer and stamps every batch of the
/// copy with LogAppendTime `now_ms` (recomputing its CRC); `analysis` then describes the copy
/// (one chunk). Done before taking the writer lock: it does not depend on the offsets.
///
/// # Errors
/// [`Error::Records`] if a rewrite fails (it cannot for a buffer `analyze` accepted).
pub(crate) fn stamp_log_append_time(
    chunks: &[&[u8]],
    analysis: &mut Analysis,
    now_ms: i64,
) -> Result<Vec<u8>> {
    let mut copy = copy_whole_batches(chunks, analysis);
    for span in &mut analysis.batches {
        seglog_records::set_log_append_time(&mut copy[span.range()], now_ms)
            .map_err(Error::Records)?;
        span.header.max_timestamp_ms = now_ms;
        span.header.timestamp_type = Some(TimestampType::LogAppendTime);
        span.restamp = None;
    }
    Ok(copy)
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
    chunks: &[&[u8]],
    analysis: &mut Analysis,
    bases: &[[u8; 8]],
    epoch: i32,
) -> Vec<[u8; 16]> {
    let mut prefixes = Vec::with_capacity(bases.len());
    for (span, base) in analysis.batches.iter_mut().zip(bases) {
        let mut prefix = [0u8; 16];
        prefix[..BASE_OFFSET_LEN].copy_from_slice(base);
        prefix[BASE_OFFSET_LEN..PARTITION_LEADER_EPOCH_AT]
            .copy_from_slice(&chunks[span.chunk][span.at + BASE_OFFSET_LEN..][..4]);
        prefix[PARTITION_LEADER_EPOCH_AT..].copy_from_slice(&epoch.to_be_bytes());
        span.header.partition_leader_epoch = epoch;
        prefixes.push(prefix);
    }
    prefixes
}

/// The pieces an append writes, in order: every chunk's whole batches as they are, except
/// that each batch's first `N` bytes come from `prefixes` when the leader rewrote them (8: the
/// base offset it assigned; 16: with the partition leader epoch, [`stamp_leader_epoch`]); an
/// empty `prefixes` writes the chunks whole (empty ones skipped). One vectored write, no copy.
pub(crate) fn write_parts<'a, const N: usize>(
    chunks: &[&'a [u8]],
    analysis: &Analysis,
    prefixes: &'a [[u8; N]],
) -> Vec<&'a [u8]> {
    if prefixes.is_empty() {
        return chunks
            .iter()
            .zip(&analysis.chunk_valid)
            .map(|(chunk, valid)| &chunk[..*valid])
            .filter(|part| !part.is_empty())
            .collect();
    }
    let mut parts = Vec::with_capacity(2 * prefixes.len());
    for (span, prefix) in analysis.batches.iter().zip(prefixes) {
        let range = span.range();
        parts.push(&prefix[..]);
        parts.push(&chunks[span.chunk][range.start + N..range.end]);
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
        let mut a = analyze(&[&buf], Origin::Leader, &config(), 0).unwrap();
        let bases = assign_offsets(&mut a, 10).unwrap();
        let buf = write_parts(&[&buf], &a, &bases).concat();
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
        let buf = batch(0, 2, 100);
        let mut a = analyze(&[&buf], Origin::Leader, &config(), 0).unwrap();
        let copy = stamp_log_append_time(&[&buf], &mut a, 777).unwrap();
        let bases = assign_offsets(&mut a, 0).unwrap();
        let buf = write_parts(&[&copy], &a, &bases).concat();
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
        let e = analyze(&[&buf], Origin::Leader, &small, 0).unwrap_err();
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
            analyze(&[&bad], Origin::Leader, &config(), 0),
            Err(Error::Records(_))
        ));
        let mut trailing = buf.clone();
        trailing.extend([0u8; 10]);
        let e = analyze(&[&trailing], Origin::Leader, &config(), 0).unwrap_err();
        assert!(matches!(
            e,
            Error::InvalidAppend {
                kind: AppendErrorKind::TrailingBytes { .. }
            }
        ));
        let e = analyze(&[&[]], Origin::Leader, &config(), 0).unwrap_err();
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
        let e = analyze(&[&buf], Origin::Leader, &window, 0).unwrap_err();
        assert!(matches!(
            e,
            Error::InvalidAppend {
                kind: AppendErrorKind::TimestampOutOfRange { .. }
            }
        ));
    }

    fn kind(e: Error) -> AppendErrorKind {
        match e {
            Error::InvalidAppend { kind } => kind,
            other => panic!("expected an invalid append, got {other:?}"),
        }
    }

    fn batch_with(timestamps: &[i64], compression: seglog_records::Compression) -> Vec<u8> {
        let mut b = BatchBuilder::new(0).compression(compression);
        for ts in timestamps {
            b.append(*ts, Some(b"k"), Some(b"value"), &[]);
        }
        b.build().unwrap().to_vec()
    }

    const DAY_MS: i64 = 24 * 3_600_000;
    const NOW: i64 = 1_700_000_000_000;

    fn window(before_ms: i64, after_ms: i64) -> LogConfig {
        LogConfig {
            message_timestamp_before_max_ms: before_ms,
            message_timestamp_after_max_ms: after_ms,
            ..LogConfig::default()
        }
    }

    /// An unlimited side of the window (`i64::MAX`, `message.timestamp.before.max.ms`'s
    /// default) is no bound, and the error says so in words: not `now - i64::MAX`, which
    /// printed as a timestamp far in the past.
    #[test]
    fn an_unlimited_timestamp_bound_prints_as_no_bound() {
        use seglog_records::Compression;
        let future = batch_with(&[NOW + 2 * 3_600_000], Compression::None);
        let e = analyze(
            &[&future],
            Origin::Leader,
            &window(i64::MAX, 3_600_000),
            NOW,
        )
        .unwrap_err();
        let text = e.to_string();
        let kind = kind(e);
        assert_eq!(
            kind,
            AppendErrorKind::TimestampOutOfRange {
                position: 0,
                record_index: 0,
                timestamp_ms: NOW + 2 * 3_600_000,
                min_ms: None,
                max_ms: Some(NOW + 3_600_000),
            }
        );
        assert!(
            text.ends_with(&format!("outside [no lower bound, {}]", NOW + 3_600_000)),
            "{text}"
        );
        let past = batch_with(&[NOW - 2 * DAY_MS], Compression::None);
        let e = analyze(&[&past], Origin::Leader, &window(DAY_MS, i64::MAX), NOW).unwrap_err();
        let text = e.to_string();
        assert!(
            text.ends_with(&format!("outside [{}, no upper bound]", NOW - DAY_MS)),
            "{text}"
        );
        // Unlimited on both sides: every timestamp passes, however far off.
        let far = batch_with(&[i64::MIN + 1, i64::MAX], Compression::None);
        analyze(&[&far], Origin::Leader, &window(i64::MAX, i64::MAX), NOW).unwrap();
    }

    /// Kafka's `validateTimestamp` runs on every record: a 2-day-old record sharing a batch
    /// with a fresh one is refused (the header's max timestamp, the fresh one, is in the
    /// window), compressed or not. Fails on the header-only check.
    #[test]
    fn every_record_timestamp_is_checked_against_the_window() {
        use seglog_records::Compression;
        let config = window(DAY_MS, 3_600_000);
        for compression in [Compression::None, Compression::Gzip, Compression::Zstd] {
            let buf = batch_with(&[NOW - 2 * DAY_MS, NOW], compression);
            let e = analyze(&[&buf], Origin::Leader, &config, NOW).unwrap_err();
            assert_eq!(
                kind(e),
                AppendErrorKind::TimestampOutOfRange {
                    position: 0,
                    record_index: 0,
                    timestamp_ms: NOW - 2 * DAY_MS,
                    min_ms: Some(NOW - DAY_MS),
                    max_ms: Some(NOW + 3_600_000),
                },
                "{compression:?}"
            );
            let future = batch_with(&[NOW, NOW + 2 * 3_600_000, NOW], compression);
            let e = analyze(&[&future], Origin::Leader, &config, NOW).unwrap_err();
            assert!(matches!(
                kind(e),
                AppendErrorKind::TimestampOutOfRange {
                    record_index: 1,
                    ..
                }
            ));
            // -1 (no timestamp) is not checked, as in Kafka.
            let none = batch_with(&[-1, NOW], compression);
            analyze(&[&none], Origin::Leader, &config, NOW).unwrap();
        }
        // A LogAppendTime log looks at no record's timestamp.
        let lat = LogConfig {
            message_timestamp_type: TimestampType::LogAppendTime,
            ..config
        };
        let old = batch_with(&[NOW - 2 * DAY_MS], seglog_records::Compression::None);
        analyze(&[&old], Origin::Leader, &lat, NOW).unwrap();
    }

    /// The header's max timestamp is rewritten from the records when it differs (Kafka's
    /// `setMaxTimestamp(CREATE_TIME, maxBatchTimestamp)`), with a valid CRC; a batch that is
    /// right already is written as the caller gave it (no copy).
    #[test]
    fn the_header_max_timestamp_is_rewritten_from_the_records() {
        use seglog_records::Compression;
        let config = window(i64::MAX, i64::MAX);
        for compression in [Compression::None, Compression::Lz4] {
            let mut buf = batch_with(&[NOW + 5, NOW + 9, NOW + 7], compression);
            seglog_records::set_max_timestamp(&mut buf, TimestampType::CreateTime, NOW).unwrap();
            let mut a = analyze(&[&buf], Origin::Leader, &config, NOW).unwrap();
            assert_eq!(a.batches[0].restamp, Some(NOW + 9));
            let copy = restamp(&[&buf], &mut a, None).unwrap().expect("rewritten");
            let bases = assign_offsets(&mut a, 20).unwrap();
            let out = write_parts(&[&copy], &a, &bases).concat();
            let b = BatchRef::parse(&out, 0).unwrap();
            b.ensure_valid().unwrap();
            assert_eq!(b.header().max_timestamp_ms, NOW + 9);
            assert_eq!(a.max_timestamp(), (NOW + 9, 22));
            let stamps: Vec<_> = b
                .records(1 << 20)
                .map(|r| r.unwrap().timestamp_ms.unwrap())
                .collect();
            assert_eq!(stamps, [NOW + 5, NOW + 9, NOW + 7], "records unchanged");
            // Right already: nothing to rewrite.
            let good = batch_with(&[NOW + 5, NOW + 9], compression);
            let mut a = analyze(&[&good], Origin::Leader, &config, NOW).unwrap();
            assert!(restamp(&[&good], &mut a, None).unwrap().is_none());
        }
        // A header max above every record's is lowered too.
        let mut high = batch_with(&[NOW], Compression::None);
        seglog_records::set_max_timestamp(&mut high, TimestampType::CreateTime, NOW + 50).unwrap();
        let a = analyze(&[&high], Origin::Leader, &config, NOW).unwrap();
        assert_eq!(a.batches[0].restamp, Some(NOW));
    }

    /// A producer may not choose LogAppendTime (Kafka's `validateTimestamp`): refused on a
    /// LogAppendTime log, and on a CreateTime log when its records have no timestamp; on a
    /// CreateTime log with timestamps in the window it is accepted and written as CreateTime
    /// carrying the same max timestamp, as Kafka's in-place paths do.
    #[test]
    fn a_producer_chosen_log_append_time_is_refused_or_rewritten_as_kafka_does() {
        let flagged = |ts: i64| {
            let mut buf = batch_with(&[NOW - 10, NOW - 5], seglog_records::Compression::None);
            seglog_records::set_log_append_time(&mut buf, ts).unwrap();
            buf
        };
        let create = window(DAY_MS, 3_600_000);
        let lat = LogConfig {
            message_timestamp_type: TimestampType::LogAppendTime,
            ..create.clone()
        };
        for config in [
            &lat,
            &LogConfig {
                cleanup_policy: crate::CleanupPolicy::Compact,
                ..lat.clone()
            },
        ] {
            let e = analyze(&[&flagged(NOW)], Origin::Leader, config, NOW).unwrap_err();
            assert_eq!(
                kind(e),
                AppendErrorKind::LogAppendTimeFromProducer {
                    position: 0,
                    record_index: 0
                }
            );
        }
        let e = analyze(&[&flagged(-1)], Origin::Leader, &create, NOW).unwrap_err();
        assert!(matches!(
            kind(e),
            AppendErrorKind::LogAppendTimeFromProducer { .. }
        ));
        let e = analyze(&[&flagged(NOW - 2 * DAY_MS)], Origin::Leader, &create, NOW).unwrap_err();
        assert!(matches!(
            kind(e),
            AppendErrorKind::TimestampOutOfRange { .. }
        ));
        let buf = flagged(NOW - 1);
        let mut a = analyze(&[&buf], Origin::Leader, &create, NOW).unwrap();
        let copy = restamp(&[&buf], &mut a, None).unwrap().expect("rewritten");
        let b = BatchRef::parse(&copy, 0).unwrap();
        b.ensure_valid().unwrap();
        assert_eq!(
            (b.header().timestamp_type, b.header().max_timestamp_ms),
            (Some(TimestampType::CreateTime), NOW - 1)
        );
    }

    /// A compressed batch's inner offsets must be 0, 1, 2, ... (Kafka re-compresses one that
    /// is not; seglog refuses it), on a LogAppendTime log too; an uncompressed batch is
    /// written as given, as Kafka's in-place path does.
    #[test]
    fn a_compressed_batch_with_gaps_in_its_inner_offsets_is_refused() {
        use seglog_records::Compression;
        let lat = LogConfig {
            message_timestamp_type: TimestampType::LogAppendTime,
            ..config()
        };
        for config in [config(), lat] {
            let mut b = BatchBuilder::new(0).compression(Compression::Gzip);
            b.append_with_offset(0, 100, Some(b"k"), Some(b"v"), &[])
                .unwrap();
            b.append_with_offset(2, 100, Some(b"k"), Some(b"v"), &[])
                .unwrap();
            b.append_with_offset(3, 100, Some(b"k"), Some(b"v"), &[])
                .unwrap();
            let mut buf = b.build().unwrap().to_vec();
            // Make the header consistent (3 records, last delta 2) so only the gap is wrong.
            let parsed = BatchRef::parse(&buf, 0).unwrap();
            assert_eq!(parsed.header().record_count, Some(3));
            if parsed.header().last_offset != 2 {
                buf[23..27].copy_from_slice(&2i32.to_be_bytes());
                let crc = seglog_records::crc32c(&buf[21..]);
                buf[17..21].copy_from_slice(&crc.to_be_bytes());
            }
            let e = analyze(&[&buf], Origin::Leader, &config, 0).unwrap_err();
            assert_eq!(
                kind(e),
                AppendErrorKind::InnerOffsetsNotConsecutive {
                    position: 0,
                    record_index: 1,
                    offset_delta: 2
                }
            );
        }
    }

    /// A transactional batch needs a producer id (#27); an idempotent one a sequence.
    #[test]
    fn a_transactional_batch_without_a_producer_id_is_refused() {
        let mut b = BatchBuilder::new(0).transactional(true);
        b.append(100, None, Some(b"v"), &[]);
        let buf = b.build().unwrap().to_vec();
        let e = analyze(&[&buf], Origin::Leader, &config(), 0).unwrap_err();
        assert_eq!(
            kind(e),
            AppendErrorKind::TransactionalWithoutProducerId { position: 0 }
        );
        let mut b = BatchBuilder::new(0).producer(7, 0, 0).transactional(true);
        b.append(100, None, Some(b"v"), &[]);
        analyze(&[&b.build().unwrap()], Origin::Leader, &config(), 0).unwrap();
    }

    /// A timestamp error wins over an earlier record's missing key, as Kafka's
    /// `processRecordErrors` raises `InvalidTimestampException` when any record has one.
    #[test]
    fn a_timestamp_error_wins_over_a_key_error() {
        let compacted = LogConfig {
            cleanup_policy: crate::CleanupPolicy::Compact,
            ..window(DAY_MS, 3_600_000)
        };
        let mut b = BatchBuilder::new(0);
        b.append(NOW, None, Some(b"v"), &[]);
        b.append(NOW - 2 * DAY_MS, Some(b"k"), Some(b"v"), &[]);
        let e = analyze(&[&b.build().unwrap()], Origin::Leader, &compacted, NOW).unwrap_err();
        assert!(matches!(
            kind(e),
            AppendErrorKind::TimestampOutOfRange {
                record_index: 1,
                ..
            }
        ));
        let mut b = BatchBuilder::new(0);
        b.append(NOW, Some(b"k"), Some(b"v"), &[]);
        b.append(NOW, None, Some(b"v"), &[]);
        let e = analyze(&[&b.build().unwrap()], Origin::Leader, &compacted, NOW).unwrap_err();
        assert_eq!(
            kind(e),
            AppendErrorKind::MissingKey {
                position: 0,
                record_index: 1
            }
        );
    }

    #[test]
    fn follower_needs_increasing_offsets_and_drops_a_partial_tail() {
        let mut buf = batch(5, 2, 100);
        buf.extend(batch(7, 1, 100));
        let mut with_tail = buf.clone();
        with_tail.extend(&batch(8, 1, 1)[..30]);
        let a = analyze(&[&with_tail], Origin::Follower, &config(), 0).unwrap();
        assert_eq!(a.valid_bytes, buf.len());
        assert_eq!((a.first_offset(), a.last_offset()), (5, 7));
        let mut out_of_order = batch(5, 2, 100);
        out_of_order.extend(batch(6, 1, 100));
        let e = analyze(&[&out_of_order], Origin::Follower, &config(), 0).unwrap_err();
        assert!(matches!(
            e,
            Error::InvalidAppend {
                kind: AppendErrorKind::OffsetsOutOfOrder { .. }
            }
        ));
    }

    #[test]
    fn chunks_are_one_append_as_if_concatenated() {
        let (one, two, three) = (batch(0, 3, 100), batch(0, 2, 50), batch(0, 1, 200));
        let whole = [one.clone(), two.clone(), three.clone()].concat();
        let chunks: [&[u8]; 4] = [&one, &[], &[two.clone(), three.clone()].concat(), &[]];
        let mut a = analyze(&chunks, Origin::Leader, &config(), 0).unwrap();
        let mut w = analyze(&[&whole], Origin::Leader, &config(), 0).unwrap();
        assert_eq!(a.valid_bytes, whole.len());
        let positions = |a: &Analysis| {
            a.batches
                .iter()
                .map(|b| b.header.position)
                .collect::<Vec<_>>()
        };
        assert_eq!(positions(&a), positions(&w));
        let (ba, bw) = (
            assign_offsets(&mut a, 7).unwrap(),
            assign_offsets(&mut w, 7).unwrap(),
        );
        assert_eq!(
            write_parts(&chunks, &a, &ba).concat(),
            write_parts(&[&whole], &w, &bw).concat()
        );
        let ea = stamp_leader_epoch(&chunks, &mut a, &ba, 4);
        let ew = stamp_leader_epoch(&[&whole], &mut w, &bw, 4);
        assert_eq!(
            write_parts(&chunks, &a, &ea).concat(),
            write_parts(&[&whole], &w, &ew).concat()
        );
        // LogAppendTime copies the chunks into one buffer.
        let copy = stamp_log_append_time(&chunks, &mut a, 999).unwrap();
        let out = write_parts(&[&copy], &a, &ba).concat();
        let mut next = 7;
        for b in Batches::new(&out, 0) {
            let b = b.unwrap();
            b.ensure_valid().unwrap();
            assert_eq!(
                (b.header().base_offset, b.header().max_timestamp_ms),
                (Some(next), 999)
            );
            next = b.header().last_offset + 1;
        }
        assert_eq!(next, 13);
        // Follower chunks keep their bytes, and empty chunks write no part.
        let mut tail = three.clone();
        tail.extend(&batch(9, 1, 1)[..30]);
        let f = analyze(&[&one, &[], &tail], Origin::Follower, &config(), 0);
        assert!(f.is_err(), "offsets 0..=2 then 0 are out of order");
        let (f1, f2) = (batch(3, 2, 1), batch(5, 1, 1));
        let mut f2_tail = f2.clone();
        f2_tail.extend(&batch(6, 1, 1)[..30]);
        let f = analyze(&[&f1, &[], &f2_tail], Origin::Follower, &config(), 0).unwrap();
        assert_eq!(f.valid_bytes, f1.len() + f2.len());
        assert_eq!(
            write_parts::<8>(&[&f1, &[], &f2_tail], &f, &[]),
            [&f1[..], &f2[..]]
        );
        // A partial batch inside the concatenation is an error, for a follower too.
        let e = analyze(&[&f2_tail, &f1], Origin::Follower, &config(), 0).unwrap_err();
        assert!(matches!(
            e,
            Error::InvalidAppend {
                kind: AppendErrorKind::TrailingBytes { trailing: 30 }
            }
        ));
    }
}
