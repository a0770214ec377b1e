//! Transactions (version 2: every commit or abort bumps the producer epoch, as Kafka 4.4's
//! transactions v2): commit across two partitions (atomically: its decision is logged before
//! the first marker), abort another, then crash with a transaction open and let a producer
//! with a higher epoch abort it, as Kafka's coordinator does at `InitProducerId` (a commit
//! cut by a crash would be completed instead). `read_committed` readers see only committed
//! records.
//!
//! `cargo run -p seglog --example transactions [ROOT]` (default: a temporary directory).

use std::path::Path;

use seglog::{
    BatchBuilder, Clock, Durability, HighWatermarkPolicy, Isolation, LogConfig, LogDir,
    LogOpenOptions, SystemClock, TopicPartition, TransactionVersion, TransactionalProducer,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    let root = std::env::args_os()
        .nth(1)
        .map_or_else(|| tmp.path().to_path_buf(), Into::into);
    run(&root)
}

fn open(root: &Path) -> seglog::Result<LogDir> {
    let options = LogOpenOptions {
        high_watermark: HighWatermarkPolicy::LogEnd,
        ..LogOpenOptions::default()
    };
    LogDir::open_with(root, LogConfig::default(), options)
}

fn record(value: &str) -> BatchBuilder {
    let mut records = BatchBuilder::new(0);
    records.append(SystemClock.now_ms(), None, Some(value.as_bytes()), &[]);
    records
}

fn committed(
    log_dir: &LogDir,
    tp: &TopicPartition,
) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let log = log_dir.log(tp).ok_or("partition lost")?;
    let mut values = Vec::new();
    for fetched in log.owned_reader(0, Isolation::ReadCommitted) {
        let value = fetched?.record.value.unwrap_or_default();
        values.push(String::from_utf8(value.to_vec())?);
    }
    Ok(values)
}

/// Runs the transactions in `root`.
pub fn run(root: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let orders = TopicPartition::new("orders", 0);
    let payments = TopicPartition::new("payments", 0);
    let log_dir = open(root)?;
    let mut producer = TransactionalProducer::init_with(&log_dir, 7, 0, TransactionVersion::V2)?;

    let mut txn = producer.begin()?;
    txn.send(&orders, record("order 1 placed"))?;
    txn.send(&payments, record("order 1 paid"))?;
    txn.commit(Durability::Fsync)?; // one COMMIT marker per partition, fsynced
    println!(
        "committed; the next transaction runs at epoch {}",
        producer.epoch()
    );

    let mut txn = producer.begin()?;
    txn.send(&orders, record("order 2 placed"))?;
    txn.abort(Durability::Fsync)?;

    let mut txn = producer.begin()?;
    txn.send(&orders, record("order 3 placed"))?;
    txn.send(&payments, record("order 3 paid"))?;
    // The process dies here: the transaction is neither ended nor dropped (no abort).
    std::mem::forget(txn);
    drop(producer);
    drop(log_dir);

    let log_dir = open(root)?;
    let open_txns = log_dir
        .log(&orders)
        .ok_or("partition lost")?
        .ongoing_transactions();
    println!("after the crash, open transactions in {orders}: {open_txns:?}");
    // The open transaction ran at epoch 2 (two ends bumped it): a higher epoch fences it and
    // aborts it in every partition.
    let producer = TransactionalProducer::init_with(&log_dir, 7, 3, TransactionVersion::V2)?;
    println!("producer 7 at epoch {}", producer.epoch());
    for tp in [&orders, &payments] {
        let values = committed(&log_dir, tp)?;
        println!("{tp} read_committed: {values:?}");
        if values.len() != 1 {
            return Err(format!("{tp}: expected only the committed record").into());
        }
    }
    log_dir.close()?;
    Ok(())
}
