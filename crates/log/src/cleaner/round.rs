//! One cleaning round (Kafka's `Cleaner.doClean`): plan, offset map, then each group of
//! segments copied into a `.cleaned` segment and swapped in.

use std::path::Path;
use std::sync::Arc;

use seglog_records::{BatchRef, Batches, HeaderRead};
use seglog_segment::{ActiveSegment, FileKind, FileType, Segment, TempSuffix, file_path};

use super::filter::{Kept, Rules, filter_batch};
use super::offset_map::{OffsetMap, hash_key};
use super::plan::{self, Bounds, SegmentStat};
use super::stats::{Needed, fill_index_bytes};
use super::txn::{self, AbortedTxn, CleanedTxns, TxnScan, damaged};
use super::{CleanReport, GroupReport};
use crate::Result;
use crate::fsutil::remove_if_exists;
use crate::log::Log;
use crate::sync::Ordering;

/// Bytes read from a segment at once (a batch larger than this is read whole).
const READ_CHUNK: u64 = 1 << 20;
/// The cleaned segment is appended in writes of about this many bytes (each one append, so
/// each may add one index entry, as Kafka's cleaner appends one I/O buffer at a time).
const WRITE_CHUNK: usize = 64 << 10;

/// The segments of a snapshot, with their statistics.
pub(crate) struct Snapshot {
    pub(crate) segments: Vec<(i64, Arc<Segment>)>,
    pub(crate) stats: Vec<SegmentStat>,
}

/// What the plan of a round found.
pub(crate) struct Plan {
    pub(crate) snapshot: Snapshot,
    pub(crate) offsets: plan::Offsets,
    pub(crate) compaction_delay_ms: i64,
    scan: Option<TxnScan>,
}

impl Log {
    /// Plans a round at `now_ms`: the offsets and whether the log is due. `scan` also walks the
    /// headers for the transactional state (the round needs it; a due check does not, and
    /// bounds cleaning by the high watermark alone).
    pub(crate) fn plan_round(&self, now_ms: i64, scan: bool) -> Result<Plan> {
        let view = self.published.load();
        let segments: Vec<(i64, Arc<Segment>)> = view
            .segments
            .iter()
            .map(|(b, s)| (b, Arc::clone(s)))
            .collect();
        let settings = self.settings();
        let config = &settings.config;
        let (checkpoint, _) = self.home.cleaner_checkpoint();
        let bounds = |lso| Bounds {
            checkpoint,
            log_start_offset: view.log_start_offset,
            log_end_offset: view.end.offset,
            last_stable_offset: lso,
            min_compaction_lag_ms: config.min_compaction_lag_ms,
            now_ms,
        };
        let last_stable_offset = view.last_stable_offset();
        let (first_dirty, _) = plan::first_dirty(&bounds(last_stable_offset));
        let needed = Needed::for_lags(
            config.min_compaction_lag_ms,
            config.max_compaction_lag_ms,
            now_ms,
        );
        let stats = self.segment_stats(&segments, first_dirty, needed)?;
        let mut offsets = plan::offsets(&stats, bounds(last_stable_offset));
        let scan = if scan {
            let mut found = txn::scan(segments.iter().map(|(_, s)| s), offsets.first_dirty)?;
            found.last_records = self.last_records_of_active_producers();
            // The last stable offset, and never past the oldest open transaction the batches
            // show.
            let lso = found
                .first_unstable_offset
                .map_or(last_stable_offset, |f| f.min(last_stable_offset));
            offsets = plan::offsets(&stats, bounds(lso));
            Some(found)
        } else {
            None
        };
        let compaction_delay_ms = plan::max_compaction_delay_ms(
            &stats,
            offsets.first_dirty,
            config.max_compaction_lag_ms,
            now_ms,
        );
        Ok(Plan {
            snapshot: Snapshot { segments, stats },
            offsets,
            compaction_delay_ms,
            scan,
        })
    }

