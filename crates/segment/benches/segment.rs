//! Segment benchmarks, each beside its raw-I/O baseline in the same run:
//! * `append/*`: batches of 100 records (100 B and 1 KiB values) through
//!   `ActiveSegment::append`, against `write_all` of the same bytes to a plain file
//!   (target: >= 0.85x of raw). Steady state: each fresh segment (and raw file) first takes
//!   `WARMUP_BATCHES` untimed appends, which touch the mapped index pages for the first time;
//!   that first write fault costs milliseconds on ext4 (the kernel updates the file's mtime
//!   through the journal), once per index file per segment. `append/first_touch` measures it;
//! * `read/*`: random `read` + `pread` of 64 KiB fetches, and offset translation alone;
//! * `durable/*`: append + `Segment::flush` vs append + `Segment::sync_log_data` vs
//!   `write_all` + `fdatasync` (paired ratios printed);
//! * `open/*`: cleanly closed segments opened with the strict policy and with
//!   `trust_clean_shutdown` (bytes read by system calls printed);
//! * `recover/*`: `Segment::recover` (CRC of every batch, index rebuild) against reading the
//!   same bytes with `pread` in 1 MiB chunks (target: >= 0.5x of raw).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use seglog_records::BatchBuilder;
use seglog_segment::{ActiveSegment, Segment, SegmentConfig, SegmentOpenOptions};

const RECORDS_PER_BATCH: usize = 100;
const APPEND_BYTES: usize = 16 << 20;
/// Untimed appends per fresh segment (the second one adds the first index entries).
const WARMUP_BATCHES: usize = 3;

/// Batches of 100 records with `value_len`-byte values, `total` bytes in all, offsets from 0.
fn batches(value_len: usize, total: usize) -> Vec<(i64, i64, Vec<u8>)> {
    let value = vec![0x5a; value_len];
    let mut out = Vec::new();
    let mut size = 0;
    let mut offset = 0i64;
    while size < total {
        let mut builder = BatchBuilder::new(offset);
        for i in 0..RECORDS_PER_BATCH {
            builder.append(
                1_700_000_000_000 + offset + i as i64,
                Some(b"key"),
                Some(&value),
                &[],
            );
        }
        let bytes = builder.build().unwrap().to_vec();
        offset += RECORDS_PER_BATCH as i64;
        size += bytes.len();
        out.push((offset - 1, 1_700_000_000_000 + offset - 1, bytes));
    }
    out
}

/// Runs `ours` and `raw` alternately `rounds` times and prints the median of the per-round
/// throughput ratios (`raw time / our time`): a paired comparison that a noisy shared machine
/// (bursts of writeback, other builds) skews far less than two separate criterion groups.
fn paired_ratio(
    label: &str,
    rounds: usize,
    mut ours: impl FnMut() -> Duration,
    mut raw: impl FnMut() -> Duration,
) {
    let mut ratios: Vec<f64> = (0..rounds)
        .map(|_| {
            let a = ours();
            let b = raw();
            b.as_secs_f64() / a.as_secs_f64()
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    eprintln!(
        "paired {label}: median throughput ratio ours/raw = {:.2} (min {:.2}, max {:.2}, {rounds} rounds)",
        ratios[rounds / 2],
        ratios[0],
        ratios[rounds - 1]
    );
}

fn config() -> SegmentConfig {
    SegmentConfig {
        segment_bytes: 1 << 30,
        ..SegmentConfig::default()
    }
}

fn append(c: &mut Criterion) {
    let mut group = c.benchmark_group("append");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3));
    for (label, value_len) in [("100B", 100), ("1KiB", 1024)] {
        let input = batches(value_len, APPEND_BYTES);
        let (warmup, timed) = input.split_at(WARMUP_BATCHES);
        let total: usize = timed.iter().map(|b| b.2.len()).sum();
        let run_segment = || {
            let dir = tempfile::tempdir().unwrap();
            let mut active = ActiveSegment::create(dir.path(), 0, &config()).unwrap();
            for (last, ts, bytes) in warmup {
                active.append(*last, *ts, *last, bytes).unwrap();
            }
            let start = Instant::now();
            for (last, ts, bytes) in timed {
                active.append(*last, *ts, *last, bytes).unwrap();
            }
            start.elapsed()
        };
        let run_raw = || {
            let dir = tempfile::tempdir().unwrap();
            let mut file = File::create(dir.path().join("raw.log")).unwrap();
            for (_, _, bytes) in warmup {
                file.write_all(bytes).unwrap();
            }
            let start = Instant::now();
            for (_, _, bytes) in timed {
                file.write_all(bytes).unwrap();
            }
            start.elapsed()
        };
        paired_ratio(&format!("append {label}"), 21, run_segment, run_raw);
        group.throughput(Throughput::Bytes(total as u64));
        group.bench_function(BenchmarkId::new("segment", label), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| run_segment()).sum());
        });
        group.bench_function(BenchmarkId::new("raw_write_all", label), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| run_raw()).sum());
        });
    }
    // The fixed per-segment cost the steady state leaves out: the warm-up appends of a
    // fresh segment (first writes to both mapped indexes).
    let input = batches(1024, 1 << 20);
    group.throughput(Throughput::Elements(1));
    group.bench_function("first_touch_of_a_new_segment", |b| {
        b.iter_custom(|iters| {
            let mut elapsed = Duration::ZERO;
            for _ in 0..iters {
                let dir = tempfile::tempdir().unwrap();
                let mut active = ActiveSegment::create(dir.path(), 0, &config()).unwrap();
                let start = Instant::now();
                for (last, ts, bytes) in &input[..WARMUP_BATCHES] {
                    active.append(*last, *ts, *last, bytes).unwrap();
                }
                elapsed += start.elapsed();
            }
            elapsed
        });
    });
    group.finish();
}

