//! The criterion `consumer/offset_and_value_len` loop as a plain binary, for counting
//! instructions per record under valgrind:
//! `valgrind --tool=cachegrind --cache-sim=no target/release/examples/scan_profile 100`.

// A profiling input that fails to build is a bug in the example: panicking is right.
#![allow(clippy::expect_used)]

use std::hint::black_box;

use seglog_records::{BatchBuilder, OwnedBatch, OwnedBatches};

fn main() -> Result<(), seglog_records::Error> {
    let rounds: u64 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(100);
    let value: Vec<u8> = (0..100).map(|i| (i * 31) as u8).collect();
    let mut region = Vec::new();
    for b in 0..100 {
        let mut builder = BatchBuilder::new(b * 100);
        for i in 0..100 {
            builder.append(1_700_000_000_000 + i, None, Some(&value), &[]);
        }
        region.extend_from_slice(&builder.build().expect("profiling batch builds"));
    }
    let batches: Vec<OwnedBatch> =
        OwnedBatches::new(bytes::Bytes::from(region), 0).collect::<Result<_, _>>()?;
    let mut sum = 0u64;
    for _ in 0..rounds {
        for batch in black_box(&batches) {
            let Some(records) = batch.records_borrowed() else {
                continue;
            };
            for record in records {
                let record = record?;
                sum = sum
                    .wrapping_add(black_box(record.offset) as u64)
                    .wrapping_add(black_box(record.value.map_or(0, <[u8]>::len)) as u64);
            }
        }
    }
    println!("{sum}");
    Ok(())
}
