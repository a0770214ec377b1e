//! Shallow iteration over a region of bytes: batch after batch, reading only headers.
//!
//! Kafka's `FileLogInputStream` rules (spec 4.5): a partial tail ends the iteration quietly and
//! is exposed through [`Batches::partial_tail_bytes`]; corruption is one `Err` with its
//! position, after which the iterator stops.

use bytes::Bytes;

use crate::{BatchHeader, BatchRef, HeaderRead, OwnedBatch, RECORD_BATCH_OVERHEAD, Result};

/// The constructor and the cursor accessors, the same for both iterators (the stepping itself
/// is [`Cursor::next`]). The accessors are documented on [`Batches`]; [`OwnedBatches`]' docs
/// point there.
macro_rules! cursor_methods {
    ($iter:ident $(<$lt:lifetime>)?, $bytes:ty) => {
        impl$(<$lt>)? $iter$(<$lt>)? {
            /// Iterates over `bytes`, whose first byte is at absolute position `base_position`.
            pub fn new(bytes: $bytes, base_position: u64) -> Self {
                $iter {
                    bytes,
                    cursor: Cursor::new(base_position),
                }
            }

            #[doc = accessor_doc!(
                $iter,
                validated,
                "Also checks each batch's checksum ([`BatchRef::ensure_valid`]) before yielding \
                 it, as\nrecovery does."
            )]
            pub fn validated(mut self) -> Self {
                self.cursor.validate = true;
                self
            }

            #[doc = accessor_doc!(
                $iter,
                position,
                "Absolute position of the next batch: after the last batch yielded (on error, \
                 the start\nof the batch at fault). Recovery truncates here."
            )]
            pub fn position(&self) -> u64 {
                self.cursor.position()
            }

            #[doc = accessor_doc!(
                $iter,
                valid_bytes,
                "Bytes consumed by the batches yielded so far."
            )]
            pub fn valid_bytes(&self) -> u64 {
                self.cursor.offset as u64
            }

            #[doc = accessor_doc!(
                $iter,
                partial_tail_bytes,
                "After a quiet end: how many bytes were left after the last whole batch (a \
                 partial tail,\n17 or fewer stray bytes, or 0 at a clean end). 0 while \
                 iterating and after an error."
            )]
            pub fn partial_tail_bytes(&self) -> u64 {
                self.cursor.tail()
            }
        }
    };
}

/// An accessor's doc: the text itself on [`Batches`], a pointer to it on [`OwnedBatches`].
macro_rules! accessor_doc {
    (Batches, $method:ident, $doc:literal) => {
        $doc
    };
    (OwnedBatches, $method:ident, $doc:literal) => {
        concat!("See [`Batches::", stringify!($method), "`].")
    };
}

/// Iterator over the batches of a borrowed region (a whole `.log` or any part of it that
/// starts at a batch boundary). Yields `Result<BatchRef>`.
///
/// ```
/// use seglog_records::{BatchBuilder, Batches};
///
/// let mut log = Vec::new();
/// for base_offset in [0, 3] {
///     let mut builder = BatchBuilder::new(base_offset);
///     for i in 0..3 {
///         builder.append(1_700_000_000_000 + i, None, Some(b"v"), &[]);
///     }
///     log.extend_from_slice(&builder.build()?);
/// }
/// log.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 90]); // a torn write
/// log.extend_from_slice(&[0; 10]);
///
/// let mut batches = Batches::new(&log, 0).validated();
/// let last_offsets: Vec<i64> = batches
///     .by_ref()
///     .map(|b| b.map(|b| b.header().last_offset))
///     .collect::<Result<_, _>>()?;
/// assert_eq!(last_offsets, [2, 5]);
/// assert_eq!(batches.partial_tail_bytes(), 22);
/// # Ok::<(), seglog_records::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Batches<'a> {
    bytes: &'a [u8],
    cursor: Cursor,
}

/// Like [`Batches`], over shared [`Bytes`]; yields [`OwnedBatch`]es that share the buffer.
#[derive(Debug, Clone)]
pub struct OwnedBatches {
    bytes: Bytes,
    cursor: Cursor,
}

#[derive(Debug, Clone, Copy)]
struct Cursor {
    base_position: u64,
    offset: usize,
    validate: bool,
    state: State,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Running,
    /// Ended quietly, with this many bytes left after the last whole batch.
    Ended {
        tail: usize,
    },
    Failed,
}

cursor_methods!(Batches<'a>, &'a [u8]);

impl<'a> Iterator for Batches<'a> {
    type Item = Result<BatchRef<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        let bytes = self.bytes;
        self.cursor.next(bytes, |header, offset| {
            BatchRef::from_parts(header, &bytes[offset..])
        })
    }
}

cursor_methods!(OwnedBatches, Bytes);

impl Iterator for OwnedBatches {
    type Item = Result<OwnedBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        let bytes = &self.bytes;
        self.cursor.next(bytes, |header, offset| {
            OwnedBatch::from_parts(header, bytes.slice(offset..))
        })
    }
}

