//! Integration tests of the `seglog` crate, one module per topic.

// Test helpers outside `#[test]` functions unwrap too: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod appends;
mod async_durable;
mod bulk_append;
mod by_timestamp;
mod compaction;
mod concurrency;
mod consumer;
mod corpus;
mod discontinuity;
mod durability;
mod high_watermark;
mod kafka_bugs;
mod leader_epochs;
mod legacy_cleaning;
mod lock;
mod log_dir;
mod log_dir_recovery;
mod many_segments;
mod model;
mod poisoning;
mod producer_api;
mod producer_combos;
mod producer_model;
mod producer_snapshots;
mod producers;
// Kafka's log metrics through the Prometheus example (`--features metrics`).
#[cfg(feature = "metrics")]
mod prometheus;
mod read_into;
mod recovery_reads;
mod reopen;
mod retention;
mod syscalls;
mod tiered;
mod truncation;
mod txn_atomic;
mod txn_compaction;
mod txn_index_check;
mod txn_v2;
