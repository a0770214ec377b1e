//! `seglog read DIR`: records in offset order, as a Kafka consumer sees them. Read-only.

use std::ops::ControlFlow;

use seglog::{ListOffsets, Log, LogConfig};

use crate::Outcome;
use crate::cli::ReadArgs;
use crate::error::Error;
use crate::output::Out;
use crate::progress::Progress;
use crate::scan::for_each_record;
use crate::view;

/// Runs `seglog read`.
///
/// # Errors
/// A missing directory, an offset out of range, undecodable data, stdout errors.
pub fn run(args: &ReadArgs, quiet: bool) -> Result<Outcome, Error> {
    crate::dir::DirListing::partition(&args.dir)?;
    let log = Log::open_read_only(&args.dir, LogConfig::default())?;
    let start = match (args.from, args.from_timestamp) {
        (Some(offset), _) => Some(offset),
        (None, Some(ts)) => log
            .offset_for_timestamp(ListOffsets::Timestamp(ts))?
            .map(|t| t.offset),
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
        let scanned = for_each_record(&log, start, |header, record| {
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
        scanned.map_err(|e| match e {
            Error::Log(source @ seglog::Error::OffsetOutOfRange { .. }) => Error::LogAt {
                dir: args.dir.clone(),
                source,
            },
            other => other,
        })?;
    }
    progress.finish();
    out.flush()?;
    Ok(Outcome::Ok)
}
