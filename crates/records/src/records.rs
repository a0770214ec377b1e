//! [`Records`]: the iterator over the records of one batch.

use bytes::Bytes;

use crate::record::{V2Context, decode_v2_record};
use crate::{CorruptKind, Error, Record, Result};

/// Iterator over the records of one batch, in stored order; from
/// [`BatchRef::records`](crate::BatchRef::records).
///
/// Yields `Err` at most once and then stops. Decompression happens up front (bounded by the
/// limit given to `records`); v2 records are then decoded one at a time, legacy compressed
/// wrappers are decoded whole (the inner offsets of v1 are relative to the last one).
#[derive(Debug)]
pub struct Records {
    state: State,
}

#[derive(Debug)]
enum State {
    V2(V2Records),
    Legacy(std::vec::IntoIter<Record>),
    Failed(Option<Error>),
}

#[derive(Debug)]
struct V2Records {
    data: Bytes,
    pos: usize,
    declared: i32,
    decoded: i32,
    ctx: V2Context,
    /// Absolute position of `data[0]` when the records are stored uncompressed.
    origin: Option<u64>,
    batch_position: u64,
    done: bool,
}

impl Records {
    pub(crate) fn v2(
        data: Bytes,
        declared: i32,
        ctx: V2Context,
        origin: Option<u64>,
        batch_position: u64,
    ) -> Self {
        Records {
            state: State::V2(V2Records {
                data,
                pos: 0,
                declared,
                decoded: 0,
                ctx,
                origin,
                batch_position,
                done: false,
            }),
        }
    }

    pub(crate) fn legacy(records: Vec<Record>) -> Self {
        Records {
            state: State::Legacy(records.into_iter()),
        }
    }

    pub(crate) fn failed(error: Error) -> Self {
        Records {
            state: State::Failed(Some(error)),
        }
    }
}

impl Iterator for Records {
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Result<Record>> {
        match &mut self.state {
            State::V2(v2) => v2.next(),
            State::Legacy(records) => records.next().map(Ok),
            State::Failed(error) => error.take().map(Err),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.state {
            State::V2(v2) if !v2.done => {
                let left = v2.declared.saturating_sub(v2.decoded).max(0) as usize;
                (0, Some(left.saturating_add(1)))
            }
            State::V2(_) => (0, Some(0)),
            State::Legacy(records) => records.size_hint(),
            State::Failed(error) => {
                let n = usize::from(error.is_some());
                (n, Some(n))
            }
        }
    }
}

impl V2Records {
    fn next(&mut self) -> Option<Result<Record>> {
        if self.done {
            return None;
        }
        if self.decoded == self.declared {
            self.done = true;
            let left = self.data.len() - self.pos;
            // Kafka: "Incorrect declared batch size, records still remaining in file".
            return (left != 0)
                .then(|| Err(self.fail(self.pos, CorruptKind::TrailingBytes { count: left })));
        }
        if self.pos == self.data.len() {
            self.done = true;
            let kind = CorruptKind::RecordCountMismatch {
                declared: self.declared,
                decoded: self.decoded,
            };
            return Some(Err(self.fail(self.pos, kind)));
        }
        match decode_v2_record(&self.data, &mut self.pos, &self.ctx) {
            Ok(record) => {
                self.decoded += 1;
                Some(Ok(record))
            }
            Err((at, kind)) => {
                self.done = true;
                Some(Err(self.fail(at, kind)))
            }
        }
    }

    fn fail(&self, at: usize, kind: CorruptKind) -> Error {
        let position = match self.origin {
            Some(origin) => origin + at as u64,
            None => self.batch_position,
        };
        Error::corrupt(position, kind)
    }
}
