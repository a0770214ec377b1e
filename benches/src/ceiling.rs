//! Contender (a): the physical ceiling. Plain `std::fs` doing the least any log could do with
//! the same bytes: sequential `write_all` in 1 MiB chunks, `fdatasync` per batch when durable,
//! sequential 1 MiB reads, a `pread` of exactly the right bytes for a point read (the position
//! comes from a perfect in-memory index), `partition_point` on a `Vec` for an index lookup, and
//! listing and opening the files for an open.

use std::fs::{self, File};
use std::hint::black_box;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::data::Dataset;
use crate::harness::{Trial, Work};
use crate::writers::run_writers;
use crate::{Result, io_error};

/// Sequential write chunk and read buffer size.
pub const CHUNK_BYTES: usize = 1 << 20;

/// Writes the whole dataset image to a fresh file in 1 MiB `write_all` calls, no fsync.
pub struct Append<'a> {
    data: &'a Dataset,
    path: PathBuf,
    file: Option<File>,
}

impl<'a> Append<'a> {
    /// Appends `data` to a fresh file in `dir` on every run.
    pub fn new(data: &'a Dataset, dir: &Path) -> Self {
        Self {
            data,
            path: dir.join("ceiling-append.log"),
            file: None,
        }
    }
}

impl Trial for Append<'_> {
    fn prepare(&mut self) -> Result<()> {
        self.file = Some(create_scratch(&self.path)?);
        Ok(())
    }

    fn run(&mut self) -> Result<Work> {
        let file = self.file.as_mut().ok_or("not prepared")?;
        for chunk in self.data.image.chunks(CHUNK_BYTES) {
            file.write_all(chunk)
                .map_err(|e| io_error("write", &self.path, e))?;
        }
        Ok(Work::new(
            self.data.spec.records,
            self.data.spec.payload_bytes(),
        ))
    }

    fn cleanup(&mut self) -> Result<()> {
        remove_scratch(&mut self.file, &self.path)
    }
}

/// A reference, not a contender: the same bytes written one `write_all` per batch, as a log
/// that makes every append visible to readers at once must do. Shows what the per-append
/// system call costs by itself on this machine.
pub struct AppendPerBatch<'a> {
    data: &'a Dataset,
    path: PathBuf,
    file: Option<File>,
    check_crc: bool,
}

impl<'a> AppendPerBatch<'a> {
    /// Appends `data` to a fresh file in `dir` on every run, one write per batch; with
    /// `check_crc`, each batch's CRC-32C is checked before it is written (what any Kafka
    /// leader must do with a producer's batch).
    pub fn new(data: &'a Dataset, dir: &Path, check_crc: bool) -> Self {
        let name = if check_crc {
            "ceiling-per-batch-crc.log"
        } else {
            "ceiling-per-batch.log"
        };
        Self {
            data,
            path: dir.join(name),
            file: None,
            check_crc,
        }
    }
}

/// A reference, not a contender: every batch's CRC-32C checked, then the same 1 MiB
/// `write_all` calls as the ceiling. The least a validated bulk append (leader or follower,
/// both check every batch's CRC) must do.
pub struct AppendChunksCrc<'a> {
    data: &'a Dataset,
    path: PathBuf,
    file: Option<File>,
}

impl<'a> AppendChunksCrc<'a> {
    /// Appends `data` to a fresh file in `dir` on every run.
    pub fn new(data: &'a Dataset, dir: &Path) -> Self {
        Self {
            data,
            path: dir.join("ceiling-chunks-crc.log"),
            file: None,
        }
    }
}

impl Trial for AppendChunksCrc<'_> {
    fn prepare(&mut self) -> Result<()> {
        self.file = Some(create_scratch(&self.path)?);
        Ok(())
    }

    fn run(&mut self) -> Result<Work> {
        let file = self.file.as_mut().ok_or("not prepared")?;
        for (bytes, batches) in self.data.groups(CHUNK_BYTES) {
            for range in &self.data.batch_ranges[batches] {
                check_crc(&self.data.image[range.clone()], range.start)?;
            }
            file.write_all(&self.data.image[bytes])
                .map_err(|e| io_error("write", &self.path, e))?;
        }
        Ok(Work::new(
            self.data.spec.records,
            self.data.spec.payload_bytes(),
        ))
    }

    fn cleanup(&mut self) -> Result<()> {
        remove_scratch(&mut self.file, &self.path)
    }
}

