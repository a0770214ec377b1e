//! The aborted-transaction index, `<20-digit base offset>.txnindex` (Kafka's
//! `TransactionIndex` / `AbortedTxn`, spec §2.4): one 34-byte entry per aborted transaction
//! whose ABORT marker lies in the segment, in marker order. Created on the first entry.
//!
//! Layout of an entry, big-endian:
//!
//! ```text
//! version          int16  = 0
//! producerId       int64
//! firstOffset      int64  first offset of the transaction (may lie in an earlier segment)
//! lastOffset       int64  offset of the ABORT marker
//! lastStableOffset int64  the LSO right after the marker was written
//! ```
//!
//! The segment keeps the entries in memory once read (the file is small: 34 bytes per aborted
//! transaction); appends write the file and the memory copy, under the log's writer lock.
//! The first read checks the file against what the segment can hold ([`read_txn_index`]) and
//! streams it, so a damaged or hostile file is a typed error, never an allocation of its size.

use std::path::Path;

use crate::Result;
use crate::error::{CorruptKind, Error, IoOp, TxnIndexProblem};
use crate::file_name::FileType;
use crate::segment::{OpenMode, Segment};
use crate::sync::{Ordering, lock};

/// One aborted transaction (Kafka's `AbortedTxn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AbortedTxn {
    /// The producer id.
    pub producer_id: i64,
    /// First offset of the transaction.
    pub first_offset: i64,
    /// Offset of its ABORT marker.
    pub last_offset: i64,
    /// The last stable offset once the marker was written (the first offset of the next
    /// ongoing transaction of another producer, else the marker's offset + 1).
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    /// Bytes of one entry.
    pub const SIZE: usize = 34;
    /// The only version Kafka writes (and the highest it reads).
    pub const CURRENT_VERSION: i16 = 0;

    /// The 34 bytes Kafka writes.
    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut out = [0u8; Self::SIZE];
        out[..2].copy_from_slice(&Self::CURRENT_VERSION.to_be_bytes());
        out[2..10].copy_from_slice(&self.producer_id.to_be_bytes());
        out[10..18].copy_from_slice(&self.first_offset.to_be_bytes());
        out[18..26].copy_from_slice(&self.last_offset.to_be_bytes());
        out[26..34].copy_from_slice(&self.last_stable_offset.to_be_bytes());
        out
    }

    /// Decodes one entry; `Err(version)` for a version above 0 (Kafka refuses it).
    pub fn decode(bytes: &[u8; Self::SIZE]) -> Result<Self, i16> {
        let version = i16::from_be_bytes([bytes[0], bytes[1]]);
        if version > Self::CURRENT_VERSION {
            return Err(version);
        }
        let at = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[i..i + 8]);
            i64::from_be_bytes(b)
        };
        Ok(Self {
            producer_id: at(2),
            first_offset: at(10),
            last_offset: at(18),
            last_stable_offset: at(26),
        })
    }
}

/// Decodes a whole `.txnindex` file: whole entries only (trailing bytes short of an entry are
/// ignored, as Kafka's iterator does).
///
/// # Errors
/// `Err((position, version))` for an entry of an unknown version.
pub fn decode_txn_index(bytes: &[u8]) -> Result<Vec<AbortedTxn>, (u64, i16)> {
    bytes
        .chunks_exact(AbortedTxn::SIZE)
        .enumerate()
        .map(|(i, chunk)| {
            let mut entry = [0u8; AbortedTxn::SIZE];
            entry.copy_from_slice(chunk);
            AbortedTxn::decode(&entry).map_err(|v| ((i * AbortedTxn::SIZE) as u64, v))
        })
        .collect()
}

/// The fewest bytes a control batch (which holds an ABORT marker) takes: a batch header
/// ([`seglog_records::RECORD_BATCH_OVERHEAD`]). A segment of `n` bytes holds at most `n / 61`
/// markers, so its `.txnindex` needs at most `n / 61 * 34` bytes.
pub const MIN_CONTROL_BATCH_BYTES: u64 = seglog_records::RECORD_BATCH_OVERHEAD as u64;

/// The most bytes of `.txnindex` entries a segment of `segment_bytes` can need.
pub fn txn_index_limit(segment_bytes: u64) -> u64 {
    segment_bytes / MIN_CONTROL_BATCH_BYTES * AbortedTxn::SIZE as u64
}

