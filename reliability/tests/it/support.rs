//! Helpers shared by the suites: seeded randomness that reports its seed, and logs filled with
//! self-verifying records.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use seglog::{Compression, Log, LogConfig};
use seglog_faults::FaultInjector;
use seglog_reliability::{
    CrashImage, CrashOptions, IndexFate, RecordId, build_batch, check_acknowledged, env_u64,
    read_log,
};

/// A generator seeded from `SEGLOG_SEED` when set, else at random; the seed is printed so a
/// failure can be replayed with `SEGLOG_SEED=<seed>`.
pub fn seeded_rng(suite: &str) -> (StdRng, u64) {
    let seed = std::env::var("SEGLOG_SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| rand::rng().random());
    eprintln!("{suite}: seed {seed} (replay with SEGLOG_SEED={seed})");
    (StdRng::seed_from_u64(seed), seed)
}

/// Iterations from `var`, or `default`.
pub fn iterations(var: &str, default: u64) -> u64 {
    env_u64(var, default)
}

/// Appends `count` records of `stream` (from `seq`) in batches of 1-5, returning offset -> id.
pub fn fill(
    log: &Log,
    stream: u64,
    seq: &mut u64,
    count: u64,
    rng: &mut impl Rng,
) -> BTreeMap<i64, RecordId> {
    let mut out = BTreeMap::new();
    let end = *seq + count;
    while *seq < end {
        let n = rng.random_range(1..=5u64).min(end - *seq);
        let ids: Vec<RecordId> = (*seq..*seq + n)
            .map(|seq| RecordId { stream, seq })
            .collect();
        *seq += n;
        let compression = Compression::ALL[rng.random_range(0..Compression::ALL.len())];
        let info = log
            .append(&build_batch(&ids, compression).unwrap())
            .unwrap();
        for (i, id) in ids.into_iter().enumerate() {
            out.insert(info.first_offset + i as i64, id);
        }
    }
    out
}

/// Copies the regular files of `from` into `to` (created), but the lock file.
pub fn copy_dir(from: &Path, to: &Path) {
    seglog_reliability::fuzz_support::copy_files(from, to).unwrap();
}

/// Whether the corruption suite is strict about offset gaps. The loader keeps segments across
/// every gap, as Kafka's does (`power_loss::gap_after_a_rolled_segment_lost_its_unsynced_tail_is_kept_like_kafka`),
/// so `power_loss` and `io_faults` allow gaps after a power loss in unacknowledged territory
/// (they check every acknowledged record). The corruption suite tolerates gaps its damage can
/// create where the log cannot tell them from legitimate ones: a sealed `.log` cut exactly at a
/// batch boundary under a (stale) clean-shutdown marker.
/// `SEGLOG_STRICT_GAPS=1` turns that tolerance off.
pub fn gaps_are_fatal() -> bool {
    std::env::var("SEGLOG_STRICT_GAPS").is_ok_and(|v| v == "1")
}

/// `read_log`, or `read_log_with_gaps` while gaps are tolerated.
pub fn read(log: &Log) -> seglog_reliability::Result<seglog_reliability::LogContents> {
    if gaps_are_fatal() {
        seglog_reliability::read_log(log)
    } else {
        seglog_reliability::read_log_with_gaps(log)
    }
}

/// Creates `dir` (and its parents) and makes a fault injector for it (pass it to
/// [`open_faulty`]).
pub fn faulty_dir(dir: &Path) -> FaultInjector {
    std::fs::create_dir_all(dir).unwrap();
    FaultInjector::new(dir)
}

/// Open options that leave the high watermark to the test
/// ([`seglog::HighWatermarkPolicy::Manual`]; seglog's default follows the log end).
pub fn manual() -> seglog::LogOpenOptions {
    seglog::LogOpenOptions {
        high_watermark: seglog::HighWatermarkPolicy::Manual,
        ..seglog::LogOpenOptions::default()
    }
}

/// Opens the log in `dir` with `faults` as its I/O seam (everything it does below the
/// injector's directory is counted, can be failed, and shapes the durable images).
pub fn open_faulty(dir: &Path, config: LogConfig, faults: &FaultInjector) -> Log {
    Log::open_with(
        dir,
        config,
        seglog::LogOpenOptions {
            io: faults.io(),
            ..seglog::LogOpenOptions::default()
        },
    )
    .unwrap()
}

/// The ids of records `from..to` of stream 1.
pub fn stream1(from: u64, to: u64) -> Vec<RecordId> {
    (from..to).map(|seq| RecordId { stream: 1, seq }).collect()
}

/// Crash options that keep the directory as it is: no torn tails, no lost unsynced names,
/// index files as they are, no leftover checkpoint temp file.
pub fn as_is_options() -> CrashOptions {
    CrashOptions {
        torn_tails: false,
        lose_unsynced_entries: false,
        index_fate: IndexFate::AsIs,
        leftover_checkpoint_tmp: false,
        max_index_bytes: 4096,
    }
}

/// The crash image of `dir` (durable listing `durable_names`) under [`as_is_options`].
pub fn capture_as_is(
    dir: &Path,
    faults: &FaultInjector,
    durable_names: &BTreeSet<String>,
    rng: &mut impl Rng,
) -> CrashImage {
    CrashImage::capture(dir, faults, durable_names, &as_is_options(), rng).unwrap()
}

/// `log` (read with `read_log`) serves every record of `acked`; panics with `context`.
pub fn assert_serves(log: &Log, acked: &BTreeMap<i64, RecordId>, context: &str) {
    check_acknowledged(&read_log(log).unwrap(), acked).unwrap_or_else(|v| panic!("{context}: {v}"));
}

/// Reopens `dir`, checks that it serves every record of `acked` and closes it cleanly.
pub fn reopen_serves(
    dir: &Path,
    config: LogConfig,
    acked: &BTreeMap<i64, RecordId>,
    context: &str,
) {
    let log = Log::open(dir, config).unwrap();
    assert_serves(&log, acked, &format!("{context}, reopen"));
    log.close().unwrap();
}

/// Offsets `offsets` holding records of stream 1 numbered from `first_seq` on.
pub fn stream1_at(offsets: Range<i64>, first_seq: u64) -> BTreeMap<i64, RecordId> {
    let start = offsets.start;
    offsets
        .map(|o| {
            let seq = first_seq + (o - start) as u64;
            (o, RecordId { stream: 1, seq })
        })
        .collect()
}

/// The crashed directory `target` opens under `config`, reads back without a gap
/// (`read_log`) and serves every record of `acked`.
pub fn assert_recovers(target: &Path, config: LogConfig, acked: &BTreeMap<i64, RecordId>) {
    let recovered = Log::open(target, config).unwrap();
    let result = read_log(&recovered).and_then(|c| check_acknowledged(&c, acked));
    assert!(
        result.is_ok(),
        "{result:?}: segments {:?}",
        recovered.segments()
    );
}
