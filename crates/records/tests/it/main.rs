//! Integration tests of `seglog-records`, one module per topic.

// Helpers outside `#[test]` functions panic on purpose: a failed helper is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod borrowed;
mod corpus;
mod corruption;
mod cross_check;
mod support;
mod vectors;
