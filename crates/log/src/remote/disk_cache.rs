//! [`DiskIndexCache`]: remote segments' indexes kept on disk under the partition directory
//! (`remote-log-index-cache/`), behind the in-memory [`super::IndexCache`], so a reopened log
//! does not fetch them again. Mirrors Kafka 4.4's `RemoteIndexCache` (CFR of kafka-storage
//! 4.4.0): the same file names (`<start offset>_<segment id>.index`, `.timeindex`,
//! `.txnindex`; an empty `.txnindex` for a segment without one), a `.tmp` stage while a file is
//! written and a `.deleted` stage for an evicted one, both removed when the cache opens, and a
//! bound in bytes (least recently used first out).
//!
//! Crash safety: a file is written as `NAME.tmp`, fsynced, then renamed to `NAME`; a crash
//! leaves at worst a `.tmp` (removed at the next open, never read) or a `.deleted` (removed).
//! Every cached file is checked against its segment before it is used (sizes, entry order,
//! offsets inside the segment, positions inside its `.log`); one that fails is deleted and the
//! index is fetched again. I/O errors of the cache are never the reader's: the read goes on with
//! the fetched bytes and the cache is skipped (`tracing` warns).

use std::collections::VecDeque;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use seglog_index_core::{OffsetEntry, TimeEntry};
use seglog_segment::AbortedTxn;

use super::{RemoteIndexKind, RemoteSegment, RemoteSegmentId};

/// The cache's directory in the partition directory (Kafka's `RemoteIndexCache.DIR_NAME`).
pub const REMOTE_INDEX_CACHE_DIR: &str = "remote-log-index-cache";

/// The default bound of a log's on-disk index cache: 256 MiB (Kafka's
/// `remote.log.index.file.cache.total.size.bytes` is 1 GiB for a whole broker).
pub const DEFAULT_DISK_INDEX_CACHE_BYTES: u64 = 256 * 1024 * 1024;

const TMP_SUFFIX: &str = ".tmp";
const DELETED_SUFFIX: &str = ".deleted";

/// The indexes on disk, least recently used first, with their total size.
#[derive(Debug)]
pub(crate) struct DiskIndexCache {
    dir: PathBuf,
    entries: VecDeque<(String, u64)>,
    bytes: u64,
    capacity_bytes: u64,
}

