//! [`TopicConfigs`]: Kafka's per-topic config overrides over a `LogDir`'s defaults.

use std::collections::BTreeMap;

use crate::config::LogConfig;
use crate::{Error, Result};

/// The keys a topic override may set: Kafka's topic-level names. Broker-level aliases
/// (`log.retention.hours`, `message.max.bytes`, ...) and root-wide settings
/// (`seglog.segment.cache.capacity`) belong in the `LogDir`'s default config. Derived from
/// the table behind [`crate::CONFIG_KEYS`] (one list of keys, each with its scope).
pub const TOPIC_CONFIG_KEYS: &[&str] = crate::config::TOPIC_KEYS;

/// Per-topic config overrides (Kafka's topic configs): for each topic, `key=value` pairs with
/// Kafka's topic-level names that replace the [`crate::LogDir`]'s defaults (Kafka's broker
/// config) for that topic's partitions. A topic without overrides uses the defaults.
///
/// Not persisted: Kafka keeps topic configs in the cluster metadata (KRaft's metadata log,
/// formerly ZooKeeper), never in a log dir, and so does seglog: nothing of this is written
/// under the root, and the caller passes the overrides at every open
/// ([`crate::LogDir::open_with_topic_configs`]).
///
/// ```
/// use seglog::{LogConfig, TopicConfigs};
///
/// let mut topics = TopicConfigs::new();
/// topics.set("audit", "retention.ms", "-1")?.set("audit", "segment.bytes", "1048576")?;
/// let audit = topics.resolve(&LogConfig::default(), "audit")?;
/// assert_eq!(audit.retention_ms, -1);
/// assert_eq!(audit.segment_bytes, 1_048_576);
/// assert_eq!(topics.resolve(&LogConfig::default(), "other")?, LogConfig::default());
/// # Ok::<(), seglog::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicConfigs {
    topics: BTreeMap<String, BTreeMap<String, String>>,
}

impl TopicConfigs {
    /// No overrides.
    pub fn new() -> Self {
        Self::default()
    }

    /// Overrides `key` with `value` for `topic` (replacing an earlier override of the key).
    ///
    /// # Errors
    /// [`Error::NotATopicConfig`] for a key outside [`TOPIC_CONFIG_KEYS`]; [`Error::InvalidConfig`]
    /// when the value does not parse or is out of range. Cross-field rules are checked by
    /// [`TopicConfigs::resolve`] against the defaults they apply to.
    pub fn set(&mut self, topic: &str, key: &str, value: &str) -> Result<&mut Self> {
        let key = check_key(key)?;
        LogConfig::default().set(key, value)?;
        self.topics
            .entry(topic.to_owned())
            .or_default()
            .insert(key.to_owned(), value.trim().to_owned());
        Ok(self)
    }

    /// Removes the override of `key` for `topic`; returns whether there was one.
    pub fn remove(&mut self, topic: &str, key: &str) -> bool {
        let Some(overrides) = self.topics.get_mut(topic) else {
            return false;
        };
        let removed = overrides.remove(key.trim()).is_some();
        if overrides.is_empty() {
            self.topics.remove(topic);
        }
        removed
    }

    /// The overrides of `topic` (key to value), empty when it has none.
    pub fn overrides(&self, topic: &str) -> BTreeMap<String, String> {
        self.topics.get(topic).cloned().unwrap_or_default()
    }

    /// The topics that have overrides.
    pub fn topics(&self) -> impl Iterator<Item = &str> {
        self.topics.keys().map(String::as_str)
    }

    /// The config of `topic`'s partitions: `defaults` with the topic's overrides applied.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] when the result breaks a cross-field rule of
    /// [`LogConfig::validate`].
    pub fn resolve(&self, defaults: &LogConfig, topic: &str) -> Result<LogConfig> {
        let mut config = defaults.clone();
        if let Some(overrides) = self.topics.get(topic) {
            for (key, value) in overrides {
                config.set(key, value)?;
            }
        }
        config.validate()?;
        Ok(config)
    }

    /// Replaces every override of `topic` with `overrides` (Kafka's `AlterConfigs`: the set
    /// given is the topic's whole set; an empty one leaves the topic on the defaults).
    ///
    /// # Errors
    /// As [`TopicConfigs::set`]; nothing changes on error.
    pub(crate) fn replace<I, K, V>(&mut self, topic: &str, overrides: I) -> Result<()>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut next = Self::new();
        for (key, value) in overrides {
            next.set(topic, key.as_ref(), value.as_ref())?;
        }
        match next.topics.remove(topic) {
            Some(set) => self.topics.insert(topic.to_owned(), set),
            None => self.topics.remove(topic),
        };
        Ok(())
    }
}

/// `key` (trimmed) when it is a topic-level name.
fn check_key(key: &str) -> Result<&'static str> {
    let key = key.trim();
    TOPIC_CONFIG_KEYS
        .iter()
        .find(|k| **k == key)
        .copied()
        .ok_or_else(|| Error::NotATopicConfig {
            key: key.to_owned(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_names_and_root_settings_are_not_topic_configs() {
        let mut topics = TopicConfigs::new();
        for key in [
            "log.retention.hours",
            "seglog.segment.cache.capacity",
            "nope",
        ] {
            assert!(
                matches!(topics.set("t", key, "1"), Err(Error::NotATopicConfig { key: k }) if k == key),
                "{key}"
            );
        }
        assert!(matches!(
            topics.set("t", "retention.ms", "-2"),
            Err(Error::InvalidConfig {
                key: "retention.ms",
                ..
            })
        ));
        assert_eq!(topics, TopicConfigs::new());
    }

    #[test]
    fn resolve_applies_overrides_over_the_defaults() {
        let defaults = LogConfig {
            retention_bytes: 1000,
            ..LogConfig::default()
        };
        let mut topics = TopicConfigs::new();
        topics.set("t", " flush.ms ", "5").unwrap();
        let t = topics.resolve(&defaults, "t").unwrap();
        assert_eq!(t.flush_ms, 5);
        assert_eq!(t.retention_bytes, 1000);
        assert_eq!(
            topics.overrides("t").get("flush.ms").map(String::as_str),
            Some("5")
        );
        assert!(topics.remove("t", "flush.ms"));
        assert!(!topics.remove("t", "flush.ms"));
        assert_eq!(topics.topics().count(), 0);
        topics
            .replace(
                "t",
                [("segment.bytes", "100"), ("segment.index.bytes", "12")],
            )
            .unwrap();
        assert_eq!(topics.resolve(&defaults, "t").unwrap().segment_bytes, 100);
        // A bad pair leaves the earlier set in place.
        assert!(topics.replace("t", [("retention.ms", "x")]).is_err());
        assert_eq!(topics.overrides("t").len(), 2);
        topics.replace("t", Vec::<(&str, &str)>::new()).unwrap();
        assert_eq!(topics, TopicConfigs::new());
    }
}