fn check_crc(batch: &[u8], position: usize) -> Result<()> {
    let stored = batch
        .get(CRC_FIELD..CRC_FIELD + 4)
        .and_then(|field| field.try_into().ok())
        .map(u32::from_be_bytes);
    if stored != Some(seglog_records::crc32c(&batch[CRC_FIELD + 4..])) {
        return Err(format!("batch at {position} fails its CRC").into());
    }
    Ok(())
}

/// Offset of a v2 batch's CRC-32C field; the checksum covers everything after it.
const CRC_FIELD: usize = 17;

impl Trial for AppendPerBatch<'_> {
    fn prepare(&mut self) -> Result<()> {
        self.file = Some(create_scratch(&self.path)?);
        Ok(())
    }

    fn run(&mut self) -> Result<Work> {
        let file = self.file.as_mut().ok_or("not prepared")?;
        for range in &self.data.batch_ranges {
            let batch = &self.data.image[range.clone()];
            if self.check_crc {
                let stored = batch
                    .get(CRC_FIELD..CRC_FIELD + 4)
                    .and_then(|field| field.try_into().ok())
                    .map(u32::from_be_bytes);
                if stored != Some(seglog_records::crc32c(&batch[CRC_FIELD + 4..])) {
                    return Err(format!("batch at {} fails its CRC", range.start).into());
                }
            }
            file.write_all(batch)
                .map_err(|e| io_error("write", &self.path, e))?;
        }
        Ok(Work::new(
            self.data.spec.records,
            self.data.spec.payload_bytes(),
        ))
    }

    fn cleanup(&mut self) -> Result<()> {
        remove_scratch(&mut self.file, &self.path)
    }
}

/// Writes `batches` batches one `write_all` each, `fdatasync` after each, from `writers`
/// threads. Writers take turns writing (a mutex orders the bytes) and fsync outside the lock,
/// so concurrent fsyncs may be merged by the kernel but never by us.
pub struct DurableAppend<'a> {
    data: &'a Dataset,
    batches: usize,
    writers: usize,
    path: PathBuf,
    file: Option<File>,
}

impl<'a> DurableAppend<'a> {
    /// `batches` batches from `data`, spread round-robin over `writers` threads.
    pub fn new(data: &'a Dataset, batches: usize, writers: usize, dir: &Path) -> Self {
        let path = dir.join(format!("ceiling-durable-{writers}.log"));
        let batches = batches.min(data.spec.batches());
        Self {
            data,
            batches,
            writers,
            path,
            file: None,
        }
    }
}

impl Trial for DurableAppend<'_> {
    fn prepare(&mut self) -> Result<()> {
        self.file = Some(create_scratch(&self.path)?);
        Ok(())
    }

    fn run(&mut self) -> Result<Work> {
        let file = self.file.as_ref().ok_or("not prepared")?;
        let order = Mutex::new(());
        let path = &self.path;
        let data = self.data;
        let total = self.batches;
        let writers = self.writers;
        run_writers(0..writers, |writer| -> Result<()> {
            for batch in (writer..total).step_by(writers) {
                let bytes = data.batch(batch);
                {
                    let _turn = order.lock().map_err(|_| "writer lock poisoned")?;
                    (&*file)
                        .write_all(&bytes)
                        .map_err(|e| io_error("write", path, e))?;
                }
                file.sync_data()
                    .map_err(|e| io_error("fdatasync", path, e))?;
            }
            Ok(())
        })?;
        let records = total as u64 * self.data.spec.batch_records as u64;
        Ok(Work::new(
            records,
            records * self.data.spec.record_bytes as u64,
        ))
    }

    fn cleanup(&mut self) -> Result<()> {
        remove_scratch(&mut self.file, &self.path)
    }
}

/// Writes `data.image` to `path` (untimed set-up for the read workloads).
///
/// # Errors
///
/// On any I/O error.
pub fn write_image(data: &Dataset, path: &Path) -> Result<()> {
    fs::write(path, &data.image).map_err(|e| io_error("write", path, e))
}

/// Reads a file front to back in 1 MiB reads. Used for the scan and, as the raw-read figure,
/// for recovery (recovery must read every byte once, as this does).
pub struct SequentialRead {
    path: PathBuf,
    records: u64,
    payload_bytes: u64,
    buffer: Vec<u8>,
}

