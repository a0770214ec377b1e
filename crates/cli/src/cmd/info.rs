//! `seglog info DIR`: log start/end offsets and one line per segment. Read-only.
//!
//! Given a `log.dirs` root (a directory of partition directories), it describes each
//! partition.
//!
//! A tiered partition (KIP-405) has a log start offset below its local log start offset:
//! with `--store URL` its remote segments are listed too; without, it says which offsets are
//! remote.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use seglog::{Log, LogConfig, SegmentInfo, parse_partition_dir_name};
use seglog_records::{BatchHeader, BatchRef, HeaderRead, RECORD_BATCH_OVERHEAD};
use serde::Serialize;

use crate::Outcome;
use crate::cli::{InfoArgs, RemoteArgs};
use crate::dir::DirListing;
use crate::error::Error;
use crate::output::Out;
use crate::view::MAX_DECOMPRESSED_BYTES;

/// One partition's summary (the `info --json` object).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogInfo {
    /// The partition directory.
    pub dir: PathBuf,
    /// Topic, when the directory is named `<topic>-<partition>`.
    pub topic: Option<String>,
    /// Partition number, likewise.
    pub partition: Option<i32>,
    /// First offset a reader may fetch (of the whole log: below the local log start offset
    /// when older data is in the remote tier).
    pub log_start_offset: i64,
    /// The first offset on local disk (KIP-1005's local log start offset).
    pub local_log_start_offset: i64,
    /// The remote tier, for a tiered partition (`null` for a partition with only local data).
    pub remote: Option<RemoteInfo>,
    /// Offset the next record will get.
    pub log_end_offset: i64,
    /// Whether the directory was shut down cleanly (when unclean, the figures are after an
    /// in-memory recovery; nothing was written).
    pub clean_shutdown: bool,
    /// The leader-epoch cache, `[epoch, start_offset]` pairs oldest first (read from
    /// `leader-epoch-checkpoint` and brought up to date as a load does; rebuilt from the
    /// batches when the file is missing).
    pub leader_epochs: Vec<(i32, i64)>,
    /// The last stable offset with the high watermark at the log end (a stopped log): the
    /// first offset of the earliest open transaction, else the log end offset.
    pub last_stable_offset: i64,
    /// Producer ids in the producer state (loaded from the latest `.snapshot` and the
    /// batches after it, as a load does).
    pub producers: usize,
    /// Open transactions, `[producer_id, first_offset]` pairs by first offset.
    pub ongoing_transactions: Vec<(i64, i64)>,
    /// Segments, oldest first.
    pub segments: Vec<SegmentLine>,
    /// Sums over the segments.
    pub totals: Totals,
}

/// One segment of [`LogInfo`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SegmentLine {
    /// Base offset (the file name).
    pub base_offset: i64,
    /// Bytes of the `.log`.
    pub bytes: u64,
    /// Offset index entries.
    pub index_entries: usize,
    /// Time index entries.
    pub time_index_entries: usize,
    /// Offset of the first record (`null` when empty).
    pub first_offset: Option<i64>,
    /// Offset of the last record (`null` when empty).
    pub last_offset: Option<i64>,
    /// Batches (legacy messages count one each).
    pub batches: u64,
    /// Records, control records included.
    pub records: u64,
    /// Largest record timestamp (`null` when no record has one).
    pub largest_timestamp: Option<i64>,
    /// Whether this is the active (last) segment.
    pub active: bool,
}

/// The remote tier of [`LogInfo`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RemoteInfo {
    /// The store URL (`--store`); `null` when none was given: the checkpoint says older
    /// offsets are remote, and nothing more is known.
    pub store: Option<String>,
    /// The topic id in the object names, when attached.
    pub topic_id: Option<String>,
    /// The finished remote segments (`COPY_SEGMENT_FINISHED`), oldest first; empty when not
    /// attached.
    pub segments: Vec<RemoteSegmentLine>,
    /// Bytes of their `.log`s.
    pub bytes: u64,
    /// The highest offset in remote storage (`null` when not attached, -1: no segment).
    pub highest_remote_offset: Option<i64>,
}

