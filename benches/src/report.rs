//! The printed table and the JSON file.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::harness::WorkloadResult;
use crate::targets::TargetOutcome;
use crate::{Result, io_error};

/// Everything one run measured, as written to `target/bench/*.json`.
#[derive(Debug, Serialize)]
pub struct Report {
    /// `quick` or `full`.
    pub mode: String,
    /// Rounds per workload.
    pub rounds: usize,
    /// Seconds since the Unix epoch when the run started.
    pub started_unix_s: u64,
    /// Wall-clock seconds the whole run took.
    pub duration_s: f64,
    /// `git rev-parse --short HEAD` of the workspace, if git was available.
    pub git_rev: Option<String>,
    /// Where the logs were written and what that disk is.
    pub machine: Machine,
    /// Every workload, in run order.
    pub workloads: Vec<WorkloadResult>,
    /// The targets from the issue, checked against this run.
    pub targets: Vec<TargetOutcome>,
    /// Workloads or contenders that did not run, and why.
    pub notes: Vec<String>,
}

/// Facts about the machine that bound the figures.
#[derive(Debug, Serialize)]
pub struct Machine {
    /// `std::thread::available_parallelism`.
    pub cpus: usize,
    /// Kernel release.
    pub kernel: String,
    /// The directory the logs were written under.
    pub scratch_dir: PathBuf,
    /// Its file-system type.
    pub scratch_fs: Option<String>,
    /// Whether the page cache was dropped before read workloads.
    pub dropped_page_cache: bool,
}

/// The table: one row per contender and workload.
pub fn table(workloads: &[WorkloadResult]) -> String {
    let header = [
        "contender",
        "workload",
        "records/s",
        "MB/s",
        "vs ceiling",
        "vs commitlog",
        "notes",
    ];
    let mut rows: Vec<[String; 7]> = Vec::new();
    for workload in workloads {
        for contender in &workload.contenders {
            rows.push([
                contender.label.clone(),
                workload.name.clone(),
                si(contender.records_per_s),
                if contender.payload_mb_per_s > 0.0 {
                    format!("{:.1}", contender.payload_mb_per_s)
                } else {
                    "-".to_owned()
                },
                ratio(contender.ratio_to_ceiling),
                ratio(contender.ratio_to_commitlog),
                contender
                    .metrics
                    .iter()
                    .map(|(name, value)| format!("{name}={}", short(*value)))
                    .collect::<Vec<_>>()
                    .join(" "),
            ]);
        }
    }
    let mut widths = header.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, cells: &[&str]| {
        out.push('|');
        for (index, (cell, width)) in cells.iter().zip(widths).enumerate() {
            // Text columns left-aligned, numbers right-aligned.
            if index < 2 || index == 6 {
                let _ = write!(out, " {cell:<width$} |");
            } else {
                let _ = write!(out, " {cell:>width$} |");
            }
        }
        out.push('\n');
    };
    line(&mut out, &header);
    out.push('|');
    for (index, width) in widths.iter().enumerate() {
        let dashes = "-".repeat(*width);
        if index < 2 || index == 6 {
            let _ = write!(out, " {dashes} |");
        } else {
            let _ = write!(out, " {}: |", &dashes[1..]);
        }
    }
    out.push('\n');
    for row in &rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        line(&mut out, &cells);
    }
    out
}

/// The target checks, one per line.
pub fn targets(outcomes: &[TargetOutcome]) -> String {
    let mut out = String::new();
    for outcome in outcomes {
        let verdict = match outcome.pass {
            Some(true) => "PASS",
            Some(false) => "MISS",
            None => "n/a ",
        };
        let measured = outcome
            .measured
            .map_or_else(|| "not measured".to_owned(), |value| format!("{value:.2}"));
        let bounds = outcome
            .bounds
            .iter()
            .map(|bound| match bound.measured {
                Some(value) => format!("{} {value:.2}", bound.what),
                None => format!("{} not measured", bound.what),
            })
            .collect::<Vec<_>>();
        let bounds = if bounds.is_empty() {
            String::new()
        } else {
            format!(" (bound: {})", bounds.join("; "))
        };
        let _ = writeln!(
            out,
            "{verdict}  {:<58} measured {measured:<12} target {}{bounds}",
            outcome.name, outcome.target
        );
    }
    out
}

/// Writes the report as `<dir>/<mode>-<unix seconds>.json` and `<dir>/latest-<mode>.json`,
/// returning the first path.
pub fn write_json(report: &Report, dir: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).map_err(|error| io_error("create directory", dir, error))?;
    let text = serde_json::to_string_pretty(report)?;
    let path = dir.join(format!("{}-{}.json", report.mode, report.started_unix_s));
    std::fs::write(&path, &text).map_err(|error| io_error("write", &path, error))?;
    let latest = dir.join(format!("latest-{}.json", report.mode));
    std::fs::write(&latest, &text).map_err(|error| io_error("write", &latest, error))?;
    Ok(path)
}

fn ratio(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |value| format!("{value:.2}x"))
}

/// 1234567.0 -> "1.23M".
fn si(value: f64) -> String {
    if value >= 1e9 {
        format!("{:.2}G", value / 1e9)
    } else if value >= 1e6 {
        format!("{:.2}M", value / 1e6)
    } else if value >= 1e3 {
        format!("{:.1}k", value / 1e3)
    } else {
        format!("{value:.1}")
    }
}

fn short(value: f64) -> String {
    if value.fract() == 0.0 || value.abs() >= 100.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_short() {
        assert_eq!(si(1_234_567.0), "1.23M");
        assert_eq!(si(12_345.0), "12.3k");
        assert_eq!(si(2.5e9), "2.50G");
        assert_eq!(si(12.0), "12.0");
        assert_eq!(ratio(Some(0.856)), "0.86x");
        assert_eq!(ratio(None), "-");
        assert_eq!(short(3.0), "3");
        assert_eq!(short(2.345_67), "2.35");
        assert_eq!(short(1234.5), "1234");
    }
}
