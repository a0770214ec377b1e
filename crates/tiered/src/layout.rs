//! Object names: Kafka's `LocalTieredStorage` layout (`RemoteTopicPartitionDirectory`,
//! `RemoteLogSegmentFileset`) for the segment data, and seglog's metadata records beside it.
//!
//! ```text
//! <root>/kafka-tiered-storage/<topic>-<partition>-<topicId>/<20-digit start>-<segmentId>.log
//!                                                                              .index
//!                                                                              .timeindex
//!                                                                              .txnindex (if any)
//!                                                                              .snapshot
//!                                                                              .leader_epoch_checkpoint
//! <root>/seglog-remote-log-metadata/<topic>-<partition>-<topicId>/<20-digit start>-<segmentId>/<slot>.json
//! ```
//!
//! The data half is byte for byte what Kafka's `LocalTieredStorage` reads when configured with
//! `dir=<root>` (it appends `kafka-tiered-storage` itself). The metadata lives in a sibling tree
//! because `LocalTieredStorage.traverse` parses every file in a partition directory as a segment
//! file and fails on anything else (docs/format.md, "Remote tier").

use std::fmt;

use object_store::path::Path;

use crate::uuid::UUID_TEXT_LEN;
use crate::{Error, Result, Uuid};

/// The directory `LocalTieredStorage` keeps under its configured `dir`.
pub const DATA_ROOT: &str = "kafka-tiered-storage";
/// seglog's metadata tree (not Kafka's: Kafka keeps segment metadata in a topic).
pub const METADATA_ROOT: &str = "seglog-remote-log-metadata";

/// A partition as Kafka's `TopicIdPartition` names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TopicIdPartition {
    /// The topic id.
    pub topic_id: Uuid,
    /// The topic name (Kafka's legal characters: `[a-zA-Z0-9._-]`).
    pub topic: String,
    /// The partition number.
    pub partition: i32,
}

impl TopicIdPartition {
    /// A partition; the topic name must use Kafka's legal characters.
    ///
    /// # Errors
    /// [`Error::BadName`] for an empty topic, one with other characters, or a negative partition.
    pub fn new(topic: &str, partition: i32, topic_id: Uuid) -> Result<TopicIdPartition> {
        let bad = |reason| Error::BadName {
            name: topic.to_owned(),
            what: "topic",
            reason,
        };
        if topic.is_empty() || topic.len() > 249 {
            return Err(bad("a topic name is 1 to 249 characters"));
        }
        if !topic.bytes().all(is_topic_char) {
            return Err(bad("a topic name is made of [a-zA-Z0-9._-]"));
        }
        if partition < 0 {
            return Err(bad("a partition number is not negative"));
        }
        Ok(TopicIdPartition {
            topic_id,
            topic: topic.to_owned(),
            partition,
        })
    }

    /// `RemoteTopicPartitionDirectory`'s name: `<topic>-<partition>-<topicId>`.
    pub fn directory_name(&self) -> String {
        format!("{}-{}-{}", self.topic, self.partition, self.topic_id)
    }

    /// Parses a directory name as `RemoteTopicPartitionDirectory.openExistingTopicPartitionDirectory`
    /// does (`([a-zA-Z0-9._-]+)-(\d+)-([a-zA-Z0-9_-]{22})`).
    ///
    /// # Errors
    /// [`Error::BadName`] when the name does not have that form.
    pub fn parse_directory_name(name: &str) -> Result<TopicIdPartition> {
        let bad = |reason| Error::BadName {
            name: name.to_owned(),
            what: "partition directory",
            reason,
        };
        if name.len() < UUID_TEXT_LEN + 4 || !name.is_char_boundary(name.len() - UUID_TEXT_LEN) {
            return Err(bad("too short for <topic>-<partition>-<topicId>"));
        }
        let (head, id) = name.split_at(name.len() - UUID_TEXT_LEN);
        let topic_id = Uuid::parse(id).map_err(|_| bad("the last 22 characters are not a Uuid"))?;
        let head = head
            .strip_suffix('-')
            .ok_or_else(|| bad("no '-' before the topic id"))?;
        let dash = head
            .rfind('-')
            .ok_or_else(|| bad("no '-' before the partition"))?;
        let (topic, partition) = (&head[..dash], &head[dash + 1..]);
        if partition.is_empty() || !partition.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad("the partition is not a number"));
        }
        let partition: i32 = partition
            .parse()
            .map_err(|_| bad("the partition is out of range"))?;
        TopicIdPartition::new(topic, partition, topic_id)
            .map_err(|_| bad("the topic is not a legal topic name"))
    }
}

