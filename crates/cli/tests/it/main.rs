//! Integration tests: they run the real `seglog` binary.

mod corpus;
mod corpus_read;
mod produce_read;
mod repair;
mod support;
mod usage;
mod verify;
mod walker;
