//! Floor lookups over 1K / 64K / 1M `.index` entries, beside `slice::partition_point` over a
//! `Vec` of the same (decoded) entries, measured in the same run.
//!
//! * `partition_point`: the yardstick (native `i32`s, no decoding, no locking).
//! * `floor_slot`: the crate's search primitive over the raw big-endian bytes.
//! * `OffsetIndex::lookup`: the whole public lookup (read section, atomic entry count, decode).
//!
//! For the bench suite's 1M-entry workload on a mapped file, and instruction counts under
//! callgrind, see `examples/floor_profile.rs`.
//!
//! Each is run with uniformly random targets and with targets in the warm section (the last
//! 8 KiB of entries), which Kafka's warm/cold split makes cheaper.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use seglog_index_core::{
    Column, IndexEntry, OffsetEntry, OffsetIndex, WARM_SECTION_BYTES, floor_slot,
};

const TARGETS: usize = 4096;

fn entries(n: usize) -> Vec<OffsetEntry> {
    (0..n)
        .map(|i| OffsetEntry {
            relative_offset: i32::try_from(i * 3).unwrap_or(i32::MAX),
            position: i32::try_from(i * 1000).unwrap_or(i32::MAX),
        })
        .collect()
}

/// Deterministic targets in `lo..hi` (xorshift; no RNG dependency).
fn targets(lo: i64, hi: i64) -> Vec<i64> {
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    (0..TARGETS)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            lo + (x % (hi - lo) as u64) as i64
        })
        .collect()
}

fn lookup(c: &mut Criterion) {
    for n in [1 << 10, 1 << 16, 1 << 20] {
        let decoded = entries(n);
        let bytes: Vec<u8> = decoded.iter().flat_map(OffsetEntry::encode).collect();
        let index = OffsetIndex::in_memory(
            "bench.index",
            0,
            u32::try_from(bytes.len()).unwrap_or(u32::MAX),
        );
        for e in &decoded {
            let _ = index.append(i64::from(e.relative_offset), e.position as u32);
        }
        let max_key = i64::try_from(n * 3).unwrap_or(i64::MAX);
        let warm = WARM_SECTION_BYTES / OffsetEntry::SIZE;
        let warm_start = i64::try_from(n.saturating_sub(warm) * 3).unwrap_or(0);

        let mut group = c.benchmark_group(format!("floor/{}K", n >> 10));
        // One iteration looks up all TARGETS targets; criterion reports the time per lookup
        // as throughput (elements/s) and the batch time.
        group.throughput(Throughput::Elements(TARGETS as u64));
        for (shape, targets) in [
            ("random", targets(0, max_key)),
            ("tail", targets(warm_start, max_key)),
        ] {
            group.bench_with_input(
                BenchmarkId::new("partition_point", shape),
                &targets,
                |b, t| {
                    b.iter(|| {
                        let mut sum = 0u64;
                        for &target in t {
                            let after =
                                decoded.partition_point(|e| i64::from(e.relative_offset) <= target);
                            sum += after
                                .checked_sub(1)
                                .map_or(0, |slot| decoded[slot].position as u64);
                        }
                        black_box(sum)
                    });
                },
            );
            group.bench_with_input(BenchmarkId::new("floor_slot", shape), &targets, |b, t| {
                b.iter(|| {
                    let mut sum = 0u64;
                    for &target in t {
                        let slot = floor_slot::<OffsetEntry>(&bytes, Column::Key, target);
                        sum += slot.map_or(0, |s| OffsetEntry::read(&bytes, s).position as u64);
                    }
                    black_box(sum)
                });
            });
            group.bench_with_input(
                BenchmarkId::new("OffsetIndex::lookup", shape),
                &targets,
                |b, t| {
                    b.iter(|| {
                        let mut sum = 0u64;
                        for &target in t {
                            sum += u64::from(index.lookup(target).position);
                        }
                        black_box(sum)
                    });
                },
            );
        }
        group.finish();
    }
}

criterion_group!(benches, lookup);
criterion_main!(benches);
