//! Produce: append batches to a log, some durable, one compressed, and report the offsets.
//!
//! `cargo run -p seglog --example produce [DIR]` (default: a temporary directory).

use seglog::{BatchBuilder, Clock, Compression, Log, LogConfig, SystemClock};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    let dir = std::env::args_os()
        .nth(1)
        .map_or_else(|| tmp.path().join("orders-0"), Into::into);
    let log = Log::open(&dir, LogConfig::default())?;
    for i in 0..10u32 {
        let compression = if i == 9 {
            Compression::Lz4
        } else {
            Compression::None
        };
        let mut batch = BatchBuilder::new(0).compression(compression);
        for j in 0..100u32 {
            let key = format!("customer-{}", j % 7);
            let value = format!("order {i}-{j}");
            batch.append(
                SystemClock.now_ms(),
                Some(key.as_bytes()),
                Some(value.as_bytes()),
                &[],
            );
        }
        // `?` turns a records-layer error into `seglog::Error`.
        let bytes = batch.build()?;
        // Every other batch waits for its fsync (a group commit shares it between threads).
        let info = if i % 2 == 0 {
            log.append_durable(&bytes)?
        } else {
            log.append(&bytes)?
        };
        println!(
            "batch {i}: offsets {}..={}",
            info.first_offset, info.last_offset
        );
    }
    println!(
        "log end offset {}, durable end offset {}",
        log.log_end_offset(),
        log.durable_end_offset()
    );
    log.close()?;
    Ok(())
}