impl DiskIndexCache {
    /// Opens (creating) the cache in `partition_dir`: `.tmp` and `.deleted` files are removed,
    /// the other files of Kafka's names are taken in (oldest modification first) up to
    /// `capacity_bytes`, the rest evicted. Files with other names are left alone.
    ///
    /// # Errors
    /// The I/O error (with its path) when the directory cannot be created or listed.
    pub(crate) fn open(
        partition_dir: &Path,
        capacity_bytes: u64,
    ) -> Result<Self, (PathBuf, std::io::Error)> {
        let dir = partition_dir.join(REMOTE_INDEX_CACHE_DIR);
        fs::create_dir_all(&dir).map_err(|e| (dir.clone(), e))?;
        let mut found = Vec::new();
        for entry in fs::read_dir(&dir).map_err(|e| (dir.clone(), e))? {
            let entry = entry.map_err(|e| (dir.clone(), e))?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if name.ends_with(TMP_SUFFIX) || name.ends_with(DELETED_SUFFIX) {
                remove(&entry.path());
                continue;
            }
            if parse_name(&name).is_none() {
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            if !meta.is_file() {
                continue;
            }
            let modified = meta.modified().ok();
            found.push((modified, name, meta.len()));
        }
        found.sort();
        let mut cache = Self {
            dir,
            entries: VecDeque::new(),
            bytes: 0,
            capacity_bytes,
        };
        for (_, name, len) in found {
            cache.bytes += len;
            cache.entries.push_back((name, len));
        }
        cache.evict_to(capacity_bytes);
        Ok(cache)
    }

    /// The cached index of `kind` of `segment` when it is on disk and passes its checks
    /// (marked most recently used); a file that fails them is deleted (`None`: fetch it).
    pub(crate) fn get(
        &mut self,
        segment: &RemoteSegment,
        kind: RemoteIndexKind,
    ) -> Option<Vec<u8>> {
        let name = file_name(segment, kind)?;
        let i = self.entries.iter().position(|(n, _)| *n == name)?;
        let path = self.dir.join(&name);
        let bytes = match fs::read(&path) {
            Ok(bytes) if check(segment, kind, &bytes).is_ok() => bytes,
            Ok(bytes) => {
                let problem = check(segment, kind, &bytes).err().unwrap_or_default();
                tracing::warn!(path = %path.display(), reason = problem, "a cached remote index is damaged: fetching it again");
                self.evict(i);
                return None;
            }
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "a cached remote index cannot be read: fetching it again");
                self.evict(i);
                return None;
            }
        };
        if let Some(entry) = self.entries.remove(i) {
            self.entries.push_back(entry);
        }
        Some(bytes)
    }

    /// Stores `bytes` as the index of `kind` of `segment` (`.tmp`, fsync, rename), evicting the
    /// least recently used files to stay within the bound. Indexes larger than the bound, and
    /// kinds Kafka's cache does not keep, are not stored; an I/O error only skips the cache.
    pub(crate) fn put(&mut self, segment: &RemoteSegment, kind: RemoteIndexKind, bytes: &[u8]) {
        let Some(name) = file_name(segment, kind) else {
            return;
        };
        let len = bytes.len() as u64;
        if len > self.capacity_bytes {
            return;
        }
        if let Some(i) = self.entries.iter().position(|(n, _)| *n == name) {
            self.evict(i);
        }
        self.evict_to(self.capacity_bytes - len);
        let path = self.dir.join(&name);
        let tmp = self.dir.join(format!("{name}{TMP_SUFFIX}"));
        let written = (|| {
            let mut file = fs::File::create(&tmp)?;
            file.write_all(bytes)?;
            file.sync_all()?;
            fs::rename(&tmp, &path)
        })();
        if let Err(e) = written {
            tracing::warn!(path = %tmp.display(), error = %e, "cannot write a remote index to the cache");
            remove(&tmp);
            return;
        }
        self.bytes += len;
        self.entries.push_back((name, len));
    }

    /// Bytes on disk (for the tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Evicts least recently used files until at most `target` bytes are left.
    fn evict_to(&mut self, target: u64) {
        while self.bytes > target && !self.entries.is_empty() {
            self.evict(0);
        }
    }

    /// Kafka's two steps: rename to `.deleted`, then unlink (a crash between them leaves a
    /// `.deleted` file, removed at the next open).
    fn evict(&mut self, i: usize) {
        let Some((name, len)) = self.entries.remove(i) else {
            return;
        };
        self.bytes -= len;
        let path = self.dir.join(&name);
        let deleted = self.dir.join(format!("{name}{DELETED_SUFFIX}"));
        match fs::rename(&path, &deleted) {
            Ok(()) => remove(&deleted),
            Err(_) => remove(&path),
        }
    }
}

fn remove(path: &Path) {
    if let Err(e) = fs::remove_file(path)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(path = %path.display(), error = %e, "cannot remove a remote index cache file");
    }
}

/// Kafka's name of the cached index (`RemoteIndexCache.generateFileNamePrefixForIndex`: the
/// start offset in decimal, `_`, the segment id as `Uuid.toString`), `None` for the kinds it
/// does not cache (producer snapshot, leader epochs).
pub(crate) fn file_name(segment: &RemoteSegment, kind: RemoteIndexKind) -> Option<String> {
    let suffix = match kind {
        RemoteIndexKind::Offset => ".index",
        RemoteIndexKind::Time => ".timeindex",
        RemoteIndexKind::Transaction => ".txnindex",
        RemoteIndexKind::ProducerSnapshot | RemoteIndexKind::LeaderEpoch => return None,
    };
    Some(format!("{}_{}{suffix}", segment.base_offset, segment.id))
}

/// Parses a name of Kafka's form: the start offset, the segment id, the kind.
fn parse_name(name: &str) -> Option<(i64, RemoteSegmentId, RemoteIndexKind)> {
    let (stem, suffix) = name.split_at(name.find('.')?);
    let kind = match suffix {
        ".index" => RemoteIndexKind::Offset,
        ".timeindex" => RemoteIndexKind::Time,
        ".txnindex" => RemoteIndexKind::Transaction,
        _ => return None,
    };
    let (offset, id) = stem.split_once('_')?;
    if offset.is_empty() || !offset.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((offset.parse().ok()?, id.parse().ok()?, kind))
}

