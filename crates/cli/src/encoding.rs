//! Bytes <-> JSON strings, per `--encoding`.

use crate::cli::Encoding;

impl Encoding {
    /// Renders bytes as a JSON string value.
    ///
    /// `Utf8` replaces invalid sequences with U+FFFD, which is what a Kafka consumer with a
    /// `StringDeserializer` prints; `Hex` is exact.
    pub fn encode(self, bytes: &[u8]) -> String {
        match self {
            Encoding::Utf8 => String::from_utf8_lossy(bytes).into_owned(),
            Encoding::Hex => hex::encode(bytes),
        }
    }

    /// Parses a JSON string value back to bytes.
    ///
    /// # Errors
    /// With `Hex`, a string that is not an even number of hex digits; the message says why.
    pub fn decode(self, text: &str) -> Result<Vec<u8>, String> {
        match self {
            Encoding::Utf8 => Ok(text.as_bytes().to_vec()),
            Encoding::Hex => hex::decode(text).map_err(|e| format!("invalid hex: {e}")),
        }
    }

    /// Renders optional bytes (Kafka's null vs empty distinction is kept: `None` -> `null`).
    pub fn encode_opt(self, bytes: Option<&[u8]>) -> Option<String> {
        bytes.map(|b| self.encode(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_binary() {
        let bytes = [0u8, 0xff, 0x80, 0x7f, b'a'];
        let text = Encoding::Hex.encode(&bytes);
        assert_eq!(text, "00ff807f61");
        assert_eq!(Encoding::Hex.decode(&text).unwrap(), bytes);
        assert_eq!(Encoding::Hex.decode("00FF").unwrap(), vec![0, 0xff]);
    }

    #[test]
    fn hex_rejects_odd_and_non_hex() {
        assert!(Encoding::Hex.decode("abc").is_err());
        assert!(Encoding::Hex.decode("zz").is_err());
    }

    #[test]
    fn utf8_is_lossy_on_output_only() {
        assert_eq!(Encoding::Utf8.encode(b"h\xffi"), "h\u{fffd}i");
        assert_eq!(Encoding::Utf8.decode("héllo").unwrap(), "héllo".as_bytes());
        assert_eq!(Encoding::Utf8.encode_opt(None), None);
        assert_eq!(Encoding::Utf8.encode_opt(Some(b"")), Some(String::new()));
    }
}
