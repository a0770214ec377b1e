//! `produce --input`: JSON Lines, one record per line.
//!
//! `{"key": STR|null, "value": STR|null, "timestamp": MS, "headers": [[NAME, STR|null], ...]}`;
//! `key`, `value`, `timestamp` and `headers` are all optional (missing key/value = null,
//! missing timestamp = the time of the append, missing headers = none). The other fields of
//! `seglog read --json` (`offset`, `timestamp_type`) are accepted and ignored, so its output
//! can be fed back in; any other field is an error (a misspelt `"valu"` must not become a
//! tombstone). Blank lines are skipped. A line longer than the reader's limit is an error
//! before it is held in memory whole.

use std::io::{BufRead, Read};
use std::path::PathBuf;

use serde::Deserialize;

use crate::cli::Encoding;
use crate::error::{Error, InputErrorKind};

/// One record to append, decoded from its input line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InputRecord {
    /// Key bytes; `None` is a null key.
    pub key: Option<Vec<u8>>,
    /// Value bytes; `None` is a null value (a tombstone).
    pub value: Option<Vec<u8>>,
    /// Record timestamp; `None` means "now".
    pub timestamp_ms: Option<i64>,
    /// Headers in order: name, value (`None` = null).
    pub headers: Vec<(String, Option<Vec<u8>>)>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    value: Option<String>,
    #[serde(default)]
    timestamp: Option<i64>,
    #[serde(default)]
    headers: Option<Vec<(String, Option<String>)>>,
    /// `seglog read --json` output: the log assigns offsets and the timestamp type.
    #[serde(default, rename = "offset")]
    _offset: Option<serde::de::IgnoredAny>,
    #[serde(default, rename = "timestamp_type")]
    _timestamp_type: Option<serde::de::IgnoredAny>,
}

/// Reads JSON Lines records from `reader`; errors name `path`, the line and its byte position.
pub struct JsonLines<R> {
    reader: R,
    path: PathBuf,
    encoding: Encoding,
    max_line_bytes: u64,
    line: u64,
    position: u64,
    buf: Vec<u8>,
}

impl<R: BufRead> JsonLines<R> {
    /// Wraps `reader`; `path` is only used in error messages. A line longer than
    /// `max_line_bytes` (newline excluded) is an error.
    pub fn new(
        reader: R,
        path: impl Into<PathBuf>,
        encoding: Encoding,
        max_line_bytes: u64,
    ) -> Self {
        JsonLines {
            reader,
            path: path.into(),
            encoding,
            max_line_bytes,
            line: 0,
            position: 0,
            buf: Vec::new(),
        }
    }

    /// The 1-based number of the line last returned.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// An input error at the line last returned.
    pub fn error(&self, kind: InputErrorKind) -> Error {
        Error::Input {
            path: self.path.clone(),
            line: self.line,
            position: self.position,
            kind,
        }
    }

    fn decode(&self, line: Line) -> Result<InputRecord, InputErrorKind> {
        let enc = self.encoding;
        let field = |name: &str, text: Option<String>| -> Result<Option<Vec<u8>>, InputErrorKind> {
            text.map(|t| enc.decode(&t))
                .transpose()
                .map_err(|reason| InputErrorKind::Encoding {
                    field: name.to_owned(),
                    reason,
                })
        };
        if let Some(ts) = line.timestamp.filter(|ts| *ts < 0) {
            return Err(InputErrorKind::NegativeTimestamp(ts));
        }
        let mut headers = Vec::new();
        for (i, (name, value)) in line.headers.unwrap_or_default().into_iter().enumerate() {
            headers.push((name, field(&format!("headers[{i}]"), value)?));
        }
        Ok(InputRecord {
            key: field("key", line.key)?,
            value: field("value", line.value)?,
            timestamp_ms: line.timestamp,
            headers,
        })
    }
}

