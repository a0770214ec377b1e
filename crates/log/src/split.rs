//! The offset-overflow split at load (Kafka's `LocalLog.splitOverflowedSegment`, KAFKA-6264,
//! spec §5.5 and §7 bug 4).
//!
//! A segment whose offsets do not all fit in an `i32` relative to its base offset (written by
//! an old broker, or by a follower rebuilding a highly compacted topic) cannot be indexed. The
//! loader copies its batches into new segments, each starting at the base offset of its first
//! batch, a new one whenever a batch's last offset would not fit relative to the current base,
//! and swaps them in with Kafka's crash-safe protocol:
//!
//! 1. write every new `.log` as `<base>.log.cleaned` (same bytes, same mtime) and fsync it;
//! 2. rename `.cleaned` → `.swap` in **descending** base order, fsyncing the directory after
//!    each rename (so a power loss cannot reorder them);
//! 3. rename the old segment's files to `.deleted` (unlinked after `file.delete.delay.ms`),
//!    fsync the directory;
//! 4. rename `.swap` → final names in ascending order, fsync the directory.
//!
//! A crash at any point is finished by the loader's temporary-file passes: while any
//! `.cleaned` file is left, every `.swap` at or above the lowest one belongs to the unfinished
//! split and is deleted with the `.cleaned` files (the old segment is intact and is split
//! again); once no `.cleaned` is left, the swaps are complete and replace the old segment files
//! in `[lowest swap base, next offset of the highest swap)`.
//!
//! Differences from Kafka, each for crash safety or simplicity:
//! * Only the new `.log` files are written. Their indexes are missing, so the normal open path
//!   rebuilds them (a recovery that also validates every batch).
//! * The first new segment keeps the **old base offset** when its first batch fits relative to
//!   it, and otherwise an empty segment is kept at the old base. Kafka names it after the
//!   first batch; when that is above the old base, a crash after the swaps are complete would
//!   leave the old segment outside the replaced range (duplicated records).
//! * Bytes after the last whole, increasing batch (a torn or corrupt tail) are copied as they
//!   are into the last new segment, so the total size is unchanged and recovery decides what
//!   to cut, as it would have for the old segment. Kafka would fail the split.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use seglog_index_core::relative_offset;
use seglog_records::{BatchHeader, HeaderRead, RECORD_BATCH_OVERHEAD};
use seglog_segment::{FileKind, FileType, Io, TempSuffix, file_path};

use crate::deletion::{Doomed, SEGMENT_FILE_TYPES, rename_to_deleted};
use crate::error::IoContext;
use crate::fsutil::sync_dir;
use crate::{Error, Result};

/// What the loader split: one overflowed segment and the segments that replaced it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SegmentSplit {
    /// The base offset of the overflowed segment.
    pub base_offset: i64,
    /// The base offsets of the segments that replaced it, ascending (the first is
    /// `base_offset`).
    pub new_base_offsets: Vec<i64>,
}

/// One new segment: its base offset and the byte range of the old `.log` it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Piece {
    base_offset: i64,
    start: u64,
    end: u64,
}

/// How an overflowed segment is cut into new segments.
#[derive(Debug)]
pub(crate) struct SplitPlan {
    dir: PathBuf,
    base_offset: i64,
    pieces: Vec<Piece>,
    modified: Option<SystemTime>,
    /// The seam the directory fsyncs go through (the log's).
    io: Io,
}

/// One file operation of the replacement protocol (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    WriteCleaned(usize),
    CleanedToSwap(usize),
    DeleteOld(FileType),
    SyncDir,
    SwapToFinal(usize),
}

