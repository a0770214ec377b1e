//! The state behind a log's async durability waiters (`durable_async.rs`): a leaf, so that
//! `Log` can hold it without the module that implements the futures.

use std::task::Waker;

use crate::sync::Mutex;

/// The async waiters of one log and whether its sync thread runs.
#[derive(Debug)]
pub(crate) struct AsyncCommit {
    pub(crate) state: Mutex<AsyncState>,
}

impl Default for AsyncCommit {
    fn default() -> Self {
        Self {
            state: Mutex::new(AsyncState::default()),
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct AsyncState {
    /// The sync thread is running (or starting).
    pub(crate) running: bool,
    /// The highest end offset a pending waiter needs durable.
    pub(crate) wanted: i64,
    /// The pending waiters, woken after every sync round.
    pub(crate) wakers: Vec<Waker>,
}
