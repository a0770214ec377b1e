//! seglog-raft's integration tests: openraft's own storage suite, reopen and crash tests
//! (`crash`: a real child process killed with SIGKILL), the batching `Proposer` on in-process
//! clusters, and a three-node cluster of the `kv` example.

// Test helpers outside `#[test]` functions unwrap too: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cluster;
mod common;
mod crash;
mod one_node;
mod power_loss;
mod proposer;
mod store;
mod suite;
