//! The macro scan's consumer, shared by the criterion `consumer` bench and
//! `examples/scan_profile.rs` (instruction counts under valgrind): 100 batches of 100
//! uncompressed records of 100-byte values, no keys, no headers; each record's offset and value
//! length summed through `black_box`.

use std::hint::black_box;

use seglog_records::{BatchBuilder, OwnedBatch, OwnedBatches};

/// Records in each batch of [`batches`].
pub const RECORDS_PER_BATCH: usize = 100;

/// The consumer's input: 100 parsed batches.
///
/// # Panics
///
/// If building or parsing them fails (a bug in this input, not a measurement).
#[allow(clippy::expect_used)]
pub fn batches() -> Vec<OwnedBatch> {
    let value: Vec<u8> = (0..100).map(|i| (i * 31) as u8).collect();
    let mut region = Vec::new();
    for b in 0..100 {
        let mut builder = BatchBuilder::new(b * RECORDS_PER_BATCH as i64);
        for i in 0..RECORDS_PER_BATCH {
            builder.append(1_700_000_000_000 + i as i64, None, Some(&value), &[]);
        }
        region.extend_from_slice(&builder.build().expect("consumer batch builds"));
    }
    OwnedBatches::new(bytes::Bytes::from(region), 0)
        .collect::<Result<_, _>>()
        .expect("consumer batches parse")
}

/// One pass of the consumer over `batches`.
///
/// # Errors
///
/// The first malformed record.
pub fn consume(batches: &[OwnedBatch]) -> Result<u64, seglog_records::Error> {
    let mut sum = 0u64;
    for batch in black_box(batches) {
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
    Ok(sum)
}