impl SequentialRead {
    /// Reading `path`, which holds `records` records of `payload_bytes` total payload.
    pub fn new(path: PathBuf, records: u64, payload_bytes: u64) -> Self {
        Self {
            path,
            records,
            payload_bytes,
            buffer: vec![0; CHUNK_BYTES],
        }
    }
}

impl Trial for SequentialRead {
    fn run(&mut self) -> Result<Work> {
        let mut file = File::open(&self.path).map_err(|e| io_error("open", &self.path, e))?;
        let mut total = 0u64;
        loop {
            let read = file
                .read(&mut self.buffer)
                .map_err(|e| io_error("read", &self.path, e))?;
            if read == 0 {
                break;
            }
            black_box(&self.buffer[..read]);
            total += read as u64;
        }
        black_box(total);
        Ok(Work::new(self.records, self.payload_bytes))
    }
}

/// A reference, not a contender: the least a validating reader of a whole file must do.
/// Sequential 1 MiB reads as [`SequentialRead`], every batch's CRC-32C checked
/// (`seglog_records::Batches::validated`), and with [`Validate::Records`] every record decoded
/// (`BatchRef::records_borrowed`, each value's length read). The reads are the ceiling's
/// (1 MiB-aligned file positions, page-aligned memory); a batch cut by a read's end is moved to
/// just before the read area and completed by the next read: no index, no log, no offsets
/// checked. The bound for a scan (with or without decoding) and for recovery (which
/// must read and validate every byte it keeps).
pub struct ValidatedRead {
    path: PathBuf,
    records: u64,
    payload_bytes: u64,
    validate: Validate,
    buffer: Vec<u8>,
}

/// How much of each batch [`ValidatedRead`] looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Validate {
    /// The CRC-32C of every batch (and the header fields `Batches` parses).
    Crc,
    /// The CRC, then every record decoded.
    Records,
}

impl ValidatedRead {
    /// Reading and validating `path`, which holds `records` whole batches' records of
    /// `payload_bytes` total value bytes.
    pub fn new(path: PathBuf, records: u64, payload_bytes: u64, validate: Validate) -> Self {
        Self {
            path,
            records,
            payload_bytes,
            validate,
            // Room for a cut batch before the read area: the suite's batches are at most
            // ~105 KB; a larger one grows it.
            buffer: vec![0; 2 * CHUNK_BYTES],
        }
    }
}

#[cfg(test)]
impl ValidatedRead {
    /// The same with `room` bytes (0 or a multiple of the page size) for a cut batch.
    fn with_room(mut self, room: usize) -> Self {
        self.buffer = vec![0; room + CHUNK_BYTES];
        self
    }
}

impl Trial for ValidatedRead {
    fn run(&mut self) -> Result<Work> {
        let mut file = File::open(&self.path).map_err(|e| io_error("open", &self.path, e))?;
        // `buffer` is `room` bytes for a cut batch's head, then the read area. Every read is
        // the ceiling's: CHUNK_BYTES at a file position that is a multiple of it, into memory
        // aligned as the ceiling's buffer (`room` is a multiple of the page size), so that
        // this row differs from the ceiling only by what it adds. (A first version read into
        // `buffer[carried..]` at odd file positions and measured 0.50x the ceiling in one
        // loaded round, below seglog's own "no record decode" scan; why was not established.)
        // A batch cut by a read's end is moved to just before the read area and completed by
        // the next read. `position` is the file position of the batch at `room - carried`.
        let mut room = self.buffer.len() - CHUNK_BYTES;
        let (mut carried, mut position) = (0usize, 0u64);
        let (mut records, mut value_bytes) = (0u64, 0u64);
        loop {
            let read = file
                .read(&mut self.buffer[room..])
                .map_err(|e| io_error("read", &self.path, e))?;
            if read == 0 {
                break;
            }
            let (start, end) = (room - carried, room + read);
            let mut batches =
                seglog_records::Batches::new(&self.buffer[start..end], position).validated();
            for batch in batches.by_ref() {
                let batch = batch.map_err(|e| format!("{}: {e}", self.path.display()))?;
                if self.validate == Validate::Records {
                    let decoded = batch.records_borrowed().ok_or_else(|| {
                        format!("{}: a batch the suite did not write", self.path.display())
                    })?;
                    for record in decoded {
                        let record = record.map_err(|e| format!("{}: {e}", self.path.display()))?;
                        value_bytes += black_box(record.value).map_or(0, <[u8]>::len) as u64;
                        records += 1;
                    }
                } else {
                    records += u64::try_from(black_box(batch.header().record_count).unwrap_or(0))?;
                }
            }
            let consumed = usize::try_from(batches.valid_bytes())?;
            position += consumed as u64;
            carried = end - start - consumed;
            if carried > room {
                // A batch larger than the room (never the case for the suite's data): grow it.
                let grown = carried.next_multiple_of(PAGE_BYTES);
                let mut buffer = vec![0; grown + CHUNK_BYTES];
                buffer[grown - carried..grown].copy_from_slice(&self.buffer[end - carried..end]);
                self.buffer = buffer;
                room = grown;
            } else {
                self.buffer.copy_within(end - carried..end, room - carried);
            }
        }
        if carried != 0 || records != self.records {
            return Err(format!(
                "{}: {records} records in whole batches and {carried} bytes after them, expected {} records",
                self.path.display(),
                self.records
            )
            .into());
        }
        black_box(value_bytes);
        Ok(Work::new(self.records, self.payload_bytes))
    }
}

