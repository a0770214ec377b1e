//! Record-level readers over [`Log::read_into`]: a consumer's loop, so users need not
//! reimplement one. [`RecordReader`] is the borrowed (zero-copy over one reused buffer) flavour,
//! [`OwnedRecordReader`] the owned one ([`FetchedRecord`]s that outlive it, one at a time or as
//! an [`Iterator`] that ends where the reader caught up).
//!
//! Both start at an offset, read up to the visible end per [`Isolation`] (the log end or the
//! high watermark), keep their position between calls (a reader that caught up continues
//! where it stopped once more is appended: see [`Log::wait_for`]), skip the records below the
//! start inside the first batch (a fetch returns whole batches), step over compacted gaps (the
//! next offset after a batch is its last offset + 1, whatever offsets it still holds), check
//! every batch's CRC before decoding it (Kafka's `check.crcs=true`, on by default), and
//! decompress into at most [`DEFAULT_MAX_DECOMPRESSED_BYTES`] per batch unless told otherwise.
//! A start outside `[log start, log end]` is [`Error::OffsetOutOfRange`], naming both.
//! Control batches (transaction markers) are skipped, as a Kafka consumer skips them, unless
//! [`ReaderOptions::include_control`] asks for them. With [`Isolation::ReadCommitted`] they
//! read up to the last stable offset and drop the records of aborted transactions, as a
//! `read_committed` Kafka consumer does (the aborted transactions of each fetch come from the
//! `.txnindex` files, [`Log::aborted_transactions`]).
//!
//! The same readers also read [`FetchedBytes`]: the whole batches of one fetch held in memory
//! (a buffer [`Log::read_into`] filled, a fetch response received from another process, a
//! segment's bytes) with the fetch's aborted transactions, as a Kafka consumer's
//! `CompletedFetch` does ([`ReaderOptions::reader_over`], [`ReaderOptions::owned_reader_over`]).
//! They skip, check, decompress and filter exactly as over a log; the bytes are read once
//! (nothing more arrives), and a seek reads them again from the new position.

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use seglog_records::{BatchHeader, Batches, Header, OwnedBatches, Record, RecordRef, Records};
use seglog_segment::{FileKind, file_path};

pub use crate::config::DEFAULT_MAX_DECOMPRESSED_BYTES;
use crate::log::Log;
use crate::log_producers::AbortedTransaction;
use crate::view::{Isolation, WaitEnd};
use crate::{Error, Result};

/// The default bytes asked of the log per fetch (Kafka's `max.partition.fetch.bytes`, 1 MiB);
/// at least one whole batch is always returned.
pub const DEFAULT_FETCH_BYTES: u32 = 1 << 20;

/// How a reader reads: where, how far and with which checks. Build one with
/// [`ReaderOptions::new`], then [`ReaderOptions::reader`] or [`ReaderOptions::owned_reader`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReaderOptions {
    start_offset: i64,
    isolation: Isolation,
    fetch_bytes: u32,
    max_decompressed_bytes: usize,
    check_crcs: bool,
    include_control: bool,
}

impl ReaderOptions {
    /// Reading from `start_offset` up to the visible end per `isolation`, with the defaults:
    /// [`DEFAULT_FETCH_BYTES`] per fetch, [`DEFAULT_MAX_DECOMPRESSED_BYTES`] per batch, CRCs
    /// checked, control batches skipped.
    pub fn new(start_offset: i64, isolation: Isolation) -> Self {
        Self {
            start_offset,
            isolation,
            fetch_bytes: DEFAULT_FETCH_BYTES,
            max_decompressed_bytes: DEFAULT_MAX_DECOMPRESSED_BYTES,
            check_crcs: true,
            include_control: false,
        }
    }

    /// Bytes asked of the log per fetch (at least one whole batch is returned regardless).
    #[must_use]
    pub fn fetch_bytes(mut self, bytes: u32) -> Self {
        self.fetch_bytes = bytes;
        self
    }

    /// The bound on what one compressed batch may decompress into.
    #[must_use]
    pub fn max_decompressed_bytes(mut self, bytes: usize) -> Self {
        self.max_decompressed_bytes = bytes;
        self
    }

    /// Whether every batch's CRC is checked before its records are decoded (default `true`,
    /// Kafka's `check.crcs`).
    #[must_use]
    pub fn check_crcs(mut self, check: bool) -> Self {
        self.check_crcs = check;
        self
    }

    /// Whether the records of control batches (transaction markers) are passed on (default
    /// `false`: skipped, as a Kafka consumer does; the position moves past them either way).
    #[must_use]
    pub fn include_control(mut self, include: bool) -> Self {
        self.include_control = include;
        self
    }

    /// A borrowed reader over `log` with these options.
    pub fn reader(self, log: &Log) -> RecordReader<'_> {
        RecordReader::new(ReadState::new(Source::Log(log), self))
    }

    /// An owned reader over `log` with these options.
    pub fn owned_reader(self, log: &Log) -> OwnedRecordReader<'_> {
        OwnedRecordReader::new(ReadState::new(Source::Log(log), self))
    }

    /// A borrowed reader over the batches of one fetch held in memory, with these options
    /// (the fetch size does not apply: the bytes are read once, whole). With
    /// [`Isolation::ReadCommitted`] it drops the records of `fetched`'s aborted transactions;
    /// the other isolations read every batch.
    ///
    /// ```
    /// use std::ops::ControlFlow;
    /// use seglog::{BatchBuilder, FetchedBytes, Isolation, ReaderOptions};
    ///
    /// let mut batch = BatchBuilder::new(40);
    /// batch.append(1_700_000_000_000, Some(b"k"), Some(b"v1"), &[]);
    /// batch.append(1_700_000_000_001, Some(b"k"), Some(b"v2"), &[]);
    /// let bytes = batch.build()?;
    /// let fetched = FetchedBytes::new(&bytes, "fetch", 0);
    /// let mut values = Vec::new();
    /// ReaderOptions::new(41, Isolation::LogEnd)
    ///     .reader_over(fetched)
    ///     .poll::<seglog::Error>(|_, record| {
    ///         values.push(record.value().map(<[u8]>::to_vec));
    ///         Ok(ControlFlow::Continue(()))
    ///     })?;
    /// assert_eq!(values, [Some(b"v2".to_vec())]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reader_over(self, fetched: FetchedBytes<'_>) -> RecordReader<'_> {
        RecordReader::new(ReadState::new(Source::fetched(fetched), self))
    }

    /// An owned reader over the batches of one fetch held in memory, with these options (see
    /// [`Self::reader_over`]).
    pub fn owned_reader_over(self, fetched: FetchedBytes<'_>) -> OwnedRecordReader<'_> {
        OwnedRecordReader::new(ReadState::new(Source::fetched(fetched), self))
    }
}

