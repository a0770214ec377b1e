//! Kafka's side: the JVM child running `seglog.interop.Main diff` (`DiffDriver.java`), one
//! JSON object per line each way, as `benches/src/kafka_contender.rs` drives `KafkaBench`.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::history::{Op, Step};
use crate::observe::{Fetch, Observation, Outcome, State};

/// The JVM's options: small heap, serial GC, C1 only (the machine is small and shared).
const JVM_OPTIONS: &[&str] = &[
    "-Xms64m",
    "-Xmx256m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
];

/// The running driver; asked to exit (then killed) when dropped.
pub struct Kafka {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// Kafka's version, from the driver's hello.
    pub version: String,
    /// The step's now (ms since the epoch): the maintenance operations run at it.
    pub now_ms: i64,
}

impl Kafka {
    /// Starts the driver with the class path in `classpath_file`; its stderr (Kafka's
    /// logging) goes to `log_file`.
    ///
    /// # Errors
    /// The JVM does not start or does not say hello.
    pub fn start(classpath_file: &Path, log_file: &Path) -> Result<Self, String> {
        let classpath = std::fs::read_to_string(classpath_file)
            .map_err(|e| format!("read {}: {e}", classpath_file.display()))?;
        let log =
            File::create(log_file).map_err(|e| format!("create {}: {e}", log_file.display()))?;
        // SEGLOG_DIFF_JVM_OPTS: more JVM options, e.g. `-Dlog4j2.configurationFile=...` to see
        // Kafka's DEBUG lines while chasing a divergence.
        let extra = std::env::var("SEGLOG_DIFF_JVM_OPTS").unwrap_or_default();
        let mut child = Command::new("java")
            .args(JVM_OPTIONS)
            .args(extra.split_whitespace())
            .arg("-cp")
            .arg(classpath.trim())
            .args(["seglog.interop.Main", "diff"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("could not start java: {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("java started without pipes".into());
        };
        let mut kafka = Kafka {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            version: String::new(),
            now_ms: 0,
        };
        let hello = kafka.reply()?;
        kafka.version = hello
            .get("kafka")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_owned();
        Ok(kafka)
    }

    /// Sends `request`; a reply without `"ok": true` is an error of the harness.
    fn request(&mut self, request: &Value) -> Result<Value, String> {
        // Every request runs at the step's held clock (`DiffDriver` pins its `Time` to it).
        let mut request = request.clone();
        if let Some(fields) = request.as_object_mut()
            && self.now_ms > 0
        {
            fields
                .entry("now_ms")
                .or_insert_with(|| Value::from(self.now_ms));
        }
        writeln!(self.stdin, "{request}")
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("DiffDriver: sending {request}: {e}"))?;
        let reply = self.reply()?;
        if reply.get("ok").and_then(Value::as_bool) == Some(true) {
            Ok(reply)
        } else {
            Err(format!(
                "DiffDriver: {request} failed: {}",
                reply.get("error").unwrap_or(&reply)
            ))
        }
    }

    fn reply(&mut self) -> Result<Value, String> {
        let mut line = String::new();
        let read = self
            .stdout
            .read_line(&mut line)
            .map_err(|e| format!("DiffDriver: reading its reply: {e}"))?;
        if read == 0 {
            let status = self.child.wait().ok();
            return Err(format!("DiffDriver exited ({status:?})"));
        }
        serde_json::from_str(&line)
            .map_err(|e| format!("DiffDriver replied with a line that is not JSON ({e}): {line}"))
    }

    /// A fresh log in `dir`; returns its observation (fetches from offset 0).
    ///
    /// # Errors
    /// Harness errors.
    pub fn open(&mut self, dir: &Path, segment_bytes: i32) -> Result<Observation, String> {
        let reply = self.request(&json!({
            "cmd": "open", "dir": dir.display().to_string(), "segment_bytes": segment_bytes,
        }))?;
        self.observe(&reply, 0)
    }

    /// Applies `step` (an append's or marker's bytes are `batch`).
    ///
    /// # Errors
    /// Harness errors (not Kafka refusing the operation: that is an outcome).
    pub fn apply(&mut self, step: &Step, batch: &[u8]) -> Result<Observation, String> {
        let request = match &step.op {
            Op::Append(_) => json!({
                "cmd": "append", "hex": hex::encode(batch), "origin": "client",
            }),
            Op::Marker { .. } => json!({
                "cmd": "append", "hex": hex::encode(batch), "origin": "coordinator",
            }),
            Op::Roll => json!({ "cmd": "roll" }),
            Op::Truncate { offset } => json!({ "cmd": "truncate", "offset": offset }),
            Op::HighWatermark { offset } => json!({ "cmd": "hw", "offset": offset }),
            Op::Reopen => json!({ "cmd": "reopen" }),
            op if op.is_maintenance() => maintenance_request(op, self.now_ms),
            other => part_b_request(other, batch)?,
        };
        let reply = self.request(&request)?;
        self.observe(&reply, step.fetch_offset)
    }

    fn observe(&mut self, reply: &Value, fetch_offset: i64) -> Result<Observation, String> {
        let outcome: Outcome = serde_json::from_value(reply.clone())
            .map_err(|e| format!("DiffDriver outcome {reply}: {e}"))?;
        let state: State =
            serde_json::from_value(reply.get("state").cloned().unwrap_or(Value::Null))
                .map_err(|e| format!("DiffDriver state {reply}: {e}"))?;
        let fetched = self.request(&json!({ "cmd": "fetch", "offset": fetch_offset }))?;
        let fetch = |name: &str| -> Result<Fetch, String> {
            serde_json::from_value(fetched.get(name).cloned().unwrap_or(Value::Null))
                .map_err(|e| format!("DiffDriver {name} {fetched}: {e}"))
        };
        Ok(Observation {
            outcome,
            state,
            read_uncommitted: fetch("read_uncommitted")?,
            read_committed: fetch("read_committed")?,
            fresh_first_unstable: reply.get("fresh_first_unstable").and_then(Value::as_i64),
            kept_commit_markers: Vec::new(),
            files: files(reply)?,
            file_batches: reply
                .get("file_batches")
                .map(|f| {
                    serde_json::from_value(f.clone())
                        .map_err(|e| format!("DiffDriver file_batches {f}: {e}"))
                })
                .transpose()?,
            settled_first_unstable: reply.get("settled_first_unstable").and_then(Value::as_i64),
            batch_base_at_hw: None,
            batch_base_at_log_start: None,
        })
    }

    /// Removes the producers `ids` from Kafka's producer state (its `producers` map, by
    /// reflection: no public call removes one producer); returns the observation after that.
    ///
    /// # Errors
    /// Harness errors.
    pub fn forget_producers(
        &mut self,
        ids: &[i64],
        fetch_offset: i64,
    ) -> Result<Observation, String> {
        let reply = self.request(&json!({ "cmd": "forget_producers", "ids": ids }))?;
        self.observe(&reply, fetch_offset)
    }

    /// Assigns `entries` (epoch, start offset) in order in Kafka's leader-epoch cache
    /// (`assignEpochStartOffset` each); returns the observation after that.
    ///
    /// # Errors
    /// Harness errors (a refused `assign` is an outcome).
    pub fn assign_epochs(
        &mut self,
        entries: &[(i32, i64)],
        fetch_offset: i64,
    ) -> Result<Observation, String> {
        let reply = self.request(&json!({ "cmd": "assign_epochs", "entries": entries }))?;
        self.observe(&reply, fetch_offset)
    }

    /// Kafka's one roll check for the several batches of `set` (`DiffDriver.rollForSet`:
    /// `LogSegment.shouldRoll` with the whole set's size, largest timestamp and last offset, as
    /// `UnifiedLog.maybeRoll` checks a multi-batch set once), rolling when it says so; returns
    /// whether it rolled.
    ///
    /// # Errors
    /// Harness errors.
    pub fn roll_for_set(&mut self, set: &[u8]) -> Result<bool, String> {
        let reply = self.request(&json!({ "cmd": "roll_for_set", "hex": hex::encode(set) }))?;
        reply
            .get("rolled")
            .and_then(Value::as_bool)
            .ok_or_else(|| format!("DiffDriver roll_for_set: no `rolled` in {reply}"))
    }

    /// Rolls Kafka's log after a truncation that seglog's rolled at the target (rule
    /// `truncation-inside-a-batch-rolls-at-the-target`), with the cleaner checkpoint LogManager's
    /// rule gives on that layout (`DiffDriver`'s `roll_at_truncation_target`); returns the
    /// observation after that.
    ///
    /// # Errors
    /// Harness errors (a refused roll is an outcome).
    pub fn roll_at_truncation_target(&mut self, fetch_offset: i64) -> Result<Observation, String> {
        let reply = self.request(&json!({ "cmd": "roll_at_truncation_target" }))?;
        self.observe(&reply, fetch_offset)
    }

    /// Closes (and deletes) the log of the history.
    ///
    /// # Errors
    /// Harness errors.
    pub fn close(&mut self) -> Result<(), String> {
        self.request(&json!({ "cmd": "close" })).map(drop)
    }
}

/// The request of a maintenance operation (`DiffDriver.maintenance`), at `now_ms`.
fn maintenance_request(op: &Op, now_ms: i64) -> Value {
    match op {
        Op::Retention {
            retention_ms,
            retention_bytes,
        } => json!({
            "cmd": "retention", "now_ms": now_ms, "retention_ms": retention_ms,
            "retention_bytes": retention_bytes,
        }),
        Op::DeleteRecords { offset } => {
            json!({ "cmd": "delete_records", "now_ms": now_ms, "offset": offset })
        }
        Op::TruncateFully { offset } => {
            json!({ "cmd": "truncate_fully", "now_ms": now_ms, "offset": offset })
        }
        Op::Clean {
            delete_retention_ms,
        } => json!({
            "cmd": "clean", "now_ms": now_ms, "delete_retention_ms": delete_retention_ms,
        }),
        Op::Crash { lag, tear_back } => json!({
            "cmd": "crash", "now_ms": now_ms, "lag": lag.map_or(-1, i32::from),
            "tear_back": tear_back,
        }),
        // The others have their own requests (`Kafka::apply`).
        other => json!({ "cmd": format!("not a maintenance operation: {}", other.name()) }),
    }
}

/// The segment files a maintenance operation's reply lists.
fn files(reply: &Value) -> Result<Option<Vec<(i64, u64)>>, String> {
    reply
        .get("files")
        .map(|f| {
            serde_json::from_value(f.clone()).map_err(|e| format!("DiffDriver files {f}: {e}"))
        })
        .transpose()
}

/// The request of an operation of part B (`batch`: its bytes, `crate::batches::bytes`).
fn part_b_request(op: &Op, batch: &[u8]) -> Result<Value, String> {
    Ok(match op {
        Op::Follower {
            leader_epoch: Some(epoch),
            ..
        } => json!({ "cmd": "follower", "hex": hex::encode(batch), "leader_epoch": epoch }),
        Op::Follower { .. } => json!({ "cmd": "follower", "hex": hex::encode(batch) }),
        Op::TxnMarker {
            transaction_version,
            ..
        } => json!({
            "cmd": "marker_tv", "hex": hex::encode(batch),
            "transaction_version": transaction_version,
        }),
        Op::LeaderBatches { .. } => json!({
            "cmd": "append", "hex": hex::encode(batch), "origin": "client",
        }),
        Op::BecomeLeader => json!({ "cmd": "become_leader" }),
        Op::OffsetForTimestamp { .. } => json!({
            "cmd": "offset_for_timestamp", "timestamp": crate::batches::instant_of(batch)?,
        }),
        Op::ExpireProducers { .. } => json!({
            "cmd": "expire", "now": crate::batches::instant_of(batch)?,
        }),
        other => return Err(format!("no request for {other:?}")),
    })
}

impl Drop for Kafka {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "{}", json!({ "cmd": "exit" }));
        let _ = self.stdin.flush();
        for _ in 0..100 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
