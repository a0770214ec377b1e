//! Integration tests of `seglog-segment`, one module per topic.

// Loom builds replace the segment's atomics with loom's, usable only inside loom models.
#![cfg(not(loom))]
// clippy.toml allows these inside `#[test]` functions only; the helpers here are test code too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod append_read;
mod cache;
mod concurrency;
mod corpus;
mod faults;
mod find_by_timestamp;
mod heap_allocations;
mod kafka_bugs;
mod model;
mod read_into;
mod recovery;
mod support;
mod trusted_open;
