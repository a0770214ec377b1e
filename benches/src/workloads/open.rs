//! Opening logs: recovery after a crash with nothing flushed, and the clean open of a log with
//! 1,000 segments.

use crate::Result;
use crate::ceiling;
use crate::child::{self, Job, Task};
use crate::commitlog_contender;
use crate::data::{DataSpec, Dataset};
use crate::fsx;
use crate::harness::{Contender, Role, WorkloadResult, measure};
use crate::seglog_contender;
use crate::workloads::{Context, labels, names};

/// `recovery (unflushed)`: a child process appends the 100 B dataset and exits without closing
/// or flushing (a process crash: the page cache keeps what was written, nothing was fsynced or
/// checkpointed). Each round opens a fresh copy of that directory.
///
/// # Errors
///
/// The first failing set-up or trial.
pub fn run_recovery(context: &mut Context) -> Result<Vec<WorkloadResult>> {
    let spec = context.plan.small;
    let root = context.scratch.dir("recovery")?;
    let data = Dataset::generate(spec)?;
    let ceiling_file = root.join("ceiling.log");
    ceiling::write_image(&data, &ceiling_file)?;
    drop(data);

    let commitlog_pristine = root.join("commitlog-crashed");
    child::spawn(&Job {
        task: Task::CrashWrite,
        role: Role::Commitlog,
        dir: commitlog_pristine.clone(),
        spec,
        copies: 1,
    })?;

    let seglog_pristine = root.join("seglog-crashed");
    child::spawn(&Job {
        task: Task::CrashWrite,
        role: Role::Seglog,
        dir: seglog_pristine.clone(),
        spec,
        copies: 1,
    })?;

    context.notes.push(
        "recovery: commitlog validates nothing on open (it maps its indexes and trusts them), \
         so its figure is an open, not a recovery"
            .to_owned(),
    );
    let about = format!(
        "open a log of {} records of {} B left by a killed writer (no close, no fsync, no \
         checkpoint); the ceiling reads the same bytes once",
        spec.records, spec.record_bytes
    );
    let mut contenders = vec![
        Contender::new(
            Role::Ceiling,
            "ceiling (std::fs read)",
            context.cold(ceiling::SequentialRead::new(
                ceiling_file.clone(),
                spec.records,
                spec.payload_bytes(),
            )),
        ),
        Contender::new(
            Role::Reference,
            labels::RECOVERY_BOUND,
            context.cold(ceiling::ValidatedRead::new(
                ceiling_file.clone(),
                spec.records,
                spec.payload_bytes(),
                ceiling::Validate::Crc,
            )),
        ),
        Contender::new(
            Role::Seglog,
            "seglog",
            context.cold(seglog_contender::Open::new(
                root.join("seglog-open"),
                Some(seglog_pristine.clone()),
                seglog::LogConfig::default(),
                spec.records,
                spec.payload_bytes(),
            )?),
        ),
        Contender::new(
            Role::Commitlog,
            "commitlog 0.2",
            context.cold(commitlog_contender::Open::new(
                root.join("commitlog-open"),
                Some(commitlog_pristine),
                1 << 30,
                spec.records,
                spec.payload_bytes(),
            )),
        ),
    ];
    if let Some(kafka) =
        context
            .kafka
            .recovery(&seglog_pristine, &root, spec.records, spec.payload_bytes())?
    {
        contenders.push(Contender::new(
            Role::Kafka,
            crate::kafka_contender::LABEL,
            context.cold(kafka),
        ));
    }
    Ok(vec![measure(
        names::RECOVERY,
        &about,
        context.plan.rounds,
        contenders,
    )?])
}

/// `open 1000 segments`: a cleanly closed log with one batch per segment.
///
/// # Errors
///
/// The first failing set-up or trial.
pub fn run_segments(context: &mut Context) -> Result<Vec<WorkloadResult>> {
    let segments = context.plan.segments;
    let spec = DataSpec {
        records: segments as u64 * context.plan.small.batch_records as u64,
        ..context.plan.small
    };
    let data = Dataset::generate(spec)?;
    let root = context.scratch.dir("segments")?;

    // One batch per segment: the second append into a segment would exceed segment.bytes.
    let seglog_dir = root.join("seglog");
    let seglog_config = seglog::LogConfig {
        segment_bytes: i32::try_from(data.batch_ranges.first().map_or(0, |range| range.len()))?,
        ..seglog::LogConfig::default()
    };
    {
        let log = seglog_contender::open(&seglog_dir, seglog_config.clone())?;
        seglog_contender::append_all(&log, &data)?;
        seglog_contender::close(&log)?;
        if log.segment_count() != segments {
            return Err(format!(
                "seglog wrote {} segments, expected {segments}",
                log.segment_count()
            )
            .into());
        }
    }

    let commitlog_dir = root.join("commitlog");
    let mut sets = data.commitlog_message_sets()?;
    // One message set per segment: the 2-byte segment magic plus one set.
    let commitlog_segment_bytes = 2 + sets.first().map_or(0, commitlog_contender::set_bytes);
    {
        let mut log = commitlog_contender::open(&commitlog_dir, commitlog_segment_bytes)?;
        commitlog_contender::append_all(&mut log, &mut sets)?;
        log.flush()
            .map_err(|e| crate::io_error("flush", &commitlog_dir, e))?;
    }
    let written = fsx::file_sizes(&commitlog_dir, ".log")?.count;
    if written != segments as u64 {
        return Err(format!("commitlog wrote {written} segments, expected {segments}").into());
    }

    let about = format!(
        "open a cleanly closed log of {segments} segments (one batch of {} x {} B each); the \
         ceiling lists seglog's directory and opens every file in it",
        spec.batch_records, spec.record_bytes
    );
    let contenders = vec![
        Contender::new(
            Role::Ceiling,
            "ceiling (std::fs open)",
            context.cold(ceiling::OpenDirectory::new(
                seglog_dir.clone(),
                spec.records,
                spec.payload_bytes(),
            )),
        ),
        Contender::new(
            Role::Seglog,
            "seglog",
            context.cold(seglog_contender::Open::new(
                seglog_dir,
                None,
                seglog_config,
                spec.records,
                spec.payload_bytes(),
            )?),
        ),
        Contender::new(
            Role::Commitlog,
            "commitlog 0.2",
            context.cold(commitlog_contender::Open::new(
                commitlog_dir,
                None,
                commitlog_segment_bytes,
                spec.records,
                spec.payload_bytes(),
            )),
        ),
    ];
    Ok(vec![measure(
        names::OPEN_SEGMENTS,
        &about,
        context.plan.rounds,
        contenders,
    )?])
}
