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

use crate::Result;
use crate::error::{Error, IoOp};
use crate::file_name::FileType;
use crate::segment::{OpenMode, Segment};
use crate::sync::lock;

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
    /// The aborted transactions of this segment's `.txnindex` (none when it does not exist).
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be read; [`Error::Corrupt`] for an entry of an
    /// unknown version.
    pub fn aborted_txns(&self) -> Result<Vec<AbortedTxn>> {
        let mut cached = lock(&self.txns);
        if let Some(entries) = &*cached {
            return Ok(entries.clone());
        }
        let path = self.path(FileType::TxnIndex);
        let entries = match std::fs::read(&path) {
            Ok(bytes) => {
                decode_txn_index(&bytes).map_err(|(position, version)| Error::Corrupt {
                    path: path.clone(),
                    position,
                    kind: crate::CorruptKind::TxnIndexVersion { version },
                })?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(Error::io(IoOp::Read, &path)(e)),
        };
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
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(Error::io(IoOp::Open, &path))?;
        file.write_all(&txn.encode())
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
            if txns.is_empty() {
                // Kafka's reset truncates an existing file to 0 bytes.
                if path.exists() {
                    std::fs::write(&path, []).map_err(Error::io(IoOp::Write, &path))?;
                }
            } else {
                let bytes: Vec<u8> = txns.iter().flat_map(|t| t.encode()).collect();
                std::fs::write(&path, bytes).map_err(Error::io(IoOp::Write, &path))?;
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
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
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

    /// fsyncs the `.txnindex` if it exists (part of [`Segment::flush`]).
    pub(crate) fn flush_txn_index(&self) -> Result<()> {
        if self.mode == OpenMode::ReadOnly {
            return Ok(());
        }
        let path = self.path(FileType::TxnIndex);
        match std::fs::File::open(&path) {
            Ok(file) => file.sync_all().map_err(Error::io(IoOp::Sync, &path)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
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
}
