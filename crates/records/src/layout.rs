//! Byte layout constants (Kafka's names) and small big-endian readers.
//!
//! See `docs/format.md` (record batches) for the diagrams these offsets come from.

/// Every batch of every magic starts with `offset: i64` and `size: i32`.
pub const LOG_OVERHEAD: usize = 12;
/// Byte position of the magic inside any batch or legacy message.
pub const MAGIC_OFFSET: usize = 16;
/// Bytes a reader needs to see the magic and dispatch on it (offset, size, 4 bytes, magic).
pub const HEADER_SIZE_UP_TO_MAGIC: usize = 17;
/// Size of the v2 batch header: the smallest possible v2 batch on disk.
pub const RECORD_BATCH_OVERHEAD: usize = 61;
/// Smallest length field of a v0 message (crc, magic, attributes, key and value lengths).
pub const RECORD_OVERHEAD_V0: usize = 14;
/// Smallest length field of a v1 message (v0 plus the 8-byte timestamp).
pub const RECORD_OVERHEAD_V1: usize = 22;

/// Magic byte of legacy message format v0.
pub const MAGIC_V0: u8 = 0;
/// Magic byte of legacy message format v1 (adds timestamps).
pub const MAGIC_V1: u8 = 1;
/// Magic byte of the v2 record batch format.
pub const MAGIC_V2: u8 = 2;

/// v2 header field positions, relative to the start of the batch.
pub(crate) mod v2 {
    pub const BASE_OFFSET: usize = 0;
    pub const LENGTH: usize = 8;
    pub const PARTITION_LEADER_EPOCH: usize = 12;
    pub const MAGIC: usize = 16;
    pub const CRC: usize = 17;
    /// First byte covered by the CRC-32C (attributes up to the end of the batch).
    pub const ATTRIBUTES: usize = 21;
    pub const LAST_OFFSET_DELTA: usize = 23;
    pub const BASE_TIMESTAMP: usize = 27;
    pub const MAX_TIMESTAMP: usize = 35;
    pub const PRODUCER_ID: usize = 43;
    pub const PRODUCER_EPOCH: usize = 51;
    pub const BASE_SEQUENCE: usize = 53;
    pub const RECORD_COUNT: usize = 57;
    pub const RECORDS: usize = 61;

    /// Attribute bits.
    pub const COMPRESSION_MASK: i16 = 0x07;
    pub const TIMESTAMP_TYPE_BIT: i16 = 0x08;
    pub const TRANSACTIONAL_BIT: i16 = 0x10;
    pub const CONTROL_BIT: i16 = 0x20;
    pub const DELETE_HORIZON_BIT: i16 = 0x40;
}

/// Legacy v0/v1 message field positions, relative to the start of the message.
pub(crate) mod legacy {
    pub const CRC: usize = 12;
    /// First byte covered by the CRC-32 (magic up to the end of the message).
    pub const MAGIC: usize = 16;
    pub const ATTRIBUTES: usize = 17;
    /// v1 only.
    pub const TIMESTAMP: usize = 18;
    /// Key length position for v0; v1 adds 8.
    pub const KEY_LENGTH_V0: usize = 18;
    pub const KEY_LENGTH_V1: usize = 26;

    pub const COMPRESSION_MASK: u8 = 0x07;
    pub const TIMESTAMP_TYPE_BIT: u8 = 0x08;
}

// The readers below take a slice and a position that the caller has bounds-checked; they
// return 0 instead of panicking if it was not, so a caller bug shows up as a wrong value in a
// test, never as a panic on hostile input.

fn field<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    bytes
        .get(at..)
        .and_then(|tail| tail.get(..N))
        .and_then(|f| <[u8; N]>::try_from(f).ok())
        .unwrap_or([0u8; N])
}

fn field_mut<const N: usize>(bytes: &mut [u8], at: usize) -> Option<&mut [u8]> {
    bytes.get_mut(at..).and_then(|tail| tail.get_mut(..N))
}

pub(crate) fn read_i64(bytes: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(field(bytes, at))
}

pub(crate) fn read_i32(bytes: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(field(bytes, at))
}

pub(crate) fn read_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(field(bytes, at))
}

pub(crate) fn read_i16(bytes: &[u8], at: usize) -> i16 {
    i16::from_be_bytes(field(bytes, at))
}

pub(crate) fn write_i64(bytes: &mut [u8], at: usize, value: i64) {
    if let Some(dst) = field_mut::<8>(bytes, at) {
        dst.copy_from_slice(&value.to_be_bytes());
    }
}

pub(crate) fn write_i32(bytes: &mut [u8], at: usize, value: i32) {
    if let Some(dst) = field_mut::<4>(bytes, at) {
        dst.copy_from_slice(&value.to_be_bytes());
    }
}

pub(crate) fn write_i16(bytes: &mut [u8], at: usize, value: i16) {
    if let Some(dst) = field_mut::<2>(bytes, at) {
        dst.copy_from_slice(&value.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_are_big_endian_and_never_panic() {
        let bytes = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08];
        assert_eq!(read_i64(&bytes, 0), 0x0102030405060708);
        assert_eq!(read_i32(&bytes, 4), 0x05060708);
        assert_eq!(read_i16(&bytes, 6), 0x0708);
        assert_eq!(read_i64(&bytes, 1), 0);
        assert_eq!(read_i32(&bytes, usize::MAX - 1), 0);
    }

    #[test]
    fn v2_header_fields_tile_the_61_bytes() {
        assert_eq!(v2::RECORDS, RECORD_BATCH_OVERHEAD);
        assert_eq!(v2::MAGIC, MAGIC_OFFSET);
        assert_eq!(legacy::MAGIC, MAGIC_OFFSET);
        assert_eq!(HEADER_SIZE_UP_TO_MAGIC, MAGIC_OFFSET + 1);
        assert_eq!(v2::RECORD_COUNT + 4, v2::RECORDS);
    }
}
