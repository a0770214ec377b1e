//! `.timeindex`: sparse map from timestamp to offset (Kafka's `TimeIndex`).

use std::path::PathBuf;

use crate::Result;
use crate::core::IndexCore;
use crate::entry::{IndexEntry, TimeEntry, TimestampOffset, absolute_offset};
use crate::error::Error;
use crate::lifecycle::index_lifecycle;
use crate::sanity;
use crate::search::Column;

/// Kafka's `RecordBatch.NO_TIMESTAMP`.
const NO_TIMESTAMP: i64 = -1;

/// A segment's time index: 12-byte entries `(timestamp, relative offset)`, timestamps strictly
/// increasing, offsets never decreasing. One slot is held back for the entry written at roll or
/// close (`maybe_append(.., skip_full_check = true)`). `Send + Sync` like [`crate::OffsetIndex`].
pub struct TimeIndex {
    core: IndexCore<TimeEntry>,
}

index_lifecycle! {
    TimeIndex, TimeEntry;
    /// Opens the index at `path`, creating it when missing: a new file is preallocated to
    /// `floor(max_index_bytes / 12) * 12` bytes (10485756 for Kafka's default 10 MiB); an existing
    /// file is mapped whole and every whole 12 bytes counts as an entry.
    ///
    /// # Ownership
    ///
    /// The file is memory-mapped read-write, so the caller must own it exclusively for as
    /// long as the index lives: no other process may truncate or trim it (the log layer holds
    /// the directory lock; a broker or another seglog writing the same directory would hold
    /// it instead). If another process shrank the file, the next lookup touching a page past
    /// the new end would kill this process with `SIGBUS`. To look at files another process
    /// may own, use [`open_read_only`](Self::open_read_only), which never maps.
    ///
    /// # Errors
    ///
    /// `InvalidSize` when a new file would hold no entry; `Io` when a file call fails.
    fn open;
    /// A heap-backed index that never touches the disk, with `floor(max_index_bytes / 12)`
    /// slots. `path_for_errors` only names it in errors.
    fn in_memory;
    /// Slots the current length holds (`file_len / 12`), including the spare one.
    fn max_entries;
    /// Bytes of valid entries: `entries * 12`.
    fn size_in_bytes;
    /// Removes every entry, then `resize(max_index_bytes)`.
    ///
    /// # Errors
    ///
    /// `ReadOnly`; `Io`.
    fn reset;
    /// Sets the length to `floor(new_len / 12) * 12` and remaps; `Ok(false)` when unchanged.
    ///
    /// # Errors
    ///
    /// `ReadOnly`; `InvalidSize` when the new length cannot hold the current entries; `Io`.
    fn resize;
    /// `resize(entries * 12)`.
    ///
    /// # Errors
    ///
    /// `ReadOnly`; `Io`.
    fn trim_to_valid_size;
    /// Renames the file (no directory fsync; for in-memory indexes only the name changes).
    ///
    /// # Errors
    ///
    /// `ReadOnly`; `Io`.
    fn rename_to;
}

impl TimeIndex {
    /// `entries >= max_entries - 1`: the last slot is kept for the roll-time entry. A
    /// zero-length index is always full.
    #[must_use]
    pub fn is_full(&self) -> bool {
        self.core.read_with_len(|bytes, len| {
            Self::full(bytes.len() / TimeEntry::SIZE, (len / 12) as usize)
        })
    }

    /// The last entry, or `(-1, base_offset)` when empty.
    #[must_use]
    pub fn last_entry(&self) -> TimestampOffset {
        self.core.read(|bytes| self.last_entry_in(bytes))
    }

    /// Entry `n` (0-based), or `None` past the end.
    #[must_use]
    pub fn entry(&self, n: usize) -> Option<TimestampOffset> {
        self.core.entry(n).map(|entry| self.to_absolute(entry))
    }

    /// The last entry whose timestamp is `<= timestamp_ms` (floor), or `(-1, base_offset)` when
    /// the index is empty or every entry is later (Kafka's `lookup`).
    #[must_use]
    #[inline]
    pub fn lookup(&self, timestamp_ms: i64) -> TimestampOffset {
        match self.core.floor(Column::Key, timestamp_ms) {
            Some(entry) => self.to_absolute(entry),
            None => TimestampOffset {
                timestamp_ms: NO_TIMESTAMP,
                offset: self.base_offset(),
            },
        }
    }

