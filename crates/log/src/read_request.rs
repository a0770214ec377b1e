//! [`ReadRequest`]: [`Log::read`]'s arguments, named at the call site.

use crate::Result;
use crate::consumer::DEFAULT_FETCH_BYTES;
use crate::log::Log;
use crate::read::{CopiedFetch, FetchData};
use crate::view::Isolation;

/// One read (Kafka's fetch of one partition) for [`Log::read_request`] /
/// [`Log::read_request_into`]:
///
/// ```
/// # use seglog::{Isolation, Log, LogConfig, ReadRequest};
/// # let dir = tempfile::tempdir()?;
/// # let log = Log::open(dir.path().join("orders-0"), LogConfig::default())?;
/// let fetched = log.read_request(
///     &ReadRequest::new(0, Isolation::ReadUncommitted)
///         .max_bytes(64 << 10)
///         .min_one_message(true),
/// )?;
/// assert!(fetched.slice.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadRequest {
    /// The first offset wanted (the read starts at the batch holding it).
    pub start_offset: i64,
    /// At most this many bytes (but see `min_one_message`). Default: [`DEFAULT_FETCH_BYTES`].
    pub max_bytes: u32,
    /// How far the read may go: the log end or the high watermark.
    pub isolation: Isolation,
    /// Return the first batch whole even when it is larger than `max_bytes` (Kafka's
    /// `minOneMessage`, true for the first partition of a fetch). Default: true.
    pub min_one_message: bool,
}

impl ReadRequest {
    /// A read from `start_offset` bounded per `isolation`, with the defaults.
    pub fn new(start_offset: i64, isolation: Isolation) -> Self {
        Self {
            start_offset,
            max_bytes: DEFAULT_FETCH_BYTES,
            isolation,
            min_one_message: true,
        }
    }

    /// Sets `max_bytes`.
    #[must_use]
    pub fn max_bytes(mut self, max_bytes: u32) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Sets `min_one_message`.
    #[must_use]
    pub fn min_one_message(mut self, min_one_message: bool) -> Self {
        self.min_one_message = min_one_message;
        self
    }
}

impl Log {
    /// [`Log::read`] with its arguments in a [`ReadRequest`].
    ///
    /// # Errors
    /// As [`Log::read`].
    pub fn read_request(&self, request: &ReadRequest) -> Result<FetchData> {
        self.read(
            request.start_offset,
            request.max_bytes,
            request.isolation,
            request.min_one_message,
        )
    }

    /// [`Log::read_into`] with its arguments in a [`ReadRequest`].
    ///
    /// # Errors
    /// As [`Log::read_into`].
    pub fn read_request_into(
        &self,
        request: &ReadRequest,
        buf: &mut Vec<u8>,
    ) -> Result<CopiedFetch> {
        self.read_into(
            request.start_offset,
            request.max_bytes,
            request.isolation,
            request.min_one_message,
            buf,
        )
    }
}
