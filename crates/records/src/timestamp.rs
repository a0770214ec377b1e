//! What a batch's timestamps mean.

use std::fmt;

/// The meaning of a batch's timestamps (attribute bit 3; Kafka's `TimestampType`).
///
/// Legacy v0 messages have no timestamp at all: every place that can hold a v0 message uses
/// `Option<TimestampType>` and `None` stands for Kafka's `NO_TIMESTAMP_TYPE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TimestampType {
    /// Timestamps were set by the producer (bit 3 clear).
    #[default]
    CreateTime,
    /// The broker stamped the batch when appending it (bit 3 set). Every record then reads as
    /// the batch's `maxTimestamp`.
    LogAppendTime,
}

impl TimestampType {
    /// Kafka's name (`CreateTime` / `LogAppendTime`).
    pub fn name(self) -> &'static str {
        match self {
            TimestampType::CreateTime => "CreateTime",
            TimestampType::LogAppendTime => "LogAppendTime",
        }
    }
}

impl fmt::Display for TimestampType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_uses_kafka_names() {
        assert_eq!(TimestampType::CreateTime.to_string(), "CreateTime");
        assert_eq!(TimestampType::LogAppendTime.to_string(), "LogAppendTime");
    }
}
