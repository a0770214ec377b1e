//! Look up by time: append records an hour apart, then find the first record at or after a
//! timestamp (Kafka's ListOffsets) and read from there with the owned reader.
//!
//! `cargo run -p seglog --example lookup_by_time`

use seglog::{BatchBuilder, Isolation, ListOffsets, Log, LogConfig};

const HOUR_MS: i64 = 3_600_000;
const T0: i64 = 1_700_000_000_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    // The default timestamp window accepts any CreateTime in the past.
    let log = Log::open(tmp.path().join("metrics-0"), LogConfig::default())?;
    for hour in 0..24 {
        let mut batch = BatchBuilder::new(0);
        batch.append(
            T0 + hour * HOUR_MS,
            None,
            Some(format!("hour {hour}").as_bytes()),
            &[],
        );
        log.append(&batch.build()?)?;
    }
    let target = T0 + 17 * HOUR_MS + 1;
    let Some(found) = log.offset_for_timestamp(ListOffsets::Timestamp(target))? else {
        return Err("no record at or after the target".into());
    };
    println!("first record at or after {target}: offset {}", found.offset);
    for fetched in log
        .owned_reader(found.offset, Isolation::LogEnd)
        .until_caught_up()
        .take(3)
    {
        let record = fetched?.record;
        let value = record.value.as_deref().unwrap_or_default();
        println!(
            "  {} {:?} {}",
            record.offset,
            record.timestamp_ms,
            String::from_utf8_lossy(value)
        );
    }
    assert_eq!(found.offset, 18);
    Ok(())
}