fn is_topic_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')
}

/// The six parts of a remote segment (`RemoteLogSegmentFileset.RemoteLogSegmentFileType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileKind {
    /// `.log`: the records.
    Segment,
    /// `.index`: the offset index.
    OffsetIndex,
    /// `.timeindex`: the time index.
    TimeIndex,
    /// `.txnindex`: the aborted transactions (optional: only when the segment has any).
    TransactionIndex,
    /// `.leader_epoch_checkpoint`: the leader-epoch entries up to the next segment's base.
    LeaderEpochCheckpoint,
    /// `.snapshot`: the producer snapshot at the next segment's base offset.
    ProducerSnapshot,
}

impl FileKind {
    /// Every kind, in the order a copy uploads them (the `.log` first, as Kafka's
    /// `RemoteLogSegmentFileset.copy`; seglog uploads the epochs before the snapshot as Kafka).
    pub const ALL: [FileKind; 6] = [
        FileKind::Segment,
        FileKind::OffsetIndex,
        FileKind::TimeIndex,
        FileKind::TransactionIndex,
        FileKind::LeaderEpochCheckpoint,
        FileKind::ProducerSnapshot,
    ];

    /// The file name suffix.
    pub fn suffix(self) -> &'static str {
        match self {
            FileKind::Segment => ".log",
            FileKind::OffsetIndex => ".index",
            FileKind::TimeIndex => ".timeindex",
            FileKind::TransactionIndex => ".txnindex",
            FileKind::LeaderEpochCheckpoint => ".leader_epoch_checkpoint",
            FileKind::ProducerSnapshot => ".snapshot",
        }
    }

    /// Whether a fileset may lack it (only the transaction index).
    pub fn is_optional(self) -> bool {
        self == FileKind::TransactionIndex
    }

    fn from_suffix(suffix: &str) -> Option<FileKind> {
        FileKind::ALL
            .into_iter()
            .find(|kind| kind.suffix() == suffix)
    }
}

/// One remote segment file's name: `<20-digit start offset>-<segment id><suffix>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SegmentFileName {
    /// The segment's start offset.
    pub start_offset: i64,
    /// The remote segment id.
    pub id: Uuid,
    /// Which part.
    pub kind: FileKind,
}

impl fmt::Display for SegmentFileName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}",
            segment_stem(self.start_offset, self.id),
            self.kind.suffix()
        )
    }
}

/// `<20-digit start offset>-<segment id>`: `LogFileUtils.filenamePrefixFromOffset` and
/// `Uuid.toString`, as `RemoteLogSegmentFileType.toFilename` joins them.
pub fn segment_stem(start_offset: i64, id: Uuid) -> String {
    format!("{start_offset:020}-{id}")
}

/// Parses a segment file name as `RemoteLogSegmentFileType` does
/// (`(\d+-)([a-zA-Z0-9_-]{22})(\.[a-z_]+)`, then the suffix must be one of the six).
///
/// # Errors
/// [`Error::BadName`] when the name does not have that form.
pub fn parse_file_name(name: &str) -> Result<SegmentFileName> {
    let bad = |reason| Error::BadName {
        name: name.to_owned(),
        what: "segment file",
        reason,
    };
    let dash = name
        .find('-')
        .ok_or_else(|| bad("no '-' after the start offset"))?;
    let (digits, rest) = (&name[..dash], &name[dash + 1..]);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad("the start offset is not a number"));
    }
    let start_offset: i64 = digits
        .parse()
        .map_err(|_| bad("the start offset is out of range"))?;
    if rest.len() < UUID_TEXT_LEN || !rest.is_char_boundary(UUID_TEXT_LEN) {
        return Err(bad("no 22-character segment id"));
    }
    let (id, suffix) = rest.split_at(UUID_TEXT_LEN);
    let id = Uuid::parse(id).map_err(|_| bad("the segment id is not a Uuid"))?;
    let kind = FileKind::from_suffix(suffix).ok_or_else(|| bad("not one of the six suffixes"))?;
    Ok(SegmentFileName {
        start_offset,
        id,
        kind,
    })
}