    /// Kafka's `maybeAppend`, rule for rule:
    /// 1. `!skip_full_check && is_full()` fails with `IndexFull`;
    /// 2. a non-empty index rejects `offset < last.offset` with `InvalidOffset` (equal is fine);
    /// 3. a non-empty index rejects `timestamp_ms < last.timestamp_ms` with
    ///    `TimestampRegression`;
    /// 4. the entry is written only if `timestamp_ms > last.timestamp_ms` (`-1` when empty, so
    ///    `-1` is never indexed and `0` is).
    ///
    /// Unlike Kafka (KAFKA-10207), `skip_full_check` never writes past the end: with no whole
    /// slot left the call fails with `IndexFull`.
    ///
    /// # Errors
    ///
    /// As above, plus `ReadOnly` and `OffsetOverflow` (`offset - base_offset` not in
    /// `0..=i32::MAX`).
    pub fn maybe_append(
        &self,
        timestamp_ms: i64,
        offset: i64,
        skip_full_check: bool,
    ) -> Result<()> {
        self.core.push_with(|bytes, capacity| {
            let entries = bytes.len() / TimeEntry::SIZE;
            if !skip_full_check && Self::full(entries, capacity) {
                return Err(Error::IndexFull {
                    path: self.path(),
                    entries,
                });
            }
            let last = self.last_entry_in(bytes);
            if entries > 0 && offset < last.offset {
                return Err(Error::InvalidOffset {
                    path: self.path(),
                    offset,
                    last_offset: last.offset,
                });
            }
            if entries > 0 && timestamp_ms < last.timestamp_ms {
                return Err(Error::TimestampRegression {
                    path: self.path(),
                    timestamp_ms,
                    last_timestamp_ms: last.timestamp_ms,
                });
            }
            if timestamp_ms <= last.timestamp_ms {
                return Ok(None);
            }
            let relative_offset = self.core.relative_offset(offset)?;
            Ok(Some(
                TimeEntry {
                    timestamp_ms,
                    relative_offset,
                }
                .encode(),
            ))
        })
    }

    /// Removes every entry with offset `>= offset`, searching the offset column (Kafka's
    /// `truncateTo`). Only the entry count changes.
    ///
    /// # Errors
    ///
    /// `ReadOnly`.
    pub fn truncate_to(&self, offset: i64) -> Result<()> {
        let target = offset.saturating_sub(self.base_offset());
        self.core.truncate_to_ceiling(Column::Value, target)
    }

    /// Strict structural check (stricter than Kafka's): whole entries; timestamps strictly
    /// increase and are not negative; offsets never decrease, are not below the base offset
    /// and, when given, not above `max_offset` (the segment's last offset); no zero-padded
    /// tail.
    ///
    /// # Errors
    ///
    /// `Corrupt` with the byte position of the first bad entry.
    pub fn sanity_check(&self, max_offset: Option<i64>) -> Result<()> {
        let base_offset = self.base_offset();
        self.core
            .check(|bytes, len| sanity::check_time_index(bytes, len, base_offset, max_offset))
    }

    fn full(entries: usize, max_entries: usize) -> bool {
        entries + 1 >= max_entries
    }

    fn last_entry_in(&self, bytes: &[u8]) -> TimestampOffset {
        match bytes.len() / TimeEntry::SIZE {
            0 => TimestampOffset {
                timestamp_ms: NO_TIMESTAMP,
                offset: self.base_offset(),
            },
            n => self.to_absolute(TimeEntry::read(bytes, n - 1)),
        }
    }

