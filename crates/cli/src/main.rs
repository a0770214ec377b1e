//! The `seglog` binary: parse the command line, run it, map the outcome to an exit code.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;
use seglog_cli::{Cli, Outcome};

fn main() -> ExitCode {
    let cli = Cli::parse();
    seglog_cli::logging::init(cli.verbose);
    // `seglog read | head` closing the pipe is how a reader is stopped; a command that writes
    // the log and is cut off the same way has not done all it was asked, so it fails.
    let read_only = cli.command.is_read_only();
    match seglog_cli::run(cli) {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::ProblemsFound) => ExitCode::from(1),
        Err(e) if e.is_broken_pipe() && read_only => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("seglog: error: {}", e.one_line());
            ExitCode::from(e.exit_code())
        }
    }
}
