//! seglog-tiered's integration tests: a real `seglog::Log` tiered into a real store.

// Test helpers outside `#[test]` functions unwrap too: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod epoch_lineage;
mod fetch_quota;
mod kafka_tiered;
mod log_tier;
#[cfg(feature = "aws")]
mod s3;
#[cfg(feature = "aws")]
mod seaweedfs;