/// The whole batches of one fetch, held in memory, for [`ReaderOptions::reader_over`] and
/// [`ReaderOptions::owned_reader_over`]: the bytes (as a fetch returns them: whole batches,
/// the last one possibly cut, which is not read), where they came from (named by the errors:
/// the segment file and the byte position of the first byte) and, for `read_committed`, the
/// fetch's aborted transactions (Kafka's `FetchResponse.abortedTransactions`, as
/// [`crate::FetchData::aborted_transactions`] holds them).
#[derive(Clone)]
pub struct FetchedBytes<'a> {
    bytes: &'a [u8],
    path: PathBuf,
    position: u64,
    aborted: Vec<AbortedTransaction>,
}

impl<'a> FetchedBytes<'a> {
    /// `bytes` read from `path` at byte `position`, with no aborted transaction.
    pub fn new(bytes: &'a [u8], path: impl Into<PathBuf>, position: u64) -> Self {
        Self {
            bytes,
            path: path.into(),
            position,
            aborted: Vec::new(),
        }
    }

    /// The fetch's aborted transactions, which a [`Isolation::ReadCommitted`] reader drops
    /// (any order).
    #[must_use]
    pub fn aborted_transactions(mut self, aborted: Vec<AbortedTransaction>) -> Self {
        self.aborted = aborted;
        self
    }
}

impl std::fmt::Debug for FetchedBytes<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FetchedBytes")
            .field("bytes", &self.bytes.len())
            .field("path", &self.path)
            .field("position", &self.position)
            .field("aborted", &self.aborted)
            .finish()
    }
}

/// Where a reader's batches come from.
#[derive(Debug)]
enum Source<'a> {
    /// Fetches from a log, again and again.
    Log(&'a Log),
    /// One fetch's bytes; `read` once they were handed out (until a seek).
    Fetched {
        fetched: FetchedBytes<'a>,
        read: bool,
    },
}

impl<'a> Source<'a> {
    fn fetched(fetched: FetchedBytes<'a>) -> Self {
        Self::Fetched {
            fetched,
            read: false,
        }
    }
}

impl Log {
    /// A borrowed record reader from `start_offset` with the default [`ReaderOptions`].
    pub fn reader(&self, start_offset: i64, isolation: Isolation) -> RecordReader<'_> {
        ReaderOptions::new(start_offset, isolation).reader(self)
    }

    /// An owned record reader from `start_offset` with the default [`ReaderOptions`]: read it
    /// with [`OwnedRecordReader::next_available`] or [`OwnedRecordReader::until_caught_up`].
    pub fn owned_reader(&self, start_offset: i64, isolation: Isolation) -> OwnedRecordReader<'_> {
        ReaderOptions::new(start_offset, isolation).owned_reader(self)
    }
}

impl Log {
    /// Tail-follow: blocks until the visible end per `isolation` (the log end offset, or the
    /// high watermark) is past `offset`, so that a read at `offset` returns data, or until
    /// `timeout` passed; `true` when it is past (or `offset` fell below the log start, where a
    /// read reports [`Error::OffsetOutOfRange`]), `false` on timeout. A broker's long-poll fetch
    /// or a consumer that caught up calls it with its reader's position
    /// ([`RecordReader::position`]).
    ///
    /// Woken by every publication of the log's state (appends, high-watermark moves, rolls,
    /// retention, truncation) and by [`Log::close`], never by a timer: no sleep loop, no
    /// polling. Blocks only the calling thread, on a condvar (no I/O); `Duration::MAX` waits
    /// without limit.
    ///
    /// # Errors
    /// [`Error::Closed`] once the log is closed (also when it closes during the wait) while
    /// the visible end is not past `offset`: nothing will be appended any more. Data already
    /// visible still returns `Ok(true)` on a closed log.
    pub fn wait_for(&self, offset: i64, isolation: Isolation, timeout: Duration) -> Result<bool> {
        let (_, end) = self
            .published
            .wait_until(|view| visible_past(view, offset, isolation), Some(timeout));
        self.wait_result(end)
    }

    /// `wait_for`'s answer for how a wait ended.
    fn wait_result(&self, end: WaitEnd) -> Result<bool> {
        match end {
            WaitEnd::Done => Ok(true),
            WaitEnd::TimedOut => Ok(false),
            WaitEnd::Closed => Err(Error::Closed {
                dir: self.dir.clone(),
            }),
        }
    }

    /// The async form of [`Log::wait_for`], for any executor (no runtime dependency): a
    /// future that completes when the visible end per `isolation` is past `offset` (or
    /// `offset` fell below the log start), woken by the same publications and by
    /// [`Log::close`]. It never blocks the executor's thread; bound it with the executor's
    /// timeout (e.g. `tokio::time::timeout`).
    ///
    /// # Errors
    /// The future's output is [`Error::Closed`] once the log is closed while the visible end
    /// is not past `offset`.
    pub fn wait_for_async(&self, offset: i64, isolation: Isolation) -> WaitFor<'_> {
        WaitFor {
            log: self,
            offset,
            isolation,
        }
    }
}