/// Reads and checks the `.txnindex` at `path` of the segment based at `base_offset` whose
/// `.log` holds `segment_bytes`, streaming it (the memory used is bounded by the entries the
/// segment can need, never by the file's length). `Ok(vec![])` when the file does not exist.
///
/// The checks need no `.log` byte: a regular file ([`crate::open_regular`]); at most
/// [`txn_index_limit`] bytes; a whole number of 34-byte entries; every entry of version 0,
/// no negative field, its first offset at or below its marker's, its marker inside the segment
/// (from the base offset, at most `i32::MAX` above it) and above the previous entry's. (Kafka
/// trusts the file and ignores a partial tail; a file that fails is rebuilt by `recover`.)
///
/// # Errors
/// [`Error::Io`] (a non-regular file included); [`Error::Corrupt`] naming the first entry
/// that fails, with [`crate::CorruptKind::TxnIndexVersion`] or [`crate::CorruptKind::TxnIndex`].
pub fn read_txn_index(
    path: &Path,
    base_offset: i64,
    segment_bytes: u64,
) -> Result<Vec<AbortedTxn>> {
    use std::io::Read;
    let corrupt = |position: u64, kind: CorruptKind| Error::Corrupt {
        path: path.to_owned(),
        position,
        kind,
    };
    let Some((file, meta)) =
        crate::regular_file::open_regular_if_exists(path).map_err(Error::io(IoOp::Open, path))?
    else {
        return Ok(Vec::new());
    };
    let len = meta.len();
    let limit = txn_index_limit(segment_bytes);
    if len > limit {
        return Err(corrupt(
            0,
            CorruptKind::TxnIndex(TxnIndexProblem::TooLarge { len, limit }),
        ));
    }
    if len % AbortedTxn::SIZE as u64 != 0 {
        return Err(corrupt(
            len - len % AbortedTxn::SIZE as u64,
            CorruptKind::TxnIndex(TxnIndexProblem::PartialEntry { len }),
        ));
    }
    let count = (len / AbortedTxn::SIZE as u64) as usize;
    let mut entries = Vec::with_capacity(count);
    // `take`: a file that grew after the fstat is read only as far as was checked.
    let mut reader = std::io::BufReader::new(file.take(len));
    let mut previous: Option<i64> = None;
    for i in 0..count {
        let position = (i * AbortedTxn::SIZE) as u64;
        let mut bytes = [0u8; AbortedTxn::SIZE];
        match reader.read_exact(&mut bytes) {
            Ok(()) => {}
            // Shrank after the fstat: what was read is all there is.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return Err(corrupt(
                    position,
                    CorruptKind::TxnIndex(TxnIndexProblem::PartialEntry { len: position }),
                ));
            }
            Err(e) => return Err(Error::io(IoOp::Read, path)(e)),
        }
        let txn = AbortedTxn::decode(&bytes)
            .map_err(|version| corrupt(position, CorruptKind::TxnIndexVersion { version }))?;
        check_txn_entry(&txn, base_offset, previous)
            .map_err(|problem| corrupt(position, CorruptKind::TxnIndex(problem)))?;
        previous = Some(txn.last_offset);
        entries.push(txn);
    }
    Ok(entries)
}

/// One entry's checks (see [`read_txn_index`]): `previous_last_offset` is the marker offset
/// of the entry before it, if any.
///
/// # Errors
/// The first [`TxnIndexProblem`] found.
pub fn check_txn_entry(
    txn: &AbortedTxn,
    base_offset: i64,
    previous_last_offset: Option<i64>,
) -> Result<(), TxnIndexProblem> {
    if txn.producer_id < 0
        || txn.first_offset < 0
        || txn.last_offset < 0
        || txn.last_stable_offset < 0
    {
        return Err(TxnIndexProblem::Negative);
    }
    if txn.first_offset > txn.last_offset {
        return Err(TxnIndexProblem::FirstAfterLast {
            first_offset: txn.first_offset,
            last_offset: txn.last_offset,
        });
    }
    if txn.last_offset < base_offset || txn.last_offset - base_offset > i64::from(i32::MAX) {
        return Err(TxnIndexProblem::OutsideSegment {
            last_offset: txn.last_offset,
            base_offset,
        });
    }
    if let Some(previous_last_offset) = previous_last_offset
        && txn.last_offset <= previous_last_offset
    {
        return Err(TxnIndexProblem::NotIncreasing {
            previous_last_offset,
            last_offset: txn.last_offset,
        });
    }
    Ok(())
}

