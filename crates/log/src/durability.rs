//! The durability state of one log: the recovery point, the durable mark (group commit), the
//! flusher, the commit join counters, the dirty-directory flag and the poison, behind one type
//! whose methods are the only way to change them, so the rules between them hold by
//! construction:
//!
//! * **The marks move under the flusher lock.** A flush raises the recovery point and the
//!   durable mark, and a truncation lowers them, only through a [`Flusher`] (the flusher
//!   lock's guard). A flush loads the view after taking the lock, and a truncation publishes
//!   its view before releasing it, so a flush or group commit in flight never raises the marks
//!   back above a truncation ([`Flusher::truncated_to`] also invalidates a sync in flight).
//!   Two raises happen without it: the log start offset moving up
//!   ([`DurabilityState::raise_recovery_point_to_log_start`]: what lies below it is never read
//!   again) and a roll across a gap ([`DurabilityState::raise_over_gap`], after a flush of
//!   everything below the gap); both run under the writer lock, as every truncation does.
//! * **One owner of the dirty-directory flag at a time.** It is taken (cleared) only under the
//!   flusher lock ([`Flusher::take_dir_dirty`]), and a failed directory fsync sets it again and
//!   poisons the log ([`DurabilityState::sync_dir_or_poison`]).
//! * **Poison is sticky.** The first failed write or fsync is kept until the log is reopened;
//!   the append path reads one flag and takes the mutex only when it is set.

use std::path::Path;
use std::time::Duration;

use crate::commit_join::{CommitJoin, DurableAppend};
use seglog_segment::Io;

use crate::fsutil::sync_dir;
use crate::group_commit::GroupCommit;
use crate::sync::{AtomicBool, AtomicI64, Mutex, MutexGuard, Ordering, lock};
use crate::{Error, Result};

/// See the module docs.
#[derive(Debug)]
pub(crate) struct DurabilityState {
    /// Every offset below it is flushed (`.log` and indexes).
    recovery_point: AtomicI64,
    /// A segment file was created, renamed or removed since the last directory fsync.
    dir_dirty: AtomicBool,
    /// Serializes flushes and group-commit syncs. Never taken by readers; taken under the
    /// writer lock only by truncations and rolls across a gap (never the other way round).
    flusher: Mutex<FlushState>,
    /// The durable mark and the group-commit waiters.
    group_commit: GroupCommit,
    /// Counts durable appends for the group-commit leader's sibling wait.
    commit_join: CommitJoin,
    /// The first failed operation, if any.
    poison: Mutex<Option<&'static str>>,
    /// `poison` is set: the append path checks this flag and takes the mutex only then.
    poisoned: AtomicBool,
    /// The I/O seam of the directory fsyncs.
    io: Io,
}

/// State of the flusher, under its lock.
#[derive(Debug)]
struct FlushState {
    last_flush_ms: i64,
}

/// The flusher lock, held: the only way to move the recovery point and the durable mark with
/// a flush or a truncation.
#[derive(Debug)]
pub(crate) struct Flusher<'a> {
    state: &'a DurabilityState,
    guard: MutexGuard<'a, FlushState>,
}

impl DurabilityState {
    /// The state of a log just loaded: everything below `recovery_point` is flushed (and so
    /// durable); the last flush counts as done at `now_ms`.
    pub(crate) fn new(recovery_point: i64, now_ms: i64, io: Io) -> Self {
        Self {
            recovery_point: AtomicI64::new(recovery_point),
            dir_dirty: AtomicBool::new(false),
            flusher: Mutex::new(FlushState {
                last_flush_ms: now_ms,
            }),
            group_commit: GroupCommit::new(recovery_point),
            commit_join: CommitJoin::default(),
            poison: Mutex::new(None),
            poisoned: AtomicBool::new(false),
            io,
        }
    }

    /// Every offset below this is flushed.
    pub(crate) fn recovery_point(&self) -> i64 {
        self.recovery_point.load(Ordering::Acquire)
    }

    /// Every offset below this is known durable (flushed, or synced by a group commit).
    pub(crate) fn durable_end_offset(&self) -> i64 {
        self.group_commit.durable_end_offset()
    }

