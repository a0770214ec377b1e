//! `.index`: sparse map from offset to `.log` byte position (Kafka's `OffsetIndex`).

use std::path::PathBuf;

use crate::Result;
use crate::core::IndexCore;
use crate::entry::{IndexEntry, OffsetEntry, OffsetPosition, absolute_offset, relative_offset};
use crate::error::Error;
use crate::lifecycle::index_lifecycle;
use crate::sanity;
use crate::search::{Column, floor_slot};

/// A segment's offset index: 8-byte entries `(relative offset, position)`, offsets strictly
/// increasing. `Send + Sync`: appends are serialized, lookups run concurrently with them.
pub struct OffsetIndex {
    core: IndexCore<OffsetEntry>,
}

index_lifecycle! {
    OffsetIndex, OffsetEntry;
    /// Opens the index at `path`, creating it when missing (Kafka's constructor):
    /// * missing: create, preallocate `floor(max_index_bytes / 8) * 8` zero bytes, map it, no
    ///   entries;
    /// * existing: map the whole file as it is; every whole 8 bytes counts as an entry (an
    ///   untrimmed file therefore reopens full; see [`OffsetIndex::sanity_check`]).
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
    /// A heap-backed index that never touches the disk, with room for
    /// `floor(max_index_bytes / 8)` entries. `path_for_errors` only names it in errors.
    fn in_memory;
    /// Entries the current length holds (`file_len / 8`).
    fn max_entries;
    /// Bytes of valid entries: `entries * 8`.
    fn size_in_bytes;
    /// Removes every entry, then `resize(max_index_bytes)` (Kafka's `reset`, used by recovery).
    ///
    /// # Errors
    ///
    /// `ReadOnly`; `Io` when the file cannot be resized or remapped.
    fn reset;
    /// Sets the length to `floor(new_len / 8) * 8` and remaps; `Ok(false)` when that is the
    /// current length. Entries are kept.
    ///
    /// # Errors
    ///
    /// `ReadOnly`; `InvalidSize` when the new length cannot hold the current entries; `Io`.
    fn resize;
    /// `resize(entries * 8)`: drops the preallocated tail (at roll, close and after recovery).
    ///
    /// # Errors
    ///
    /// `ReadOnly`; `Io`.
    fn trim_to_valid_size;
    /// Renames the file (no directory fsync; for in-memory indexes only the name changes). The
    /// new path is kept even if the rename fails, as in Kafka.
    ///
    /// # Errors
    ///
    /// `ReadOnly`; `Io`.
    fn rename_to;
}

impl OffsetIndex {
    /// `entries >= max_entries` (so a zero-length index is always full, KAFKA-6388).
    #[must_use]
    pub fn is_full(&self) -> bool {
        self.core
            .read_with_len(|bytes, len| bytes.len() as u64 / 8 >= len / 8)
    }

    /// The last entry's offset, or the base offset when empty.
    #[must_use]
    pub fn last_offset(&self) -> i64 {
        self.core.read(|bytes| self.last_offset_in(bytes))
    }

    /// Entry `n` (0-based), or `None` past the end.
    #[must_use]
    pub fn entry(&self, n: usize) -> Option<OffsetPosition> {
        self.core.entry(n).map(|entry| self.to_absolute(entry))
    }

    /// The last entry whose offset is `<= target_offset` (floor), or `(base_offset, 0)` when the
    /// index is empty or every entry is above the target (Kafka's `lookup`).
    #[must_use]
    #[inline]
    pub fn lookup(&self, target_offset: i64) -> OffsetPosition {
        let target = target_offset.saturating_sub(self.base_offset());
        match self.core.floor(Column::Key, target) {
            Some(entry) => self.to_absolute(entry),
            None => OffsetPosition {
                offset: self.base_offset(),
                position: 0,
            },
        }
    }

