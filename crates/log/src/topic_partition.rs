//! Topic-partition names and the partition directory naming rules of spec §1.2.

use std::fmt;

use crate::{Error, Result};

/// A topic and partition number, e.g. `orders` / 3, whose directory is `orders-3`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicPartition {
    /// The topic name (may contain `-`, `.` and `_`).
    pub topic: String,
    /// The partition number.
    pub partition: i32,
}

impl TopicPartition {
    /// Builds a topic-partition.
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        Self {
            topic: topic.into(),
            partition,
        }
    }

    /// The normal directory name, `<topic>-<partition>`.
    pub fn dir_name(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// What kind of partition directory a name denotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionDirKind {
    /// `<topic>-<partition>`: a live log.
    Live,
    /// `<topic>-<partition>.<uuid32>-delete`: queued for deletion; loaded without recovery.
    Delete,
    /// `<topic>-<partition>.<uuid32>-stray`: not assigned to this broker.
    Stray,
    /// `<topic>-<partition>.<uuid32>-future`: target of an alter-log-dir move.
    Future,
}

/// A parsed partition directory name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionDirName {
    /// The topic-partition it holds.
    pub topic_partition: TopicPartition,
    /// Live, or one of Kafka's special suffixes.
    pub kind: PartitionDirKind,
}

/// Parses a partition directory name as Kafka's `UnifiedLog.parseTopicPartitionName` does:
/// for `-delete` / `-stray` / `-future` names everything from the last `.` is dropped; then the
/// name splits on its **last** `-` into a non-empty topic and an `i32` partition.
///
/// # Errors
/// [`Error::InvalidPartitionDir`] when the name does not have that shape.
pub fn parse_partition_dir_name(name: &str) -> Result<PartitionDirName> {
    let bad = || Error::InvalidPartitionDir {
        name: name.to_owned(),
    };
    let suffixes = [
        ("-delete", PartitionDirKind::Delete),
        ("-stray", PartitionDirKind::Stray),
        ("-future", PartitionDirKind::Future),
    ];
    let (base, kind) = match suffixes.iter().find(|(s, _)| name.ends_with(s)) {
        Some(&(suffix, kind)) => {
            let without = &name[..name.len() - suffix.len()];
            // `^(\S+)-(\S+)\.(\S+)<suffix>`: the uuid part must be non-empty, no whitespace.
            let dot = without.rfind('.').ok_or_else(bad)?;
            let uuid = &without[dot + 1..];
            if uuid.is_empty() || uuid.chars().any(char::is_whitespace) {
                return Err(bad());
            }
            (&without[..dot], kind)
        }
        None => (name, PartitionDirKind::Live),
    };
    let dash = base.rfind('-').ok_or_else(bad)?;
    let (topic, partition) = (&base[..dash], &base[dash + 1..]);
    if topic.is_empty() || partition.is_empty() {
        return Err(bad());
    }
    // Kafka's Integer.parseInt accepts a leading sign; a "+" would be a surprising name, reject.
    if !partition.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
        return Err(bad());
    }
    let partition: i32 = partition.parse().map_err(|_| bad())?;
    Ok(PartitionDirName {
        topic_partition: TopicPartition::new(topic, partition),
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_on_last_dash() {
        let p = parse_partition_dir_name("my-topic.v2_x-12").unwrap();
        assert_eq!(p.topic_partition, TopicPartition::new("my-topic.v2_x", 12));
        assert_eq!(p.kind, PartitionDirKind::Live);
        let p = parse_partition_dir_name("__consumer_offsets-17").unwrap();
        assert_eq!(p.topic_partition.dir_name(), "__consumer_offsets-17");
    }

    #[test]
    fn special_suffixes() {
        let uuid = "0123456789abcdef0123456789abcdef";
        let p = parse_partition_dir_name(&format!("t-a-3.{uuid}-delete")).unwrap();
        assert_eq!(p.topic_partition, TopicPartition::new("t-a", 3));
        assert_eq!(p.kind, PartitionDirKind::Delete);
        let p = parse_partition_dir_name(&format!("t-3.{uuid}-future")).unwrap();
        assert_eq!(p.kind, PartitionDirKind::Future);
        let p = parse_partition_dir_name(&format!("t-3.{uuid}-stray")).unwrap();
        assert_eq!(p.kind, PartitionDirKind::Stray);
    }

    #[test]
    fn rejects_non_partition_names() {
        for name in [
            "topic",
            "-3",
            "topic-",
            "topic-x",
            "t-3-delete",
            "",
            "lost+found",
            "t-+3",
        ] {
            assert!(parse_partition_dir_name(name).is_err(), "{name}");
        }
    }
}
