//! `seglog tier DIR --store URL`: copy the sealed segments of a partition to a remote tier in
//! Kafka's tiered-storage layout (`seglog-tiered`), then apply the retention asked for;
//! `seglog tier status DIR --store URL`: what the remote tier holds;
//! `seglog tier DIR --store URL --adopt`: adopt what a Kafka broker tiered there with
//! `LocalTieredStorage` (`seglog_tiered::PartitionTier::adopt`).
//!
//! A standalone log has no replication: its high watermark is taken to be the log end offset
//! (as `retain` does), so every sealed segment below the last stable offset is eligible.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use seglog::{Log, LogConfig, LogOpenOptions, ManualClock};
use seglog_tiered::{ObjectTier, RecoveryReport, RemoteLogSegmentState, Tier, Uuid};
use serde::Serialize;

use crate::Outcome;
use crate::cli::{TierAction, TierArgs, TierCopyArgs, TierTarget};
use crate::cmd::produce::now_ms;
use crate::dir::DirListing;
use crate::error::Error;
use crate::output::{Out, emit_report};
use crate::remote::open_remote;

/// One remote segment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RemoteLine {
    /// Its base offset.
    pub base_offset: i64,
    /// Its last offset.
    pub end_offset: i64,
    /// Bytes of its `.log`.
    pub bytes: u64,
    /// The remote segment id (Kafka's Uuid text).
    pub segment_id: String,
    /// Kafka's state name (`COPY_SEGMENT_FINISHED`, ...; `PURGING` while a finished
    /// deletion's records are being removed).
    pub state: &'static str,
}

/// The `tier --json` object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TierReport {
    /// The directory.
    pub dir: PathBuf,
    /// The store URL.
    pub store: String,
    /// The topic id used in the object names.
    pub topic_id: String,
    /// What the store's recovery cleaned up first (abandoned copies, interrupted deletions,
    /// orphans).
    pub abandoned_copies: usize,
    /// Interrupted deletions finished.
    pub finished_deletes: usize,
    /// Orphan segments deleted.
    pub orphans: usize,
    /// Segments copied by this run.
    pub copied: Vec<RemoteLine>,
    /// Bytes copied by this run.
    pub copied_bytes: u64,
    /// Local segments deleted (base offsets): wholly in the remote tier and past local retention.
    pub local_deleted: Vec<i64>,
    /// Remote segments deleted by remote retention (base offsets).
    pub remote_deleted: Vec<i64>,
    /// The highest offset in remote storage (-1: none).
    pub highest_remote_offset: i64,
    /// The whole log's start offset.
    pub log_start_offset: i64,
    /// The first offset still on local disk (KIP-1005).
    pub local_log_start_offset: i64,
    /// The log end offset.
    pub log_end_offset: i64,
}

/// The `tier --adopt --json` object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AdoptLine {
    /// The directory.
    pub dir: PathBuf,
    /// The store URL.
    pub store: String,
    /// The topic id used in the object names.
    pub topic_id: String,
    /// Segments adopted by this run, by base offset.
    pub adopted: Vec<seglog_tiered::AdoptedSegment>,
    /// Remote segments that already had seglog metadata.
    pub already_known: usize,
    /// Filesets lacking a part every copy uploads: not adopted (an abandoned copy or an
    /// unfinished deletion of the broker's); the next `seglog tier` run deletes them as orphans.
    pub incomplete: Vec<seglog_tiered::IncompleteFileset>,
    /// The highest offset in remote storage afterwards (-1: none).
    pub highest_remote_offset: i64,
    /// The whole log's start offset, with the remote tier attached.
    pub log_start_offset: i64,
    /// The first offset on local disk (KIP-1005).
    pub local_log_start_offset: i64,
    /// The log end offset.
    pub log_end_offset: i64,
}

/// The `tier status --json` object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TierStatus {
    /// The directory.
    pub dir: PathBuf,
    /// The store URL.
    pub store: String,
    /// The topic id used in the object names.
    pub topic_id: String,
    /// Every remote segment with metadata, by base offset (any state).
    pub remote: Vec<RemoteLine>,
    /// Bytes of the finished remote segments.
    pub remote_bytes: u64,
    /// The highest offset in remote storage (-1: none).
    pub highest_remote_offset: i64,
    /// Local segments not yet (wholly) in the remote tier.
    pub only_local_segments: usize,
    /// Their bytes.
    pub only_local_bytes: u64,
    /// The first local offset.
    pub local_log_start_offset: i64,
    /// The log end offset.
    pub log_end_offset: i64,
}

/// Runs `seglog tier` or `seglog tier status`.
///
/// # Errors
/// A missing directory or a name that is not `<topic>-<partition>`; no topic id; a bad store
/// URL; store, log and I/O errors.
pub fn run(args: &TierArgs) -> Result<Outcome, Error> {
    match &args.action {
        Some(TierAction::Status(target)) => status(target),
        None => copy(&args.copy),
    }
}