/// One remote segment of [`RemoteInfo`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RemoteSegmentLine {
    /// Its base offset (Kafka's `startOffset`).
    pub base_offset: i64,
    /// Its last offset (Kafka's `endOffset`).
    pub end_offset: i64,
    /// Bytes of its `.log`.
    pub bytes: u64,
    /// Its largest record timestamp (`null` when no record has one).
    pub largest_timestamp: Option<i64>,
    /// The remote segment id (Kafka's Uuid text).
    pub segment_id: String,
}

/// Totals of [`LogInfo`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// Segments.
    pub segments: usize,
    /// Bytes of all `.log` files.
    pub bytes: u64,
    /// Offset index entries.
    pub index_entries: usize,
    /// Time index entries.
    pub time_index_entries: usize,
    /// Batches.
    pub batches: u64,
    /// Records.
    pub records: u64,
}

/// Runs `seglog info`.
///
/// # Errors
/// A missing directory, a log that cannot be loaded, stdout errors.
pub fn run(args: &InfoArgs) -> Result<Outcome, Error> {
    let listing = DirListing::read(&args.dir)?;
    let dirs = if listing.is_log_dirs_root() {
        if args.remote.topic_id.is_some() {
            return Err(Error::Usage {
                arg: "--topic-id",
                reason: "a log.dirs root holds partitions of many topics: each takes its topic id from its partition.metadata".into(),
            });
        }
        if let Some((path, what)) = listing.irregular.first() {
            return Err(Error::NotRegular {
                path: path.clone(),
                what: what.clone(),
            });
        }
        listing.partition_dirs()
    } else {
        vec![args.dir.clone()]
    };
    let mut out = Out::stdout();
    let mut damage = Vec::new();
    for (i, dir) in dirs.iter().enumerate() {
        let (info, unreadable) = log_info_and_damage(dir, &args.remote)?;
        damage.extend(unreadable);
        if args.json {
            out.json(&info)?;
        } else {
            if i > 0 {
                out.line("")?;
            }
            print_info(&mut out, &info)?;
        }
    }
    out.flush()?;
    // Bytes the read-only open could not serve (its in-memory recovery stopped at damage):
    // reported as `read` reports them, for a partition and for every partition of a root
    // alike, after everything else was printed (exit 1).
    let mut damage = damage.into_iter();
    if let Some(first) = damage.next() {
        for more in damage {
            eprintln!("seglog: error: {}", more.one_line());
        }
        return Err(first);
    }
    Ok(Outcome::Ok)
}

/// Describes the log in `dir`, opening it read-only.
///
/// # Errors
/// A log that cannot be loaded; I/O errors reading segment headers.
pub fn log_info(dir: &Path) -> Result<LogInfo, Error> {
    log_info_and_damage(dir, &RemoteArgs::default()).map(|(info, _)| info)
}

/// [`log_info`], with the damage the open's in-memory recovery could not serve past
/// ([`Error::Unreadable`] per damaged segment, oldest first).
fn log_info_and_damage(dir: &Path, remote: &RemoteArgs) -> Result<(LogInfo, Vec<Error>), Error> {
    DirListing::partition(dir)?;
    let log = Log::open_read_only(dir, LogConfig::default())?;
    let remote = remote_info(&log, dir, remote)?;
    let damage = crate::cmd::read::unreadable_tails(&log);
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| parse_partition_dir_name(n).ok());
    let mut totals = Totals::default();
    let mut segments = Vec::new();
    for segment in log.segments() {
        let line = segment_line(&segment)?;
        totals.segments += 1;
        totals.bytes += line.bytes;
        totals.index_entries += line.index_entries;
        totals.time_index_entries += line.time_index_entries;
        totals.batches += line.batches;
        totals.records += line.records;
        segments.push(line);
    }
    let info = LogInfo {
        dir: dir.to_owned(),
        topic: name.as_ref().map(|n| n.topic_partition.topic.clone()),
        partition: name.as_ref().map(|n| n.topic_partition.partition),
        log_start_offset: log
            .unattached_remote_start()
            .unwrap_or_else(|| log.log_start_offset()),
        local_log_start_offset: log.local_log_start_offset(),
        remote,
        log_end_offset: log.log_end_offset(),
        clean_shutdown: log.load_report().had_clean_shutdown,
        leader_epochs: log.leader_epochs(),
        last_stable_offset: log
            .set_high_watermark(log.log_end_offset())
            .map(|_| log.last_stable_offset())?,
        producers: log.producer_count(),
        ongoing_transactions: log.ongoing_transactions(),
        segments,
        totals,
    };
    Ok((info, damage))
}

