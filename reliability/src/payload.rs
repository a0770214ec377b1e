//! Self-verifying record content.
//!
//! Every record the suites write is identified by a `(stream, seq)` pair: `stream` names one
//! writer (a child process run and thread, or a workload), `seq` counts its records. The key
//! spells the pair (`"<stream>:<seq>"`), and the value and timestamp are pure functions of it.
//! So any record read back can be checked byte for byte without knowing what was acknowledged:
//! a record whose value does not match its key is corruption, whoever wrote it.

/// Timestamp of `seq` 0 (2023-11-14), so CreateTime checks see plausible values.
pub const T0_MS: i64 = 1_700_000_000_000;

/// Identifies one record: which writer, and its sequence number within that writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RecordId {
    /// The writer.
    pub stream: u64,
    /// The record's number within the writer, from 0.
    pub seq: u64,
}

impl RecordId {
    /// The record's key: `"<stream>:<seq>"`.
    pub fn key(self) -> Vec<u8> {
        format!("{}:{}", self.stream, self.seq).into_bytes()
    }

    /// Parses a key written by [`RecordId::key`].
    pub fn parse_key(key: &[u8]) -> Option<RecordId> {
        let text = std::str::from_utf8(key).ok()?;
        let (stream, seq) = text.split_once(':')?;
        Some(RecordId {
            stream: stream.parse().ok()?,
            seq: seq.parse().ok()?,
        })
    }

    /// The record's value: 0 to 400 pseudo-random bytes determined by the id (some values are
    /// long enough to make batches cross the index interval and page boundaries).
    pub fn value(self) -> Vec<u8> {
        let mut state = self.stream.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ self.seq;
        let len = (splitmix64(&mut state) % 401) as usize;
        let mut out = Vec::with_capacity(len + 8);
        while out.len() < len {
            out.extend_from_slice(&splitmix64(&mut state).to_le_bytes());
        }
        out.truncate(len);
        out
    }

    /// The record's CreateTime timestamp: [`T0_MS`] plus `seq` (non-decreasing per stream).
    pub fn timestamp_ms(self) -> i64 {
        T0_MS.saturating_add(i64::try_from(self.seq).unwrap_or(i64::MAX))
    }

    /// A 64-bit FNV-1a fingerprint of key, value and timestamp, as the crash child reports it.
    pub fn fingerprint(self) -> u64 {
        let mut hash = Fnv::default();
        hash.write(&self.key());
        hash.write(&self.value());
        hash.write(&self.timestamp_ms().to_be_bytes());
        hash.0
    }
}

/// FNV-1a, 64-bit.
#[derive(Clone, Copy, Debug)]
pub struct Fnv(pub u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    /// Feeds `bytes`.
    pub fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01B3);
        }
    }
}

/// The splitmix64 generator step.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_values_are_deterministic() {
        let id = RecordId {
            stream: 17,
            seq: 123_456,
        };
        assert_eq!(RecordId::parse_key(&id.key()), Some(id));
        assert_eq!(id.value(), id.value());
        assert_ne!(
            id.value(),
            RecordId {
                stream: 17,
                seq: 123_457
            }
            .value()
        );
        assert_eq!(RecordId::parse_key(b"x:1"), None);
        assert_eq!(RecordId::parse_key(b"1"), None);
        let lens: Vec<usize> = (0..200)
            .map(|seq| RecordId { stream: 1, seq }.value().len())
            .collect();
        assert!(lens.iter().any(|&l| l > 300) && lens.iter().any(|&l| l < 100));
    }
}