/// A sealed segment of `total` bytes of 1 KiB-record batches in `dir`.
fn sealed_segment(dir: &Path, total: usize) -> u64 {
    let mut active = ActiveSegment::create(dir, 0, &config()).unwrap();
    for (last, ts, bytes) in batches(1024, total) {
        active.append(last, ts, last, &bytes).unwrap();
    }
    let next = active.segment().read_next_offset().unwrap();
    active.close().unwrap();
    next as u64
}

fn read(c: &mut Criterion) {
    let mut group = c.benchmark_group("read");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(3));
    let dir = tempfile::tempdir().unwrap();
    let next = sealed_segment(dir.path(), 32 << 20);
    let (segment, _) =
        Segment::open(dir.path(), 0, &config(), SegmentOpenOptions::default()).unwrap();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut random_offset = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % next) as i64
    };
    let mut buf = Vec::with_capacity(1 << 17);
    group.throughput(Throughput::Elements(1));
    group.bench_function("random_64KiB_pread", |b| {
        b.iter(|| {
            let slice = segment
                .read(random_offset(), 64 << 10, u64::MAX, true)
                .unwrap()
                .unwrap();
            buf.clear();
            slice.read_into(&mut buf).unwrap();
            buf.len()
        });
    });
    group.bench_function("random_translate", |b| {
        b.iter(|| segment.translate_offset(random_offset(), 0).unwrap())
    });
    group.finish();
}

fn recover(c: &mut Criterion) {
    let mut group = c.benchmark_group("recover");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3));
    let dir = tempfile::tempdir().unwrap();
    sealed_segment(dir.path(), 64 << 20);
    let (segment, _) =
        Segment::open(dir.path(), 0, &config(), SegmentOpenOptions::default()).unwrap();
    let size = segment.size();
    group.throughput(Throughput::Bytes(size));
    group.bench_function("segment", |b| {
        b.iter(|| {
            let report = segment.recover().unwrap();
            assert_eq!(report.truncated_bytes, 0);
            report.batches
        });
    });
    // After a crash: the writer appended 64 MiB and exited without sealing (indexes still
    // preallocated to max_index_bytes); the log recovers the segment, then resumes it as the
    // active one. Every round gets a freshly crashed segment (untimed).
    let input = batches(1024, 64 << 20);
    let crashed_recovery = || {
        let dir = tempfile::tempdir().unwrap();
        let mut active = ActiveSegment::create(dir.path(), 0, &config()).unwrap();
        for (last, ts, bytes) in &input {
            active.append(*last, *ts, *last, bytes).unwrap();
        }
        drop(active);
        // As the log loads it: the strict checks find the untrimmed index and recover.
        let start = Instant::now();
        let (segment, report) =
            Segment::open(dir.path(), 0, &config(), SegmentOpenOptions::default()).unwrap();
        assert_eq!(report.recovery.unwrap().truncated_bytes, 0);
        let active = ActiveSegment::resume(segment).unwrap();
        let elapsed = start.elapsed();
        drop(active);
        elapsed
    };
    group.bench_function("crashed_then_resume", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| crashed_recovery()).sum());
    });
    let file = File::open(segment.log_path()).unwrap();
    let mut chunk = vec![0u8; 1 << 20];
    let mut raw_read = move || {
        let mut position = 0u64;
        let mut sum = 0u64;
        while position < size {
            let n = file.read_at(&mut chunk, position).unwrap();
            sum += u64::from(chunk[n / 2]);
            position += n as u64;
        }
        sum
    };
    group.bench_function("raw_pread", |b| b.iter(&mut raw_read));
    paired_ratio("recover crashed + resume", 7, crashed_recovery, || {
        let start = Instant::now();
        std::hint::black_box(raw_read());
        start.elapsed()
    });
    paired_ratio(
        "recover",
        11,
        || {
            let start = Instant::now();
            segment.recover().unwrap();
            start.elapsed()
        },
        || {
            let start = Instant::now();
            std::hint::black_box(raw_read());
            start.elapsed()
        },
    );
    group.finish();
}

