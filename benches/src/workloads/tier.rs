//! Tiered storage (issue 29), each row beside the plain object-store call that bounds it, on
//! the same `file://` store (`seglog_tiered::open_store`: object_store's `LocalFileSystem` under
//! the scratch directory, fsyncing every object it writes, as seglog's `file://` store does):
//!
//! - `tier: copy segment`: `PartitionTier::copy_segment` of a sealed 8 MiB segment (six parts
//!   and the COPY_SEGMENT_STARTED/FINISHED metadata) against one plain PUT of the same `.log`
//!   bytes (target: at least 0.8 of its rate);
//! - `tier: cold remote read`: a 1 MiB `Log::read_into` from the start of a remote segment whose
//!   indexes are not cached (the offset index fetched, then a ranged GET of the `.log`) against
//!   the same ranged GET alone;
//! - `tier: warm remote read`: the same read with the segment's indexes cached, against the same
//!   read of a log holding the segment locally.
//!
//! The S3 variant (moto) needs seglog-tiered's `aws` feature, a long cold build this crate does
//! not take: not measured here.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};
use seglog::{BatchBuilder, Isolation, Log, LogConfig, LogOpenOptions};
use seglog_tiered::{
    FileKind, Layout, ObjectTier, PartitionTier, RemoteLogSegmentMetadata, SegmentToCopy, Tier,
    TopicIdPartition, Uuid,
};

use crate::Result;
use crate::harness::{Contender, Role, Trial, Work, WorkloadResult, measure};
use crate::workloads::{Context, labels, names};

/// Segment size of the tiered log: one single-part upload (seglog-tiered's part size is 8 MiB).
const SEGMENT_BYTES: i32 = 8 << 20;
/// Sealed segments of the tiered log.
const SEGMENTS: usize = 3;
/// Bytes per read.
const READ_BYTES: u32 = 1 << 20;
/// Record timestamps.
const T0: i64 = 1_700_000_000_000;

