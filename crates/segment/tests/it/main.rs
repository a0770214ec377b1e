//! Integration tests of `seglog-segment`, one module per topic.

mod corpus;
mod support;
