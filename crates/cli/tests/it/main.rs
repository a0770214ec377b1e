//! Integration tests of the `seglog` binary (run for real), one module per topic.

// Test helpers outside `#[test]` functions unwrap too: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod bounded_descriptors;
mod bounded_memory;
mod compact;
mod corpus;
mod corpus_read;
mod damage_reports;
mod full_disk;
mod hostile;
mod kafka_fixtures;
mod kafka_txn_compacted;
mod leader_epochs;
mod leftovers;
mod live_writer;
mod produce_read;
mod recover_agrees;
mod recover_root;
mod repair;
mod repair_policy;
mod state_files;
mod support;
mod tier;
mod tier_reads;
mod transactions;
mod txn_index_damage;
mod usage;
mod verbose;
mod verify;
mod verify_legacy;
mod walker;