    /// [`lookup`](Self::lookup) and the entry after the floor (the first entry above the
    /// target), read under one lock: a reader walking the `.log` from the floor knows the
    /// batch holding the target starts at or before the next entry's position. `None` when
    /// no entry is above the target.
    #[must_use]
    #[inline]
    pub fn lookup_with_next(&self, target_offset: i64) -> (OffsetPosition, Option<OffsetPosition>) {
        let target = target_offset.saturating_sub(self.base_offset());
        self.core.read(|bytes| {
            let floor = floor_slot::<OffsetEntry>(bytes, Column::Key, target);
            let next = floor.map_or(0, |slot| slot + 1);
            let floor = match floor {
                Some(slot) => self.to_absolute(OffsetEntry::read(bytes, slot)),
                None => OffsetPosition {
                    offset: self.base_offset(),
                    position: 0,
                },
            };
            let next = (next < bytes.len() / OffsetEntry::SIZE)
                .then(|| self.to_absolute(OffsetEntry::read(bytes, next)));
            (floor, next)
        })
    }

    /// The first entry whose position is `>= start_position + fetch_size`, or `None` (Kafka's
    /// `fetchUpperBoundOffset`: the exclusive upper offset of a fetch).
    #[must_use]
    pub fn fetch_upper_bound_offset(
        &self,
        start_position: u32,
        fetch_size: u32,
    ) -> Option<OffsetPosition> {
        let target = i64::from(start_position) + i64::from(fetch_size);
        self.core
            .ceiling(Column::Value, target)
            .map(|entry| self.to_absolute(entry))
    }

    /// Whether `offset` can be stored relative to the base offset (Kafka's `canAppendOffset`:
    /// `0 <= offset - base_offset <= i32::MAX`; it does not look at fullness or order).
    #[must_use]
    pub fn can_append_offset(&self, offset: i64) -> bool {
        relative_offset(self.base_offset(), offset).is_some()
    }

    /// Appends `(offset, position)`.
    ///
    /// # Errors
    ///
    /// `ReadOnly`; `IndexFull` when `entries >= max_entries`; `InvalidOffset` when the index is
    /// not empty and `offset <= last_offset`; `OffsetOverflow` when `offset - base_offset` is
    /// not in `0..=i32::MAX`; `PositionOverflow` when `position > i32::MAX`.
    pub fn append(&self, offset: i64, position: u32) -> Result<()> {
        self.core.push_with(|bytes, capacity| {
            let entries = bytes.len() / OffsetEntry::SIZE;
            if entries >= capacity {
                return Err(Error::IndexFull {
                    path: self.path(),
                    entries,
                });
            }
            let last_offset = self.last_offset_in(bytes);
            if entries > 0 && offset <= last_offset {
                return Err(Error::InvalidOffset {
                    path: self.path(),
                    offset,
                    last_offset,
                });
            }
            let relative_offset = self.core.relative_offset(offset)?;
            let position = i32::try_from(position).map_err(|_| Error::PositionOverflow {
                path: self.path(),
                position,
            })?;
            Ok(Some(
                OffsetEntry {
                    relative_offset,
                    position,
                }
                .encode(),
            ))
        })
    }

    /// Removes every entry with offset `>= offset` (Kafka's `truncateTo`: an exact match is
    /// removed). Only the entry count changes; the bytes stay until overwritten or trimmed.
    ///
    /// # Errors
    ///
    /// `ReadOnly`.
    pub fn truncate_to(&self, offset: i64) -> Result<()> {
        let target = offset.saturating_sub(self.base_offset());
        self.core.truncate_to_ceiling(Column::Key, target)
    }

    /// Strict structural check (stricter than Kafka's): the file length is a whole number of
    /// entries; offsets and positions strictly increase; no zero-padded tail; relative offsets
    /// are not negative; positions are `< log_size_bytes` when given.
    ///
    /// # Errors
    ///
    /// `Corrupt` with the byte position of the first bad entry.
    pub fn sanity_check(&self, log_size_bytes: Option<u64>) -> Result<()> {
        self.sanity_check_bounds(log_size_bytes, None)
    }

    /// [`OffsetIndex::sanity_check`], also requiring every offset to be `<= max_offset` when
    /// given (the segment's last offset).
    ///
    /// # Errors
    ///
    /// `Corrupt` with the byte position of the first bad entry.
    pub fn sanity_check_bounds(
        &self,
        log_size_bytes: Option<u64>,
        max_offset: Option<i64>,
    ) -> Result<()> {
        let base_offset = self.base_offset();
        self.core.check(|bytes, len| {
            sanity::check_offset_index(bytes, len, base_offset, log_size_bytes, max_offset)
        })
    }

