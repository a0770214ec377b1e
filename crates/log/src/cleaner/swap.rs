//! The swap of cleaned segments into the log (Kafka's `LocalLog.replaceSegments`), crash-safe
//! at every step.
//!
//! Under the writer lock, for one cleaned segment replacing a group of old ones (the first at
//! the same base offset):
//!
//! 1. rename the cleaned segment's files `.cleaned` → `.swap`, fsync the directory;
//! 2. rename every old segment's files to `.deleted` (unlinked after `file.delete.delay.ms`;
//!    readers holding them keep reading), fsync the directory;
//! 3. rename the `.swap` files to their final names, fsync the directory;
//! 4. publish the segment map with the new segment in place of the old ones, and delete the
//!    producer snapshots at the old bases the new segment does not take over.
//!
//! A crash (or power loss: every step's renames are durable before the next step starts)
//! leaves one of these states, which the loader (`load.rs`, Kafka's `LogLoader`) finishes:
//! `.cleaned` files only, or a `.swap` `.log` beside a `.cleaned` index → the cleaned files and
//! swaps at or above them are deleted, the old segments stay (the old state); a complete
//! `.swap` set → every non-suffixed file at the swap's base or in `[swap base, swap next
//! offset)` is deleted and the swaps are renamed (the new state).
//!
//! The cleaned segment holds what Kafka's cleaner keeps and nothing more: it is empty when no
//! record of the group survives, and its next offset can be lower than the base of the group's
//! last old segments. The replaced range is then only known from the group itself (in memory,
//! step 4); after a crash between steps 1 and 2 the loader's rule, Kafka's `LogLoader` rule,
//! leaves those old segments at or past the swap's next offset beside it. Such a survivor holds
//! only records this round drops (any kept record would lie below the swap's next offset), so
//! the log is the cleaned log below that offset and the old one from there: offsets ascend; a
//! record the cleaned part dropped is superseded by its key's latest record, which is still
//! in the log (kept, or in a survivor or a later segment) unless it is a tombstone the round
//! dropped too; no marker loses the data it closes (data precedes its marker, and a marker the
//! round drops has no data left); every producer keeps its last batch (no round drops it). The
//! next round, which starts from the same cleaner checkpoint, drops the survivors again.

use std::sync::Arc;

use seglog_segment::{Segment, TempSuffix};

use crate::deletion::Doomed;
use crate::log::Log;
use crate::sync::Ordering;
use crate::view::LogView;
use crate::{Error, Result};

/// One file operation of the swap, in order (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    CleanedToSwap,
    SyncAfterSwap,
    OldToDeleted(usize),
    SyncAfterDeleted,
    SwapToFinal,
    SyncAfterFinal,
}

/// The steps replacing `old` segments.
pub(crate) fn steps(old: usize) -> Vec<Step> {
    let mut steps = vec![Step::CleanedToSwap, Step::SyncAfterSwap];
    steps.extend((0..old).map(Step::OldToDeleted));
    steps.extend([
        Step::SyncAfterDeleted,
        Step::SwapToFinal,
        Step::SyncAfterFinal,
    ]);
    steps
}

/// Why a round stopped without swapping.
pub(crate) const ABORTED_BY_TRUNCATION: &str = "the log was truncated during the round";
/// Why a round stopped without swapping.
pub(crate) const ABORTED_BY_CHANGE: &str = "a segment being cleaned left the log during the round";

impl Log {
    /// Replaces `old` (consecutive segments of the map, oldest first) by `cleaned`, a sealed,
    /// flushed segment named `.cleaned` at the first old base. Aborts (deleting the cleaned
    /// files) when a truncation ran since `truncations` or an old segment left the map.
    /// `step_limit` stops after that many steps without publishing (a crash, for tests).
    ///
    /// # Errors
    /// [`Error::CleaningAborted`]; [`Error::ReadOnly`], [`Error::Closed`],
    /// [`Error::Poisoned`]; I/O errors of a rename or directory fsync, which poison the log
    /// (its next open finishes or rolls back the swap).
    pub(crate) fn replace_segments(
        &self,
        cleaned: &Arc<Segment>,
        old: &[(i64, Arc<Segment>)],
        truncations: u64,
        now_ms: i64,
        step_limit: usize,
    ) -> Result<()> {
        let writer = self.writable()?;
        let view = self.published.load();
        let abort = |reason| {
            // Best effort: whatever is left is deleted by the next load.
            let _ = cleaned.delete_files();
            Err(Error::CleaningAborted {
                dir: self.dir.clone(),
                reason,
            })
        };
        if self.truncations.load(Ordering::Acquire) != truncations {
            return abort(ABORTED_BY_TRUNCATION);
        }
        let present = old.iter().all(|(base, segment)| {
            view.segments
                .floor(*base)
                .is_some_and(|(b, s)| b == *base && Arc::ptr_eq(s, segment))
        });
        if !present {
            return abort(ABORTED_BY_CHANGE);
        }
        let due = now_ms.saturating_add(self.settings().config.file_delete_delay_ms);
        for step in steps(old.len()).into_iter().take(step_limit) {
            match step {
                Step::CleanedToSwap => cleaned
                    .rename_suffix(Some(TempSuffix::Swap))
                    .map_err(|e| self.poisoned_by("rename", e))?,
                Step::SyncAfterSwap | Step::SyncAfterDeleted | Step::SyncAfterFinal => {
                    self.sync_dir_or_poison()?;
                }
                Step::OldToDeleted(i) => old[i]
                    .1
                    .mark_deleted()
                    .map_err(|e| self.poisoned_by("rename", e))?,
                Step::SwapToFinal => cleaned
                    .rename_suffix(None)
                    .map_err(|e| self.poisoned_by("rename", e))?,
            }
        }
        if step_limit < steps(old.len()).len() {
            return Ok(());
        }
        let mut segments = (*view.segments).clone();
        for (base, _) in old {
            segments.remove(*base);
        }
        segments.insert(cleaned.base_offset(), Arc::clone(cleaned));
        self.published.publish(LogView {
            segments: Arc::new(segments),
            ..(*view).clone()
        });
        for (_, segment) in old {
            self.deletions
                .push(due, Doomed::Segment(Arc::clone(segment)));
        }
        // Kafka's `deleteProducerSnapshots` of the replaced segments whose base offsets are
        // gone (Kafka renames them `.deleted` and unlinks them later; seglog unlinks them now,
        // as for retention). A crash before this leaves them stray: the next load removes
        // them (Kafka's `removeStraySnapshots`).
        let gone: Vec<i64> = old
            .iter()
            .map(|(base, _)| *base)
            .filter(|base| *base != cleaned.base_offset())
            .collect();
        self.producers_segments_deleted(&gone, view.log_start_offset)?;
        drop(writer);
        Ok(())
    }
}
