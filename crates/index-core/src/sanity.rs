//! Strict structural checks, stricter than Kafka's `sanityCheck` (spec §2.6, §7 bugs 1-6): they
//! find an untrimmed zero-padded tail, entries out of order and values out of range, so the
//! segment layer can rebuild an index instead of trusting it.
//!
//! Each check returns the byte position (in the index file) of the first bad entry and what is
//! wrong with it.

use crate::entry::{IndexEntry, OffsetEntry, TimeEntry, absolute_offset};
use crate::error::CorruptKind;

/// A problem found at a byte position of the index file.
pub(crate) type Finding = (u64, CorruptKind);

/// Checks `.index` entries. `log_size_bytes`: every position must be below it; `max_offset`:
/// every absolute offset must be at most it.
pub(crate) fn check_offset_index(
    bytes: &[u8],
    file_len: u64,
    base_offset: i64,
    log_size_bytes: Option<u64>,
    max_offset: Option<i64>,
) -> Result<(), Finding> {
    let mut previous: Option<OffsetEntry> = None;
    for slot in 0..bytes.len() / OffsetEntry::SIZE {
        let entry = OffsetEntry::read(bytes, slot);
        let at = position_of::<OffsetEntry>(slot);
        let increasing = previous.is_none_or(|prev| {
            entry.relative_offset > prev.relative_offset && entry.position > prev.position
        });
        if !increasing {
            return Err((
                at,
                tail_or(bytes, slot, OffsetEntry::SIZE, CorruptKind::NotMonotonic),
            ));
        }
        if entry.relative_offset < 0 {
            return Err((at, CorruptKind::NegativeRelativeOffset));
        }
        let position_ok =
            entry.position >= 0 && log_size_bytes.is_none_or(|size| (entry.position as u64) < size);
        if !position_ok {
            return Err((at, CorruptKind::PositionOutOfRange));
        }
        let offset = absolute_offset(base_offset, entry.relative_offset);
        if offset == i64::MAX || max_offset.is_some_and(|max| offset > max) {
            return Err((at, CorruptKind::OffsetOutOfRange));
        }
        previous = Some(entry);
    }
    check_length::<OffsetEntry>(file_len)
}

/// Checks `.timeindex` entries. `max_offset`: every absolute offset must be at most it.
pub(crate) fn check_time_index(
    bytes: &[u8],
    file_len: u64,
    base_offset: i64,
    max_offset: Option<i64>,
) -> Result<(), Finding> {
    let mut previous: Option<TimeEntry> = None;
    for slot in 0..bytes.len() / TimeEntry::SIZE {
        let entry = TimeEntry::read(bytes, slot);
        let at = position_of::<TimeEntry>(slot);
        if let Some(prev) = previous {
            if entry.timestamp_ms <= prev.timestamp_ms {
                let kind = CorruptKind::TimestampNotIncreasing;
                return Err((at, tail_or(bytes, slot, TimeEntry::SIZE, kind)));
            }
            // Offsets may repeat (a roll-time entry for the same offset), never go back.
            if entry.relative_offset < prev.relative_offset {
                return Err((
                    at,
                    tail_or(bytes, slot, TimeEntry::SIZE, CorruptKind::NotMonotonic),
                ));
            }
        }
        if entry.timestamp_ms < 0 {
            return Err((at, CorruptKind::NegativeTimestamp));
        }
        if entry.relative_offset < 0 {
            return Err((at, CorruptKind::NegativeRelativeOffset));
        }
        let offset = absolute_offset(base_offset, entry.relative_offset);
        if offset == i64::MAX || max_offset.is_some_and(|max| offset > max) {
            return Err((at, CorruptKind::OffsetOutOfRange));
        }
        previous = Some(entry);
    }
    check_length::<TimeEntry>(file_len)
}

/// `ZeroPaddedTail` if every byte from `slot` on is zero (a preallocated file that was never
/// trimmed), otherwise `kind`.
fn tail_or(bytes: &[u8], slot: usize, size: usize, kind: CorruptKind) -> CorruptKind {
    if bytes[slot * size..].iter().all(|&b| b == 0) {
        CorruptKind::ZeroPaddedTail
    } else {
        kind
    }
}