    /// Takes the flusher lock (serializes flushes, syncs and the truncations' lowering).
    pub(crate) fn lock_flusher(&self) -> Flusher<'_> {
        Flusher {
            state: self,
            guard: lock(&self.flusher),
        }
    }

    /// When the last flush (or the load) happened.
    pub(crate) fn last_flush_ms(&self) -> i64 {
        lock(&self.flusher).last_flush_ms
    }

    /// Raises the recovery point to a raised log start offset (what lies below it is never
    /// read again). Called under the writer lock.
    pub(crate) fn raise_recovery_point_to_log_start(&self, log_start_offset: i64) {
        self.recovery_point
            .fetch_max(log_start_offset, Ordering::AcqRel);
    }

    /// After everything below a gap was flushed (a roll whose new base lies above the log
    /// end): the recovery point and the durable mark move over the gap to `new_base`. Called
    /// under the writer lock.
    pub(crate) fn raise_over_gap(&self, new_base: i64) {
        self.recovery_point.fetch_max(new_base, Ordering::AcqRel);
        self.group_commit.mark_durable(new_base);
    }

    /// A segment file was created, renamed or removed: the next flush or sync fsyncs the
    /// directory.
    pub(crate) fn mark_dir_dirty(&self) {
        self.dir_dirty.store(true, Ordering::Release);
    }

    /// fsyncs the partition directory `dir` now; a failure marks it dirty again and poisons
    /// the log.
    ///
    /// # Errors
    /// The directory fsync's I/O error.
    pub(crate) fn sync_dir_or_poison(&self, dir: &Path) -> Result<()> {
        if let Err(e) = sync_dir(&self.io, dir) {
            self.mark_dir_dirty();
            crate::observe::poisoned(dir, "fsync directory", &e);
            self.poison_with("fsync directory");
            return Err(e);
        }
        Ok(())
    }

    /// Counts a durable append from its start until the returned guard drops (the
    /// group-commit leader's sibling wait, `commit_join.rs`).
    pub(crate) fn enter_durable_append(&self) -> DurableAppend<'_> {
        self.commit_join.enter()
    }

    /// Returns once every offset below `end_offset` is durable, running `sync` as the
    /// group-commit leader when no sync is in progress (see [`GroupCommit::wait_durable`]).
    ///
    /// # Errors
    /// The error of `sync` when this caller ran it.
    pub(crate) fn wait_durable(
        &self,
        end_offset: i64,
        sync: impl FnMut() -> Result<i64>,
    ) -> Result<bool> {
        self.group_commit.wait_durable(end_offset, sync)
    }

    /// Before a group-commit sync: waits (bounded) for the durable appends on their way.
    /// Returns how many durable appends the sync covers (for the batch-size metric).
    pub(crate) fn wait_for_siblings(&self) -> usize {
        self.commit_join.wait_for_siblings()
    }

    /// After a successful group-commit sync that took `took`: sizes the next sibling wait.
    pub(crate) fn sync_done(&self, took: Duration) {
        self.commit_join.sync_done(took);
    }

    /// Fails with [`Error::Poisoned`] (naming `dir`) if a write or fsync failed earlier.
    ///
    /// # Errors
    /// See above.
    pub(crate) fn check_poison(&self, dir: &Path) -> Result<()> {
        if !self.poisoned.load(Ordering::Acquire) {
            return Ok(());
        }
        match *lock(&self.poison) {
            Some(op) => Err(Error::Poisoned {
                dir: dir.to_path_buf(),
                op,
            }),
            None => Ok(()),
        }
    }

    /// Poisons the log with the first failed operation `op` (later ones keep the first).
    pub(crate) fn poison_with(&self, op: &'static str) {
        lock(&self.poison).get_or_insert(op);
        self.poisoned.store(true, Ordering::Release);
    }

    /// Records a failed write/fsync (not a corruption, which changes nothing on disk): the log
    /// refuses writes until reopened. Returns the error for `?`.
    pub(crate) fn poisoned_by(&self, op: &'static str, error: seglog_segment::Error) -> Error {
        if !error.is_corruption() {
            self.poison_with(op);
        }
        Error::Segment(error)
    }
}

