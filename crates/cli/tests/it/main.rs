//! Integration tests: they run the real `seglog` binary.

mod support;
mod walker;
