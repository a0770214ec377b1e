//! Shared helpers: batch building, an independent oracle over raw `.log` bytes, the Kafka
//! corpus, and temp directories.

use std::path::{Path, PathBuf};

use seglog_records::{BatchBuilder, Batches, Compression};
use seglog_segment::{ActiveSegment, FileKind, SegmentConfig, file_path};

/// A small config: 100-byte index interval so that tests get many index entries.
pub fn small_config() -> SegmentConfig {
    SegmentConfig {
        index_interval_bytes: 100,
        max_index_bytes: 4096,
        segment_bytes: 1024 * 1024,
        ..SegmentConfig::default()
    }
}

/// A temp directory.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

/// One v2 batch at `base_offset` with `records` `(timestamp, value length)`.
pub fn batch(base_offset: i64, records: &[(i64, usize)], compression: Compression) -> Vec<u8> {
    let mut builder = BatchBuilder::new(base_offset).compression(compression);
    for (i, &(ts, len)) in records.iter().enumerate() {
        let value: Vec<u8> = (0..len).map(|j| (i + j) as u8).collect();
        builder.append(ts, Some(b"k"), Some(&value), &[]);
    }
    builder.build().expect("build batch").to_vec()
}

/// A batch of `count` records with timestamps `ts0, ts0+1, ...` and `len`-byte values.
pub fn simple_batch(base_offset: i64, count: usize, ts0: i64, len: usize) -> Vec<u8> {
    let records: Vec<(i64, usize)> = (0..count).map(|i| (ts0 + i as i64, len)).collect();
    batch(base_offset, &records, Compression::None)
}

/// Appends one batch the way the log does: largest offset, max timestamp and the last offset
/// of the batch holding it.
pub fn append_batch(active: &mut ActiveSegment, bytes: &[u8]) {
    let info = scan(bytes, 0).batches;
    let last = info.last().expect("a batch");
    let max = info
        .iter()
        .map(|b| b.max_timestamp_ms)
        .max()
        .expect("a batch");
    let offset_of_max = info
        .iter()
        .find(|b| b.max_timestamp_ms == max)
        .expect("max")
        .last_offset;
    active
        .append(last.last_offset, max, offset_of_max, bytes)
        .expect("append");
}

/// What the oracle knows of one batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchInfo {
    pub position: u64,
    pub size: u32,
    pub last_offset: i64,
    pub max_timestamp_ms: i64,
}

/// What the oracle knows of one record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordInfo {
    pub offset: i64,
    pub timestamp_ms: i64,
    pub batch: usize,
}

/// An independent reading of `.log` bytes with the record layer's own iterator.
#[derive(Debug, Default)]
pub struct Scan {
    pub batches: Vec<BatchInfo>,
    pub records: Vec<RecordInfo>,
    /// Bytes of whole valid batches.
    pub valid_bytes: u64,
    /// Running max of record timestamps, in log order (for `find_by_timestamp`).
    prefix_max_ts: Vec<i64>,
}

/// Scans `bytes` (validated, with records), stopping at a partial tail, corruption, or
/// offsets that do not increase from batch to batch. Where a batch's offsets do not increase
/// but it follows on from the batch before the previous one, the previous batch is the
/// damaged one and the scan stops before it (recovery's `OffsetJump` rule; the segment base is
/// taken to be 0 for the first batch, which only matters for damaged offsets).
pub fn scan(bytes: &[u8], base_position: u64) -> Scan {
    let mut out = Scan::default();
    // Record count and valid bytes before the last accepted batch, to take it back.
    let mut before_last = (0usize, 0u64);
    for batch in Batches::new(bytes, base_position).validated() {
        let Ok(batch) = batch else { break };
        let header = *batch.header();
        let first_offset = header.base_offset.unwrap_or(header.last_offset);
        if let Some(last) = out.batches.last().copied()
            && first_offset <= last.last_offset
        {
            let n = out.batches.len();
            let offset_before = if n >= 2 {
                out.batches[n - 2].last_offset
            } else {
                -1
            };
            if first_offset > offset_before {
                out.batches.pop();
                out.records.truncate(before_last.0);
                out.valid_bytes = before_last.1;
            }
            break;
        }
        before_last = (out.records.len(), out.valid_bytes);
        let index = out.batches.len();
        out.batches.push(BatchInfo {
            position: header.position,
            size: header.total_size,
            last_offset: header.last_offset,
            max_timestamp_ms: header.max_timestamp_ms,
        });
        for record in batch.records(1 << 28) {
            // A batch whose CRC holds but whose offsets were flipped (the first 16 bytes are
            // not covered) can hold undecodable records; recovery keeps it, like Kafka.
            let Ok(record) = record else { break };
            out.records.push(RecordInfo {
                offset: record.offset,
                timestamp_ms: record.timestamp_ms.unwrap_or(-1),
                batch: index,
            });
        }
        out.valid_bytes = header.position + u64::from(header.total_size) - base_position;
    }
    let mut max = i64::MIN;
    out.prefix_max_ts = out
        .records
        .iter()
        .map(|r| {
            max = max.max(r.timestamp_ms);
            max
        })
        .collect();
    out
}

