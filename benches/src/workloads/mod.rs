//! The workloads of the macro suite, their sizes in quick and full mode, and the order they run
//! in. Each module builds its data and logs (untimed), then hands one trial per contender to
//! the harness.

mod append;
mod compaction;
mod index;
mod open;
mod produce;
mod raft;
mod read;
mod rss;
mod scale;
mod scale_root;
mod tier;

use std::path::{Path, PathBuf};

use crate::data::DataSpec;
use crate::fsx::Scratch;
use crate::harness::{Trial, WorkloadResult};
use crate::{Result, sys};

/// Workload names as printed, and as the targets refer to them.
pub mod names {
    /// 100-byte records, page cache.
    pub const APPEND_SMALL: &str = "append 100B";
    /// 1 KiB records, page cache.
    pub const APPEND_LARGE: &str = "append 1KiB";
    /// Bulk leader appends, ~1 MiB of 100 B-record batches per call.
    pub const BULK_LEADER: &str = "bulk append 1MiB leader";
    /// Bulk follower appends, ~1 MiB of 100 B-record batches per call.
    pub const BULK_FOLLOWER: &str = "bulk append 1MiB follower";
    /// The appender's side of 8 readers scanning while one appender appends.
    pub const MIXED_APPENDER: &str = "mixed: appender";
    /// The readers' side of 8 readers scanning while one appender appends.
    pub const MIXED_READERS: &str = "mixed: 8 readers";
    /// fsync per batch, one writer.
    pub const DURABLE_ONE: &str = "durable append 1 writer";
    /// fsync per batch, eight writers (group commit).
    pub const DURABLE_EIGHT: &str = "durable append 8 writers";
    /// seglog-raft: durable requests through openraft, one entry each, eight proposers.
    pub const RAFT_DURABLE: &str = "raft durable 8 proposers";
    /// seglog-raft: durable requests through its batching `Proposer`, eight proposers.
    pub const RAFT_BATCHED: &str = "raft batched 8 proposers";
    /// Full scan of the 100 B log with CRC checks.
    pub const SCAN_SMALL: &str = "scan 100B";
    /// Full scan of the 1 KiB log with CRC checks.
    pub const SCAN_LARGE: &str = "scan 1KiB";
    /// Uniform random offsets.
    pub const POINT_READ: &str = "point read";
    /// Uniform random timestamps.
    pub const TIMESTAMP_READ: &str = "read by timestamp";
    /// Offset-index floor lookups on 1M entries.
    pub const FLOOR: &str = "floor lookup 1M";
    /// Open after a crash with nothing flushed.
    pub const RECOVERY: &str = "recovery (unflushed)";
    /// Clean open of 1,000 segments.
    pub const OPEN_SEGMENTS: &str = "open 1000 segments";
    /// Peak RSS while scanning the smaller log.
    pub const RSS_SMALL: &str = "rss scan small";
    /// Peak RSS while scanning a log four times larger.
    pub const RSS_LARGE: &str = "rss scan large";
    /// One log-cleaner round over a keyed log.
    pub const COMPACTION: &str = "compaction";
    /// `seglog produce --count N --record-bytes 100`, the whole process, against the library.
    pub const PRODUCE: &str = "produce 100B";
    /// Full recovery of many one-batch segments (issue 28).
    pub const SCALE_RECOVER_SMALL: &str = "scale: recover one-batch segments";
    /// Full recovery of 1 MiB segments (issue 28).
    pub const SCALE_RECOVER_LARGE: &str = "scale: recover 1MiB segments";
    /// Clean open of 100,000 segments (issue 28).
    pub const SCALE_OPEN: &str = "scale: clean open";
    /// Unclean open of a `log.dirs` root of many partitions, recovered in parallel (issue 28).
    pub const SCALE_ROOT_OPEN: &str = "scale: unclean open of a root";
    /// A sealed segment copied to a `file://` store (issue 29).
    pub const TIER_COPY: &str = "tier: copy segment";
    /// A read through the log of a remote segment whose indexes are not cached (issue 29).
    pub const TIER_COLD_READ: &str = "tier: cold remote read";
    /// The same read with the indexes cached (issue 29).
    pub const TIER_WARM_READ: &str = "tier: warm remote read";
}

