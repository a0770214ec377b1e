//! The background tiering service of a whole [`LogDir`] (Kafka's `RemoteLogManager` with its
//! `RLMCopyTask` and `RLMExpirationTask` per partition): every partition with
//! `remote.storage.enable` gets its remote tier attached (recovery first), then every
//! `remote.log.manager.task.interval.ms` a copy pass ([`Tier::copy_one`] per eligible segment,
//! each behind the copy quota) and an expiry pass ([`Tier::expire`]).
//!
//! Bounded: at most `copier.thread.pool.size` partitions copy at once and
//! `expiration.thread.pool.size` expire at once (scoped worker threads per run; a run's copies
//! come before its expiries). A partition's failure is its own: it is counted, logged and
//! rescheduled, the others go on. A retriable failure ([`Error::is_retriable`]: 5xx,
//! throttling, timeouts) is retried after Kafka's exponential backoff with jitter; any other
//! after the task interval. Nothing here deletes local data: local retention (the `LogDir`
//! ticker) deletes only what a finished copy raised the highest remote offset over.
//!
//! It runs beside the `LogDir` ticker ([`LogDir::spawn_ticker`]): [`TieringService::spawn`]
//! starts its thread; [`TieringService::run_once`] runs what is due now (tests drive it with a
//! `ManualClock`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use seglog::{Clock, Log, LogDir, TopicPartition};

use crate::quota::ByteRateQuota;
use crate::{
    CopiedSegment, Error, ExpireReport, FetchQuota, Layout, ObjectTier, PartitionTier,
    RecoveryReport, Result, StoreRoot, Tier, TieringConfig, TopicIdPartition, read_topic_id,
};

/// Builds the remote tier of a partition (its layout in the store).
pub type TierFactory = dyn Fn(&TopicPartition, &Log) -> Result<Arc<ObjectTier>> + Send + Sync;

/// The tiering service of one log directory root.
pub struct TieringService {
    dir: Arc<LogDir>,
    config: TieringConfig,
    clock: Arc<dyn Clock>,
    factory: Box<TierFactory>,
    partitions: Mutex<BTreeMap<TopicPartition, PartitionTask>>,
    quota: Mutex<ByteRateQuota>,
    stopping: AtomicBool,
    /// Held by a run: runs never overlap (one copier per partition).
    running: Mutex<()>,
}

impl std::fmt::Debug for TieringService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TieringService")
            .field("dir", &self.dir.root())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// A partition's place in the schedule.
#[derive(Debug, Clone)]
struct PartitionTask {
    log: Arc<Log>,
    tier: Option<Tier>,
    next_copy_ms: i64,
    next_expire_ms: i64,
    copy_failures: u32,
    expire_failures: u32,
}

/// A failed task of one partition.
#[derive(Debug)]
pub struct TaskFailure {
    /// The error.
    pub error: Error,
    /// Whether it was retriable (then the task runs again after the backoff).
    pub retriable: bool,
    /// Consecutive failures of this task, this one included.
    pub attempt: u32,
    /// When the task runs again (the service clock's milliseconds).
    pub next_run_ms: i64,
}

/// What one run did for one partition.
#[derive(Debug, Default)]
pub struct PartitionRun {
    /// The recovery of the store when the tier was attached in this run.
    pub attached: Option<RecoveryReport>,
    /// The segments copied, in order.
    pub copied: Vec<CopiedSegment>,
    /// The copy stopped at the quota and resumes after this many milliseconds.
    pub throttled_ms: Option<u64>,
    /// The expiry pass, when one ran and succeeded.
    pub expired: Option<ExpireReport>,
    /// The copy task's failure (attaching included).
    pub copy_failure: Option<TaskFailure>,
    /// The expiry task's failure.
    pub expire_failure: Option<TaskFailure>,
}

/// What [`TieringService::run_once`] did.
#[derive(Debug, Default)]
pub struct ServiceRunReport {
    /// The partitions a task ran for.
    pub partitions: BTreeMap<TopicPartition, PartitionRun>,
    /// When the next task is due (the service clock's milliseconds).
    pub next_due_ms: i64,
}

