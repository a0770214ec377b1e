//! [`RemoteSegmentId`]: Kafka's 16-byte segment `Uuid` and its base64url text.

/// The id of a remote segment: Kafka's `RemoteLogSegmentId.id`, a 16-byte `Uuid` whose text
/// form (in object names) is base64url without padding, 22 characters, as Kafka's
/// `Uuid.toString`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RemoteSegmentId(pub [u8; 16]);

/// Text that is not a [`RemoteSegmentId`] (Kafka's `Uuid.fromString` rejects it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a segment id (22 base64url characters): {text:?}")]
pub struct InvalidSegmentId {
    /// The rejected text.
    pub text: String,
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

impl RemoteSegmentId {
    /// The id of these 16 bytes (Kafka's most significant long first).
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        Self(bytes)
    }

    /// The 16 bytes.
    pub const fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// Kafka's `Uuid(mostSignificantBits, leastSignificantBits)`.
    pub fn from_bits(most_significant: i64, least_significant: i64) -> Self {
        let mut bytes = [0; 16];
        bytes[..8].copy_from_slice(&most_significant.to_be_bytes());
        bytes[8..].copy_from_slice(&least_significant.to_be_bytes());
        Self(bytes)
    }

    /// The base64url text without padding (Kafka's `Uuid.toString`).
    pub fn to_base64(&self) -> String {
        let mut out = String::with_capacity(22);
        for chunk in self.0.chunks(3) {
            let b = [
                chunk[0],
                chunk.get(1).copied().unwrap_or(0),
                chunk.get(2).copied().unwrap_or(0),
            ];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            let chars = chunk.len() + 1;
            for i in 0..chars {
                let index = (n >> (18 - 6 * i)) & 0x3f;
                out.push(char::from(ALPHABET[index as usize]));
            }
        }
        out
    }

    /// Parses the base64url text without padding (Kafka's `Uuid.fromString`).
    ///
    /// # Errors
    /// [`InvalidSegmentId`] unless `text` is 22 base64url characters encoding 16 bytes (the
    /// last character's unused bits zero).
    pub fn parse(text: &str) -> Result<Self, InvalidSegmentId> {
        let invalid = || InvalidSegmentId {
            text: text.to_string(),
        };
        let bytes = text.as_bytes();
        if bytes.len() != 22 {
            return Err(invalid());
        }
        let mut bits: u32 = 0;
        let mut count = 0;
        let mut out = Vec::with_capacity(16);
        for &c in bytes {
            let value = ALPHABET.iter().position(|&a| a == c).ok_or_else(invalid)?;
            bits = (bits << 6) | value as u32;
            count += 6;
            if count >= 8 {
                count -= 8;
                out.push((bits >> count) as u8);
                bits &= (1 << count) - 1;
            }
        }
        // 22 characters carry 132 bits: the last 4 must be zero, as a canonical encoding.
        if bits != 0 || out.len() != 16 {
            return Err(invalid());
        }
        let mut id = [0; 16];
        id.copy_from_slice(&out);
        Ok(Self(id))
    }
}

impl std::fmt::Display for RemoteSegmentId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_base64())
    }
}

impl std::str::FromStr for RemoteSegmentId {
    type Err = InvalidSegmentId;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    #[test]
    fn kafka_uuid_text_golden_vectors() {
        // Kafka's Uuid.ZERO and Uuid.ONE_UUID (new Uuid(0, 1)).
        assert_eq!(
            RemoteSegmentId::from_bits(0, 0).to_base64(),
            "AAAAAAAAAAAAAAAAAAAAAA"
        );
        assert_eq!(
            RemoteSegmentId::from_bits(0, 1).to_base64(),
            "AAAAAAAAAAAAAAAAAAAAAQ"
        );
        // Kafka's UuidTest.testToString: new Uuid(0L, 0L)... and a random-looking one: all
        // ones is "_____________________w" (java.util.Base64 url, no padding).
        assert_eq!(
            RemoteSegmentId::from_bits(-1, -1).to_base64(),
            "_____________________w"
        );
    }

    #[test]
    fn text_round_trips_and_rejects_what_kafka_rejects() {
        let id = RemoteSegmentId::from_bytes(*b"0123456789abcdef");
        let text = id.to_string();
        assert_eq!(text.len(), 22);
        assert_eq!(text.parse::<RemoteSegmentId>(), Ok(id));
        assert!(RemoteSegmentId::parse("short").is_err());
        assert!(RemoteSegmentId::parse("AAAAAAAAAAAAAAAAAAAAA=").is_err());
        // Unused trailing bits set: not a canonical encoding of 16 bytes.
        assert!(RemoteSegmentId::parse("AAAAAAAAAAAAAAAAAAAAAB").is_err());
        for seed in 0u8..=255 {
            let id = RemoteSegmentId::from_bytes([seed.wrapping_mul(37); 16]);
            assert_eq!(RemoteSegmentId::parse(&id.to_base64()), Ok(id));
        }
    }
}
