//! Reads below the local log start offset, from the remote tier (KIP-405): Kafka's
//! `RemoteLogManager.read` (the remote segment holding the offset, the position from its
//! offset index, a ranged fetch of its `.log`, the first batch at or after the offset), the
//! aborted transactions of `read_committed` from the remote `.txnindex`es
//! (`collectAbortedTransactions` over `nextSegmentWithTxnIndex`), and offsets for timestamps
//! in remote segments. [`Log::read_into`], the record readers (built on it),
//! [`Log::aborted_transactions`] and [`Log::offset_for_timestamp`] come here for offsets
//! between the log start and the local log start.

use std::sync::Arc;

use seglog_index_core::{OffsetEntry, TimeEntry};
use seglog_records::{BatchHeader, BatchRef, HeaderRead};
use seglog_segment::{FileSlice, SliceOffsets, TimestampAndOffset};

use crate::log::Log;
use crate::read::{CopiedFetch, FetchData};
use crate::remote::{LineageSegment, RemoteIndexKind, RemoteSegment, RemoteTier};
use crate::sync::lock;
use crate::view::OffsetMetadata;
use crate::{AbortedTransaction, Error, Result};

/// Bytes fetched per ranged read while looking for batch boundaries.
const FETCH_CHUNK: u64 = 64 * 1024;

impl Log {
    /// The attached tier when `offset` lies below the local log start offset and at or above
    /// the whole log's start: a read there goes to the tier.
    pub(crate) fn remote_for(&self, offset: i64) -> Option<Arc<dyn RemoteTier>> {
        // One atomic load on the read path of a log without remote data.
        let whole = self.remote.log_start_offset()?;
        if offset < whole || offset >= self.local_log_start_offset() {
            return None;
        }
        self.remote.tier()
    }

    /// The whole log's start offset given the local one (one atomic load).
    pub(crate) fn whole_log_start(&self, local_log_start_offset: i64) -> i64 {
        self.remote
            .log_start_offset()
            .map_or(local_log_start_offset, |start| {
                start.min(local_log_start_offset)
            })
    }

    /// An [`Error::OffsetOutOfRange`] of a local read plan names the whole log's start (a
    /// consumer resetting to the earliest offset goes there, not to the local start).
    pub(crate) fn with_whole_log_start(&self, error: Error) -> Error {
        match error {
            Error::OffsetOutOfRange {
                offset,
                log_start_offset,
                log_end_offset,
            } => Error::OffsetOutOfRange {
                offset,
                log_start_offset: self.whole_log_start(log_start_offset),
                log_end_offset,
            },
            other => other,
        }
    }

    /// The tier's finished segments (cached; `refresh` lists them again).
    pub(crate) fn remote_segments(
        &self,
        tier: &dyn RemoteTier,
        refresh: bool,
    ) -> Result<Arc<Vec<RemoteSegment>>> {
        let mut cached = lock(&self.remote.segments);
        if !refresh && let Some(list) = cached.as_ref() {
            return Ok(Arc::clone(list));
        }
        let list = Arc::new(tier.segments().map_err(|e| self.remote_error(e))?);
        *cached = Some(Arc::clone(&list));
        Ok(list)
    }

    /// The tier's copies as the log's leader-epoch lineage chains them (`remote/lineage.rs`:
    /// of overlapping copies, the one whose epochs agree with the log's epoch cache; a former
    /// leader's copy never past the offset where it leaves the lineage).
    /// Computed once per segment list and epoch cache (`RemoteState::chain`).
    pub(crate) fn remote_chain(
        &self,
        tier: &dyn RemoteTier,
        refresh: bool,
    ) -> Result<Arc<Vec<LineageSegment>>> {
        let list = self.remote_segments(tier, refresh)?;
        Ok(self.remote.chain(&list, self.leader_epochs()))
    }

    /// The chain's ranges from the one holding `offset` (or the first after it), oldest
    /// first; the list is fetched again once when none reaches `offset`.
    fn remote_segments_from(&self, tier: &dyn RemoteTier, offset: i64) -> Result<ChainFrom> {
        for refresh in [false, true] {
            let chain = self.remote_chain(tier, refresh)?;
            // The chain's ranges ascend and do not overlap: their ends ascend too.
            let first = chain.partition_point(|s| s.to < offset);
            if first < chain.len() {
                return Ok(ChainFrom { chain, first });
            }
        }
        Ok(ChainFrom {
            chain: Arc::default(),
            first: 0,
        })
    }

