//! [`decide_leftovers`]: the loader's rule for leftover swap and deletion files (the module
//! docs of `leftovers`), over files held in memory: what a load would do, without a
//! directory.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use seglog_segment::{FileKind, FileType, file_name, parse_file_name};

use super::records::Memory;
use super::{Plan, RejectedSwap};

/// What a load does with the leftover files of an interrupted cleaner swap, split or
/// deletion (`*.cleaned`, `*.swap`, `*.deleted`), as [`decide_leftovers`] answers it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeftoverDecision {
    /// The segments afterwards, by base offset, each with the name its `.log` has before the
    /// load applies the decision: `<base>.log` for a live segment that stays, `<base>.log.swap`
    /// for an installed swap, `<base>.log.deleted` for a segment renamed back.
    pub segments: BTreeMap<i64, String>,
    /// The `.swap` files refused, and why (`set_aside_as`: the name a read-write open gives
    /// them; nothing is deleted).
    pub rejected: Vec<RejectedSwap>,
    /// The `.swap` files installed (renamed to their final names).
    pub installed: Vec<String>,
    /// The files a read-write load removes: `.cleaned` files and the swaps above them, the
    /// live files an installed swap replaces, and the `.deleted` files not renamed back.
    pub removed: Vec<String>,
}

/// Decides, as [`crate::Log::open`] does, what a load does with the leftover files among
/// `files` (name and bytes of every file of a partition directory; names that are not
/// segment file names as Kafka writes them are ignored, as the loader ignores them). Reads
/// only the bytes given; the paths in [`LeftoverDecision::rejected`] are the names given.
///
/// A `.swap` set is installed only when valid (every batch whole with a good CRC, not
/// overlapping, holding every record the segments it replaces cannot lose and nothing they
/// do not hold); otherwise it is refused and the segments it would replace stay. A
/// `.deleted` segment is renamed back when the log would otherwise have a hole holding a
/// record nothing else serves (a tombstone or marker whose batch's delete horizon passed by
/// `now_ms`, the load's clock, is not such a record: a purge round drops it).
///
/// ```
/// use seglog::{BatchBuilder, decide_leftovers};
///
/// let mut batch = BatchBuilder::new(0);
/// batch.append(1_700_000_000_000, Some(b"k"), Some(b"v"), &[]);
/// let segment = batch.build()?;
/// let files = [
///     ("00000000000000000000.log", &segment[..]),
///     // A swap of garbage: refused, the segment stays.
///     ("00000000000000000000.log.swap", &[1u8, 2, 3][..]),
/// ];
/// let decision = decide_leftovers(files, 1_700_000_000_000);
/// assert_eq!(decision.segments[&0], "00000000000000000000.log");
/// assert_eq!(decision.rejected.len(), 1);
/// assert!(decision.installed.is_empty() && decision.removed.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn decide_leftovers<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    now_ms: i64,
) -> LeftoverDecision {
    let mut listing = Vec::new();
    let mut memory = HashMap::new();
    for (name, bytes) in files {
        let path = PathBuf::from(name);
        let Some(parsed) = parse_file_name(&path) else {
            continue;
        };
        // The loader's listing: canonical names only, no snapshot, no base offset i64::MAX.
        let canonical = file_name(parsed.base_offset, parsed.kind) == name
            && parsed.base_offset < i64::MAX
            && parsed.kind.file_type != FileType::Snapshot;
        if canonical {
            listing.push((path.clone(), parsed));
            memory.insert(path, bytes);
        }
    }
    let plan = Plan::decide(Path::new(""), &listing, now_ms, &Memory(memory));
    let name = |path: &Path| path.to_string_lossy().into_owned();
    let mut removed: Vec<String> = plan.rollback.iter().map(|p| name(p)).collect();
    for path in &plan.expire {
        // A replaced live file is renamed `.deleted` first: named by its live name.
        let live = plan.displaced.iter().find(|(_, to)| to == path);
        removed.push(name(live.map_or(path, |(from, _)| from)));
    }
    LeftoverDecision {
        segments: plan
            .segments
            .iter()
            .map(|(base, suffix)| (*base, file_name(*base, FileKind::LOG.with_suffix(*suffix))))
            .collect(),
        rejected: plan.rejected,
        installed: plan.install.iter().map(|(from, _)| name(from)).collect(),
        removed,
    }
}

#[cfg(test)]
mod tests {
    use seglog_records::BatchBuilder;

    use super::*;
    use crate::SwapProblem;

