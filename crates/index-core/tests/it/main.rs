//! Integration tests for `seglog-index-core`, one module per topic.

// Helpers outside `#[test]` functions panic on purpose: a failed helper is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod allocation;
mod concurrency;
mod golden;
mod read_only;
mod reopen;
mod search_oracle;
mod tidy;
