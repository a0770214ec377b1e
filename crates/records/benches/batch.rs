//! Throughput of the hot paths: shallow header iteration, header + CRC validation (compared
//! with a plain pass over the same bytes), the batch CRC-32C alone at three batch sizes,
//! record decoding (copied, shared and borrowed; over a region and within one batch) and
//! batch building.
//!
//! `cargo bench -p seglog-records --bench batch`

// A benchmark input that fails to build is a bug in the benchmark: panicking is right.
#![allow(clippy::expect_used)]

use std::hint::black_box;

#[path = "support/consumer.rs"]
mod consumer;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use seglog_records::{BatchBuilder, BatchRef, Batches, Compression, OwnedBatch, OwnedBatches};

const RECORDS_PER_BATCH: usize = 100;
const VALUE_SIZE: usize = 100;
const REGION_BYTES: usize = 8 << 20;

fn build_batch(base_offset: i64, compression: Compression, value: &[u8]) -> bytes::Bytes {
    build_batch_of(base_offset, compression, value, RECORDS_PER_BATCH)
}

fn build_batch_of(
    base_offset: i64,
    compression: Compression,
    value: &[u8],
    records: usize,
) -> bytes::Bytes {
    let mut builder = BatchBuilder::new(base_offset).compression(compression);
    for i in 0..records {
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
    // Borrowed records with every field read, as a consumer that looks at them would.
    group.bench_function("decode_records_borrowed_fields", |b| {
        b.iter(|| {
            Batches::new(black_box(&log), 0)
                .flatten()
                .filter_map(|batch| batch.records_borrowed())
                .flatten()
                .flatten()
                .map(record_checksum)
                .fold(0u64, u64::wrapping_add)
        })
    });
    group.finish();
}

/// Touches every field of a borrowed record.
fn record_checksum(record: seglog_records::RecordRef<'_>) -> u64 {
    (record.offset as u64)
        ^ (record.timestamp_ms as u64)
        ^ record.key.map_or(0, |k| k.len() as u64)
        ^ (record.value.map_or(0, |v| v.len() as u64) << 16)
        ^ ((record.header_count() as u64) << 32)
}

/// The batch CRC-32C alone (what `ensure_valid` adds to a header parse) on a 1-record,
/// a 10-record and a 100-record batch of 100-byte values.
fn crc(c: &mut Criterion) {
    let value: Vec<u8> = (0..VALUE_SIZE).map(|i| (i * 31) as u8).collect();
    let mut group = c.benchmark_group("crc32c");
    for records in [1, 10, RECORDS_PER_BATCH] {
        let batch = build_batch_of(0, Compression::None, &value, records);
        let batch = BatchRef::parse(&batch, 0).expect("benchmark batch parses");
        group.throughput(Throughput::Bytes(batch.as_bytes().len() as u64));
        group.bench_with_input(
            BenchmarkId::from_parameter(batch.as_bytes().len()),
            &batch,
            |b, batch| b.iter(|| black_box(batch).compute_crc()),
        );
    }
    group.finish();
}

/// One 100-record batch decoded borrowed, per record: the decoder without memory effects.
fn decode_one_batch(c: &mut Criterion) {
    let value: Vec<u8> = (0..VALUE_SIZE).map(|i| (i * 31) as u8).collect();
    let batch = OwnedBatch::parse(build_batch(0, Compression::None, &value), 0)
        .expect("benchmark batch parses");
    let mut group = c.benchmark_group("one_batch");
    group.throughput(Throughput::Elements(RECORDS_PER_BATCH as u64));
    group.bench_function("borrowed_fields", |b| {
        b.iter(|| {
            black_box(&batch)
                .records_borrowed()
                .into_iter()
                .flatten()
                .flatten()
                .map(record_checksum)
                .fold(0u64, u64::wrapping_add)
        })
    });
    group.bench_function("shared", |b| {
        b.iter(|| {
            black_box(&batch)
                .records(1 << 20)
                .filter(|r| r.is_ok())
                .count()
        })
    });
    group.finish();
}

/// As the macro scan consumer (`support/consumer.rs`, shared with `examples/scan_profile.rs`).
fn consumer(c: &mut Criterion) {
    let batches = consumer::batches();
    let mut group = c.benchmark_group("consumer");
    group.throughput(Throughput::Elements(
        (batches.len() * consumer::RECORDS_PER_BATCH) as u64,
    ));
    group.bench_function("offset_and_value_len", |b| {
        b.iter(|| consumer::consume(&batches))
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

criterion_group!(benches, validate, crc, decode_one_batch, consumer, build);
criterion_main!(benches);