/// The future of [`Log::wait_for_async`].
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub struct WaitFor<'log> {
    log: &'log Log,
    offset: i64,
    isolation: Isolation,
}

impl std::future::Future for WaitFor<'_> {
    type Output = Result<()>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<()>> {
        let (offset, isolation) = (self.offset, self.isolation);
        match self
            .log
            .published
            .register_unless(|view| visible_past(view, offset, isolation), cx.waker())
        {
            Some(end) => std::task::Poll::Ready(self.log.wait_result(end).map(|_| ())),
            None => std::task::Poll::Pending,
        }
    }
}

/// Whether a read at `offset` would return data (or fail as out of range below the start).
fn visible_past<S>(view: &crate::view::LogView<S>, offset: i64, isolation: Isolation) -> bool {
    let end = view.visible_end(isolation);
    end > offset || offset < view.log_start_offset
}

/// Why [`RecordReader::poll`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PollEnd {
    /// Every record below the visible end was passed: the reader caught up.
    CaughtUp,
    /// The callback broke; the next poll continues after the last record it was given.
    Stopped,
}

/// One record as [`RecordReader::poll`] passes it: borrowed from the reader's buffer (an
/// uncompressed v2 batch: no copy at all) or from the batch's decompressed records.
#[derive(Debug, Clone, Copy)]
pub struct RecordView<'a> {
    inner: ViewInner<'a>,
}

#[derive(Debug, Clone, Copy)]
enum ViewInner<'a> {
    Borrowed(RecordRef<'a>),
    Decoded(&'a Record),
}

impl<'a> RecordView<'a> {
    /// Absolute offset of the record.
    pub fn offset(&self) -> i64 {
        match self.inner {
            ViewInner::Borrowed(r) => r.offset,
            ViewInner::Decoded(r) => r.offset,
        }
    }

    /// The record's timestamp (with LogAppendTime: the batch's); `None` for magic v0.
    pub fn timestamp_ms(&self) -> Option<i64> {
        match self.inner {
            ViewInner::Borrowed(r) => Some(r.timestamp_ms),
            ViewInner::Decoded(r) => r.timestamp_ms,
        }
    }

    /// The key; `None` for a null key.
    pub fn key(&self) -> Option<&'a [u8]> {
        match self.inner {
            ViewInner::Borrowed(r) => r.key,
            ViewInner::Decoded(r) => r.key.as_deref(),
        }
    }

    /// The value; `None` for a null value (a tombstone).
    pub fn value(&self) -> Option<&'a [u8]> {
        match self.inner {
            ViewInner::Borrowed(r) => r.value,
            ViewInner::Decoded(r) => r.value.as_deref(),
        }
    }

    /// The record's headers in stored order: `(key, value)`, `None` for a null value.
    pub fn headers(&self) -> impl Iterator<Item = (&'a str, Option<&'a [u8]>)> + 'a {
        let (borrowed, decoded) = match self.inner {
            ViewInner::Borrowed(r) => (Some(r.headers()), None),
            ViewInner::Decoded(r) => (None, Some(r.headers.iter().map(header_pair))),
        };
        borrowed
            .into_iter()
            .flatten()
            .chain(decoded.into_iter().flatten())
    }

    /// Copies the record into an owned [`Record`].
    pub fn to_record(&self) -> Record {
        match self.inner {
            ViewInner::Borrowed(r) => r.to_record(),
            ViewInner::Decoded(r) => r.clone(),
        }
    }
}

fn header_pair(header: &Header) -> (&str, Option<&[u8]>) {
    (header.key.as_str(), header.value.as_deref())
}

/// `read_committed`'s filter over one fetch (Kafka consumer's `CompletedFetch`): the aborted
/// transactions of the fetched range, by first offset; a producer's transactional batches are
/// dropped from its aborted transaction's first offset until its ABORT marker.
#[derive(Debug, Default)]
struct AbortFilter {
    /// Not yet reached, by first offset (descending: the next is last).
    pending: Vec<AbortedTransaction>,
    /// Producers inside an aborted transaction.
    aborted: std::collections::BTreeSet<i64>,
}

impl AbortFilter {
    /// The filter of a fetch from `from` (empty unless `isolation` is read-committed).
    fn for_fetch(log: &Log, isolation: Isolation, from: i64, upper: i64) -> Result<Self> {
        if isolation != Isolation::ReadCommitted {
            return Ok(Self::default());
        }
        let pending = log.aborted_transactions(from, upper.max(from.saturating_add(1)))?;
        Ok(Self::new(pending))
    }

    /// The filter of a fetch with these aborted transactions (any order).
    fn new(mut pending: Vec<AbortedTransaction>) -> Self {
        pending.sort_by_key(|t| std::cmp::Reverse(t.first_offset));
        Self {
            pending,
            aborted: Default::default(),
        }
    }

    /// Whether the batch's records are dropped (Kafka's `isBatchAborted`, after
    /// `consumeAbortedTransactionsUpTo` and the ABORT marker's removal).
    fn drops(&mut self, batch: &seglog_records::BatchRef<'_>) -> bool {
        let h = batch.header();
        if h.producer_id < 0 || (self.pending.is_empty() && self.aborted.is_empty()) {
            return false;
        }
        while self
            .pending
            .last()
            .is_some_and(|t| t.first_offset <= h.last_offset)
        {
            if let Some(t) = self.pending.pop() {
                self.aborted.insert(t.producer_id);
            }
        }
        if h.is_control {
            let abort = matches!(
                batch.control_record(),
                Ok(Some(c)) if c.control_type == seglog_records::ControlRecordType::Abort
            );
            if abort {
                self.aborted.remove(&h.producer_id);
            }
            return false;
        }
        h.is_transactional && self.aborted.contains(&h.producer_id)
    }
}

