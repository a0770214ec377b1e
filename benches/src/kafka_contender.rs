//! Contender (d): Kafka 4.4's own storage code (`kafka-storage`: `UnifiedLog`, `LogLoader`,
//! `OffsetIndex`), run on the JVM by `interop/kafka`'s `seglog.interop.KafkaBench` (issue #19).
//!
//! One JVM is started for the whole suite, at the first Kafka row, and driven over its stdin and
//! stdout (one JSON object per line each way). For every workload the Rust side writes what
//! Kafka needs to files (the very batch bytes seglog appends, the same point-read offsets,
//! timestamps and lookup targets, the directory a killed seglog writer left) and asks the JVM to
//! set up a trial, which warms the JIT with untimed runs. Then each round's `prepare`, `run` and
//! `cleanup` are requests: the JVM times only the operation, in-process, as wall-clock minus its
//! thread's runqueue wait (the harness's own rule), and that time is the sample
//! ([`Work::elapsed`]). So Kafka's runs take their turn in the same interleaved rounds, medians
//! and same-round ratios as every other contender.
//!
//! Kafka's rows need a Java class path (`--kafka-classpath FILE`, which `cargo xtask bench`
//! passes when `java` and `mvn` are on `PATH`); without one they are skipped with one note.
//! The workloads put these trials in rows (role [`crate::harness::Role::Kafka`]), and
//! `targets.rs` checks the goals of #19 as same-round ratios of seglog's rate over Kafka's.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::rc::Rc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::data::Dataset;
use crate::harness::{Trial, Work};
use crate::{Result, io_error};

/// Untimed runs before the first timed one, so that the JIT has compiled the hot paths (each
/// run is thousands of calls of every method on them).
const WARMUP_RUNS: u64 = 2;

/// The JVM's options: the broker's own (`kafka-run-class.sh`'s `KAFKA_HEAP_OPTS` and
/// `KAFKA_JVM_PERFORMANCE_OPTS` defaults), except `-XX:+ExplicitGCInvokesConcurrent`: each
/// trial's untimed `prepare` calls `System.gc()` so that no run inherits the previous run's
/// garbage, and a concurrent cycle would run on into the timed part.
const JVM_OPTIONS: &[&str] = &[
    "-Xms1g",
    "-Xmx1g",
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:MaxInlineLevel=15",
    "-Djava.awt.headless=true",
];

/// The table label of every Kafka row.
pub const LABEL: &str = "Kafka 4.4 (kafka-storage, JVM)";

/// The table label of the Kafka floor-lookup row.
pub const INDEX_LABEL: &str = "Kafka 4.4 (OffsetIndex.lookup)";

/// Kafka's side of the suite: where its class path is, or why it does not run.
pub struct Kafka {
    source: Source,
    jvm: RefCell<Option<Rc<Jvm>>>,
}

enum Source {
    ClassPath(PathBuf),
    Skipped(String),
}

impl Kafka {
    /// Kafka rows run from the Java class path held in `file` (`interop/kafka`'s classes and
    /// its Maven dependencies, `:`-separated).
    pub fn from_classpath_file(file: PathBuf) -> Self {
        Self {
            source: Source::ClassPath(file),
            jvm: RefCell::new(None),
        }
    }

    /// No Kafka rows, for `reason`.
    pub fn skipped(reason: String) -> Self {
        Self {
            source: Source::Skipped(reason),
            jvm: RefCell::new(None),
        }
    }

    /// The one line saying the Kafka rows were skipped, if they were.
    pub fn skip_note(&self) -> Option<String> {
        match &self.source {
            Source::Skipped(reason) => Some(format!("Kafka 4.4 rows skipped: {reason}")),
            Source::ClassPath(_) => None,
        }
    }

    /// The running JVM, started at the first call; `None` when Kafka rows are skipped.
    fn jvm(&self) -> Result<Option<Rc<Jvm>>> {
        let Source::ClassPath(file) = &self.source else {
            return Ok(None);
        };
        let mut slot = self.jvm.borrow_mut();
        if slot.is_none() {
            *slot = Some(Rc::new(Jvm::start(file)?));
        }
        Ok(slot.clone())
    }
}