impl Flusher<'_> {
    /// Every offset below this is flushed.
    pub(crate) fn recovery_point(&self) -> i64 {
        self.state.recovery_point()
    }

    /// Every offset below this is known durable (flushed, or synced by a group commit).
    pub(crate) fn durable_end_offset(&self) -> i64 {
        self.state.group_commit.durable_end_offset()
    }

    /// Clears the dirty-directory flag and returns whether it was set: the caller now owns
    /// the directory fsync ([`Flusher::sync_dir`]).
    pub(crate) fn take_dir_dirty(&mut self) -> bool {
        self.state.dir_dirty.swap(false, Ordering::AcqRel)
    }

    /// [`DurabilityState::sync_dir_or_poison`] under the flusher lock.
    ///
    /// # Errors
    /// The directory fsync's I/O error.
    pub(crate) fn sync_dir(&mut self, dir: &Path) -> Result<()> {
        self.state.sync_dir_or_poison(dir)
    }

    /// A flush made everything below `target` durable at `now_ms`: raises the recovery point
    /// and the durable mark (waking group-commit waiters it covers). Returns the new recovery
    /// point.
    pub(crate) fn flushed_to(&mut self, target: i64, now_ms: i64) -> i64 {
        let new_point = self
            .state
            .recovery_point
            .fetch_max(target, Ordering::AcqRel)
            .max(target);
        self.guard.last_flush_ms = now_ms;
        self.state.group_commit.mark_durable(new_point);
        new_point
    }

    /// A truncation to `offset`: lowers the recovery point and the durable mark to it (if
    /// they were higher) and discards the result of any group-commit sync in flight. Publish
    /// the truncated view before dropping the guard, so the next flush sees it.
    pub(crate) fn truncated_to(&mut self, offset: i64) {
        let recovery_point = self.state.recovery_point().min(offset);
        self.state
            .recovery_point
            .store(recovery_point, Ordering::Release);
        self.state.group_commit.reset(offset);
    }

    /// An empty log restarted at `offset` (`truncate_fully_and_start_at`): the recovery point
    /// becomes `offset`, the durable mark is lowered to it, syncs in flight are discarded.
    /// Publish the new view before dropping the guard.
    pub(crate) fn restarted_at(&mut self, offset: i64) {
        self.state.recovery_point.store(offset, Ordering::Release);
        self.state.group_commit.reset(offset);
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    #[test]
    fn flushes_raise_and_truncations_lower_both_marks_under_the_flusher() {
        let state = DurabilityState::new(10, 0, Io::direct());
        let mut flusher = state.lock_flusher();
        assert_eq!(flusher.durable_end_offset(), 10);
        assert_eq!(flusher.flushed_to(20, 5), 20);
        assert_eq!(flusher.flushed_to(12, 6), 20, "a flush never lowers");
        assert_eq!(flusher.durable_end_offset(), 20);
        flusher.truncated_to(15);
        assert_eq!(
            (flusher.recovery_point(), flusher.durable_end_offset()),
            (15, 15)
        );
        flusher.truncated_to(30);
        assert_eq!(
            (flusher.recovery_point(), flusher.durable_end_offset()),
            (15, 15),
            "a truncation never raises"
        );
        flusher.restarted_at(40);
        assert_eq!(flusher.recovery_point(), 40);
        drop(flusher);
        assert_eq!(state.last_flush_ms(), 6);
        state.raise_recovery_point_to_log_start(35);
        assert_eq!(state.recovery_point(), 40);
        state.raise_over_gap(50);
        assert_eq!(state.recovery_point(), 50);
        assert_eq!(state.lock_flusher().durable_end_offset(), 50);
    }

    #[test]
    fn a_failed_directory_fsync_keeps_the_directory_dirty_and_poisons_once() {
        let state = DurabilityState::new(0, 0, Io::direct());
        state.check_poison(Path::new("p")).unwrap();
        state.mark_dir_dirty();
        let mut flusher = state.lock_flusher();
        assert!(flusher.take_dir_dirty());
        assert!(!flusher.take_dir_dirty());
        let missing = tempfile::tempdir().unwrap().path().join("gone");
        assert!(flusher.sync_dir(&missing).is_err());
        assert!(flusher.take_dir_dirty(), "the next flush fsyncs it again");
        drop(flusher);
        state.poison_with("later");
        match state.check_poison(Path::new("p")) {
            Err(Error::Poisoned { op, .. }) => assert_eq!(op, "fsync directory"),
            other => panic!("{other:?}"),
        }
    }
}