/// Where the bytes in a reader's buffer came from.
#[derive(Debug, Clone)]
struct Fetched {
    /// The segment's `.log`, for errors.
    path: PathBuf,
    /// File position of the buffer's first byte.
    position: u64,
}

/// What both readers keep and how both fetch and skip: the source, the options, the
/// position, the visible end where the last fetch found nothing, and the current fetch's
/// `read_committed` filter.
#[derive(Debug)]
struct ReadState<'log> {
    source: Source<'log>,
    options: ReaderOptions,
    next_offset: i64,
    /// The visible end when the last fetch found nothing (`wait`).
    caught_up_at: Option<i64>,
    /// `read_committed`'s filter of the current fetch.
    filter: AbortFilter,
}

impl<'log> ReadState<'log> {
    fn new(source: Source<'log>, options: ReaderOptions) -> Self {
        Self {
            source,
            options,
            next_offset: options.start_offset,
            caught_up_at: None,
            filter: AbortFilter::default(),
        }
    }

    /// Blocks until the visible end moves past where the last fetch that found nothing saw
    /// it (or past the position), or `timeout` passed.
    fn wait(&self, timeout: Duration) -> Result<bool> {
        let offset = self
            .caught_up_at
            .map_or(self.next_offset, |seen| seen.max(self.next_offset));
        match self.source {
            Source::Log(log) => log.wait_for(offset, self.options.isolation, timeout),
            // Nothing more arrives in a fetch held in memory: no wait.
            Source::Fetched { .. } => Ok(false),
        }
    }

    fn seek(&mut self, offset: i64) {
        self.next_offset = offset;
        self.caught_up_at = None;
        if let Source::Fetched { read, .. } = &mut self.source {
            *read = false;
        }
    }

    /// Counts records passed, for the log's records-read metric.
    fn records_read(&self, records: u64) {
        if let Source::Log(log) = self.source {
            log.metrics.records_read(records);
        }
    }

    /// Fetches from the position into `buf` (at least one whole batch, or nothing when
    /// nothing is visible there: `None`), with the fetch's `read_committed` filter.
    fn fetch(&mut self, buf: &mut Vec<u8>) -> Result<Option<Fetched>> {
        let log = match &mut self.source {
            Source::Log(log) => *log,
            Source::Fetched { fetched, read } => {
                buf.clear();
                if std::mem::replace(read, true) || fetched.bytes.is_empty() {
                    return Ok(None);
                }
                buf.extend_from_slice(fetched.bytes);
                self.filter = match self.options.isolation {
                    Isolation::ReadCommitted => AbortFilter::new(fetched.aborted.clone()),
                    _ => AbortFilter::default(),
                };
                let (path, position) = (fetched.path.clone(), fetched.position);
                if let Err(source) = seglog_records::BatchRef::parse(buf, position) {
                    return Err(Error::DamagedBatch { path, source });
                }
                return Ok(Some(Fetched { path, position }));
            }
        };
        let fetch = log.read_into(
            self.next_offset,
            self.options.fetch_bytes,
            self.options.isolation,
            true,
            buf,
        )?;
        if buf.is_empty() {
            self.caught_up_at = Some(visible_end(self.options.isolation, &fetch));
            return Ok(None);
        }
        self.caught_up_at = None;
        self.filter = AbortFilter::for_fetch(
            log,
            self.options.isolation,
            self.next_offset,
            fetch.last_stable_offset,
        )?;
        let path = file_path(
            log.dir(),
            fetch.fetch_offset.segment_base_offset,
            FileKind::LOG,
        );
        // With min_one_message the fetch holds at least one whole batch; if a damaged header
        // makes it look otherwise, the walk reports it rather than spinning.
        if let Err(source) = seglog_records::BatchRef::parse(buf, fetch.position) {
            return Err(Error::DamagedBatch { path, source });
        }
        Ok(Some(Fetched {
            path,
            position: fetch.position,
        }))
    }

    /// Whether `batch`, the next of the fetch (every batch passes through here, in order,
    /// for the abort filter), has records to pass: not wholly below the position, not
    /// aborted, and a control batch only when asked for.
    fn wants(&mut self, batch: &seglog_records::BatchRef<'_>) -> bool {
        let dropped = self.filter.drops(batch);
        let header = batch.header();
        header.last_offset >= self.next_offset
            && !dropped
            && (self.options.include_control || !header.is_control)
    }

    /// The position after `header`'s batch (its last offset + 1, over compacted gaps).
    fn step_over(&mut self, header: &BatchHeader) {
        self.next_offset = self.next_offset.max(header.next_offset());
    }
}

/// The borrowed record reader: fetches into one reused buffer with [`Log::read_into`] and
/// passes each record to a callback as a [`RecordView`] borrowing that buffer (the fast
/// path: no allocation per record or batch for uncompressed v2 batches). From
/// [`Log::reader`], [`ReaderOptions::reader`] or [`ReaderOptions::reader_over`] (one fetch's
/// bytes held in memory).
///
/// Both readers (this one and [`OwnedRecordReader`]) start at an offset and read up to the
/// visible end per [`Isolation`] (the log end, the high watermark or the last stable offset),
/// keep their position between calls, skip the records below the start inside the first
/// batch (a fetch returns whole batches), step over compacted gaps, check every batch's CRC
/// before decoding it (Kafka's `check.crcs`, on by default), bound decompression
/// ([`DEFAULT_MAX_DECOMPRESSED_BYTES`] per batch unless told otherwise), skip control batches
/// unless [`ReaderOptions::include_control`] asks for them, and with
/// [`Isolation::ReadCommitted`] drop the records of aborted transactions, as a Kafka consumer
/// does. A start outside `[log start, log end]` is [`Error::OffsetOutOfRange`].
///
/// Fetched bytes not yet passed stay buffered between polls, as a Kafka consumer's fetch
/// buffer: a truncation after the fetch does not take them back.
#[derive(Debug)]
pub struct RecordReader<'log> {
    state: ReadState<'log>,
    buf: Vec<u8>,
    fetched: Option<Fetched>,
    /// Bytes of `buf` already passed (a batch boundary).
    cursor: usize,
    /// The batch at the cursor was partly passed (the last poll stopped inside it): the
    /// next poll reads the rest of it, whatever its header says of the position.
    partial: bool,
}

