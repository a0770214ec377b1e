//! Scale (issue 28): the unclean open of a `log.dirs` root of many partitions, its partitions
//! recovered on Kafka's default `num.recovery.threads.per.data.dir` threads beside the same
//! open on one thread (the serial path). The ratio is the row's figure; no bound but the
//! target's is asserted anywhere (no timed tests).

use std::path::{Path, PathBuf};

use seglog::{LogConfig, LogDir};

use crate::Result;
use crate::harness::{Contender, Role, Trial, Work, WorkloadResult, measure};
use crate::workloads::scale::{one_batch_config, write_one_batch_segments};
use crate::workloads::{Context, labels, names};

/// One-batch segments per partition of the root (the 1,000 x 5 root).
pub const SEGMENTS_PER_PARTITION: usize = 5;

/// `scale: unclean open of a root`: N partitions x 5 one-batch segments, no clean-shutdown
/// marker and no checkpoints (every segment is recovered), opened with Kafka's default
/// recovery threads and with one.
///
/// # Errors
///
/// The first failing set-up or trial.
pub fn run(context: &mut Context) -> Result<Vec<WorkloadResult>> {
    let scratch = context.scratch.dir("scale-root")?;
    let partitions = context.plan.scale_root_partitions;
    let pristine = scratch.join("pristine");
    for p in 0..partitions {
        write_one_batch_segments(&pristine.join(format!("t-{p}")), SEGMENTS_PER_PARTITION)?;
    }
    let threads = LogConfig::default().num_recovery_threads_per_data_dir;
    let about = format!(
        "unclean open (no marker, no checkpoints: every segment recovered) of a log.dirs root \
         of {partitions} partitions x {SEGMENTS_PER_PARTITION} one-batch segments, on \
         {threads} recovery threads (num.recovery.threads.per.data.dir, Kafka's default) and \
         on one"
    );
    let contenders = vec![
        Contender::new(
            Role::Seglog,
            "seglog",
            context.cold(OpenRoot::new(
                &pristine,
                scratch.join("parallel"),
                threads,
                partitions,
            )),
        ),
        Contender::new(
            Role::Reference,
            labels::SCALE_ROOT_ONE_THREAD,
            context.cold(OpenRoot::new(
                &pristine,
                scratch.join("serial"),
                1,
                partitions,
            )),
        ),
    ];
    Ok(vec![measure(
        names::SCALE_ROOT_OPEN,
        &about,
        context.plan.rounds,
        contenders,
    )?])
}

/// `LogDir::open` of a fresh copy of the pristine root on `threads` recovery threads, dropped
/// without a close (the close's fsyncs are not the recovery's work).
struct OpenRoot {
    pristine: PathBuf,
    root: PathBuf,
    threads: i32,
    partitions: usize,
    dir: Option<LogDir>,
}

impl OpenRoot {
    fn new(pristine: &Path, root: PathBuf, threads: i32, partitions: usize) -> Self {
        Self {
            pristine: pristine.to_path_buf(),
            root,
            threads,
            partitions,
            dir: None,
        }
    }
}

impl Trial for OpenRoot {
    fn prepare(&mut self) -> Result<()> {
        if self.root.exists() {
            std::fs::remove_dir_all(&self.root)
                .map_err(|e| crate::io_error("remove", &self.root, e))?;
        }
        for entry in std::fs::read_dir(&self.pristine)
            .map_err(|e| crate::io_error("list", &self.pristine, e))?
        {
            let entry = entry.map_err(|e| crate::io_error("list", &self.pristine, e))?;
            crate::fsx::copy_dir(&entry.path(), &self.root.join(entry.file_name()))?;
        }
        Ok(())
    }

    fn run(&mut self) -> Result<Work> {
        let config = LogConfig {
            num_recovery_threads_per_data_dir: self.threads,
            ..one_batch_config()
        };
        let dir = LogDir::open(&self.root, config)?;
        let logs = dir.logs();
        if logs.len() != self.partitions || !dir.offline_partitions().is_empty() {
            return Err(format!(
                "loaded {} of {} partitions ({} offline)",
                logs.len(),
                self.partitions,
                dir.offline_partitions().len()
            )
            .into());
        }
        let recovered: usize = logs
            .iter()
            .map(|(_, log)| log.load_report().recovered().count())
            .sum();
        let segments = self.partitions * SEGMENTS_PER_PARTITION;
        if recovered < segments {
            return Err(format!("recovered {recovered} of {segments} segments").into());
        }
        drop(logs);
        self.dir = Some(dir);
        Ok(Work::new(self.partitions as u64, 0)
            .with_metric("recovery_threads", f64::from(self.threads)))
    }

    fn cleanup(&mut self) -> Result<()> {
        drop(self.dir.take());
        std::fs::remove_dir_all(&self.root).map_err(|e| crate::io_error("remove", &self.root, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The row's trial on a small root: every partition loaded and every segment recovered,
    /// on one thread and on two, round after round.
    #[test]
    fn the_trial_recovers_every_segment_of_a_small_root() {
        let tmp = tempfile::tempdir().unwrap();
        let pristine = tmp.path().join("pristine");
        for p in 0..3 {
            write_one_batch_segments(&pristine.join(format!("t-{p}")), SEGMENTS_PER_PARTITION)
                .unwrap();
        }
        for threads in [1, 2] {
            let mut trial = OpenRoot::new(&pristine, tmp.path().join("root"), threads, 3);
            for _ in 0..2 {
                trial.prepare().unwrap();
                let work = trial.run().unwrap();
                assert_eq!(work.records, 3);
                trial.cleanup().unwrap();
            }
        }
    }
}
