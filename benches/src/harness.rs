//! Interleaved rounds and medians.
//!
//! A workload has one [`Trial`] per contender. Each round runs every contender once, in an order
//! that rotates from round to round, so slow drift on a shared machine (another job starting,
//! the page cache filling, thermal limits) hits every contender alike. Figures are medians over
//! rounds, and ratios are taken *within* a round (seglog's rate in round 3 over the ceiling's
//! rate in round 3) before the median is taken: a ratio never mixes two moments.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::{Result, sys};

/// Which contender a trial belongs to; ratios are computed against the first two.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The physical ceiling: plain `std::fs` on the same bytes, or the plain-Rust equivalent.
    Ceiling,
    /// The `commitlog` crate, 0.2.
    Commitlog,
    /// seglog.
    Seglog,
    /// Kafka 4.4's own storage code, on the JVM (`kafka_contender`).
    Kafka,
    /// A reference point that is none of the three (e.g. raw writes of one batch per system
    /// call): shown with its ratios, never a denominator.
    Reference,
}

/// What one timed run did. Rates divide these by the elapsed time.
#[derive(Clone, Debug, Default)]
pub struct Work {
    /// Records (or operations: reads, lookups, opens) completed.
    pub records: u64,
    /// Record payload (value) bytes moved. Framing and headers do not count.
    pub payload_bytes: u64,
    /// The time to use instead of the harness's own clock, when the work happened elsewhere
    /// (a child process) and the harness would otherwise time process start-up too.
    pub elapsed: Option<Duration>,
    /// Side measurements (peak RSS, bytes read during open, ...), by name.
    pub metrics: Vec<(&'static str, f64)>,
}

impl Work {
    /// `records` records carrying `payload_bytes` bytes of payload.
    pub fn new(records: u64, payload_bytes: u64) -> Self {
        Self {
            records,
            payload_bytes,
            ..Self::default()
        }
    }

    /// Adds a side measurement.
    pub fn with_metric(mut self, name: &'static str, value: f64) -> Self {
        self.metrics.push((name, value));
        self
    }
}

/// One contender's part of a workload. Only [`Trial::run`] is timed.
pub trait Trial {
    /// Untimed set-up before every run (a fresh directory, a copy of a crashed log).
    fn prepare(&mut self) -> Result<()> {
        Ok(())
    }

    /// The timed part.
    fn run(&mut self) -> Result<Work>;

    /// Untimed tear-down after every run (close, delete the directory).
    fn cleanup(&mut self) -> Result<()> {
        Ok(())
    }
}

impl<T: Trial + ?Sized> Trial for Box<T> {
    fn prepare(&mut self) -> Result<()> {
        (**self).prepare()
    }

    fn run(&mut self) -> Result<Work> {
        (**self).run()
    }

    fn cleanup(&mut self) -> Result<()> {
        (**self).cleanup()
    }
}

/// A trial and who it speaks for.
pub struct Contender<'a> {
    /// Who this is, for ratios.
    pub role: Role,
    /// Shown in the table, e.g. `ceiling (std::fs)`.
    pub label: String,
    /// The work.
    pub trial: Box<dyn Trial + 'a>,
}

impl<'a> Contender<'a> {
    /// A contender with the given role and table label.
    pub fn new(role: Role, label: impl Into<String>, trial: impl Trial + 'a) -> Self {
        Self {
            role,
            label: label.into(),
            trial: Box::new(trial),
        }
    }
}

/// One timed run.
#[derive(Clone, Debug, Serialize)]
pub struct Sample {
    /// The time the figures use: wall-clock minus runqueue wait (see `run_once`), or the
    /// time a child process measured itself.
    pub elapsed_ns: u64,
    /// Wall-clock time of the run.
    pub wall_ns: u64,
    /// Time the measuring thread was runnable but not running during the run.
    pub runqueue_wait_ns: u64,
    /// See [`Work::records`].
    pub records: u64,
    /// See [`Work::payload_bytes`].
    pub payload_bytes: u64,
    /// See [`Work::metrics`].
    pub metrics: Vec<(String, f64)>,
}

impl Sample {
    /// Records per second of this run.
    pub fn records_per_s(&self) -> f64 {
        per_second(self.records, self.elapsed_ns)
    }
}

/// Every sample of one contender in one workload, and the figures derived from them.
#[derive(Clone, Debug, Serialize)]
pub struct ContenderResult {
    /// Who.
    pub role: Role,
    /// Table label.
    pub label: String,
    /// One per round, in round order.
    pub samples: Vec<Sample>,
    /// Median elapsed time over rounds.
    pub median_elapsed_ns: u64,
    /// Median records (operations) per second over rounds.
    pub records_per_s: f64,
    /// Median payload megabytes (10^6 bytes) per second over rounds.
    pub payload_mb_per_s: f64,
    /// Median over rounds of this round's rate divided by the ceiling's rate in the same round.
    pub ratio_to_ceiling: Option<f64>,
    /// Median over rounds of this round's rate divided by commitlog's rate in the same round.
    pub ratio_to_commitlog: Option<f64>,
    /// Median of each side measurement over rounds.
    pub metrics: Vec<(String, f64)>,
}

