//! Delayed deletion: segments removed from the log are renamed `.deleted` at once and unlinked
//! `file.delete.delay.ms` later by [`crate::Log::tick`] (or at close). Readers that already hold
//! a slice keep their open file and keep reading. A truncation's segments are the exception:
//! they are unlinked at once (`Log::unlink_truncated`; docs/format.md, "Segments a truncation
//! removes are unlinked at once").

use std::path::{Path, PathBuf};

use seglog_segment::{FileKind, FileType, Segment, TempSuffix, file_path};

use crate::Result;
use crate::fsutil::remove_if_exists;
use std::sync::Arc;

use crate::sync::{Mutex, lock};

/// Something renamed `.deleted`, waiting to be unlinked.
#[derive(Debug)]
pub(crate) enum Doomed {
    /// An open segment (readers may still hold it or slices of it).
    Segment(Arc<Segment>),
    /// Files of a segment that was never opened (dropped during load).
    Files(Vec<PathBuf>),
}

/// A segment's files, in the order they are renamed to `.deleted`.
pub(crate) const SEGMENT_FILE_TYPES: [FileType; 4] = [
    FileType::Log,
    FileType::Index,
    FileType::TimeIndex,
    FileType::TxnIndex,
];

/// Renames the `file_type` file of the unopened segment `base_offset` to `*.deleted`. Returns
/// the new path, or `None` when the file does not exist.
///
/// # Errors
/// I/O errors of the rename other than a missing file.
pub(crate) fn rename_to_deleted(
    dir: &Path,
    base_offset: i64,
    file_type: FileType,
) -> Result<Option<PathBuf>> {
    let kind = FileKind::new(file_type);
    let from = file_path(dir, base_offset, kind);
    let to = file_path(
        dir,
        base_offset,
        kind.with_suffix(Some(TempSuffix::Deleted)),
    );
    match std::fs::rename(&from, &to) {
        Ok(()) => Ok(Some(to)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(crate::Error::io("rename to .deleted", &from, e)),
    }
}

/// Unlinks every file of the unopened segment `base_offset` at once (no `.deleted` stage:
/// nothing can be reading a segment that was never opened). Returns the paths removed. The
/// caller fsyncs the directory.
///
/// # Errors
/// I/O errors other than a missing file.
pub(crate) fn unlink_files(dir: &Path, base_offset: i64) -> Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    for file_type in SEGMENT_FILE_TYPES {
        let path = file_path(dir, base_offset, FileKind::new(file_type));
        if remove_if_exists(&path)? {
            removed.push(path);
        }
    }
    Ok(removed)
}

impl Doomed {
    /// Unlinks the files.
    ///
    /// # Errors
    /// I/O errors other than "already gone".
    pub(crate) fn delete(&self) -> Result<()> {
        match self {
            Self::Segment(segment) => segment.delete_files().map_err(crate::Error::Segment),
            Self::Files(paths) => {
                for path in paths {
                    remove_if_exists(path)?;
                }
                Ok(())
            }
        }
    }
}

/// Items waiting for their deletion time.
#[derive(Debug)]
pub(crate) struct DeleteQueue<T> {
    pending: Mutex<Vec<(i64, T)>>,
}

impl<T> Default for DeleteQueue<T> {
    fn default() -> Self {
        Self {
            pending: Mutex::new(Vec::new()),
        }
    }
}

impl<T> DeleteQueue<T> {
    /// Queues `item` to be deleted at `due_ms`.
    pub(crate) fn push(&self, due_ms: i64, item: T) {
        lock(&self.pending).push((due_ms, item));
    }

    /// Removes and returns every item due at `now_ms`.
    pub(crate) fn take_due(&self, now_ms: i64) -> Vec<T> {
        let mut pending = lock(&self.pending);
        let (due, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut *pending)
            .into_iter()
            .partition(|(at, _)| *at <= now_ms);
        *pending = keep;
        due.into_iter().map(|(_, item)| item).collect()
    }

    /// Removes and returns everything (close: delete now rather than leave `.deleted` files).
    pub(crate) fn take_all(&self) -> Vec<T> {
        std::mem::take(&mut *lock(&self.pending))
            .into_iter()
            .map(|(_, item)| item)
            .collect()
    }

    /// Puts items back (a failed deletion is retried at the next tick).
    pub(crate) fn requeue(&self, due_ms: i64, items: impl IntoIterator<Item = T>) {
        lock(&self.pending).extend(items.into_iter().map(|item| (due_ms, item)));
    }

    /// Number of items waiting.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn len(&self) -> usize {
        lock(&self.pending).len()
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    #[test]
    fn releases_items_when_due() {
        let queue = DeleteQueue::default();
        queue.push(100, "a");
        queue.push(50, "b");
        assert!(queue.take_due(49).is_empty());
        assert_eq!(queue.take_due(50), vec!["b"]);
        assert_eq!(queue.len(), 1);
        queue.requeue(10, ["c"]);
        assert_eq!(queue.take_all().len(), 2);
        assert_eq!(queue.len(), 0);
    }
}
