//! Standard output and the JSON line types scripts rely on.
//!
//! Field names here are part of the interface contract: add fields, never rename them.

use std::io::{self, BufWriter, Write};

use serde::Serialize;

use crate::error::{Error, stdout_err};

/// Buffered standard output; every write error becomes [`Error::Stdout`].
pub struct Out {
    inner: BufWriter<io::StdoutLock<'static>>,
}

impl Out {
    /// Locks standard output.
    pub fn stdout() -> Self {
        Out {
            inner: BufWriter::with_capacity(64 * 1024, io::stdout().lock()),
        }
    }

    /// Writes `value` as one JSON line.
    ///
    /// # Errors
    /// [`Error::Stdout`] when standard output is closed or full.
    pub fn json<T: Serialize>(&mut self, value: &T) -> Result<(), Error> {
        serde_json::to_writer(&mut self.inner, value).map_err(|e| stdout_err(e.into()))?;
        self.inner.write_all(b"\n").map_err(stdout_err)
    }

    /// Writes one line of text.
    ///
    /// # Errors
    /// [`Error::Stdout`] when standard output is closed or full.
    pub fn line(&mut self, text: impl std::fmt::Display) -> Result<(), Error> {
        writeln!(self.inner, "{text}").map_err(stdout_err)
    }

    /// Pushes buffered lines out (used where a line must appear as soon as it is true).
    ///
    /// # Errors
    /// [`Error::Stdout`] when standard output is closed or full.
    pub fn flush(&mut self) -> Result<(), Error> {
        self.inner.flush().map_err(stdout_err)
    }
}

/// Writes a command's final report to standard output, as one JSON line when `json` is set
/// and through `print` as text otherwise, then flushes.
///
/// # Errors
/// [`Error::Stdout`] when standard output is closed or full; whatever `print` returns.
pub(crate) fn emit_report<T: Serialize>(
    json: bool,
    report: &T,
    print: fn(&mut Out, &T) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut out = Out::stdout();
    if json {
        out.json(report)?;
    } else {
        print(&mut out, report)?;
    }
    out.flush()
}

/// `produce --json`: one line per appended batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AppendedLine {
    /// Offset of the batch's first record.
    pub base_offset: i64,
    /// Offset of the batch's last record.
    pub last_offset: i64,
    /// The batch was a retry of one of its producer's last 5 batches: the offsets are the
    /// original's and nothing was written (written only when true).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub duplicate: bool,
}

/// How Kafka labels a record's timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimestampTypeName {
    /// Set by the producer (`CreateTime`).
    Create,
    /// Set by the broker at append (`LogAppendTime`).
    LogAppend,
}

/// `read --json`: one line per record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecordLine {
    /// The record's offset.
    pub offset: i64,
    /// What a Kafka consumer sees; `null` for v0 messages.
    pub timestamp: Option<i64>,
    /// `create`, `log_append`, or `null` for v0 messages.
    pub timestamp_type: Option<TimestampTypeName>,
    /// Key per `--encoding`, `null` for a null key.
    pub key: Option<String>,
    /// Value per `--encoding`, `null` for a tombstone.
    pub value: Option<String>,
    /// `[name, value]` pairs; the value per `--encoding` or `null`.
    pub headers: Vec<(String, Option<String>)>,
    /// Control marker name (`ABORT`, `COMMIT`, `LEADER_CHANGE`, ...); only on control records,
    /// which are only printed with `--include-control`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control: Option<&'static str>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_line_field_names_are_the_contract() {
        let line = RecordLine {
            offset: 7,
            timestamp: Some(5),
            timestamp_type: Some(TimestampTypeName::LogAppend),
            key: None,
            value: Some("v".into()),
            headers: vec![("h".into(), None), ("i".into(), Some("x".into()))],
            control: None,
        };
        assert_eq!(
            serde_json::to_string(&line).unwrap(),
            r#"{"offset":7,"timestamp":5,"timestamp_type":"log_append","key":null,"value":"v","headers":[["h",null],["i","x"]]}"#
        );
        let control = RecordLine {
            control: Some("COMMIT"),
            timestamp: None,
            timestamp_type: None,
            ..line
        };
        let text = serde_json::to_string(&control).unwrap();
        assert!(
            text.contains(r#""timestamp":null,"timestamp_type":null"#),
            "{text}"
        );
        assert!(text.ends_with(r#""control":"COMMIT"}"#), "{text}");
    }

    #[test]
    fn appended_line_field_names_are_the_contract() {
        let line = AppendedLine {
            base_offset: 0,
            last_offset: 99,
            duplicate: false,
        };
        assert_eq!(
            serde_json::to_string(&line).unwrap(),
            r#"{"base_offset":0,"last_offset":99}"#
        );
    }
}
