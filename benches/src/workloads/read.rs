//! Reads of a log written once (untimed): a full scan in offset order with every batch's CRC
//! checked, uniform random point reads by offset, and reads by timestamp.

use rand::{Rng, SeedableRng};

use crate::Result;
use crate::ceiling;
use crate::commitlog_contender;
use crate::data::Dataset;
use crate::harness::{Contender, Role, WorkloadResult, measure};
use crate::kafka_contender;
use crate::seglog_contender;
use crate::workloads::{Context, labels, names};

/// The scan, point-read and timestamp-read workloads selected in `context`.
///
/// # Errors
///
/// The first failing set-up or trial.
pub fn run(context: &mut Context) -> Result<Vec<WorkloadResult>> {
    let mut results = Vec::new();
    let small = Dataset::generate(context.plan.small)?;
    let small_logs = Logs::build(context, &small, "read-100")?;
    if context.wants("scan") {
        results.push(scan(context, names::SCAN_SMALL, &small, &small_logs)?);
    }
    if context.wants("point") {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let targets: Vec<u64> = (0..context.plan.point_reads)
            .map(|_| rng.random_range(0..small.spec.records))
            .collect();
        let about = format!(
            "{} reads of one record at a uniform random offset of {} (the batch that holds it \
             is read; seglog then finds the record in it)",
            targets.len(),
            small.spec.records
        );
        let mut contenders = vec![
            Contender::new(
                Role::Ceiling,
                "ceiling (pread)",
                context.cold(ceiling::PointRead::new(
                    &small,
                    small_logs.ceiling.clone(),
                    &targets,
                )?),
            ),
            Contender::new(
                Role::Reference,
                labels::POINT_READ_BOUND,
                context.cold(
                    ceiling::PointRead::new(&small, small_logs.ceiling.clone(), &targets)?
                        .decoded(),
                ),
            ),
            Contender::new(
                Role::Seglog,
                "seglog",
                context.cold(seglog_contender::PointRead::new(
                    &small,
                    &small_logs.seglog,
                    &targets,
                )),
            ),
            Contender::new(
                Role::Commitlog,
                "commitlog 0.2",
                context.cold(commitlog_contender::PointRead::new(
                    &small,
                    &small_logs.commitlog,
                    &targets,
                )?),
            ),
        ];
        if let Some(kafka) = &small_logs.kafka {
            contenders.push(Contender::new(
                Role::Kafka,
                kafka_contender::LABEL,
                context.cold(kafka.point_read(&targets)?),
            ));
        }
        results.push(measure(
            names::POINT_READ,
            &about,
            context.plan.rounds,
            contenders,
        )?);
    }
    if context.wants("timestamp") {
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let first = small.first_timestamp_ms;
        let last = small.timestamp_ms(small.spec.records - 1);
        let targets: Vec<i64> = (0..context.plan.point_reads)
            .map(|_| rng.random_range(first..=last))
            .collect();
        let about = format!(
            "{} reads of the first record with timestamp >= a uniform random time (commitlog \
             has no timestamps)",
            targets.len()
        );
        let mut contenders = vec![
            Contender::new(
                Role::Ceiling,
                "ceiling (partition_point + pread)",
                context.cold(ceiling::TimestampRead::new(
                    &small,
                    small_logs.ceiling.clone(),
                    &targets,
                )?),
            ),
            Contender::new(
                Role::Reference,
                labels::TIMESTAMP_READ_BOUND,
                context.cold(
                    ceiling::TimestampRead::new(&small, small_logs.ceiling.clone(), &targets)?
                        .decoded(),
                ),
            ),
            Contender::new(
                Role::Seglog,
                "seglog (read_by_timestamp_into)",
                context.cold(seglog_contender::TimestampRead::new(
                    &small,
                    &small_logs.seglog,
                    &targets,
                    true,
                )),
            ),
            Contender::new(
                Role::Reference,
                "reference: offset_for_timestamp + read_into",
                context.cold(seglog_contender::TimestampRead::new(
                    &small,
                    &small_logs.seglog,
                    &targets,
                    false,
                )),
            ),
        ];
        if let Some(kafka) = &small_logs.kafka {
            contenders.push(Contender::new(
                Role::Kafka,
                kafka_contender::LABEL,
                context.cold(kafka.timestamp_read(&targets)?),
            ));
        }
        results.push(measure(
            names::TIMESTAMP_READ,
            &about,
            context.plan.rounds,
            contenders,
        )?);
    }
    small_logs.close()?;
    drop(small);
    if context.wants("scan") {
        let large = Dataset::generate(context.plan.large)?;
        let large_logs = Logs::build(context, &large, "read-1024")?;
        results.push(scan(context, names::SCAN_LARGE, &large, &large_logs)?);
        large_logs.close()?;
    }
    Ok(results)
}

