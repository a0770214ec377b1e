//! `seglog read DIR`: records in offset order, as a Kafka consumer sees them. Read-only.
//!
//! With `--store URL` a tiered partition is read across both tiers: from its whole log start
//! offset, the remote segments first (the store is only read). Without it, a partition whose
//! older data is remote is read from its local log start with a note saying so, and an offset
//! asked for in the remote part is an error naming the remote range (not "out of range").

use std::ops::ControlFlow;

use seglog::{Isolation, ListOffsets, Log, LogConfig};
use seglog_segment::{FileKind, file_path};

use crate::Outcome;
use crate::cli::{IsolationArg, ReadArgs};
use crate::error::Error;
use crate::output::Out;
use crate::progress::Progress;
use crate::scan::for_each_record_with;
use crate::view;

/// Runs `seglog read`.
///
/// # Errors
/// A missing directory, an offset out of range, undecodable data, stdout errors.
pub fn run(args: &ReadArgs, quiet: bool) -> Result<Outcome, Error> {
    let listing = crate::dir::DirListing::partition(&args.dir)?;
    let log = Log::open_read_only(&args.dir, LogConfig::default())?;
    let attached = crate::remote::attach(&log, &args.dir, &args.remote)?;
    if attached.is_none()
        && let Some(remote_start) = log.unattached_remote_start()
    {
        let local_start = log.local_log_start_offset();
        match args.from {
            Some(offset) if offset >= remote_start && offset < local_start => {
                return Err(Error::RemoteNotAttached {
                    dir: args.dir.clone(),
                    offset,
                    log_start_offset: remote_start,
                    local_log_start_offset: local_start,
                });
            }
            // Reading from the local part only: nothing remote is skipped.
            Some(offset) if offset >= local_start => {}
            _ => {
                if let Some(note) = crate::remote::remote_part_note(&log) {
                    eprintln!(
                        "seglog: note: {}: {note}; reading from {local_start}",
                        args.dir.display()
                    );
                }
            }
        }
    }
    let isolation = match args.isolation {
        IsolationArg::ReadUncommitted => Isolation::LogEnd,
        IsolationArg::ReadCommitted => {
            // A stopped log: everything written counts as replicated, so the last stable
            // offset is bounded by the log end only.
            log.set_high_watermark(log.log_end_offset())?;
            Isolation::ReadCommitted
        }
    };
    let start = match (args.from, args.from_timestamp) {
        (Some(offset), _) => Some(offset),
        (None, Some(ts)) => {
            let target = match ts {
                -1 => ListOffsets::Latest,
                -2 => ListOffsets::Earliest,
                -3 => ListOffsets::MaxTimestamp,
                -4 => ListOffsets::EarliestLocal,
                -5 => ListOffsets::LatestTiered,
                -6 => ListOffsets::EarliestPendingUpload,
                ts => ListOffsets::Timestamp(ts),
            };
            // -5 and -6 answer offset -1 when nothing is (or can be) tiered.
            log.offset_for_timestamp(target)?
                .map(|t| t.offset)
                .filter(|offset| *offset >= 0)
        }
        (None, None) => Some(log.log_start_offset()),
    };
    let mut out = Out::stdout();
    let Some(start) = start else {
        // No record at or after that timestamp.
        return Ok(Outcome::Ok);
    };
    let total = u64::try_from(log.log_end_offset() - start).unwrap_or(0);
    let progress = Progress::records(total, "read", quiet);
    let mut printed = 0u64;
    let max = args.max_records.unwrap_or(u64::MAX);
    if max > 0 {
        let damage = unreadable_tails(&log);
        let scanned = for_each_record_with(&log, start, isolation, |header, record| {
            progress.set(u64::try_from(record.offset - start).unwrap_or(0));
            let control = header.is_control.then(|| view::control_marker(&record));
            if control.is_some() && !args.include_control {
                return Ok(ControlFlow::Continue(()));
            }
            let line = view::record_line(&record, control, args.encoding);
            if args.json {
                out.json(&line)?;
            } else {
                out.line(view::record_text(&line))?;
            }
            printed += 1;
            Ok(if printed >= max {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            })
        });
        let end = scanned.map_err(|e| match e {
            Error::Log(source @ seglog::Error::OffsetOutOfRange { .. }) => Error::LogAt {
                dir: args.dir.clone(),
                source,
            },
            other => other,
        })?;
        // Damage the scan went past (it read beyond the last readable offset of a damaged
        // segment, or to the end of the log): report the first after what was printed.
        let passed = damage.into_iter().find(|d| {
            let Error::Unreadable { next_offset, .. } = d else {
                return false;
            };
            *next_offset >= start && (!end.stopped || end.next_offset > *next_offset)
        });
        if let Some(unreadable) = passed {
            progress.finish();
            out.flush()?;
            return Err(unreadable);
        }
        // A segment `recover` set aside (`<base>.log.damaged`): its records are not served,
        // which is said as for a damaged tail the scan went past.
        let aside = listing
            .set_aside()
            .into_iter()
            .find(|(_, base, _)| *base >= start && (!end.stopped || end.next_offset > *base));
        if let Some((path, base, len)) = aside {
            progress.finish();
            out.flush()?;
            return Err(Error::Unreadable {
                path,
                position: 0,
                next_offset: base,
                reason: format!(
                    "{len} bytes set aside by `seglog recover` (damaged from the first byte), not served"
                ),
            });
        }
    }
    progress.finish();
    out.flush()?;
    Ok(Outcome::Ok)
}

/// The segments whose loading found bytes it could not serve (a read-only open recovers in
/// memory and serves what precedes the damage), oldest first, as the error `read` reports when
/// it reaches one.
pub(crate) fn unreadable_tails(log: &Log) -> Vec<Error> {
    log.load_report()
        .segments
        .iter()
        .filter_map(|segment| {
            let recovery = segment.recovery.as_ref()?;
            let reason = recovery.reason.as_ref()?;
            if recovery.truncated_bytes == 0 {
                return None;
            }
            let (what, position, corruption) = crate::cmd::recover::truncation_text(reason);
            Some(Error::Unreadable {
                path: file_path(log.dir(), segment.base_offset, FileKind::LOG),
                position,
                next_offset: recovery.next_offset,
                reason: corruption.unwrap_or_else(|| what.replace('_', " ")),
            })
        })
        .collect()
}
