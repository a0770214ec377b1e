//! Appends: page cache only (1M x 100 B and 200k x 1 KiB in batches of 100), and durable
//! (fsync per batch) with one writer and with eight.

use crate::Result;
use crate::ceiling;
use crate::commitlog_contender;
use crate::data::{DataSpec, Dataset};
use crate::harness::{Contender, Role, WorkloadResult, measure, measure_together};
use crate::seglog_contender;
use crate::workloads::{Context, labels, names, recycled};

/// `append 100B` and `append 1KiB`.
///
/// # Errors
///
/// The first failing trial.
pub fn run_page_cache(context: &mut Context) -> Result<Vec<WorkloadResult>> {
    let mut results = Vec::new();
    for (name, spec) in [
        (names::APPEND_SMALL, context.plan.small),
        (names::APPEND_LARGE, context.plan.large),
    ] {
        let data = Dataset::generate(spec)?;
        let about = format!(
            "{} records of {} B in batches of {}, no fsync; timed from the first append to the \
             last (open and close untimed)",
            spec.records, spec.record_bytes, spec.batch_records
        );
        let root = context
            .scratch
            .dir(&format!("append-{}", spec.record_bytes))?;
        let recycle_bytes = data.image.len() as u64;
        context.notes.push(format!(
            "{name}: before every run, {} MiB of page cache is written and deleted (untimed) so \
             no contender pays for the VM's free-page reporting",
            recycle_bytes >> 20
        ));
        let mut contenders = vec![
            Contender::new(
                Role::Ceiling,
                "ceiling (std::fs)",
                recycled(&root, recycle_bytes, ceiling::Append::new(&data, &root)),
            ),
            Contender::new(
                Role::Seglog,
                "seglog",
                recycled(
                    &root,
                    recycle_bytes,
                    seglog_contender::Append::new(&data, root.join("seglog")),
                ),
            ),
            Contender::new(
                Role::Reference,
                "reference: write per batch",
                recycled(
                    &root,
                    recycle_bytes,
                    ceiling::AppendPerBatch::new(&data, &root, false),
                ),
            ),
            Contender::new(
                Role::Reference,
                labels::APPEND_BOUND,
                recycled(
                    &root,
                    recycle_bytes,
                    ceiling::AppendPerBatch::new(&data, &root, true),
                ),
            ),
            Contender::new(
                Role::Commitlog,
                "commitlog 0.2",
                recycled(
                    &root,
                    recycle_bytes,
                    commitlog_contender::Append::new(&data, root.join("commitlog"))?,
                ),
            ),
        ];
        if let Some(kafka) = context.kafka.append(&data, &root)? {
            contenders.push(Contender::new(
                Role::Kafka,
                crate::kafka_contender::LABEL,
                recycled(&root, recycle_bytes, kafka),
            ));
        }
        results.push(measure(name, &about, context.plan.rounds, contenders)?);
    }
    Ok(results)
}

/// `bulk append 1MiB leader` and `bulk append 1MiB follower`: the 100 B dataset appended
/// about 1 MiB of batches per call, measured in the same rounds, each against the 1 MiB-write
/// ceiling.
///
/// # Errors
///
/// The first failing trial.
pub fn run_bulk(context: &mut Context) -> Result<Vec<WorkloadResult>> {
    let spec = context.plan.small;
    let data = Dataset::generate(spec)?;
    let replicated = data.replicated_image();
    let root = context.scratch.dir("bulk")?;
    let recycle_bytes = data.image.len() as u64;
    let group = ceiling::CHUNK_BYTES;
    let mut contenders = Vec::new();
    for workload in [0, 1] {
        contenders.push((
            workload,
            Contender::new(
                Role::Ceiling,
                "ceiling (std::fs)",
                recycled(&root, recycle_bytes, ceiling::Append::new(&data, &root)),
            ),
        ));
    }
    contenders.push((
        0,
        Contender::new(
            Role::Seglog,
            "seglog (append_vectored)",
            recycled(
                &root,
                recycle_bytes,
                seglog_contender::BulkAppend::leader(&data, group, root.join("leader")),
            ),
        ),
    ));
    contenders.push((
        1,
        Contender::new(
            Role::Seglog,
            "seglog (append_as_follower_vectored)",
            recycled(
                &root,
                recycle_bytes,
                seglog_contender::BulkAppend::follower(
                    &data,
                    &replicated,
                    group,
                    root.join("follower"),
                ),
            ),
        ),
    ));
    contenders.push((
        0,
        Contender::new(
            Role::Reference,
            labels::BULK_BOUND,
            recycled(
                &root,
                recycle_bytes,
                ceiling::AppendChunksCrc::new(&data, &root),
            ),
        ),
    ));
    let about = |who: &str| {
        format!(
            "{} records of {} B in batches of {}, at most 1 MiB of batches per call, as {who},              no fsync",
            spec.records, spec.record_bytes, spec.batch_records
        )
    };
    measure_together(
        &[
            (names::BULK_LEADER, &about("the leader")),
            (names::BULK_FOLLOWER, &about("a follower")),
        ],
        context.plan.rounds,
        contenders,
    )
}

