//! Consume with tail-follow: a producer thread appends while a consumer reads every record
//! at the high watermark, sleeping in `RecordReader::wait` (`Log::wait_for`, no polling) whenever it caught up.
//!
//! `cargo run -p seglog --example tail_follow`

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use seglog::{
    BatchBuilder, Clock, HighWatermarkPolicy, Isolation, Log, LogConfig, LogOpenOptions,
    SystemClock,
};

const RECORDS: i64 = 10_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    // Single node: the high watermark follows the log end, so consumers see every append.
    let options = LogOpenOptions {
        high_watermark: HighWatermarkPolicy::LogEnd,
        ..LogOpenOptions::default()
    };
    let log = Arc::new(Log::open_with(
        tmp.path().join("events-0"),
        LogConfig::default(),
        options,
    )?);

    let producer = {
        let log = Arc::clone(&log);
        std::thread::spawn(move || -> seglog::Result<()> {
            for chunk in 0..RECORDS / 100 {
                let mut batch = BatchBuilder::new(0);
                for i in 0..100 {
                    let value = (chunk * 100 + i).to_be_bytes();
                    batch.append(SystemClock.now_ms(), None, Some(&value), &[]);
                }
                log.append(&batch.build()?)?;
            }
            Ok(())
        })
    };

    let mut reader = log.reader(0, Isolation::ReadUncommitted);
    let (mut count, mut sum) = (0i64, 0i64);
    while count < RECORDS {
        // Sleeps until an append moves the visible end past where the last poll stopped.
        if !reader.wait(Duration::from_secs(10))? {
            return Err("no new records for 10 s".into());
        }
        // Records borrow the reader's buffer: no copy, no allocation per record.
        reader.poll(|_, record| {
            let value = record.value().and_then(|v| <[u8; 8]>::try_from(v).ok());
            sum += value.map_or(0, i64::from_be_bytes);
            count += 1;
            Ok::<_, seglog::Error>(ControlFlow::Continue(()))
        })?;
    }
    producer.join().map_err(|_| "producer panicked")??;
    println!(
        "consumed {count} records up to offset {}, sum {sum}",
        reader.position()
    );
    assert_eq!(sum, RECORDS * (RECORDS - 1) / 2);
    Ok(())
}
