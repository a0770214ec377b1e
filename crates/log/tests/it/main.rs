//! Integration tests of the `seglog` crate, one module per topic.

mod support;

mod appends;
mod concurrency;
mod corpus;
mod kafka_bugs;
mod log_dir;
mod model;
mod reopen;
mod retention;
mod truncation;