/// What [`Segment::collect_aborted_txns`] found (Kafka's `TxnIndexSearchResult`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TxnIndexSearch {
    /// The aborted transactions overlapping the range, in index order.
    pub aborted: Vec<AbortedTxn>,
    /// An entry's last stable offset reached the upper bound: later segments cannot hold more
    /// overlapping transactions.
    pub complete: bool,
}

impl Segment {
    /// The aborted transactions of this segment's `.txnindex` (none when it does not exist),
    /// read once and checked as [`read_txn_index`] does.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be read or is not a regular file;
    /// [`Error::Corrupt`] when it fails a check ([`crate::CorruptKind::TxnIndexVersion`],
    /// [`crate::CorruptKind::TxnIndex`]).
    pub fn aborted_txns(&self) -> Result<Vec<AbortedTxn>> {
        let mut cached = lock(&self.txns);
        if let Some(entries) = &*cached {
            return Ok(entries.clone());
        }
        let path = self.path(FileType::TxnIndex);
        let entries = read_txn_index(&path, self.base_offset(), self.size())?;
        *cached = Some(entries.clone());
        Ok(entries)
    }

    /// Appends an aborted transaction (Kafka's `TransactionIndex.append`): its last offset
    /// must be above the last entry's. Creates the file on the first entry.
    ///
    /// # Errors
    /// [`Error::ReadOnly`]; [`Error::TxnIndexOrder`] when the last offset does not increase
    /// (nothing written); [`Error::Io`].
    pub fn append_aborted_txn(&self, txn: AbortedTxn) -> Result<()> {
        if self.mode == OpenMode::ReadOnly {
            return Err(Error::ReadOnly {
                path: self.path(FileType::TxnIndex),
            });
        }
        let mut entries = self.aborted_txns()?;
        let path = self.path(FileType::TxnIndex);
        if let Some(last) = entries.last()
            && last.last_offset >= txn.last_offset
        {
            return Err(Error::TxnIndexOrder {
                path,
                last_offset: last.last_offset,
                appended: txn.last_offset,
            });
        }
        use std::os::unix::fs::FileExt;
        let file =
            crate::regular_file::create_regular(&path).map_err(Error::io(IoOp::Open, &path))?;
        // At the end of the entries read (a torn tail, which the checks refuse, was never read).
        file.write_all_at(&txn.encode(), (entries.len() * AbortedTxn::SIZE) as u64)
            .map_err(Error::io(IoOp::Write, &path))?;
        entries.push(txn);
        *lock(&self.txns) = Some(entries);
        Ok(())
    }

    /// Replaces the entries (recovery's rebuild, Kafka's `reset` then `append`s): the file is
    /// rewritten only when its entries differ (and removed when there are none and it existed
    /// empty or not); a read-only segment keeps the rebuilt entries in memory only.
    ///
    /// # Errors
    /// [`Error::Io`].
    pub fn replace_aborted_txns(&self, txns: Vec<AbortedTxn>) -> Result<()> {
        let current = self.aborted_txns().ok();
        if current.as_ref() == Some(&txns) {
            return Ok(());
        }
        if self.mode == OpenMode::ReadWrite {
            let path = self.path(FileType::TxnIndex);
            // Kafka's reset truncates an existing file to 0 bytes; no file is created for none.
            let exists = path.symlink_metadata().is_ok();
            if exists || !txns.is_empty() {
                use std::io::Write;
                let mut file = crate::regular_file::create_regular(&path)
                    .map_err(Error::io(IoOp::Open, &path))?;
                file.set_len(0).map_err(Error::io(IoOp::SetLength, &path))?;
                let bytes: Vec<u8> = txns.iter().flat_map(|t| t.encode()).collect();
                file.write_all(&bytes)
                    .map_err(Error::io(IoOp::Write, &path))?;
            }
        }
        *lock(&self.txns) = Some(txns);
        Ok(())
    }

