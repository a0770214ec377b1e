//! The compression codec of a batch (attribute bits 0-2).

use std::fmt;
use std::str::FromStr;

use crate::Error;

/// A batch's compression codec, as stored in attribute bits 0-2 (Kafka's `CompressionType`).
///
/// Names follow Kafka's `compression.type` values: `none`, `gzip`, `snappy`, `lz4`, `zstd`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Compression {
    /// Id 0: records stored as they are.
    #[default]
    None,
    /// Id 1: gzip (RFC 1952) stream.
    Gzip,
    /// Id 2: snappy. Kafka writes xerial (snappy-java) framing; plain raw snappy is read too.
    Snappy,
    /// Id 3: LZ4 frame format (Kafka's `KafkaLZ4BlockOutputStream`).
    Lz4,
    /// Id 4: zstd frame (v2 batches only).
    Zstd,
}

impl Compression {
    /// All codecs, in id order.
    pub const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    /// The codec with attribute id `id` (0-4), or `None` for any other id.
    pub fn from_id(id: u8) -> Option<Self> {
        match id {
            0 => Some(Compression::None),
            1 => Some(Compression::Gzip),
            2 => Some(Compression::Snappy),
            3 => Some(Compression::Lz4),
            4 => Some(Compression::Zstd),
            _ => None,
        }
    }

    /// The attribute id of this codec.
    pub fn id(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
            Compression::Lz4 => 3,
            Compression::Zstd => 4,
        }
    }

    /// Kafka's name for this codec.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Compression {
    type Err = Error;

    /// Parses Kafka's names (`none`, `gzip`, `snappy`, `lz4`, `zstd`), ASCII case-insensitively.
    ///
    /// # Errors
    /// [`Error::UnknownCompressionName`] for any other name.
    fn from_str(name: &str) -> Result<Self, Error> {
        Compression::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| Error::UnknownCompressionName {
                name: name.to_owned(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ids_round_trip() {
        for c in Compression::ALL {
            assert_eq!(Compression::from_id(c.id()), Some(c));
            assert_eq!(c.to_string().parse::<Compression>().unwrap(), c);
        }
        assert_eq!("LZ4".parse::<Compression>().unwrap(), Compression::Lz4);
        assert_eq!(Compression::from_id(5), None);
        assert!(matches!(
            "brotli".parse::<Compression>(),
            Err(Error::UnknownCompressionName { .. })
        ));
    }
}
