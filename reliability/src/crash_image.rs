//! The state a power loss leaves behind, built from the durable images of the I/O seam's test
//! backend.
//!
//! `seglog-faults`' [`FaultInjector`] (the backend a test passes as the log's
//! `LogOpenOptions::io`) keeps, for every `.log` under a directory, its bytes as of the last
//! successful fsync. A [`CrashImage`] combines those with the rest of the directory
//! into one possible post-crash state, under a deliberately hostile model:
//!
//! - **`.log` data**: the durable image. With [`CrashOptions::torn_tails`], also a random part of
//!   the bytes written since (the kernel may write back dirty pages at any time), and the last
//!   page of that part torn (zeros or garbage where the data had not reached the disk).
//! - **Directory entries**: with [`CrashOptions::lose_unsynced_entries`], every segment file
//!   name created since the last directory fsync may be missing, and every rename since then
//!   may be undone (the old name comes back with the content of the new one). Which names are
//!   durable comes from the **durable listing** ([`CrashImage::durable_listing`]):
//!   - *observed* when the directory was fsynced through the injector's handle
//!     ([`seglog_segment::Io::sync_dir`]) since the injector was made
//!     ([`FaultInjector::durable_names`]: the names listed right before the last successful
//!     directory fsync). Then an unlink not yet made durable may be undone
//!     too, for the files whose content is known: a tracked `.log` unlinked since comes back
//!     under its name with its durable image ([`FaultInjector::unlinked_images`]), or under its
//!     name before a `.deleted` rename when that rename was not durable either. An unlinked
//!     index file does not come back (its content is unknown; a missing index is a legal crash
//!     state anyway).
//!   - *modelled* otherwise (the directory was never synced through the seam): the caller
//!     passes a listing it took after an operation that fsyncs the directory, and unlinks are
//!     taken as durable.
//!
//!   Only segment files (`parse_file_name` accepts them) can be lost or brought back this way:
//!   checkpoints and the clean-shutdown marker are always written with a directory fsync.
//! - **Index files** are memory-mapped and written back by the kernel whenever it likes: each
//!   one is left as it is, missing, zero-padded to its preallocated size, or cut short
//!   ([`IndexFate`]).
//! - **Checkpoints and the clean-shutdown marker** are written as temp file, fsync, rename,
//!   directory fsync, so they are either old or new: they are kept as they are. With
//!   [`CrashOptions::leftover_checkpoint_tmp`], a half-written `*.tmp` is left beside them.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;
use std::path::Path;

use rand::Rng;
use seglog_faults::FaultInjector;
use seglog_segment::{FileType, parse_file_name};

/// What happens to each index file in the crash state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexFate {
    /// Every index file is left as it is now.
    AsIs,
    /// Every index file is missing.
    Missing,
    /// Every index file is zero-padded to its preallocated size (never trimmed: KAFKA-1112).
    ZeroTail,
    /// Every index file is cut at a random length (not always a whole entry).
    Truncated,
    /// Each index file gets one of the fates above at random.
    Mixed,
}

/// How hostile the crash is; see the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrashOptions {
    /// Keep a random part of each `.log`'s unsynced bytes, with a torn last page.
    pub torn_tails: bool,
    /// Lose (at random) segment file names created or renamed since the durable listing.
    pub lose_unsynced_entries: bool,
    /// What happens to index files.
    pub index_fate: IndexFate,
    /// Leave a garbage `recovery-point-offset-checkpoint.tmp`.
    pub leftover_checkpoint_tmp: bool,
    /// The preallocated index size (`segment.index.bytes`), for [`IndexFate::ZeroTail`].
    pub max_index_bytes: usize,
}

impl CrashOptions {
    /// Random options: each knob on or off, a random index fate.
    pub fn random(rng: &mut impl Rng, max_index_bytes: usize) -> CrashOptions {
        let fates = [
            IndexFate::AsIs,
            IndexFate::Missing,
            IndexFate::ZeroTail,
            IndexFate::Truncated,
            IndexFate::Mixed,
        ];
        CrashOptions {
            torn_tails: rng.random_bool(0.6),
            lose_unsynced_entries: rng.random_bool(0.5),
            index_fate: fates[rng.random_range(0..fates.len())],
            leftover_checkpoint_tmp: rng.random_bool(0.2),
            max_index_bytes,
        }
    }
}