impl Kafka {
    /// `UnifiedLog.appendAsLeader` of `data`'s batches, one call per batch, into a fresh log
    /// in `root` every run; `None` when Kafka rows are skipped.
    ///
    /// # Errors
    ///
    /// If the JVM cannot be started or the trial cannot be set up.
    pub fn append(&self, data: &Dataset, root: &Path) -> Result<Option<KafkaTrial>> {
        let Some(jvm) = self.jvm()? else {
            return Ok(None);
        };
        let image = write_image(data, root)?;
        let spec = data.spec;
        let trial = KafkaTrial::setup(
            &jvm,
            json!({
                "kind": "append",
                "dir": root.join("kafka-append-0"),
                "image": image,
                "records": spec.records,
                "payload_bytes": spec.payload_bytes(),
            }),
        );
        remove_file(&image)?;
        trial.map(Some)
    }

    /// Kafka appends `data` as the leader into a log under `root` (untimed), for the read
    /// workloads; `None` when Kafka rows are skipped.
    ///
    /// # Errors
    ///
    /// If the JVM cannot be started or the log cannot be built.
    pub fn log(&self, data: &Dataset, root: &Path) -> Result<Option<KafkaLog>> {
        let Some(jvm) = self.jvm()? else {
            return Ok(None);
        };
        let image = write_image(data, root)?;
        let reply = jvm.request(json!({
            "cmd": "log",
            "dir": root.join("kafka-0"),
            "image": image,
            "records": data.spec.records,
        }));
        remove_file(&image)?;
        let id = id_of(&reply?)?;
        Ok(Some(KafkaLog {
            jvm,
            id,
            root: root.to_path_buf(),
            record_bytes: data.spec.record_bytes,
            payload_bytes: data.spec.payload_bytes(),
        }))
    }

    /// LogLoader recovery (`UnifiedLog.create`, recovery point 0, no clean shutdown) of a fresh
    /// copy of `pristine` (the `.log`, `.index` and `.timeindex` files a killed seglog writer
    /// left) in `root` every run, holding `records` records; `None` when Kafka rows are
    /// skipped.
    ///
    /// # Errors
    ///
    /// If the JVM cannot be started or the trial cannot be set up.
    pub fn recovery(
        &self,
        pristine: &Path,
        root: &Path,
        records: u64,
        payload_bytes: u64,
    ) -> Result<Option<KafkaTrial>> {
        let Some(jvm) = self.jvm()? else {
            return Ok(None);
        };
        KafkaTrial::setup(
            &jvm,
            json!({
                "kind": "recovery",
                "pristine": pristine,
                "dir": root.join("kafka-recovery-0"),
                "records": records,
                "payload_bytes": payload_bytes,
            }),
        )
        .map(Some)
    }

    /// `OffsetIndex.lookup` at each of `targets` on the `.index` file at `index` (the one
    /// seglog's row looks up in), mapped read-only; `None` when Kafka rows are skipped.
    ///
    /// # Errors
    ///
    /// If the JVM cannot be started, the targets cannot be written or the trial cannot be set
    /// up.
    pub fn floor_lookup(&self, index: &Path, targets: &[u32]) -> Result<Option<KafkaTrial>> {
        let Some(jvm) = self.jvm()? else {
            return Ok(None);
        };
        let root = index.parent().unwrap_or(Path::new("."));
        let file = write_numbers(root, "kafka-floor-targets.txt", targets)?;
        let trial = KafkaTrial::setup(
            &jvm,
            json!({ "kind": "floor", "index": index, "targets": file }),
        );
        remove_file(&file)?;
        trial.map(Some)
    }
}

/// A log Kafka built from a dataset (untimed), shared by the read workloads; closed (and its
/// directory deleted) when dropped.
pub struct KafkaLog {
    jvm: Rc<Jvm>,
    id: u64,
    root: PathBuf,
    record_bytes: usize,
    payload_bytes: u64,
}

