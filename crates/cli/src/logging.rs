//! `-v` / `-vv` / `-vvv` (or `RUST_LOG`): the log crates' `tracing` events on stderr, through
//! `tracing-subscriber`, drawn above the progress bars.
//!
//! Every bar of [`crate::Progress`] lives in one process-wide [`MultiProgress`]; an event is
//! written while the bars are hidden ([`MultiProgress::suspend`]), so a line of log output
//! never lands in the middle of a bar and the bars are redrawn below it.

use std::io::{IsTerminal, Write};
use std::sync::OnceLock;

use indicatif::MultiProgress;
use tracing_subscriber::EnvFilter;

/// The bars' common owner (see the module docs).
pub(crate) fn bars() -> &'static MultiProgress {
    static BARS: OnceLock<MultiProgress> = OnceLock::new();
    BARS.get_or_init(MultiProgress::new)
}

/// The filter for `verbose` `-v` flags: `RUST_LOG` when it is set (it wins, as usual), else
/// nothing without `-v`, INFO with `-v`, DEBUG with `-vv`, TRACE with `-vvv`.
pub fn filter(verbose: u8, rust_log: Option<&str>) -> Option<EnvFilter> {
    if let Some(directives) = rust_log.filter(|d| !d.trim().is_empty()) {
        return Some(EnvFilter::new(directives));
    }
    let level = match verbose {
        0 => return None,
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    Some(EnvFilter::new(level))
}

/// Installs the stderr subscriber for `verbose` (see [`filter`]); does nothing when no event
/// is wanted, or when a subscriber is already installed.
pub fn init(verbose: u8) {
    let rust_log = std::env::var("RUST_LOG").ok();
    let Some(filter) = filter(verbose, rust_log.as_deref()) else {
        return;
    };
    // An error means a subscriber is already set (an embedding program's): keep it.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| AboveBars)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .try_init();
}

/// stderr, written while the progress bars are hidden.
struct AboveBars;

impl Write for AboveBars {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        bars().suspend(|| std::io::stderr().write_all(buf))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_log_wins_and_each_v_lowers_the_level() {
        assert!(filter(0, None).is_none());
        assert!(filter(0, Some("  ")).is_none());
        assert_eq!(
            filter(1, None).map(|f| f.to_string()).as_deref(),
            Some("info")
        );
        assert_eq!(
            filter(2, None).map(|f| f.to_string()).as_deref(),
            Some("debug")
        );
        assert_eq!(
            filter(5, None).map(|f| f.to_string()).as_deref(),
            Some("trace")
        );
        assert_eq!(
            filter(2, Some("seglog=warn"))
                .map(|f| f.to_string())
                .as_deref(),
            Some("seglog=warn")
        );
    }
}
