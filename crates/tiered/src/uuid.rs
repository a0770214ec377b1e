//! Kafka's `Uuid` (`org.apache.kafka.common.Uuid`): 16 bytes, written as 22 characters of
//! URL-safe base64 without padding. Topic ids and remote segment ids are both such Uuids.

use std::fmt;

use crate::{Error, Result};

/// A Kafka Uuid: the topic id of a partition or the id of one remote segment copy.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Uuid(pub [u8; 16]);

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// The length of a Uuid's text form.
pub const UUID_TEXT_LEN: usize = 22;

impl Uuid {
    /// Kafka's `Uuid.ZERO_UUID`.
    pub const ZERO: Uuid = Uuid([0; 16]);

    /// A random Uuid as Kafka's `Uuid.randomUuid` draws one: never the zero Uuid, never
    /// `METADATA_TOPIC_ID` (`AAAAAAAAAAAAAAAAAAAAAQ`) and never one whose text starts with `-`
    /// (such a name reads as a command-line option).
    pub fn random() -> Uuid {
        loop {
            let uuid = Uuid(rand::random());
            if uuid != Uuid::ZERO
                && uuid != Uuid::METADATA_TOPIC_ID
                && !uuid.to_string().starts_with('-')
            {
                return uuid;
            }
        }
    }

    /// Kafka's `Uuid.METADATA_TOPIC_ID` (the Uuid 0, 1).
    pub const METADATA_TOPIC_ID: Uuid = Uuid([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);

    /// Parses Kafka's text form (`Uuid.fromString`): exactly 22 URL-safe base64 characters
    /// without padding, in canonical form (the unused low bits of the last one zero).
    ///
    /// # Errors
    /// [`Error::BadName`] naming the text when it is not such a Uuid.
    pub fn parse(text: &str) -> Result<Uuid> {
        let bad = |reason| Error::BadName {
            name: text.to_owned(),
            what: "uuid",
            reason,
        };
        if text.len() != UUID_TEXT_LEN {
            return Err(bad("a Uuid is 22 base64url characters"));
        }
        let mut sextets = [0u8; UUID_TEXT_LEN];
        for (slot, byte) in sextets.iter_mut().zip(text.bytes()) {
            *slot = match byte {
                b'A'..=b'Z' => byte - b'A',
                b'a'..=b'z' => byte - b'a' + 26,
                b'0'..=b'9' => byte - b'0' + 52,
                b'-' => 62,
                b'_' => 63,
                _ => return Err(bad("a character outside the base64url alphabet")),
            };
        }
        // 22 sextets = 132 bits: 128 of them are the Uuid, the last 4 must be zero.
        if sextets[UUID_TEXT_LEN - 1] & 0x0f != 0 {
            return Err(bad("not the canonical encoding (trailing bits set)"));
        }
        let mut bytes = [0u8; 16];
        let mut acc: u32 = 0;
        let mut bits = 0;
        let mut out = 0;
        for sextet in sextets {
            acc = (acc << 6) | u32::from(sextet);
            bits += 6;
            if bits >= 8 && out < 16 {
                bits -= 8;
                bytes[out] = (acc >> bits) as u8;
                out += 1;
            }
        }
        Ok(Uuid(bytes))
    }

    /// The most and least significant halves, as Kafka's `Uuid(long, long)` takes them.
    pub fn from_halves(most: u64, least: u64) -> Uuid {
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&most.to_be_bytes());
        bytes[8..].copy_from_slice(&least.to_be_bytes());
        Uuid(bytes)
    }
}

impl fmt::Display for Uuid {
    /// Kafka's `Uuid.toString()`: `Base64.getUrlEncoder().withoutPadding()` of the 16 bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = [0u8; UUID_TEXT_LEN];
        let mut acc: u32 = 0;
        let mut bits = 0;
        let mut out = 0;
        for byte in self.0 {
            acc = (acc << 8) | u32::from(byte);
            bits += 8;
            while bits >= 6 {
                bits -= 6;
                text[out] = ALPHABET[((acc >> bits) & 0x3f) as usize];
                out += 1;
            }
        }
        // 128 bits leave 2 over: the last character carries them and 4 zero bits.
        text[out] = ALPHABET[((acc << (6 - bits)) & 0x3f) as usize];
        f.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Uuid({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Printed by Kafka 4.4.0's own `new Uuid(most, least).toString()` (kafka-clients-4.4.0.jar).
    const KAFKA_VECTORS: [(u64, u64, &str); 4] = [
        (0, 1, "AAAAAAAAAAAAAAAAAAAAAQ"),
        (
            0x0123_4567_89ab_cdef,
            0xfedc_ba98_7654_3210,
            "ASNFZ4mrze_-3LqYdlQyEA",
        ),
        (u64::MAX, u64::MAX, "_____________________w"),
        (
            0x7f7f_7f7f_7f7f_7f7f,
            0x3e3f_3e3f_3e3f_3e3f,
            "f39_f39_f38-Pz4_Pj8-Pw",
        ),
    ];

    #[test]
    fn text_form_is_kafkas() {
        for (most, least, text) in KAFKA_VECTORS {
            let uuid = Uuid::from_halves(most, least);
            assert_eq!(uuid.to_string(), text);
            assert_eq!(Uuid::parse(text).unwrap(), uuid);
        }
        assert_eq!(
            Uuid::METADATA_TOPIC_ID.to_string(),
            "AAAAAAAAAAAAAAAAAAAAAQ"
        );
    }

    #[test]
    fn random_uuids_round_trip_and_avoid_the_reserved_ones() {
        for _ in 0..1000 {
            let uuid = Uuid::random();
            let text = uuid.to_string();
            assert!(!text.starts_with('-'));
            assert_ne!(uuid, Uuid::ZERO);
            assert_eq!(Uuid::parse(&text).unwrap(), uuid);
        }
    }

    #[test]
    fn bad_text_is_a_typed_error() {
        for text in [
            "",
            "AAAA",
            "AAAAAAAAAAAAAAAAAAAAA=",
            "AAAAAAAAAAAAAAAAAAAAAB",
            "AAAAAAAAAAAAAAAAAAAAA+",
        ] {
            let err = Uuid::parse(text).unwrap_err();
            assert!(
                matches!(err, Error::BadName { what: "uuid", .. }),
                "{text}: {err}"
            );
        }
    }
}
