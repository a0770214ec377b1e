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

/// Opens `dir` on `clock` with [`seglog::HighWatermarkPolicy::Manual`]: the tests move the high
/// watermark themselves (the default, `LogEnd`, has its own tests in `high_watermark.rs`).
pub fn open(dir: &Path, config: LogConfig, clock: &Arc<ManualClock>) -> Log {
    Log::open_with(
        dir,
        config,
        LogOpenOptions {
            clock: clock.clone(),
            high_watermark: seglog::HighWatermarkPolicy::Manual,
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
            high_watermark: seglog::HighWatermarkPolicy::Manual,
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

/// One `tracing` event captured by [`events_during`].
#[derive(Debug, Clone)]
pub struct CapturedEvent {
    pub level: tracing::Level,
    pub message: String,
    /// Every other field, `Debug`-printed.
    pub fields: Vec<(String, String)>,
}

impl CapturedEvent {
    /// The field `name`, `Debug`-printed.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Every `tracing` event the closure's thread emits. The subscriber is global, installed
/// once for the whole binary, and keeps only the events of a thread inside this call: a
/// thread-local default would race with other tests' threads registering callsites (which can
/// leave a callsite or the global level filter computed without it, and an event missed).
pub fn events_during(f: impl FnOnce()) -> Vec<CapturedEvent> {
    use std::cell::RefCell;
    use std::sync::Once;
    use tracing::field::{Field, Visit};
    use tracing::{Event, Metadata, span};

    thread_local! {
        static CAPTURED: RefCell<Option<Vec<CapturedEvent>>> = const { RefCell::new(None) };
    }
    struct Capture;
    struct Fields(CapturedEvent);
    impl Visit for Fields {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            if field.name() == "message" {
                self.0.message = format!("{value:?}");
            } else {
                self.0
                    .fields
                    .push((field.name().to_string(), format!("{value:?}")));
            }
        }
    }
    impl tracing::Subscriber for Capture {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
            span::Id::from_u64(1)
        }
        fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
        fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
        fn event(&self, event: &Event<'_>) {
            if !CAPTURED.with(|c| c.borrow().is_some()) {
                return;
            }
            let mut fields = Fields(CapturedEvent {
                level: *event.metadata().level(),
                message: String::new(),
                fields: Vec::new(),
            });
            event.record(&mut fields);
            CAPTURED.with(|c| {
                if let Some(events) = c.borrow_mut().as_mut() {
                    events.push(fields.0);
                }
            });
        }
        fn enter(&self, _: &span::Id) {}
        fn exit(&self, _: &span::Id) {}
    }

    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        tracing::subscriber::set_global_default(Capture).expect("no other global subscriber");
    });
    // Installed now: any rebuild that raced with the installation is corrected here, and every
    // later one includes the subscriber.
    tracing::callsite::rebuild_interest_cache();
    CAPTURED.with(|c| *c.borrow_mut() = Some(Vec::new()));
    f();
    CAPTURED.with(|c| c.borrow_mut().take().unwrap_or_default())
}

/// A `log.dirs` root for the transaction tests: 1 MiB segments, the test clock, the high
/// watermark at the log end, the given I/O backend.
pub fn open_txn_dir_with(root: &Path, io: seglog_segment::Io) -> seglog::LogDir {
    seglog::LogDir::open_with(
        root,
        small_config(1 << 20),
        LogOpenOptions {
            clock: clock(),
            high_watermark: seglog::HighWatermarkPolicy::LogEnd,
            io,
            ..LogOpenOptions::default()
        },
    )
    .unwrap()
}

/// [`open_txn_dir_with`] with the direct I/O backend.
pub fn open_txn_dir(root: &Path) -> seglog::LogDir {
    open_txn_dir_with(root, seglog_segment::Io::direct())
}

/// One batch of `values`, timestamps `T0, T0+1, ...`, no keys.
pub fn txn_records(values: &[&str]) -> BatchBuilder {
    let mut b = BatchBuilder::new(0);
    for (i, v) in values.iter().enumerate() {
        b.append(T0 + i as i64, None, Some(v.as_bytes()), &[]);
    }
    b
}