    /// One batch of `records` (key, value) at `base`.
    fn batch(base: i64, records: &[(&str, &str)]) -> Vec<u8> {
        let mut builder = BatchBuilder::new(base);
        for (i, (key, value)) in records.iter().enumerate() {
            builder.append(
                1_000 + i as i64,
                Some(key.as_bytes()),
                Some(value.as_bytes()),
                &[],
            );
        }
        builder.build().unwrap().to_vec()
    }

    fn names(bases: &[(i64, &str)]) -> BTreeMap<i64, String> {
        bases.iter().map(|(b, n)| (*b, (*n).to_owned())).collect()
    }

    #[test]
    fn a_valid_swap_is_installed_and_an_invalid_one_refused() {
        // Segment 0: a=1, b=1, a=2; segment 3: b=2. The cleaner keeps a=2 of segment 0.
        let old = batch(0, &[("a", "1"), ("b", "1"), ("a", "2")]);
        let later = batch(3, &[("b", "2")]);
        let mut cleaned = BatchBuilder::new(2);
        cleaned.append(1_002, Some(b"a"), Some(b"2"), &[]);
        let cleaned = cleaned.build().unwrap().to_vec();
        let files = |swap: &[u8]| {
            vec![
                ("00000000000000000000.log".to_owned(), old.clone()),
                ("00000000000000000003.log".to_owned(), later.clone()),
                ("00000000000000000000.log.swap".to_owned(), swap.to_vec()),
            ]
        };
        let decide = |files: &[(String, Vec<u8>)]| {
            decide_leftovers(
                files.iter().map(|(n, b)| (n.as_str(), b.as_slice())),
                1_700_000_000_000,
            )
        };

        let installed = decide(&files(&cleaned));
        assert_eq!(
            installed.segments,
            names(&[
                (0, "00000000000000000000.log.swap"),
                (3, "00000000000000000003.log")
            ])
        );
        assert!(installed.rejected.is_empty());
        assert_eq!(installed.installed, ["00000000000000000000.log.swap"]);
        assert_eq!(installed.removed, ["00000000000000000000.log"]);

        // A swap that lost a=2 (the latest record of its key) is refused.
        let lossy = batch(0, &[("a", "1")]);
        let refused = decide(&files(&lossy));
        assert_eq!(
            refused.segments,
            names(&[
                (0, "00000000000000000000.log"),
                (3, "00000000000000000003.log")
            ])
        );
        assert_eq!(refused.rejected.len(), 1);
        assert_eq!(
            refused.rejected[0].path,
            PathBuf::from("00000000000000000000.log.swap")
        );
        assert!(refused.installed.is_empty() && refused.removed.is_empty());
    }

    /// Found by the `swap_recovery` fuzz corpus in the stable harness (its input is a
    /// regression seed): an empty `.log.swap` beyond the log end was installed as a segment
    /// and moved the log end there.
    #[test]
    fn an_empty_swap_that_replaces_nothing_is_refused() {
        let live = batch(0, &[("a", "1")]);
        let files = [
            ("00000000000000000000.log", live.as_slice()),
            ("00000000000000000005.log.swap", &[][..]),
        ];
        let decision = decide_leftovers(files, 1_700_000_000_000);
        assert_eq!(decision.segments, names(&[(0, "00000000000000000000.log")]));
        assert_eq!(decision.rejected.len(), 1);
        assert_eq!(decision.rejected[0].problem, SwapProblem::ReplacesNothing);
        assert!(decision.installed.is_empty());
    }

    #[test]
    fn a_needed_middle_deleted_segment_is_renamed_back_and_names_not_kafkas_are_ignored() {
        let files = [
            ("00000000000000000000.log", batch(0, &[("a", "1")])),
            ("00000000000000000001.log.deleted", batch(1, &[("b", "1")])),
            ("00000000000000000002.log", batch(2, &[("c", "1")])),
            ("1.log.swap", vec![0; 10]),
            ("00000000000000000002.snapshot", vec![0; 10]),
        ];
        let decision = decide_leftovers(
            files.iter().map(|(n, b)| (*n, b.as_slice())),
            1_700_000_000_000,
        );
        assert_eq!(
            decision.segments,
            names(&[
                (0, "00000000000000000000.log"),
                (1, "00000000000000000001.log.deleted"),
                (2, "00000000000000000002.log"),
            ])
        );
        assert!(decision.rejected.is_empty() && decision.removed.is_empty());
    }
}
