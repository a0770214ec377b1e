//! `seglog produce DIR`: append records from JSON Lines or synthetic ones.
//!
//! Records are grouped into v2 batches of `--batch-records` (fewer when a batch would exceed
//! `max.message.bytes`), compressed with `--compression`, and appended as the leader: the log
//! assigns offsets. With `--durable` every batch is fsynced before it is reported.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::Instant;

use seglog::{AppendInfo, Log, LogConfig};
use seglog_records::{BatchBuilder, Compression, RECORD_BATCH_OVERHEAD};

use crate::Outcome;
use crate::cli::{CompressionArg, ProduceArgs};
use crate::dir::{DirListing, check_new_partition_name};
use crate::error::{Error, InputErrorKind};
use crate::input::{InputRecord, JsonLines};
use crate::output::{AppendedLine, Out};
use crate::progress::Progress;

/// Default value size of a synthetic record.
const DEFAULT_RECORD_BYTES: usize = 100;

/// What one `produce` run appended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProduceSummary {
    /// Records appended.
    pub records: u64,
    /// Batches appended.
    pub batches: u64,
    /// Bytes appended to the log (batch bytes, after compression).
    pub bytes: u64,
    /// First offset appended, if any.
    pub first_offset: Option<i64>,
    /// Last offset appended, if any.
    pub last_offset: Option<i64>,
}

impl CompressionArg {
    /// The records crate's codec.
    pub fn codec(self) -> Compression {
        match self {
            CompressionArg::None => Compression::None,
            CompressionArg::Gzip => Compression::Gzip,
            CompressionArg::Snappy => Compression::Snappy,
            CompressionArg::Lz4 => Compression::Lz4,
            CompressionArg::Zstd => Compression::Zstd,
        }
    }
}

/// Builds a [`LogConfig`] from `--config KEY=VALUE` items (Kafka topic names).
///
/// # Errors
/// [`Error::Log`] with the offending key or value.
pub fn config_from_args(items: &[String]) -> Result<LogConfig, Error> {
    Ok(LogConfig::from_pairs(items)?)
}

/// Milliseconds since the Unix epoch, by the system clock.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Runs `seglog produce`.
///
/// # Errors
/// Bad `--config`, bad input lines, a log that cannot be opened or appended to.
pub fn run(args: &ProduceArgs, quiet: bool) -> Result<Outcome, Error> {
    let config = config_from_args(&args.config)?;
    if args.input.is_none() && args.count.is_none() {
        return Err(Error::Usage {
            arg: "--input",
            reason: "give --input FILE (or - for stdin) or --count N".into(),
        });
    }
    check_target(&args.dir)?;
    let max_record = max_record_bytes(&config);
    if let Some(bytes) = args.record_bytes
        && bytes > max_record
    {
        return Err(Error::Usage {
            arg: "--record-bytes",
            reason: format!(
                "{bytes} bytes do not fit in one batch of max.message.bytes = {} (at most {max_record})",
                config.max_message_bytes
            ),
        });
    }
    std::fs::create_dir_all(&args.dir).map_err(Error::io("create directory", &args.dir))?;
    let log = Log::open(&args.dir, config)?;
    let mut out = Out::stdout();
    let started = Instant::now();
    let mut producer = Producer::new(&log, args, &mut out);
    let result = match (&args.input, args.count) {
        (Some(path), _) => producer.input_lines(path),
        (None, Some(count)) => producer.synthetic(
            count,
            args.record_bytes.unwrap_or(DEFAULT_RECORD_BYTES),
            quiet,
        ),
        (None, None) => Ok(()),
    };
    let summary = producer.summary;
    // Close even after a failed append, so what was appended is closed cleanly.
    let closed = log.close();
    result?;
    closed?;
    if !args.json {
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        let range = match (summary.first_offset, summary.last_offset) {
            (Some(a), Some(b)) => format!("offsets {a}..={b}"),
            _ => "nothing".to_owned(),
        };
        out.line(format_args!(
            "appended {} records in {} batches ({} bytes) to {}: {range} in {:.3} s ({:.0} records/s, {:.1} MB/s)",
            summary.records,
            summary.batches,
            summary.bytes,
            args.dir.display(),
            secs,
            summary.records as f64 / secs,
            summary.bytes as f64 / secs / 1e6,
        ))?;
    }
    out.flush()?;
    Ok(Outcome::Ok)
}