/// Checks a cached index against its segment (Kafka's `sanityCheck` and more): whole entries;
/// offset index entries strictly increasing in offset and position, inside the segment's
/// offsets and its `.log`; time index entries inside its offsets, in order; transaction
/// index entries of version 0 with `first <= last`. A zero tail (an untrimmed upload) is
/// accepted where the reads accept it.
pub(crate) fn check(
    segment: &RemoteSegment,
    kind: RemoteIndexKind,
    bytes: &[u8],
) -> Result<(), &'static str> {
    let span = segment.end_offset - segment.base_offset;
    match kind {
        RemoteIndexKind::Offset => {
            if !bytes.len().is_multiple_of(OffsetEntry::SIZE) {
                return Err("not whole offset index entries");
            }
            let mut last: Option<OffsetEntry> = None;
            for (i, chunk) in bytes.chunks_exact(OffsetEntry::SIZE).enumerate() {
                let mut b = [0; OffsetEntry::SIZE];
                b.copy_from_slice(chunk);
                let e = OffsetEntry::decode(&b);
                if i > 0 && e.relative_offset == 0 && e.position == 0 {
                    return zero_tail(&bytes[i * OffsetEntry::SIZE..]);
                }
                let position_ok =
                    u64::try_from(e.position).is_ok_and(|p| p < segment.size_in_bytes.max(1));
                if e.relative_offset < 0 || i64::from(e.relative_offset) > span || !position_ok {
                    return Err("an offset index entry outside the segment");
                }
                if last.is_some_and(|l| {
                    l.relative_offset >= e.relative_offset || l.position >= e.position
                }) {
                    return Err("offset index entries out of order");
                }
                last = Some(e);
            }
            Ok(())
        }
        RemoteIndexKind::Time => {
            if !bytes.len().is_multiple_of(TimeEntry::SIZE) {
                return Err("not whole time index entries");
            }
            let mut last: Option<TimeEntry> = None;
            for (i, chunk) in bytes.chunks_exact(TimeEntry::SIZE).enumerate() {
                let mut b = [0; TimeEntry::SIZE];
                b.copy_from_slice(chunk);
                let e = TimeEntry::decode(&b);
                if i > 0 && e.relative_offset == 0 && e.timestamp_ms == 0 {
                    return zero_tail(&bytes[i * TimeEntry::SIZE..]);
                }
                if e.relative_offset < 0 || i64::from(e.relative_offset) > span {
                    return Err("a time index entry outside the segment");
                }
                if last.is_some_and(|l| {
                    l.relative_offset > e.relative_offset || l.timestamp_ms > e.timestamp_ms
                }) {
                    return Err("time index entries out of order");
                }
                last = Some(e);
            }
            Ok(())
        }
        RemoteIndexKind::Transaction => {
            if !bytes.len().is_multiple_of(AbortedTxn::SIZE) {
                return Err("not whole transaction index entries");
            }
            for chunk in bytes.chunks_exact(AbortedTxn::SIZE) {
                let mut b = [0; AbortedTxn::SIZE];
                b.copy_from_slice(chunk);
                let Ok(e) = AbortedTxn::decode(&b) else {
                    return Err("a transaction index entry of an unknown version");
                };
                if chunk[..2] != [0, 0] || e.first_offset > e.last_offset || e.producer_id < 0 {
                    return Err("a transaction index entry that is not one");
                }
            }
            Ok(())
        }
        RemoteIndexKind::ProducerSnapshot | RemoteIndexKind::LeaderEpoch => Ok(()),
    }
}

