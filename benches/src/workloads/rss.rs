//! Peak resident memory while scanning a log, at two sizes four times apart. Each scan runs in a
//! child process (peak RSS is per process), which opens the log and reads it all in offset
//! order with nothing else loaded. Flat means the larger log costs no more memory.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;

use crate::child::{self, Job, Task};
use crate::commitlog_contender;
use crate::data::{DataSpec, Dataset};
use crate::harness::{Contender, Role, Trial, Work, WorkloadResult, measure_together};
use crate::seglog_contender;
use crate::workloads::{Context, names};
use crate::{Result, io_error};

/// `rss scan small` and `rss scan large`, in the same rounds.
///
/// # Errors
///
/// The first failing set-up or child.
pub fn run(context: &mut Context) -> Result<Vec<WorkloadResult>> {
    let base = Dataset::generate(context.plan.rss_base)?;
    let sizes = [context.plan.rss_small_copies, context.plan.rss_large_copies];
    let mut contenders = Vec::new();
    for (workload, copies) in sizes.into_iter().enumerate() {
        let root = context.scratch.dir(&format!("rss-{copies}"))?;
        let ceiling = root.join("ceiling.log");
        let mut file = File::create(&ceiling).map_err(|e| io_error("create", &ceiling, e))?;
        for _ in 0..copies {
            file.write_all(&base.image)
                .map_err(|e| io_error("write", &ceiling, e))?;
        }
        drop(file);
        let commitlog = root.join("commitlog");
        {
            let mut log = commitlog_contender::open(&commitlog, 1 << 30)?;
            let mut sets = base.commitlog_message_sets()?;
            for _ in 0..copies {
                commitlog_contender::append_all(&mut log, &mut sets)?;
            }
            log.flush().map_err(|e| io_error("flush", &commitlog, e))?;
        }
        let seglog = root.join("seglog");
        {
            let log = seglog_contender::open(&seglog, seglog::LogConfig::default())?;
            for _ in 0..copies {
                seglog_contender::append_all(&log, &base)?;
            }
            seglog_contender::close(&log)?;
        }
        for (role, label, dir) in [
            (Role::Ceiling, "ceiling (std::fs)", root.clone()),
            (Role::Seglog, "seglog", seglog),
            (Role::Commitlog, "commitlog 0.2", commitlog),
        ] {
            let trial = ScanChild {
                role,
                dir,
                spec: base.spec,
                copies,
            };
            contenders.push((workload, Contender::new(role, label, trial)));
        }
    }
    let about = |copies: usize| {
        let spec = base.spec;
        format!(
            "peak RSS of a process that opens a log of {} MiB ({} x {} records of {} B) and \
             reads it all in offset order",
            (spec.payload_bytes() * copies as u64) >> 20,
            copies,
            spec.records,
            spec.record_bytes
        )
    };
    let small = about(sizes[0]);
    let large = about(sizes[1]);
    measure_together(
        &[(names::RSS_SMALL, &small), (names::RSS_LARGE, &large)],
        context.plan.rounds,
        contenders,
    )
}

/// One child process scanning one log.
struct ScanChild {
    role: Role,
    dir: PathBuf,
    spec: DataSpec,
    copies: usize,
}

impl Trial for ScanChild {
    fn run(&mut self) -> Result<Work> {
        let report = child::spawn(&Job {
            task: Task::RssScan,
            role: self.role,
            dir: self.dir.clone(),
            spec: self.spec,
            copies: self.copies,
        })?;
        let records = self.spec.records * self.copies as u64;
        let work = Work {
            records,
            payload_bytes: records * self.spec.record_bytes as u64,
            elapsed: Some(report.elapsed()),
            metrics: vec![
                ("peak_rss_mib", report.peak_rss_kib as f64 / 1024.0),
                ("baseline_rss_mib", report.baseline_rss_kib as f64 / 1024.0),
            ],
        };
        Ok(work)
    }
}