/// Refuses a directory `produce` must not write into: a `log.dirs` root, a partition
/// directory with a segment file that is not a regular file, or (for a new log) a name Kafka
/// cannot load.
fn check_target(dir: &Path) -> Result<(), Error> {
    let has_log = match std::fs::metadata(dir) {
        Ok(_) => {
            let listing = DirListing::partition(dir)?;
            listing.segments.values().any(|s| s.log.is_some())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(Error::io("stat", dir)(e)),
    };
    if has_log {
        // An existing log keeps whatever name it was given.
        return Ok(());
    }
    check_new_partition_name(dir)
}

/// The largest key + value + headers one record may have and still fit one batch under
/// `max.message.bytes` (batch header and record framing subtracted).
fn max_record_bytes(config: &LogConfig) -> usize {
    usize::try_from(config.max_message_bytes)
        .unwrap_or(0)
        .saturating_sub(RECORD_BATCH_OVERHEAD + 64)
}

struct Producer<'a> {
    log: &'a Log,
    args: &'a ProduceArgs,
    out: &'a mut Out,
    builder: Option<BatchBuilder>,
    /// Uncompressed bytes a batch may hold before it is cut (below `max.message.bytes`).
    max_batch_bytes: usize,
    summary: ProduceSummary,
}

impl<'a> Producer<'a> {
    fn new(log: &'a Log, args: &'a ProduceArgs, out: &'a mut Out) -> Self {
        Producer {
            log,
            args,
            out,
            builder: None,
            max_batch_bytes: max_record_bytes(&log.config()),
            summary: ProduceSummary::default(),
        }
    }

    fn input_lines(&mut self, path: &Path) -> Result<(), Error> {
        let reader: Box<dyn BufRead> = if path == Path::new("-") {
            Box::new(BufReader::new(std::io::stdin().lock()))
        } else {
            Box::new(BufReader::new(
                File::open(path).map_err(Error::io("open", path))?,
            ))
        };
        // Hex doubles each byte and a JSON string escape is at most six bytes per byte: no line
        // longer than that can hold a record this log accepts.
        let max_line = (self.max_batch_bytes as u64)
            .saturating_mul(6)
            .saturating_add(64 << 10);
        let mut lines = JsonLines::new(reader, path, self.args.encoding, max_line);
        while let Some(record) = lines.next() {
            let pushed = match record {
                Ok(record) => self.push(&record).map_err(|e| match e {
                    PushError::TooLarge(kind) => lines.error(kind),
                    PushError::Other(e) => e,
                }),
                Err(e) => Err(e),
            };
            if let Err(e) = pushed {
                // Every record before the bad line is appended; the error names the line.
                self.flush_batch()?;
                return Err(e);
            }
        }
        self.flush_batch()
    }

    fn synthetic(&mut self, count: u64, record_bytes: usize, quiet: bool) -> Result<(), Error> {
        let progress = Progress::records(count, "produce", quiet);
        let mut value = vec![0u8; record_bytes];
        for i in 0..count {
            fill_value(&mut value, i);
            let record = InputRecord {
                key: Some(format!("key-{i}").into_bytes()),
                value: Some(value.clone()),
                timestamp_ms: None,
                headers: Vec::new(),
            };
            self.push(&record).map_err(|e| match e {
                PushError::TooLarge(kind) => Error::Usage {
                    arg: "--record-bytes",
                    reason: kind.to_string(),
                },
                PushError::Other(e) => e,
            })?;
            if i % 4096 == 0 {
                progress.set(i);
            }
        }
        progress.finish();
        self.flush_batch()
    }