    fn last_offset_in(&self, bytes: &[u8]) -> i64 {
        match bytes.len() / OffsetEntry::SIZE {
            0 => self.base_offset(),
            n => absolute_offset(
                self.base_offset(),
                OffsetEntry::read(bytes, n - 1).relative_offset,
            ),
        }
    }

    #[inline]
    fn to_absolute(&self, entry: OffsetEntry) -> OffsetPosition {
        // Positions are stored as i32; a negative one only exists in a corrupt file (which
        // `sanity_check` reports) and is returned bit-for-bit.
        OffsetPosition {
            offset: absolute_offset(self.base_offset(), entry.relative_offset),
            position: entry.position as u32,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn create_preallocates_whole_entries_and_reopen_counts_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000100.index");
        let index = OffsetIndex::open(&path, 100, 1003).unwrap();
        assert_eq!(index.file_len(), 1000);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 1000);
        assert_eq!((index.entries(), index.max_entries()), (0, 125));
        index.append(105, 4096).unwrap();
        index.append(110, 8192).unwrap();
        index.close().unwrap();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            [0, 0, 0, 5, 0, 0, 16, 0, 0, 0, 0, 10, 0, 0, 32, 0]
        );

        let index = OffsetIndex::open(&path, 100, 1000).unwrap();
        assert_eq!(
            (index.entries(), index.max_entries(), index.is_full()),
            (2, 2, true)
        );
        assert_eq!(index.last_offset(), 110);
        assert!(index.resize(80).unwrap());
        assert!(!index.resize(87).unwrap());
        assert!(!index.is_full());
        index.append(111, 9000).unwrap();
        assert_eq!(
            index.entry(2),
            Some(OffsetPosition {
                offset: 111,
                position: 9000
            })
        );
    }

    #[test]
    fn too_small_new_file_is_rejected_without_creating_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.index");
        assert!(matches!(
            OffsetIndex::open(&path, 0, 7),
            Err(Error::InvalidSize { size: 7, .. })
        ));
        assert!(!path.exists());
    }

    #[test]
    fn append_rules() {
        let index = OffsetIndex::in_memory("mem.index", 1000, 24);
        assert!(matches!(
            index.append(999, 0),
            Err(Error::OffsetOverflow { offset: 999, .. })
        ));
        index.append(1000, 0).unwrap();
        assert!(matches!(
            index.append(1000, 10),
            Err(Error::InvalidOffset {
                offset: 1000,
                last_offset: 1000,
                ..
            })
        ));
        let too_far = 1000 + i64::from(i32::MAX) + 1;
        assert!(!index.can_append_offset(too_far));
        assert!(index.can_append_offset(too_far - 1));
        assert!(matches!(
            index.append(too_far, 10),
            Err(Error::OffsetOverflow { .. })
        ));
        assert!(matches!(
            index.append(1001, u32::MAX),
            Err(Error::PositionOverflow { .. })
        ));
        index.append(1001, 10).unwrap();
        index.append(too_far - 1, 20).unwrap();
        assert!(index.is_full());
        assert!(matches!(
            index.append(too_far, 30),
            Err(Error::IndexFull { entries: 3, .. })
        ));
    }

    #[test]
    fn lookups_and_fallbacks() {
        let index = OffsetIndex::in_memory("mem.index", 50, 4096);
        assert_eq!(
            index.lookup(60),
            OffsetPosition {
                offset: 50,
                position: 0
            }
        );
        assert_eq!(index.last_offset(), 50);
        assert_eq!(index.fetch_upper_bound_offset(0, 10), None);
        for (offset, position) in [(52, 100), (55, 4096), (60, 8192)] {
            index.append(offset, position).unwrap();
        }
        assert_eq!(
            index.lookup(51),
            OffsetPosition {
                offset: 50,
                position: 0
            }
        );
        assert_eq!(
            index.lookup(52),
            OffsetPosition {
                offset: 52,
                position: 100
            }
        );
        assert_eq!(
            index.lookup(59),
            OffsetPosition {
                offset: 55,
                position: 4096
            }
        );
        assert_eq!(
            index.lookup(i64::MAX),
            OffsetPosition {
                offset: 60,
                position: 8192
            }
        );
        assert_eq!(
            index.lookup(i64::MIN),
            OffsetPosition {
                offset: 50,
                position: 0
            }
        );
        assert_eq!(
            index.fetch_upper_bound_offset(100, 3996),
            Some(OffsetPosition {
                offset: 55,
                position: 4096
            })
        );
        assert_eq!(
            index.fetch_upper_bound_offset(4096, 1),
            Some(OffsetPosition {
                offset: 60,
                position: 8192
            })
        );
        assert_eq!(index.fetch_upper_bound_offset(8192, 1), None);
        assert_eq!(index.size_in_bytes(), 24);
    }

    #[test]
    fn truncate_to_removes_exact_match_and_later() {
        let index = OffsetIndex::in_memory("mem.index", 0, 4096);
        for (offset, position) in [(10, 100), (20, 200), (30, 300)] {
            index.append(offset, position).unwrap();
        }
        index.truncate_to(31).unwrap();
        assert_eq!(index.entries(), 3);
        index.truncate_to(25).unwrap();
        assert_eq!(index.entries(), 2);
        index.truncate_to(20).unwrap();
        assert_eq!(index.entries(), 1);
        index.truncate_to(5).unwrap();
        assert_eq!(index.entries(), 0);
        index.append(3, 7).unwrap();
        assert_eq!(
            index.entry(0),
            Some(OffsetPosition {
                offset: 3,
                position: 7
            })
        );
        index.truncate().unwrap();
        assert_eq!(index.entries(), 0);
    }

    #[test]
    fn trim_reset_and_resize_below_entries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.index");
        let index = OffsetIndex::open(&path, 0, 4096).unwrap();
        index.append(1, 1).unwrap();
        index.append(2, 2).unwrap();
        assert!(matches!(
            index.resize(15),
            Err(Error::InvalidSize { size: 15, .. })
        ));
        index.trim_to_valid_size().unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 16);
        assert!(index.is_full());
        index.reset().unwrap();
        assert_eq!((index.entries(), index.file_len()), (0, 4096));
        index.flush().unwrap();
    }

    #[test]
    fn zero_length_index_is_full() {
        let index = OffsetIndex::in_memory("mem.index", 0, 4);
        assert_eq!(index.max_entries(), 0);
        assert!(index.is_full());
        assert!(matches!(index.append(0, 0), Err(Error::IndexFull { .. })));
    }

    #[test]
    fn read_only_refuses_mutation_and_never_writes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.index");
        std::fs::write(
            &path,
            OffsetEntry {
                relative_offset: 4,
                position: 40,
            }
            .encode(),
        )
        .unwrap();
        let index = OffsetIndex::open_read_only(&path, 0).unwrap();
        assert!(index.is_read_only());
        assert_eq!(
            index.lookup(9),
            OffsetPosition {
                offset: 4,
                position: 40
            }
        );
        assert!(matches!(index.append(5, 50), Err(Error::ReadOnly { .. })));
        assert!(matches!(index.truncate_to(0), Err(Error::ReadOnly { .. })));
        assert!(matches!(index.resize(800), Err(Error::ReadOnly { .. })));
        assert!(matches!(
            index.rename_to(dir.path().join("x")),
            Err(Error::ReadOnly { .. })
        ));
        index.flush().unwrap();
        index.sanity_check(None).unwrap();
        index.close().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), [0, 0, 0, 4, 0, 0, 0, 40]);
    }

    #[test]
    fn rename_and_delete() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.index");
        let renamed = dir.path().join("0.index.deleted");
        let index = OffsetIndex::open(&path, 0, 800).unwrap();
        index.append(1, 1).unwrap();
        index.rename_to(&renamed).unwrap();
        assert_eq!(index.path(), renamed);
        assert!(!path.exists() && renamed.exists());
        index.append(2, 2).unwrap();
        assert_eq!(index.lookup(2).position, 2);
        index.delete().unwrap();
        assert!(!renamed.exists());

        let missing = OffsetIndex::open(&path, 0, 800).unwrap();
        std::fs::remove_file(&path).unwrap();
        missing.delete().unwrap();
    }
}