impl KafkaLog {
    /// The whole log in offset order: `UnifiedLog.read` of 1 MiB from the next offset into
    /// one reused buffer, every batch's CRC checked and every record decoded.
    ///
    /// # Errors
    ///
    /// If the trial cannot be set up.
    pub fn scan(&self) -> Result<KafkaTrial> {
        KafkaTrial::setup(
            &self.jvm,
            json!({ "kind": "scan", "log": self.id, "payload_bytes": self.payload_bytes }),
        )
    }

    /// One record at each of `targets`: `UnifiedLog.read(offset, 1, LOG_END, minOneMessage)`,
    /// the batch's CRC checked, records decoded up to the target.
    ///
    /// # Errors
    ///
    /// If the targets cannot be written or the trial cannot be set up.
    pub fn point_read(&self, targets: &[u64]) -> Result<KafkaTrial> {
        self.reads("point", targets)
    }

    /// For each of `targets`, `UnifiedLog.fetchOffsetByTimestamp` (ListOffsets), then the read
    /// of that record as in [`KafkaLog::point_read`].
    ///
    /// # Errors
    ///
    /// If the targets cannot be written or the trial cannot be set up.
    pub fn timestamp_read(&self, targets: &[i64]) -> Result<KafkaTrial> {
        self.reads("timestamp", targets)
    }

    fn reads<T: std::fmt::Display>(&self, kind: &str, targets: &[T]) -> Result<KafkaTrial> {
        let file = write_numbers(&self.root, &format!("kafka-{kind}-targets.txt"), targets)?;
        let trial = KafkaTrial::setup(
            &self.jvm,
            json!({
                "kind": kind,
                "log": self.id,
                "targets": file,
                "record_bytes": self.record_bytes,
            }),
        );
        remove_file(&file)?;
        trial
    }
}

impl Drop for KafkaLog {
    fn drop(&mut self) {
        self.jvm.close(self.id);
    }
}

/// Writes `data`'s batches back to back (as the producer sends them, base offset 0 each) to a
/// file in `root` for the JVM to load.
fn write_image(data: &Dataset, root: &Path) -> Result<PathBuf> {
    let path = root.join("kafka-input.batches");
    std::fs::write(&path, &data.image).map_err(|e| io_error("write", &path, e))?;
    Ok(path)
}

fn write_numbers<T: std::fmt::Display>(root: &Path, name: &str, numbers: &[T]) -> Result<PathBuf> {
    let path = root.join(name);
    let mut text = String::with_capacity(numbers.len() * 12);
    for number in numbers {
        let _ = writeln!(text, "{number}");
    }
    std::fs::write(&path, text).map_err(|e| io_error("write", &path, e))?;
    Ok(path)
}

fn remove_file(path: &Path) -> Result<()> {
    std::fs::remove_file(path).map_err(|e| io_error("remove", path, e))
}

fn id_of(reply: &Value) -> Result<u64> {
    reply
        .get("id")
        .and_then(Value::as_u64)
        .ok_or_else(|| format!("KafkaBench replied without an id: {reply}").into())
}

/// The JVM running `seglog.interop.KafkaBench`. Asked to exit (then killed, if it does not)
/// when dropped.
struct Jvm {
    child: RefCell<Child>,
    stdin: RefCell<ChildStdin>,
    stdout: RefCell<BufReader<ChildStdout>>,
}

impl Jvm {
    fn start(classpath_file: &Path) -> Result<Self> {
        let classpath = std::fs::read_to_string(classpath_file)
            .map_err(|e| io_error("read", classpath_file, e))?;
        let mut child = Command::new("java")
            .args(JVM_OPTIONS)
            .arg("-cp")
            .arg(classpath.trim())
            .arg("seglog.interop.KafkaBench")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("could not start java for the Kafka rows: {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("java started without pipes".into());
        };
        let jvm = Self {
            child: RefCell::new(child),
            stdin: RefCell::new(stdin),
            stdout: RefCell::new(BufReader::new(stdout)),
        };
        let hello = jvm.reply()?;
        eprintln!(
            "seglog-benches: Kafka rows from Kafka {} on {}",
            hello.get("kafka").and_then(Value::as_str).unwrap_or("?"),
            hello.get("java").and_then(Value::as_str).unwrap_or("?"),
        );
        Ok(jvm)
    }

