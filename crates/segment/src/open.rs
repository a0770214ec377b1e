//! Opening an existing segment, and the index policies: strict by default (rebuild instead
//! of trusting a missing, zero-padded, short or inconsistent index; spec §7 bugs 1, 3, 5, 6),
//! and the data-free checks after a clean shutdown (`SegmentOpenOptions::trust_clean_shutdown`).

use std::path::Path;
use std::sync::Arc;

use seglog_index_core::{OffsetIndex, TimeIndex};

use crate::error::{Error, IoOp};
use crate::file_name::{FileKind, FileType, TempSuffix, file_path};
use crate::io::LogFile;
use crate::recover::RecoveryReport;
use crate::segment::{Files, Indexes, OpenMode, Segment};
use crate::walk::{HeaderWalker, WalkEnd};
use crate::{Result, SegmentConfig};

/// How to open an existing segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentOpenOptions {
    /// Read-write (default) or read-only.
    pub mode: OpenMode,
    /// Recover the segment unconditionally (the log asks for this after an unclean
    /// shutdown, for segments from the recovery point on). Default: false.
    pub recover: bool,
    /// Open the files carrying this temporary suffix (e.g. `.swap` during load).
    /// Default: none.
    pub suffix: Option<TempSuffix>,
    /// Run index-core's full strict `sanity_check` over every entry (`true`, default), or
    /// only the cheap checks (file length, last entry, tail walk) for a faster start. It
    /// reads the mapped index files only, never the `.log`.
    pub full_index_check: bool,
    /// The segment was cleanly closed (the log found its clean-shutdown marker): read no
    /// `.log` bytes at all. Only the checks that need no `.log` data are run: a missing
    /// index is still rebuilt; each index must hold whole entries and not end in zero
    /// padding, its last offset-index position must lie inside the `.log`, its last
    /// time-index offset inside the segment's offset range (below the base for an empty
    /// `.log`), and with `full_index_check` every entry passes index-core's strict check
    /// (bounded by the `.log` size and the segment's offset range). Skipped: the tail walk
    /// (last index entry against the `.log`'s batches, a torn tail, a time index behind the
    /// log's max timestamp). Kafka trusts indexes after a clean shutdown entirely. Default:
    /// false (the strict policy).
    pub trust_clean_shutdown: bool,
    /// Offsets below this are flushed data: a recovery this open runs never cuts a batch
    /// holding one (see [`Segment::recover_protecting`]). Default: `i64::MIN` (Kafka's rule).
    pub protect_below: i64,
    /// The most entries the recovery this open runs (if any) collects into
    /// [`RecoveryReport::digest`] (see [`Segment::recover_with_digest`]). Default: 0 (none).
    pub digest_entries: usize,
    /// What the caller's directory listing showed of this segment's files, taken just
    /// before the open (the log's loader, holding the directory lock). Given, the open asks
    /// the file system nothing the listing answered: no `statx` per file for the symlink
    /// refusal and the missing-index check (issue 28). The writable opens still pass
    /// `O_NOFOLLOW`, so a link made after the listing fails them too. Default: `None` (the
    /// open looks at each file itself).
    pub listed: Option<ListedFiles>,
}

/// What a directory listing showed of one segment's files (names without a temporary
/// suffix), for [`SegmentOpenOptions::listed`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ListedFiles {
    /// The `.index` is listed.
    pub index: bool,
    /// The `.timeindex` is listed.
    pub time_index: bool,
    /// One of the segment's files is listed as a symlink.
    pub symlink: bool,
}

impl Default for SegmentOpenOptions {
    fn default() -> Self {
        SegmentOpenOptions {
            mode: OpenMode::ReadWrite,
            recover: false,
            suffix: None,
            full_index_check: true,
            trust_clean_shutdown: false,
            protect_below: i64::MIN,
            digest_entries: 0,
            listed: None,
        }
    }
}

impl SegmentOpenOptions {
    /// Read-only, otherwise the defaults.
    pub fn read_only() -> Self {
        SegmentOpenOptions {
            mode: OpenMode::ReadOnly,
            ..SegmentOpenOptions::default()
        }
    }
}