impl<'log> RecordReader<'log> {
    fn new(state: ReadState<'log>) -> Self {
        Self {
            state,
            buf: Vec::new(),
            fetched: None,
            cursor: 0,
            partial: false,
        }
    }

    /// The offset the next record passed will be at or after.
    pub fn position(&self) -> i64 {
        self.state.next_offset
    }

    /// Tail-follow: after a poll that caught up, blocks until the visible end moves past
    /// where that poll found it ([`Log::wait_for`]), or `timeout` passed; `false` on
    /// timeout. Waiting on the reader rather than on its position never spins when the high
    /// watermark lies inside a batch (whose records are visible only once it passes the
    /// batch's end): each move of the visible end wakes it once.
    ///
    /// A reader over [`FetchedBytes`] returns `false` at once: nothing more arrives.
    ///
    /// # Errors
    /// [`Error::Closed`] when the log is closed and nothing more is visible (as
    /// [`Log::wait_for`]).
    pub fn wait(&self, timeout: Duration) -> Result<bool> {
        self.state.wait(timeout)
    }

    /// Moves to `offset` (checked by the next poll) and drops what is buffered.
    pub fn seek(&mut self, offset: i64) {
        self.state.seek(offset);
        self.fetched = None;
        self.cursor = 0;
        self.partial = false;
        self.buf.clear();
    }

    /// Passes every record from the position up to the visible end to `f` with its batch's
    /// header, in offset order, until `f` breaks ([`PollEnd::Stopped`]) or the reader caught
    /// up ([`PollEnd::CaughtUp`]). Never blocks on the writer; wait with [`Log::wait_for`].
    ///
    /// # Errors
    /// [`Error::OffsetOutOfRange`] (naming the log start and end) when the position is outside
    /// the log (e.g. retention deleted it); [`Error::DamagedBatch`] naming the segment file and
    /// position when a batch fails its CRC or does not decode (the position stays before it);
    /// segment I/O errors; whatever `f` returns.
    pub fn poll<E: From<Error>>(
        &mut self,
        mut f: impl FnMut(&BatchHeader, RecordView<'_>) -> std::result::Result<ControlFlow<()>, E>,
    ) -> std::result::Result<PollEnd, E> {
        loop {
            let Some(fetched) = &self.fetched else {
                if !self.fetch()? {
                    return Ok(PollEnd::CaughtUp);
                }
                continue;
            };
            let options = self.state.options;
            let rest = self.buf.get(self.cursor..).unwrap_or_default();
            let base = fetched.position + self.cursor as u64;
            let damaged = |source| Error::DamagedBatch {
                path: fetched.path.clone(),
                source,
            };
            // The fetch may end inside a batch (cut by `fetch_bytes`): Batches stops quietly.
            for batch in Batches::new(rest, base) {
                let batch = batch.map_err(damaged)?;
                let header = *batch.header();
                let len = batch.as_bytes().len();
                // A batch stopped inside was wanted (and passed the abort filter) already.
                if std::mem::take(&mut self.partial) || self.state.wants(&batch) {
                    if options.check_crcs {
                        batch.ensure_valid().map_err(damaged)?;
                    }
                    let mut stopped = None;
                    // Records passed to `f`, for the records-read metric (per batch).
                    let mut delivered = 0u64;
                    // The offset the next record passed must reach: a record below it (one
                    // already passed, or a batch whose inner offsets do not increase, as a
                    // legacy wrapper's may not) is skipped, as the owned reader and Kafka's
                    // consumer skip it.
                    let mut next = self.state.next_offset;
                    // Whether records of the batch remain after the one `f` stopped at.
                    let more;
                    if let Some(mut records) = batch.records_borrowed() {
                        for record in records.by_ref() {
                            let record = record.map_err(damaged)?;
                            if record.offset < next {
                                continue;
                            }
                            next = record.offset + 1;
                            let view = RecordView {
                                inner: ViewInner::Borrowed(record),
                            };
                            delivered += 1;
                            if f(&header, view)?.is_break() {
                                stopped = Some(record.offset);
                                break;
                            }
                        }
                        more = stopped.is_some() && records.next().is_some();
                    } else {
                        let mut records = batch.records(options.max_decompressed_bytes);
                        for record in records.by_ref() {
                            let record = record.map_err(damaged)?;
                            if record.offset < next {
                                continue;
                            }
                            next = record.offset + 1;
                            let view = RecordView {
                                inner: ViewInner::Decoded(&record),
                            };
                            delivered += 1;
                            if f(&header, view)?.is_break() {
                                stopped = Some(record.offset);
                                break;
                            }
                        }
                        more = stopped.is_some() && records.next().is_some();
                    }
                    self.state.records_read(delivered);
                    // Past every record passed, as Kafka's consumer (`nextFetchOffset`) and the
                    // owned reader: a record beyond its batch's last offset moves it further.
                    self.state.next_offset = self.state.next_offset.max(next);
                    if let Some(offset) = stopped {
                        self.state.next_offset = offset + 1;
                        // Past the batch only when nothing of it remains: a record beyond
                        // the batch's last offset (a damaged or hostile batch) may be followed
                        // by more, which the next poll reads (or fails on) as one poll would.
                        if offset >= header.last_offset && !more {
                            self.cursor += len;
                        } else {
                            self.partial = true;
                        }
                        return Ok(PollEnd::Stopped);
                    }
                }
                self.state.step_over(&header);
                self.cursor += len;
            }
            // Everything whole in the buffer is passed: fetch again from the position.
            self.fetched = None;
        }
    }

    /// Fetches from the position into the buffer; `false` when nothing is visible there.
    fn fetch(&mut self) -> Result<bool> {
        let fetched = self.state.fetch(&mut self.buf)?;
        self.cursor = 0;
        self.partial = false;
        self.fetched = fetched;
        Ok(self.fetched.is_some())
    }
}

/// A record from [`OwnedRecordReader`], with its batch's header. Key and value share the
/// fetched buffer (uncompressed) or the batch's decompressed bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedRecord {
    /// The header of the batch holding the record (control batches say so).
    pub batch: BatchHeader,
    /// The record.
    pub record: Record,
}