impl ServiceRunReport {
    /// Every failure of the run.
    pub fn failures(&self) -> impl Iterator<Item = (&TopicPartition, &TaskFailure)> {
        self.partitions.iter().flat_map(|(tp, run)| {
            run.copy_failure
                .iter()
                .chain(run.expire_failure.iter())
                .map(move |f| (tp, f))
        })
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl TieringService {
    /// The service of `dir`, tiering every partition into `store` in Kafka's layout, each
    /// under the topic id of its `partition.metadata`; reads of every partition's remote tier
    /// share one [`FetchQuota`] of `config`'s fetch settings.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] from [`TieringConfig::validate`].
    pub fn new(
        dir: Arc<LogDir>,
        store: StoreRoot,
        config: TieringConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<TieringService> {
        config.validate()?;
        let broker_id = config.broker_id;
        let fetch_quota = Arc::new(FetchQuota::new(&config, clock.clone()));
        let factory = move |tp: &TopicPartition, log: &Log| {
            let topic_id = read_topic_id(log.dir())?;
            let partition = TopicIdPartition::new(&tp.topic, tp.partition, topic_id)?;
            let layout = Layout::new(store.root.clone(), partition);
            ObjectTier::from_partition_tier(PartitionTier::new(
                store.store.clone(),
                layout,
                broker_id,
            ))
            .map(|tier| Arc::new(tier.with_fetch_quota(fetch_quota.clone())))
        };
        Self::with_factory(dir, config, clock, Box::new(factory))
    }

    /// The service of `dir` with the remote tier of each partition built by `factory`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] from [`TieringConfig::validate`].
    pub fn with_factory(
        dir: Arc<LogDir>,
        config: TieringConfig,
        clock: Arc<dyn Clock>,
        factory: Box<TierFactory>,
    ) -> Result<TieringService> {
        config.validate()?;
        let quota = ByteRateQuota::new(
            config.copy_max_bytes_per_second,
            config.copy_quota_window_num,
            config.copy_quota_window_size_seconds,
        );
        Ok(TieringService {
            dir,
            config,
            clock,
            factory,
            partitions: Mutex::new(BTreeMap::new()),
            quota: Mutex::new(quota),
            stopping: AtomicBool::new(false),
            running: Mutex::new(()),
        })
    }

    /// The settings.
    pub fn config(&self) -> &TieringConfig {
        &self.config
    }

    /// The attached remote tier of each partition (for its [`ObjectTier::stats`]).
    pub fn tiers(&self) -> BTreeMap<TopicPartition, Arc<ObjectTier>> {
        lock(&self.partitions)
            .iter()
            .filter_map(|(tp, task)| Some((tp.clone(), task.tier.as_ref()?.remote().clone())))
            .collect()
    }

    /// Runs every task due at the clock's time: finds the partitions with remote storage
    /// enabled (new ones are due at once), runs the due copies (at most
    /// `copier_thread_pool_size` at once), then the due expiries (at most
    /// `expiration_thread_pool_size` at once), and reschedules each. A run started while
    /// another is under way (the service's thread, or another caller) waits for it: a
    /// partition never has two copiers.
    pub fn run_once(&self) -> ServiceRunReport {
        let _running = lock(&self.running);
        let now_ms = self.clock.now_ms();
        self.sync_partitions(now_ms);
        let copies: Vec<_> = lock(&self.partitions)
            .iter()
            .filter(|(_, t)| t.next_copy_ms <= now_ms)
            .map(|(tp, t)| (tp.clone(), t.clone()))
            .collect();
        let mut report = ServiceRunReport::default();
        let copied = run_pool(self.config.copier_thread_pool_size, copies, |(tp, task)| {
            let run = self.copy_job(&tp, task, now_ms);
            (tp, run)
        });
        for (tp, (task, run)) in copied {
            if let Some(slot) = lock(&self.partitions).get_mut(&tp) {
                *slot = task;
            }
            report.partitions.insert(tp, run);
        }
        // After the copies: a partition attached by this run's copy expires in it too.
        let expiries: Vec<_> = lock(&self.partitions)
            .iter()
            .filter(|(_, t)| t.next_expire_ms <= now_ms && t.tier.is_some())
            .map(|(tp, t)| (tp.clone(), t.clone()))
            .collect();
        let expired = run_pool(
            self.config.expiration_thread_pool_size,
            expiries,
            |(tp, task)| {
                let outcome = self.expire_job(&tp, task, now_ms);
                (tp, outcome)
            },
        );
        for (tp, (task, outcome)) in expired {
            if let Some(slot) = lock(&self.partitions).get_mut(&tp) {
                slot.next_expire_ms = task.next_expire_ms;
                slot.expire_failures = task.expire_failures;
            }
            let run = report.partitions.entry(tp).or_default();
            match outcome {
                Ok(expired) => run.expired = Some(expired),
                Err(failure) => run.expire_failure = Some(failure),
            }
        }
        report.next_due_ms = lock(&self.partitions)
            .values()
            .flat_map(|t| [t.next_copy_ms, t.next_expire_ms])
            .min()
            .unwrap_or(now_ms + self.interval_ms());
        report
    }

    /// Starts the service's thread: [`TieringService::run_once`] now, then again whenever the
    /// next task is due (at most a task interval later). Dropping the handle (or
    /// [`TieringHandle::stop`]) stops it: a copy pass under way ends after its current segment.
    /// Stop it before closing the `LogDir` (a closed log's tasks fail until then).
    ///
    /// # Errors
    /// [`Error::Thread`] when the thread cannot start.
    pub fn spawn(self: &Arc<Self>) -> Result<TieringHandle> {
        let service = Arc::clone(self);
        let signal = Arc::new(Signal::default());
        let shared = Arc::clone(&signal);
        let thread = std::thread::Builder::new()
            .name("seglog-tiering".into())
            .spawn(move || {
                loop {
                    if *lock(&shared.stopped) {
                        break;
                    }
                    let report = service.run_once();
                    let wait_ms = (report.next_due_ms - service.clock.now_ms())
                        .clamp(1, service.interval_ms());
                    let stopped = lock(&shared.stopped);
                    if *stopped {
                        break;
                    }
                    let _ = shared
                        .wake
                        .wait_timeout(stopped, Duration::from_millis(wait_ms.unsigned_abs()))
                        .unwrap_or_else(PoisonError::into_inner);
                }
            })
            .map_err(Error::Thread)?;
        Ok(TieringHandle {
            service: Arc::clone(self),
            signal,
            thread: Some(thread),
        })
    }

    fn interval_ms(&self) -> i64 {
        i64::try_from(self.config.task_interval_ms).unwrap_or(i64::MAX)
    }

    /// Adds the partitions that have remote storage enabled and drops those gone or disabled.
    fn sync_partitions(&self, now_ms: i64) {
        let logs: BTreeMap<_, _> = self
            .dir
            .logs()
            .into_iter()
            .filter(|(_, log)| log.config().remote_storage_enable)
            .collect();
        let mut tasks = lock(&self.partitions);
        tasks.retain(|tp, task| logs.get(tp).is_some_and(|log| Arc::ptr_eq(log, &task.log)));
        for (tp, log) in logs {
            tasks.entry(tp).or_insert_with(|| PartitionTask {
                log,
                tier: None,
                next_copy_ms: now_ms,
                next_expire_ms: now_ms,
                copy_failures: 0,
                expire_failures: 0,
            });
        }
    }

    /// [`TieringService::copy_task`], a panic in it made the partition's failure.
    fn copy_job(
        &self,
        tp: &TopicPartition,
        task: PartitionTask,
        now_ms: i64,
    ) -> (PartitionTask, PartitionRun) {
        catch_panic(|| self.copy_task(tp, task.clone(), now_ms)).unwrap_or_else(|message| {
            let mut task = task;
            let failure = self.panicked("copy", tp, message, &mut task.copy_failures, now_ms);
            task.next_copy_ms = failure.next_run_ms;
            let run = PartitionRun {
                copy_failure: Some(failure),
                ..PartitionRun::default()
            };
            (task, run)
        })
    }

    /// [`TieringService::expire_task`], a panic in it made the partition's failure.
    fn expire_job(
        &self,
        tp: &TopicPartition,
        task: PartitionTask,
        now_ms: i64,
    ) -> (
        PartitionTask,
        std::result::Result<ExpireReport, TaskFailure>,
    ) {
        catch_panic(|| self.expire_task(tp, task.clone(), now_ms)).unwrap_or_else(|message| {
            let mut task = task;
            let failure = self.panicked("expiry", tp, message, &mut task.expire_failures, now_ms);
            task.next_expire_ms = failure.next_run_ms;
            (task, Err(failure))
        })
    }

    /// The failure of a task that panicked (not retriable: the next run is after the task
    /// interval).
    fn panicked(
        &self,
        task: &'static str,
        tp: &TopicPartition,
        message: String,
        failures: &mut u32,
        now_ms: i64,
    ) -> TaskFailure {
        let error = Error::Panicked {
            task,
            partition: tp.to_string(),
            message,
        };
        let failure = self.failure(error, failures, now_ms);
        tracing::error!(partition = %tp, reason = %failure.error, "tiering task panicked");
        failure
    }

    /// Attaches the tier if needed, then copies segment after segment while the quota allows.
    fn copy_task(
        &self,
        tp: &TopicPartition,
        mut task: PartitionTask,
        now_ms: i64,
    ) -> (PartitionTask, PartitionRun) {
        let mut run = PartitionRun::default();
        let result = self.copy_pass(tp, &mut task, &mut run);
        match result {
            Ok(()) => {
                task.copy_failures = 0;
                let wait = run.throttled_ms.map_or(self.interval_ms(), |ms| {
                    i64::try_from(ms).unwrap_or(i64::MAX)
                });
                task.next_copy_ms = now_ms.saturating_add(wait.min(self.interval_ms()));
            }
            Err(error) => {
                let failure = self.failure(error, &mut task.copy_failures, now_ms);
                tracing::warn!(partition = %tp, reason = %failure.error, retriable = failure.retriable, attempt = failure.attempt, next_run_ms = failure.next_run_ms, "remote copy task failed");
                task.next_copy_ms = failure.next_run_ms;
                run.copy_failure = Some(failure);
            }
        }
        if let Some(tier) = &task.tier {
            record_copy_lag(&task.log, tier);
        }
        (task, run)
    }

    fn copy_pass(
        &self,
        tp: &TopicPartition,
        task: &mut PartitionTask,
        run: &mut PartitionRun,
    ) -> Result<()> {
        let log = Arc::clone(&task.log);
        let tier = match &task.tier {
            Some(tier) => tier.clone(),
            None => {
                let tier = Tier::new((self.factory)(tp, &log)?);
                let recovered = tier.attach(&log)?;
                tracing::info!(partition = %tp, abandoned_copies = recovered.abandoned_copies, finished_deletes = recovered.finished_deletes, orphans = recovered.orphans, "tiering service attached the remote tier");
                run.attached = Some(recovered);
                task.tier = Some(tier.clone());
                tier
            }
        };
        for files in log.tier_candidates()? {
            if self.stopping.load(Ordering::Relaxed) {
                break;
            }
            {
                let mut quota = lock(&self.quota);
                let now = self.clock.now_ms();
                let throttle_ms = quota.throttle_time_ms(now);
                if throttle_ms > 0 {
                    tier.remote().stats().throttled(throttle_ms);
                    tracing::debug!(partition = %tp, base_offset = files.base_offset, throttle_ms, "remote copy waits for the copy quota");
                    run.throttled_ms = Some(throttle_ms);
                    break;
                }
                // Counted before the copy, as Kafka's copier does (a copy larger than the
                // quota still goes; the ones after it wait).
                quota.record(files.size, now);
            }
            let copied = tier.copy_one(&log, files)?;
            tracing::info!(partition = %tp, base_offset = copied.base_offset, end_offset = copied.end_offset, bytes = copied.size_in_bytes, segment_id = %copied.segment_id, "segment copied to the remote tier");
            run.copied.push(copied);
        }
        Ok(())
    }

    fn expire_task(
        &self,
        tp: &TopicPartition,
        mut task: PartitionTask,
        now_ms: i64,
    ) -> (
        PartitionTask,
        std::result::Result<ExpireReport, TaskFailure>,
    ) {
        let Some(tier) = task.tier.clone() else {
            return (task, Ok(ExpireReport::default()));
        };
        match tier.expire(&task.log, now_ms) {
            Ok(report) => {
                for base_offset in &report.deleted {
                    tracing::info!(partition = %tp, base_offset, log_start_offset = report.log_start_offset, "remote segment deleted");
                }
                task.expire_failures = 0;
                task.next_expire_ms = now_ms.saturating_add(self.interval_ms());
                (task, Ok(report))
            }
            Err(error) => {
                let failure = self.failure(error, &mut task.expire_failures, now_ms);
                tracing::warn!(partition = %tp, reason = %failure.error, retriable = failure.retriable, attempt = failure.attempt, next_run_ms = failure.next_run_ms, "remote expiry task failed");
                task.next_expire_ms = failure.next_run_ms;
                (task, Err(failure))
            }
        }
    }

    /// Counts a failure and schedules the retry: after the backoff when retriable, after the
    /// task interval otherwise (as Kafka reschedules a failed task).
    fn failure(&self, error: Error, failures: &mut u32, now_ms: i64) -> TaskFailure {
        let retriable = error.is_retriable();
        let attempt = failures.saturating_add(1);
        *failures = attempt;
        let wait = if retriable {
            let wait = self
                .config
                .retry_backoff_ms(attempt - 1, rand::random::<f64>());
            i64::try_from(wait).unwrap_or(i64::MAX)
        } else {
            self.interval_ms()
        };
        TaskFailure {
            error,
            retriable,
            attempt,
            next_run_ms: now_ms.saturating_add(wait),
        }
    }
}

/// Kafka's `RLMCopyTask.recordLagStats`: the bytes and count of the local segments above the
/// highest remote offset, the active segment left out.
fn record_copy_lag(log: &Log, tier: &Tier) {
    let active = log.segments().last().map_or(0, |s| s.size_bytes);
    let bytes = log.only_local_segments_size().saturating_sub(active);
    let segments = log.only_local_segments_count().saturating_sub(1);
    tier.remote().stats().copy_lag(bytes, segments as u64);
}

/// Runs `f`, turning a panic into its message (a task's panic is its partition's failure, not
/// the service's end).
fn catch_panic<R>(f: impl FnOnce() -> R) -> std::result::Result<R, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|panic| {
        panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default()
    })
}

/// Runs `job` over `jobs` on at most `size` scoped threads (on this thread when none starts).
fn run_pool<J: Send, R: Send>(size: usize, jobs: Vec<J>, job: impl Fn(J) -> R + Sync) -> Vec<R> {
    let workers = size.min(jobs.len());
    let queue = Mutex::new(jobs.into_iter());
    let out = Mutex::new(Vec::new());
    let work = || {
        loop {
            let next = lock(&queue).next();
            let Some(next) = next else { break };
            let result = job(next);
            lock(&out).push(result);
        }
    };
    std::thread::scope(|scope| {
        let started = (0..workers)
            .filter(|_| {
                std::thread::Builder::new()
                    .name("seglog-tiering-task".into())
                    .spawn_scoped(scope, work)
                    .is_ok()
            })
            .count();
        if started == 0 {
            work();
        }
    });
    out.into_inner().unwrap_or_else(PoisonError::into_inner)
}

#[derive(Debug, Default)]
struct Signal {
    stopped: Mutex<bool>,
    wake: Condvar,
}

/// The running service's thread; dropping it (or [`TieringHandle::stop`]) stops and joins it.
#[derive(Debug)]
pub struct TieringHandle {
    service: Arc<TieringService>,
    signal: Arc<Signal>,
    thread: Option<JoinHandle<()>>,
}

impl TieringHandle {
    /// Stops the thread (a copy pass under way ends after its current segment) and waits for
    /// it.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.service.stopping.store(true, Ordering::Relaxed);
        *lock(&self.signal.stopped) = true;
        self.signal.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            // A panicking task is not propagated from Drop.
            let _ = thread.join();
        }
        self.service.stopping.store(false, Ordering::Relaxed);
    }
}

impl Drop for TieringHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}