/// Why opening a segment rebuilt its indexes (by recovering the segment).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RebuildReason {
    /// [`SegmentOpenOptions::recover`] asked for it.
    Requested,
    /// The index file does not exist (an empty active segment whose index Kafka never
    /// materialised, KAFKA-13603, or a corpus snapshot that lost it).
    MissingIndex {
        /// Which index.
        file_type: FileType,
    },
    /// index-core's strict check failed (zero-padded tail after a kill, KAFKA-1112 /
    /// KAFKA-10207 / KAFKA-19200; bad length; entries out of order or out of range).
    CorruptIndex {
        /// Which index.
        file_type: FileType,
        /// Byte position in the index file of the first bad entry.
        position: u64,
        /// What is wrong.
        kind: seglog_index_core::CorruptKind,
    },
    /// The last offset-index entry does not match the `.log`: no batch from its position on
    /// ends at its offset.
    IndexEntryMismatch {
        /// The entry's offset.
        offset: i64,
        /// The entry's position.
        position: u64,
    },
    /// The time index's last timestamp is below a batch's max timestamp after the last
    /// offset-index entry: the index is short (its final entry was never written).
    TimeIndexBehindLog {
        /// The last time-index timestamp (-1 when empty).
        index_timestamp_ms: i64,
        /// The larger batch timestamp found in the `.log`.
        log_timestamp_ms: i64,
    },
    /// The `.log` does not end with whole, valid batches (a torn tail, a zero-filled
    /// preallocated tail, or a corrupt header, a bad CRC or offsets that do not increase
    /// after the last index entry).
    LogTail {
        /// Where the walk stopped.
        position: u64,
    },
}

/// What [`Segment::open`] found and did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct OpenReport {
    /// Why the indexes were rebuilt, if they were.
    pub rebuilt: Option<RebuildReason>,
    /// The recovery that rebuilt them. When it cut bytes (`truncated_bytes > 0`) the log
    /// must treat every later segment as Kafka does after a truncating recovery.
    pub recovery: Option<RecoveryReport>,
}

impl Segment {
    /// Opens the existing segment `base_offset` in `dir`.
    ///
    /// The `.log`'s logical size is its file length (Kafka). The indexes are checked (see
    /// [`RebuildReason`]); when any check fails, or when `options.recover`, the segment is
    /// recovered: on disk in read-write mode, in memory in read-only mode. Nothing on disk is
    /// changed when the checks pass.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`]; [`Error::Io`] if the `.log` cannot be opened (a missing
    /// `.log` is `NotFound`); [`Error::Index`] if an index cannot be opened or created; the
    /// errors of [`Segment::recover`] (notably [`Error::OffsetOverflow`]).
    pub fn open(
        dir: &Path,
        base_offset: i64,
        config: &SegmentConfig,
        options: SegmentOpenOptions,
    ) -> Result<(Arc<Segment>, OpenReport)> {
        config.validate()?;
        let suffix = options.suffix;
        let path_of = |t| file_path(dir, base_offset, FileKind::new(t).with_suffix(suffix));
        let log_path = path_of(FileType::Log);
        let writable = options.mode == OpenMode::ReadWrite;
        let listed = options.listed.filter(|_| suffix.is_none());
        if writable && listed.is_none_or(|l| l.symlink) {
            refuse_symlinks(&path_of)?;
        }
        let log = LogFile::open(&config.io, &log_path, writable).map_err(|e| {
            if crate::io::is_symlink_refusal(&e) {
                Error::SymlinkRefused {
                    path: log_path.clone(),
                }
            } else {
                Error::io(IoOp::Open, &log_path)(e)
            }
        })?;
        let size = log.len().map_err(Error::io(IoOp::Metadata, &log_path))?;
        let (index_path, time_path) = (path_of(FileType::Index), path_of(FileType::TimeIndex));
        let missing = match listed {
            Some(l) if !l.index => Some(FileType::Index),
            Some(l) if !l.time_index => Some(FileType::TimeIndex),
            Some(_) => None,
            None => [
                (FileType::Index, &index_path),
                (FileType::TimeIndex, &time_path),
            ]
            .into_iter()
            .find(|(_, p)| !p.exists())
            .map(|(file_type, _)| file_type),
        };
        let max = config.max_index_bytes;
        let mut oversized_index = None;
        let indexes = if writable {
            Indexes {
                offset: OffsetIndex::open(&index_path, base_offset, max)?,
                time: TimeIndex::open(&time_path, base_offset, max)?,
            }
        } else {
            // A read-only open copies an index into memory: never one larger than any index of
            // this `.log` can be (it is rebuilt in memory instead, as for a corrupt one).
            let oversized = |path: &Path, entry_size: u64| {
                std::fs::metadata(path)
                    .is_ok_and(|m| m.len() > useful_index_bytes(size, entry_size, max))
            };
            if oversized(&index_path, 8) {
                oversized_index = Some(FileType::Index);
            } else if oversized(&time_path, 12) {
                oversized_index = Some(FileType::TimeIndex);
            }
            Indexes {
                offset: if index_path.exists() && oversized_index != Some(FileType::Index) {
                    OffsetIndex::open_read_only(&index_path, base_offset)?
                } else {
                    OffsetIndex::in_memory(&index_path, base_offset, max)
                },
                time: if time_path.exists() && oversized_index != Some(FileType::TimeIndex) {
                    TimeIndex::open_read_only(&time_path, base_offset)?
                } else {
                    TimeIndex::in_memory(&time_path, base_offset, max)
                },
            }
        };
        let segment = Segment::assemble(
            dir,
            base_offset,
            config,
            options.mode,
            suffix,
            log,
            size,
            indexes,
        );
        let rebuilt = if options.recover {
            Some(RebuildReason::Requested)
        } else if let Some(file_type) = oversized_index {
            Some(RebuildReason::CorruptIndex {
                file_type,
                position: 0,
                kind: seglog_index_core::CorruptKind::LargerThanItsLog,
            })
        } else if let Some(file_type) = missing {
            Some(RebuildReason::MissingIndex { file_type })
        } else if options.trust_clean_shutdown {
            trusted_check(&segment, options.full_index_check)?
        } else {
            check_indexes(&segment, options.full_index_check)?
        };
        let recovery = match rebuilt {
            Some(_) => {
                Some(segment.recover_with_digest(options.protect_below, options.digest_entries)?)
            }
            None => None,
        };
        // Counted in the cache only now: the checks and a recovery above hold the files.
        segment.admit();
        Ok((segment, OpenReport { rebuilt, recovery }))
    }
}