/// Memory page size, for [`ValidatedRead`]'s alignment.
const PAGE_BYTES: usize = 4096;

/// One `pread` of the batch holding each target offset, its position known in advance; with
/// `decode`, also what a consumer must do with it: check the batch's CRC-32C and decode records
/// up to the target (`seglog_records`; the file must hold the log's assigned offsets).
pub struct PointRead<'a> {
    data: &'a Dataset,
    file: File,
    path: PathBuf,
    targets: &'a [u64],
    buffer: Vec<u8>,
    decode: bool,
}

impl<'a> PointRead<'a> {
    /// Point reads of `targets` from `path`, which holds `data.image`.
    ///
    /// # Errors
    ///
    /// If `path` cannot be opened.
    pub fn new(data: &'a Dataset, path: PathBuf, targets: &'a [u64]) -> Result<Self> {
        let file = File::open(&path).map_err(|e| io_error("open", &path, e))?;
        Ok(Self {
            data,
            file,
            path,
            targets,
            buffer: Vec::new(),
            decode: false,
        })
    }

    /// The reference "pread + CRC + decode": each read's batch CRC-checked and decoded up to
    /// the target record.
    pub fn decoded(mut self) -> Self {
        self.decode = true;
        self
    }
}

impl Trial for PointRead<'_> {
    fn run(&mut self) -> Result<Work> {
        for &offset in self.targets {
            let batch = (offset / self.data.spec.batch_records as u64) as usize;
            self.read_batch(batch)?;
            if self.decode {
                let target = i64::try_from(offset)?;
                black_box(self.decode_until(|record| record.offset >= target)?);
            }
        }
        let reads = self.targets.len() as u64;
        Ok(Work::new(reads, reads * self.data.spec.record_bytes as u64))
    }
}

impl PointRead<'_> {
    fn read_batch(&mut self, batch: usize) -> Result<()> {
        let range = self.data.batch_ranges[batch].clone();
        self.buffer.resize(range.len(), 0);
        self.file
            .read_exact_at(&mut self.buffer, range.start as u64)
            .map_err(|e| io_error("pread", &self.path, e))?;
        black_box(&self.buffer);
        Ok(())
    }

    /// Checks the CRC of the batch in `buffer` and decodes its records up to the first one
    /// `found` accepts: that record's value length.
    fn decode_until(
        &self,
        found: impl Fn(&seglog_records::RecordRef<'_>) -> bool,
    ) -> Result<usize> {
        let batch = seglog_records::BatchRef::parse(&self.buffer, 0)
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        batch
            .ensure_valid()
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        let records = batch
            .records_borrowed()
            .ok_or_else(|| format!("{}: a batch the suite did not write", self.path.display()))?;
        for record in records {
            let record = record.map_err(|e| format!("{}: {e}", self.path.display()))?;
            if found(&record) {
                return Ok(black_box(record.value).map_or(0, <[u8]>::len));
            }
        }
        Err(format!("{}: the record is not in its batch", self.path.display()).into())
    }
}