/// Durable appends: one batch then a sync, by `Segment::flush` (`.log` + both index maps)
/// and by `Segment::sync_log_data` (`.log` only, what a group commit needs), against
/// `write_all` + `fdatasync` of a plain file.
fn durable(c: &mut Criterion) {
    let mut group = c.benchmark_group("durable");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3));
    const BATCHES: usize = 50;
    let input = batches(100, BATCHES * 11_000);
    group.throughput(Throughput::Elements(BATCHES as u64));
    let run_segment = |log_only: bool| {
        let dir = tempfile::tempdir().unwrap();
        let mut active = ActiveSegment::create(dir.path(), 0, &config()).unwrap();
        let (warmup, timed) = input.split_at(WARMUP_BATCHES);
        for (last, ts, bytes) in warmup {
            active.append(*last, *ts, *last, bytes).unwrap();
        }
        active.flush().unwrap();
        let start = Instant::now();
        for (last, ts, bytes) in &timed[..BATCHES.min(timed.len())] {
            active.append(*last, *ts, *last, bytes).unwrap();
            if log_only {
                active.segment().sync_log_data().unwrap();
            } else {
                active.flush().unwrap();
            }
        }
        start.elapsed()
    };
    let run_raw = || {
        let dir = tempfile::tempdir().unwrap();
        let mut file = File::create(dir.path().join("raw.log")).unwrap();
        let (warmup, timed) = input.split_at(WARMUP_BATCHES);
        for (_, _, bytes) in warmup {
            file.write_all(bytes).unwrap();
        }
        file.sync_data().unwrap();
        let start = Instant::now();
        for (_, _, bytes) in &timed[..BATCHES.min(timed.len())] {
            file.write_all(bytes).unwrap();
            file.sync_data().unwrap();
        }
        start.elapsed()
    };
    paired_ratio(
        "durable sync_log_data vs flush",
        11,
        || run_segment(true),
        || run_segment(false),
    );
    paired_ratio(
        "durable sync_log_data vs raw",
        11,
        || run_segment(true),
        run_raw,
    );
    group.bench_function("flush", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| run_segment(false)).sum());
    });
    group.bench_function("sync_log_data", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| run_segment(true)).sum());
    });
    group.bench_function("raw_write_all_fdatasync", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| run_raw()).sum());
    });
    group.finish();
}

/// Bytes read by system calls so far (`rchar` of `/proc/self/io`; 0 where unavailable).
fn bytes_read() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|io| {
            io.lines()
                .find_map(|l| l.strip_prefix("rchar: ").map(|v| v.trim().parse().ok()))
        })
        .flatten()
        .unwrap_or(0)
}

/// Opening cleanly closed segments of one ~11 KB batch each: the strict policy (walks each
/// `.log` from its last index entry) against `trust_clean_shutdown` (reads no `.log` byte).
fn open(c: &mut Criterion) {
    const SEGMENTS: i64 = 200;
    let mut group = c.benchmark_group("open");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3));
    let dir = tempfile::tempdir().unwrap();
    let value = vec![0x5a; 100];
    for s in 0..SEGMENTS {
        let base = s * 1_000;
        let mut builder = BatchBuilder::new(base);
        for i in 0..RECORDS_PER_BATCH as i64 {
            builder.append(1_700_000_000_000 + i, None, Some(&value), &[]);
        }
        let bytes = builder.build().unwrap().to_vec();
        let last = base + RECORDS_PER_BATCH as i64 - 1;
        let mut active = ActiveSegment::create(dir.path(), base, &config()).unwrap();
        active
            .append(last, 1_700_000_000_099, last, &bytes)
            .unwrap();
        active.close().unwrap();
    }
    let open_all = |trust: bool| {
        let options = SegmentOpenOptions {
            trust_clean_shutdown: trust,
            ..SegmentOpenOptions::default()
        };
        let start = Instant::now();
        for s in 0..SEGMENTS {
            let (segment, report) =
                Segment::open(dir.path(), s * 1_000, &config(), options).unwrap();
            assert!(report.rebuilt.is_none());
            std::hint::black_box(segment);
        }
        start.elapsed()
    };
    for trust in [false, true] {
        let before = bytes_read();
        open_all(trust);
        eprintln!(
            "open {SEGMENTS} segments (trust_clean_shutdown={trust}): {} KiB read by syscalls",
            (bytes_read() - before) / 1024
        );
    }
    paired_ratio(
        "open trusted vs strict",
        11,
        || open_all(true),
        || open_all(false),
    );
    group.throughput(Throughput::Elements(SEGMENTS as u64));
    group.bench_function("strict", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| open_all(false)).sum());
    });
    group.bench_function("trusted", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| open_all(true)).sum());
    });
    group.finish();
}

criterion_group!(benches, append, read, recover, durable, open);
criterion_main!(benches);