/// [`Error::SymlinkRefused`] when any of the segment's files (`path_of` each type) is a
/// symlink: a read-write open writes (recovers, trims, truncates) them in place. The
/// writable opens also pass `O_NOFOLLOW`, so a link made after this check fails them too.
fn refuse_symlinks(path_of: &dyn Fn(FileType) -> std::path::PathBuf) -> Result<()> {
    for file_type in [
        FileType::Log,
        FileType::Index,
        FileType::TimeIndex,
        FileType::TxnIndex,
    ] {
        let path = path_of(file_type);
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(Error::SymlinkRefused { path });
        }
    }
    Ok(())
}

/// The most bytes an index of a `.log` of `log_size` bytes can usefully hold: one
/// `entry_size` entry per batch (the smallest batch, a v0 message, takes 26 bytes), or the
/// configured index size (`max_index_bytes`, what a preallocated active index has), whichever
/// is larger.
fn useful_index_bytes(log_size: u64, entry_size: u64, max_index_bytes: u32) -> u64 {
    const SMALLEST_BATCH: u64 = 26;
    (log_size / SMALLEST_BATCH + 1)
        .saturating_mul(entry_size)
        .max(u64::from(max_index_bytes))
}

/// Maps index-core's corruption errors to a rebuild reason; other errors stay errors.
fn corrupt_reason(
    file_type: FileType,
    e: seglog_index_core::Error,
) -> Result<Option<RebuildReason>> {
    match e {
        seglog_index_core::Error::Corrupt { position, kind, .. } => {
            Ok(Some(RebuildReason::CorruptIndex {
                file_type,
                position,
                kind,
            }))
        }
        other => Err(Error::Index(other)),
    }
}

/// The policy after a clean shutdown: only the checks that read no `.log` bytes (see
/// [`SegmentOpenOptions::trust_clean_shutdown`]). `None` when both indexes pass.
fn trusted_check(segment: &Segment, full: bool) -> Result<Option<RebuildReason>> {
    let indexes = segment.indexes()?;
    let size = segment.size();
    let offset_check = quick_offset_check(&indexes.offset, size).and_then(|()| {
        if full {
            indexes.offset.sanity_check(Some(size))
        } else {
            Ok(())
        }
    });
    if let Err(e) = offset_check {
        return corrupt_reason(FileType::Index, e);
    }
    // Without reading the `.log`, its last offset is only bounded by the offsets a segment
    // can hold (or below the base when it is empty).
    let base_offset = segment.base_offset;
    let max_offset = if size == 0 {
        base_offset.saturating_sub(1)
    } else {
        base_offset.saturating_add(i64::from(i32::MAX))
    };
    let time_check = quick_time_check(&indexes.time, max_offset).and_then(|()| {
        if full {
            indexes.time.sanity_check(Some(max_offset))
        } else {
            Ok(())
        }
    });
    if let Err(e) = time_check {
        return corrupt_reason(FileType::TimeIndex, e);
    }
    Ok(None)
}

