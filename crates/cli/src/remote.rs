//! A partition's remote tier, for the commands that reach one: `seglog tier`, and `read`,
//! `info` and `verify` with `--store URL`. The URL and the topic id (given, or from the
//! directory's `partition.metadata`) become an [`ObjectTier`] in Kafka's layout
//! (`<topic>-<partition>-<topicId>`), the partition named by the directory.
//!
//! The read-only commands attach the tier to a read-only log ([`attach`]): nothing in the
//! store is written (no recovery of abandoned copies: that is `seglog tier`'s), and reads
//! below the local log start go to the remote segments. Without `--store`, a partition whose
//! checkpoint says older data is remote ([`seglog::Log::unattached_remote_start`]) is said to
//! be so ([`remote_part_note`]), never reported as lost data.

use std::path::Path;
use std::sync::Arc;

use seglog::{Log, parse_partition_dir_name};
use seglog_tiered::{Layout, ObjectTier, TopicIdPartition, Uuid, open_store};

use crate::cli::RemoteArgs;
use crate::error::Error;

/// A partition's remote tier and how it was named.
#[derive(Debug)]
pub(crate) struct PartitionRemote {
    /// The store URL.
    pub(crate) store: String,
    /// The topic id in the object names.
    pub(crate) topic_id: Uuid,
    /// The tier.
    pub(crate) tier: Arc<ObjectTier>,
}

/// Opens the remote tier of the partition in `dir` (named `<topic>-<partition>`) in the store
/// `store`, under `topic_id` or the directory's `partition.metadata` topic id.
///
/// # Errors
/// [`Error::Usage`] for a directory name that is not `<topic>-<partition>`, a missing topic
/// id, or a bad id or URL; [`Error::Tier`] when the store cannot be opened.
pub(crate) fn open_remote(
    dir: &Path,
    store: &str,
    topic_id: Option<&str>,
) -> Result<PartitionRemote, Error> {
    let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let parsed = parse_partition_dir_name(name).map_err(|_| Error::Usage {
        arg: "DIR",
        reason: format!("{name:?} is not a <topic>-<partition> directory name"),
    })?;
    let topic_id = match topic_id {
        Some(text) => Uuid::parse(text)?,
        None => topic_id_of(dir)?,
    };
    let tp = TopicIdPartition::new(
        &parsed.topic_partition.topic,
        parsed.topic_partition.partition,
        topic_id,
    )?;
    let opened = open_store(store)?;
    let tier = ObjectTier::new(opened.store, Layout::new(opened.root, tp), 0)?;
    Ok(PartitionRemote {
        store: store.to_owned(),
        topic_id,
        tier: Arc::new(tier),
    })
}

/// Attaches the tier `args` names (when `--store` is given) to `log`, the read-only log of
/// `dir`: from then on its log start offset is the whole log's and reads below the local log
/// start go to the remote segments.
///
/// # Errors
/// As [`open_remote`]; [`Error::Log`] when the store's segments cannot be listed.
pub(crate) fn attach(
    log: &Log,
    dir: &Path,
    args: &RemoteArgs,
) -> Result<Option<PartitionRemote>, Error> {
    let Some(store) = args.store.as_deref() else {
        return Ok(None);
    };
    let remote = open_remote(dir, store, args.topic_id.as_deref())?;
    log.set_remote_tier(remote.tier.clone())?;
    Ok(Some(remote))
}

/// The sentence for a log without its tier whose checkpoint says that older data is remote:
/// which offsets, and how to read them.
pub(crate) fn remote_part_note(log: &Log) -> Option<String> {
    let start = log.unattached_remote_start()?;
    Some(format!(
        "offsets {start}..{} are in the partition's remote tier (tiered storage; the log start offset is {start}, the local log start offset {}): give --store URL to reach them",
        log.local_log_start_offset() - 1,
        log.local_log_start_offset()
    ))
}

/// The `topic_id` line of Kafka's `partition.metadata` (`version: 0` / `topic_id: <Uuid>`).
fn topic_id_of(dir: &Path) -> Result<Uuid, Error> {
    let path = dir.join("partition.metadata");
    let text = std::fs::read_to_string(&path).map_err(|_| Error::Usage {
        arg: "--topic-id",
        reason: format!(
            "{} has no partition.metadata: give the topic id",
            dir.display()
        ),
    })?;
    let id = text
        .lines()
        .find_map(|l| l.strip_prefix("topic_id:"))
        .map(str::trim)
        .ok_or_else(|| Error::Usage {
            arg: "--topic-id",
            reason: format!("{} has no topic_id line: give the topic id", path.display()),
        })?;
    Ok(Uuid::parse(id)?)
}