impl<R: BufRead> Iterator for JsonLines<R> {
    type Item = Result<InputRecord, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            self.position += self.buf.len() as u64;
            self.buf.clear();
            self.line += 1;
            // At most the limit, its newline and one byte more: enough to tell a long line.
            let mut limited = (&mut self.reader).take(self.max_line_bytes.saturating_add(2));
            match limited.read_until(b'\n', &mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => return Some(Err(self.error(InputErrorKind::Read(e)))),
            }
            let body = self.buf.strip_suffix(b"\n").unwrap_or(&self.buf);
            let body = body.strip_suffix(b"\r").unwrap_or(body);
            if body.len() as u64 > self.max_line_bytes {
                let limit = self.max_line_bytes;
                return Some(Err(self.error(InputErrorKind::LineTooLong { limit })));
            }
            let text = match std::str::from_utf8(body) {
                Ok(text) => text.trim(),
                Err(e) => {
                    let at = e.valid_up_to();
                    return Some(Err(self.error(InputErrorKind::NotUtf8 { at })));
                }
            };
            if text.is_empty() {
                continue;
            }
            let parsed = serde_json::from_str::<Line>(text)
                .map_err(InputErrorKind::json)
                .and_then(|line| self.decode(line));
            return Some(parsed.map_err(|kind| self.error(kind)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, encoding: Encoding) -> Vec<Result<InputRecord, Error>> {
        JsonLines::new(text.as_bytes(), "in.jsonl", encoding, 1 << 20).collect()
    }

    #[test]
    fn full_and_minimal_lines() {
        let text = concat!(
            r#"{"key":"k","value":"v","timestamp":5,"headers":[["h1","x"],["h2",null]]}"#,
            "\n\n",
            r#"{"value":null}"#,
            "\n",
            r#"{"key":"","value":"","offset":9,"timestamp_type":"create"}"#,
        );
        let got: Vec<_> = parse(text, Encoding::Utf8)
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].key.as_deref(), Some(&b"k"[..]));
        assert_eq!(got[0].timestamp_ms, Some(5));
        assert_eq!(
            got[0].headers,
            vec![("h1".into(), Some(b"x".to_vec())), ("h2".into(), None)]
        );
        assert_eq!(got[1], InputRecord::default());
        assert_eq!(got[2].key, Some(vec![]));
        assert_eq!(got[2].value, Some(vec![]));
    }

    #[test]
    fn hex_values_decode_to_bytes() {
        let got = parse(
            r#"{"key":null,"value":"00ff","headers":[["n","0a"]]}"#,
            Encoding::Hex,
        );
        let rec = got.into_iter().next().unwrap().unwrap();
        assert_eq!(rec.value, Some(vec![0, 0xff]));
        assert_eq!(rec.headers[0].1, Some(vec![0x0a]));
    }

    #[test]
    fn errors_name_line_and_position() {
        let text = "{\"value\":\"ok\"}\n{\"value\":\"zz\"}\n";
        let got = parse(text, Encoding::Hex);
        // line 1 "ok" is not hex either
        let Err(Error::Input { line, position, .. }) = &got[0] else {
            panic!("{got:?}")
        };
        assert_eq!((*line, *position), (1, 0));
        let Err(e) = &got[1] else { panic!() };
        let msg = e.one_line().to_string();
        assert!(
            msg.starts_with("in.jsonl:2 (byte 15): value: invalid hex"),
            "{msg}"
        );
    }

    #[test]
    fn rejects_garbage_and_negative_timestamps() {
        let got = parse("not json\n{\"timestamp\":-3}\n", Encoding::Utf8);
        assert!(
            got[0]
                .as_ref()
                .unwrap_err()
                .one_line()
                .to_string()
                .contains("in.jsonl:1 (byte 0)")
        );
        assert!(
            got[1]
                .as_ref()
                .unwrap_err()
                .one_line()
                .to_string()
                .contains("timestamp -3 is negative")
        );
    }
}
