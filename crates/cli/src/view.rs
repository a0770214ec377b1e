//! Turning decoded batches and records into what the CLI prints.

use seglog_records::{BatchHeader, BatchRef, ControlRecordType, Record, TimestampType};

use crate::cli::Encoding;
use crate::output::{RecordLine, TimestampTypeName};

/// Largest decompressed size accepted for one batch's records (a guard against a corrupt or
/// hostile length; Kafka batches are at most `max.message.bytes`, 1 MiB by default).
pub const MAX_DECOMPRESSED_BYTES: usize = 256 << 20;

/// Kafka's `ControlRecordType` name.
pub fn control_name(control_type: ControlRecordType) -> &'static str {
    match control_type {
        ControlRecordType::Abort => "ABORT",
        ControlRecordType::Commit => "COMMIT",
        ControlRecordType::LeaderChange => "LEADER_CHANGE",
        ControlRecordType::SnapshotHeader => "SNAPSHOT_HEADER",
        ControlRecordType::SnapshotFooter => "SNAPSHOT_FOOTER",
        ControlRecordType::KraftVersion => "KRAFT_VERSION",
        ControlRecordType::KraftVoters => "KRAFT_VOTERS",
        ControlRecordType::Unknown(_) => "UNKNOWN",
    }
}

/// The control marker of a record in a control batch, from its key; `UNKNOWN` when the key
/// is not a valid control key (Kafka reads unknown types as `UNKNOWN`).
pub fn control_marker(record: &Record) -> &'static str {
    record
        .key
        .as_deref()
        .and_then(|key| ControlRecordType::parse_key(key).ok())
        .map_or("UNKNOWN", control_name)
}

/// `create` / `log_append` / `null`.
pub fn timestamp_type_name(timestamp_type: Option<TimestampType>) -> Option<TimestampTypeName> {
    timestamp_type.map(|t| match t {
        TimestampType::CreateTime => TimestampTypeName::Create,
        TimestampType::LogAppendTime => TimestampTypeName::LogAppend,
    })
}

/// Kafka's name for a timestamp type, as its dump tool prints it.
pub fn timestamp_label(timestamp_type: Option<TimestampType>) -> &'static str {
    match timestamp_type {
        Some(TimestampType::CreateTime) => "CreateTime",
        Some(TimestampType::LogAppendTime) => "LogAppendTime",
        None => "NoTimestampType",
    }
}

/// One record as `read --json` prints it. `control` is set for records of control batches.
pub fn record_line(
    record: &Record,
    control: Option<&'static str>,
    encoding: Encoding,
) -> RecordLine {
    RecordLine {
        offset: record.offset,
        timestamp: record.timestamp_ms,
        timestamp_type: timestamp_type_name(record.timestamp_type),
        key: encoding.encode_opt(record.key.as_deref()),
        value: encoding.encode_opt(record.value.as_deref()),
        headers: record
            .headers
            .iter()
            .map(|h| (h.key.clone(), encoding.encode_opt(h.value.as_deref())))
            .collect(),
        control,
    }
}

/// One record as human-readable text (`read` without `--json`).
pub fn record_text(line: &RecordLine) -> String {
    let mut text = format!("offset: {}", line.offset);
    match (line.timestamp, line.timestamp_type) {
        (Some(ts), Some(TimestampTypeName::LogAppend)) => {
            text.push_str(&format!(" LogAppendTime: {ts}"))
        }
        (Some(ts), _) => text.push_str(&format!(" CreateTime: {ts}")),
        (None, _) => text.push_str(" NoTimestamp"),
    }
    if let Some(marker) = line.control {
        text.push_str(&format!(" control: {marker}"));
    }
    text.push_str(&format!(" key: {}", quoted(line.key.as_deref())));
    text.push_str(&format!(" value: {}", quoted(line.value.as_deref())));
    if !line.headers.is_empty() {
        let headers: Vec<String> = line
            .headers
            .iter()
            .map(|(k, v)| format!("{}={}", quoted(Some(k)), quoted(v.as_deref())))
            .collect();
        text.push_str(&format!(" headers: [{}]", headers.join(", ")));
    }
    text
}

/// `null` or the text in quotes with control characters escaped (terminal-safe).
pub fn quoted(text: Option<&str>) -> String {
    match text {
        None => "null".to_owned(),
        Some(t) => format!("{t:?}"),
    }
}

/// Whether the batch's stored checksum matches its bytes.
pub fn crc_valid(batch: &BatchRef<'_>) -> bool {
    batch.ensure_valid().is_ok()
}

/// `lastSequence` as Kafka's dump tool prints it: `baseSequence + lastOffsetDelta`, wrapping
/// at `i32::MAX` back to 0; -1 when there is no sequence.
pub fn last_sequence(header: &BatchHeader) -> i32 {
    if header.base_sequence < 0 {
        return -1;
    }
    let Some(base_offset) = header.base_offset else {
        return -1;
    };
    let delta = header.last_offset - base_offset;
    let sum = i64::from(header.base_sequence) + delta;
    if sum > i64::from(i32::MAX) {
        (sum - i64::from(i32::MAX) - 1) as i32
    } else {
        sum as i32
    }
}

#[cfg(test)]
mod tests {
    use seglog_records::{BatchBuilder, Batches};

    use super::*;

    #[test]
    fn record_lines_keep_null_versus_empty() {
        let mut builder = BatchBuilder::new(5);
        builder.append(
            10,
            None,
            Some(b""),
            &[("h", None), ("g", Some(b"\x00\xff"))],
        );
        let bytes = builder.build().unwrap();
        let batch = Batches::new(&bytes, 0).next().unwrap().unwrap();
        let record = batch
            .records(MAX_DECOMPRESSED_BYTES)
            .next()
            .unwrap()
            .unwrap();
        let line = record_line(&record, None, Encoding::Hex);
        assert_eq!(line.offset, 5);
        assert_eq!(line.key, None);
        assert_eq!(line.value.as_deref(), Some(""));
        assert_eq!(
            line.headers,
            vec![
                ("h".to_owned(), None),
                ("g".to_owned(), Some("00ff".to_owned()))
            ]
        );
        assert_eq!(line.timestamp_type, Some(TimestampTypeName::Create));
        assert!(crc_valid(&batch));
        assert_eq!(
            record_text(&line),
            r#"offset: 5 CreateTime: 10 key: null value: "" headers: ["h"=null, "g"="00ff"]"#
        );
    }

    #[test]
    fn last_sequence_wraps() {
        let mut builder = BatchBuilder::new(0).producer(7, 0, i32::MAX - 1);
        for _ in 0..4 {
            builder.append(1, None, None, &[]);
        }
        let bytes = builder.build().unwrap();
        let batch = Batches::new(&bytes, 0).next().unwrap().unwrap();
        assert_eq!(last_sequence(batch.header()), 1);
    }
}
