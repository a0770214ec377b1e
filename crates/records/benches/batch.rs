//! Throughput of the hot paths: shallow header iteration, header + CRC validation (compared
//! with a plain pass over the same bytes), record decoding (copied, shared and borrowed) and
//! batch building.
//!
//! `cargo bench -p seglog-records --bench batch`

// A benchmark input that fails to build is a bug in the benchmark: panicking is right.
#![allow(clippy::expect_used)]

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use seglog_records::{BatchBuilder, Batches, Compression, OwnedBatches};

const RECORDS_PER_BATCH: usize = 100;
const VALUE_SIZE: usize = 100;
const REGION_BYTES: usize = 8 << 20;

fn build_batch(base_offset: i64, compression: Compression, value: &[u8]) -> bytes::Bytes {
    let mut builder = BatchBuilder::new(base_offset).compression(compression);
    for i in 0..RECORDS_PER_BATCH {
        let key = (i as u32).to_be_bytes();
        builder.append(1_700_000_000_000 + i as i64, Some(&key), Some(value), &[]);
    }
    builder.build().expect("benchmark batch builds")
}

fn region() -> Vec<u8> {
    let value: Vec<u8> = (0..VALUE_SIZE).map(|i| (i * 31) as u8).collect();
    let mut out = Vec::with_capacity(REGION_BYTES + 16 * 1024);
    let mut offset = 0;
    while out.len() < REGION_BYTES {
        out.extend_from_slice(&build_batch(offset, Compression::None, &value));
        offset += RECORDS_PER_BATCH as i64;
    }
    out
}

/// A plain memory read of the bytes, the floor any validation is measured against.
fn sum_bytes(bytes: &[u8]) -> u64 {
    bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .fold(0u64, u64::wrapping_add)
}

fn validate(c: &mut Criterion) {
    let log = region();
    let mut group = c.benchmark_group("region");
    group.throughput(Throughput::Bytes(log.len() as u64));
    group.bench_function("sum_bytes", |b| b.iter(|| sum_bytes(black_box(&log))));
    group.bench_function("shallow_headers", |b| {
        b.iter(|| {
            Batches::new(black_box(&log), 0)
                .filter(|r| r.is_ok())
                .count()
        })
    });
    group.bench_function("headers_and_crc", |b| {
        b.iter(|| {
            Batches::new(black_box(&log), 0)
                .validated()
                .filter(|r| r.is_ok())
                .count()
        })
    });
    group.bench_function("decode_records", |b| {
        b.iter(|| {
            Batches::new(black_box(&log), 0)
                .flatten()
                .flat_map(|batch| batch.records(1 << 20))
                .filter(|r| r.is_ok())
                .count()
        })
    });
    // As a fetch consumer does: batches over one shared buffer, records sharing it.
    let shared = bytes::Bytes::from(log.clone());
    group.bench_function("decode_records_shared", |b| {
        b.iter(|| {
            OwnedBatches::new(black_box(shared.clone()), 0)
                .flatten()
                .flat_map(|batch| batch.records(1 << 20))
                .filter(|r| r.is_ok())
                .count()
        })
    });
    // The borrowed view: no copy, no reference count per record.
    group.bench_function("decode_records_borrowed", |b| {
        b.iter(|| {
            Batches::new(black_box(&log), 0)
                .flatten()
                .filter_map(|batch| batch.records_borrowed())
                .flatten()
                .filter(|r| r.is_ok())
                .count()
        })
    });
    group.finish();
}

fn build(c: &mut Criterion) {
    let value: Vec<u8> = (0..VALUE_SIZE).map(|i| (i * 31) as u8).collect();
    let uncompressed = build_batch(0, Compression::None, &value).len() as u64;
    let mut group = c.benchmark_group("build");
    group.throughput(Throughput::Bytes(uncompressed));
    for codec in Compression::ALL {
        group.bench_with_input(BenchmarkId::from_parameter(codec), &codec, |b, &codec| {
            b.iter(|| build_batch(black_box(0), codec, black_box(&value)))
        });
    }
    group.finish();
}

criterion_group!(benches, validate, build);
criterion_main!(benches);
