//! The producer batches of a segment read from a header walk: what a producer-state replay
//! needs ([`ProducerBatch`]) without reading the data of a data batch. Only a control batch
//! (a COMMIT or ABORT marker, a few dozen bytes) is read whole, to decode its marker. The log
//! checks a `.txnindex` at first use with it (a replay of the segment's markers).

use seglog_records::{BatchHeader, MAGIC_V2};

use crate::Result;
use crate::digest::ProducerBatch;
use crate::error::Error;
use crate::read::BatchHeaders;
use crate::segment::Segment;

/// Iterator over the v2 batches with a producer id of a segment, from
/// [`Segment::producer_batches`].
pub struct ProducerBatches<'a> {
    segment: &'a Segment,
    headers: BatchHeaders<'a>,
}

impl Segment {
    /// The v2 batches with a producer id (`>= 0`) from `position` (a batch boundary) to the
    /// published size, as [`ProducerBatch`] facts: a data batch from its header alone, a
    /// control batch read whole to decode its marker. As [`Segment::batch_headers`], a
    /// partial tail ends the iteration quietly.
    pub fn producer_batches(&self, position: u64) -> ProducerBatches<'_> {
        ProducerBatches {
            segment: self,
            headers: self.batch_headers(position),
        }
    }
}

impl ProducerBatches<'_> {
    /// Whether the walk ended exactly at the published size (see
    /// [`BatchHeaders::ended_cleanly`]).
    pub fn ended_cleanly(&self) -> bool {
        self.headers.ended_cleanly()
    }

    fn facts(&self, header: &BatchHeader) -> Result<ProducerBatch> {
        if !header.is_control {
            return Ok(ProducerBatch::from_header(header));
        }
        let batch = self.segment.read_batch(header)?;
        ProducerBatch::from_batch(&batch.as_batch_ref())
            .map_err(|e| Error::from_records(&self.segment.log_path(), e))
    }
}

impl Iterator for ProducerBatches<'_> {
    type Item = Result<ProducerBatch>;

    fn next(&mut self) -> Option<Result<ProducerBatch>> {
        loop {
            let header = match self.headers.next()? {
                Ok(header) => header,
                Err(e) => return Some(Err(e)),
            };
            if header.magic >= MAGIC_V2 && header.producer_id >= 0 {
                return Some(self.facts(&header));
            }
        }
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use crate::{ActiveSegment, SegmentConfig};
    use seglog_records::{BatchBuilder, Batches, ControlRecordType, EndTransactionMarker};

    fn batch(base: i64, producer_id: i64, transactional: bool) -> Vec<u8> {
        let mut builder = BatchBuilder::new(base);
        if producer_id >= 0 {
            builder = builder
                .producer(producer_id, 0, 0)
                .transactional(transactional);
        }
        builder.append(1_000 + base, None, Some(b"v"), &[]);
        builder.append(1_000 + base, None, Some(b"w"), &[]);
        builder.build().unwrap().to_vec()
    }

    #[test]
    fn producer_batches_are_the_facts_a_full_read_gives() {
        let dir = tempfile::tempdir().unwrap();
        let mut active = ActiveSegment::create(dir.path(), 0, &SegmentConfig::default()).unwrap();
        let abort = BatchBuilder::end_transaction_marker(
            6,
            77,
            0,
            7,
            0,
            ControlRecordType::Abort,
            EndTransactionMarker {
                version: 0,
                coordinator_epoch: 3,
            },
        )
        .unwrap()
        .to_vec();
        let batches = [
            batch(0, 7, true),
            batch(2, -1, false),
            batch(4, 8, false),
            abort,
        ];
        let all: Vec<u8> = batches.concat();
        active.append(6, 1_006, 6, &all).unwrap();
        let segment = std::sync::Arc::clone(active.segment());
        let mut walk = segment.producer_batches(0);
        let walked: Vec<ProducerBatch> = walk.by_ref().collect::<Result<_>>().unwrap();
        assert!(walk.ended_cleanly());
        let read: Vec<ProducerBatch> = Batches::new(&all, 0)
            .map(|b| b.unwrap())
            .filter(|b| b.header().producer_id >= 0)
            .map(|b| ProducerBatch::from_batch(&b).unwrap())
            .collect();
        assert_eq!(walked, read);
        assert_eq!(walked.len(), 3);
        assert!(walked[2].marker.is_some_and(|m| m.is_abort));
    }
}
