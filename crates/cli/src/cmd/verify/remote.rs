//! `seglog verify DIR --store URL`: the remote segments of a tiered partition, checked as the
//! local ones are. Every finished segment (`COPY_SEGMENT_FINISHED`) must have its parts
//! (`.log`, `.index`, `.timeindex`, the producer `.snapshot`, the `.leader_epoch_checkpoint`,
//! and the `.txnindex` its metadata says it has); its `.log` is fetched (in ranged reads, to a
//! temporary file: memory stays bounded) and walked batch by batch with the index checks of a
//! local segment, its size must be the metadata's, and the chain of copies a read serves (by
//! the log's leader-epoch lineage: a former leader's overlapping copy is not in it) must follow
//! itself without a gap and reach the local log start. Every problem names the object
//! (`<store URL>/<key>`). Nothing in the store is written.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use seglog::remote::{LineageSegment, RemoteSegment, lineage_chain};
use seglog_segment::{FileKind as LocalKind, file_path};
use seglog_tiered::{
    FileKind, IndexType, RemoteLogSegmentMetadata, RemoteStorageManager, remote_segment,
};

use super::{ProblemKind, Verifier};
use crate::dir::SegmentFiles;
use crate::error::Error;
use crate::log_stream::MAX_SNAPSHOT_BYTES;
use crate::remote::PartitionRemote;

/// Bytes fetched per ranged read of a remote `.log`.
const FETCH_CHUNK: u64 = 8 << 20;

/// Checks every finished remote copy (the redundant ones too: `ObjectTier::finished_copies`),
/// oldest first, before the local ones: the offsets of the walk continue from them. The parts
/// of every copy are checked; the offsets are checked
/// along the chain a read serves (`seglog::remote::lineage_chain` under `epochs`, the log's
/// leader-epoch cache): after an unclean leader election a former leader's copy may overlap
/// the lineage's, and only the lineage's ranges must follow each other and reach the local log
/// start. Returns the last offset of the chain (`None` when it is empty).
///
/// # Errors
/// A store failure other than a missing object (the check cannot be made: exit 2, naming the
/// object); I/O errors of the temporary files.
pub(super) fn check_remote(
    v: &mut Verifier,
    remote: &PartitionRemote,
    remote_start: Option<i64>,
    local_log_start_offset: Option<i64>,
    epochs: &[(i32, i64)],
) -> Result<Option<i64>, Error> {
    let segments = remote.tier.finished_copies()?;
    if segments.is_empty()
        && let (Some(start), Some(local_start)) = (remote_start, local_log_start_offset)
    {
        let prefix = remote.tier.partition_tier().layout().data_prefix();
        v.problem(
            Path::new(&format!("{}/{prefix}", remote.store.trim_end_matches('/'))),
            None,
            ProblemKind::RemoteGap,
            format!(
                "the log start checkpoint says offsets {start}..{} are remote, and the store holds no finished segment of this partition (are the store URL and the topic id right?)",
                local_start - 1
            ),
        );
    }
    let tmp = tempfile::tempdir().map_err(Error::io("create", std::env::temp_dir()))?;
    for segment in &segments {
        let names = ObjectNames::new(remote, segment);
        v.report.remote_segments += 1;
        // Each copy's offsets ascend within it; copies may overlap (a repeated copy, a former
        // leader's), so the order across them is the chain's, checked below.
        v.last_offset = None;
        check_segment(v, remote, segment, &names, tmp.path())?;
    }
    let mut listed: Vec<RemoteSegment> = segments.iter().map(remote_segment).collect();
    listed.sort_by_key(|s| s.base_offset);
    let chain = lineage_chain(&listed, epochs);
    let by_id: HashMap<[u8; 16], &RemoteLogSegmentMetadata> =
        segments.iter().map(|s| (s.segment_id.0, s)).collect();
    let names_of = |range: &LineageSegment| {
        by_id
            .get(range.segment.id.as_bytes())
            .map(|s| ObjectNames::new(remote, s).of(FileKind::Segment))
    };
    let mut previous: Option<&LineageSegment> = None;
    for range in &chain {
        if let Some(prev) = previous
            && range.from != prev.to + 1
            && let Some(object) = names_of(range)
        {
            v.problem(
                &object,
                None,
                ProblemKind::RemoteGap,
                format!(
                    "remote segment {}..={} (served from {}) does not follow the previous remote range of the log's leader-epoch lineage, which ends at {}",
                    range.segment.base_offset, range.segment.end_offset, range.from, prev.to
                ),
            );
        }
        previous = Some(range);
    }
    if let (Some(last), Some(local_start)) = (previous, local_log_start_offset)
        && local_start > last.to + 1
        && let Some(object) = names_of(last)
    {
        v.problem(
            &object,
            None,
            ProblemKind::RemoteGap,
            format!(
                "offsets {}..{} are in neither tier: the last remote range ends at {}, the local log starts at {local_start}",
                last.to + 1,
                local_start - 1,
                last.to
            ),
        );
    }
    Ok(previous.map(|s| s.to))
}