fn zero_tail(tail: &[u8]) -> Result<(), &'static str> {
    if tail.iter().all(|&b| b == 0) {
        Ok(())
    } else {
        Err("an entry after the zero tail")
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    fn segment(n: u8) -> RemoteSegment {
        RemoteSegment {
            base_offset: i64::from(n) * 100,
            end_offset: i64::from(n) * 100 + 99,
            max_timestamp_ms: 0,
            size_in_bytes: 10_000,
            leader_epochs: vec![],
            id: RemoteSegmentId::from_bytes([n; 16]),
        }
    }

    /// An offset index of `entries` entries, 8 bytes each.
    fn index(entries: i32) -> Vec<u8> {
        (0..entries)
            .flat_map(|i| {
                OffsetEntry {
                    relative_offset: i + 1,
                    position: (i + 1) * 100,
                }
                .encode()
            })
            .collect()
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut n: Vec<String> = fs::read_dir(dir.join(REMOTE_INDEX_CACHE_DIR))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        n.sort();
        n
    }

    #[test]
    fn the_disk_cache_stays_within_its_bound_evicting_the_least_recently_used() {
        let dir = tempfile::tempdir().unwrap();
        let k = RemoteIndexKind::Offset;
        let mut cache = DiskIndexCache::open(dir.path(), 100).unwrap();
        cache.put(&segment(1), k, &index(5));
        cache.put(&segment(2), k, &index(5));
        assert_eq!(cache.get(&segment(1), k), Some(index(5)));
        cache.put(&segment(3), k, &index(5));
        // 2 was the least recently used; the bound holds on disk too.
        assert_eq!(cache.get(&segment(2), k), None);
        assert_eq!(
            names(dir.path()),
            [
                "100_AQEBAQEBAQEBAQEBAQEBAQ.index",
                "300_AwMDAwMDAwMDAwMDAwMDAw.index"
            ]
        );
        assert_eq!(cache.bytes(), 80);
        // Larger than the bound: not stored, nothing evicted for it.
        cache.put(&segment(4), k, &index(13));
        assert_eq!(cache.bytes(), 80);
        // Kinds Kafka's cache does not keep are not stored.
        cache.put(&segment(5), RemoteIndexKind::LeaderEpoch, b"0\n0\n");
        assert_eq!(names(dir.path()).len(), 2);
        drop(cache);
        // Reopened with a smaller bound: the oldest file goes; foreign files stay.
        fs::write(dir.path().join(REMOTE_INDEX_CACHE_DIR).join("notes"), b"x").unwrap();
        let mut cache = DiskIndexCache::open(dir.path(), 50).unwrap();
        assert_eq!(cache.bytes(), 40);
        assert_eq!(names(dir.path()).len(), 2);
        assert!(cache.get(&segment(1), k).is_some() ^ cache.get(&segment(3), k).is_some());
    }

    #[test]
    fn the_checks_refuse_what_a_segment_cannot_have() {
        let s = segment(1);
        let off = RemoteIndexKind::Offset;
        assert!(check(&s, off, &index(3)).is_ok());
        assert!(
            check(&s, off, &[index(3), vec![0; 16]].concat()).is_ok(),
            "a zero tail"
        );
        assert!(check(&s, off, &index(3)[..20]).is_err(), "torn");
        let past_end = OffsetEntry {
            relative_offset: 100,
            position: 0,
        }
        .encode();
        assert!(
            check(&s, off, &past_end).is_err(),
            "offset past the segment's end"
        );
        let past_log = OffsetEntry {
            relative_offset: 1,
            position: 10_000,
        }
        .encode();
        assert!(check(&s, off, &past_log).is_err(), "position past the .log");
        let mut backwards = index(2);
        backwards.extend(index(1));
        assert!(check(&s, off, &backwards).is_err(), "out of order");
        let t = |ts: i64, rel: i32| {
            TimeEntry {
                timestamp_ms: ts,
                relative_offset: rel,
            }
            .encode()
        };
        let time = RemoteIndexKind::Time;
        assert!(check(&s, time, &[t(5, 1), t(6, 2)].concat()).is_ok());
        assert!(check(&s, time, &[t(6, 1), t(5, 2)].concat()).is_err());
        assert!(check(&s, time, &t(5, 200)).is_err());
        let txn = RemoteIndexKind::Transaction;
        let entry = |first, last| {
            AbortedTxn {
                producer_id: 3,
                first_offset: first,
                last_offset: last,
                last_stable_offset: last + 1,
            }
            .encode()
        };
        assert!(check(&s, txn, &[]).is_ok());
        assert!(check(&s, txn, &entry(100, 120)).is_ok());
        assert!(check(&s, txn, &entry(120, 100)).is_err());
        assert!(check(&s, txn, &entry(100, 120)[..30]).is_err());
    }

    #[test]
    fn names_are_kafkas_and_parse_back() {
        let s = segment(2);
        let name = file_name(&s, RemoteIndexKind::Time).unwrap();
        assert_eq!(name, "200_AgICAgICAgICAgICAgICAg.timeindex");
        assert_eq!(parse_name(&name), Some((200, s.id, RemoteIndexKind::Time)));
        assert_eq!(parse_name("200_AgICAgICAgICAgICAgICAg.index.tmp"), None);
        assert_eq!(parse_name("x_AgICAgICAgICAgICAgICAg.index"), None);
    }
}