fn check_length<E: IndexEntry>(file_len: u64) -> Result<(), Finding> {
    if !file_len.is_multiple_of(E::SIZE as u64) {
        return Err((
            file_len / E::SIZE as u64 * E::SIZE as u64,
            CorruptKind::LengthNotMultiple,
        ));
    }
    Ok(())
}

fn position_of<E: IndexEntry>(slot: usize) -> u64 {
    (slot * E::SIZE) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(entries: &[(i32, i32)]) -> Vec<u8> {
        entries
            .iter()
            .flat_map(|&(relative_offset, position)| {
                OffsetEntry {
                    relative_offset,
                    position,
                }
                .encode()
            })
            .collect()
    }

    fn times(entries: &[(i64, i32)]) -> Vec<u8> {
        entries
            .iter()
            .flat_map(|&(timestamp_ms, relative_offset)| {
                TimeEntry {
                    timestamp_ms,
                    relative_offset,
                }
                .encode()
            })
            .collect()
    }

    #[test]
    fn valid_offset_index_passes() {
        let bytes = index(&[(0, 0), (5, 4100), (9, 8300)]);
        assert_eq!(
            check_offset_index(&bytes, 24, 100, Some(9000), Some(110)),
            Ok(())
        );
        assert_eq!(check_offset_index(&[], 0, 100, Some(0), None), Ok(()));
    }

    #[test]
    fn offset_index_findings() {
        let padded = index(&[(3, 100), (5, 4100), (0, 0), (0, 0)]);
        assert_eq!(
            check_offset_index(&padded, 32, 0, None, None),
            Err((16, CorruptKind::ZeroPaddedTail))
        );
        let all_zero = vec![0u8; 64];
        assert_eq!(
            check_offset_index(&all_zero, 64, 0, None, None),
            Err((8, CorruptKind::ZeroPaddedTail))
        );
        let backwards = index(&[(3, 100), (2, 4100), (0, 0)]);
        assert_eq!(
            check_offset_index(&backwards, 24, 0, None, None),
            Err((8, CorruptKind::NotMonotonic))
        );
        let negative = index(&[(-1, 0)]);
        assert_eq!(
            check_offset_index(&negative, 8, 0, None, None),
            Err((0, CorruptKind::NegativeRelativeOffset))
        );
        let far = index(&[(1, 10), (2, 5000)]);
        assert_eq!(
            check_offset_index(&far, 16, 0, Some(5000), None),
            Err((8, CorruptKind::PositionOutOfRange))
        );
        assert_eq!(
            check_offset_index(&far, 16, 0, None, Some(1)),
            Err((8, CorruptKind::OffsetOutOfRange))
        );
        assert_eq!(
            check_offset_index(&far, 21, 0, None, None),
            Err((16, CorruptKind::LengthNotMultiple))
        );
    }

    #[test]
    fn time_index_findings() {
        let ok = times(&[(10, 1), (20, 1), (30, 4)]);
        assert_eq!(check_time_index(&ok, 36, 0, Some(4)), Ok(()));
        let padded = times(&[(10, 1), (20, 3), (0, 0), (0, 0)]);
        assert_eq!(
            check_time_index(&padded, 48, 0, None),
            Err((24, CorruptKind::ZeroPaddedTail))
        );
        let same_ts = times(&[(10, 1), (10, 2)]);
        assert_eq!(
            check_time_index(&same_ts, 24, 0, None),
            Err((12, CorruptKind::TimestampNotIncreasing))
        );
        let back = times(&[(10, 3), (20, 2)]);
        assert_eq!(
            check_time_index(&back, 24, 0, None),
            Err((12, CorruptKind::NotMonotonic))
        );
        let negative_ts = times(&[(-5, 0)]);
        assert_eq!(
            check_time_index(&negative_ts, 12, 0, None),
            Err((0, CorruptKind::NegativeTimestamp))
        );
        assert_eq!(
            check_time_index(&ok, 36, 0, Some(3)),
            Err((24, CorruptKind::OffsetOutOfRange))
        );
        assert_eq!(
            check_time_index(&ok, 40, 0, None),
            Err((36, CorruptKind::LengthNotMultiple))
        );
    }
}
