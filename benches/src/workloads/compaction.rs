//! `compaction`: one log-cleaner round over a keyed log (every key updated many times, some
//! deleted), beside the raw read of the same bytes (the ceiling: a cleaner must read the dirty
//! log at least once). Throughput is MB/s of dirty log cleaned; the side figures are the offset
//! map's memory, bounded by `log.cleaner.dedupe.buffer.size`, and what the round kept.

use std::path::{Path, PathBuf};

use seglog::{BatchBuilder, CleanupPolicy, Log, LogConfig};

use crate::Result;
use crate::ceiling;
use crate::fsx;
use crate::harness::{Contender, Role, Trial, Work, WorkloadResult, measure};
use crate::workloads::{Context, names};

/// Distinct keys: every key is updated `records / KEYS` times on average.
const KEYS: u64 = 20_000;
/// Every this-many-th record is a tombstone.
const TOMBSTONE_EVERY: u64 = 13;
/// The dedupe buffer the round runs with (Kafka's default is 128 MiB; a smaller one shows the
/// bound): 24 bytes per key at a 0.9 load factor holds every key of the dirty section.
const DEDUPE_BUFFER_BYTES: i64 = 4 << 20;

fn config() -> LogConfig {
    LogConfig {
        cleanup_policy: CleanupPolicy::Compact,
        segment_bytes: 8 << 20,
        cleaner_dedupe_buffer_size: DEDUPE_BUFFER_BYTES,
        ..LogConfig::default()
    }
}

/// Runs the row.
///
/// # Errors
///
/// The first failing set-up or trial.
pub fn run(context: &mut Context) -> Result<Vec<WorkloadResult>> {
    let spec = context.plan.small;
    let records = spec.records / 2;
    let root = context.scratch.dir("compaction")?;
    let pristine = root.join("pristine");
    let (dirty_bytes, payload_bytes) = write_keyed_log(&pristine, records, spec.record_bytes)?;
    // The ceiling reads the same `.log` bytes, concatenated, once.
    let ceiling_file = root.join("ceiling.log");
    concat_logs(&pristine, &ceiling_file)?;
    let about = format!(
        "one cleaner round over {records} records of {} B ({} keys, every {TOMBSTONE_EVERY}th a \
         tombstone; {:.0} MB of dirty log; dedupe buffer {} MiB); the ceiling reads the same bytes \
         once",
        spec.record_bytes,
        KEYS,
        dirty_bytes as f64 / 1e6,
        DEDUPE_BUFFER_BYTES >> 20
    );
    context.notes.push(
        "compaction: map bytes is the offset map's memory (bounded by the dedupe buffer); records \
         kept is what the round left"
            .to_owned(),
    );
    let contenders = vec![
        Contender::new(
            Role::Ceiling,
            "ceiling (std::fs read)",
            context.cold(ceiling::SequentialRead::new(
                ceiling_file,
                records,
                payload_bytes,
            )),
        ),
        Contender::new(
            Role::Seglog,
            "seglog",
            context.cold(Clean {
                pristine,
                dir: root.join("seglog"),
                log: None,
                records,
                payload_bytes,
            }),
        ),
    ];
    Ok(vec![measure(
        names::COMPACTION,
        &about,
        context.plan.rounds,
        contenders,
    )?])
}