/// Labels of the reference rows the targets name as their bounds (`targets.rs`): the least
/// work the target's operation must do. Reference rows are never denominators.
pub mod labels {
    /// Leader append of one batch per call: check its CRC, one `write`.
    pub const APPEND_BOUND: &str = "reference: CRC + write per batch";
    /// Bulk append: every batch's CRC, then 1 MiB writes.
    pub const BULK_BOUND: &str = "reference: CRC + 1 MiB writes";
    /// Scan: 1 MiB reads of the same file, every batch's CRC.
    pub const SCAN_CRC_BOUND: &str = "reference: 1 MiB reads + CRC";
    /// Scan: 1 MiB reads, every batch's CRC, every record decoded.
    pub const SCAN_DECODE_BOUND: &str = "reference: 1 MiB reads + CRC + decode";
    /// Point read: the batch's `pread`, its CRC, records decoded up to the target.
    pub const POINT_READ_BOUND: &str = "reference: pread + CRC + decode";
    /// Read by timestamp: `partition_point`, the batch's `pread`, CRC, decode to the record.
    pub const TIMESTAMP_READ_BOUND: &str = "reference: partition_point + pread + CRC + decode";
    /// Floor lookup: `partition_point` over the `.index` file's bytes.
    pub const FLOOR_BOUND: &str = "reference: partition_point on .index bytes";
    /// Recovery: 1 MiB reads of the same bytes, every batch's CRC.
    pub const RECOVERY_BOUND: &str = "reference: 1 MiB reads + CRC of every batch";
    /// seglog-raft, one request per entry: openraft's core waits for each entry's flush, so
    /// entries are at most one writer's durable appends.
    pub const RAFT_ONE_WRITER: &str = "seglog append_durable, 1 writer";
    /// Scale recovery: open, read whole and CRC each `.log` of the directory.
    pub const SCALE_READ_CRC: &str = "reference: open + read + CRC per .log";
    /// Unclean open of a root: the same open on one recovery thread (the serial path).
    pub const SCALE_ROOT_ONE_THREAD: &str = "seglog, 1 recovery thread";
    /// Tier copy: one plain PUT of the segment's `.log` bytes to the same store.
    pub const TIER_PUT: &str = "reference: one PUT of the .log bytes";
    /// Cold remote read: the ranged GET of the bytes the read returns.
    pub const TIER_RANGED_GET: &str = "reference: the same ranged GET";
    /// Warm remote read: the same read from a log holding the segment locally.
    pub const TIER_LOCAL_READ: &str = "reference: the same read, local segment";
}

/// Reader threads in the mixed workload (one appender runs beside them).
pub const MIXED_READER_THREADS: usize = 8;

/// Workload groups, as `--only` names them.
pub const GROUPS: &[&str] = &[
    "append",
    "produce",
    "bulk",
    "mixed",
    "durable",
    "raft",
    "scan",
    "point",
    "timestamp",
    "floor",
    "recovery",
    "open",
    "rss",
    "compaction",
    "scale",
    "tier",
];

/// Sizes for one mode.
#[derive(Clone, Debug)]
pub struct Plan {
    /// `quick` or `full`.
    pub mode: &'static str,
    /// Measured rounds per workload.
    pub rounds: usize,
    /// 100 B records (append, scan, point and timestamp reads, recovery).
    pub small: DataSpec,
    /// 1 KiB records (append, scan).
    pub large: DataSpec,
    /// Records per `seglog produce` run (values of `small.record_bytes`).
    pub produce_records: u64,
    /// Batches per durable-append run (split across the writers).
    pub durable_batches: usize,
    /// Requests per seglog-raft run (split across the proposers; one entry each in the
    /// one-request-per-entry row).
    pub raft_requests: usize,
    /// Reads per point-read and timestamp-read run.
    pub point_reads: usize,
    /// Entries in the floor-lookup index.
    pub floor_entries: u32,
    /// Lookups per floor-lookup run.
    pub floor_lookups: usize,
    /// Segments in the clean-open workload.
    pub segments: usize,
    /// The RSS logs are `rss_base` appended `rss_small_copies` or `rss_large_copies` times.
    pub rss_base: DataSpec,
    /// Copies in the small RSS log.
    pub rss_small_copies: usize,
    /// Copies in the large RSS log.
    pub rss_large_copies: usize,
    /// One-batch segments in the scale recovery row.
    pub scale_small_segments: usize,
    /// 1 MiB segments in the scale recovery row.
    pub scale_large_segments: usize,
    /// Segments in the scale clean-open row.
    pub scale_open_segments: usize,
    /// Partitions (of 5 one-batch segments) in the scale unclean-open-of-a-root row.
    pub scale_root_partitions: usize,
}

impl Plan {
    /// The full suite: the sizes the issue names.
    pub fn full() -> Self {
        Self {
            mode: "full",
            rounds: 5,
            small: DataSpec {
                records: 1_000_000,
                record_bytes: 100,
                batch_records: 100,
            },
            large: DataSpec {
                records: 200_000,
                record_bytes: 1024,
                batch_records: 100,
            },
            produce_records: 1_000_000,
            durable_batches: 2_000,
            raft_requests: 8_000,
            point_reads: 100_000,
            floor_entries: 1_000_000,
            floor_lookups: 1_000_000,
            segments: 1_000,
            rss_base: DataSpec {
                records: 64 * 1024,
                record_bytes: 1024,
                batch_records: 100,
            },
            rss_small_copies: 4,
            rss_large_copies: 16,
            scale_small_segments: 10_000,
            scale_large_segments: 2_000,
            scale_open_segments: 100_000,
            scale_root_partitions: 10_000,
        }
    }

