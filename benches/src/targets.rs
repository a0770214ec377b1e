//! The targets from the issue, checked against one run. Every check is a ratio taken inside the
//! run (see `harness`), so it means the same thing on a fast and on a slow machine.

use serde::Serialize;

use crate::harness::{ContenderResult, Role, Sample, WorkloadResult, median};
use crate::workloads::names;

/// One target and how this run did against it.
#[derive(Clone, Debug, Serialize)]
pub struct TargetOutcome {
    /// What is compared, e.g. `append 100B: seglog / raw write`.
    pub name: String,
    /// The bound, e.g. `>= 0.85`.
    pub target: String,
    /// The measured ratio (or value); `None` when a contender did not run.
    pub measured: Option<f64>,
    /// `None` when not measured.
    pub pass: Option<bool>,
}

enum Check {
    /// seglog's rate over the other role's rate in the same workload, at least this.
    RateAtLeast {
        workload: &'static str,
        against: Role,
        bound: f64,
    },
    /// seglog's rate over the rate of the contender labelled `label` (a reference row) in the
    /// same workload, paired by round, at least this.
    RateOverLabelAtLeast {
        workload: &'static str,
        label: &'static str,
        bound: f64,
    },
    /// seglog's time per operation over the ceiling's, at most this.
    TimeAtMost { workload: &'static str, bound: f64 },
    /// seglog's rate in `numerator` over its rate in `denominator`, paired by round.
    ScalingAtLeast {
        numerator: &'static str,
        denominator: &'static str,
        bound: f64,
    },
    /// seglog's metric in `numerator` over the same metric in `denominator`, paired by round.
    MetricGrowthAtMost {
        numerator: &'static str,
        denominator: &'static str,
        metric: &'static str,
        bound: f64,
    },
    /// seglog's `metric` at most its `budget` metric (both reported by the trial).
    MetricWithinBudget {
        workload: &'static str,
        metric: &'static str,
        budget: &'static str,
    },
}

const CHECKS: &[(&str, Check)] = &[
    (
        "bulk append 1 MiB/call, leader: seglog / raw 1 MiB writes",
        Check::RateAtLeast {
            workload: names::BULK_LEADER,
            against: Role::Ceiling,
            bound: 0.85,
        },
    ),
    (
        "bulk append 1 MiB/call, follower: seglog / raw 1 MiB writes",
        Check::RateAtLeast {
            workload: names::BULK_FOLLOWER,
            against: Role::Ceiling,
            bound: 0.85,
        },
    ),
    (
        "append 100B: seglog / raw write",
        Check::RateAtLeast {
            workload: names::APPEND_SMALL,
            against: Role::Ceiling,
            bound: 0.85,
        },
    ),
    (
        "append 100B: seglog / commitlog",
        Check::RateAtLeast {
            workload: names::APPEND_SMALL,
            against: Role::Commitlog,
            bound: 3.0,
        },
    ),
    (
        "append 100B: seglog / CRC + write per batch",
        Check::RateOverLabelAtLeast {
            workload: names::APPEND_SMALL,
            label: "reference: CRC + write per batch",
            bound: 0.95,
        },
    ),
    (
        "append 1KiB: seglog / raw write",
        Check::RateAtLeast {
            workload: names::APPEND_LARGE,
            against: Role::Ceiling,
            bound: 0.85,
        },
    ),
    (
        "append 1KiB: seglog / commitlog",
        Check::RateAtLeast {
            workload: names::APPEND_LARGE,
            against: Role::Commitlog,
            bound: 3.0,
        },
    ),
    (
        "append 1KiB: seglog / CRC + write per batch",
        Check::RateOverLabelAtLeast {
            workload: names::APPEND_LARGE,
            label: "reference: CRC + write per batch",
            bound: 0.95,
        },
    ),
    (
        "mixed: appender with 8 readers / appender alone",
        Check::RateAtLeast {
            workload: names::MIXED_APPENDER,
            against: Role::Ceiling,
            bound: 0.8,
        },
    ),
    (
        "mixed: 8 readers with an appender / 8 readers alone",
        Check::RateAtLeast {
            workload: names::MIXED_READERS,
            against: Role::Ceiling,
            bound: 0.8,
        },
    ),
    (
        "durable append: seglog 8 writers / seglog 1 writer",
        Check::ScalingAtLeast {
            numerator: names::DURABLE_EIGHT,
            denominator: names::DURABLE_ONE,
            bound: 4.0,
        },
    ),
    (
        "raft durable: seglog-raft / seglog append_durable (8 proposers)",
        Check::RateAtLeast {
            workload: names::RAFT_DURABLE,
            against: Role::Ceiling,
            bound: 0.8,
        },
    ),
    (
        "raft batched: Proposer / seglog append_durable (8 proposers)",
        Check::RateAtLeast {
            workload: names::RAFT_BATCHED,
            against: Role::Ceiling,
            bound: 0.8,
        },
    ),
    (
        "scan 100B: seglog / raw read",
        Check::RateAtLeast {
            workload: names::SCAN_SMALL,
            against: Role::Ceiling,
            bound: 0.8,
        },
    ),
    (
        "scan 100B: seglog / commitlog",
        Check::RateAtLeast {
            workload: names::SCAN_SMALL,
            against: Role::Commitlog,
            bound: 2.0,
        },
    ),
    (
        "scan 1KiB: seglog / raw read",
        Check::RateAtLeast {
            workload: names::SCAN_LARGE,
            against: Role::Ceiling,
            bound: 0.9,
        },
    ),
    (
        "scan 1KiB: seglog / commitlog",
        Check::RateAtLeast {
            workload: names::SCAN_LARGE,
            against: Role::Commitlog,
            bound: 2.0,
        },
    ),
    (
        "point read: seglog / one pread",
        Check::RateAtLeast {
            workload: names::POINT_READ,
            against: Role::Ceiling,
            bound: 0.9,
        },
    ),
    (
        "read by timestamp: seglog / partition_point + one pread",
        Check::RateAtLeast {
            workload: names::TIMESTAMP_READ,
            against: Role::Ceiling,
            bound: 0.8,
        },
    ),
    (
        "floor lookup: seglog time / partition_point time",
        Check::TimeAtMost {
            workload: names::FLOOR,
            bound: 1.05,
        },
    ),
    (
        "recovery: seglog / raw read",
        Check::RateAtLeast {
            workload: names::RECOVERY,
            against: Role::Ceiling,
            bound: 0.8,
        },
    ),
    (
        "open 1000 segments: KiB read by syscalls / budget",
        Check::MetricWithinBudget {
            workload: names::OPEN_SEGMENTS,
            metric: "read_kib",
            budget: "read_budget_kib",
        },
    ),
    (
        "peak RSS: seglog large log / small log",
        Check::MetricGrowthAtMost {
            numerator: names::RSS_LARGE,
            denominator: names::RSS_SMALL,
            metric: "peak_rss_mib",
            bound: 1.25,
        },
    ),
    (
        "append 100B: seglog / Kafka 4.4",
        Check::RateAtLeast {
            workload: names::APPEND_SMALL,
            against: Role::Kafka,
            bound: 1.5,
        },
    ),
    (
        "append 1KiB: seglog / Kafka 4.4",
        Check::RateAtLeast {
            workload: names::APPEND_LARGE,
            against: Role::Kafka,
            bound: 1.5,
        },
    ),
    (
        "scan 100B: seglog / Kafka 4.4",
        Check::RateAtLeast {
            workload: names::SCAN_SMALL,
            against: Role::Kafka,
            bound: 2.0,
        },
    ),
    (
        "scan 1KiB: seglog / Kafka 4.4",
        Check::RateAtLeast {
            workload: names::SCAN_LARGE,
            against: Role::Kafka,
            bound: 2.0,
        },
    ),
    (
        "recovery: seglog / Kafka 4.4",
        Check::RateAtLeast {
            workload: names::RECOVERY,
            against: Role::Kafka,
            bound: 2.0,
        },
    ),
    (
        "point read: seglog / Kafka 4.4",
        Check::RateAtLeast {
            workload: names::POINT_READ,
            against: Role::Kafka,
            bound: 2.0,
        },
    ),
    (
        "read by timestamp: seglog / Kafka 4.4",
        Check::RateAtLeast {
            workload: names::TIMESTAMP_READ,
            against: Role::Kafka,
            bound: 2.0,
        },
    ),
];

/// Checks every target against `workloads`; the goals against Kafka only where its row ran
/// (without Java there is none, and the report says so once).
pub fn evaluate(workloads: &[WorkloadResult]) -> Vec<TargetOutcome> {
    CHECKS
        .iter()
        .filter(|(_, check)| ran_against_kafka(check, workloads))
        .map(|(name, check)| outcome(name, check, workloads))
        .collect()
}

/// False for a check against Kafka whose workload has no Kafka row.
fn ran_against_kafka(check: &Check, workloads: &[WorkloadResult]) -> bool {
    match check {
        Check::RateAtLeast {
            workload,
            against: Role::Kafka,
            ..
        } => workloads
            .iter()
            .any(|result| result.name == *workload && result.get(Role::Kafka).is_some()),
        _ => true,
    }
}

fn outcome(name: &str, check: &Check, workloads: &[WorkloadResult]) -> TargetOutcome {
    let seglog = |workload: &str| -> Option<&ContenderResult> {
        workloads
            .iter()
            .find(|result| result.name == workload)?
            .get(Role::Seglog)
    };
    let (measured, target, at_least) = match check {
        Check::RateAtLeast {
            workload,
            against,
            bound,
        } => {
            let measured = seglog(workload).and_then(|result| match against {
                Role::Ceiling => result.ratio_to_ceiling,
                Role::Commitlog => result.ratio_to_commitlog,
                // Kafka's rows carry no ratio of their own: pair the samples here.
                Role::Kafka => workloads
                    .iter()
                    .find(|candidate| candidate.name == *workload)
                    .and_then(|candidate| candidate.get(Role::Kafka))
                    .and_then(|kafka| {
                        paired(&result.samples, &kafka.samples, Sample::records_per_s)
                    }),
                Role::Seglog | Role::Reference => Some(1.0),
            });
            (measured, *bound, true)
        }
        Check::RateOverLabelAtLeast {
            workload,
            label,
            bound,
        } => {
            let reference = workloads
                .iter()
                .find(|result| result.name == *workload)
                .and_then(|result| result.contenders.iter().find(|c| c.label == *label));
            let measured = seglog(workload).zip(reference).and_then(|(top, bottom)| {
                paired(&top.samples, &bottom.samples, Sample::records_per_s)
            });
            (measured, *bound, true)
        }
        Check::TimeAtMost { workload, bound } => {
            let measured = seglog(workload)
                .and_then(|result| result.ratio_to_ceiling)
                .map(|ratio| 1.0 / ratio);
            (measured, *bound, false)
        }
        Check::ScalingAtLeast {
            numerator,
            denominator,
            bound,
        } => {
            let measured = seglog(numerator)
                .zip(seglog(denominator))
                .and_then(|(top, bottom)| {
                    paired(&top.samples, &bottom.samples, Sample::records_per_s)
                });
            (measured, *bound, true)
        }
        Check::MetricGrowthAtMost {
            numerator,
            denominator,
            metric,
            bound,
        } => {
            let value = |sample: &Sample| {
                sample
                    .metrics
                    .iter()
                    .find(|(name, _)| name == metric)
                    .map_or(f64::NAN, |(_, value)| *value)
            };
            let measured = seglog(numerator)
                .zip(seglog(denominator))
                .and_then(|(top, bottom)| paired(&top.samples, &bottom.samples, value));
            (measured, *bound, false)
        }
        Check::MetricWithinBudget {
            workload,
            metric,
            budget,
        } => {
            let measured = seglog(workload).and_then(|result| {
                Some(result.metric(metric)? / result.metric(budget)?.max(f64::MIN_POSITIVE))
            });
            (measured, 1.0, false)
        }
    };
    let pass = measured.map(|value| {
        if at_least {
            value >= target
        } else {
            value <= target
        }
    });
    TargetOutcome {
        name: name.to_owned(),
        target: format!("{} {target}", if at_least { ">=" } else { "<=" }),
        measured,
        pass,
    }
}

/// Median over rounds of `f(top[r]) / f(bottom[r])`.
fn paired(top: &[Sample], bottom: &[Sample], f: impl Fn(&Sample) -> f64) -> Option<f64> {
    median(
        top.iter()
            .zip(bottom)
            .map(|(top, bottom)| f(top) / f(bottom))
            .collect(),
    )
}