    /// Removes the entries whose marker is at or above `offset` (Kafka's
    /// `TransactionIndex.truncateTo`).
    ///
    /// # Errors
    /// As [`Segment::aborted_txns`]; [`Error::Io`] when the file cannot be truncated.
    pub fn truncate_txn_index(&self, offset: i64) -> Result<()> {
        let entries = self.aborted_txns()?;
        let Some(keep) = entries.iter().position(|t| t.last_offset >= offset) else {
            return Ok(());
        };
        if self.mode == OpenMode::ReadWrite {
            let path = self.path(FileType::TxnIndex);
            let (file, _) = crate::regular_file::open_regular(&path, true)
                .map_err(Error::io(IoOp::Open, &path))?;
            file.set_len((keep * AbortedTxn::SIZE) as u64)
                .map_err(Error::io(IoOp::SetLength, &path))?;
        }
        *lock(&self.txns) = Some(entries[..keep].to_vec());
        Ok(())
    }

    /// Kafka's `collectAbortedTxns`: the entries whose transaction overlaps
    /// `[fetch_offset, upper_bound_offset)` (`last_offset >= fetch_offset` and
    /// `first_offset < upper_bound_offset`), stopping at the first entry whose last stable
    /// offset reaches the upper bound (then `complete`).
    ///
    /// # Errors
    /// As [`Segment::aborted_txns`].
    pub fn collect_aborted_txns(
        &self,
        fetch_offset: i64,
        upper_bound_offset: i64,
    ) -> Result<TxnIndexSearch> {
        let mut found = TxnIndexSearch::default();
        for txn in self.aborted_txns()? {
            if txn.last_offset >= fetch_offset && txn.first_offset < upper_bound_offset {
                found.aborted.push(txn);
            }
            if txn.last_stable_offset >= upper_bound_offset {
                found.complete = true;
                return Ok(found);
            }
        }
        Ok(found)
    }

    /// Whether the layer above marked the `.txnindex` as checked against the segment's
    /// markers (or rebuilt from them) with [`Segment::set_txn_index_checked`]: the log's
    /// first-use check of `read_committed`. `false` for a segment just opened.
    pub fn txn_index_checked(&self) -> bool {
        self.txns_checked.load(Ordering::Acquire)
    }

    /// Marks the `.txnindex` as checked (see [`Segment::txn_index_checked`]): later appends
    /// keep it in step with the markers written.
    pub fn set_txn_index_checked(&self) {
        self.txns_checked.store(true, Ordering::Release);
    }

    /// fsyncs the `.txnindex` if it exists (part of [`Segment::flush`]).
    pub(crate) fn flush_txn_index(&self) -> Result<()> {
        if self.mode == OpenMode::ReadOnly {
            return Ok(());
        }
        let path = self.path(FileType::TxnIndex);
        match crate::regular_file::open_regular_if_exists(&path) {
            Ok(Some((file, _))) => file.sync_all().map_err(Error::io(IoOp::Sync, &path)),
            Ok(None) => Ok(()),
            Err(e) => Err(Error::io(IoOp::Open, &path)(e)),
        }
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    #[test]
    fn entries_have_kafkas_34_bytes() {
        let txn = AbortedTxn {
            producer_id: 7,
            first_offset: 10,
            last_offset: 20,
            last_stable_offset: 21,
        };
        let bytes = txn.encode();
        assert_eq!(&bytes[..2], &[0, 0]);
        assert_eq!(&bytes[2..10], &7i64.to_be_bytes());
        assert_eq!(&bytes[26..], &21i64.to_be_bytes());
        assert_eq!(AbortedTxn::decode(&bytes), Ok(txn));
        let mut v1 = bytes;
        v1[1] = 1;
        assert_eq!(AbortedTxn::decode(&v1), Err(1));
        let mut file = bytes.to_vec();
        file.extend_from_slice(&bytes);
        file.extend_from_slice(&[0; 5]);
        assert_eq!(decode_txn_index(&file), Ok(vec![txn, txn]));
        assert_eq!(decode_txn_index(&v1), Err((0, 1)));
    }

    fn txn(producer_id: i64, first_offset: i64, last_offset: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id,
            first_offset,
            last_offset,
            last_stable_offset: last_offset + 1,
        }
    }

