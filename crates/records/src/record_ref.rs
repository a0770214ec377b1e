//! [`RecordRef`]: a record borrowed from the batch bytes, and [`RecordRefs`], the iterator
//! over the records of an uncompressed v2 batch without copies, allocations or reference
//! counting (from [`BatchRef::records_borrowed`](crate::BatchRef::records_borrowed)).

use crate::record::{V2Context, decode_v2_ref, take_header};
use crate::records::V2Cursor;
use crate::{Header, Record, Result, TimestampType};

/// One v2 record borrowed from its batch's bytes: key, value and headers are slices of them.
///
/// Decoded and checked exactly as [`Record`] (lengths, header keys as UTF-8, offsets); turn
/// it into one with [`RecordRef::to_record`] to keep it beyond the batch's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordRef<'a> {
    /// Absolute offset of the record.
    pub offset: i64,
    /// The record's timestamp (with LogAppendTime: the batch max timestamp).
    pub timestamp_ms: i64,
    /// What the timestamp means.
    pub timestamp_type: TimestampType,
    /// `None` for a null key.
    pub key: Option<&'a [u8]>,
    /// `None` for a null value (a tombstone in a compacted topic).
    pub value: Option<&'a [u8]>,
    /// The headers' bytes (checked when the record was decoded).
    pub(crate) headers: &'a [u8],
    pub(crate) header_count: usize,
}

impl<'a> RecordRef<'a> {
    /// How many headers the record has.
    pub fn header_count(&self) -> usize {
        self.header_count
    }

    /// The record's headers, in stored order: `(key, value)`, `None` for a null value.
    pub fn headers(&self) -> HeaderRefs<'a> {
        HeaderRefs {
            rest: self.headers,
            left: self.header_count,
        }
    }

    /// Copies the record into an owned [`Record`].
    pub fn to_record(&self) -> Record {
        Record {
            offset: self.offset,
            timestamp_ms: Some(self.timestamp_ms),
            timestamp_type: Some(self.timestamp_type),
            key: self.key.map(bytes::Bytes::copy_from_slice),
            value: self.value.map(bytes::Bytes::copy_from_slice),
            headers: self
                .headers()
                .map(|(key, value)| Header {
                    key: key.to_owned(),
                    value: value.map(bytes::Bytes::copy_from_slice),
                })
                .collect(),
        }
    }
}

/// Iterator over the headers of a [`RecordRef`]: `(key, value)`.
#[derive(Debug, Clone)]
pub struct HeaderRefs<'a> {
    rest: &'a [u8],
    left: usize,
}

impl<'a> Iterator for HeaderRefs<'a> {
    type Item = (&'a str, Option<&'a [u8]>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // The headers were checked when the record was decoded, so this cannot fail; if it
        // did, the iteration would just end.
        let header = take_header(&mut self.rest);
        if header.is_err() {
            self.left = 0;
        }
        header.ok()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.left))
    }
}

/// Iterator over the records of an uncompressed v2 batch, borrowing from its bytes; from
/// [`BatchRef::records_borrowed`](crate::BatchRef::records_borrowed).
///
/// Yields `Err` at most once and then stops, with the same errors and positions as
/// [`Records`](crate::Records).
#[derive(Debug, Clone)]
pub struct RecordRefs<'a> {
    data: &'a [u8],
    cursor: V2Cursor,
    ctx: V2Context,
}

impl<'a> RecordRefs<'a> {
    pub(crate) fn new(data: &'a [u8], declared: i32, ctx: V2Context, origin: u64) -> Self {
        RecordRefs {
            data,
            cursor: V2Cursor::new(declared, Some(origin), 0),
            ctx,
        }
    }
}

impl<'a> Iterator for RecordRefs<'a> {
    type Item = Result<RecordRef<'a>>;

    // The whole decoder is inlined into the caller's loop (cursor, closure and decoder are
    // `inline(always)`): returned through memory, the ~80-byte item cost about as much as
    // decoding it (the caller's wide copy of it stalls on store forwarding), so this halves
    // the time per record (criterion `one_batch/borrowed_fields`).
    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        let (data, ctx) = (self.data, &self.ctx);
        self.cursor.next(
            data,
            #[inline(always)]
            |pos| decode_v2_ref(data, pos, ctx),
        )
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.cursor.size_hint()
    }
}