/// The remote tier of the partition: attached and listed with `--store`, else only what the
/// checkpoint says (`None` for a partition with only local data).
fn remote_info(log: &Log, dir: &Path, args: &RemoteArgs) -> Result<Option<RemoteInfo>, Error> {
    let Some(remote) = crate::remote::attach(log, dir, args)? else {
        return Ok(log.unattached_remote_start().map(|_| RemoteInfo {
            store: None,
            topic_id: None,
            segments: Vec::new(),
            bytes: 0,
            highest_remote_offset: None,
        }));
    };
    let segments: Vec<RemoteSegmentLine> = remote
        .tier
        .finished_segments()?
        .iter()
        .map(|s| RemoteSegmentLine {
            base_offset: s.start_offset,
            end_offset: s.end_offset,
            bytes: s.segment_size_in_bytes,
            largest_timestamp: (s.max_timestamp_ms >= 0).then_some(s.max_timestamp_ms),
            segment_id: s.segment_id.to_string(),
        })
        .collect();
    Ok(Some(RemoteInfo {
        store: Some(remote.store),
        topic_id: Some(remote.topic_id.to_string()),
        bytes: segments.iter().map(|s| s.bytes).sum(),
        highest_remote_offset: Some(segments.last().map_or(-1, |s| s.end_offset)),
        segments,
    }))
}

/// Walks the batch headers of a segment's published bytes (seeking over record data).
fn segment_line(segment: &SegmentInfo) -> Result<SegmentLine, Error> {
    let path = &segment.path;
    let (file, _) = crate::log_stream::open_checked(path)?;
    let mut line = SegmentLine {
        base_offset: segment.base_offset,
        bytes: segment.size_bytes,
        index_entries: segment.index_entries,
        time_index_entries: segment.time_index_entries,
        first_offset: None,
        last_offset: None,
        batches: 0,
        records: 0,
        largest_timestamp: segment.largest_timestamp_ms,
        active: segment.is_active,
    };
    let mut position = 0u64;
    let mut prefix = [0u8; RECORD_BATCH_OVERHEAD];
    while position < segment.size_bytes {
        let remaining = segment.size_bytes - position;
        let want = remaining.min(RECORD_BATCH_OVERHEAD as u64) as usize;
        file.read_exact_at(&mut prefix[..want], position)
            .map_err(Error::io("read", path))?;
        let header = match BatchHeader::parse(&prefix[..want], position, remaining) {
            Ok(HeaderRead::Batch(h)) => h,
            // The log hides torn or corrupt tails from readers; stop where they start.
            Ok(HeaderRead::End | HeaderRead::PartialTail { .. }) | Err(_) => break,
        };
        let (first, count) = match (header.base_offset, header.record_count) {
            (Some(first), Some(count)) => (first, u64::try_from(count).unwrap_or(0)),
            // A legacy compressed wrapper: only its inner messages know.
            _ => legacy_wrapper(&file, path, &header)?,
        };
        line.first_offset.get_or_insert(first);
        line.last_offset = Some(header.last_offset);
        line.batches += 1;
        line.records += count;
        position = header.end_position();
    }
    Ok(line)
}