    /// One index of a remote segment, through the bounded cache; `None` when the tier has
    /// none (a segment without aborted transactions has no `.txnindex`).
    fn remote_index(
        &self,
        tier: &dyn RemoteTier,
        segment: &RemoteSegment,
        kind: RemoteIndexKind,
    ) -> Result<Option<Arc<Vec<u8>>>> {
        if let Some(bytes) = lock(&self.remote.indexes).get(segment.id, kind) {
            return Ok(Some(bytes));
        }
        // The on-disk cache next (a reopened log): a file that fails its checks is deleted
        // there and the index fetched again.
        let on_disk = lock(&self.remote.disk_indexes)
            .as_mut()
            .and_then(|disk| disk.get(segment, kind));
        if let Some(bytes) = on_disk {
            let bytes = Arc::new(bytes);
            lock(&self.remote.indexes).insert(segment.id, kind, Arc::clone(&bytes));
            return Ok(Some(bytes));
        }
        match tier.fetch_index(segment, kind) {
            Ok(bytes) => {
                let bytes = Arc::new(bytes);
                self.cache_remote_index(segment, kind, &bytes);
                Ok(Some(bytes))
            }
            // A segment without aborted transactions has no `.txnindex`: remembered as an
            // empty one (an empty file on disk, as Kafka's `RemoteIndexCache`), so
            // read_committed does not ask again for every fetch (Kafka skips such segments by
            // their metadata's `txnIdxEmpty`).
            Err(e) if e.is_not_found() && kind == RemoteIndexKind::Transaction => {
                let empty = Arc::new(Vec::new());
                self.cache_remote_index(segment, kind, &empty);
                Ok(Some(empty))
            }
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(self.remote_error(e)),
        }
    }

    /// Keeps a fetched index in both caches.
    fn cache_remote_index(
        &self,
        segment: &RemoteSegment,
        kind: RemoteIndexKind,
        bytes: &Arc<Vec<u8>>,
    ) {
        if let Some(disk) = lock(&self.remote.disk_indexes).as_mut() {
            disk.put(segment, kind, bytes);
        }
        lock(&self.remote.indexes).insert(segment.id, kind, Arc::clone(bytes));
    }

    /// The byte position in the remote segment's `.log` to start looking for `offset` at:
    /// the offset index's floor entry (Kafka's `lookup`), 0 without one.
    fn remote_position(
        &self,
        tier: &dyn RemoteTier,
        segment: &RemoteSegment,
        offset: i64,
    ) -> Result<u64> {
        let Some(index) = self.remote_index(tier, segment, RemoteIndexKind::Offset)? else {
            return Ok(0);
        };
        let relative = offset.saturating_sub(segment.base_offset);
        let mut position = 0;
        for (i, chunk) in index.chunks_exact(OffsetEntry::SIZE).enumerate() {
            let mut bytes = [0; OffsetEntry::SIZE];
            bytes.copy_from_slice(chunk);
            let entry = OffsetEntry::decode(&bytes);
            // An all-zero entry after the first starts a preallocated tail (an index uploaded
            // untrimmed): the entries end there.
            if i64::from(entry.relative_offset) > relative
                || (i > 0 && entry.relative_offset == 0 && entry.position == 0)
            {
                break;
            }
            // A position outside the `.log` would make the read skip the segment silently.
            let Ok(found) = u64::try_from(entry.position) else {
                return Err(corrupt_index(segment, i, "a negative position"));
            };
            if found >= segment.size_in_bytes.max(1) {
                return Err(corrupt_index(
                    segment,
                    i,
                    "a position past the segment's end",
                ));
            }
            position = found;
        }
        Ok(position)
    }

    /// [`Log::read_into`] of an offset in the remote tier: whole batches of the remote segment
    /// holding `start_offset` (the first at or after it first), at most `max_bytes` unless the
    /// first batch alone is larger and `min_one_message`. Later remote segments are tried when
    /// one holds nothing at or after the offset; `None` when no remote segment does (the read
    /// then goes on locally).
    pub(crate) fn remote_read_into(
        &self,
        tier: &dyn RemoteTier,
        start_offset: i64,
        max_bytes: u32,
        min_one_message: bool,
        buf: &mut Vec<u8>,
    ) -> Result<Option<CopiedFetch>> {
        Ok(self
            .remote_read_ranged(tier, start_offset, max_bytes, min_one_message, buf)?
            .map(|(fetch, _)| fetch))
    }