    /// Kafka's `lastRecordsOfActiveProducers`: every producer in the state with the last
    /// offset of its last data batch (if one is retained) and its epoch.
    fn last_records_of_active_producers(&self) -> std::collections::HashMap<i64, txn::LastRecord> {
        self.producer_states()
            .into_iter()
            .map(|entry| {
                let last = entry.last_data_offset();
                (
                    entry.producer_id,
                    txn::LastRecord {
                        last_data_offset: (last >= 0).then_some(last),
                        producer_epoch: entry.producer_epoch,
                    },
                )
            })
            .collect()
    }

    /// One round (see the crate docs); `force` runs it whatever the dirty ratio. `None` when
    /// there is nothing to clean. `step_limit` stops the first swap after that many steps (a
    /// crash, for tests).
    pub(crate) fn clean_round(
        &self,
        now_ms: i64,
        force: bool,
        step_limit: usize,
    ) -> Result<Option<CleanReport>> {
        let truncations = self.truncations.load(Ordering::Acquire);
        let Plan {
            snapshot,
            offsets,
            compaction_delay_ms,
            scan,
        } = self.plan_round(now_ms, true)?;
        let scan = scan.unwrap_or_default();
        if offsets.reset_checkpoint {
            self.home
                .write_cleaner_checkpoint(offsets.first_dirty, false)?;
        }
        let due = force
            || plan::is_due(
                &offsets,
                compaction_delay_ms,
                self.settings().config.min_cleanable_dirty_ratio.0,
            );
        let dirty = offsets.cleanable_bytes > 0 && offsets.first_dirty < offsets.first_uncleanable;
        // Nothing dirty, but a kept tombstone or marker reached its delete horizon: a round
        // over the clean section (with an empty offset map) purges it (`purge_horizon.rs`).
        if !(due && dirty || self.purge_due(now_ms)?) {
            return Ok(None);
        }
        // Everything cleaned lies below the recovery point, durably checkpointed before the
        // first swap, so a crash does not ask recovery to validate the cleaned segments again
        // (their gaps, an empty segment or one ending below the next base, are kept by the
        // loader in any case, as Kafka keeps them).
        self.flush_up_to(offsets.first_uncleanable)?;
        let Snapshot {
            segments,
            mut stats,
        } = snapshot;
        let mut report = CleanReport {
            first_dirty_offset: offsets.first_dirty,
            first_uncleanable_offset: offsets.first_uncleanable,
            clean_bytes: offsets.clean_bytes,
            cleanable_bytes: offsets.cleanable_bytes,
            ..CleanReport::default()
        };
        // The legacy horizon: `delete.retention.ms` before the mtime of the last clean segment.
        let clean = plan::range(&stats, 0, offsets.first_dirty).len();
        let legacy_horizon_ms = match clean.checked_sub(1) {
            Some(i) => segments[i]
                .1
                .last_modified_ms()?
                .saturating_sub(self.settings().config.delete_retention_ms),
            None => 0,
        };
        let mut map = self.build_offset_map(&segments, &stats, &offsets, &scan, &mut report)?;
        // The round covers at least the clean section (all of a purge round's work: nothing
        // dirty to map); a record there whose key the map lacks is its key's latest.
        map.update_latest_offset(offsets.first_dirty - 1);
        let end_offset = map.latest_offset() + 1;
        report.end_offset = end_offset;
        // Never the active segment, whatever the checkpoint says: the writer appends to its
        // file, so a swap of it would leave later appends in the replaced file (lost). A
        // checkpoint above the active segment's base once made a purge round (whose end is
        // the checkpoint) replace it: a truncation had lowered the checkpoint only to its target.
        let active_base = segments.last().map_or(i64::MIN, |(b, _)| *b);
        let below_end = stats
            .iter()
            .take_while(|s| s.base_offset < end_offset && s.base_offset < active_base)
            .count();
        fill_index_bytes(&segments, &mut stats, below_end);
        let groups = plan::group(
            &stats[..below_end],
            self.settings().segment.segment_bytes.into(),
            self.settings().segment.max_index_bytes.into(),
            offsets.first_uncleanable,
        );
        let rules = Rules {
            map: &map,
            now_ms,
            delete_retention_ms: self.settings().config.delete_retention_ms,
            last_records: &scan.last_records,
            high_watermark: self.published.load().high_watermark.offset,
            max_decompressed_bytes: crate::consumer::DEFAULT_MAX_DECOMPRESSED_BYTES,
        };
        let mut txns = CleanedTxns::default();
        let mut aborted = scan.aborted.iter().copied().peekable();
        for (i, range) in groups.into_iter().enumerate() {
            let group = &segments[range.clone()];
            let next_base = segments.get(range.end).map(|(b, _)| *b);
            let limit = if i == 0 { step_limit } else { usize::MAX };
            let cleaned = self.clean_group(
                group,
                next_base,
                &rules,
                &mut txns,
                &mut aborted,
                legacy_horizon_ms,
                &mut report,
            )?;
            let segment_report = GroupReport {
                base_offset: group[0].0,
                replaced: group.len(),
                bytes_before: group.iter().map(|(_, s)| s.size()).sum(),
                bytes_after: cleaned.size(),
            };
            self.replace_segments(&cleaned, group, truncations, now_ms, limit)?;
            if limit != usize::MAX {
                return Ok(Some(report));
            }
            report.segments_cleaned += segment_report.replaced;
            report.segments_after += 1;
            report.bytes_before += segment_report.bytes_before;
            report.bytes_after += segment_report.bytes_after;
            report.groups.push(segment_report);
        }
        // Kafka's `doneCleaning`: the dirty section now starts at the end of the round. Under
        // the writer lock, so a truncation's lower value is never overwritten.
        let writer = self.writable()?;
        if self.truncations.load(Ordering::Acquire) == truncations {
            self.home.write_cleaner_checkpoint(end_offset, false)?;
            report.checkpoint = Some(end_offset);
        }
        drop(writer);
        Ok(Some(report))
    }