    fn push(&mut self, record: &InputRecord) -> Result<(), PushError> {
        let size = record.key.as_ref().map_or(0, Vec::len)
            + record.value.as_ref().map_or(0, Vec::len)
            + record
                .headers
                .iter()
                .map(|(k, v)| k.len() + v.as_ref().map_or(0, Vec::len))
                .sum::<usize>();
        if size > self.max_batch_bytes {
            return Err(PushError::TooLarge(InputErrorKind::RecordTooLarge {
                size,
                max_message_bytes: i64::from(self.log.config().max_message_bytes),
            }));
        }
        let full = self.builder.as_ref().is_some_and(|b| {
            b.record_count() >= self.args.batch_records as i32
                || b.uncompressed_records_size() + size > self.max_batch_bytes
        });
        if full {
            self.flush_batch().map_err(PushError::Other)?;
        }
        let compression = self.args.compression.codec();
        let builder = self
            .builder
            .get_or_insert_with(|| BatchBuilder::new(0).compression(compression));
        let headers: Vec<(&str, Option<&[u8]>)> = record
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_deref()))
            .collect();
        builder.append(
            record.timestamp_ms.unwrap_or_else(now_ms),
            record.key.as_deref(),
            record.value.as_deref(),
            &headers,
        );
        Ok(())
    }

    fn flush_batch(&mut self) -> Result<(), Error> {
        let Some(builder) = self.builder.take() else {
            return Ok(());
        };
        let bytes = builder.build().map_err(|source| Error::Records {
            path: self.args.dir.clone(),
            source,
        })?;
        let info: AppendInfo = if self.args.durable {
            self.log.append_durable(&bytes)?
        } else {
            self.log.append(&bytes)?
        };
        let s = &mut self.summary;
        s.records += (info.last_offset - info.first_offset + 1) as u64;
        s.batches += 1;
        s.bytes += info.size_bytes;
        s.first_offset.get_or_insert(info.first_offset);
        s.last_offset = Some(info.last_offset);
        if self.args.json {
            self.out.json(&AppendedLine {
                base_offset: info.first_offset,
                last_offset: info.last_offset,
            })?;
            self.out.flush()?;
        }
        Ok(())
    }
}

/// Why a record could not be added to the batch being built.
enum PushError {
    /// The record alone exceeds a batch (the caller names the input line or flag).
    TooLarge(InputErrorKind),
    /// Appending the full batch before it failed.
    Other(Error),
}

/// Deterministic synthetic value for record `i`: its number, then filler letters.
pub fn fill_value(value: &mut [u8], i: u64) {
    let label = format!("value-{i:012}-");
    for (n, byte) in value.iter_mut().enumerate() {
        *byte = label
            .as_bytes()
            .get(n)
            .copied()
            .unwrap_or(b'a' + ((i as usize + n) % 26) as u8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_values_are_deterministic_and_distinct() {
        let mut a = vec![0; 30];
        let mut b = vec![0; 30];
        fill_value(&mut a, 7);
        fill_value(&mut b, 7);
        assert_eq!(a, b);
        assert!(a.starts_with(b"value-000000000007-"));
        fill_value(&mut b, 8);
        assert_ne!(a, b);
        let mut short = vec![0; 3];
        fill_value(&mut short, 1);
        assert_eq!(short, b"val");
    }

    #[test]
    fn config_items_use_kafka_names() {
        let config = config_from_args(&[
            "segment.bytes=1048576".into(),
            "index.interval.bytes=100".into(),
        ])
        .unwrap();
        assert_eq!(config.segment_bytes, 1_048_576);
        assert_eq!(config.index_interval_bytes, 100);
        assert!(config_from_args(&["nonsense.key=1".into()]).is_err());
        assert!(config_from_args(&["segment.bytes".into()]).is_err());
    }
}
