//! Running child commands with a visible echo and a clear failure message.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root (the parent of `xtask/`).
pub fn workspace_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}

/// A `cargo` command rooted at the workspace, using the same cargo that runs xtask.
pub fn cargo() -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command.current_dir(workspace_root());
    command
}

/// Runs `command`, echoing it first; an error names the command and its exit status.
pub fn run(mut command: Command) -> Result<(), String> {
    let shown = show(&command);
    eprintln!("\n$ {shown}");
    let status = command
        .status()
        .map_err(|error| format!("could not start `{shown}`: {error}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{shown}` failed with {status}"))
    }
}

fn show(command: &Command) -> String {
    let envs = command
        .get_envs()
        .filter_map(|(key, value)| Some(format!("{}={}", key.to_str()?, value?.to_str()?)));
    let program = std::iter::once(command.get_program().to_string_lossy().into_owned());
    let args = command
        .get_args()
        .map(|arg| arg.to_string_lossy().into_owned());
    envs.chain(program)
        .chain(args)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Parses `--name VALUE` from `args`, or returns `default` when absent.
pub fn flag_value(args: &[String], name: &str, default: u64) -> Result<u64, String> {
    match args.iter().position(|arg| arg == name) {
        None => Ok(default),
        Some(index) => {
            let value = args
                .get(index + 1)
                .ok_or_else(|| format!("{name} needs a value"))?;
            value
                .parse()
                .map_err(|_| format!("{name} takes a whole number, got `{value}`"))
        }
    }
}
