//! Shared helpers: batch builders, a full-log reader, configs and clocks.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use seglog::{BatchBuilder, Batches, Isolation, Log, LogConfig, LogOpenOptions, ManualClock};
use seglog_faults::FaultInjector;

/// Clock start for tests: 2023-11-14, so CreateTime timestamps around it are "now".
pub const T0: i64 = 1_700_000_000_000;

/// One uncompressed v2 batch with a record per value, timestamps `ts, ts+1, ...`.
pub fn batch(ts: i64, values: &[&[u8]]) -> Vec<u8> {
    let mut builder = BatchBuilder::new(0);
    for (i, value) in values.iter().enumerate() {
        builder.append(ts + i as i64, None, Some(value), &[]);
    }
    builder.build().unwrap().to_vec()
}

/// A batch of `count` records whose values are `prefix-<i>`.
pub fn numbered(ts: i64, prefix: &str, count: usize) -> Vec<u8> {
    let values: Vec<Vec<u8>> = (0..count)
        .map(|i| format!("{prefix}-{i}").into_bytes())
        .collect();
    let refs: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
    batch(ts, &refs)
}

/// Small segments, no retention, a permissive timestamp window.
pub fn small_config(segment_bytes: i32) -> LogConfig {
    LogConfig {
        segment_bytes,
        index_interval_bytes: 128,
        segment_index_bytes: 4096,
        retention_ms: -1,
        message_timestamp_after_max_ms: i64::MAX,
        ..LogConfig::default()
    }
}

pub fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(T0))
}

pub fn open(dir: &Path, config: LogConfig, clock: &Arc<ManualClock>) -> Log {
    Log::open_with(
        dir,
        config,
        LogOpenOptions {
            clock: clock.clone(),
            ..LogOpenOptions::default()
        },
    )
    .unwrap()
}

/// [`open`] with every I/O of the log going through `faults`.
pub fn open_with_faults(
    dir: &Path,
    config: LogConfig,
    clock: &Arc<ManualClock>,
    faults: &FaultInjector,
) -> Log {
    Log::open_with(
        dir,
        config,
        LogOpenOptions {
            clock: clock.clone(),
            io: faults.io(),
            ..LogOpenOptions::default()
        },
    )
    .unwrap()
}

/// Every record readable from `from` up to `isolation`'s bound: (offset, timestamp, value).
pub fn read_all(log: &Log, from: i64, isolation: Isolation) -> Vec<(i64, i64, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    let mut next = from;
    loop {
        let data = match log.read(next, 64 * 1024, isolation, true) {
            Ok(data) => data,
            Err(seglog::Error::OffsetOutOfRange { .. }) if next == from => return out,
            Err(e) => panic!("read at {next}: {e}"),
        };
        if data.slice.is_empty() {
            return out;
        }
        let bytes = data.slice.read_to_vec().unwrap();
        let mut progressed = false;
        for batch in Batches::new(&bytes, data.slice.position()) {
            let batch = batch.unwrap();
            batch.ensure_valid().unwrap();
            for record in batch.records(1 << 24) {
                let record = record.unwrap();
                if record.offset >= next {
                    out.push((
                        record.offset,
                        record.timestamp_ms.unwrap_or(-1),
                        record.value.map(|v| v.to_vec()),
                    ));
                }
            }
            next = next.max(batch.header().last_offset + 1);
            progressed = true;
        }
        assert!(progressed, "a read at {next} returned no whole batch");
    }
}

/// Values of [`read_all`] up to the LEO.
pub fn values(log: &Log) -> Vec<(i64, Vec<u8>)> {
    read_all(log, log.log_start_offset(), Isolation::LogEnd)
        .into_iter()
        .map(|(o, _, v)| (o, v.unwrap_or_default()))
        .collect()
}

/// A fresh log in a new temporary directory, on a [`clock`] at [`T0`].
pub fn fresh(config: LogConfig) -> (tempfile::TempDir, Arc<ManualClock>, Log) {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let log = open(dir.path(), config, &clock);
    (dir, clock, log)
}

/// Appends `batches` batches of [`numbered`] records (`count` each, values `prefix-<j>`),
/// batch `i` timestamped `T0 + i`.
pub fn append_numbered(log: &Log, batches: i64, prefix: &str, count: usize) {
    for i in 0..batches {
        log.append(&numbered(T0 + i, prefix, count)).unwrap();
    }
}

/// A fresh log in a new temporary directory, opened with a fault injector for that directory
/// as its I/O seam, on a [`clock`] at [`T0`].
pub fn fresh_with_faults(config: LogConfig) -> (tempfile::TempDir, FaultInjector, Log) {
    let dir = tempfile::tempdir().unwrap();
    let faults = FaultInjector::new(dir.path());
    let log = open_with_faults(dir.path(), config, &clock(), &faults);
    (dir, faults, log)
}

/// `shared/kafka-corpus` (see `seglog-test-corpus`): `None` when it is absent outside CI.
pub fn corpus_root() -> Option<PathBuf> {
    seglog_test_corpus::root()
}

/// Every partition directory (a directory holding a `.log`); empty when the corpus is absent
/// outside CI.
pub fn partition_dirs() -> Vec<PathBuf> {
    let out = seglog_test_corpus::partitions();
    if corpus_root().is_some() {
        assert!(
            out.len() >= 30,
            "expected the 32 corpus partitions, found {}",
            out.len()
        );
    }
    out
}