    /// A short version for a quick look (under two minutes on two cores).
    pub fn quick() -> Self {
        Self {
            mode: "quick",
            rounds: 3,
            small: DataSpec {
                records: 1_000_000,
                record_bytes: 100,
                batch_records: 100,
            },
            large: DataSpec {
                records: 200_000,
                record_bytes: 1024,
                batch_records: 100,
            },
            produce_records: 500_000,
            durable_batches: 400,
            raft_requests: 2_000,
            point_reads: 10_000,
            floor_entries: 1_000_000,
            floor_lookups: 1_000_000,
            segments: 1_000,
            rss_base: DataSpec {
                records: 32 * 1024,
                record_bytes: 1024,
                batch_records: 100,
            },
            rss_small_copies: 2,
            rss_large_copies: 8,
            scale_small_segments: 2_000,
            scale_large_segments: 200,
            scale_open_segments: 20_000,
            scale_root_partitions: 1_000,
        }
    }
}

/// What every workload needs.
pub struct Context {
    /// Sizes.
    pub plan: Plan,
    /// Kafka 4.4's rows (or why they are skipped). Before `scratch`, so that the JVM has
    /// closed its logs when the scratch directory is deleted (fields drop in this order).
    pub kafka: crate::kafka_contender::Kafka,
    /// Where logs go.
    pub scratch: Scratch,
    /// Drop the page cache before every timed read (root only).
    pub drop_caches: bool,
    /// Workload groups to run (all when empty).
    pub only: Vec<String>,
    /// How a workload departs from the obvious reading, for the report.
    pub notes: Vec<String>,
}

impl Context {
    fn wants(&self, group: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|name| name == group)
    }

    /// Wraps a read trial so the page cache is dropped before each run, when asked to.
    pub fn cold<'a>(&self, trial: impl Trial + 'a) -> Box<dyn Trial + 'a> {
        if self.drop_caches {
            Box::new(Cold(trial))
        } else {
            Box::new(trial)
        }
    }
}

/// Wraps a write trial so that `bytes` of page cache are recycled (see
/// [`crate::fsx::recycle_page_cache`]) in `dir` before each run.
pub fn recycled<'a>(dir: &Path, bytes: u64, trial: impl Trial + 'a) -> Recycled<impl Trial + 'a> {
    Recycled {
        dir: dir.to_path_buf(),
        bytes,
        trial,
    }
}

/// See [`recycled`].
pub struct Recycled<T> {
    dir: PathBuf,
    bytes: u64,
    trial: T,
}

impl<T: Trial> Trial for Recycled<T> {
    fn prepare(&mut self) -> Result<()> {
        self.trial.prepare()?;
        crate::fsx::recycle_page_cache(&self.dir, self.bytes)
    }

    fn run(&mut self) -> Result<crate::harness::Work> {
        self.trial.run()
    }

    fn cleanup(&mut self) -> Result<()> {
        self.trial.cleanup()
    }
}

struct Cold<T>(T);

impl<T: Trial> Trial for Cold<T> {
    fn prepare(&mut self) -> Result<()> {
        self.0.prepare()?;
        sys::drop_page_cache()
    }

    fn run(&mut self) -> Result<crate::harness::Work> {
        self.0.run()
    }

    fn cleanup(&mut self) -> Result<()> {
        self.0.cleanup()
    }
}

/// Runs every selected workload group, in the order.
///
/// # Errors
///
/// The first workload that fails.
pub fn run_all(context: &mut Context) -> Result<Vec<WorkloadResult>> {
    let mut results = Vec::new();
    if context.wants("append") {
        results.extend(append::run_page_cache(context)?);
    }
    if context.wants("produce") {
        results.extend(produce::run(context)?);
    }
    if context.wants("bulk") {
        results.extend(append::run_bulk(context)?);
    }
    if context.wants("mixed") {
        results.extend(append::run_mixed(context)?);
    }
    if context.wants("durable") {
        results.extend(append::run_durable(context)?);
    }
    if context.wants("raft") {
        results.extend(raft::run(context)?);
    }
    if context.wants("scan") || context.wants("point") || context.wants("timestamp") {
        results.extend(read::run(context)?);
    }
    if context.wants("floor") {
        results.extend(index::run(context)?);
    }
    if context.wants("recovery") {
        results.extend(open::run_recovery(context)?);
    }
    if context.wants("open") {
        results.extend(open::run_segments(context)?);
    }
    if context.wants("rss") {
        results.extend(rss::run(context)?);
    }
    if context.wants("compaction") {
        results.extend(compaction::run(context)?);
    }
    if context.wants("scale") {
        results.extend(scale::run_recovery(context)?);
        results.extend(scale::run_open(context)?);
        results.extend(scale_root::run(context)?);
    }
    if context.wants("tier") {
        results.extend(tier::run(context)?);
    }
    Ok(results)
}
