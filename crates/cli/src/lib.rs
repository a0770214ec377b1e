//! The `seglog` command-line tool, as a library: the clap interface, the JSON line types,
//! input parsing and one module per subcommand. The `seglog` binary only parses, calls
//! [`run`] and maps the [`Outcome`] or [`Error`] to an exit code (0 ok, 1 problems found, 2 bad
//! usage or input).
//!
//! The command-line interface (subcommand names, flags, JSON field names, exit codes) is a
//! contract that scripts rely on: it only ever grows.
//!
//! It deliberately does not implement storage: `produce`, `read`, `info`, `recover`,
//! `retain` and `demo` go through the `seglog` log crate; `dump` and `verify` walk files
//! directly with `seglog-records` and `seglog-index-core` so they can show (and judge)
//! bytes the log layer would refuse or repair.
//!
//! ```
//! use clap::Parser;
//! use seglog_cli::{Cli, Command};
//!
//! let cli = Cli::try_parse_from(["seglog", "read", "/data/orders-0", "--from", "10", "--json"])?;
//! assert!(matches!(cli.command, Command::Read(ref args) if args.from == Some(10) && args.json));
//! # Ok::<(), clap::Error>(())
//! ```

#![forbid(unsafe_code)]

mod cli;
mod cmd;
mod dir;
mod encoding;
mod error;
mod input;
mod log_stream;
pub mod logging;
mod output;
mod progress;
mod remote;
mod scan;
mod view;

pub use cli::{
    Cli, Command, CompressionArg, DemoArgs, DumpArgs, Encoding, InfoArgs, ProduceArgs, ReadArgs,
    RecoverArgs, RemoteArgs, RetainArgs, TierAction, TierArgs, TierCopyArgs, TierTarget,
    VerifyArgs,
};
pub use cmd::info::{LogInfo, RemoteInfo, RemoteSegmentLine, SegmentLine, Totals, log_info};
pub use cmd::produce::{ProduceSummary, config_from_args, fill_value, now_ms};
pub use cmd::recover::{
    CheckpointLine, GapLine, RecoverReport, SegmentRecovery, SplitLine, recover_dir,
    recover_dir_with,
};
pub use cmd::retain::{DeletedLine, RetainReport};
pub use cmd::tier::{RemoteLine, TierReport, TierStatus};
pub use cmd::verify::{Note, Problem, ProblemKind, VerifyReport, verify_dir, verify_dir_with};
pub use dir::{DirListing, SegmentFiles};
pub use error::{Error, InputErrorKind, OneLine};
pub use input::{InputRecord, JsonLines};
pub use log_stream::DEFAULT_MAX_BATCH_BYTES;
pub use output::{AppendedLine, Out, RecordLine, TimestampTypeName};
pub use progress::Progress;
pub use scan::{for_each_record, for_each_record_with};

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// How a subcommand ended when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything as expected (exit 0).
    Ok,
    /// The command ran and found problems, e.g. `verify` on a damaged log (exit 1).
    ProblemsFound,
}

/// Runs a parsed command line.
///
/// # Errors
/// Any [`Error`]: bad arguments, missing or unreadable paths, bad input, storage errors.
pub fn run(cli: Cli) -> Result<Outcome> {
    match &cli.command {
        Command::Produce(args) => cmd::produce::run(args, cli.quiet),
        Command::Read(args) => cmd::read::run(args, cli.quiet),
        Command::Info(args) => cmd::info::run(args),
        Command::Dump(args) => cmd::dump::run(args),
        Command::Verify(args) => cmd::verify::run(args, cli.quiet),
        Command::Recover(args) => cmd::recover::run(args, cli.quiet),
        Command::Retain(args) => cmd::retain::run(args),
        Command::Truncate(args) => cmd::truncate::run(args),
        Command::Marker(args) => cmd::marker::run(args),
        Command::Compact(args) => cmd::compact::run(args),
        Command::Demo(args) => cmd::demo::run(args, cli.quiet),
        Command::Tier(args) => cmd::tier::run(args),
    }
}

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
mod readme {}
