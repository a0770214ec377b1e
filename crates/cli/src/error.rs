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
    /// A segment file (named like one) is not a regular file.
    #[error("{}: {what}", path.display())]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is instead.
        what: String,
    },
    /// A directory name Kafka would not load as a partition directory.
    #[error("{}: not a partition directory name Kafka can load ({reason})", path.display())]
    BadPartitionName {
        /// The directory.
        path: PathBuf,
        /// What is wrong with the name.
        reason: String,
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
    /// Bytes the log served do not decode or fail their CRC (`read`, after printing every
    /// record before them): problems found, exit 1.
    #[error("{}", path.display())]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the byte position.
        #[source]
        source: seglog_records::Error,
    },
    /// A segment's bytes could not all be read: the load found damage and serves only what
    /// precedes it (`read` reports it after printing what it could): problems found, exit 1.
    #[error(
        "{} at byte {position}: {reason}; offsets from {next_offset} in this segment cannot be read (`seglog verify` shows the damage)",
        path.display()
    )]
    Unreadable {
        /// The `.log` file.
        path: PathBuf,
        /// Where the unreadable bytes start.
        position: u64,
        /// The first offset that cannot be read.
        next_offset: i64,
        /// What is wrong there.
        reason: String,
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
    /// The remote tier failed (`seglog tier`).
    #[error(transparent)]
    Tier(#[from] seglog_tiered::Error),
    /// `seglog tier` (copy) on a store holding segments another writer tiered (a Kafka broker's
    /// `LocalTieredStorage`) that were never adopted: the store's recovery would delete them as
    /// orphans, so nothing is copied or deleted (exit 2).
    #[error(
        "{}: refusing to tier into {store}: it holds remote segments without seglog metadata; run `seglog tier {} --store {store} --adopt` first",
        dir.display(),
        dir.display()
    )]
    NotAdopted {
        /// The partition directory.
        dir: PathBuf,
        /// The store URL.
        store: String,
        /// The tier's error (the first such segment's object key).
        #[source]
        source: Box<seglog_tiered::Error>,
    },
    /// `recover` found, before changing anything, that the recovery cannot succeed: the
    /// directory was left exactly as it was (exit 2).
    #[error("{}: recovery cannot run; nothing was changed", dir.display())]
    RecoverRefused {
        /// The partition directory.
        dir: PathBuf,
        /// Why.
        #[source]
        source: Box<Error>,
    },
    /// An offset in the remote part of a tiered partition, asked for without `--store`: the
    /// data is in the remote tier, not lost (exit 2).
    #[error(
        "{}: offset {offset} is in the partition's remote tier (offsets {log_start_offset}..{} are remote; the local log starts at {local_log_start_offset}): give --store URL to read it",
        dir.display(),
        local_log_start_offset - 1
    )]
    RemoteNotAttached {
        /// The partition directory.
        dir: PathBuf,
        /// The offset asked for.
        offset: i64,
        /// The whole log's start offset (from the log start checkpoint).
        log_start_offset: i64,
        /// The first offset on local disk.
        local_log_start_offset: i64,
    },
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
    /// Not valid JSON.
    #[error("not valid JSON (column {column}): {reason}")]
    Syntax {
        /// 1-based column of the error.
        column: usize,
        /// What the parser expected or found.
        reason: String,
    },
    /// Valid JSON, but not a record object of the expected shape.
    #[error("not a record object: {0}")]
    Shape(String),
    /// The line is longer than any record this log accepts can be written as.
    #[error("line longer than {limit} bytes (records are bounded by max.message.bytes)")]
    LineTooLong {
        /// The limit, in bytes.
        limit: u64,
    },
    /// The line is not UTF-8.
    #[error("not UTF-8 text (at byte {at} of the line)")]
    NotUtf8 {
        /// Where the invalid byte is, from the start of the line.
        at: usize,
    },
    /// The record is larger than one batch may be (`max.message.bytes`).
    #[error(
        "record of {size} bytes does not fit in a batch of max.message.bytes = {max_message_bytes}"
    )]
    RecordTooLarge {
        /// Key, value and header bytes.
        size: usize,
        /// The log's limit.
        max_message_bytes: i64,
    },
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

impl InputErrorKind {
    /// A JSON error in our words: serde's message without its position suffix (the error
    /// names the line and byte already), syntax errors with their column.
    pub fn json(e: serde_json::Error) -> InputErrorKind {
        let text = e.to_string();
        let reason = match text.rfind(" at line ") {
            Some(cut) => text[..cut].to_owned(),
            None => text,
        };
        match e.classify() {
            serde_json::error::Category::Data => InputErrorKind::Shape(reason),
            _ => InputErrorKind::Syntax {
                column: e.column(),
                reason,
            },
        }
    }
}

impl Error {
    /// Builds an [`Error::Io`] naming `path`.
    pub fn io(op: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> Error {
        let path = path.into();
        move |source| {
            if source.kind() == io::ErrorKind::NotFound {
                Error::NotFound { path }
            } else if let Some(kind) = seglog_segment::not_regular(&source) {
                // The checked open refused it (`seglog_segment::open_regular`).
                Error::NotRegular {
                    path,
                    what: kind.to_string(),
                }
            } else {
                Error::Io { path, op, source }
            }
        }
    }

    /// The process exit code for this error: 1 when the data itself is damaged ("problems
    /// found", as `verify` reports them), else 2 (bad usage or input, or a failed operation).
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Damaged { .. } | Error::Unreadable { .. } => 1,
            // A read that met a corrupt batch: the data is damaged, the command was right.
            Error::Log(seglog::Error::Segment(seglog_segment::Error::Corrupt { .. }))
            | Error::Segment(seglog_segment::Error::Corrupt { .. }) => 1,
            _ => 2,
        }
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