/// The three rows.
///
/// # Errors
///
/// The first failing set-up or trial.
pub fn run(context: &mut Context) -> Result<Vec<WorkloadResult>> {
    let root = context.scratch.dir("tier")?;
    let rounds = context.plan.rounds;
    let local = root.join("local-0");
    write_log(&local)?;
    let store_dir = root.join("store");
    std::fs::create_dir_all(&store_dir).map_err(|e| crate::io_error("create", &store_dir, e))?;
    let store = file_store(&store_dir)?;
    let layout = Layout::new(
        ObjectPath::default(),
        TopicIdPartition::new("bench", 0, Uuid::from_halves(29, 29))?,
    );
    let tier = Arc::new(ObjectTier::from_partition_tier(PartitionTier::new(
        store.clone(),
        layout.clone(),
        1,
    ))?);

    let mut results = Vec::new();
    // Copy: the first sealed segment of the local log, again every round (a new segment id
    // each time; the copy is deleted, untimed, after every run).
    let copy_log = Log::open_with(&local, config(), options())?;
    copy_log.set_high_watermark(copy_log.log_end_offset())?;
    let segment = segment_to_copy(&copy_log)?;
    let bytes = segment.size_in_bytes;
    let log_bytes = Bytes::from(
        std::fs::read(local.join(seglog_segment::file_name(
            segment.base_offset,
            seglog_segment::FileKind::LOG,
        )))
        .map_err(|e| crate::io_error("read", &local, e))?,
    );
    let about = format!(
        "copy of one sealed {:.1} MiB segment to a file:// store (six parts, metadata \
         STARTED/FINISHED); the reference PUTs the same .log bytes once",
        bytes as f64 / f64::from(1 << 20)
    );
    let contenders = vec![
        Contender::new(
            Role::Ceiling,
            labels::TIER_PUT,
            Put {
                tier: tier.clone(),
                store: store.clone(),
                key: ObjectPath::from("put/segment.log"),
                bytes: log_bytes,
            },
        ),
        Contender::new(
            Role::Seglog,
            "seglog",
            Copy {
                tier: tier.clone(),
                segment,
                copied: None,
            },
        ),
    ];
    results.push(measure(names::TIER_COPY, &about, rounds, contenders)?);
    drop(copy_log);

    // Reads: a tiered copy of the log with every sealed segment remote and deleted locally.
    let tiered = root.join("tiered-0");
    crate::fsx::copy_dir(&local, &tiered)?;
    let remote_root = root.join("remote");
    std::fs::create_dir_all(&remote_root)
        .map_err(|e| crate::io_error("create", &remote_root, e))?;
    let remote_store = file_store(&remote_root)?;
    let reads_tier = Arc::new(ObjectTier::from_partition_tier(PartitionTier::new(
        remote_store.clone(),
        layout.clone(),
        1,
    ))?);
    {
        let log = Log::open_with(&tiered, config(), options())?;
        log.set_high_watermark(log.log_end_offset())?;
        let driver = Tier::new(reads_tier.clone());
        driver.attach(&log)?;
        let copied = driver.copy(&log)?.copied.len();
        let deleted = log.delete_old_segments()?.deleted.len();
        if copied < SEGMENTS || deleted < SEGMENTS {
            return Err(
                format!("tiered {copied} and deleted {deleted} of {SEGMENTS} segments").into(),
            );
        }
        log.close()?;
    }
    let remote = reads_tier.finished_segments()?;
    let (Some(warmer), Some(target)) = (remote.first().cloned(), remote.get(1).cloned()) else {
        return Err("fewer than two remote segments".into());
    };
    // The byte range the read fetches, for the reference GET.
    let (position, len) = {
        let log = open_tiered(&tiered, &reads_tier)?;
        let mut buf = Vec::new();
        let fetch = log.read_into(
            target.start_offset,
            READ_BYTES,
            Isolation::LogEnd,
            true,
            &mut buf,
        )?;
        (fetch.position, buf.len() as u64)
    };
    let key = layout.data_key(target.start_offset, target.segment_id, FileKind::Segment);
    let about = format!(
        "1 MiB read through the log at the start of a remote segment whose indexes are not \
         cached (offset index GET, then a ranged GET); the reference is the same ranged GET \
         ({len} bytes at {position})"
    );
    let contenders = vec![
        Contender::new(
            Role::Ceiling,
            labels::TIER_RANGED_GET,
            RangedGet {
                tier: reads_tier.clone(),
                store: remote_store.clone(),
                key,
                range: position..position + len,
            },
        ),
        Contender::new(
            Role::Seglog,
            "seglog",
            RemoteRead {
                dir: tiered.clone(),
                tier: reads_tier.clone(),
                warm_up: warmer.start_offset,
                offset: target.start_offset,
                log: None,
                buf: Vec::new(),
            },
        ),
    ];
    results.push(measure(names::TIER_COLD_READ, &about, rounds, contenders)?);

    let about = "the same 1 MiB read with the remote segment's indexes cached (its ranged GET \
                 remains); the reference reads the same offset from the log holding the \
                 segment locally"
        .to_owned();
    let contenders = vec![
        Contender::new(
            Role::Ceiling,
            labels::TIER_LOCAL_READ,
            LocalRead {
                log: Log::open_with(&local, config(), options())?,
                offset: target.start_offset,
                buf: Vec::new(),
            },
        ),
        Contender::new(
            Role::Seglog,
            "seglog",
            RemoteRead {
                dir: tiered,
                tier: reads_tier,
                warm_up: target.start_offset,
                offset: target.start_offset,
                log: None,
                buf: Vec::new(),
            },
        ),
    ];
    results.push(measure(names::TIER_WARM_READ, &about, rounds, contenders)?);
    Ok(results)
}

/// seglog's `file://` store of `dir` (it fsyncs what it writes).
fn file_store(dir: &Path) -> Result<Arc<dyn ObjectStore>> {
    Ok(seglog_tiered::open_store(&format!("file://{}", dir.display()))?.store)
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: SEGMENT_BYTES,
        retention_ms: -1,
        message_timestamp_after_max_ms: i64::MAX,
        remote_storage_enable: true,
        local_retention_bytes: 0,
        ..LogConfig::default()
    }
}

fn options() -> LogOpenOptions {
    LogOpenOptions {
        high_watermark: seglog::HighWatermarkPolicy::Manual,
        ..LogOpenOptions::default()
    }
}

/// `SEGMENTS` sealed segments of 100-byte records in batches of 100, and an active one,
/// closed cleanly.
fn write_log(dir: &Path) -> Result<()> {
    let log = Log::open_with(dir, config(), options())?;
    let value = [b'v'; 100];
    let mut offset = 0i64;
    while log.segment_count() <= SEGMENTS {
        let mut builder = BatchBuilder::new(offset);
        for i in 0..100 {
            builder.append(T0 + offset + i, None, Some(&value), &[]);
        }
        log.append(&builder.build()?)?;
        offset += 100;
    }
    log.set_high_watermark(log.log_end_offset())?;
    log.close()?;
    Ok(())
}

