//! Idempotent producer: send batches to three partitions of a `LogDir`, crash, reopen, and
//! retry them: the log answers every retry from its producer state, nothing is written twice.
//!
//! `cargo run -p seglog --example idempotent_producer [ROOT]` (default: a temporary directory).

use std::path::Path;

use seglog::{
    BatchBuilder, Clock, Durability, HighWatermarkPolicy, IdempotentProducer, Isolation, LogConfig,
    LogDir, LogOpenOptions, SystemClock, TopicPartition,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    let root = std::env::args_os()
        .nth(1)
        .map_or_else(|| tmp.path().to_path_buf(), Into::into);
    run(&root)
}

/// Opens the root as a single node: consumers see what was appended.
fn open(root: &Path) -> seglog::Result<LogDir> {
    let options = LogOpenOptions {
        high_watermark: HighWatermarkPolicy::LogEnd,
        ..LogOpenOptions::default()
    };
    LogDir::open_with(root, LogConfig::default(), options)
}

/// Produces, crashes, reopens and retries in `root`.
pub fn run(root: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let partitions: Vec<TopicPartition> =
        (0..3).map(|p| TopicPartition::new("orders", p)).collect();
    // One producer id per producing process; a restart uses a higher epoch.
    let mut producer = IdempotentProducer::new(1_000, 0)?;
    let mut sent = Vec::new();
    let log_dir = open(root)?;
    for (i, tp) in partitions.iter().enumerate() {
        let mut records = BatchBuilder::new(0);
        let value = format!("order {i}");
        records.append(
            SystemClock.now_ms(),
            Some(b"customer-1"),
            Some(value.as_bytes()),
            &[],
        );
        let batch = producer.prepare(tp, records)?;
        let info = producer.send_to(&log_dir, &batch, Durability::PageCache)?;
        println!(
            "{tp}: offset {} (sequence {})",
            info.first_offset,
            batch.base_sequence()
        );
        sent.push(batch);
    }
    drop(log_dir); // a crash: no close

    let log_dir = open(root)?;
    for batch in &sent {
        let log = log_dir
            .log(batch.topic_partition())
            .ok_or("partition lost")?;
        let retry = producer.retry(&log, batch, Durability::Fsync)?;
        if !retry.duplicate || log.log_end_offset() != 1 {
            return Err(format!("{}: retry was written twice", batch.topic_partition()).into());
        }
        let records = log
            .owned_reader(0, Isolation::ReadCommitted)
            .until_caught_up()
            .count();
        println!(
            "{}: retry deduplicated at offset {}, {records} record",
            batch.topic_partition(),
            retry.first_offset
        );
    }
    log_dir.close()?;
    Ok(())
}