/// The object names of one remote segment's parts, as problems name them.
struct ObjectNames {
    store: String,
    keys: HashMap<FileKind, String>,
}

impl ObjectNames {
    fn new(remote: &PartitionRemote, segment: &RemoteLogSegmentMetadata) -> Self {
        let layout = remote.tier.partition_tier().layout();
        let keys = FileKind::ALL
            .into_iter()
            .map(|kind| {
                let key = layout.data_key(segment.start_offset, segment.segment_id, kind);
                (kind, key.to_string())
            })
            .collect();
        ObjectNames {
            store: remote.store.trim_end_matches('/').to_owned(),
            keys,
        }
    }

    fn of(&self, kind: FileKind) -> PathBuf {
        PathBuf::from(format!("{}/{}", self.store, self.keys[&kind]))
    }
}

/// One remote segment: its parts fetched into `tmp` under local names, walked as a local
/// segment, then every finding renamed to the object it came from.
fn check_segment(
    v: &mut Verifier,
    remote: &PartitionRemote,
    segment: &RemoteLogSegmentMetadata,
    names: &ObjectNames,
    tmp: &Path,
) -> Result<(), Error> {
    let base = segment.start_offset;
    let mut files = SegmentFiles::default();
    let mut renames: HashMap<PathBuf, PathBuf> = HashMap::new();
    let (problems_before, notes_before) = (v.report.problems.len(), v.report.notes.len());
    for kind in RemoteStorageManager::kinds(segment) {
        let object = names.of(kind);
        let fetched = match kind {
            FileKind::Segment => fetch_log(v, remote, segment, &object, tmp),
            _ => fetch_index(remote, segment, kind, tmp),
        };
        let local = match fetched {
            Ok(local) => local,
            Err(Error::Tier(e)) if e.is_not_found() => {
                v.problem(
                    &object,
                    None,
                    ProblemKind::RemotePartMissing,
                    format!(
                        "the {} of remote segment {base}..={} ({}) is missing; its metadata says the copy finished",
                        kind.suffix(),
                        segment.end_offset,
                        segment.segment_id
                    ),
                );
                continue;
            }
            Err(e) => return Err(e),
        };
        renames.insert(local.clone(), object.clone());
        match kind {
            FileKind::Segment => files.log = Some(local),
            FileKind::OffsetIndex => files.index = Some(local),
            FileKind::TimeIndex => files.time_index = Some(local),
            FileKind::TransactionIndex => files.txn_index = Some(local),
            FileKind::ProducerSnapshot => check_snapshot(v, &local, &object),
            FileKind::LeaderEpochCheckpoint => check_epochs(v, &local, &object),
        }
    }
    // Without its `.log` the segment cannot be walked (reported missing above); its indexes
    // are not orphans then, only unused.
    if files.log.is_some() {
        v.segment(base, Some(segment.end_offset + 1), &files)?;
    }
    for problem in &mut v.report.problems[problems_before..] {
        rename(&renames, &mut problem.file);
    }
    for note in &mut v.report.notes[notes_before..] {
        rename(&renames, &mut note.file);
    }
    for local in renames.keys() {
        let _ = std::fs::remove_file(local);
    }
    Ok(())
}