    fn to_absolute(&self, entry: TimeEntry) -> TimestampOffset {
        TimestampOffset {
            timestamp_ms: entry.timestamp_ms,
            offset: absolute_offset(self.base_offset(), entry.relative_offset),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn ts(timestamp_ms: i64, offset: i64) -> TimestampOffset {
        TimestampOffset {
            timestamp_ms,
            offset,
        }
    }

    #[test]
    fn create_preallocates_whole_entries_with_a_spare_slot() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.timeindex");
        let index = TimeIndex::open(&path, 0, 10 * 1024 * 1024).unwrap();
        assert_eq!(index.file_len(), 10_485_756);
        assert_eq!(index.max_entries(), 873_813);
        drop(index);
        let small = TimeIndex::open(dir.path().join("1.timeindex"), 0, 36).unwrap();
        small.maybe_append(1, 0, false).unwrap();
        small.maybe_append(2, 1, false).unwrap();
        assert!(small.is_full());
        assert!(matches!(
            small.maybe_append(3, 2, false),
            Err(Error::IndexFull { entries: 2, .. })
        ));
        small.maybe_append(3, 2, true).unwrap();
        assert_eq!(small.entries(), 3);
        // The spare slot is used; even skip_full_check never writes past the end.
        assert!(matches!(
            small.maybe_append(4, 3, true),
            Err(Error::IndexFull { entries: 3, .. })
        ));
    }

    #[test]
    fn maybe_append_follows_kafka_rules() {
        let index = TimeIndex::in_memory("mem.timeindex", 100, 1200);
        assert_eq!(index.last_entry(), ts(-1, 100));
        index.maybe_append(-1, 100, false).unwrap();
        assert_eq!(index.entries(), 0, "-1 is never indexed");
        index.maybe_append(0, 100, false).unwrap();
        assert_eq!(index.last_entry(), ts(0, 100));
        index.maybe_append(0, 101, false).unwrap();
        assert_eq!(index.entries(), 1, "equal timestamp is not indexed");
        assert!(matches!(
            index.maybe_append(5, 99, false),
            Err(Error::InvalidOffset {
                offset: 99,
                last_offset: 100,
                ..
            })
        ));
        assert!(matches!(
            index.maybe_append(-3, 101, false),
            Err(Error::TimestampRegression {
                timestamp_ms: -3,
                last_timestamp_ms: 0,
                ..
            })
        ));
        index.maybe_append(10, 100, false).unwrap();
        assert_eq!(index.last_entry(), ts(10, 100), "equal offset is allowed");
        assert!(matches!(
            index.maybe_append(20, 100 + (1 << 31), false),
            Err(Error::OffsetOverflow { .. })
        ));
        assert_eq!(index.entries(), 2);
    }

    #[test]
    fn lookups_and_truncate_by_offset_column() {
        let index = TimeIndex::in_memory("mem.timeindex", 50, 1200);
        assert_eq!(index.lookup(5), ts(-1, 50));
        for (t, o) in [(100, 52), (200, 55), (300, 55), (400, 60)] {
            index.maybe_append(t, o, false).unwrap();
        }
        assert_eq!(index.lookup(99), ts(-1, 50));
        assert_eq!(index.lookup(100), ts(100, 52));
        assert_eq!(index.lookup(299), ts(200, 55));
        assert_eq!(index.lookup(i64::MAX), ts(400, 60));
        assert_eq!(index.entry(3), Some(ts(400, 60)));
        assert_eq!(index.entry(4), None);
        index.truncate_to(56).unwrap();
        assert_eq!(index.entries(), 3);
        index.truncate_to(55).unwrap();
        assert_eq!(index.entries(), 1);
        index.truncate_to(0).unwrap();
        assert_eq!(index.entries(), 0);
    }

    #[test]
    fn reopen_untrimmed_file_counts_zero_entries_like_kafka() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.timeindex");
        let index = TimeIndex::open(&path, 0, 120).unwrap();
        index.maybe_append(1000, 3, false).unwrap();
        index.flush().unwrap();
        drop(index); // no trim: what a crash leaves
        let index = TimeIndex::open(&path, 0, 120).unwrap();
        assert_eq!((index.entries(), index.max_entries()), (10, 10));
        assert_eq!(
            index.last_entry(),
            ts(0, 0),
            "KAFKA-10207: Kafka sees a last entry of (0, base)"
        );
        assert!(matches!(
            index.sanity_check(None),
            Err(Error::Corrupt {
                position: 12,
                kind: crate::CorruptKind::ZeroPaddedTail,
                ..
            })
        ));
    }
}