/// The strict policy: `None` when both indexes can be trusted.
fn check_indexes(segment: &Segment, full: bool) -> Result<Option<RebuildReason>> {
    let Files { log, indexes } = segment.files()?;
    let size = segment.size();
    let base_offset = segment.base_offset;
    let corrupt = corrupt_reason;

    // 1. The offset index's structure.
    let offset_check = if full {
        // A zero-padded tail (an untrimmed index after a crash) is found in O(1) first: the
        // full check would read the whole preallocated file to find it.
        offset_zero_tail(&indexes.offset).and_then(|()| indexes.offset.sanity_check(Some(size)))
    } else {
        quick_offset_check(&indexes.offset, size)
    };
    if let Err(e) = offset_check {
        return corrupt(FileType::Index, e);
    }

    // 2. Walk the `.log` from the last entry to the end: the entry must be a batch start
    //    whose chunk ends at the entry's offset, and the `.log` must end with a whole batch.
    //    Every batch of that tail is checked as a recovery checks it (its CRC, offsets that
    //    increase): a recovery that kept damaged flushed bytes on disk rebuilt the indexes up
    //    to the damage only, so the damage lies in this tail, and a walk of headers alone let
    //    a clean reopen serve it whenever the tail's timestamps did not betray the short
    //    indexes (issue #25 finding 7). The tail is about one index interval in a healthy
    //    segment.
    let entries = indexes.offset.entries();
    let last_entry = entries.checked_sub(1).and_then(|n| indexes.offset.entry(n));
    let start = last_entry.map_or(0, |e| u64::from(e.position));
    let mismatch = |e: seglog_index_core::OffsetPosition| {
        Ok(Some(RebuildReason::IndexEntryMismatch {
            offset: e.offset,
            position: u64::from(e.position),
        }))
    };
    let mut found = last_entry.is_none();
    let mut tail_max_timestamp = -1i64;
    let mut log_last_offset = None;
    let log_path = segment.log_path_arc();
    let mut walker = HeaderWalker::new(log.handle(), Arc::clone(&log_path), start, size);
    let mut batch_bytes = Vec::new();
    let mut previous_last_offset = None;
    while let Some(header) = walker.next() {
        let header = match header {
            Ok(header) => header,
            // Before the entry's batch is found, a bad walk means a bad entry (it points
            // into the middle of a batch); after it, the `.log` tail is bad.
            Err(e) if e.is_corruption() => {
                return match last_entry {
                    Some(entry) if !found => mismatch(entry),
                    _ => Ok(Some(RebuildReason::LogTail {
                        position: walker.position(),
                    })),
                };
            }
            Err(e) => return Err(e),
        };
        if let Some(entry) = last_entry
            && !found
        {
            if header.last_offset == entry.offset {
                found = true;
            } else if header.last_offset > entry.offset {
                return mismatch(entry);
            }
        }
        if !tail_batch_is_valid(
            log.handle(),
            &log_path,
            &header,
            previous_last_offset,
            &mut batch_bytes,
        )? {
            return match last_entry {
                Some(entry) if !found => mismatch(entry),
                _ => Ok(Some(RebuildReason::LogTail {
                    position: header.position,
                })),
            };
        }
        previous_last_offset = Some(header.last_offset);
        tail_max_timestamp = tail_max_timestamp.max(header.max_timestamp_ms);
        log_last_offset = Some(header.last_offset);
    }
    if let (false, Some(entry)) = (found, last_entry) {
        return mismatch(entry);
    }
    if let WalkEnd::PartialTail { position } = walker.end_state() {
        return Ok(Some(RebuildReason::LogTail { position }));
    }

    // 3. The time index's structure, bounded by the log's last offset.
    let max_offset = log_last_offset.unwrap_or(base_offset.saturating_sub(1));
    let time_check = if full {
        time_zero_tail(&indexes.time).and_then(|()| indexes.time.sanity_check(Some(max_offset)))
    } else {
        quick_time_check(&indexes.time, max_offset)
    };
    if let Err(e) = time_check {
        return corrupt(FileType::TimeIndex, e);
    }

    // 4. The time index must know the largest timestamp of the tail.
    let last_time = indexes.time.last_entry();
    if tail_max_timestamp > last_time.timestamp_ms {
        return Ok(Some(RebuildReason::TimeIndexBehindLog {
            index_timestamp_ms: last_time.timestamp_ms,
            log_timestamp_ms: tail_max_timestamp,
        }));
    }
    Ok(None)
}