    /// Kafka's `buildOffsetMap`: key → latest offset over `[first_dirty, first_uncleanable)`,
    /// stopping where the map fills (aborted transactions' data is not mapped).
    fn build_offset_map(
        &self,
        segments: &[(i64, Arc<Segment>)],
        stats: &[SegmentStat],
        offsets: &plan::Offsets,
        scan: &TxnScan,
        report: &mut CleanReport,
    ) -> Result<OffsetMap> {
        let (start, end) = (offsets.first_dirty, offsets.first_uncleanable);
        let mut map = OffsetMap::new(
            self.settings().config.cleaner_dedupe_buffer_size,
            scan.records_from,
        );
        let dirty = plan::range(stats, start, end);
        let first = dirty.first().map_or(stats.len(), |d| {
            stats
                .iter()
                .position(|s| s.base_offset == d.base_offset)
                .unwrap_or(stats.len())
        });
        let mut txns = CleanedTxns::default();
        txns.add_aborted(
            scan.aborted
                .iter()
                .filter(|t| t.last_offset >= start && t.first_offset < end)
                .copied(),
        );
        'segments: for (i, _) in dirty.iter().enumerate() {
            let (_, segment) = &segments[first + i];
            let next_start = segments
                .get(first + i + 1)
                .map_or(end, |(b, _)| (*b).min(end));
            let path = segment.log_path();
            let mut full = false;
            for_each_batch(segment, &path, |batch| {
                let header = batch.header();
                report.map_bytes_read += u64::from(header.total_size);
                if header.is_control {
                    let control = batch
                        .control_record()
                        .map_err(|e| damaged(&path, e))?
                        .map(|c| c.control_type);
                    txns.on_control(header, control);
                } else if !txns.on_batch(header) {
                    for record in batch.records(crate::consumer::DEFAULT_MAX_DECOMPRESSED_BYTES) {
                        let record = record.map_err(|e| damaged(&path, e))?;
                        if let Some(key) = &record.key
                            && record.offset >= start
                        {
                            if map.is_full() {
                                full = true;
                                return Ok(false);
                            }
                            map.put(hash_key(key), record.offset);
                        }
                        report.map_records_read += 1;
                    }
                }
                if header.last_offset >= start {
                    map.update_latest_offset(header.last_offset);
                }
                Ok(true)
            })?;
            if full {
                report.map_full = true;
                break 'segments;
            }
            map.update_latest_offset(next_start - 1);
        }
        report.keys = map.len() as u64;
        report.map_memory_bytes = map.memory_bytes() as u64;
        Ok(map)
    }

    /// Kafka's `cleanSegments`: copies what `rules` keep of `group` into a new `.cleaned`
    /// segment at the group's first base (empty when nothing is kept), sealed, flushed and
    /// given the last old segment's mtime, with a `.txnindex.cleaned` of the aborted
    /// transactions whose markers stay.
    #[allow(clippy::too_many_arguments)]
    fn clean_group(
        &self,
        group: &[(i64, Arc<Segment>)],
        next_base: Option<i64>,
        rules: &Rules<'_>,
        txns: &mut CleanedTxns,
        aborted: &mut std::iter::Peekable<impl Iterator<Item = AbortedTxn>>,
        legacy_horizon_ms: i64,
        report: &mut CleanReport,
    ) -> Result<Arc<Segment>> {
        let base = group[0].0;
        remove_cleaned_files(&self.dir, base)?;
        let result = self.write_cleaned(
            group,
            next_base,
            rules,
            txns,
            aborted,
            legacy_horizon_ms,
            report,
        );
        if result.is_err() {
            // Best effort: the next load deletes `.cleaned` files anyway.
            let _ = remove_cleaned_files(&self.dir, base);
        }
        result
    }

    #[allow(clippy::too_many_arguments)]
    fn write_cleaned(
        &self,
        group: &[(i64, Arc<Segment>)],
        next_base: Option<i64>,
        rules: &Rules<'_>,
        txns: &mut CleanedTxns,
        aborted: &mut std::iter::Peekable<impl Iterator<Item = AbortedTxn>>,
        legacy_horizon_ms: i64,
        report: &mut CleanReport,
    ) -> Result<Arc<Segment>> {
        let base = group[0].0;
        let mut active = ActiveSegment::create_with_suffix(
            &self.dir,
            base,
            &self.settings().segment,
            Some(TempSuffix::Cleaned),
        )?;
        let mut out = Output::default();
        for (i, (segment_base, segment)) in group.iter().enumerate() {
            let upper = match group.get(i + 1) {
                Some((b, _)) => *b,
                None => next_base.map_or_else(|| segment.read_next_offset(), Ok)?,
            };
            while let Some(txn) = aborted.next_if(|t| t.first_offset < upper) {
                if txn.last_offset >= *segment_base {
                    txns.add_aborted([txn]);
                }
            }
            let retain_legacy_deletes = segment.last_modified_ms()? > legacy_horizon_ms;
            // Kafka reads the high watermark for each segment it cleans.
            let rules = Rules {
                high_watermark: self.published.load().high_watermark.offset,
                ..*rules
            };
            let path = segment.log_path();
            for_each_batch(segment, &path, |batch| {
                batch.ensure_valid().map_err(|e| damaged(&path, e))?;
                let header = *batch.header();
                let filtered = filter_batch(&path, &batch, &rules, txns, retain_legacy_deletes)?;
                report.records_before += filtered.records_read;
                report.records_after += filtered.records_kept;
                match filtered.kept {
                    Kept::Dropped => {}
                    Kept::Original => out.push(batch.as_bytes(), &header),
                    Kept::Rewritten(bytes) => {
                        let written = BatchRef::parse(&bytes, 0).map_err(|e| damaged(&path, e))?;
                        out.push(&bytes, written.header());
                    }
                }
                if out.bytes.len() >= WRITE_CHUNK {
                    out.flush_into(&mut active)?;
                }
                Ok(true)
            })?;
        }
        out.flush_into(&mut active)?;
        // Kafka's `cleanedIndex`: the aborted transactions whose markers stay.
        for txn in std::mem::take(&mut txns.retained) {
            active.segment().append_aborted_txn(txn)?;
        }
        let cleaned = active.seal()?;
        cleaned.flush()?;
        if let Some((_, last)) = group.last() {
            cleaned.set_last_modified_ms(last.last_modified_ms()?)?;
        }
        Ok(cleaned)
    }
}