/// The first copy candidate of `log` as the copier uploads it.
fn segment_to_copy(log: &Log) -> Result<SegmentToCopy> {
    let candidates = log.tier_candidates()?;
    let files = candidates.first().ok_or("no sealed segment to copy")?;
    Ok(SegmentToCopy::from_files(files))
}

/// The tiered log reopened with its tier attached: nothing of the remote tier is cached yet.
fn open_tiered(dir: &Path, tier: &Arc<ObjectTier>) -> Result<Log> {
    let options = LogOpenOptions {
        read_only: true,
        ..options()
    };
    let log = Log::open_with(dir, config(), options)?;
    log.set_remote_tier(tier.clone())?;
    Ok(log)
}

/// The reference of the copy: one PUT of the segment's bytes (in memory).
struct Put {
    tier: Arc<ObjectTier>,
    store: Arc<dyn ObjectStore>,
    key: ObjectPath,
    bytes: Bytes,
}

impl Trial for Put {
    fn run(&mut self) -> Result<Work> {
        let put = self.store.put(&self.key, self.bytes.clone().into());
        self.tier.block_on(put)?;
        Ok(Work::new(1, self.bytes.len() as u64))
    }

    fn cleanup(&mut self) -> Result<()> {
        self.tier.block_on(self.store.delete(&self.key))?;
        Ok(())
    }
}

/// seglog's copy of the segment (deleted through the delete states after every run, untimed).
struct Copy {
    tier: Arc<ObjectTier>,
    segment: SegmentToCopy,
    copied: Option<RemoteLogSegmentMetadata>,
}

impl Trial for Copy {
    fn run(&mut self) -> Result<Work> {
        let tier = self.tier.partition_tier();
        let done = self.tier.block_on(tier.copy_segment(&self.segment))?;
        self.copied = Some(done);
        Ok(Work::new(1, self.segment.size_in_bytes))
    }

    fn cleanup(&mut self) -> Result<()> {
        if let Some(done) = self.copied.take() {
            let tier = self.tier.partition_tier();
            self.tier.block_on(tier.delete_segment(&done))?;
        }
        Ok(())
    }
}

/// The reference of the cold read: the ranged GET of the bytes the read returns.
struct RangedGet {
    tier: Arc<ObjectTier>,
    store: Arc<dyn ObjectStore>,
    key: ObjectPath,
    range: std::ops::Range<u64>,
}

impl Trial for RangedGet {
    fn run(&mut self) -> Result<Work> {
        let get = self.store.get_range(&self.key, self.range.clone());
        let bytes = self.tier.block_on(get)?;
        Ok(Work::new(1, bytes.len() as u64))
    }
}

/// seglog's read of a remote segment from a log reopened for every run (so nothing of the
/// remote tier is cached), after an untimed read at `warm_up`: another segment's offset for a
/// cold read (the segment list is fetched, this segment's indexes are not), the same offset
/// for a warm one.
struct RemoteRead {
    dir: PathBuf,
    tier: Arc<ObjectTier>,
    warm_up: i64,
    offset: i64,
    log: Option<Log>,
    buf: Vec<u8>,
}

impl Trial for RemoteRead {
    fn prepare(&mut self) -> Result<()> {
        let log = open_tiered(&self.dir, &self.tier)?;
        log.read_into(self.warm_up, 1, Isolation::LogEnd, true, &mut self.buf)?;
        self.log = Some(log);
        Ok(())
    }

    fn run(&mut self) -> Result<Work> {
        let log = self.log.as_ref().ok_or("not prepared")?;
        log.read_into(
            self.offset,
            READ_BYTES,
            Isolation::LogEnd,
            true,
            &mut self.buf,
        )?;
        Ok(Work::new(1, self.buf.len() as u64))
    }

    fn cleanup(&mut self) -> Result<()> {
        drop(self.log.take());
        Ok(())
    }
}

/// The reference of the warm read: the same read from the log holding the segment locally.
struct LocalRead {
    log: Log,
    offset: i64,
    buf: Vec<u8>,
}

impl Trial for LocalRead {
    fn run(&mut self) -> Result<Work> {
        self.log.read_into(
            self.offset,
            READ_BYTES,
            Isolation::LogEnd,
            true,
            &mut self.buf,
        )?;
        Ok(Work::new(1, self.buf.len() as u64))
    }
}
