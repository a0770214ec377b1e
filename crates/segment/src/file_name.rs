//! Segment file names (spec §1.1): `<base offset, 20 digits>.<ext>[.<temp suffix>]`.
//!
//! This is the only place that builds or parses a segment file name.

use std::fmt;
use std::path::{Path, PathBuf};

/// What a per-segment file holds, from its extension (Kafka's `LogFileUtils` suffixes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileType {
    /// `.log`: record batches back to back.
    Log,
    /// `.index`: the sparse offset index.
    Index,
    /// `.timeindex`: the sparse time index.
    TimeIndex,
    /// `.txnindex`: the aborted-transaction index.
    TxnIndex,
    /// `.snapshot`: a producer-state snapshot named by its (exclusive end) offset.
    Snapshot,
}

impl FileType {
    /// The extension including its dot, e.g. `".log"`.
    pub const fn extension(self) -> &'static str {
        match self {
            FileType::Log => ".log",
            FileType::Index => ".index",
            FileType::TimeIndex => ".timeindex",
            FileType::TxnIndex => ".txnindex",
            FileType::Snapshot => ".snapshot",
        }
    }

    /// Whether Kafka classifies this as an index file (`.index`, `.timeindex`, `.txnindex`).
    pub const fn is_index(self) -> bool {
        matches!(
            self,
            FileType::Index | FileType::TimeIndex | FileType::TxnIndex
        )
    }

    const ALL: [FileType; 5] = [
        FileType::Log,
        FileType::Index,
        FileType::TimeIndex,
        FileType::TxnIndex,
        FileType::Snapshot,
    ];
}

/// A temporary suffix appended after the normal extension, e.g. `…1234.index.swap`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TempSuffix {
    /// `.deleted`: renamed for asynchronous deletion; the loader deletes it.
    Deleted,
    /// `.cleaned`: being written by the cleaner or the overflow split; deleted at load.
    Cleaned,
    /// `.swap`: finished output waiting to replace old segments; completed at load.
    Swap,
}

impl TempSuffix {
    /// The suffix including its dot, e.g. `".deleted"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            TempSuffix::Deleted => ".deleted",
            TempSuffix::Cleaned => ".cleaned",
            TempSuffix::Swap => ".swap",
        }
    }

    const ALL: [TempSuffix; 3] = [TempSuffix::Deleted, TempSuffix::Cleaned, TempSuffix::Swap];
}

/// The kind of a segment file: its type plus an optional temporary suffix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileKind {
    /// What the file holds.
    pub file_type: FileType,
    /// The temporary suffix, if any.
    pub suffix: Option<TempSuffix>,
}

impl FileKind {
    /// `.log`
    pub const LOG: FileKind = FileKind::new(FileType::Log);
    /// `.index`
    pub const INDEX: FileKind = FileKind::new(FileType::Index);
    /// `.timeindex`
    pub const TIME_INDEX: FileKind = FileKind::new(FileType::TimeIndex);
    /// `.txnindex`
    pub const TXN_INDEX: FileKind = FileKind::new(FileType::TxnIndex);
    /// `.snapshot`
    pub const SNAPSHOT: FileKind = FileKind::new(FileType::Snapshot);

    /// A kind without a temporary suffix.
    pub const fn new(file_type: FileType) -> FileKind {
        FileKind {
            file_type,
            suffix: None,
        }
    }

    /// The same type with `suffix` (or none).
    pub const fn with_suffix(self, suffix: Option<TempSuffix>) -> FileKind {
        FileKind {
            file_type: self.file_type,
            suffix,
        }
    }
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.file_type.extension())?;
        if let Some(suffix) = self.suffix {
            f.write_str(suffix.as_str())?;
        }
        Ok(())
    }
}

/// A parsed segment file name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ParsedFileName {
    /// The number before the first `.`: a segment's base offset (or a snapshot's offset).
    pub base_offset: i64,
    /// The extension and temporary suffix.
    pub kind: FileKind,
}

/// The file name of `kind` for the segment at `base_offset`: the offset left-padded with
/// zeros to 20 ASCII digits, then the extension, then the temporary suffix.
///
/// ```
/// use seglog_segment::{file_name, FileKind, TempSuffix};
/// assert_eq!(file_name(1234, FileKind::LOG), "00000000000000001234.log");
/// assert_eq!(
///     file_name(1234, FileKind::INDEX.with_suffix(Some(TempSuffix::Swap))),
///     "00000000000000001234.index.swap"
/// );
/// ```
pub fn file_name(base_offset: i64, kind: FileKind) -> String {
    format!("{base_offset:020}{kind}")
}

/// `dir` joined with [`file_name`].
pub fn file_path(dir: &Path, base_offset: i64, kind: FileKind) -> PathBuf {
    dir.join(file_name(base_offset, kind))
}

/// Parses the last component of `path` as a segment file name, or `None` if it is not one.
///
/// As Kafka does, the base offset is the text before the **first** `.`, read as a decimal
/// `i64` (any number of digits; only ASCII digits are accepted, so KRaft snapshot files such
/// as `…-0000000001.checkpoint` and other partition files are not segment files). The rest
/// must be one of the extensions of [`FileType`], optionally followed by one [`TempSuffix`].
///
/// ```
/// use seglog_segment::{parse_file_name, FileKind, FileType, TempSuffix};
/// let parsed = parse_file_name("dir/00000000000000001234.log.deleted".as_ref()).unwrap();
/// assert_eq!(parsed.base_offset, 1234);
/// assert_eq!(parsed.kind, FileKind::LOG.with_suffix(Some(TempSuffix::Deleted)));
/// assert!(parse_file_name("leader-epoch-checkpoint".as_ref()).is_none());
/// ```
pub fn parse_file_name(path: &Path) -> Option<ParsedFileName> {
    parse_name(path.file_name()?.to_str()?)
}

