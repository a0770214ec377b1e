//! The `seglog` binary: parse the command line, run it, map the outcome to an exit code.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;
use seglog_cli::{Cli, Outcome};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match seglog_cli::run(cli) {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::ProblemsFound) => ExitCode::from(1),
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("seglog: error: {}", e.one_line());
            ExitCode::from(e.exit_code())
        }
    }
}
