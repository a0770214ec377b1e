//! The crate's error type and how errors become exit codes and one-line messages.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// Everything that can stop a subcommand. Every variant names the file it concerns; the
/// lower layers' errors carry their own path and byte position.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An I/O call failed.
    #[error("cannot {op} {}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What was being done ("open", "read", "create directory", ...).
        op: &'static str,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The path given on the command line does not exist.
    #[error("{}: no such file or directory", path.display())]
    NotFound {
        /// The missing path.
        path: PathBuf,
    },
    /// The path exists but is not what the subcommand needs.
    #[error("{}: {expected}", path.display())]
    WrongKind {
        /// The path.
        path: PathBuf,
        /// What it should have been, e.g. "not a directory".
        expected: &'static str,
    },
    /// A line of `produce --input` could not be used.
    #[error("{}:{line} (byte {position}): {kind}", path.display())]
    Input {
        /// The input file (`-` for standard input).
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// Byte position of the start of the line.
        position: u64,
        /// What is wrong with it.
        kind: InputErrorKind,
    },
    /// A command-line value that clap cannot check on its own.
    #[error("invalid argument {arg}: {reason}")]
    Usage {
        /// The flag, e.g. `--config`.
        arg: &'static str,
        /// Why the value is wrong.
        reason: String,
    },
    /// Writing to standard output failed.
    #[error("cannot write to standard output")]
    Stdout(#[source] io::Error),
    /// A `.log` file holds bytes that are not valid batches (the file-level walkers of
    /// `dump` and `verify`, and `read`'s decoding of what the log returned).
    #[error("{}", path.display())]
    Records {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the byte position.
        #[source]
        source: seglog_records::Error,
    },
    /// An index file could not be opened or read.
    #[error(transparent)]
    Index(#[from] seglog_index_core::Error),
    /// A segment operation failed.
    #[error(transparent)]
    Segment(#[from] seglog_segment::Error),
    /// A log operation failed.
    #[error(transparent)]
    Log(#[from] seglog::Error),
    /// A log operation failed with an error that does not name the log (e.g. an offset out
    /// of range): this adds the directory.
    #[error("{}", dir.display())]
    LogAt {
        /// The partition directory.
        dir: PathBuf,
        /// The log's error.
        #[source]
        source: seglog::Error,
    },
}

/// What is wrong with one input line.
#[derive(Debug, thiserror::Error)]
pub enum InputErrorKind {
    /// Not a JSON object of the expected shape.
    #[error("not a record object: {0}")]
    Json(#[from] serde_json::Error),
    /// A key, value or header value is not valid for `--encoding`.
    #[error("{field}: {reason}")]
    Encoding {
        /// `key`, `value` or `headers[i]`.
        field: String,
        /// Why.
        reason: String,
    },
    /// A negative timestamp.
    #[error("timestamp {0} is negative")]
    NegativeTimestamp(i64),
    /// The line is not valid UTF-8 or could not be read.
    #[error("cannot read line: {0}")]
    Read(#[source] io::Error),
}

impl Error {
    /// Builds an [`Error::Io`] naming `path`.
    pub fn io(op: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> Error {
        let path = path.into();
        move |source| {
            if source.kind() == io::ErrorKind::NotFound {
                Error::NotFound { path }
            } else {
                Error::Io { path, op, source }
            }
        }
    }

    /// The process exit code for this error: always 2 (bad usage or input). Exit 1 is
    /// reserved for "problems found", which is a result, not an error.
    pub fn exit_code(&self) -> u8 {
        2
    }

    /// True when the error is a closed standard output (`seglog read | head`): not worth
    /// reporting.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Stdout(e) if e.kind() == io::ErrorKind::BrokenPipe)
    }

    /// The whole source chain as one line, each cause once.
    pub fn one_line(&self) -> OneLine<'_> {
        OneLine(self)
    }
}

/// [`Error::one_line`]'s display adapter.
pub struct OneLine<'a>(&'a Error);

impl fmt::Display for OneLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut line = self.0.to_string();
        let mut source = std::error::Error::source(self.0);
        while let Some(cause) = source {
            let text = cause.to_string();
            // Some layers repeat their source in their own message; print each cause once.
            if !line.contains(&text) {
                line.push_str(": ");
                line.push_str(&text);
            }
            source = cause.source();
        }
        // One line, whatever the causes contain.
        f.write_str(&line.replace('\n', " "))
    }
}

/// Shorthand for writing to stdout.
pub(crate) fn stdout_err(e: io::Error) -> Error {
    Error::Stdout(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_joins_causes_once() {
        let e = Error::Io {
            path: "/x/y.log".into(),
            op: "open",
            source: io::Error::new(io::ErrorKind::PermissionDenied, "denied"),
        };
        assert_eq!(e.one_line().to_string(), "cannot open /x/y.log: denied");
        assert_eq!(e.exit_code(), 2);
    }

    #[test]
    fn not_found_is_its_own_variant() {
        let e = Error::io("open", "/nope")(io::Error::from(io::ErrorKind::NotFound));
        assert!(matches!(e, Error::NotFound { .. }));
        assert_eq!(e.to_string(), "/nope: no such file or directory");
    }

    #[test]
    fn input_error_names_line_and_byte() {
        let e = Error::Input {
            path: "in.jsonl".into(),
            line: 3,
            position: 57,
            kind: InputErrorKind::NegativeTimestamp(-5),
        };
        assert_eq!(
            e.one_line().to_string(),
            "in.jsonl:3 (byte 57): timestamp -5 is negative"
        );
    }
}