/// One possible post-crash state of a partition directory: file name to bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CrashImage {
    /// The files of the crashed directory.
    pub files: BTreeMap<String, Vec<u8>>,
}

impl CrashImage {
    /// The names of the regular files in `dir` (taken right after a directory fsync, this is
    /// the durable listing [`CrashImage::capture`] needs).
    ///
    /// # Errors
    /// I/O errors listing `dir`.
    pub fn list_names(dir: &Path) -> io::Result<BTreeSet<String>> {
        let mut names = BTreeSet::new();
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_type()?.is_file()
                && let Some(name) = entry.file_name().to_str()
            {
                names.insert(name.to_owned());
            }
        }
        Ok(names)
    }

    /// The durable listing of `dir` that [`CrashImage::capture`] uses: the one `faults`
    /// observed at the last directory fsync through the seam ([`Listing::Observed`]), else
    /// `modelled` ([`Listing::Modelled`]).
    pub fn durable_listing(
        dir: &Path,
        faults: &FaultInjector,
        modelled: &BTreeSet<String>,
    ) -> Listing {
        match faults.durable_names(dir) {
            Some(names) => Listing::Observed(names),
            None => Listing::Modelled(modelled.clone()),
        }
    }

    /// Builds one post-crash state of the live directory `dir`, whose `.log` files are tracked
    /// by `faults`. The durable listing is the observed one when `faults` has one for `dir`,
    /// else `modelled_names`, the caller's listing as of the last directory fsync (see the
    /// module docs and [`CrashImage::durable_listing`]).
    ///
    /// # Errors
    /// I/O errors reading `dir`.
    pub fn capture(
        dir: &Path,
        faults: &FaultInjector,
        modelled_names: &BTreeSet<String>,
        options: &CrashOptions,
        rng: &mut impl Rng,
    ) -> io::Result<CrashImage> {
        let images: BTreeMap<String, Vec<u8>> = faults
            .durable_images()
            .into_iter()
            .filter(|(path, _)| path.parent() == Some(dir))
            .filter_map(|(path, bytes)| Some((path.file_name()?.to_str()?.to_owned(), bytes)))
            .collect();
        let listing = Self::durable_listing(dir, faults, modelled_names);
        let durable_names = listing.names();
        let now = Self::list_names(dir)?;
        let mut files = BTreeMap::new();
        for name in &now {
            if name == seglog::LOCK_FILE {
                continue;
            }
            let is_segment_file = parse_file_name(Path::new(name)).is_some();
            let mut target = name.clone();
            if options.lose_unsynced_entries && is_segment_file && !durable_names.contains(name) {
                match renamed_from(name, durable_names, &now) {
                    // A lost rename: the old name holds the content.
                    Some(old) if rng.random_bool(0.5) => target = old,
                    Some(_) => {}
                    // A lost create.
                    None if rng.random_bool(0.5) => continue,
                    None => {}
                }
            }
            let current = fs::read(dir.join(name))?;
            let bytes = match images.get(name) {
                Some(durable) => log_bytes(durable, &current, options.torn_tails, rng),
                None => match parse_file_name(Path::new(name)).map(|p| p.kind.file_type) {
                    Some(FileType::Index) => match index_bytes(current, 8, options, rng) {
                        Some(bytes) => bytes,
                        None => continue,
                    },
                    Some(FileType::TimeIndex) => match index_bytes(current, 12, options, rng) {
                        Some(bytes) => bytes,
                        None => continue,
                    },
                    _ => current,
                },
            };
            files.insert(target, bytes);
        }
        if options.lose_unsynced_entries && matches!(listing, Listing::Observed(_)) {
            // Undone unlinks of `.log` files whose content is known.
            for (path, bytes) in faults.unlinked_images() {
                if path.parent() != Some(dir) {
                    continue;
                }
                let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                    continue;
                };
                let back = if durable_names.contains(name) {
                    Some(name.to_owned())
                } else {
                    // Renamed `.deleted` and unlinked, neither durable.
                    name.strip_suffix(".deleted")
                        .filter(|old| durable_names.contains(*old))
                        .map(str::to_owned)
                };
                if let Some(back) = back
                    && !now.contains(&back)
                    && !files.contains_key(&back)
                    && parse_file_name(Path::new(&back)).is_some()
                    && rng.random_bool(0.5)
                {
                    files.insert(back, bytes);
                }
            }
        }
        if options.leftover_checkpoint_tmp {
            let garbage: Vec<u8> = (0..rng.random_range(0..40)).map(|_| rng.random()).collect();
            files.insert(
                format!("{}.tmp", seglog::RECOVERY_POINT_CHECKPOINT),
                garbage,
            );
        }
        Ok(CrashImage { files })
    }

    /// Writes the files into `dir` (created if needed; it should be empty).
    ///
    /// # Errors
    /// I/O errors creating or writing.
    pub fn write_to(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)?;
        for (name, bytes) in &self.files {
            fs::write(dir.join(name), bytes)?;
        }
        Ok(())
    }
}