    /// [`Log::remote_read_into`] with the end (exclusive) of the chain range it read from.
    fn remote_read_ranged(
        &self,
        tier: &dyn RemoteTier,
        start_offset: i64,
        max_bytes: u32,
        min_one_message: bool,
        buf: &mut Vec<u8>,
    ) -> Result<Option<(CopiedFetch, i64)>> {
        match self.remote_read_once(tier, start_offset, max_bytes, min_one_message, buf) {
            // The cached list named a segment the tier no longer has (remote expiry ran):
            // list again, once.
            Err(Error::Remote { source, .. }) if source.is_not_found() => {
                self.remote.forget_segments();
                self.remote_read_once(tier, start_offset, max_bytes, min_one_message, buf)
            }
            other => other,
        }
        .inspect_err(|_| buf.clear())
    }

    fn remote_read_once(
        &self,
        tier: &dyn RemoteTier,
        start_offset: i64,
        max_bytes: u32,
        min_one_message: bool,
        buf: &mut Vec<u8>,
    ) -> Result<Option<(CopiedFetch, i64)>> {
        buf.clear();
        for LineageSegment { segment, from, to } in
            self.remote_segments_from(tier, start_offset)?.iter()
        {
            // A range whose head another copy serves starts at `from`.
            let read_from = start_offset.max(from);
            let position = self.remote_position(tier, &segment, read_from)?;
            let mut window = RemoteWindow::new(self, tier, &segment, position);
            let Some(first) = window.batch_from(read_from)? else {
                continue;
            };
            // Past the range: the copy left the lineage there (never served).
            if batch_base(&first) > to {
                continue;
            }
            let first_size = u64::from(first.total_size);
            let limit = u64::from(max_bytes);
            let (mut taken, incomplete) = if first_size <= limit || min_one_message {
                (first_size, false)
            } else {
                (limit, true)
            };
            let mut next = first.position + first_size;
            if !incomplete {
                // One ranged fetch for the whole read, not one per window chunk.
                window.fill(first.position, limit)?;
                while let Some(header) = window.header_at(next)? {
                    if taken + u64::from(header.total_size) > limit || batch_base(&header) > to {
                        break;
                    }
                    taken += u64::from(header.total_size);
                    next += u64::from(header.total_size);
                }
            }
            window.copy(first.position, taken, buf)?;
            let view = self.published.load();
            self.metrics.read(taken);
            let fetch = CopiedFetch {
                position: first.position,
                offsets: SliceOffsets {
                    segment_base_offset: segment.base_offset,
                    start_offset,
                    first_batch_last_offset: first.last_offset,
                    first_batch_size: first.total_size,
                    first_entry_incomplete: incomplete,
                },
                fetch_offset: OffsetMetadata {
                    offset: start_offset,
                    segment_base_offset: segment.base_offset,
                    position: first.position,
                },
                high_watermark: view.high_watermark.offset,
                log_start_offset: self.log_start_offset(),
                log_end_offset: view.end.offset,
                last_stable_offset: view.last_stable_offset(),
            };
            return Ok(Some((fetch, to + 1)));
        }
        Ok(None)
    }

    /// [`Log::read`] of an offset in the remote tier: what [`Log::remote_read_into`] fetches,
    /// in a [`FileSlice`] over an unlinked sparse temporary file holding the bytes at their
    /// positions in the remote `.log` (so the slice's position is the segment's, and
    /// `send_to` works as for a local slice); with `read_committed`, the aborted
    /// transactions from the start offset to the remote segment's end.
    pub(crate) fn remote_read(
        &self,
        tier: &dyn RemoteTier,
        start_offset: i64,
        max_bytes: u32,
        isolation: crate::Isolation,
        min_one_message: bool,
    ) -> Result<Option<FetchData>> {
        let mut buf = Vec::new();
        let Some((fetch, upper)) =
            self.remote_read_ranged(tier, start_offset, max_bytes, min_one_message, &mut buf)?
        else {
            return Ok(None);
        };
        let slice = remote_slice(&buf, fetch.position, fetch.offsets)?;
        let aborted_transactions = match isolation {
            // To the end of the range read from (the chain's, as the read's).
            crate::Isolation::ReadCommitted => {
                Some(self.aborted_transactions(start_offset, upper)?)
            }
            _ => None,
        };
        Ok(Some(FetchData {
            slice,
            fetch_offset: fetch.fetch_offset,
            high_watermark: fetch.high_watermark,
            log_start_offset: fetch.log_start_offset,
            log_end_offset: fetch.log_end_offset,
            last_stable_offset: fetch.last_stable_offset,
            aborted_transactions,
        }))
    }

