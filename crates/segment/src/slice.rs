//! [`FileSlice`]: a zero-copy view of a byte range of a `.log` file.

use std::fs::File;
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, IoOp};
use crate::{Result, io};

/// A byte range `[position, position + len)` of a segment's `.log`, holding a shared handle
/// to the open file.
///
/// It is what [`crate::Segment::read`] returns: the bytes of whole batches starting at the
/// batch that holds the requested offset (the last batch may be cut short by the size
/// limit, as in Kafka). Copy it into memory with [`FileSlice::read_to_vec`] (`pread`) or
/// send it to a socket or file with [`FileSlice::send_to`] (`sendfile`, zero copy).
///
/// The slice keeps the file open: reading keeps working after the segment is renamed to
/// `.deleted` and unlinked. The bytes are those of the file at read time, though: if the
/// segment is **truncated** below the slice's end in the meantime (a follower truncation),
/// reads fail with an [`IoOp::Read`] error of kind `UnexpectedEof` instead of returning
/// bytes that are gone.
#[derive(Clone, Debug)]
pub struct FileSlice {
    file: Arc<File>,
    path: Arc<Path>,
    position: u64,
    len: u64,
    offsets: SliceOffsets,
}

/// The offsets a [`FileSlice`] covers, as far as they are known without reading it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SliceOffsets {
    /// The base offset of the segment the slice comes from.
    pub segment_base_offset: i64,
    /// The offset the read asked for; the first batch of the slice holds it (batches may
    /// begin below it: consumers skip those records).
    pub start_offset: i64,
    /// The last offset of the first batch in the slice.
    pub first_batch_last_offset: i64,
    /// The size in bytes of the first batch.
    pub first_batch_size: u32,
    /// Whether the slice is shorter than its first batch (Kafka's `firstEntryIncomplete`:
    /// the size limit cut even the first batch; it happens only without `min_one_message`).
    pub first_entry_incomplete: bool,
}

impl FileSlice {
    pub(crate) fn new(
        file: Arc<File>,
        path: Arc<Path>,
        position: u64,
        len: u64,
        offsets: SliceOffsets,
    ) -> FileSlice {
        FileSlice {
            file,
            path,
            position,
            len,
            offsets,
        }
    }

    /// A slice of `file` whose bytes another source wrote there at the positions they have in
    /// their segment's `.log`: `[position, position + len)` of the file is that range of the
    /// segment (e.g. a remote segment's range fetched into a sparse temporary file, so that
    /// [`FileSlice::position`] is the segment's position). `path` names the file in errors;
    /// `offsets` describe the slice's start as [`crate::Segment::read`]'s do.
    pub fn over_file(
        file: Arc<File>,
        path: impl Into<Arc<Path>>,
        position: u64,
        len: u64,
        offsets: SliceOffsets,
    ) -> FileSlice {
        FileSlice::new(file, path.into(), position, len, offsets)
    }

    /// An empty slice (no bytes, position 0) that claims no segment's file: what a reader
    /// returns when there is nothing to read and no segment to cut a slice from (a read-only
    /// log of an empty directory). `file` is any open handle — the slice never reads from or
    /// sends it (every read and send of an empty slice returns before touching the file), so
    /// any handle will do, such as the directory itself opened read-only; `path` names it in
    /// errors. Its offsets say `offset` for the
    /// segment base and the start, `-1` for the first batch's last offset, size 0.
    pub fn empty(file: Arc<File>, path: impl Into<Arc<Path>>, offset: i64) -> FileSlice {
        FileSlice {
            file,
            path: path.into(),
            position: 0,
            len: 0,
            offsets: SliceOffsets {
                segment_base_offset: offset,
                start_offset: offset,
                first_batch_last_offset: -1,
                first_batch_size: 0,
                first_entry_incomplete: false,
            },
        }
    }

    /// Byte position of the slice in the `.log` file (a batch boundary).
    pub fn position(&self) -> u64 {
        self.position
    }

