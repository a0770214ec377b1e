//! A read-only load beside a writer in another process: loaded again until no name it listed
//! moved (see [`consistent_read_only`]).

use std::collections::BTreeMap;
use std::path::Path;

use seglog_segment::{FileKind, FileType, ParsedFileName, TempSuffix};

use crate::{Error, Result};

/// How many read-only loads [`consistent_read_only`] tries.
const READ_ONLY_ATTEMPTS: usize = 64;

/// Runs the read-only `load` until the directory's segment files did not change during it in
/// a way that matters: a load that saw a file renamed or removed (a writer in another process
/// renaming a swap in, deleting, truncating) may have listed a state no step of the writer
/// ever left, or opened files of two states, and is done again. Every step of a swap, a
/// deletion and a truncation renames or removes a name, so when every name listed before the
/// load is still there after it, and the only new names are a roll's (live files above every
/// segment listed before) or a cleaner's `.cleaned` output, the files the load opened (and
/// holds) are one state's, which the leftovers rule resolves as a read-write open would. A
/// writer that only appends and rolls never makes a reader load twice.
///
/// # Errors
/// The last load's error; [`Error::DirectoryChanging`] when no load saw a still directory.
pub(crate) fn consistent_read_only<T>(
    dir: &Path,
    mut load: impl FnMut() -> Result<T>,
) -> Result<T> {
    let Ok(mut before) = segment_names(dir) else {
        return load();
    };
    for attempt in 0..READ_ONLY_ATTEMPTS {
        let result = load();
        let Ok(after) = segment_names(dir) else {
            return result;
        };
        if unchanged_for_a_reader(&before, &after) {
            return result;
        }
        before = after;
        // Let the writer finish its step.
        std::thread::sleep(std::time::Duration::from_millis(1 << attempt.min(6)));
    }
    Err(Error::DirectoryChanging {
        dir: dir.to_path_buf(),
        attempts: READ_ONLY_ATTEMPTS,
    })
}

/// Whether a load between the listings `before` and `after` saw one state (see
/// [`consistent_read_only`]).
pub(super) fn unchanged_for_a_reader(
    before: &BTreeMap<std::ffi::OsString, ParsedFileName>,
    after: &BTreeMap<std::ffi::OsString, ParsedFileName>,
) -> bool {
    if !before.keys().all(|name| after.contains_key(name)) {
        return false;
    }
    let last_base = before
        .values()
        .filter(|p| p.kind == FileKind::LOG)
        .map(|p| p.base_offset)
        .max()
        .unwrap_or(i64::MIN);
    after
        .iter()
        .filter(|(name, _)| !before.contains_key(*name))
        .all(|(_, p)| match p.kind.suffix {
            None => p.base_offset > last_base,
            Some(suffix) => suffix == TempSuffix::Cleaned,
        })
}

/// The segment files in `dir` (snapshots excluded), by name.
fn segment_names(dir: &Path) -> std::io::Result<BTreeMap<std::ffi::OsString, ParsedFileName>> {
    let mut names = BTreeMap::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if let Some(parsed) = seglog_segment::parse_file_name(&entry.path())
            && parsed.kind.file_type != FileType::Snapshot
        {
            names.insert(entry.file_name(), parsed);
        }
    }
    Ok(names)
}