/// `mixed: appender` and `mixed: 8 readers`: one appender appending 200,000 records of 100 B
/// while eight threads scan (CRC, full decode) the 200,000 records the log already holds; each
/// side's rate against its rate alone, in the same rounds.
///
/// # Errors
///
/// The first failing trial.
pub fn run_mixed(context: &mut Context) -> Result<Vec<WorkloadResult>> {
    let spec = DataSpec {
        records: 200_000,
        ..context.plan.small
    };
    let data = Dataset::generate(spec)?;
    let root = context.scratch.dir("mixed")?;
    let readers = crate::workloads::MIXED_READER_THREADS;
    let trial = |side, together, name: &str| {
        seglog_contender::Mixed::new(&data, &data, root.join(name), readers, side, together)
    };
    use seglog_contender::MixedSide::{Appender, Readers};
    let contenders = vec![
        (
            0,
            Contender::new(
                Role::Ceiling,
                "seglog appender alone",
                trial(Appender, false, "a"),
            ),
        ),
        (
            0,
            Contender::new(
                Role::Seglog,
                "seglog appender, 8 readers running",
                trial(Appender, true, "b"),
            ),
        ),
        (
            1,
            Contender::new(
                Role::Ceiling,
                "seglog 8 readers alone",
                trial(Readers, false, "c"),
            ),
        ),
        (
            1,
            Contender::new(
                Role::Seglog,
                "seglog 8 readers, appender running",
                trial(Readers, true, "d"),
            ),
        ),
    ];
    let about = format!(
        "{} records of {} B in batches of {}: one appender appends them while {readers} readers \
         scan (CRC + decode) the {} records written before the run; wall-clock from the common \
         start to the side's last thread",
        spec.records, spec.record_bytes, spec.batch_records, spec.records
    );
    measure_together(
        &[
            (names::MIXED_APPENDER, &about),
            (names::MIXED_READERS, &about),
        ],
        context.plan.rounds,
        contenders,
    )
}

/// `durable append 1 writer` and `durable append 8 writers`, measured in the same rounds so
/// their ratio is paired.
///
/// # Errors
///
/// The first failing trial.
pub fn run_durable(context: &mut Context) -> Result<Vec<WorkloadResult>> {
    let batches = context.plan.durable_batches;
    let spec = DataSpec {
        records: batches as u64 * context.plan.small.batch_records as u64,
        ..context.plan.small
    };
    let data = Dataset::generate(spec)?;
    let root = context.scratch.dir("durable")?;
    context.notes.push(
        "durable append: commitlog's flush() msyncs its index but never fsyncs segment data; \
         its trial adds an fdatasync of the segment file through a second handle"
            .to_owned(),
    );
    let mut contenders = Vec::new();
    for (workload, writers) in [(0, 1), (1, 8)] {
        contenders.push((
            workload,
            Contender::new(
                Role::Ceiling,
                "ceiling (std::fs)",
                ceiling::DurableAppend::new(&data, batches, writers, &root),
            ),
        ));
        contenders.push((
            workload,
            Contender::new(
                Role::Seglog,
                "seglog",
                seglog_contender::DurableAppend::new(
                    &data,
                    batches,
                    writers,
                    root.join(format!("seglog-{writers}")),
                ),
            ),
        ));
        contenders.push((
            workload,
            Contender::new(
                Role::Commitlog,
                "commitlog 0.2",
                commitlog_contender::DurableAppend::new(
                    &data,
                    batches,
                    writers,
                    root.join(format!("commitlog-{writers}")),
                )?,
            ),
        ));
    }
    let about = |writers: usize| {
        format!(
            "{batches} batches of {} x {} B, each durable (fdatasync) before the writer moves on; \
             {writers} writer thread(s)",
            spec.batch_records, spec.record_bytes
        )
    };
    measure_together(
        &[
            (names::DURABLE_ONE, &about(1)),
            (names::DURABLE_EIGHT, &about(8)),
        ],
        context.plan.rounds,
        contenders,
    )
}