/// Bytes waiting to be appended to the cleaned segment, with Kafka's append arguments.
#[derive(Default)]
struct Output {
    bytes: Vec<u8>,
    largest_offset: i64,
    max_timestamp_ms: i64,
    offset_of_max_timestamp: i64,
}

impl Output {
    fn push(&mut self, bytes: &[u8], header: &seglog_records::BatchHeader) {
        if self.bytes.is_empty() {
            self.max_timestamp_ms = -1;
            self.offset_of_max_timestamp = -1;
        }
        self.bytes.extend_from_slice(bytes);
        self.largest_offset = header.last_offset;
        if header.max_timestamp_ms > self.max_timestamp_ms {
            self.max_timestamp_ms = header.max_timestamp_ms;
            self.offset_of_max_timestamp = header.last_offset;
        }
    }

    fn flush_into(&mut self, active: &mut ActiveSegment) -> Result<()> {
        if !self.bytes.is_empty() {
            active.append(
                self.largest_offset,
                self.max_timestamp_ms,
                self.offset_of_max_timestamp,
                &self.bytes,
            )?;
            self.bytes.clear();
        }
        Ok(())
    }
}

/// Calls `f` on every whole batch of `segment`, in order, reading it in chunks; `f` returns
/// false to stop. A torn tail ends the walk quietly.
fn for_each_batch(
    segment: &Segment,
    path: &Path,
    mut f: impl FnMut(BatchRef<'_>) -> Result<bool>,
) -> Result<()> {
    let size = segment.size();
    let mut position = 0u64;
    let mut want = READ_CHUNK;
    let mut buf = Vec::new();
    while position < size {
        let len = (size - position).min(want);
        buf.clear();
        segment.slice(position, len)?.read_into(&mut buf)?;
        let mut batches = Batches::new(&buf, position);
        for batch in batches.by_ref() {
            if !f(batch.map_err(|e| damaged(path, e))?)? {
                return Ok(());
            }
        }
        let valid = batches.valid_bytes();
        if valid == 0 {
            // The next batch does not fit the chunk: read it whole, if the segment holds it.
            match seglog_records::BatchHeader::parse(&buf, position, size - position) {
                Ok(HeaderRead::Batch(h)) if u64::from(h.total_size) > len => {
                    want = u64::from(h.total_size);
                    continue;
                }
                Ok(HeaderRead::PartialTail { total_size }) if u64::from(total_size) > len => {
                    if position + u64::from(total_size) > size {
                        return Ok(());
                    }
                    want = u64::from(total_size);
                    continue;
                }
                _ => return Ok(()),
            }
        }
        position += valid;
        want = READ_CHUNK;
    }
    Ok(())
}

/// Removes the `.cleaned` files of `base` (a round that failed before, without a reload).
fn remove_cleaned_files(dir: &Path, base: i64) -> Result<()> {
    for file_type in [
        FileType::Log,
        FileType::Index,
        FileType::TimeIndex,
        FileType::TxnIndex,
    ] {
        let kind = FileKind::new(file_type).with_suffix(Some(TempSuffix::Cleaned));
        remove_if_exists(&file_path(dir, base, kind))?;
    }
    Ok(())
}
