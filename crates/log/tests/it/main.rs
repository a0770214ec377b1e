//! Integration tests of the `seglog` crate, one module per topic.

mod support;

mod appends;
mod corpus;
mod reopen;