impl SplitPlan {
    /// Reads the batch headers of segment `base_offset` in `dir` and plans the new segments.
    ///
    /// # Errors
    /// [`Error::Io`] reading the `.log`; [`Error::UnsplittableSegment`] when no plan is safe:
    /// the first batch lies below the base offset, no batch can be placed, or a new segment
    /// would take the name of another existing segment.
    pub(crate) fn new(dir: &Path, base_offset: i64, io: &Io) -> Result<Self> {
        let path = file_path(dir, base_offset, FileKind::LOG);
        let file = File::open(&path).ctx("open", &path)?;
        let metadata = file.metadata().ctx("read metadata", &path)?;
        let pieces = plan_pieces(&file, &path, base_offset, metadata.len())?;
        let unsplittable = |reason| Error::UnsplittableSegment {
            path: path.clone(),
            reason,
        };
        if pieces.len() < 2 {
            return Err(unsplittable("no batch boundary to split at"));
        }
        for piece in &pieces[1..] {
            if file_path(dir, piece.base_offset, FileKind::LOG).exists() {
                return Err(unsplittable(
                    "a new segment would take the name of an existing segment",
                ));
            }
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            base_offset,
            pieces,
            // Without an mtime (unsupported by the filesystem) the copies keep their own.
            modified: metadata.modified().ok(),
            io: io.clone(),
        })
    }

    /// The base offsets of the new segments, ascending.
    pub(crate) fn new_base_offsets(&self) -> Vec<i64> {
        self.pieces.iter().map(|p| p.base_offset).collect()
    }

    /// Runs the whole protocol. Returns the old files, renamed `.deleted`, to unlink later.
    ///
    /// # Errors
    /// I/O errors; the directory is then in a state the next load finishes or rolls back.
    pub(crate) fn execute(&self) -> Result<Doomed> {
        self.execute_steps(usize::MAX)
    }

    /// Runs the first `limit` steps of the protocol (a crash after them, for tests).
    fn execute_steps(&self, limit: usize) -> Result<Doomed> {
        let mut doomed = Vec::new();
        for step in self.steps().into_iter().take(limit) {
            match step {
                Step::WriteCleaned(i) => self.write_cleaned(self.pieces[i])?,
                Step::CleanedToSwap(i) => {
                    let base = self.pieces[i].base_offset;
                    self.rename_log(base, Some(TempSuffix::Cleaned), Some(TempSuffix::Swap))?;
                    sync_dir(&self.io, &self.dir)?;
                }
                Step::DeleteOld(file_type) => {
                    doomed.extend(rename_to_deleted(&self.dir, self.base_offset, file_type)?);
                }
                Step::SyncDir => sync_dir(&self.io, &self.dir)?,
                Step::SwapToFinal(i) => {
                    let base = self.pieces[i].base_offset;
                    self.rename_log(base, Some(TempSuffix::Swap), None)?;
                }
            }
        }
        Ok(Doomed::Files(doomed))
    }

    fn steps(&self) -> Vec<Step> {
        let n = self.pieces.len();
        let mut steps: Vec<Step> = (0..n).map(Step::WriteCleaned).collect();
        steps.extend((0..n).rev().map(Step::CleanedToSwap));
        steps.extend(SEGMENT_FILE_TYPES.map(Step::DeleteOld));
        steps.push(Step::SyncDir);
        steps.extend((0..n).map(Step::SwapToFinal));
        steps.push(Step::SyncDir);
        steps
    }

    /// Copies the piece's bytes into `<base>.log.cleaned`, gives it the old mtime, fsyncs it.
    fn write_cleaned(&self, piece: Piece) -> Result<()> {
        let source_path = file_path(&self.dir, self.base_offset, FileKind::LOG);
        let target_path = file_path(
            &self.dir,
            piece.base_offset,
            FileKind::LOG.with_suffix(Some(TempSuffix::Cleaned)),
        );
        let source = File::open(&source_path).ctx("open", &source_path)?;
        (&source)
            .seek(SeekFrom::Start(piece.start))
            .ctx("seek", &source_path)?;
        let mut target = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&target_path)
            .ctx("create", &target_path)?;
        let len = piece.end - piece.start;
        let copied = std::io::copy(&mut Read::take(&source, len), &mut target)
            .ctx("copy into", &target_path)?;
        if copied != len {
            return Err(Error::io(
                "copy into",
                &target_path,
                std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("{source_path:?} ended after {copied} of {len} bytes"),
                ),
            ));
        }
        if let Some(modified) = self.modified {
            target
                .set_modified(modified)
                .ctx("set mtime", &target_path)?;
        }
        target.sync_all().ctx("fsync", &target_path)
    }

    fn rename_log(
        &self,
        base_offset: i64,
        from: Option<TempSuffix>,
        to: Option<TempSuffix>,
    ) -> Result<()> {
        let from = file_path(&self.dir, base_offset, FileKind::LOG.with_suffix(from));
        let to = file_path(&self.dir, base_offset, FileKind::LOG.with_suffix(to));
        fs::rename(&from, &to).ctx("rename", &from)
    }
}