    /// Length of the slice in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the slice has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The offsets the slice covers.
    pub fn offsets(&self) -> SliceOffsets {
        self.offsets
    }

    /// The path of the `.log` file when the slice was cut (it may have been renamed since).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A sub-slice `[from, from + len)` relative to this slice, clamped to it. The offsets
    /// are kept as they are (they describe the start of the original slice).
    pub fn subslice(&self, from: u64, len: u64) -> FileSlice {
        let from = from.min(self.len);
        let len = len.min(self.len - from);
        FileSlice {
            file: Arc::clone(&self.file),
            path: Arc::clone(&self.path),
            position: self.position + from,
            len,
            offsets: self.offsets,
        }
    }

    /// Reads `buf.len()` bytes starting `from` bytes into the slice (`pread`).
    ///
    /// # Errors
    /// [`Error::Io`] if the range is not inside the slice (kind `InvalidInput`) or the read
    /// fails, including `UnexpectedEof` when the file was truncated under the slice.
    pub fn read_at(&self, from: u64, buf: &mut [u8]) -> Result<()> {
        let end = from.checked_add(buf.len() as u64);
        if end.is_none_or(|end| end > self.len) {
            return Err(Error::Io {
                op: IoOp::Read,
                path: self.path.to_path_buf(),
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "range outside the file slice",
                ),
            });
        }
        io::read_exact_at(&self.file, buf, self.position + from)
            .map_err(Error::io(IoOp::Read, &self.path))
    }

    /// Appends the slice's bytes to `out` (`pread`).
    ///
    /// # Errors
    /// [`Error::Io`] if the read fails or the file was truncated under the slice.
    pub fn read_into(&self, out: &mut Vec<u8>) -> Result<()> {
        let start = out.len();
        let len = usize::try_from(self.len).map_err(|_| Error::Io {
            op: IoOp::Read,
            path: self.path.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::OutOfMemory, "slice too large"),
        })?;
        out.resize(start + len, 0);
        let result = self.read_at(0, &mut out[start..]);
        if result.is_err() {
            out.truncate(start);
        }
        result
    }

    /// The slice's bytes in a new vector.
    ///
    /// # Errors
    /// As [`FileSlice::read_into`].
    pub fn read_to_vec(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.read_into(&mut out)?;
        Ok(out)
    }

    /// Sends the slice's bytes from `from` on to `out` with **one** `sendfile` call (zero
    /// copy) and returns how many bytes were sent; fewer than asked is normal for sockets.
    /// Returns 0 when `from >= len`.
    ///
    /// # Errors
    /// [`Error::Io`] with [`IoOp::SendFile`] if `sendfile` fails (including `WouldBlock` on
    /// a non-blocking socket that is full).
    pub fn send_to<Fd: AsFd>(&self, out: Fd, from: u64) -> Result<u64> {
        if from >= self.len {
            return Ok(0);
        }
        let mut offset = self.position + from;
        let count = usize::try_from(self.len - from).unwrap_or(usize::MAX);
        let sent = rustix::fs::sendfile(out, &*self.file, Some(&mut offset), count)
            .map_err(|e| Error::io(IoOp::SendFile, &self.path)(e.into()))?;
        Ok(sent as u64)
    }

    /// Sends the whole slice to `out`, calling `sendfile` until everything is sent.
    ///
    /// # Errors
    /// As [`FileSlice::send_to`]; a `sendfile` that sends nothing before the end (the file
    /// was truncated under the slice) is an `UnexpectedEof` error.
    pub fn send_all_to<Fd: AsFd>(&self, out: Fd) -> Result<u64> {
        let mut sent = 0;
        while sent < self.len {
            let n = match self.send_to(out.as_fd(), sent) {
                Err(Error::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::Interrupted =>
                {
                    continue;
                }
                other => other?,
            };
            if n == 0 {
                return Err(Error::Io {
                    op: IoOp::SendFile,
                    path: self.path.to_path_buf(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "file ends inside the slice",
                    ),
                });
            }
            sent += n;
        }
        Ok(sent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, Write};

    fn slice_of(bytes: &[u8], position: u64, len: u64) -> (tempfile::TempDir, FileSlice) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.log");
        std::fs::write(&path, bytes).unwrap();
        let file = Arc::new(File::open(&path).unwrap());
        let offsets = SliceOffsets {
            segment_base_offset: 0,
            start_offset: 0,
            first_batch_last_offset: 0,
            first_batch_size: 0,
            first_entry_incomplete: false,
        };
        (
            dir,
            FileSlice::new(file, Arc::from(path), position, len, offsets),
        )
    }

    #[test]
    fn empty_slice_reads_and_sends_nothing_from_any_handle() {
        let dir = tempfile::tempdir().unwrap();
        // A directory handle: any read of it would fail with EISDIR.
        let file = Arc::new(File::open(dir.path()).unwrap());
        let slice = FileSlice::empty(file, dir.path(), 42);
        assert!(slice.is_empty());
        assert_eq!((slice.position(), slice.len()), (0, 0));
        assert_eq!(slice.path(), dir.path());
        let offsets = slice.offsets();
        assert_eq!(
            (offsets.segment_base_offset, offsets.start_offset),
            (42, 42)
        );
        assert_eq!(offsets.first_batch_last_offset, -1);
        assert!(slice.read_to_vec().unwrap().is_empty());
        slice.read_at(0, &mut []).unwrap();
        assert!(slice.read_at(0, &mut [0u8; 1]).is_err());
        assert!(slice.subslice(0, 10).is_empty());
        let mut sink = tempfile::tempfile().unwrap();
        assert_eq!(slice.send_to(&sink, 0).unwrap(), 0);
        assert_eq!(slice.send_all_to(&sink).unwrap(), 0);
        assert_eq!(sink.seek(std::io::SeekFrom::End(0)).unwrap(), 0);
    }

    #[test]
    fn pread_and_subslice() {
        let bytes: Vec<u8> = (0..=255).collect();
        let (_dir, slice) = slice_of(&bytes, 10, 100);
        assert_eq!(slice.read_to_vec().unwrap(), &bytes[10..110]);
        let sub = slice.subslice(90, 50);
        assert_eq!(sub.len(), 10);
        assert_eq!(sub.read_to_vec().unwrap(), &bytes[100..110]);
        let mut buf = [0u8; 4];
        slice.read_at(96, &mut buf).unwrap();
        assert_eq!(buf, [106, 107, 108, 109]);
        assert!(slice.read_at(97, &mut buf).is_err());
    }

    #[test]
    fn sendfile_to_a_file_copies_the_range() {
        let bytes: Vec<u8> = (0..200u8).collect();
        let (dir, slice) = slice_of(&bytes, 7, 150);
        let mut out = tempfile::tempfile_in(dir.path()).unwrap();
        out.write_all(b"xx").unwrap();
        assert_eq!(slice.send_all_to(&out).unwrap(), 150);
        out.rewind().unwrap();
        let mut got = Vec::new();
        out.read_to_end(&mut got).unwrap();
        assert_eq!(&got[..2], b"xx");
        assert_eq!(&got[2..], &bytes[7..157]);
    }

    #[test]
    fn reads_after_unlink_and_fails_cleanly_after_truncation() {
        let bytes = vec![7u8; 64];
        let (_dir, slice) = slice_of(&bytes, 0, 64);
        std::fs::remove_file(slice.path()).unwrap();
        assert_eq!(slice.read_to_vec().unwrap(), bytes);

        let (_dir2, slice) = slice_of(&bytes, 0, 64);
        std::fs::OpenOptions::new()
            .write(true)
            .open(slice.path())
            .unwrap()
            .set_len(10)
            .unwrap();
        let err = slice.read_to_vec().unwrap_err();
        assert!(matches!(err, Error::Io { op: IoOp::Read, .. }), "{err}");
    }
}