impl ContenderResult {
    /// The median of a side measurement, if the trial reported it.
    pub fn metric(&self, name: &str) -> Option<f64> {
        self.metrics
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| *value)
    }
}

/// All contenders of one workload.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadResult {
    /// Short name, e.g. `append 100B`.
    pub name: String,
    /// One sentence on what is timed.
    pub about: String,
    /// In the order they were given.
    pub contenders: Vec<ContenderResult>,
}

impl WorkloadResult {
    /// The result of the contender with this role.
    pub fn get(&self, role: Role) -> Option<&ContenderResult> {
        self.contenders
            .iter()
            .find(|contender| contender.role == role)
    }
}

/// Runs `rounds` interleaved rounds of every contender and reduces them to medians.
///
/// # Errors
///
/// The first error of any `prepare`, `run` or `cleanup`, with the workload and contender named.
pub fn measure(
    name: &str,
    about: &str,
    rounds: usize,
    contenders: Vec<Contender<'_>>,
) -> Result<WorkloadResult> {
    let tagged = contenders
        .into_iter()
        .map(|contender| (0, contender))
        .collect();
    let mut results = measure_together(&[(name, about)], rounds, tagged)?;
    results
        .pop()
        .ok_or_else(|| format!("{name}: no result").into())
}

/// Like [`measure`] for several workloads whose trials share each round, so that a ratio
/// *between* workloads (8 writers over 1 writer, a large log over a small one) is also taken
/// within a round. Each contender is tagged with the index of its workload in `workloads`.
///
/// # Errors
///
/// As [`measure`].
pub fn measure_together(
    workloads: &[(&str, &str)],
    rounds: usize,
    mut contenders: Vec<(usize, Contender<'_>)>,
) -> Result<Vec<WorkloadResult>> {
    let rounds = rounds.max(1);
    let count = contenders.len();
    let names: Vec<&str> = workloads.iter().map(|(name, _)| *name).collect();
    let title = names.join(" + ");
    let mut samples: Vec<Vec<Sample>> = vec![Vec::with_capacity(rounds); count];
    for round in 0..rounds {
        let mut line = format!("[{title}] round {}/{rounds}:", round + 1);
        for step in 0..count {
            let index = (round + step) % count;
            let (workload, contender) = &mut contenders[index];
            let name = names.get(*workload).copied().unwrap_or("?");
            let sample = run_once(contender.trial.as_mut())
                .map_err(|error| format!("{name} / {}: {error}", contender.label))?;
            let _ = write!(
                line,
                " {} {:.3}s",
                contender.label,
                sample.elapsed_ns as f64 / 1e9
            );
            samples[index].push(sample);
        }
        eprintln!("{line}");
    }
    let mut grouped: Vec<(Vec<Contender<'_>>, Vec<Vec<Sample>>)> =
        workloads.iter().map(|_| (Vec::new(), Vec::new())).collect();
    for ((workload, contender), samples) in contenders.into_iter().zip(samples) {
        let group = grouped
            .get_mut(workload)
            .ok_or_else(|| format!("contender {} names workload #{workload}", contender.label))?;
        group.0.push(contender);
        group.1.push(samples);
    }
    Ok(workloads
        .iter()
        .zip(grouped)
        .map(|((name, about), (contenders, samples))| reduce(name, about, &contenders, samples))
        .collect())
}

/// Runs one trial once. The time is wall-clock minus the time this thread spent runnable but
/// waiting for a CPU: on a shared machine, another job's compile should not count against
/// whichever contender happened to be running. Blocked time (I/O, fsync, joining writer
/// threads, waiting for a child process) is not runqueue time, so it stays in.
fn run_once(trial: &mut dyn Trial) -> Result<Sample> {
    trial.prepare()?;
    let before = sys::thread_schedstat()?;
    let start = Instant::now();
    let work = trial.run()?;
    let wall = start.elapsed();
    let after = sys::thread_schedstat()?;
    trial.cleanup()?;
    let runqueue_wait = Duration::from_nanos(after.wait_ns.saturating_sub(before.wait_ns));
    let elapsed = work
        .elapsed
        .unwrap_or_else(|| wall.saturating_sub(runqueue_wait));
    Ok(Sample {
        elapsed_ns: nanos(elapsed).max(1),
        wall_ns: nanos(wall),
        runqueue_wait_ns: nanos(runqueue_wait),
        records: work.records,
        payload_bytes: work.payload_bytes,
        metrics: work
            .metrics
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value))
            .chain(std::iter::once((
                "rq_wait_pct".to_owned(),
                100.0 * runqueue_wait.as_secs_f64() / wall.as_secs_f64().max(1e-9),
            )))
            .collect(),
    })
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

fn reduce(
    name: &str,
    about: &str,
    contenders: &[Contender<'_>],
    samples: Vec<Vec<Sample>>,
) -> WorkloadResult {
    let rates_of = |role: Role| -> Option<Vec<f64>> {
        let index = contenders
            .iter()
            .position(|contender| contender.role == role)?;
        Some(samples[index].iter().map(Sample::records_per_s).collect())
    };
    let ceiling = rates_of(Role::Ceiling);
    let commitlog = rates_of(Role::Commitlog);
    let results = contenders
        .iter()
        .zip(samples)
        .map(|(contender, samples)| {
            let rates: Vec<f64> = samples.iter().map(Sample::records_per_s).collect();
            let paired = |base: &Option<Vec<f64>>| -> Option<f64> {
                let base = base.as_ref()?;
                median(
                    rates
                        .iter()
                        .zip(base)
                        .map(|(rate, base)| rate / base)
                        .collect(),
                )
            };
            let mb_rates = samples
                .iter()
                .map(|sample| per_second(sample.payload_bytes, sample.elapsed_ns) / 1e6)
                .collect();
            let mut metric_names: Vec<&str> = Vec::new();
            for sample in &samples {
                for (key, _) in &sample.metrics {
                    if !metric_names.contains(&key.as_str()) {
                        metric_names.push(key);
                    }
                }
            }
            let metrics = metric_names
                .iter()
                .filter_map(|key| {
                    let values = samples
                        .iter()
                        .filter_map(|sample| {
                            sample
                                .metrics
                                .iter()
                                .find(|(name, _)| name == key)
                                .map(|m| m.1)
                        })
                        .collect();
                    Some(((*key).to_owned(), median(values)?))
                })
                .collect();
            ContenderResult {
                role: contender.role,
                label: contender.label.clone(),
                median_elapsed_ns: median_u64(samples.iter().map(|s| s.elapsed_ns).collect()),
                records_per_s: median(rates.clone()).unwrap_or(0.0),
                payload_mb_per_s: median(mb_rates).unwrap_or(0.0),
                ratio_to_ceiling: if contender.role == Role::Ceiling {
                    None
                } else {
                    paired(&ceiling)
                },
                ratio_to_commitlog: if contender.role == Role::Commitlog {
                    None
                } else {
                    paired(&commitlog)
                },
                metrics,
                samples,
            }
        })
        .collect();
    WorkloadResult {
        name: name.to_owned(),
        about: about.to_owned(),
        contenders: results,
    }
}

/// Count per second; 0 when nothing was timed.
pub fn per_second(count: u64, elapsed_ns: u64) -> f64 {
    if elapsed_ns == 0 {
        0.0
    } else {
        count as f64 * 1e9 / elapsed_ns as f64
    }
}

/// The median (mean of the middle two for an even count); `None` for no values.
pub fn median(mut values: Vec<f64>) -> Option<f64> {
    values.retain(|value| value.is_finite());
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[middle]
    } else {
        (values[middle - 1] + values[middle]) / 2.0
    })
}