impl Cursor {
    fn new(base_position: u64) -> Self {
        Cursor {
            base_position,
            offset: 0,
            validate: false,
            state: State::Running,
        }
    }

    fn position(&self) -> u64 {
        self.base_position + self.offset as u64
    }

    fn tail(&self) -> u64 {
        match self.state {
            State::Ended { tail } => tail as u64,
            State::Running | State::Failed => 0,
        }
    }

    fn next<T>(
        &mut self,
        bytes: &[u8],
        make: impl FnOnce(BatchHeader, usize) -> T,
    ) -> Option<Result<T>>
    where
        T: AsBatch,
    {
        if self.state != State::Running {
            return None;
        }
        let rest = bytes.get(self.offset..).unwrap_or_default();
        let prefix = &rest[..rest.len().min(RECORD_BATCH_OVERHEAD)];
        match BatchHeader::parse(prefix, self.position(), rest.len() as u64) {
            Ok(HeaderRead::Batch(header)) => {
                let batch = make(header, self.offset);
                if self.validate
                    && let Err(error) = batch.ensure_valid()
                {
                    self.state = State::Failed;
                    return Some(Err(error));
                }
                self.offset += header.total_size as usize;
                Some(Ok(batch))
            }
            Ok(HeaderRead::End | HeaderRead::PartialTail { .. }) => {
                self.state = State::Ended { tail: rest.len() };
                None
            }
            Err(error) => {
                self.state = State::Failed;
                Some(Err(error))
            }
        }
    }
}

/// What the cursor needs from the batches it makes.
trait AsBatch {
    fn ensure_valid(&self) -> Result<()>;
}

impl AsBatch for BatchRef<'_> {
    fn ensure_valid(&self) -> Result<()> {
        BatchRef::ensure_valid(self)
    }
}

impl AsBatch for OwnedBatch {
    fn ensure_valid(&self) -> Result<()> {
        OwnedBatch::ensure_valid(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CorruptKind;
    use crate::test_vectors::SPEC_V2_BATCH;

    fn three_batches() -> Vec<u8> {
        let mut log = Vec::new();
        for base in [0i64, 2, 4] {
            let mut batch = SPEC_V2_BATCH;
            batch[..8].copy_from_slice(&base.to_be_bytes());
            log.extend_from_slice(&batch);
        }
        log
    }

    #[test]
    fn walks_batches_and_reports_positions() {
        let log = three_batches();
        let mut batches = Batches::new(&log, 4096).validated();
        let headers: Vec<_> = batches.by_ref().map(|b| *b.unwrap().header()).collect();
        assert_eq!(
            headers.iter().map(|h| h.position).collect::<Vec<_>>(),
            [4096, 4193, 4290]
        );
        assert_eq!(
            headers.iter().map(|h| h.last_offset).collect::<Vec<_>>(),
            [1, 3, 5]
        );
        assert_eq!(batches.partial_tail_bytes(), 0);
        assert_eq!(batches.position(), 4096 + 291);
        assert!(batches.next().is_none());
    }

    #[test]
    fn partial_tail_ends_quietly_at_every_cut() {
        let log = three_batches();
        for cut in 194..log.len() {
            let mut batches = Batches::new(&log[..cut], 0);
            assert_eq!(batches.by_ref().filter_map(|b| b.ok()).count(), 2, "{cut}");
            assert_eq!(batches.partial_tail_bytes(), cut as u64 - 194);
            assert_eq!(batches.valid_bytes(), 194);
        }
    }

    #[test]
    fn corruption_stops_with_a_positioned_error() {
        let mut log = three_batches();
        log[97 + 40] ^= 0x10;
        let mut batches = Batches::new(&log, 10).validated();
        assert!(batches.next().unwrap().is_ok());
        let err = batches.next().unwrap().unwrap_err();
        assert_eq!(err.position(), Some(107));
        assert!(matches!(
            err.corrupt_kind(),
            Some(CorruptKind::CrcMismatch { .. })
        ));
        assert!(batches.next().is_none());
        assert_eq!(batches.position(), 107);
        // Without validation the header still parses: the flip is only visible to the CRC.
        assert_eq!(Batches::new(&log, 0).count(), 3);
    }

    #[test]
    fn zero_filled_tail_is_corrupt() {
        let mut log = three_batches();
        log.extend_from_slice(&[0u8; 100]);
        let results: Vec<_> = Batches::new(&log, 0).collect();
        assert_eq!(results.len(), 4);
        assert_eq!(results[3].as_ref().unwrap_err().position(), Some(291));
    }

    #[test]
    fn owned_batches_share_the_buffer() {
        let log = Bytes::from(three_batches());
        let owned: Vec<_> = OwnedBatches::new(log.clone(), 0)
            .validated()
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(owned.len(), 3);
        assert_eq!(owned[1].bytes().as_ptr(), log[97..].as_ptr());
    }
}