fn rename(renames: &HashMap<PathBuf, PathBuf>, file: &mut PathBuf) {
    if let Some(object) = renames.get(file) {
        file.clone_from(object);
    }
}

/// The remote `.log`, fetched in ranged reads of [`FETCH_CHUNK`] into `tmp/<base>.log`; a
/// size other than the metadata's is a problem.
fn fetch_log(
    v: &mut Verifier,
    remote: &PartitionRemote,
    segment: &RemoteLogSegmentMetadata,
    object: &Path,
    tmp: &Path,
) -> Result<PathBuf, Error> {
    use std::io::Write;
    let path = file_path(tmp, segment.start_offset, LocalKind::LOG);
    let mut file = std::fs::File::create(&path).map_err(Error::io("create", &path))?;
    let size = segment.segment_size_in_bytes;
    let rsm = remote.tier.partition_tier().rsm();
    let mut position = 0u64;
    while position < size {
        let want = FETCH_CHUNK.min(size - position);
        let bytes = remote.tier.block_on(rsm.fetch_log_segment(
            segment,
            position,
            Some(position + want - 1),
        ))?;
        file.write_all(&bytes).map_err(Error::io("write", &path))?;
        position += bytes.len() as u64;
        // A store serves a range past an object's end up to that end: the object is shorter.
        if (bytes.len() as u64) < want {
            break;
        }
    }
    if position != size {
        v.problem(
            object,
            Some(position),
            ProblemKind::RemoteSizeMismatch,
            format!(
                "the object ends at byte {position}; its metadata says the segment has {size} bytes"
            ),
        );
    }
    Ok(path)
}

/// One index part, fetched whole into `tmp` under its local name.
fn fetch_index(
    remote: &PartitionRemote,
    segment: &RemoteLogSegmentMetadata,
    kind: FileKind,
    tmp: &Path,
) -> Result<PathBuf, Error> {
    let (index, path) = match kind {
        FileKind::OffsetIndex => (
            IndexType::Offset,
            file_path(tmp, segment.start_offset, LocalKind::INDEX),
        ),
        FileKind::TimeIndex => (
            IndexType::Timestamp,
            file_path(tmp, segment.start_offset, LocalKind::TIME_INDEX),
        ),
        FileKind::TransactionIndex => (
            IndexType::Transaction,
            file_path(tmp, segment.start_offset, LocalKind::TXN_INDEX),
        ),
        FileKind::ProducerSnapshot => (
            IndexType::ProducerSnapshot,
            tmp.join(format!("{:020}.snapshot", segment.end_offset + 1)),
        ),
        FileKind::LeaderEpochCheckpoint | FileKind::Segment => (
            IndexType::LeaderEpoch,
            tmp.join(seglog::LEADER_EPOCH_CHECKPOINT),
        ),
    };
    let rsm = remote.tier.partition_tier().rsm();
    let bytes = remote.tier.block_on(rsm.fetch_index(segment, index))?;
    std::fs::write(&path, &bytes).map_err(Error::io("write", &path))?;
    Ok(path)
}

/// The uploaded producer snapshot must decode as Kafka's snapshot file.
fn check_snapshot(v: &mut Verifier, local: &Path, object: &Path) {
    let problem = match crate::log_stream::read_bounded(local, MAX_SNAPSHOT_BYTES) {
        Ok(Ok(bytes)) => seglog::ProducerSnapshot::decode(&bytes)
            .err()
            .map(|p| p.to_string()),
        Ok(Err(problem)) => Some(problem),
        Err(e) => Some(e.one_line().to_string()),
    };
    if let Some(message) = problem {
        v.problem(object, None, ProblemKind::CorruptSnapshot, message);
    }
}

/// The uploaded leader-epoch entries must parse as Kafka's checkpoint.
fn check_epochs(v: &mut Verifier, local: &Path, object: &Path) {
    if let Err(e) = seglog::LeaderEpochCheckpointFile::new(local).read() {
        v.problem(
            object,
            None,
            ProblemKind::CorruptLeaderEpochCheckpoint,
            e.to_string(),
        );
    }
}
