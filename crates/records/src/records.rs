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
    ///
    /// An ended cursor has its count reached and its position at the end, which keeps it
    /// ended without a flag to test on every record (`done` only feeds `size_hint`).
    #[inline(always)]
    pub(crate) fn next<R>(
        &mut self,
        data: &[u8],
        decode: impl FnOnce(&mut usize) -> std::result::Result<R, (usize, CorruptKind)>,
    ) -> Option<Result<R>> {
        if self.decoded == self.declared {
            let left = data.len().saturating_sub(self.pos);
            if left == 0 {
                self.done = true;
                return None;
            }
            // Kafka: "Incorrect declared batch size, records still remaining in file".
            let error = self.fail(self.pos, CorruptKind::TrailingBytes { count: left });
            self.finish(data);
            return Some(Err(error));
        }
        if self.pos >= data.len() {
            let kind = CorruptKind::RecordCountMismatch {
                declared: self.declared,
                decoded: self.decoded,
            };
            let error = self.fail(self.pos, kind);
            self.finish(data);
            return Some(Err(error));
        }
        match decode(&mut self.pos) {
            Ok(record) => {
                self.decoded += 1;
                Some(Ok(record))
            }
            Err((at, kind)) => {
                let error = self.fail(at, kind);
                self.finish(data);
                Some(Err(error))
            }
        }
    }

    /// Ends the iteration: the count reached, nothing left.
    fn finish(&mut self, data: &[u8]) {
        self.done = true;
        self.declared = self.decoded;
        self.pos = data.len();
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes one-byte "records" (any byte but 0xff; 0xff fails at its position).
    fn drain(data: &[u8], declared: i32) -> Vec<std::result::Result<u8, (u64, CorruptKind)>> {
        let mut cursor = V2Cursor::new(declared, Some(100), 7);
        let mut out = Vec::new();
        let decode = |pos: &mut usize| match data[*pos] {
            0xff => Err((*pos, CorruptKind::Truncated)),
            byte => {
                *pos += 1;
                Ok(byte)
            }
        };
        while let Some(item) = cursor.next(data, decode) {
            out.push(item.map_err(|e| {
                (
                    e.position().unwrap_or(0),
                    e.corrupt_kind().cloned().unwrap_or(CorruptKind::Truncated),
                )
            }));
            assert!(out.len() <= data.len() + 1, "the cursor never ends");
        }
        // Ended for good: no item, however often asked, and nothing left by the hint.
        for _ in 0..3 {
            assert!(cursor.next(data, decode).is_none());
        }
        assert_eq!(cursor.size_hint(), (0, Some(0)));
        out
    }

    #[test]
    fn yields_at_most_one_error_then_stays_ended() {
        assert_eq!(drain(&[1, 2], 2), [Ok(1), Ok(2)]);
        assert_eq!(drain(&[], 0), []);
        assert_eq!(
            drain(&[1, 2, 3], 1),
            [Ok(1), Err((101, CorruptKind::TrailingBytes { count: 2 }))]
        );
        let mismatch = |declared, decoded| CorruptKind::RecordCountMismatch { declared, decoded };
        assert_eq!(drain(&[1], 3), [Ok(1), Err((101, mismatch(3, 1)))]);
        assert_eq!(drain(&[1], -1), [Ok(1), Err((101, mismatch(-1, 1)))]);
        assert_eq!(
            drain(&[1, 0xff, 2], 3),
            [Ok(1), Err((101, CorruptKind::Truncated))]
        );
    }
}
