//! On-disk entries (big-endian, no header) and the absolute-offset results of lookups.

/// One fixed-size entry of an index file, as Kafka writes it.
///
/// The search primitives ([`floor_slot`](crate::floor_slot), [`ceiling_slot`](crate::ceiling_slot))
/// are generic over this trait so they run on any `&[u8]`: a mapping, a `Vec`, or a test buffer.
pub trait IndexEntry: Copy + Send + Sync + 'static {
    /// Size of one entry in bytes (8 for `.index`, 12 for `.timeindex`).
    const SIZE: usize;

    /// The raw on-disk form of one entry: `[u8; SIZE]`.
    type Raw: Copy;

    /// Views `bytes` as whole raw entries; a trailing partial entry is left out.
    fn raw_entries(bytes: &[u8]) -> &[Self::Raw];

    /// Decodes one raw entry.
    fn from_raw(raw: &Self::Raw) -> Self;

    /// Decodes the entry in slot `slot` of `bytes` (slot `n` starts at byte `n * SIZE`).
    ///
    /// # Panics
    ///
    /// If `bytes` is shorter than `(slot + 1) * SIZE`. The search functions only pass slots below
    /// `bytes.len() / SIZE`.
    fn read(bytes: &[u8], slot: usize) -> Self;

    /// The KEY column Kafka searches by default: the relative offset (`.index`) or the
    /// timestamp in milliseconds (`.timeindex`).
    fn key(&self) -> i64;

    /// The VALUE column: the position (`.index`) or the relative offset (`.timeindex`).
    fn value(&self) -> i64;
}

/// A raw `.index` entry: 8 bytes, `relative_offset` (`i32` BE) then `position` (`i32` BE).
///
/// Example: base 50, offset 55, position 4096 is `00 00 00 05 00 00 10 00`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OffsetEntry {
    /// Offset minus the segment's base offset.
    pub relative_offset: i32,
    /// Byte position in the `.log` file of the start of a batch.
    pub position: i32,
}

impl OffsetEntry {
    /// Size of one entry in bytes.
    pub const SIZE: usize = 8;

    /// Decodes an entry from its 8 on-disk bytes.
    #[must_use]
    pub fn decode(bytes: &[u8; 8]) -> Self {
        let [a, b, c, d, e, f, g, h] = *bytes;
        OffsetEntry {
            relative_offset: i32::from_be_bytes([a, b, c, d]),
            position: i32::from_be_bytes([e, f, g, h]),
        }
    }

    /// Encodes the entry as its 8 on-disk bytes.
    #[must_use]
    pub fn encode(&self) -> [u8; 8] {
        let mut out = [0u8; 8];
        out[..4].copy_from_slice(&self.relative_offset.to_be_bytes());
        out[4..].copy_from_slice(&self.position.to_be_bytes());
        out
    }
}

impl IndexEntry for OffsetEntry {
    const SIZE: usize = 8;
    type Raw = [u8; 8];

    #[inline]
    fn raw_entries(bytes: &[u8]) -> &[[u8; 8]] {
        bytes.as_chunks::<8>().0
    }

    #[inline]
    fn from_raw(raw: &[u8; 8]) -> Self {
        OffsetEntry::decode(raw)
    }

    #[inline]
    fn read(bytes: &[u8], slot: usize) -> Self {
        let mut raw = [0u8; 8];
        raw.copy_from_slice(&bytes[slot * 8..slot * 8 + 8]);
        OffsetEntry::decode(&raw)
    }

    #[inline]
    fn key(&self) -> i64 {
        i64::from(self.relative_offset)
    }

    #[inline]
    fn value(&self) -> i64 {
        i64::from(self.position)
    }
}

/// A raw `.timeindex` entry: 12 bytes, `timestamp_ms` (`i64` BE) then `relative_offset`
/// (`i32` BE).
///
/// Example: timestamp 1700000000000, relative offset 5 is
/// `00 00 01 8b cf e5 68 00 00 00 00 05`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimeEntry {
    /// The largest timestamp seen in the segment up to this entry, in milliseconds.
    pub timestamp_ms: i64,
    /// Offset (minus the base offset) Kafka recorded for that timestamp.
    pub relative_offset: i32,
}

impl TimeEntry {
    /// Size of one entry in bytes.
    pub const SIZE: usize = 12;