/// For each target timestamp, `partition_point` over the batches' max timestamps held in a
/// `Vec`, then one `pread` of that batch.
pub struct TimestampRead<'a> {
    reader: PointRead<'a>,
    max_timestamps: Vec<i64>,
    targets: &'a [i64],
}

impl<'a> TimestampRead<'a> {
    /// Reads by timestamp from `path`, which holds `data.image`.
    ///
    /// # Errors
    ///
    /// If `path` cannot be opened.
    pub fn new(data: &'a Dataset, path: PathBuf, targets: &'a [i64]) -> Result<Self> {
        let max_timestamps = (0..data.spec.batches())
            .map(|batch| data.timestamp_ms(data.spec.batch_offsets(batch).end - 1))
            .collect();
        Ok(Self {
            reader: PointRead::new(data, path, &[])?,
            max_timestamps,
            targets,
        })
    }
}

impl TimestampRead<'_> {
    /// The reference "partition_point + pread + CRC + decode": the found batch CRC-checked and
    /// decoded up to the first record at or after the target time.
    pub fn decoded(mut self) -> Self {
        self.reader.decode = true;
        self
    }
}

impl Trial for TimestampRead<'_> {
    fn run(&mut self) -> Result<Work> {
        for &target in self.targets {
            let batch = self.max_timestamps.partition_point(|&max| max < target);
            self.reader
                .read_batch(batch.min(self.max_timestamps.len() - 1))?;
            if self.reader.decode {
                black_box(
                    self.reader
                        .decode_until(|record| record.timestamp_ms >= target)?,
                );
            }
        }
        let reads = self.targets.len() as u64;
        Ok(Work::new(
            reads,
            reads * self.reader.data.spec.record_bytes as u64,
        ))
    }
}

/// `partition_point` on a sorted `Vec` of `(relative_offset, position)` entries: the floor
/// (last entry with offset <= target).
pub struct FloorLookup<'a> {
    entries: Vec<(u32, u32)>,
    targets: &'a [u32],
}

impl<'a> FloorLookup<'a> {
    /// Floor lookups of `targets` in `entries` (sorted by offset).
    pub fn new(entries: Vec<(u32, u32)>, targets: &'a [u32]) -> Self {
        Self { entries, targets }
    }
}

impl Trial for FloorLookup<'_> {
    fn run(&mut self) -> Result<Work> {
        let mut sum = 0u64;
        for &target in self.targets {
            let slot = self
                .entries
                .partition_point(|&(offset, _)| offset <= target);
            let (_, position) = self.entries[slot.saturating_sub(1)];
            sum = sum.wrapping_add(u64::from(position));
        }
        black_box(sum);
        Ok(Work::new(self.targets.len() as u64, 0))
    }
}

/// `partition_point` over the bytes of a Kafka `.index` file read into memory: 8-byte entries,
/// big-endian relative offset then position. A reference row for the floor lookup: the same
/// search as the ceiling over the on-disk format, without seglog's mapping and lock.
pub struct FloorLookupIndexBytes<'a> {
    bytes: Vec<u8>,
    targets: &'a [u32],
}

impl<'a> FloorLookupIndexBytes<'a> {
    /// Floor lookups of `targets` in the `.index` file at `path`, read whole.
    ///
    /// # Errors
    ///
    /// If the file cannot be read.
    pub fn new(path: &Path, targets: &'a [u32]) -> Result<Self> {
        let bytes = fs::read(path).map_err(|e| io_error("read", path, e))?;
        Ok(Self { bytes, targets })
    }
}

impl Trial for FloorLookupIndexBytes<'_> {
    fn run(&mut self) -> Result<Work> {
        let entries = self.bytes.as_chunks::<8>().0;
        let offset = |entry: &[u8; 8]| u32::from_be_bytes([entry[0], entry[1], entry[2], entry[3]]);
        let mut sum = 0u64;
        for &target in self.targets {
            let slot = entries.partition_point(|entry| offset(entry) <= target);
            let entry = entries[slot.saturating_sub(1)];
            let position = u32::from_be_bytes([entry[4], entry[5], entry[6], entry[7]]);
            sum = sum.wrapping_add(u64::from(position));
        }
        black_box(sum);
        Ok(Work::new(self.targets.len() as u64, 0))
    }
}

/// Lists a log directory and opens every file in it, keeping the handles (what any log must do
/// at least to open its segments without reading them).
pub struct OpenDirectory {
    dir: PathBuf,
    records: u64,
    payload_bytes: u64,
    opened: Vec<(File, u64)>,
}

