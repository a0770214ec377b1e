//! The cache of sealed segments' timestamps the log cleaner's planner reads
//! (`cleaner/stats.rs` fills and uses it). A leaf module: the `Log` holds one, and the cleaner
//! depends on the log, not the other way round.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use seglog_segment::Segment;

/// Timestamps of sealed segments, by base offset.
#[derive(Debug, Default)]
pub(crate) struct StatCache {
    pub(crate) entries: HashMap<i64, Cached>,
}

/// One sealed segment's cached timestamps (`None`: not read yet).
#[derive(Debug)]
pub(crate) struct Cached {
    /// The segment the values belong to (a weak reference keeps its address from being
    /// reused by another segment while the entry exists).
    pub(crate) segment: Weak<Segment>,
    /// The log's truncation count when the values were read.
    pub(crate) truncations: u64,
    pub(crate) largest_timestamp_ms: Option<i64>,
    pub(crate) first_batch_timestamp_ms: Option<i64>,
}

impl Cached {
    pub(crate) fn new(segment: &Arc<Segment>, truncations: u64) -> Cached {
        Cached {
            segment: Arc::downgrade(segment),
            truncations,
            largest_timestamp_ms: None,
            first_batch_timestamp_ms: None,
        }
    }
}
