//! Integration tests: they run the real `seglog` binary.

mod corpus;
mod support;
mod usage;
mod verify;
mod walker;