/// Walks the headers of the `.log` and cuts it into pieces (see the module docs).
fn plan_pieces(file: &File, path: &Path, old_base: i64, size: u64) -> Result<Vec<Piece>> {
    let fits = |base: i64, offset: i64| relative_offset(base, offset).is_some();
    let mut pieces: Vec<Piece> = Vec::new();
    let mut previous_last_offset: Option<i64> = None;
    let mut position = 0u64;
    let mut prefix = [0u8; RECORD_BATCH_OVERHEAD];
    while position < size {
        let n = usize::try_from(size - position)
            .unwrap_or(usize::MAX)
            .min(RECORD_BATCH_OVERHEAD);
        file.read_exact_at(&mut prefix[..n], position)
            .ctx("read", path)?;
        let header = match BatchHeader::parse(&prefix[..n], position, size - position) {
            Ok(HeaderRead::Batch(header)) => header,
            // A partial or corrupt tail: copied as it is (recovery judges it).
            Ok(HeaderRead::End | HeaderRead::PartialTail { .. }) | Err(_) => break,
        };
        let last_offset = header.last_offset;
        // Offsets that do not increase: recovery cuts here (the same test as the segment
        // layer's), so this is where the tail starts.
        if previous_last_offset.is_some_and(|p| header.base_offset.unwrap_or(last_offset) <= p) {
            break;
        }
        // A legacy compressed wrapper does not name its first offset without decompressing;
        // Kafka's roll uses `last - i32::MAX` for it (spec §5.3).
        let first_offset = header.base_offset.unwrap_or_else(|| {
            last_offset
                .saturating_sub(i64::from(i32::MAX))
                .max(previous_last_offset.map_or(i64::MIN, |p| p.saturating_add(1)))
        });
        match pieces.last() {
            None => {
                let base = if fits(old_base, last_offset) {
                    old_base
                } else {
                    first_offset
                };
                if base < old_base || !fits(base, last_offset) {
                    return Err(Error::UnsplittableSegment {
                        path: path.to_path_buf(),
                        reason: "its first batch does not fit any segment at or above its base",
                    });
                }
                if base > old_base {
                    pieces.push(Piece {
                        base_offset: old_base,
                        start: 0,
                        end: 0,
                    });
                }
                pieces.push(Piece {
                    base_offset: base,
                    start: position,
                    end: position,
                });
            }
            Some(current) if !fits(current.base_offset, last_offset) => {
                if !fits(first_offset, last_offset) {
                    // A batch spanning more than i32::MAX offsets cannot be indexed anywhere.
                    break;
                }
                pieces.push(Piece {
                    base_offset: first_offset,
                    start: position,
                    end: position,
                });
            }
            Some(_) => {}
        }
        if let Some(current) = pieces.last_mut() {
            current.end = header.end_position();
        }
        previous_last_offset = Some(last_offset);
        position = header.end_position();
    }
    if let Some(last) = pieces.last_mut() {
        last.end = size;
    }
    Ok(pieces)
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use crate::{Isolation, Log, LogConfig};
    use seglog_records::BatchBuilder;

    const T0: i64 = 1_700_000_000_000;
    const HIGH: i64 = (1 << 31) + 5;

    fn batch(base_offset: i64, count: i64) -> Vec<u8> {
        let mut builder = BatchBuilder::new(base_offset);
        for i in 0..count {
            let value = format!("v{}", base_offset + i);
            builder
                .append_with_offset(base_offset + i, T0 + i, None, Some(value.as_bytes()), &[])
                .unwrap();
        }
        builder.build().unwrap().to_vec()
    }

    const NEXT: i64 = (1 << 32) + 100;

    /// Layouts of an overflowed segment named 0 (batches as (first offset, count)), followed
    /// by an ordinary segment at `NEXT`, with the bases the split gives: the first batch at
    /// the base; above it (a compacted segment); beyond i32 of it (an empty first piece).
    type Layout = (&'static [(i64, i64)], [i64; 3]);
    const LAYOUTS: [Layout; 3] = [
        (
            &[(0, 5), (5, 5), (HIGH, 3), ((1 << 32) + 10, 2)],
            [0, HIGH, (1 << 32) + 10],
        ),
        (
            &[(3, 2), (5, 5), (HIGH, 3), ((1 << 32) + 10, 2)],
            [0, HIGH, (1 << 32) + 10],
        ),
        (
            &[(HIGH, 2), (HIGH + 2, 1), ((1 << 32) + 10, 2)],
            [0, HIGH, (1 << 32) + 10],
        ),
    ];

    /// Writes a layout; returns every offset it holds.
    fn write_layout(dir: &Path, batches: &[(i64, i64)]) -> Vec<i64> {
        let mut bytes = Vec::new();
        let mut offsets = Vec::new();
        for &(base, count) in batches {
            bytes.extend(batch(base, count));
            offsets.extend(base..base + count);
        }
        fs::write(file_path(dir, 0, FileKind::LOG), bytes).unwrap();
        fs::write(file_path(dir, NEXT, FileKind::LOG), batch(NEXT, 4)).unwrap();
        offsets.extend(NEXT..NEXT + 4);
        offsets
    }

    fn overflowed_dir() -> (tempfile::TempDir, Vec<i64>) {
        let tmp = tempfile::tempdir().unwrap();
        let offsets = write_layout(tmp.path(), LAYOUTS[0].0);
        (tmp, offsets)
    }

    fn offsets(log: &Log) -> Vec<i64> {
        let mut out = Vec::new();
        let mut next = log.log_start_offset();
        loop {
            let data = log.read(next, 1 << 20, Isolation::LogEnd, true).unwrap();
            if data.slice.is_empty() {
                return out;
            }
            let bytes = data.slice.read_to_vec().unwrap();
            for batch in seglog_records::Batches::new(&bytes, 0) {
                let batch = batch.unwrap();
                batch.ensure_valid().unwrap();
                for record in batch.records(1 << 20) {
                    let record = record.unwrap();
                    if record.offset >= next {
                        let value = format!("v{}", record.offset);
                        assert_eq!(record.value.as_deref(), Some(value.as_bytes()));
                        out.push(record.offset);
                    }
                }
                next = next.max(batch.header().last_offset + 1);
            }
        }
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".cleaned") || n.ends_with(".swap"))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn plan_cuts_where_offsets_stop_fitting() {
        for (batches, bases) in LAYOUTS {
            let tmp = tempfile::tempdir().unwrap();
            write_layout(tmp.path(), batches);
            let plan = SplitPlan::new(tmp.path(), 0, &Io::direct()).unwrap();
            assert_eq!(plan.new_base_offsets(), bases);
            let size = fs::metadata(file_path(tmp.path(), 0, FileKind::LOG))
                .unwrap()
                .len();
            assert_eq!(plan.pieces[0].start, 0);
            assert_eq!(plan.pieces.last().unwrap().end, size, "sizes add up");
            assert!(plan.pieces.windows(2).all(|w| w[0].end == w[1].start));
        }
    }

    #[test]
    fn a_torn_tail_moves_to_the_last_piece_and_recovery_cuts_it_as_before() {
        let (tmp, expected) = overflowed_dir();
        let path = file_path(tmp.path(), 0, FileKind::LOG);
        let mut bytes = fs::read(&path).unwrap();
        bytes.extend_from_slice(&batch((1 << 32) + 12, 3)[..40]);
        fs::write(&path, bytes).unwrap();
        let log = Log::open(tmp.path(), LogConfig::default()).unwrap();
        // Kafka's rule after a cut: every later segment goes too.
        let next = (1 << 32) + 100;
        let kept: Vec<i64> = expected.into_iter().filter(|&o| o < next).collect();
        assert_eq!(offsets(&log), kept);
        let report = log.load_report();
        let cut: Vec<(i64, u64)> = report.truncations().collect();
        assert_eq!(cut, vec![((1 << 32) + 10, 40)]);
        assert_eq!(report.deleted_segments, vec![next]);
    }

    /// A crash after every step of the protocol, for every layout: the next open finishes
    /// or rolls back the split, and every record is there exactly once, in order.
    #[test]
    fn a_crash_at_every_step_loses_and_duplicates_nothing() {
        for (batches, bases) in LAYOUTS {
            let template = tempfile::tempdir().unwrap();
            let expected = write_layout(template.path(), batches);
            let steps = SplitPlan::new(template.path(), 0, &Io::direct())
                .unwrap()
                .steps()
                .len();
            assert_eq!(steps, 3 + 3 + 4 + 1 + 3 + 1);
            for k in 0..=steps {
                crash_after(template.path(), k, &expected, &bases);
            }
        }
    }

    fn crash_after(template: &Path, k: usize, expected: &[i64], bases: &[i64; 3]) {
        let tmp = tempfile::tempdir().unwrap();
        for entry in fs::read_dir(template).unwrap() {
            let entry = entry.unwrap();
            fs::copy(entry.path(), tmp.path().join(entry.file_name())).unwrap();
        }
        // Indexes for the old segment too, so renaming them is part of the protocol.
        for kind in [FileKind::INDEX, FileKind::TIME_INDEX] {
            fs::write(file_path(tmp.path(), 0, kind), []).unwrap();
        }
        let plan = SplitPlan::new(tmp.path(), 0, &Io::direct()).unwrap();
        drop(plan.execute_steps(k).unwrap());
        let log = Log::open(tmp.path(), LogConfig::default())
            .unwrap_or_else(|e| panic!("crash after step {k}: {e}"));
        assert_eq!(offsets(&log), expected, "crash after step {k}");
        let got: Vec<i64> = log.segments().iter().map(|s| s.base_offset).collect();
        assert_eq!(got, [&bases[..], &[NEXT]].concat(), "crash after step {k}");
        assert!(leftovers(tmp.path()).is_empty(), "crash after step {k}");
        // Before every `.cleaned` is a `.swap` the split is rolled back and redone; then the
        // swaps are completed until none is left.
        let report = log.load_report();
        let (pieces, swapped) = (3, 3 + 3);
        let expect = (
            k < swapped,
            (swapped..swapped + 4 + 1 + pieces).contains(&k),
        );
        let got = (
            !report.splits.is_empty(),
            !report.completed_swaps.is_empty(),
        );
        assert_eq!(got, expect, "crash after step {k}: {report:?}");
        log.close().unwrap();
        drop(log);
        let log = Log::open(tmp.path(), LogConfig::default()).unwrap();
        assert!(log.load_report().splits.is_empty());
        assert_eq!(offsets(&log), expected, "reopen after step {k}");
    }
}