fn median_u64(values: Vec<u64>) -> u64 {
    median(values.into_iter().map(|value| value as f64).collect()).unwrap_or(0.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![f64::NAN, 5.0]), Some(5.0));
    }

    struct Fixed {
        records: u64,
        sleep: Duration,
        order: std::rc::Rc<std::cell::RefCell<Vec<&'static str>>>,
        name: &'static str,
    }

    impl Trial for Fixed {
        fn run(&mut self) -> Result<Work> {
            self.order.borrow_mut().push(self.name);
            Ok(Work {
                records: self.records,
                payload_bytes: self.records * 10,
                elapsed: Some(self.sleep),
                metrics: vec![("bytes_read", 7.0)],
            })
        }
    }

    #[test]
    fn rounds_rotate_and_ratios_pair_within_a_round() {
        let order = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let trial = |name, records, millis| Fixed {
            records,
            sleep: Duration::from_millis(millis),
            order: order.clone(),
            name,
        };
        let result = measure(
            "w",
            "test",
            3,
            vec![
                Contender::new(Role::Ceiling, "c", trial("c", 100, 10)),
                Contender::new(Role::Seglog, "s", trial("s", 100, 20)),
                Contender::new(Role::Commitlog, "l", trial("l", 100, 80)),
            ],
        )
        .unwrap();
        assert_eq!(
            *order.borrow(),
            ["c", "s", "l", "s", "l", "c", "l", "c", "s"]
        );
        let seglog = result.get(Role::Seglog).unwrap();
        assert_eq!(seglog.samples.len(), 3);
        assert!((seglog.records_per_s - 5000.0).abs() < 1e-6);
        assert!((seglog.payload_mb_per_s - 0.05).abs() < 1e-9);
        assert!((seglog.ratio_to_ceiling.unwrap() - 0.5).abs() < 1e-9);
        assert!((seglog.ratio_to_commitlog.unwrap() - 4.0).abs() < 1e-9);
        assert_eq!(seglog.metric("bytes_read"), Some(7.0));
        assert_eq!(result.get(Role::Ceiling).unwrap().ratio_to_ceiling, None);
        assert_eq!(
            result.get(Role::Commitlog).unwrap().ratio_to_commitlog,
            None
        );
    }
}
