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
    cursor: V2Cursor,
    ctx: V2Context,
}

/// Walks the v2 records of a batch's (decompressed) record bytes, checking the declared
/// count against the records found; shared by the owned and the borrowed iterators.
#[derive(Debug, Clone)]
pub(crate) struct V2Cursor {
    pos: usize,
    declared: i32,
    decoded: i32,
    /// Absolute position of `data[0]` when the records are stored uncompressed.
    origin: Option<u64>,
    batch_position: u64,
    done: bool,
}

impl V2Cursor {
    pub(crate) fn new(declared: i32, origin: Option<u64>, batch_position: u64) -> Self {
        V2Cursor {
            pos: 0,
            declared,
            decoded: 0,
            origin,
            batch_position,
            done: false,
        }
    }

    /// The next record of `data`, decoded by `decode` (which advances the position past it
    /// or returns where the bad record starts); `None` at the end. Yields at most one error.
    #[inline(always)]
    pub(crate) fn next<R>(
        &mut self,
        data: &[u8],
        decode: impl FnOnce(&mut usize) -> std::result::Result<R, (usize, CorruptKind)>,
    ) -> Option<Result<R>> {
        if self.done {
            return None;
        }
        if self.decoded == self.declared {
            self.done = true;
            let left = data.len() - self.pos;
            // Kafka: "Incorrect declared batch size, records still remaining in file".
            return (left != 0)
                .then(|| Err(self.fail(self.pos, CorruptKind::TrailingBytes { count: left })));
        }
        if self.pos == data.len() {
            self.done = true;
            let kind = CorruptKind::RecordCountMismatch {
                declared: self.declared,
                decoded: self.decoded,
            };
            return Some(Err(self.fail(self.pos, kind)));
        }
        match decode(&mut self.pos) {
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

    /// Records left, at most (plus one for a final error).
    pub(crate) fn size_hint(&self) -> (usize, Option<usize>) {
        if self.done {
            return (0, Some(0));
        }
        let left = self.declared.saturating_sub(self.decoded).max(0) as usize;
        (0, Some(left.saturating_add(1)))
    }

    fn fail(&self, at: usize, kind: CorruptKind) -> Error {
        let position = match self.origin {
            Some(origin) => origin + at as u64,
            None => self.batch_position,
        };
        Error::corrupt(position, kind)
    }
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
                cursor: V2Cursor::new(declared, origin, batch_position),
                ctx,
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
            State::V2(v2) => v2.cursor.size_hint(),
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
        let (data, ctx) = (&self.data, &self.ctx);
        self.cursor
            .next(data, |pos| decode_v2_record(data, pos, ctx))
    }
}