/// Where a partition's objects live in a store: the root prefix (`dir` of Kafka's
/// `LocalTieredStorage`, a bucket prefix on S3) and the partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    root: Path,
    partition: TopicIdPartition,
}

impl Layout {
    /// The layout of `partition` under `root` (empty: the store's root).
    pub fn new(root: Path, partition: TopicIdPartition) -> Layout {
        Layout { root, partition }
    }

    /// The partition.
    pub fn partition(&self) -> &TopicIdPartition {
        &self.partition
    }

    /// `<root>/kafka-tiered-storage/<topic>-<partition>-<topicId>`.
    pub fn data_prefix(&self) -> Path {
        self.root
            .clone()
            .join(DATA_ROOT)
            .join(self.partition.directory_name())
    }

    /// The object of one part of one remote segment.
    pub fn data_key(&self, start_offset: i64, id: Uuid, kind: FileKind) -> Path {
        let name = SegmentFileName {
            start_offset,
            id,
            kind,
        };
        self.data_prefix().join(name.to_string())
    }

    /// `<root>/seglog-remote-log-metadata/<topic>-<partition>-<topicId>`.
    pub fn metadata_prefix(&self) -> Path {
        self.root
            .clone()
            .join(METADATA_ROOT)
            .join(self.partition.directory_name())
    }

    /// The folder of one remote segment's metadata records.
    pub fn metadata_segment_prefix(&self, start_offset: i64, id: Uuid) -> Path {
        self.metadata_prefix().join(segment_stem(start_offset, id))
    }

    /// One metadata record: slot 0 is COPY_SEGMENT_STARTED, each state change creates the next.
    pub fn metadata_slot_key(&self, start_offset: i64, id: Uuid, slot: u8) -> Path {
        self.metadata_segment_prefix(start_offset, id)
            .join(format!("{slot}.json"))
    }