/// First offset and record count of a legacy compressed wrapper, by decompressing it.
fn legacy_wrapper(file: &File, path: &Path, header: &BatchHeader) -> Result<(i64, u64), Error> {
    let mut bytes = vec![0u8; header.total_size as usize];
    file.read_exact_at(&mut bytes, header.position)
        .map_err(Error::io("read", path))?;
    let records_err = |source| Error::Records {
        path: path.to_owned(),
        source,
    };
    let batch = BatchRef::parse(&bytes, header.position).map_err(records_err)?;
    let mut first = None;
    let mut count = 0;
    for record in batch.records(MAX_DECOMPRESSED_BYTES) {
        let record = record.map_err(records_err)?;
        first.get_or_insert(record.offset);
        count += 1;
    }
    Ok((first.unwrap_or(header.last_offset), count))
}

fn opt(value: Option<i64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

/// Prints `info` as text.
///
/// # Errors
/// Stdout errors.
pub fn print_info(out: &mut Out, info: &LogInfo) -> Result<(), Error> {
    out.line(format_args!("{}", info.dir.display()))?;
    let local_start = if info.local_log_start_offset == info.log_start_offset {
        String::new()
    } else {
        format!(", local log start offset {}", info.local_log_start_offset)
    };
    out.line(format_args!(
        "  log start offset {}{local_start}, log end offset {}, {}",
        info.log_start_offset,
        info.log_end_offset,
        if info.clean_shutdown {
            "clean shutdown"
        } else {
            "not shut down cleanly (recovered in memory)"
        }
    ))?;
    out.line(format_args!(
        "  last stable offset {}, {} producer ids, {} open transactions",
        info.last_stable_offset,
        info.producers,
        info.ongoing_transactions.len()
    ))?;
    if !info.leader_epochs.is_empty() {
        let epochs: Vec<String> = info
            .leader_epochs
            .iter()
            .map(|(epoch, start)| format!("{epoch}@{start}"))
            .collect();
        out.line(format_args!(
            "  leader epochs (epoch@start offset): {}",
            epochs.join(" ")
        ))?;
    }
    out.line(format_args!(
        "  {:>20} {:>12} {:>8} {:>8} {:>12} {:>12} {:>8} {:>10} {:>15}",
        "base offset",
        "bytes",
        "index",
        "tindex",
        "first",
        "last",
        "batches",
        "records",
        "max timestamp"
    ))?;
    for s in &info.segments {
        out.line(format_args!(
            "  {:>20} {:>12} {:>8} {:>8} {:>12} {:>12} {:>8} {:>10} {:>15}{}",
            s.base_offset,
            s.bytes,
            s.index_entries,
            s.time_index_entries,
            opt(s.first_offset),
            opt(s.last_offset),
            s.batches,
            s.records,
            opt(s.largest_timestamp),
            if s.active { " (active)" } else { "" },
        ))?;
    }
    let t = &info.totals;
    out.line(format_args!(
        "  total: {} segments, {} bytes, {} index + {} time index entries, {} batches, {} records",
        t.segments, t.bytes, t.index_entries, t.time_index_entries, t.batches, t.records
    ))?;
    if let Some(remote) = &info.remote {
        print_remote(out, info, remote)?;
    }
    Ok(())
}

fn print_remote(out: &mut Out, info: &LogInfo, remote: &RemoteInfo) -> Result<(), Error> {
    let Some(store) = &remote.store else {
        return out.line(format_args!(
            "  remote tier: offsets {}..{} are remote (not attached: give --store URL to list them)",
            info.log_start_offset,
            info.local_log_start_offset - 1
        ));
    };
    out.line(format_args!(
        "  remote tier {store}: {} segments, {} bytes, highest remote offset {}",
        remote.segments.len(),
        remote.bytes,
        remote.highest_remote_offset.unwrap_or(-1)
    ))?;
    out.line(format_args!(
        "  {:>20} {:>12} {:>12} {:>15}  segment id",
        "base offset", "last", "bytes", "max timestamp"
    ))?;
    for s in &remote.segments {
        out.line(format_args!(
            "  {:>20} {:>12} {:>12} {:>15}  {}",
            s.base_offset,
            s.end_offset,
            s.bytes,
            opt(s.largest_timestamp),
            s.segment_id
        ))?;
    }
    Ok(())
}