    /// Decodes an entry from its 12 on-disk bytes.
    #[must_use]
    pub fn decode(bytes: &[u8; 12]) -> Self {
        let mut ts = [0u8; 8];
        let mut rel = [0u8; 4];
        ts.copy_from_slice(&bytes[..8]);
        rel.copy_from_slice(&bytes[8..]);
        TimeEntry {
            timestamp_ms: i64::from_be_bytes(ts),
            relative_offset: i32::from_be_bytes(rel),
        }
    }

    /// Encodes the entry as its 12 on-disk bytes.
    #[must_use]
    pub fn encode(&self) -> [u8; 12] {
        let mut out = [0u8; 12];
        out[..8].copy_from_slice(&self.timestamp_ms.to_be_bytes());
        out[8..].copy_from_slice(&self.relative_offset.to_be_bytes());
        out
    }
}

impl IndexEntry for TimeEntry {
    const SIZE: usize = 12;
    type Raw = [u8; 12];

    #[inline]
    fn raw_entries(bytes: &[u8]) -> &[[u8; 12]] {
        bytes.as_chunks::<12>().0
    }

    #[inline]
    fn from_raw(raw: &[u8; 12]) -> Self {
        TimeEntry::decode(raw)
    }

    #[inline]
    fn read(bytes: &[u8], slot: usize) -> Self {
        let mut raw = [0u8; 12];
        raw.copy_from_slice(&bytes[slot * 12..slot * 12 + 12]);
        TimeEntry::decode(&raw)
    }

    #[inline]
    fn key(&self) -> i64 {
        self.timestamp_ms
    }

    #[inline]
    fn value(&self) -> i64 {
        i64::from(self.relative_offset)
    }
}

/// Result of an offset-index lookup: an absolute offset and a byte position in the `.log` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OffsetPosition {
    /// Absolute offset.
    pub offset: i64,
    /// Byte position in the segment's `.log` file.
    pub position: u32,
}

/// Result of a time-index lookup: a timestamp and an absolute offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimestampOffset {
    /// Timestamp in milliseconds (`-1` is Kafka's `NO_TIMESTAMP`).
    pub timestamp_ms: i64,
    /// Absolute offset.
    pub offset: i64,
}

/// `offset - base_offset` as Kafka stores it, or `None` when it is not in `0..=i32::MAX`
/// (Kafka's `IndexOffsetOverflowException` / `canAppendOffset() == false`).
#[must_use]
pub fn relative_offset(base_offset: i64, offset: i64) -> Option<i32> {
    offset
        .checked_sub(base_offset)
        .and_then(|rel| i32::try_from(rel).ok())
        .filter(|rel| *rel >= 0)
}

/// Absolute offset of a stored relative offset. Saturates instead of wrapping so that a corrupt
/// entry on a huge base offset cannot produce a small, plausible offset.
pub(crate) fn absolute_offset(base_offset: i64, relative_offset: i32) -> i64 {
    base_offset.saturating_add(i64::from(relative_offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_entry_matches_spec_example() {
        let entry = OffsetEntry {
            relative_offset: 5,
            position: 4096,
        };
        assert_eq!(entry.encode(), [0, 0, 0, 5, 0, 0, 0x10, 0]);
        assert_eq!(OffsetEntry::decode(&entry.encode()), entry);
    }

    #[test]
    fn time_entry_matches_spec_example() {
        let entry = TimeEntry {
            timestamp_ms: 1_700_000_000_000,
            relative_offset: 5,
        };
        assert_eq!(
            entry.encode(),
            [0, 0, 1, 0x8b, 0xcf, 0xe5, 0x68, 0, 0, 0, 0, 5]
        );
        assert_eq!(TimeEntry::decode(&entry.encode()), entry);
        assert_eq!(<TimeEntry as IndexEntry>::read(&entry.encode(), 0), entry);
    }

    #[test]
    fn relative_offset_bounds() {
        assert_eq!(relative_offset(100, 100), Some(0));
        assert_eq!(relative_offset(100, 99), None);
        assert_eq!(relative_offset(0, i64::from(i32::MAX)), Some(i32::MAX));
        assert_eq!(relative_offset(0, i64::from(i32::MAX) + 1), None);
        assert_eq!(relative_offset(i64::MIN, i64::MAX), None);
        assert_eq!(
            relative_offset(10, i64::from(i32::MAX) + 10),
            Some(i32::MAX)
        );
    }
}