    /// What [`Log::read_into`] returns for a fetch of `start_offset` from the remote tier
    /// that the tier's fetch quota turned away (`RemoteTier::fetch_throttle_time_ms`): no
    /// bytes, the fetch offset itself, the log's current bounds (Kafka's `ReplicaManager`
    /// answers such a fetch with empty records and the partition's high watermark, log start
    /// and log end offsets, never blocking it). The caller fetches again later.
    pub(crate) fn throttled_copied_fetch(&self, start_offset: i64) -> CopiedFetch {
        let view = self.published.load();
        CopiedFetch {
            position: 0,
            offsets: empty_offsets(start_offset),
            fetch_offset: OffsetMetadata {
                offset: start_offset,
                segment_base_offset: start_offset,
                position: 0,
            },
            high_watermark: view.high_watermark.offset,
            log_start_offset: self.log_start_offset(),
            log_end_offset: view.end.offset,
            last_stable_offset: view.last_stable_offset(),
        }
    }

    /// [`Log::read`]'s answer for a fetch the fetch quota turned away (as
    /// [`Log::throttled_copied_fetch`]): an empty slice, no aborted transactions (an empty
    /// list for `read_committed`).
    pub(crate) fn throttled_fetch(
        &self,
        start_offset: i64,
        isolation: crate::Isolation,
    ) -> Result<FetchData> {
        let fetch = self.throttled_copied_fetch(start_offset);
        Ok(FetchData {
            slice: remote_slice(&[], 0, fetch.offsets)?,
            fetch_offset: fetch.fetch_offset,
            high_watermark: fetch.high_watermark,
            log_start_offset: fetch.log_start_offset,
            log_end_offset: fetch.log_end_offset,
            last_stable_offset: fetch.last_stable_offset,
            aborted_transactions: (isolation == crate::Isolation::ReadCommitted).then(Vec::new),
        })
    }

    /// The aborted transactions overlapping `[start_offset, upper_bound_offset)` from the
    /// remote segments (Kafka's `RemoteLogManager.collectAbortedTransactions`, walking
    /// `nextSegmentWithTxnIndex`), and whether they are complete (an entry's last stable offset
    /// reached the bound, so the local segments add nothing).
    ///
    /// As Kafka's, the walk does not stop at a segment past the bound: a transaction that
    /// began below the bound may be aborted by a marker in any later segment (remote or local),
    /// and only an entry whose last stable offset reaches the bound says none is left open.
    pub(crate) fn remote_aborted(
        &self,
        tier: &dyn RemoteTier,
        start_offset: i64,
        upper_bound_offset: i64,
    ) -> Result<(Vec<AbortedTransaction>, bool)> {
        let mut out = Vec::new();
        for LineageSegment { segment, from, to } in
            self.remote_segments_from(tier, start_offset)?.iter()
        {
            let Some(bytes) = self.remote_index(tier, &segment, RemoteIndexKind::Transaction)?
            else {
                continue;
            };
            let entries = seglog_segment::decode_txn_index(&bytes).map_err(|(position, v)| {
                Error::CorruptRemote {
                    what: "txn index",
                    base_offset: segment.base_offset,
                    id: segment.id,
                    position,
                    reason: format!("unknown entry version {v}"),
                }
            })?;
            // Only the entries whose marker lies in the range the chain serves from this copy
            // (a former leader's aborts past it are not the lineage's).
            for txn in entries
                .into_iter()
                .filter(|t| (from..=to).contains(&t.last_offset))
            {
                if txn.last_offset >= start_offset && txn.first_offset < upper_bound_offset {
                    out.push(AbortedTransaction {
                        producer_id: txn.producer_id,
                        first_offset: txn.first_offset,
                    });
                }
                if txn.last_stable_offset >= upper_bound_offset {
                    return Ok((out, true));
                }
            }
        }
        Ok((out, false))
    }