impl Scan {
    /// Oracle for `translate_offset(offset, 0)`: the first batch whose last offset is >= it.
    pub fn translate(&self, offset: i64) -> Option<BatchInfo> {
        let i = self.batches.partition_point(|b| b.last_offset < offset);
        self.batches.get(i).copied()
    }

    /// Oracle for `find_offset_by_timestamp`: the first record in log order with
    /// `timestamp >= ts` and `offset >= starting_offset`.
    pub fn find_by_timestamp(&self, ts: i64, starting_offset: i64) -> Option<RecordInfo> {
        let first = self.records.partition_point(|r| r.offset < starting_offset);
        if first == 0 {
            // The first record reaching `ts` is where the running max first reaches it.
            let i = self.prefix_max_ts.partition_point(|&max| max < ts);
            return self.records.get(i).copied();
        }
        self.records[first..]
            .iter()
            .copied()
            .find(|r| r.timestamp_ms >= ts)
    }

    /// Oracle for `read_next_offset`.
    pub fn next_offset(&self, base_offset: i64) -> i64 {
        self.batches
            .last()
            .map_or(base_offset, |b| b.last_offset + 1)
    }

    /// The `.index` / `.timeindex` bytes Kafka's `LogSegment.recover` + `close` write for
    /// these batches (spec §3.5), computed independently of the crate.
    pub fn kafka_recover_indexes(&self, base_offset: i64, interval: u64) -> (Vec<u8>, Vec<u8>) {
        let mut index = Vec::new();
        let mut time = Vec::new();
        let mut last_index_entry = 0u64;
        let (mut max_ts, mut max_offset) = (-1i64, -1i64);
        let mut last_time_ts = -1i64;
        let mut push_time = |time: &mut Vec<u8>, ts: i64, offset: i64| {
            if ts > last_time_ts {
                time.extend_from_slice(&ts.to_be_bytes());
                time.extend_from_slice(&((offset - base_offset) as i32).to_be_bytes());
                last_time_ts = ts;
            }
        };
        for b in &self.batches {
            if b.max_timestamp_ms > max_ts {
                (max_ts, max_offset) = (b.max_timestamp_ms, b.last_offset);
            }
            if b.position - last_index_entry > interval {
                index.extend_from_slice(&((b.last_offset - base_offset) as i32).to_be_bytes());
                index.extend_from_slice(&(b.position as i32).to_be_bytes());
                push_time(&mut time, max_ts, max_offset);
                last_index_entry = b.position;
            }
        }
        push_time(&mut time, max_ts, max_offset);
        (index, time)
    }
}

/// Every segment of the corpus (read-only; tests copy what they modify): `(partition dir, base
/// offset)`, sorted; empty when the corpus is absent outside CI (see `seglog-test-corpus`).
pub fn corpus_segments() -> Vec<(PathBuf, i64)> {
    let mut out = Vec::new();
    for partition in seglog_test_corpus::partitions() {
        for file in std::fs::read_dir(&partition).expect("read partition") {
            let file = file.expect("entry").path();
            if let Some(parsed) = seglog_segment::parse_file_name(&file)
                && parsed.kind == FileKind::LOG
            {
                out.push((partition.clone(), parsed.base_offset));
            }
        }
    }
    out.sort();
    out
}

/// Copies the files of `src` into a new temp dir, making them writable.
pub fn copy_dir(src: &Path) -> tempfile::TempDir {
    let dst = tempdir();
    for file in std::fs::read_dir(src).expect("read dir") {
        let file = file.expect("entry").path();
        if file.is_file() {
            let to = dst.path().join(file.file_name().expect("name"));
            std::fs::copy(&file, &to).expect("copy");
            let mut perms = std::fs::metadata(&to).expect("stat").permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perms.set_readonly(false);
            std::fs::set_permissions(&to, perms).expect("chmod");
        }
    }
    dst
}

/// `dir`'s file of `kind` for `base_offset`.
pub fn path(dir: &Path, base_offset: i64, kind: FileKind) -> PathBuf {
    file_path(dir, base_offset, kind)
}

/// The bytes of a file.
pub fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// One counter of this thread's `/proc/thread-self/io` (`syscr`: read syscalls, `rchar`:
/// bytes they read).
fn thread_io(field: &str) -> u64 {
    let io = std::fs::read_to_string("/proc/thread-self/io").expect("task I/O accounting");
    io.lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(": "))
        .expect("the counter")
        .trim()
        .parse()
        .expect("a count")
}

/// How much `field` of this thread's I/O accounting grows while `f` runs, minus what reading
/// the accounting file itself adds.
fn thread_io_of(field: &str, f: impl FnOnce()) -> u64 {
    let calibrate = thread_io(field);
    let before = thread_io(field);
    let own = before - calibrate;
    f();
    thread_io(field) - before - own
}

/// The read syscalls `f` makes on this thread.
pub fn preads_of(f: impl FnOnce()) -> u64 {
    thread_io_of("syscr", f)
}

/// The bytes `f` reads on this thread with read syscalls.
pub fn bytes_of(f: impl FnOnce()) -> u64 {
    thread_io_of("rchar", f)
}
