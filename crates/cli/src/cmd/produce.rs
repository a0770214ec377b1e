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
    /// Batches the log answered as retries of its producer's last 5 (nothing written).
    pub duplicates: u64,
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
    let log = Log::open_with(&args.dir, config, super::open_options())?;
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
        if summary.duplicates > 0 {
            out.line(format_args!(
                "{} batches were retries of batches already in the log (answered from the producer's deduplication cache, nothing written)",
                summary.duplicates
            ))?;
        }
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
    /// The sequence of the next batch's first record (`--producer-id`).
    next_sequence: i32,
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
            next_sequence: args.base_sequence,
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
                Ok(record) => self.push_record(&record).map_err(|e| match e {
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
        let mut record = Synthetic::new(record_bytes);
        for i in 0..count {
            record.set(i);
            self.push(Some(&record.key), Some(&record.value), None, &[])
                .map_err(|e| match e {
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

    fn push_record(&mut self, record: &InputRecord) -> Result<(), PushError> {
        let headers: Vec<(&str, Option<&[u8]>)> = record
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_deref()))
            .collect();
        self.push(
            record.key.as_deref(),
            record.value.as_deref(),
            record.timestamp_ms,
            &headers,
        )
    }

    /// Adds one record to the batch being built (`timestamp_ms` `None`: now), appending the
    /// batch first when the record would not fit in it.
    fn push(
        &mut self,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        timestamp_ms: Option<i64>,
        headers: &[(&str, Option<&[u8]>)],
    ) -> Result<(), PushError> {
        let size = key.map_or(0, <[u8]>::len)
            + value.map_or(0, <[u8]>::len)
            + headers
                .iter()
                .map(|(k, v)| k.len() + v.map_or(0, <[u8]>::len))
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
        let (args, next_sequence) = (self.args, &self.next_sequence);
        let builder = self.builder.get_or_insert_with(|| {
            let builder = BatchBuilder::new(0).compression(compression);
            match (args.producer_id, args.producer_epoch) {
                (Some(id), Some(epoch)) => builder
                    .producer(id, epoch, *next_sequence)
                    .transactional(args.transactional),
                _ => builder,
            }
        });
        builder.append(timestamp_ms.unwrap_or_else(now_ms), key, value, headers);
        Ok(())
    }

    fn flush_batch(&mut self) -> Result<(), Error> {
        let Some(builder) = self.builder.take() else {
            return Ok(());
        };
        let builder_count = builder.record_count();
        let bytes = builder.build().map_err(|source| Error::Records {
            path: self.args.dir.clone(),
            source,
        })?;
        let info: AppendInfo = if self.args.durable {
            self.log.append_durable(&bytes)?
        } else {
            self.log.append(&bytes)?
        };
        // Kafka's DefaultRecordBatch.incrementSequence: sequences wrap past i32::MAX.
        let count = builder_count;
        self.next_sequence = if self.next_sequence > i32::MAX - count {
            count - (i32::MAX - self.next_sequence) - 1
        } else {
            self.next_sequence + count
        };
        let s = &mut self.summary;
        if info.duplicate {
            s.duplicates += 1;
        } else {
            s.records += (info.last_offset - info.first_offset + 1) as u64;
            s.batches += 1;
        }
        s.bytes += info.size_bytes;
        s.first_offset.get_or_insert(info.first_offset);
        s.last_offset = Some(info.last_offset);
        if self.args.json {
            self.out.json(&AppendedLine {
                base_offset: info.first_offset,
                last_offset: info.last_offset,
                duplicate: info.duplicate,
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

/// The synthetic record `i` of `--count`, written into buffers reused from record to record:
/// key `key-{i}` and the value [`fill_value`] writes, byte for byte, without a formatting call
/// or an allocation per record (they cost more than appending the record did).
struct Synthetic {
    key: Vec<u8>,
    value: Vec<u8>,
    /// `a` to `z` over and over, 26 bytes longer than a value: record `i`'s filler is the
    /// window that starts at `i % 26`.
    alphabet: Vec<u8>,
}

/// `value-` and 12 digits and `-`: the label [`fill_value`] starts a value with, for record
/// numbers below 10^12 (larger ones take the slow path).
const LABEL_BYTES: usize = 19;

impl Synthetic {
    fn new(record_bytes: usize) -> Self {
        Synthetic {
            key: Vec::with_capacity(24),
            value: vec![0; record_bytes],
            alphabet: (0..record_bytes + 26)
                .map(|n| b'a' + (n % 26) as u8)
                .collect(),
        }
    }

    /// Makes `key` and `value` record `i`'s.
    fn set(&mut self, i: u64) {
        self.key.clear();
        self.key.extend_from_slice(b"key-");
        push_decimal(&mut self.key, i);
        if i >= 1_000_000_000_000 {
            fill_value(&mut self.value, i);
            return;
        }
        let mut label = *b"value-000000000000-";
        let mut rest = i;
        for digit in label[6..18].iter_mut().rev() {
            *digit = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        let len = self.value.len();
        let head = len.min(LABEL_BYTES);
        self.value[..head].copy_from_slice(&label[..head]);
        if len > LABEL_BYTES {
            // fill_value's byte n is b'a' + (i + n) % 26, i.e. alphabet[i % 26 + n].
            let start = (i % 26) as usize + LABEL_BYTES;
            self.value[LABEL_BYTES..]
                .copy_from_slice(&self.alphabet[start..start + len - LABEL_BYTES]);
        }
    }
}

/// Appends `n` in decimal, as `{n}` formats it.
fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut first = digits.len();
    loop {
        first -= 1;
        digits[first] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[first..]);
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
    fn synthetic_records_are_fill_values_and_numbered_keys() {
        let numbers = [
            0,
            1,
            25,
            26,
            27,
            999,
            123_456_789,
            999_999_999_999,
            1_000_000_000_000,
            1_000_000_000_027,
            u64::from(u32::MAX) * 1000,
        ];
        for bytes in [0, 1, 5, 18, 19, 20, 45, 100, 1000] {
            let mut record = Synthetic::new(bytes);
            let mut expected = vec![0; bytes];
            for i in numbers.into_iter().chain(0..600) {
                record.set(i);
                fill_value(&mut expected, i);
                assert_eq!(record.value, expected, "record {i}, {bytes} bytes");
                assert_eq!(record.key, format!("key-{i}").into_bytes(), "record {i}");
            }
        }
        let mut max = Vec::new();
        push_decimal(&mut max, u64::MAX);
        assert_eq!(max, u64::MAX.to_string().into_bytes());
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