fn scan(context: &Context, name: &str, data: &Dataset, logs: &Logs) -> Result<WorkloadResult> {
    let spec = data.spec;
    let about = format!(
        "read all {} records of {} B in offset order, 1 MiB per read; seglog and commitlog \
         check every CRC and hand out every record, the ceiling only reads seglog's own .log \
         file",
        spec.records, spec.record_bytes
    );
    let mut contenders = vec![
        Contender::new(
            Role::Ceiling,
            "ceiling (std::fs)",
            context.cold(ceiling::SequentialRead::new(
                logs.ceiling.clone(),
                spec.records,
                spec.payload_bytes(),
            )),
        ),
        Contender::new(
            Role::Reference,
            "reference: read of one-write file",
            context.cold(ceiling::SequentialRead::new(
                logs.ceiling_one_write.clone(),
                spec.records,
                spec.payload_bytes(),
            )),
        ),
        Contender::new(
            Role::Reference,
            labels::SCAN_CRC_BOUND,
            context.cold(ceiling::ValidatedRead::new(
                logs.ceiling.clone(),
                spec.records,
                spec.payload_bytes(),
                ceiling::Validate::Crc,
            )),
        ),
        Contender::new(
            Role::Reference,
            labels::SCAN_DECODE_BOUND,
            context.cold(ceiling::ValidatedRead::new(
                logs.ceiling.clone(),
                spec.records,
                spec.payload_bytes(),
                ceiling::Validate::Records,
            )),
        ),
        Contender::new(
            Role::Seglog,
            "seglog",
            context.cold(seglog_contender::Scan::new(
                data,
                &logs.seglog,
                seglog_contender::Decode::Records,
            )),
        ),
        Contender::new(
            Role::Reference,
            "reference: seglog, no record decode",
            context.cold(seglog_contender::Scan::new(
                data,
                &logs.seglog,
                seglog_contender::Decode::BatchesOnly,
            )),
        ),
        Contender::new(
            Role::Commitlog,
            "commitlog 0.2",
            context.cold(commitlog_contender::Scan::new(data, &logs.commitlog)?),
        ),
    ];
    if let Some(kafka) = &logs.kafka {
        contenders.push(Contender::new(
            Role::Kafka,
            kafka_contender::LABEL,
            context.cold(kafka.scan()?),
        ));
    }
    measure(name, &about, context.plan.rounds, contenders)
}

/// The same data written once by each contender. The seglog log stays open (one `Log` per
/// directory: it holds the directory lock) and is closed at the end.
struct Logs {
    /// seglog's own `.log` file: the same batches (only the base offsets differ from the
    /// image) in the page-cache state one write per batch leaves, read with plain `std::fs`.
    ceiling: std::path::PathBuf,
    /// The same bytes written with one `write` (large page-cache folios).
    ceiling_one_write: std::path::PathBuf,
    commitlog: std::path::PathBuf,
    seglog: seglog::Log,
    /// The same batches appended by Kafka 4.4 (when its rows run).
    kafka: Option<kafka_contender::KafkaLog>,
}

impl Logs {
    fn build(context: &Context, data: &Dataset, name: &str) -> Result<Self> {
        let root = context.scratch.dir(name)?;
        let ceiling_one_write = root.join("ceiling-one-write.log");
        ceiling::write_image(data, &ceiling_one_write)?;
        let commitlog = root.join("commitlog");
        {
            let mut log = commitlog_contender::open(&commitlog, 1 << 30)?;
            let mut sets = data.commitlog_message_sets()?;
            commitlog_contender::append_all(&mut log, &mut sets)?;
            log.flush()
                .map_err(|e| crate::io_error("flush", &commitlog, e))?;
        }
        let seglog = seglog_contender::open(&root.join("seglog"), seglog::LogConfig::default())?;
        seglog_contender::append_all(&seglog, data)?;
        let ceiling = seglog_contender::only_segment_file(&seglog)?;
        let kafka = context.kafka.log(data, &root)?;
        Ok(Self {
            ceiling,
            ceiling_one_write,
            commitlog,
            seglog,
            kafka,
        })
    }

    fn close(self) -> Result<()> {
        seglog_contender::close(&self.seglog)
    }
}