    /// The first record at or after `target_ms` in the remote segments, at or above the log
    /// start offset (Kafka's `RemoteLogManager.findOffsetByTimestamp`: the first remote segment
    /// whose max timestamp reaches the target, its time index for where to start).
    pub(crate) fn remote_offset_for_timestamp(
        &self,
        tier: &dyn RemoteTier,
        target_ms: i64,
    ) -> Result<Option<TimestampAndOffset>> {
        let start = self.log_start_offset();
        let local = self.local_log_start_offset();
        for LineageSegment { segment, from, to } in self.remote_segments_from(tier, start)?.iter() {
            if from >= local {
                break;
            }
            if segment.max_timestamp_ms < target_ms {
                continue;
            }
            let from = self
                .remote_time_floor(tier, &segment, target_ms)?
                .max(start)
                .max(from);
            let position = self.remote_position(tier, &segment, from)?;
            let mut window = RemoteWindow::new(self, tier, &segment, position);
            let mut next = window.batch_from(from)?.map(|h| h.position);
            while let Some(at) = next {
                let Some(header) = window.header_at(at)? else {
                    break;
                };
                next = Some(at + u64::from(header.total_size));
                // Past the range the chain serves from this copy: the next copy's.
                if batch_base(&header) > to {
                    break;
                }
                if header.last_offset < from || header.max_timestamp_ms < target_ms {
                    continue;
                }
                let bytes = window.bytes(at, u64::from(header.total_size))?;
                let batch = BatchRef::parse(&bytes, at).map_err(|e| window.corrupt(at, e))?;
                for record in batch.records(usize::MAX) {
                    let record = record.map_err(|e| window.corrupt(at, e))?;
                    if record.offset > to {
                        break;
                    }
                    if record.offset >= from && record.timestamp_ms.unwrap_or(-1) >= target_ms {
                        return Ok(Some(TimestampAndOffset {
                            timestamp_ms: record.timestamp_ms.unwrap_or(-1),
                            offset: record.offset,
                            leader_epoch: (header.partition_leader_epoch >= 0)
                                .then_some(header.partition_leader_epoch),
                        }));
                    }
                }
            }
        }
        Ok(None)
    }

    /// The offset of the time index's floor entry for `target_ms` (Kafka's
    /// `TimeIndex.lookup`), the segment's base without one.
    fn remote_time_floor(
        &self,
        tier: &dyn RemoteTier,
        segment: &RemoteSegment,
        target_ms: i64,
    ) -> Result<i64> {
        let Some(index) = self.remote_index(tier, segment, RemoteIndexKind::Time)? else {
            return Ok(segment.base_offset);
        };
        let mut offset = segment.base_offset;
        for chunk in index.chunks_exact(TimeEntry::SIZE) {
            let mut bytes = [0; TimeEntry::SIZE];
            bytes.copy_from_slice(chunk);
            let entry = TimeEntry::decode(&bytes);
            if entry.timestamp_ms >= target_ms {
                break;
            }
            offset = segment.base_offset + i64::from(entry.relative_offset);
        }
        Ok(offset)
    }
}

/// The offsets of an empty slice at `offset` (as `FileSlice::empty`'s).
fn empty_offsets(offset: i64) -> SliceOffsets {
    SliceOffsets {
        segment_base_offset: offset,
        start_offset: offset,
        first_batch_last_offset: -1,
        first_batch_size: 0,
        first_entry_incomplete: false,
    }
}

/// The first offset of a batch (the last one for a legacy batch, which does not say).
fn batch_base(header: &BatchHeader) -> i64 {
    header.base_offset.unwrap_or(header.last_offset)
}

/// [`Error::CorruptRemote`] for entry `entry` of a remote offset index.
fn corrupt_index(segment: &RemoteSegment, entry: usize, reason: &str) -> Error {
    Error::CorruptRemote {
        what: "offset index",
        base_offset: segment.base_offset,
        id: segment.id,
        position: (entry * OffsetEntry::SIZE) as u64,
        reason: format!("entry {entry} holds {reason}"),
    }
}

/// A [`FileSlice`] over `bytes` written at `position` of a new, already unlinked temporary
/// file (sparse below `position`): nothing is left behind, whatever happens to the process.
fn remote_slice(bytes: &[u8], position: u64, offsets: SliceOffsets) -> Result<FileSlice> {
    use std::os::unix::fs::FileExt;
    // A process-wide counter for unique names: a `static` needs std's const constructor
    // (not the loom shim, see `sync.rs`), and no model involves it.
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let path = std::env::temp_dir().join(format!(
        "seglog-remote-read-{}-{}.log",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| Error::io("create remote read file", &path, e))?;
    std::fs::remove_file(&path).map_err(|e| Error::io("unlink remote read file", &path, e))?;
    file.write_all_at(bytes, position)
        .map_err(|e| Error::io("write remote read file", &path, e))?;
    Ok(FileSlice::over_file(
        Arc::new(file),
        path,
        position,
        bytes.len() as u64,
        offsets,
    ))
}

/// Bytes of a remote `.log` fetched in ranges as a walk over its batches needs them.
struct RemoteWindow<'a> {
    log: &'a Log,
    tier: &'a dyn RemoteTier,
    segment: &'a RemoteSegment,
    /// The position of `bytes[0]` in the remote `.log`.
    start: u64,
    bytes: Vec<u8>,
}

