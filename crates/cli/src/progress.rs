//! Progress bars on stderr, drawn only when stderr is a terminal and `--quiet` is off. They
//! share one `MultiProgress` with the `-v` event output (`logging.rs`), which hides them while
//! it writes a line.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// A progress bar that may be hidden; all methods are no-ops when hidden.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A bar counting `total` bytes.
    pub fn bytes(total: u64, message: &str, quiet: bool) -> Self {
        Self::new(
            total,
            message,
            quiet,
            "{msg:>10} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        )
    }

    /// A bar counting `total` records.
    pub fn records(total: u64, message: &str, quiet: bool) -> Self {
        Self::new(
            total,
            message,
            quiet,
            "{msg:>10} [{bar:40}] {human_pos}/{human_len} records {per_sec} eta {eta}",
        )
    }

    /// A bar counting `total` partitions (of a `log.dirs` root), its message the last one
    /// done.
    pub fn partitions(total: u64, message: &str, quiet: bool) -> Self {
        Self::new(
            total,
            message,
            quiet,
            "{msg:>10} [{bar:40}] {human_pos}/{human_len} partitions {per_sec} eta {eta}",
        )
    }

    /// A hidden bar.
    pub fn hidden() -> Self {
        Progress { bar: None }
    }

    fn new(total: u64, message: &str, quiet: bool, template: &str) -> Self {
        if quiet || !std::io::stderr().is_terminal() {
            return Self::hidden();
        }
        let bar = crate::logging::bars().add(ProgressBar::new(total));
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(message.to_owned());
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress { bar: Some(bar) }
    }

    /// Advances by `n`.
    pub fn inc(&self, n: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(n);
        }
    }

    /// Sets the message shown before the bar.
    pub fn message(&self, message: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(message.to_owned());
        }
    }

    /// Sets the position to `n`.
    pub fn set(&self, n: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(n);
        }
    }

    /// Removes the bar from the terminal.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
            crate::logging::bars().remove(bar);
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
