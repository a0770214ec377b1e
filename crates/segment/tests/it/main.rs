//! Integration tests of `seglog-segment`, one module per topic.

mod append_read;
mod corpus;
mod kafka_bugs;
mod model;
mod recovery;
mod support;