impl<'a> RemoteWindow<'a> {
    fn new(log: &'a Log, tier: &'a dyn RemoteTier, segment: &'a RemoteSegment, start: u64) -> Self {
        Self {
            log,
            tier,
            segment,
            start,
            bytes: Vec::new(),
        }
    }

    /// Makes sure the window covers `[at, at + len)` as far as the segment has bytes.
    fn fill(&mut self, at: u64, len: u64) -> Result<()> {
        let size = self.segment.size_in_bytes;
        let end = (at + len).min(size);
        if at < self.start {
            self.start = at;
            self.bytes.clear();
        }
        let have = self.start + self.bytes.len() as u64;
        if end <= have {
            return Ok(());
        }
        let upto = (have + (end - have).max(FETCH_CHUNK)).min(size);
        let fetched = self
            .tier
            .fetch_log(self.segment, have, Some(upto))
            .map_err(|e| self.log.remote_error(e))?;
        if fetched.is_empty() {
            return Err(self.short(have));
        }
        self.bytes.extend_from_slice(&fetched);
        Ok(())
    }

    /// The header of the whole batch at `at` (fetched), `None` at the segment's end.
    fn header_at(&mut self, at: u64) -> Result<Option<BatchHeader>> {
        let size = self.segment.size_in_bytes;
        if at >= size {
            return Ok(None);
        }
        self.fill(at, 64)?;
        loop {
            let from = usize::try_from(at - self.start).unwrap_or(usize::MAX);
            let available = self.bytes.get(from..).unwrap_or(&[]);
            let available_len = available.len() as u64;
            let remaining = size - at;
            match BatchHeader::parse(available, at, available_len) {
                Ok(HeaderRead::Batch(header)) => return Ok(Some(header)),
                Ok(HeaderRead::PartialTail { total_size }) => {
                    if u64::from(total_size) > remaining {
                        return Err(self.short(at));
                    }
                    self.fill(at, u64::from(total_size))?;
                }
                // Fewer than a header's first bytes left in the segment: its end.
                Ok(HeaderRead::End) if available_len >= remaining => return Ok(None),
                Ok(HeaderRead::End) => self.fill(at, available_len + 64)?,
                Err(e) => return Err(self.corrupt(at, e)),
            }
        }
    }

    /// The first batch from the window's start whose last offset is at or after `offset`.
    fn batch_from(&mut self, offset: i64) -> Result<Option<BatchHeader>> {
        let mut at = self.start;
        while let Some(header) = self.header_at(at)? {
            if header.last_offset >= offset {
                return Ok(Some(header));
            }
            at += u64::from(header.total_size);
        }
        Ok(None)
    }

    /// `len` bytes from `at`.
    fn bytes(&mut self, at: u64, len: u64) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.copy(at, len, &mut out)?;
        Ok(out)
    }

    /// Appends `len` bytes from `at` to `out`.
    fn copy(&mut self, at: u64, len: u64, out: &mut Vec<u8>) -> Result<()> {
        self.fill(at, len)?;
        let from = at.saturating_sub(self.start) as usize;
        let to = from + len as usize;
        if at < self.start || to > self.bytes.len() {
            return Err(self.short(at));
        }
        out.extend_from_slice(&self.bytes[from..to]);
        Ok(())
    }

    fn short(&self, at: u64) -> Error {
        Error::CorruptRemote {
            what: "log",
            base_offset: self.segment.base_offset,
            id: self.segment.id,
            position: at,
            reason: "the tier returned fewer bytes than the segment's size".to_string(),
        }
    }

    fn corrupt(&self, at: u64, e: seglog_records::Error) -> Error {
        Error::CorruptRemote {
            what: "log",
            base_offset: self.segment.base_offset,
            id: self.segment.id,
            position: at,
            reason: e.to_string(),
        }
    }
}

/// The lineage chain from the range holding an offset on (`Log::remote_segments_from`): the
/// shared chain and where to start, so a read clones only the ranges it visits.
struct ChainFrom {
    chain: Arc<Vec<LineageSegment>>,
    first: usize,
}

impl ChainFrom {
    /// The ranges, oldest first.
    fn iter(&self) -> impl Iterator<Item = LineageSegment> + '_ {
        self.chain[self.first..].iter().cloned()
    }
}