/// [`parse_file_name`] of a bare name (a directory listing's entry), with whether the name is
/// exactly the one [`file_name`] writes for what it parses as (`file_name(base_offset, kind)
/// == name`: a base offset of 20 digits; Kafka's loader also takes `123.log`), found without
/// formatting a name (issue 28: the loader asks it of every listed file).
///
/// ```
/// use seglog_segment::{parse_listed_name, FileKind};
/// let (parsed, canonical) = parse_listed_name("00000000000000001234.log".as_ref()).unwrap();
/// assert_eq!((parsed.base_offset, parsed.kind, canonical), (1234, FileKind::LOG, true));
/// assert_eq!(parse_listed_name("1234.log".as_ref()).map(|(_, c)| c), Some(false));
/// ```
pub fn parse_listed_name(name: &std::ffi::OsStr) -> Option<(ParsedFileName, bool)> {
    let name = name.to_str()?;
    let parsed = parse_name(name)?;
    // The digits run to the first `.`; every value of 20 digits that parses is below 10^19
    // and so prints back as the same 20 digits, and the rest matched an extension exactly.
    Some((parsed, name.find('.') == Some(BASE_OFFSET_DIGITS)))
}

/// The digits of a base offset in a file name as Kafka writes it.
const BASE_OFFSET_DIGITS: usize = 20;

/// [`parse_file_name`] of a bare name.
fn parse_name(name: &str) -> Option<ParsedFileName> {
    let dot = name.find('.')?;
    let (digits, rest) = name.split_at(dot);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let base_offset: i64 = digits.parse().ok()?;
    let file_type = FileType::ALL
        .into_iter()
        .find(|t| rest.starts_with(t.extension()))?;
    let rest = &rest[file_type.extension().len()..];
    let suffix = if rest.is_empty() {
        None
    } else {
        Some(TempSuffix::ALL.into_iter().find(|s| rest == s.as_str())?)
    };
    Some(ParsedFileName {
        base_offset,
        kind: FileKind { file_type, suffix },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_kind() {
        for file_type in FileType::ALL {
            for suffix in [
                None,
                Some(TempSuffix::Deleted),
                Some(TempSuffix::Cleaned),
                Some(TempSuffix::Swap),
            ] {
                for base_offset in [0, 1, 1234, i64::from(i32::MAX) + 1, i64::MAX] {
                    let kind = FileKind { file_type, suffix };
                    let name = file_name(base_offset, kind);
                    assert!(name.len() >= 20, "{name}");
                    let parsed = parse_file_name(Path::new(&name));
                    assert_eq!(parsed, Some(ParsedFileName { base_offset, kind }), "{name}");
                }
            }
        }
    }

    /// The oracle: a name is canonical when formatting what it parses as gives it back.
    #[test]
    fn canonical_names_are_the_ones_file_name_writes() {
        let mut names = vec![
            "1234.log".to_string(),
            "0000000000000001234.log".to_string(),
            "000000000000000001234.log".to_string(),
            "09223372036854775807.log".to_string(),
            "09223372036854775808.log".to_string(),
            "00000000000000000000.index.swap".to_string(),
            "0.timeindex".to_string(),
            "00000000000000000000.logx".to_string(),
            "leader-epoch-checkpoint".to_string(),
        ];
        for file_type in FileType::ALL {
            for suffix in [None, Some(TempSuffix::Deleted), Some(TempSuffix::Swap)] {
                for base in [0, 7, 1234, i64::MAX] {
                    let name = file_name(base, FileKind { file_type, suffix });
                    names.push(name[1..].to_string());
                    names.push(format!("0{name}"));
                    names.push(name);
                }
            }
        }
        for name in &names {
            let listed = parse_listed_name(name.as_ref());
            let parsed = parse_file_name(Path::new(name));
            assert_eq!(listed.map(|(p, _)| p), parsed, "{name}");
            if let Some((parsed, canonical)) = listed {
                let expected = file_name(parsed.base_offset, parsed.kind) == *name;
                assert_eq!(canonical, expected, "{name}");
            }
        }
    }

    #[test]
    fn twenty_digits() {
        assert_eq!(file_name(0, FileKind::LOG), "00000000000000000000.log");
        assert_eq!(
            file_name(30620, FileKind::TIME_INDEX),
            "00000000000000030620.timeindex"
        );
        assert_eq!(
            file_name(i64::MAX, FileKind::LOG),
            "09223372036854775807.log"
        );
    }

    #[test]
    fn rejects_non_segment_files() {
        for name in [
            "leader-epoch-checkpoint",
            "partition.metadata",
            "quorum-state",
            "00000000000000000000-0000000001.checkpoint",
            "00000000000000000000-0000000001.checkpoint.deleted",
            "00000000000000000000.log.bak",
            "00000000000000000000.logx",
            ".log",
            "-1.log",
            "+1.log",
            "99999999999999999999.log",
        ] {
            assert_eq!(parse_file_name(Path::new(name)), None, "{name}");
        }
    }

    #[test]
    fn accepts_unpadded_names_like_kafka() {
        let parsed = parse_file_name(Path::new("/a/b/42.index.cleaned"));
        assert_eq!(
            parsed,
            Some(ParsedFileName {
                base_offset: 42,
                kind: FileKind::INDEX.with_suffix(Some(TempSuffix::Cleaned)),
            })
        );
    }
}