/// Where a crash image's durable directory listing came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Listing {
    /// Recorded by the fault injector at the last directory fsync through the seam.
    Observed(BTreeSet<String>),
    /// Supplied by the caller (the directory was never fsynced through the seam since the
    /// injector was made).
    Modelled(BTreeSet<String>),
}

impl Listing {
    /// The durable names.
    pub fn names(&self) -> &BTreeSet<String> {
        match self {
            Listing::Observed(names) | Listing::Modelled(names) => names,
        }
    }
}

/// The durable name `name` was renamed from, when the rename is one the log performs
/// (`X` -> `X.deleted`, `X.swap` -> `X`) and `X` is durable but gone now.
fn renamed_from(name: &str, durable: &BTreeSet<String>, now: &BTreeSet<String>) -> Option<String> {
    let candidates = [
        name.strip_suffix(".deleted").map(str::to_owned),
        Some(format!("{name}.swap")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|old| durable.contains(old) && !now.contains(old))
}

/// The crash content of a `.log`: its durable image, plus (torn) some of what was written
/// after it when the file only grew since.
fn log_bytes(durable: &[u8], current: &[u8], torn: bool, rng: &mut impl Rng) -> Vec<u8> {
    let mut bytes = durable.to_vec();
    let appended_only = current.len() > durable.len() && current.starts_with(durable);
    if !torn || !appended_only {
        return bytes;
    }
    let cut = rng.random_range(durable.len()..=current.len());
    bytes.extend_from_slice(&current[durable.len()..cut]);
    if rng.random_bool(0.5) && cut > durable.len() {
        // The last page reached the disk only partly: its end reads as zeros or garbage.
        // (`cut - 1`: a cut on a page boundary tears the page before it.)
        let page_start = ((cut - 1) / 4096 * 4096).max(durable.len());
        let tear = rng.random_range(page_start..cut);
        let zeros = rng.random_bool(0.5);
        for byte in &mut bytes[tear..cut] {
            *byte = if zeros { 0 } else { rng.random() };
        }
    }
    bytes
}

/// The crash content of an index file with `entry_size`-byte entries, or `None` when it is
/// missing.
fn index_bytes(
    mut current: Vec<u8>,
    entry_size: usize,
    options: &CrashOptions,
    rng: &mut impl Rng,
) -> Option<Vec<u8>> {
    let fate = match options.index_fate {
        IndexFate::Mixed => [
            IndexFate::AsIs,
            IndexFate::Missing,
            IndexFate::ZeroTail,
            IndexFate::Truncated,
        ][rng.random_range(0..4)],
        fate => fate,
    };
    match fate {
        IndexFate::AsIs | IndexFate::Mixed => Some(current),
        IndexFate::Missing => None,
        IndexFate::ZeroTail => {
            let full = options.max_index_bytes / entry_size * entry_size;
            if current.len() < full {
                current.resize(full, 0);
            }
            Some(current)
        }
        IndexFate::Truncated => {
            let cut = rng.random_range(0..=current.len());
            current.truncate(cut);
            Some(current)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;
    use seglog_segment::{ActiveSegment, FileKind, SegmentConfig, file_name};

    const LOSE: CrashOptions = CrashOptions {
        torn_tails: false,
        lose_unsynced_entries: true,
        index_fate: IndexFate::AsIs,
        leftover_checkpoint_tmp: false,
        max_index_bytes: 4096,
    };

    /// How many of 40 crash images of `dir` hold `name`, and the bytes of one that does.
    fn survivals(
        dir: &Path,
        faults: &FaultInjector,
        modelled: &BTreeSet<String>,
        name: &str,
    ) -> (usize, Option<Vec<u8>>) {
        let mut rng = StdRng::seed_from_u64(7);
        let mut kept = 0;
        let mut bytes = None;
        for _ in 0..40 {
            let image = CrashImage::capture(dir, faults, modelled, &LOSE, &mut rng).unwrap();
            if let Some(b) = image.files.get(name) {
                kept += 1;
                bytes = Some(b.clone());
            }
        }
        (kept, bytes)
    }

    #[test]
    fn the_observed_listing_decides_which_names_a_crash_may_lose() {
        let dir = tempfile::tempdir().unwrap();
        let faults = FaultInjector::new(dir.path());
        let io = faults.io();
        let config = SegmentConfig {
            io: io.clone(),
            ..SegmentConfig::default()
        };
        let everything = BTreeSet::new(); // the modelled listing: ignored once observed
        io.sync_dir(dir.path()).unwrap(); // observed: empty
        let mut active = ActiveSegment::create(dir.path(), 0, &config).unwrap();
        let ids = [crate::RecordId { stream: 1, seq: 0 }];
        let batch = crate::build_batch(&ids, seglog::Compression::None).unwrap();
        active.append(0, ids[0].timestamp_ms(), 0, &batch).unwrap();
        active.segment().sync_log_data().unwrap();
        let log = file_name(0, FileKind::LOG);
        assert!(matches!(
            CrashImage::durable_listing(dir.path(), &faults, &everything),
            Listing::Observed(names) if names.is_empty()
        ));

        // The data is durable but the name is not: some crashes lose the file.
        let (kept, _) = survivals(dir.path(), &faults, &everything, &log);
        assert!(0 < kept && kept < 40, "kept {kept} of 40");

        // Once the directory is fsynced, no crash loses it.
        io.sync_dir(dir.path()).unwrap();
        let (kept, bytes) = survivals(dir.path(), &faults, &everything, &log);
        assert_eq!(kept, 40);
        assert_eq!(bytes.as_deref(), Some(&batch[..]));

        // An unlink not yet durable may be undone: the file comes back with its durable image.
        let segment = active.seal().unwrap();
        segment.flush().unwrap();
        segment.delete_files().unwrap();
        let (kept, bytes) = survivals(dir.path(), &faults, &everything, &log);
        assert!(0 < kept && kept < 40, "kept {kept} of 40");
        assert_eq!(bytes.as_deref(), Some(&batch[..]));
        io.sync_dir(dir.path()).unwrap();
        assert_eq!(survivals(dir.path(), &faults, &everything, &log).0, 0);
    }

    #[test]
    fn without_an_observed_listing_the_modelled_one_is_used() {
        let dir = tempfile::tempdir().unwrap();
        let faults = FaultInjector::new(dir.path());
        let config = SegmentConfig {
            io: faults.io(),
            ..SegmentConfig::default()
        };
        let active = ActiveSegment::create(dir.path(), 0, &config).unwrap();
        let log = file_name(0, FileKind::LOG);
        let modelled = CrashImage::list_names(dir.path()).unwrap();
        assert!(matches!(
            CrashImage::durable_listing(dir.path(), &faults, &modelled),
            Listing::Modelled(_)
        ));
        assert_eq!(survivals(dir.path(), &faults, &modelled, &log).0, 40);
        let (kept, _) = survivals(dir.path(), &faults, &BTreeSet::new(), &log);
        assert!(0 < kept && kept < 40, "kept {kept} of 40");
        drop(active);
    }
}
