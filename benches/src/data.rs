//! The records every contender writes: deterministic, incompressible values, timestamps one
//! millisecond apart, grouped in batches as a producer would send them.
//!
//! seglog and the ceiling get Kafka v2 record batches (the bytes a broker stores); commitlog
//! gets its own message sets holding the same values. Encoding happens before any clock starts.

use std::ops::Range;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use commitlog::message::MessageBuf;
use seglog_records::BatchBuilder;

use crate::Result;

/// How much data, in what shape.
#[derive(Clone, Copy, Debug)]
pub struct DataSpec {
    /// Number of records.
    pub records: u64,
    /// Value bytes per record (records have no key and no headers).
    pub record_bytes: usize,
    /// Records per batch (the last batch may be shorter).
    pub batch_records: usize,
}

impl DataSpec {
    /// Number of batches.
    pub fn batches(&self) -> usize {
        usize::try_from(self.records.div_ceil(self.batch_records as u64)).unwrap_or(usize::MAX)
    }

    /// Total value bytes.
    pub fn payload_bytes(&self) -> u64 {
        self.records * self.record_bytes as u64
    }

    /// The offsets of batch `batch`.
    pub fn batch_offsets(&self, batch: usize) -> Range<u64> {
        let start = batch as u64 * self.batch_records as u64;
        start..(start + self.batch_records as u64).min(self.records)
    }
}

/// Random bytes the values are cut from; a prime-ish stride picks a different window per record.
const POOL_BYTES: usize = 1 << 20;

/// Encoded batches, ready to append.
pub struct Dataset {
    /// The shape.
    pub spec: DataSpec,
    /// Timestamp of record 0; record `i` has `first_timestamp_ms + i`.
    pub first_timestamp_ms: i64,
    /// Every Kafka v2 batch back to back, as the producer sends them (base offset 0 each):
    /// byte for byte the size a log holds after appending them all (only the base offsets
    /// differ, which the log rewrites in place).
    pub image: Bytes,
    /// Byte range of each batch in `image`.
    pub batch_ranges: Vec<Range<usize>>,
    pool: Vec<u8>,
}

impl Dataset {
    /// Generates `spec`'s records with a fixed seed, so every run writes the same bytes.
    ///
    /// # Errors
    ///
    /// If a batch cannot be encoded.
    pub fn generate(spec: DataSpec) -> Result<Self> {
        use rand::{RngCore, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x5e9_109);
        let mut pool = vec![0u8; POOL_BYTES + spec.record_bytes];
        rng.fill_bytes(&mut pool);
        // An hour in the past: inside every CreateTime window, far from time retention.
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1_700_000_000_000, |now| now.as_millis() as i64);
        let first_timestamp_ms = now_ms - 3_600_000;
        let mut dataset = Self {
            spec,
            first_timestamp_ms,
            image: Bytes::new(),
            batch_ranges: Vec::with_capacity(spec.batches()),
            pool,
        };
        let mut image = Vec::with_capacity(
            usize::try_from(spec.payload_bytes()).unwrap_or(0) + spec.batches() * 128,
        );
        for batch in 0..spec.batches() {
            let offsets = spec.batch_offsets(batch);
            let values: Vec<&[u8]> = offsets
                .clone()
                .map(|offset| dataset.value(offset))
                .collect();
            let start = image.len();
            let encoded = kafka_batch(dataset.timestamp_ms(offsets.start), &values)?;
            image.extend_from_slice(&encoded);
            dataset.batch_ranges.push(start..image.len());
        }
        dataset.image = Bytes::from(image);
        Ok(dataset)
    }

    /// The value of the record at `offset`.
    pub fn value(&self, offset: u64) -> &[u8] {
        let start = (offset.wrapping_mul(2_654_435_761) % POOL_BYTES as u64) as usize;
        &self.pool[start..start + self.spec.record_bytes]
    }

    /// The timestamp of the record at `offset`.
    pub fn timestamp_ms(&self, offset: u64) -> i64 {
        self.first_timestamp_ms + offset as i64
    }

    /// Batch `batch` as the producer sends it (shares `image`'s memory).
    pub fn batch(&self, batch: usize) -> Bytes {
        self.image.slice(self.batch_ranges[batch].clone())
    }

    /// Consecutive batches grouped so that each group holds at most `bytes` (at least one
    /// batch): the byte range of each group in `image` and its batch indices.
    pub fn groups(&self, bytes: usize) -> Vec<(Range<usize>, Range<usize>)> {
        let mut groups = Vec::new();
        let mut first = 0;
        while first < self.batch_ranges.len() {
            let start = self.batch_ranges[first].start;
            let mut end = first + 1;
            while end < self.batch_ranges.len() && self.batch_ranges[end].end - start <= bytes {
                end += 1;
            }
            groups.push((start..self.batch_ranges[end - 1].end, first..end));
            first = end;
        }
        groups
    }

    /// `image` as a leader's log holds it (and a follower fetches it): each batch's base
    /// offset is its first record's offset. The base offset is outside the CRC.
    pub fn replicated_image(&self) -> Bytes {
        let mut image = self.image.to_vec();
        for (batch, range) in self.batch_ranges.iter().enumerate() {
            let base = self.spec.batch_offsets(batch).start as i64;
            image[range.start..range.start + 8].copy_from_slice(&base.to_be_bytes());
        }
        Bytes::from(image)
    }

    /// commitlog message sets with the same values, one per batch.
    ///
    /// # Errors
    ///
    /// If commitlog refuses a value.
    pub fn commitlog_message_sets(&self) -> Result<Vec<MessageBuf>> {
        (0..self.spec.batches())
            .map(|batch| {
                let mut set = MessageBuf::default();
                for offset in self.spec.batch_offsets(batch) {
                    set.push(self.value(offset))
                        .map_err(|error| format!("commitlog message set: {error:?}"))?;
                }
                Ok(set)
            })
            .collect()
    }
}

/// One uncompressed Kafka v2 batch as a producer sends it: base offset 0 (the log assigns
/// offsets), no keys, no headers, CreateTime, no producer id.
fn kafka_batch(first_timestamp_ms: i64, values: &[&[u8]]) -> Result<Bytes> {
    let mut builder = BatchBuilder::new(0);
    for (delta, value) in values.iter().enumerate() {
        builder.append(first_timestamp_ms + delta as i64, None, Some(value), &[]);
    }
    Ok(builder.build()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_cover_every_offset() {
        let spec = DataSpec {
            records: 250,
            record_bytes: 10,
            batch_records: 100,
        };
        assert_eq!(spec.batches(), 3);
        assert_eq!(spec.batch_offsets(2), 200..250);
        assert_eq!(spec.payload_bytes(), 2500);
    }
}