/// The owned record reader: yields [`FetchedRecord`]s that outlive it. From
/// [`Log::owned_reader`], [`ReaderOptions::owned_reader`] or
/// [`ReaderOptions::owned_reader_over`]; it reads as [`RecordReader`]
/// does (isolation, position, compacted gaps, CRCs, control batches, aborted transactions).
///
/// A log has no end, only a visible end that moves: [`Self::next_available`] returns
/// [`NextRecord::CaughtUp`] when every visible record was yielded, and later records once more
/// is appended ([`Self::wait`] blocks until then). [`Self::until_caught_up`] is the same as an
/// [`Iterator`], ending where the reader caught up:
///
/// ```
/// use seglog::{BatchBuilder, Isolation, Log, LogConfig, NextRecord};
///
/// let dir = tempfile::tempdir()?;
/// let log = Log::open(dir.path(), LogConfig::default())?;
/// let mut reader = log.owned_reader(0, Isolation::LogEnd);
/// assert_eq!(reader.next_available()?, NextRecord::CaughtUp);
///
/// let mut batch = BatchBuilder::new(0);
/// batch.append(0, None, Some(b"a"), &[]);
/// batch.append(0, None, Some(b"b"), &[]);
/// log.append(&batch.build()?)?;
/// // Caught up is not finished: the same reader now yields what was appended.
/// let NextRecord::Record(first) = reader.next_available()? else { unreachable!() };
/// assert_eq!(first.record.offset, 0);
/// let rest: Vec<_> = reader.until_caught_up().collect::<seglog::Result<_>>()?;
/// assert_eq!(rest.len(), 1);
/// assert_eq!(reader.position(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct OwnedRecordReader<'log> {
    state: ReadState<'log>,
    batches: Option<(OwnedBatches, PathBuf)>,
    current: Option<(BatchHeader, Records, PathBuf)>,
}

/// What [`OwnedRecordReader::next_available`] found at the reader's position.
// The record is returned by value, as an `Option<FetchedRecord>` would be: boxing it to shrink
// `CaughtUp` would cost an allocation per record.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum NextRecord {
    /// The next record (the reader moved past it).
    Record(FetchedRecord),
    /// Every record below the visible end was yielded: the reader caught up. It is not
    /// finished: once more is appended (or the high watermark or last stable offset moves) the
    /// next call yields it; [`OwnedRecordReader::wait`] blocks until then.
    CaughtUp,
}

impl NextRecord {
    /// The record, or `None` when the reader caught up.
    pub fn into_record(self) -> Option<FetchedRecord> {
        match self {
            NextRecord::Record(record) => Some(record),
            NextRecord::CaughtUp => None,
        }
    }
}

impl<'log> OwnedRecordReader<'log> {
    fn new(state: ReadState<'log>) -> Self {
        Self {
            state,
            batches: None,
            current: None,
        }
    }

    /// The offset the next record yielded will be at or after.
    pub fn position(&self) -> i64 {
        self.state.next_offset
    }

    /// The next record at or after the position, or [`NextRecord::CaughtUp`] when every record
    /// below the visible end (per the reader's [`Isolation`]) was yielded. Never blocks on the
    /// writer; wait with [`Self::wait`].
    ///
    /// # Errors
    /// [`Error::OffsetOutOfRange`] (naming the log start and end) when the position is outside
    /// the log (e.g. retention deleted it); [`Error::DamagedBatch`] naming the segment file and
    /// position when a batch fails its CRC or does not decode; segment I/O errors. The position
    /// stays before what failed: calling again retries it, [`Self::seek`] moves on.
    pub fn next_available(&mut self) -> Result<NextRecord> {
        match self.next_record() {
            Ok(Some(record)) => Ok(NextRecord::Record(record)),
            Ok(None) => Ok(NextRecord::CaughtUp),
            Err(e) => {
                // Refetch from the position on the next call.
                self.current = None;
                self.batches = None;
                Err(e)
            }
        }
    }

    /// The records from the position up to where the reader catches up, as an [`Iterator`]:
    /// it ends at [`NextRecord::CaughtUp`] or after yielding an `Err`. The reader keeps its
    /// position; a later `until_caught_up` (or [`Self::next_available`]) continues from there.
    pub fn until_caught_up(&mut self) -> UntilCaughtUp<'_, 'log> {
        UntilCaughtUp {
            reader: self,
            ended: false,
        }
    }

    /// [`RecordReader::wait`]: after [`NextRecord::CaughtUp`], blocks until the visible end
    /// moves past where that fetch found it, or `timeout` passed; `false` on timeout (at once
    /// over [`FetchedBytes`]).
    ///
    /// # Errors
    /// [`Error::Closed`] when the log is closed and nothing more is visible.
    pub fn wait(&self, timeout: Duration) -> Result<bool> {
        self.state.wait(timeout)
    }

    /// Moves to `offset` (checked by the next fetch) and drops what is buffered.
    pub fn seek(&mut self, offset: i64) {
        self.state.seek(offset);
        self.batches = None;
        self.current = None;
    }

