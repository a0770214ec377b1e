//! A follower's rebuild from the remote tier (Kafka's `TierStateMachine.buildRemoteLogAuxState`):
//! when its fetch offset lies below the leader's local log start offset, the follower cannot
//! fetch the records in between from the leader; it takes the leader-epoch entries and the
//! producer snapshot of the remote segment ending just below the leader's local log start, and
//! starts an empty log there.

use std::sync::Arc;

use crate::log::Log;
use crate::remote::{RemoteError, RemoteErrorKind, RemoteIndexKind};
use crate::sync::lock;
use crate::view::LogView;
use crate::{Error, ProducerSnapshot, ProducerStateEntry, Result};

impl Log {
    /// Rebuilds this (follower's) log from the attached remote tier, as Kafka's
    /// `TierStateMachine.buildRemoteLogAuxState`: finds the remote segment holding
    /// `leader_local_log_start_offset - 1`, fetches its leader-epoch checkpoint and producer
    /// snapshot, truncates the log fully and starts it at that segment's end + 1 (Kafka's
    /// `truncateFullyAndStartAt`), installs the epochs below that offset and the producer
    /// state (written as the `.snapshot` at the new start), sets the highest offset in remote
    /// storage to the segment's end, and the log start offset to `leader_log_start_offset`
    /// (at or below the new start: the older records stay readable through the tier). Returns
    /// the new local log start offset, where the follower fetches from the leader next.
    ///
    /// # Errors
    /// [`Error::Remote`] when no tier is attached ([`RemoteErrorKind::Other`]), no remote
    /// segment holds the offset ([`RemoteErrorKind::NotFound`]) or a fetch fails;
    /// [`Error::CorruptRemote`] when the epochs or the snapshot do not decode (nothing changed
    /// then); the errors of [`Log::truncate_fully_and_start_at`].
    pub fn rebuild_from_remote_tier(
        &self,
        leader_local_log_start_offset: i64,
        leader_log_start_offset: i64,
    ) -> Result<i64> {
        let tier = self.remote.tier().ok_or_else(|| {
            self.remote_error(RemoteError::new(
                RemoteErrorKind::Other,
                "no remote tier attached to rebuild from",
            ))
        })?;
        let target = leader_local_log_start_offset - 1;
        // The follower's own epoch cache is about to be replaced by the leader's: of copies
        // holding the target (a former leader's beside the current one's), the latest listed.
        let segments = self.remote_segments(&*tier, true)?;
        let segment = segments
            .iter()
            .rev()
            .find(|s| s.contains(target))
            .cloned()
            .ok_or_else(|| {
                self.remote_error(RemoteError::not_found(format!(
                    "no remote segment holds offset {target}"
                )))
            })?;
        let next = segment.end_offset + 1;
        let corrupt = |what, position, reason: String| Error::CorruptRemote {
            what,
            base_offset: segment.base_offset,
            id: segment.id,
            position,
            reason,
        };
        // Fetch and decode both before changing anything.
        let epochs_bytes = tier
            .fetch_index(&segment, RemoteIndexKind::LeaderEpoch)
            .map_err(|e| self.remote_error(e))?;
        let text = std::str::from_utf8(&epochs_bytes).map_err(|e| {
            corrupt(
                "leader epoch checkpoint",
                e.valid_up_to() as u64,
                e.to_string(),
            )
        })?;
        let epochs = crate::parse_leader_epoch_checkpoint(text)
            .map_err(|(line, kind)| corrupt("leader epoch checkpoint", line, kind.to_string()))?;
        let snapshot_bytes = tier
            .fetch_index(&segment, RemoteIndexKind::ProducerSnapshot)
            .map_err(|e| self.remote_error(e))?;
        let snapshot = ProducerSnapshot::decode(&snapshot_bytes)
            .map_err(|problem| corrupt("producer snapshot", 0, problem.to_string()))?;

        self.truncate_fully_and_start_at(next)?;
        for entry in epochs.iter().filter(|e| e.start_offset < next) {
            self.assign_epoch_start_offset(entry.epoch, entry.start_offset)?;
        }
        {
            let _writer = self.writable()?;
            let mut producers = lock(&self.producers);
            producers.state.clear();
            for entry in &snapshot.entries {
                producers
                    .state
                    .load_entry(ProducerStateEntry::from_snapshot_entry(entry));
            }
            producers.state.map_end_offset = next;
            producers.take_snapshot(true)?;
            // The snapshot's open transactions bound read_committed from now on.
            let view = self.published.load();
            self.published.publish(LogView {
                txns: Arc::new(producers.unstable_txns()),
                ..(*view).clone()
            });
        }
        self.remote.set_highest_offset(segment.end_offset);
        self.remote
            .set_log_start_offset(Some(leader_log_start_offset.clamp(0, next)));
        tracing::info!(
            dir = %self.dir.display(), local_log_start_offset = next,
            log_start_offset = self.log_start_offset(),
            highest_remote_offset = segment.end_offset,
            producers = snapshot.entries.len(), epochs = epochs.len(),
            "rebuilt from the remote tier"
        );
        Ok(next)
    }
}
