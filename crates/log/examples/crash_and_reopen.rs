//! Crash and reopen: dropping a `Log` without `close` is a crash for recovery purposes.
//!
//! `close` seals the active segment, flushes everything, writes the checkpoints and, last, the
//! clean-shutdown marker. A `Log` dropped without it (a panic, an early return, `kill -9`)
//! leaves no marker, so the next open is an *unclean* one: it recovers every segment from the
//! checkpointed recovery point on (validating every batch, cutting a torn tail, rebuilding the
//! indexes) and `load_report()` says so. What a process crash loses: nothing that was appended
//! (the page cache belongs to the kernel); what an OS crash or power loss may lose: whatever
//! no fsync covered (`append` without a later flush), never an `append_durable` that returned.
//!
//! `cargo run -p seglog --example crash_and_reopen`

use seglog::{BatchBuilder, Bytes, Isolation, Log, LogConfig};

const T0: i64 = 1_700_000_000_000;

fn batch(first: i64, n: i64) -> Result<Bytes, seglog::Error> {
    let mut builder = BatchBuilder::new(0);
    for i in 0..n {
        let value = format!("record {}", first + i);
        builder.append(T0 + first + i, None, Some(value.as_bytes()), &[]);
    }
    Ok(builder.build()?)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path().join("journal-0");
    let config = LogConfig {
        segment_bytes: 2048,
        ..LogConfig::default()
    };

    {
        let log = Log::open(&dir, config.clone())?;
        log.append_durable(&batch(0, 50)?)?; // on disk when it returns
        log.flush()?; // the recovery point moves to 50 and is checkpointed
        log.append(&batch(50, 50)?)?; // in the page cache only
        println!(
            "before the crash: log end {}, durable end {}",
            log.log_end_offset(),
            log.durable_end_offset()
        );
        // No close: dropping the log here is a crash (the lock is released, nothing else).
    }

    let log = Log::open(&dir, config.clone())?;
    let load = log.load_report();
    let recovered: Vec<i64> = load
        .segments
        .iter()
        .filter(|s| s.recovery.is_some())
        .map(|s| s.base_offset)
        .collect();
    println!(
        "reopen: clean shutdown {}, checkpointed recovery point {}, recovered segments {:?}",
        load.had_clean_shutdown, load.recovery_point_checkpoint, recovered
    );
    assert!(!load.had_clean_shutdown);
    // A process crash keeps every append, durable or not.
    assert_eq!(log.log_end_offset(), 100);
    let offsets: Vec<i64> = log
        .owned_reader(0, Isolation::LogEnd)
        .until_caught_up()
        .map(|fetched| fetched.map(|f| f.record.offset))
        .collect::<Result<_, _>>()?;
    assert_eq!(offsets, (0..100).collect::<Vec<_>>());

    // A clean close writes the marker: the next open recovers nothing.
    log.close()?;
    drop(log);
    let log = Log::open(&dir, config)?;
    assert!(log.load_report().had_clean_shutdown);
    assert!(
        log.load_report()
            .segments
            .iter()
            .all(|s| s.recovery.is_none())
    );
    println!("after a clean close: reopened without recovery");
    log.close()?;
    Ok(())
}