    fn next_record(&mut self) -> Result<Option<FetchedRecord>> {
        loop {
            if let Some((header, records, path)) = &mut self.current {
                match records.next() {
                    Some(Ok(record)) if record.offset < self.state.next_offset => continue,
                    Some(Ok(record)) => {
                        self.state.next_offset = record.offset + 1;
                        self.state.records_read(1);
                        return Ok(Some(FetchedRecord {
                            batch: *header,
                            record,
                        }));
                    }
                    Some(Err(source)) => {
                        return Err(Error::DamagedBatch {
                            path: path.clone(),
                            source,
                        });
                    }
                    None => {
                        self.state.step_over(header);
                        self.current = None;
                    }
                }
            }
            if let Some((batches, path)) = &mut self.batches {
                match batches.next() {
                    Some(Ok(batch)) => {
                        let header = *batch.header();
                        if !self.state.wants(&batch.as_batch_ref()) {
                            self.state.step_over(&header);
                            continue;
                        }
                        if self.state.options.check_crcs {
                            batch.ensure_valid().map_err(|source| Error::DamagedBatch {
                                path: path.clone(),
                                source,
                            })?;
                        }
                        let records = batch.records(self.state.options.max_decompressed_bytes);
                        self.current = Some((header, records, path.clone()));
                    }
                    Some(Err(source)) => {
                        return Err(Error::DamagedBatch {
                            path: path.clone(),
                            source,
                        });
                    }
                    None => self.batches = None,
                }
                continue;
            }
            let mut buf = Vec::new();
            let Some(fetched) = self.state.fetch(&mut buf)? else {
                return Ok(None);
            };
            self.batches = Some((
                OwnedBatches::new(Bytes::from(buf), fetched.position),
                fetched.path,
            ));
        }
    }
}

/// [`OwnedRecordReader::until_caught_up`]'s iterator: the reader's records up to where it
/// caught up (then `None`), or up to and including the first error.
#[derive(Debug)]
pub struct UntilCaughtUp<'r, 'log> {
    reader: &'r mut OwnedRecordReader<'log>,
    ended: bool,
}

impl Iterator for UntilCaughtUp<'_, '_> {
    type Item = Result<FetchedRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.ended {
            return None;
        }
        match self.reader.next_available() {
            Ok(NextRecord::Record(record)) => Some(Ok(record)),
            Ok(NextRecord::CaughtUp) => {
                self.ended = true;
                None
            }
            Err(e) => {
                self.ended = true;
                Some(Err(e))
            }
        }
    }
}

impl std::iter::FusedIterator for UntilCaughtUp<'_, '_> {}

/// The visible end a fetch was planned against.
fn visible_end(isolation: Isolation, fetch: &crate::CopiedFetch) -> i64 {
    match isolation {
        Isolation::LogEnd => fetch.log_end_offset,
        Isolation::ReadUncommitted => fetch.high_watermark,
        Isolation::ReadCommitted => fetch.last_stable_offset,
    }
}

#[cfg(test)]
mod tests {
    use std::ops::ControlFlow;

    use seglog_records::{BatchBuilder, Compression, ControlRecordType, EndTransactionMarker};

    use super::*;

    type Seen = Vec<(i64, Option<Vec<u8>>)>;

    /// A plain batch at 0 (3 records), a transaction of producer 7 at 3-4 aborted by the
    /// marker at 5, a gzip batch at 6-7: one fetch's bytes.
    fn fetch_bytes() -> Vec<u8> {
        let mut out = Vec::new();
        let mut plain = BatchBuilder::new(0);
        for i in 0..3u8 {
            plain.append(1_000 + i64::from(i), Some(&[i]), Some(&[b'p', i]), &[]);
        }
        out.extend_from_slice(&plain.build().unwrap());
        let mut txn = BatchBuilder::new(3).producer(7, 0, 0).transactional(true);
        txn.append(1_003, Some(b"t"), Some(b"t0"), &[]);
        txn.append(1_004, Some(b"t"), Some(b"t1"), &[]);
        out.extend_from_slice(&txn.build().unwrap());
        let abort = BatchBuilder::end_transaction_marker(
            5,
            1_005,
            -1,
            7,
            0,
            ControlRecordType::Abort,
            EndTransactionMarker::new(0),
        )
        .unwrap();
        out.extend_from_slice(&abort);
        let mut gzip = BatchBuilder::new(6).compression(Compression::Gzip);
        gzip.append(1_006, Some(b"g"), Some(b"g0"), &[]);
        gzip.append(1_007, Some(b"g"), Some(b"g1"), &[]);
        out.extend_from_slice(&gzip.build().unwrap());
        out
    }

    fn borrowed(mut reader: RecordReader<'_>) -> (Seen, bool) {
        let mut out = Vec::new();
        let result = reader.poll::<Error>(|_, r| {
            out.push((r.offset(), r.value().map(<[u8]>::to_vec)));
            Ok(ControlFlow::Continue(()))
        });
        assert!(!reader.wait(Duration::from_secs(60)).unwrap(), "it waited");
        (out, result.is_err())
    }

    fn owned(mut reader: OwnedRecordReader<'_>) -> (Seen, bool) {
        let mut out = Vec::new();
        for r in reader.until_caught_up() {
            match r {
                Ok(r) => out.push((r.record.offset, r.record.value.map(|v| v.to_vec()))),
                Err(_) => return (out, true),
            }
        }
        (out, false)
    }

    fn values(seen: &Seen) -> Vec<i64> {
        seen.iter().map(|r| r.0).collect()
    }