struct Target<'a> {
    dir: &'a Path,
    store: &'a str,
    topic_id: Uuid,
    tier: Arc<ObjectTier>,
}

fn target(t: &TierTarget) -> Result<Target<'_>, Error> {
    let (Some(dir), Some(store)) = (t.dir.as_deref(), t.store.as_deref()) else {
        return Err(Error::Usage {
            arg: "DIR",
            reason: "`seglog tier` needs a partition directory and --store URL".into(),
        });
    };
    DirListing::existing_log(dir)?;
    let remote = open_remote(dir, store, t.topic_id.as_deref())?;
    Ok(Target {
        dir,
        store,
        topic_id: remote.topic_id,
        tier: remote.tier,
    })
}

fn copy(args: &TierCopyArgs) -> Result<Outcome, Error> {
    if args.adopt {
        return adopt(&args.target);
    }
    let t = target(&args.target)?;
    let now = args.now.unwrap_or_else(now_ms);
    let config = LogConfig {
        remote_storage_enable: true,
        retention_ms: args.retention_ms.unwrap_or(-1),
        retention_bytes: args.retention_bytes.unwrap_or(-1),
        local_retention_ms: args.local_retention_ms.unwrap_or(-2),
        local_retention_bytes: args.local_retention_bytes.unwrap_or(-2),
        ..LogConfig::default()
    };
    let options = LogOpenOptions {
        clock: Arc::new(ManualClock::new(now)),
        ..super::open_options()
    };
    let log = Log::open_with(t.dir, config, options)?;
    let result = copy_into(&log, &t, args, now);
    let closed = log.close();
    let report = result?;
    closed?;
    emit_report(args.target.json, &report, print_copy)?;
    Ok(Outcome::Ok)
}

fn copy_into(
    log: &Log,
    t: &Target<'_>,
    args: &TierCopyArgs,
    now: i64,
) -> Result<TierReport, Error> {
    log.set_high_watermark(log.log_end_offset())?;
    let tier = Tier::new(t.tier.clone());
    let RecoveryReport {
        abandoned_copies,
        finished_deletes,
        orphans,
    } = tier.attach(log).map_err(|e| match e {
        // A broker's filesets would be deleted as orphans: refused, nothing changed.
        e @ seglog_tiered::Error::NotAdopted { .. } => Error::NotAdopted {
            dir: t.dir.to_path_buf(),
            store: t.store.to_owned(),
            source: Box::new(e),
        },
        e => e.into(),
    })?;
    let copied = tier.copy(log)?;
    let local_deleted = if args.local_retention_bytes.is_some() || args.local_retention_ms.is_some()
    {
        log.delete_old_segments()?
            .deleted
            .iter()
            .map(|d| d.base_offset)
            .collect()
    } else {
        Vec::new()
    };
    let remote_deleted = if args.retention_bytes.is_some() || args.retention_ms.is_some() {
        tier.expire(log, now)?.deleted
    } else {
        Vec::new()
    };
    Ok(TierReport {
        dir: t.dir.to_path_buf(),
        store: t.store.to_owned(),
        topic_id: t.topic_id.to_string(),
        abandoned_copies,
        finished_deletes,
        orphans,
        copied_bytes: copied.copied.iter().map(|c| c.size_in_bytes).sum(),
        copied: copied
            .copied
            .iter()
            .map(|c| RemoteLine {
                base_offset: c.base_offset,
                end_offset: c.end_offset,
                bytes: c.size_in_bytes,
                segment_id: c.segment_id.clone(),
                state: RemoteLogSegmentState::CopySegmentFinished.kafka_name(),
            })
            .collect(),
        local_deleted,
        remote_deleted,
        highest_remote_offset: log.highest_remote_offset(),
        log_start_offset: log.log_start_offset(),
        local_log_start_offset: log.local_log_start_offset(),
        log_end_offset: log.log_end_offset(),
    })
}

fn adopt(target_args: &TierTarget) -> Result<Outcome, Error> {
    let t = target(target_args)?;
    let adopted = t.tier.block_on(t.tier.partition_tier().adopt())?;
    let config = LogConfig {
        remote_storage_enable: true,
        ..LogConfig::default()
    };
    let log = Log::open_read_only(t.dir, config)?;
    log.set_remote_tier(t.tier.clone())?;
    let report = AdoptLine {
        dir: t.dir.to_path_buf(),
        store: t.store.to_owned(),
        topic_id: t.topic_id.to_string(),
        adopted: adopted.adopted,
        already_known: adopted.already_known,
        incomplete: adopted.incomplete,
        highest_remote_offset: log.highest_remote_offset(),
        log_start_offset: log.log_start_offset(),
        local_log_start_offset: log.local_log_start_offset(),
        log_end_offset: log.log_end_offset(),
    };
    emit_report(target_args.json, &report, print_adopt)?;
    Ok(Outcome::Ok)
}