/// Whether the batch `header` found is whole and valid as a recovery would take it: its CRC
/// (Kafka's `ensureValid`) and a first offset above the previous batch's last offset
/// (recovery's stricter rule, `CorruptKind::OffsetsNotIncreasing`). `bytes` is a reusable
/// buffer.
///
/// # Errors
/// I/O errors reading the batch.
fn tail_batch_is_valid(
    file: &std::fs::File,
    path: &Path,
    header: &seglog_records::BatchHeader,
    previous_last_offset: Option<i64>,
    bytes: &mut Vec<u8>,
) -> Result<bool> {
    let first_offset = header.base_offset.unwrap_or(header.last_offset);
    if previous_last_offset.is_some_and(|last| first_offset <= last) {
        return Ok(false);
    }
    bytes.resize(header.total_size as usize, 0);
    crate::io::read_exact_at(file, bytes, header.position).map_err(Error::io(IoOp::Read, path))?;
    Ok(seglog_records::BatchRef::parse(bytes, header.position)
        .and_then(|batch| batch.ensure_valid())
        .is_ok())
}

/// `ZeroPaddedTail` when the last of several offset-index entries is all zeros (the padding
/// of a preallocated file that was never trimmed).
fn offset_zero_tail(index: &OffsetIndex) -> seglog_index_core::Result<()> {
    let entries = index.entries();
    match entries.checked_sub(1).and_then(|n| index.entry(n)) {
        Some(last) if entries > 1 && last.offset == index.base_offset() && last.position == 0 => {
            Err(seglog_index_core::Error::Corrupt {
                path: index.path(),
                position: (entries as u64 - 1) * 8,
                kind: seglog_index_core::CorruptKind::ZeroPaddedTail,
            })
        }
        _ => Ok(()),
    }
}

/// `ZeroPaddedTail` when the last of several time-index entries is all zeros.
fn time_zero_tail(index: &TimeIndex) -> seglog_index_core::Result<()> {
    let entries = index.entries();
    match entries.checked_sub(1).and_then(|n| index.entry(n)) {
        Some(last)
            if entries > 1 && last.timestamp_ms == 0 && last.offset == index.base_offset() =>
        {
            Err(seglog_index_core::Error::Corrupt {
                path: index.path(),
                position: (entries as u64 - 1) * 12,
                kind: seglog_index_core::CorruptKind::ZeroPaddedTail,
            })
        }
        _ => Ok(()),
    }
}

/// The cheap offset-index checks: whole entries, a last entry that is not the zero padding
/// of a preallocated file, and a position inside the `.log`.
fn quick_offset_check(index: &OffsetIndex, log_size: u64) -> seglog_index_core::Result<()> {
    use seglog_index_core::CorruptKind;
    let corrupt = |position, kind| {
        Err(seglog_index_core::Error::Corrupt {
            path: index.path(),
            position,
            kind,
        })
    };
    if !index.file_len().is_multiple_of(8) {
        return corrupt(index.file_len() / 8 * 8, CorruptKind::LengthNotMultiple);
    }
    offset_zero_tail(index)?;
    let entries = index.entries();
    if let Some(last) = entries.checked_sub(1).and_then(|n| index.entry(n)) {
        let at = (entries as u64 - 1) * 8;
        if u64::from(last.position) >= log_size {
            return corrupt(at, CorruptKind::PositionOutOfRange);
        }
    }
    Ok(())
}

/// The cheap time-index checks: whole entries, no zero padding at the end, and a last offset
/// inside the segment.
fn quick_time_check(index: &TimeIndex, max_offset: i64) -> seglog_index_core::Result<()> {
    use seglog_index_core::CorruptKind;
    let corrupt = |position, kind| {
        Err(seglog_index_core::Error::Corrupt {
            path: index.path(),
            position,
            kind,
        })
    };
    if !index.file_len().is_multiple_of(12) {
        return corrupt(index.file_len() / 12 * 12, CorruptKind::LengthNotMultiple);
    }
    time_zero_tail(index)?;
    let entries = index.entries();
    if let Some(last) = entries.checked_sub(1).and_then(|n| index.entry(n)) {
        let at = (entries as u64 - 1) * 12;
        if last.offset > max_offset || last.offset < index.base_offset() {
            return corrupt(at, CorruptKind::OffsetOutOfRange);
        }
    }
    Ok(())
}
