//! The reliability suites. Each module is one suite; the short versions run by default, the
//! long versions through environment variables (see `docs/durability.md` and `cargo xtask
//! crash`).

// clippy.toml allows these inside `#[test]` functions only; the helpers here are test code too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod bad_input;
mod compaction;
mod concurrency;
mod corruption;
mod crash;
mod fuzz;
mod io_faults;
mod kafka_bugs;
mod power_loss;
mod support;