/// Appends `records` keyed records (`record_bytes` values) and rolls, so the whole log is
/// cleanable. Returns (bytes of the log, value bytes).
fn write_keyed_log(dir: &Path, records: u64, record_bytes: usize) -> Result<(u64, u64)> {
    let log = Log::open(dir, config()).map_err(|e| seglog_error("open", dir, e))?;
    log.set_high_watermark_policy(seglog::HighWatermarkPolicy::LogEnd)
        .map_err(|e| seglog_error("set policy", dir, e))?;
    let value = vec![b'v'; record_bytes];
    let mut payload = 0u64;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(0));
    let mut i = 0u64;
    while i < records {
        let mut builder = BatchBuilder::new(0);
        for _ in 0..100.min(records - i) {
            // A multiplicative hash spreads the updates of a key over the log.
            let key = format!("key-{:08}", i.wrapping_mul(0x9E37_79B9) % KEYS);
            let tombstone = i.is_multiple_of(TOMBSTONE_EVERY);
            builder.append(
                now,
                Some(key.as_bytes()),
                (!tombstone).then_some(&value[..]),
                &[],
            );
            if !tombstone {
                payload += record_bytes as u64;
            }
            i += 1;
        }
        let batch = builder.build().map_err(|e| format!("build a batch: {e}"))?;
        log.append(&batch)
            .map_err(|e| seglog_error("append", dir, e))?;
    }
    log.roll().map_err(|e| seglog_error("roll", dir, e))?;
    let bytes = log.segments().iter().map(|s| s.size_bytes).sum();
    log.close().map_err(|e| seglog_error("close", dir, e))?;
    Ok((bytes, payload))
}

fn concat_logs(dir: &Path, to: &Path) -> Result<()> {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| crate::io_error("list", dir, e))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "log"))
        .collect();
    logs.sort();
    let mut out = std::fs::File::create(to).map_err(|e| crate::io_error("create", to, e))?;
    for path in logs {
        let mut file = std::fs::File::open(&path).map_err(|e| crate::io_error("open", &path, e))?;
        std::io::copy(&mut file, &mut out).map_err(|e| crate::io_error("copy", &path, e))?;
    }
    Ok(())
}

fn seglog_error(operation: &str, dir: &Path, error: seglog::Error) -> crate::Error {
    format!("seglog {operation} {}: {error}", dir.display()).into()
}

/// One round on a fresh copy of the pristine log (copied and opened untimed).
struct Clean {
    pristine: PathBuf,
    dir: PathBuf,
    log: Option<Log>,
    records: u64,
    payload_bytes: u64,
}

impl Trial for Clean {
    fn prepare(&mut self) -> Result<()> {
        fsx::copy_dir(&self.pristine, &self.dir)?;
        let log = Log::open(&self.dir, config()).map_err(|e| seglog_error("open", &self.dir, e))?;
        log.set_high_watermark(log.log_end_offset())
            .map_err(|e| seglog_error("set high watermark", &self.dir, e))?;
        self.log = Some(log);
        Ok(())
    }

    fn run(&mut self) -> Result<Work> {
        let log = self.log.as_ref().ok_or("compaction: no log")?;
        let report = log
            .clean()
            .map_err(|e| seglog_error("clean", &self.dir, e))?
            .ok_or("compaction: nothing to clean")?;
        let mut work = Work::new(self.records, self.payload_bytes);
        work.metrics = vec![
            ("map bytes", report.map_memory_bytes as f64),
            ("records kept", report.records_after as f64),
            ("bytes after", report.bytes_after as f64),
        ];
        if report.map_memory_bytes > DEDUPE_BUFFER_BYTES as u64 || report.map_full {
            return Err("compaction: the offset map outgrew the dedupe buffer".into());
        }
        Ok(work)
    }

    fn cleanup(&mut self) -> Result<()> {
        if let Some(log) = self.log.take() {
            log.close()
                .map_err(|e| seglog_error("close", &self.dir, e))?;
        }
        std::fs::remove_dir_all(&self.dir).map_err(|e| crate::io_error("remove", &self.dir, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_trial_cleans_a_small_keyed_log_within_the_buffer() {
        let tmp = tempfile::tempdir().unwrap();
        let pristine = tmp.path().join("pristine");
        let (bytes, payload) = write_keyed_log(&pristine, 60_000, 100).unwrap();
        assert!(bytes > payload);
        let mut trial = Clean {
            pristine,
            dir: tmp.path().join("run"),
            log: None,
            records: 60_000,
            payload_bytes: payload,
        };
        trial.prepare().unwrap();
        let work = trial.run().unwrap();
        let kept = work
            .metrics
            .iter()
            .find(|(n, _)| *n == "records kept")
            .unwrap()
            .1;
        assert!(kept <= KEYS as f64, "{kept}");
        trial.cleanup().unwrap();
    }
}
