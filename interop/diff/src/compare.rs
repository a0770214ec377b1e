//! The comparator: the first field in which seglog's observation differs from Kafka's, after
//! the named rules for deliberate differences; and the one table mapping seglog's errors to
//! Kafka's exception classes.

use serde_json::Value;

use seglog::{AppendErrorKind, Error};

use crate::history::Step;
use crate::observe::Observation;

/// The Kafka 4.4 exception class that corresponds to a seglog error (the one table): the
/// classes `UnifiedLog.appendAsLeader`, `truncateTo`, `roll` and `read` throw for the same
/// input. An error with no Kafka counterpart is named `seglog:<what>`, which never equals a
/// Kafka class, so it always shows as a divergence.
pub fn kafka_class(e: &Error) -> String {
    let name = match e {
        Error::InvalidAppend { kind } => match kind {
            AppendErrorKind::OutOfOrderSequence { .. } => "OutOfOrderSequenceException",
            AppendErrorKind::InvalidProducerEpoch { .. } => "InvalidProducerEpochException",
            AppendErrorKind::CoordinatorFenced { .. } => "TransactionCoordinatorFencedException",
            AppendErrorKind::InvalidTxnState { .. } => "InvalidTxnStateException",
            AppendErrorKind::InvalidSequence { .. }
            | AppendErrorKind::MissingKey { .. }
            | AppendErrorKind::ControlBatch { .. }
            | AppendErrorKind::InconsistentCount { .. }
            | AppendErrorKind::UnsupportedMagic { .. } => "InvalidRecordException",
            AppendErrorKind::TimestampOutOfRange { .. } => "InvalidTimestampException",
            AppendErrorKind::BatchTooLarge { .. } => "RecordTooLargeException",
            AppendErrorKind::AppendTooLarge { .. } => "RecordBatchTooLargeException",
            AppendErrorKind::Empty { .. } | AppendErrorKind::TrailingBytes { .. } => {
                "InvalidRecordException"
            }
            AppendErrorKind::UnexpectedAppendOffset { .. } => "UnexpectedAppendOffsetException",
            AppendErrorKind::OffsetsOutOfOrder { .. } => "OffsetsOutOfOrderException",
            AppendErrorKind::InvalidLeaderEpoch { .. } | AppendErrorKind::InvalidMarker { .. } => {
                "IllegalArgumentException"
            }
            other => return format!("seglog:InvalidAppend {other:?}"),
        },
        Error::Records(_) => "CorruptRecordException",
        Error::OffsetOutOfRange { .. } => "OffsetOutOfRangeException",
        other => return format!("seglog:{other}"),
    };
    name.to_owned()
}

/// A deliberate difference between seglog and Kafka 4.4, accepted by the comparator in
/// exactly its form.
pub struct Rule {
    /// Short name, printed when it applies.
    pub name: &'static str,
    /// Where docs/format.md ("Deliberate differences") names it.
    pub documented: &'static str,
    /// Whether the difference at `path` is this one.
    pub explains: fn(step: &Step, path: &str, ours: &Observation, kafka: &Observation) -> bool,
}

/// The named rules; each is a line of docs/format.md's "Deliberate differences" (the ones listed
/// there before these histories, offset for timestamp over empty segments, damage in flushed
/// data and the leader-epoch checkpoint's load rules, are not reached by these operations).
pub const RULES: &[Rule] = &[Rule {
    name: "first-unstable-offset-not-cached",
    documented: "docs/format.md, Deliberate differences: \"First unstable offset after a truncation\"",
    explains: first_unstable_not_cached,
}];

/// seglog's first unstable offset is always its producer state's; Kafka's `UnifiedLog` caches
/// it and refreshes the cache on high-watermark moves and appends only, so after a truncation
/// that left the high watermark below the new log end it can name a transaction the truncation
/// removed. Exactly this form: seglog's value is Kafka's own `ProducerStateManager`'s, Kafka's
/// cached value is not, and (for the LSO) each side's LSO is `min(its first unstable, HW)`.
fn first_unstable_not_cached(_: &Step, path: &str, ours: &Observation, kafka: &Observation) -> bool {
    let fresh = kafka.fresh_first_unstable;
    let stale = kafka.state.first_unstable != fresh && ours.state.first_unstable == fresh;
    let lso = |first: Option<i64>, hw: i64| first.map_or(hw, |f| f.min(hw));
    match path {
        "state.first_unstable" => stale,
        "state.last_stable" => {
            stale
                && ours.state.high_watermark == kafka.state.high_watermark
                && ours.state.last_stable == lso(fresh, ours.state.high_watermark)
                && kafka.state.last_stable == lso(kafka.state.first_unstable, kafka.state.high_watermark)
        }
        _ => false,
    }
}

/// A known seglog bug (issue #25's findings, being fixed in parallel): a divergence it
/// explains is reported under its name, and is still a divergence.
pub struct KnownBug {
    /// Short name.
    pub name: &'static str,
    /// Where it is described.
    pub issue: &'static str,
    /// Whether the divergence is this bug.
    pub matches: fn(step: &Step, path: &str, ours: &Observation, kafka: &Observation) -> bool,
}

/// The known bugs the generator can reach.
pub const KNOWN_BUGS: &[KnownBug] = &[];

/// The first field that differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// Dotted path, e.g. `state.producers[0].last_sequence`.
    pub path: String,
    /// seglog's value there.
    pub ours: Value,
    /// Kafka's value there.
    pub kafka: Value,
    /// The known bug this is, if any.
    pub known_bug: Option<&'static str>,
}

/// Compares two observations of `step`: `None` when they agree up to the named rules; the
/// rules that explained a difference are pushed to `applied`.
pub fn compare(
    step: &Step,
    ours: &Observation,
    kafka: &Observation,
    applied: &mut Vec<&'static str>,
) -> Option<Difference> {
    let a = serde_json::to_value(ours).unwrap_or(Value::Null);
    let b = serde_json::to_value(kafka).unwrap_or(Value::Null);
    let mut diffs = Vec::new();
    walk("", &a, &b, &mut diffs);
    for (path, x, y) in diffs {
        if let Some(rule) = RULES.iter().find(|r| (r.explains)(step, &path, ours, kafka)) {
            applied.push(rule.name);
            continue;
        }
        let known_bug = KNOWN_BUGS
            .iter()
            .find(|k| (k.matches)(step, &path, ours, kafka))
            .map(|k| k.name);
        return Some(Difference {
            path,
            ours: x,
            kafka: y,
            known_bug,
        });
    }
    None
}

/// Every leaf where `a` and `b` differ, in field order (outcome, state, fetches).
fn walk(path: &str, a: &Value, b: &Value, out: &mut Vec<(String, Value, Value)>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().collect();
            for k in y.keys() {
                if !x.contains_key(k) {
                    keys.push(k);
                }
            }
            for k in keys {
                let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                walk(
                    &p,
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                    out,
                );
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() && !is_tuple(x) => {
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                walk(&format!("{path}[{i}]"), u, v, out);
            }
        }
        _ if a != b => out.push((path.to_owned(), a.clone(), b.clone())),
        _ => {}
    }
}

/// A fetch's batch or aborted entry (an array of scalars) is compared whole.
fn is_tuple(x: &[Value]) -> bool {
    x.iter().all(|v| !v.is_object() && !v.is_array())
}