impl OpenDirectory {
    /// Opening every file in `dir`, which holds `records` records.
    pub fn new(dir: PathBuf, records: u64, payload_bytes: u64) -> Self {
        Self {
            dir,
            records,
            payload_bytes,
            opened: Vec::new(),
        }
    }
}

impl Trial for OpenDirectory {
    fn run(&mut self) -> Result<Work> {
        let entries = fs::read_dir(&self.dir).map_err(|e| io_error("list", &self.dir, e))?;
        for entry in entries {
            let path = entry.map_err(|e| io_error("list", &self.dir, e))?.path();
            let file = File::open(&path).map_err(|e| io_error("open", &path, e))?;
            let length = file
                .metadata()
                .map_err(|e| io_error("stat", &path, e))?
                .len();
            self.opened.push((file, length));
        }
        Ok(Work::new(self.records, self.payload_bytes)
            .with_metric("files", self.opened.len() as f64))
    }

    fn cleanup(&mut self) -> Result<()> {
        self.opened.clear();
        Ok(())
    }
}

/// Creates (or truncates) the file an append trial writes, before its timed run.
fn create_scratch(path: &Path) -> Result<File> {
    File::create(path).map_err(|e| io_error("create", path, e))
}

/// Closes the file an append trial wrote and deletes it, after its timed run.
fn remove_scratch(file: &mut Option<File>, path: &Path) -> Result<()> {
    *file = None;
    fs::remove_file(path).map_err(|e| io_error("remove", path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DataSpec;

    fn dataset() -> Result<Dataset> {
        // About 2.2 MB: batches cut by the 1 MiB reads.
        Dataset::generate(DataSpec {
            records: 20_000,
            record_bytes: 100,
            batch_records: 100,
        })
    }

    #[test]
    fn validated_reads_carry_cut_batches_and_catch_a_bad_crc() -> Result<()> {
        let data = dataset()?;
        let tmp = tempfile::tempdir()?;
        let path = tmp.path().join("image.log");
        write_image(&data, &path)?;
        for validate in [Validate::Crc, Validate::Records] {
            let mut trial = ValidatedRead::new(path.clone(), 20_000, 2_000_000, validate);
            assert_eq!(trial.run()?.records, 20_000);
            let mut wrong = ValidatedRead::new(path.clone(), 19_900, 1_990_000, validate);
            assert!(wrong.run().is_err());
            // No room for a cut batch: the first one grows it.
            let mut small =
                ValidatedRead::new(path.clone(), 20_000, 2_000_000, validate).with_room(PAGE_BYTES);
            assert_eq!(small.run()?.records, 20_000);
            assert!(small.buffer.len() > CHUNK_BYTES);
        }
        let mut bytes = data.image.to_vec();
        let inside = data.batch_ranges[150].start + 100;
        bytes[inside] ^= 1;
        fs::write(&path, &bytes)?;
        let error = ValidatedRead::new(path, 20_000, 2_000_000, Validate::Crc)
            .run()
            .err()
            .ok_or("a flipped byte passed")?;
        assert!(error.to_string().contains("checksum mismatch"), "{error}");
        Ok(())
    }

    #[test]
    fn decoded_point_and_timestamp_reads_find_their_records() -> Result<()> {
        let data = dataset()?;
        let tmp = tempfile::tempdir()?;
        let path = tmp.path().join("assigned.log");
        // The decoding reads need the offsets a log assigns.
        fs::write(&path, data.replicated_image())?;
        let offsets = [0, 99, 100, 12_345, 19_999];
        let mut point = PointRead::new(&data, path.clone(), &offsets)?.decoded();
        assert_eq!(point.run()?.records, 5);
        let times: Vec<i64> = offsets
            .iter()
            .map(|&offset| data.timestamp_ms(offset))
            .collect();
        let mut by_time = TimestampRead::new(&data, path.clone(), &times)?.decoded();
        assert_eq!(by_time.run()?.records, 5);
        // Base offsets 0 everywhere: the record at 12,345 is not in its batch.
        let unassigned = tmp.path().join("image.log");
        write_image(&data, &unassigned)?;
        let mut wrong = PointRead::new(&data, unassigned, &offsets[3..4])?.decoded();
        assert!(wrong.run().is_err());
        Ok(())
    }
}