    /// Sends `request` and returns the reply; a reply with `"ok": false` is an error.
    fn request(&self, request: Value) -> Result<Value> {
        {
            let mut stdin = self.stdin.borrow_mut();
            writeln!(stdin, "{request}")
                .and_then(|()| stdin.flush())
                .map_err(|e| format!("KafkaBench: sending {request}: {e}"))?;
        }
        let reply = self.reply()?;
        if reply.get("ok").and_then(Value::as_bool) == Some(true) {
            Ok(reply)
        } else {
            Err(format!(
                "KafkaBench: {} failed: {}",
                request.get("cmd").unwrap_or(&Value::Null),
                reply.get("error").unwrap_or(&reply)
            )
            .into())
        }
    }

    fn reply(&self) -> Result<Value> {
        let mut line = String::new();
        let read = self
            .stdout
            .borrow_mut()
            .read_line(&mut line)
            .map_err(|e| format!("KafkaBench: reading its reply: {e}"))?;
        if read == 0 {
            let status = self.child.borrow_mut().wait().ok();
            return Err(format!("KafkaBench exited ({status:?}); its stderr is above").into());
        }
        serde_json::from_str(&line).map_err(|e| {
            format!("KafkaBench replied with a line that is not JSON ({e}): {line}").into()
        })
    }

    /// Frees a trial or a log; a failure is printed, not returned (this runs from `Drop`).
    fn close(&self, id: u64) {
        if let Err(error) = self.request(json!({ "cmd": "close", "id": id })) {
            eprintln!("seglog-benches: {error}");
        }
    }
}

impl Drop for Jvm {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin.borrow_mut(), "{}", json!({ "cmd": "exit" }));
        let _ = self.stdin.borrow_mut().flush();
        let child = self.child.get_mut();
        for _ in 0..100 {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// One Kafka trial set up in the JVM; each step is a request, and the JVM's own timing of `run`
/// is the sample. Freed in the JVM when dropped.
pub struct KafkaTrial {
    jvm: Rc<Jvm>,
    id: u64,
    warmup_runs: usize,
}

impl KafkaTrial {
    fn setup(jvm: &Rc<Jvm>, mut parameters: Value) -> Result<Self> {
        parameters["cmd"] = json!("setup");
        parameters["warmup"] = json!(WARMUP_RUNS);
        let reply = jvm.request(parameters)?;
        let warmup_runs = reply
            .get("warmup_ns")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        Ok(Self {
            jvm: Rc::clone(jvm),
            id: id_of(&reply)?,
            warmup_runs,
        })
    }

    fn step(&self, cmd: &str) -> Result<Value> {
        self.jvm.request(json!({ "cmd": cmd, "id": self.id }))
    }
}

impl Trial for KafkaTrial {
    fn prepare(&mut self) -> Result<()> {
        self.step("prepare").map(drop)
    }

    fn run(&mut self) -> Result<Work> {
        let reply = self.step("run")?;
        let field = |name: &str| -> Result<u64> {
            reply
                .get(name)
                .and_then(Value::as_u64)
                .ok_or_else(|| format!("KafkaBench's run reply has no {name}: {reply}").into())
        };
        let (elapsed_ns, wall_ns) = (field("elapsed_ns")?, field("wall_ns")?);
        let wait_ns = field("runqueue_wait_ns")?;
        let mut work = Work::new(field("records")?, field("payload_bytes")?)
            .with_metric(
                "jvm_rq_wait_pct",
                100.0 * wait_ns as f64 / wall_ns.max(1) as f64,
            )
            .with_metric("warmup_runs", self.warmup_runs as f64);
        work.elapsed = Some(Duration::from_nanos(elapsed_ns));
        Ok(work)
    }

    fn cleanup(&mut self) -> Result<()> {
        self.step("cleanup").map(drop)
    }
}

impl Drop for KafkaTrial {
    fn drop(&mut self) {
        self.jvm.close(self.id);
    }
}