    /// Parses a metadata record's key back into (start offset, segment id, slot).
    ///
    /// # Errors
    /// [`Error::BadName`] for a key that is not one of this partition's metadata records.
    pub fn parse_metadata_key(&self, key: &Path) -> Result<(i64, Uuid, u8)> {
        let bad = |reason| Error::BadName {
            name: key.to_string(),
            what: "metadata record",
            reason,
        };
        let parts: Vec<_> = key
            .prefix_match(&self.metadata_prefix())
            .ok_or_else(|| bad("outside the partition's metadata"))?
            .collect();
        let [stem, slot] = parts.as_slice() else {
            return Err(bad("not <start>-<id>/<slot>.json"));
        };
        let slot: u8 = slot
            .as_ref()
            .strip_suffix(".json")
            .and_then(|s| if s.len() == 1 { s.parse().ok() } else { None })
            .ok_or_else(|| bad("the slot is not 0-3"))?;
        if slot > 3 {
            return Err(bad("the slot is not 0-3"));
        }
        let name = parse_file_name(&format!("{}.log", stem.as_ref()))
            .map_err(|_| bad("not <start>-<id>"))?;
        Ok((name.start_offset, name.id, slot))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp() -> TopicIdPartition {
        TopicIdPartition::new(
            "orders.eu-1",
            3,
            Uuid::from_halves(0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210),
        )
        .unwrap()
    }

    /// The names below are what Kafka 4.3.1's `RemoteLogSegmentFileType.toFilename` and
    /// `RemoteTopicPartitionDirectory.toString` produce for the same offsets and Uuids
    /// (`LogFileUtils.filenamePrefixFromOffset(42) = 00000000000000000042`, Uuid text from
    /// kafka-clients 4.4.0).
    #[test]
    fn names_are_kafkas() {
        assert_eq!(
            tp().directory_name(),
            "orders.eu-1-3-ASNFZ4mrze_-3LqYdlQyEA"
        );
        let id = Uuid::from_halves(0x7f7f_7f7f_7f7f_7f7f, 0x3e3f_3e3f_3e3f_3e3f);
        let layout = Layout::new(Path::from("bucket-root"), tp());
        let names: Vec<_> = FileKind::ALL
            .iter()
            .map(|&k| layout.data_key(42, id, k).to_string())
            .collect();
        let base = "bucket-root/kafka-tiered-storage/orders.eu-1-3-ASNFZ4mrze_-3LqYdlQyEA/00000000000000000042-f39_f39_f38-Pz4_Pj8-Pw";
        assert_eq!(
            names,
            [
                ".log",
                ".index",
                ".timeindex",
                ".txnindex",
                ".leader_epoch_checkpoint",
                ".snapshot"
            ]
            .map(|s| format!("{base}{s}"))
        );
        assert_eq!(
            layout.metadata_slot_key(42, id, 2).to_string(),
            "bucket-root/seglog-remote-log-metadata/orders.eu-1-3-ASNFZ4mrze_-3LqYdlQyEA/00000000000000000042-f39_f39_f38-Pz4_Pj8-Pw/2.json"
        );
        assert_eq!(
            Layout::new(Path::default(), tp()).data_prefix().to_string(),
            "kafka-tiered-storage/orders.eu-1-3-ASNFZ4mrze_-3LqYdlQyEA"
        );
    }

    #[test]
    fn names_parse_back() {
        let id = Uuid::random();
        for kind in FileKind::ALL {
            let name = SegmentFileName {
                start_offset: 1 << 40,
                id,
                kind,
            };
            assert_eq!(parse_file_name(&name.to_string()).unwrap(), name);
        }
        // Kafka's pattern takes any number of digits, not only 20.
        assert_eq!(
            parse_file_name("7-AAAAAAAAAAAAAAAAAAAAAQ.index")
                .unwrap()
                .start_offset,
            7
        );
        assert_eq!(
            TopicIdPartition::parse_directory_name(&tp().directory_name()).unwrap(),
            tp()
        );
        let odd = TopicIdPartition::new("a-1-2", 12, Uuid::random()).unwrap();
        assert_eq!(
            TopicIdPartition::parse_directory_name(&odd.directory_name()).unwrap(),
            odd
        );
        let layout = Layout::new(Path::from("r"), tp());
        assert_eq!(
            layout
                .parse_metadata_key(&layout.metadata_slot_key(9, id, 3))
                .unwrap(),
            (9, id, 3)
        );
    }

    #[test]
    fn bad_names_are_typed_errors() {
        for name in [
            "",
            "00000000000000000042.log",
            "x-AAAAAAAAAAAAAAAAAAAAAQ.log",
            "42-AAAAAAAAAAAAAAAAAAAAAQ.LOG",
            "42-AAAAAAAAAAAAAAAAAAAAAQ.json",
            "42-AAAAAAAAAAAAAAAAAAAA.log",
            "99999999999999999999-AAAAAAAAAAAAAAAAAAAAAQ.log",
        ] {
            assert!(
                matches!(
                    parse_file_name(name),
                    Err(Error::BadName {
                        what: "segment file",
                        ..
                    })
                ),
                "{name}"
            );
        }
        for name in [
            "",
            "t-AAAAAAAAAAAAAAAAAAAAAQ",
            "t-x-AAAAAAAAAAAAAAAAAAAAAQ",
            "-1-AAAAAAAAAAAAAAAAAAAAAQ",
            "t/x-1-AAAAAAAAAAAAAAAAAAAAAQ",
        ] {
            assert!(
                TopicIdPartition::parse_directory_name(name).is_err(),
                "{name}"
            );
        }
        assert!(TopicIdPartition::new("a b", 0, Uuid::ZERO).is_err());
        assert!(TopicIdPartition::new("a", -1, Uuid::ZERO).is_err());
    }
}