fn print_adopt(out: &mut Out, r: &AdoptLine) -> Result<(), Error> {
    out.line(format_args!(
        "{}: adopted {} remote segments from {} ({} already known); highest remote offset {}, log start {}, local log start {}, log end {}",
        r.dir.display(),
        r.adopted.len(),
        r.store,
        r.already_known,
        r.highest_remote_offset,
        r.log_start_offset,
        r.local_log_start_offset,
        r.log_end_offset
    ))?;
    for a in &r.adopted {
        out.line(format_args!(
            "  adopted {}..={} ({} bytes) as {}",
            a.base_offset, a.end_offset, a.size_in_bytes, a.segment_id
        ))?;
    }
    for i in &r.incomplete {
        out.line(format_args!(
            "  not adopted: {} (no {} part: an abandoned copy; the next `seglog tier` deletes it as an orphan)",
            i.key,
            i.missing.join(", ")
        ))?;
    }
    Ok(())
}

fn status(target_args: &TierTarget) -> Result<Outcome, Error> {
    let t = target(target_args)?;
    let chains = t.tier.block_on(t.tier.partition_tier().metadata().list())?;
    let remote: Vec<RemoteLine> = chains
        .iter()
        .map(|c| RemoteLine {
            base_offset: c.start_offset,
            end_offset: c.latest.as_ref().map_or(-1, |m| m.end_offset),
            bytes: c.latest.as_ref().map_or(0, |m| m.segment_size_in_bytes),
            segment_id: c.segment_id.to_string(),
            state: c
                .latest
                .as_ref()
                .map_or("PURGING", |m| m.state.kafka_name()),
        })
        .collect();
    let finished = t.tier.finished_segments()?;
    let config = LogConfig {
        remote_storage_enable: true,
        ..LogConfig::default()
    };
    let log = Log::open_read_only(t.dir, config)?;
    if let Some(last) = finished.last() {
        log.set_highest_remote_offset(last.end_offset);
    }
    let report = TierStatus {
        dir: t.dir.to_path_buf(),
        store: t.store.to_owned(),
        topic_id: t.topic_id.to_string(),
        remote,
        remote_bytes: finished.iter().map(|s| s.segment_size_in_bytes).sum(),
        highest_remote_offset: finished.last().map_or(-1, |s| s.end_offset),
        only_local_segments: log.only_local_segments_count(),
        only_local_bytes: log.only_local_segments_size(),
        local_log_start_offset: log.local_log_start_offset(),
        log_end_offset: log.log_end_offset(),
    };
    emit_report(target_args.json, &report, print_status)?;
    Ok(Outcome::Ok)
}

fn print_copy(out: &mut Out, r: &TierReport) -> Result<(), Error> {
    out.line(format_args!(
        "{}: copied {} segments ({} bytes) to {}; highest remote offset {}, log start {}, local log start {}, log end {}",
        r.dir.display(),
        r.copied.len(),
        r.copied_bytes,
        r.store,
        r.highest_remote_offset,
        r.log_start_offset,
        r.local_log_start_offset,
        r.log_end_offset
    ))?;
    for c in &r.copied {
        out.line(format_args!(
            "  copied {}..={} ({} bytes) as {}",
            c.base_offset, c.end_offset, c.bytes, c.segment_id
        ))?;
    }
    if r.abandoned_copies + r.finished_deletes + r.orphans > 0 {
        out.line(format_args!(
            "  cleaned up first: {} abandoned copies, {} interrupted deletions, {} orphans",
            r.abandoned_copies, r.finished_deletes, r.orphans
        ))?;
    }
    for base in &r.local_deleted {
        out.line(format_args!(
            "  deleted local segment {base} (in the remote tier)"
        ))?;
    }
    for base in &r.remote_deleted {
        out.line(format_args!("  deleted remote segment {base} (retention)"))?;
    }
    Ok(())
}

fn print_status(out: &mut Out, r: &TierStatus) -> Result<(), Error> {
    out.line(format_args!(
        "{}: {} remote segments ({} bytes finished) in {}, highest remote offset {}; {} segments ({} bytes) only local; local log start {}, log end {}",
        r.dir.display(),
        r.remote.len(),
        r.remote_bytes,
        r.store,
        r.highest_remote_offset,
        r.only_local_segments,
        r.only_local_bytes,
        r.local_log_start_offset,
        r.log_end_offset
    ))?;
    for s in &r.remote {
        out.line(format_args!(
            "  {}..={} {} bytes {} {}",
            s.base_offset, s.end_offset, s.bytes, s.state, s.segment_id
        ))?;
    }
    Ok(())
}