    #[test]
    fn readers_over_fetched_bytes_skip_filter_and_agree() {
        let bytes = fetch_bytes();
        let aborted = vec![AbortedTransaction {
            producer_id: 7,
            first_offset: 3,
        }];
        let fetched =
            || FetchedBytes::new(&bytes, "t-0/00.log", 0).aborted_transactions(aborted.clone());
        for (start, isolation, expected) in [
            (0, Isolation::LogEnd, vec![0, 1, 2, 3, 4, 6, 7]),
            (1, Isolation::ReadUncommitted, vec![1, 2, 3, 4, 6, 7]),
            (0, Isolation::ReadCommitted, vec![0, 1, 2, 6, 7]),
            (7, Isolation::ReadCommitted, vec![7]),
            (8, Isolation::LogEnd, vec![]),
        ] {
            let options = ReaderOptions::new(start, isolation);
            let (b, b_failed) = borrowed(options.reader_over(fetched()));
            let (o, o_failed) = owned(options.owned_reader_over(fetched()));
            assert_eq!(values(&b), expected, "from {start}, {isolation:?}");
            assert_eq!(b, o, "the readers disagree from {start}, {isolation:?}");
            assert!(!b_failed && !o_failed);
        }
        let (with_control, _) = owned(
            ReaderOptions::new(0, Isolation::ReadCommitted)
                .include_control(true)
                .owned_reader_over(fetched()),
        );
        assert_eq!(values(&with_control), [0, 1, 2, 5, 6, 7]);
    }

    #[test]
    fn a_reader_over_fetched_bytes_reads_them_once_and_again_after_a_seek() {
        let bytes = fetch_bytes();
        let mut reader = ReaderOptions::new(0, Isolation::LogEnd)
            .owned_reader_over(FetchedBytes::new(&bytes, "f", 0));
        assert_eq!(reader.until_caught_up().count(), 7);
        assert_eq!(
            reader.next_available().unwrap(),
            NextRecord::CaughtUp,
            "nothing more arrives"
        );
        reader.seek(6);
        let again: Vec<i64> = reader
            .until_caught_up()
            .map(|r| r.unwrap().record.offset)
            .collect();
        assert_eq!(again, [6, 7]);

        let mut reader =
            ReaderOptions::new(0, Isolation::LogEnd).reader_over(FetchedBytes::new(&bytes, "f", 0));
        let mut first = Vec::new();
        let end = reader
            .poll::<Error>(|_, r| {
                first.push(r.offset());
                Ok(if r.offset() == 3 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                })
            })
            .unwrap();
        assert_eq!((end, first), (PollEnd::Stopped, vec![0, 1, 2, 3]));
        let (rest, _) = borrowed(reader);
        assert_eq!(
            values(&rest),
            [4, 6, 7],
            "it resumes after the record it stopped at"
        );
    }

    /// Found by the `record_readers` fuzz target (its input is a regression seed): a batch
    /// whose second record lies beyond the batch's last offset, followed by more records. A
    /// poll stopped at that record skipped the rest of the batch (the records after it, and
    /// the damage one poll and the owned reader fail on), as the batch looked passed.
    #[test]
    fn a_poll_stopped_at_a_record_beyond_its_batch_reads_the_rest_of_the_batch() {
        let mut builder = BatchBuilder::new(0);
        for key in [b"a", b"b", b"c"] {
            builder.append(1_000, Some(key), Some(b"v"), &[]);
        }
        let mut bytes = builder.build().unwrap().to_vec();
        // Each record: length, attributes, timestamp delta (0), offset delta, key length
        // (1), key, value length (1), value, header count: 9 bytes, from byte 61.
        let record = |i: usize| 61 + i * 9;
        bytes[record(1) + 3] = 2 * 40; // offset delta 40 (zigzag): offsets 0, 40, 2
        let damaged = bytes.clone();
        bytes[record(2) + 3] = 2 * 50; // offsets 0, 40, 50
        let mut damaged = damaged;
        damaged[record(2) + 4] = 2 * 60; // key length 60: past the record's end
        for bytes in [&mut bytes, &mut damaged] {
            let crc = seglog_records::crc32c(&bytes[21..]);
            bytes[17..21].copy_from_slice(&crc.to_be_bytes());
        }
        for (bytes, expected, fails) in [
            (&bytes, vec![0, 40, 50], false),
            (&damaged, vec![0, 40], true),
        ] {
            let options = ReaderOptions::new(0, Isolation::LogEnd);
            let fetched = || FetchedBytes::new(bytes, "f", 0);
            let (all, all_failed) = borrowed(options.reader_over(fetched()));
            let (each, each_failed) = owned(options.owned_reader_over(fetched()));
            assert_eq!((values(&all), all_failed), (expected.clone(), fails));
            assert_eq!((values(&each), each_failed), (expected.clone(), fails));
            // Stopped after every record, polled again.
            let mut reader = options.reader_over(fetched());
            let mut stepped = Vec::new();
            let failed = loop {
                match reader.poll::<Error>(|_, r| {
                    stepped.push(r.offset());
                    Ok(ControlFlow::Break(()))
                }) {
                    Ok(PollEnd::Stopped) => continue,
                    Ok(_) => break false,
                    Err(_) => break true,
                }
            };
            assert_eq!(
                (stepped, failed),
                (expected, fails),
                "stopping after every record"
            );
        }
    }

    #[test]
    fn a_damaged_batch_in_fetched_bytes_is_an_error_naming_its_file_and_position() {
        let mut bytes = fetch_bytes();
        let last = bytes.len() - 1;
        bytes[last] ^= 0x55;
        let fetched = || FetchedBytes::new(&bytes, "t-0/00000000000000000000.log", 4096);
        let options = ReaderOptions::new(0, Isolation::LogEnd);
        let (b, b_failed) = borrowed(options.reader_over(fetched()));
        let (o, o_failed) = owned(options.owned_reader_over(fetched()));
        assert_eq!(values(&b), [0, 1, 2, 3, 4]);
        assert_eq!((b, b_failed), (o, o_failed));
        assert!(b_failed);
        let err = options
            .owned_reader_over(fetched())
            .until_caught_up()
            .find_map(Result::err)
            .unwrap();
        match err {
            Error::DamagedBatch { path, source } => {
                assert_eq!(path, PathBuf::from("t-0/00000000000000000000.log"));
                assert!(source.to_string().contains("4"), "{source}");
            }
            other => panic!("not a damaged batch: {other}"),
        }
    }
}