    fn write(path: &Path, txns: &[AbortedTxn]) {
        let bytes: Vec<u8> = txns.iter().flat_map(|t| t.encode()).collect();
        std::fs::write(path, bytes).unwrap();
    }

    fn problem(result: Result<Vec<AbortedTxn>>) -> (u64, CorruptKind) {
        match result {
            Err(Error::Corrupt { position, kind, .. }) => (position, kind),
            other => panic!("not corrupt: {other:?}"),
        }
    }

    #[test]
    fn read_txn_index_accepts_what_kafka_writes_and_a_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000100.txnindex");
        assert_eq!(read_txn_index(&path, 100, 0).unwrap(), vec![]);
        let txns = [txn(1, 90, 100), txn(2, 101, 105)];
        write(&path, &txns);
        assert_eq!(read_txn_index(&path, 100, 1000).unwrap(), txns);
    }

    #[test]
    fn read_txn_index_refuses_damage_naming_the_first_bad_entry() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000100.txnindex");
        let cases: [(&[AbortedTxn], u64, TxnIndexProblem); 5] = [
            (
                &[txn(1, 100, 101), txn(-1, 100, 102)],
                34,
                TxnIndexProblem::Negative,
            ),
            (
                &[txn(1, 105, 101)],
                0,
                TxnIndexProblem::FirstAfterLast {
                    first_offset: 105,
                    last_offset: 101,
                },
            ),
            (
                &[txn(1, 10, 99)],
                0,
                TxnIndexProblem::OutsideSegment {
                    last_offset: 99,
                    base_offset: 100,
                },
            ),
            (
                &[txn(1, 100, 1 << 40)],
                0,
                TxnIndexProblem::OutsideSegment {
                    last_offset: 1 << 40,
                    base_offset: 100,
                },
            ),
            (
                &[txn(1, 100, 110), txn(2, 100, 105)],
                34,
                TxnIndexProblem::NotIncreasing {
                    previous_last_offset: 110,
                    last_offset: 105,
                },
            ),
        ];
        for (txns, at, want) in cases {
            write(&path, txns);
            assert_eq!(
                problem(read_txn_index(&path, 100, 10_000)),
                (at, CorruptKind::TxnIndex(want))
            );
        }
        let mut bytes: Vec<u8> = txn(1, 100, 101).encode().to_vec();
        bytes.extend_from_slice(&[0; 5]);
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(
            problem(read_txn_index(&path, 100, 10_000)),
            (
                34,
                CorruptKind::TxnIndex(TxnIndexProblem::PartialEntry { len: 39 })
            )
        );
        let mut v5 = txn(1, 100, 101).encode();
        v5[1] = 5;
        std::fs::write(&path, v5).unwrap();
        assert_eq!(
            problem(read_txn_index(&path, 100, 10_000)),
            (0, CorruptKind::TxnIndexVersion { version: 5 })
        );
    }

    #[test]
    fn read_txn_index_is_bounded_by_what_the_segment_can_hold() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.txnindex");
        // A 1 GiB hole: refused from its length, nothing of it is read.
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(1 << 30).unwrap();
        assert_eq!(
            problem(read_txn_index(&path, 0, 8000)),
            (
                0,
                CorruptKind::TxnIndex(TxnIndexProblem::TooLarge {
                    len: 1 << 30,
                    limit: 8000 / 61 * 34,
                })
            )
        );
        // An empty segment holds no marker: any entry is too many.
        write(&path, &[txn(1, 0, 0)]);
        assert!(matches!(
            problem(read_txn_index(&path, 0, 0)).1,
            CorruptKind::TxnIndex(TxnIndexProblem::TooLarge { .. })
        ));
        assert_eq!(txn_index_limit(61), 34);
    }

    #[test]
    fn a_fifo_txn_index_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.txnindex");
        let ok = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap()
            .success();
        assert!(ok, "mkfifo");
        match read_txn_index(&path, 0, 8000) {
            Err(Error::Io {
                path: p, source, ..
            }) => {
                assert_eq!(p, path);
                assert_eq!(
                    crate::not_regular(&source),
                    Some(crate::NonRegularKind::Fifo)
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
