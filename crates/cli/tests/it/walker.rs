//! An independent, deliberately tiny reader of Kafka `.log` files (v2, v1, v0), written
//! from the format description only; it shares no code with the crates under test.
//!
//! For uncompressed batches it decodes every record; for compressed ones it trusts the
//! batch header (count, offset range) and leaves `records` empty for that batch.

use std::path::Path;

/// A record as a Kafka consumer sees it, hex-encoded like `read --encoding hex`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rec {
    pub offset: i64,
    pub timestamp: Option<i64>,
    pub timestamp_type: Option<&'static str>,
    pub key: Option<String>,
    pub value: Option<String>,
    pub headers: Vec<(String, Option<String>)>,
}

/// What the walk found in one partition directory.
#[derive(Debug, Default)]
pub struct Walk {
    /// Non-control records (what `read` prints by default).
    pub data_records: u64,
    /// Records in control batches.
    pub control_records: u64,
    /// Shallow batches (legacy messages count one each).
    pub batches: u64,
    /// Fully decoded records of uncompressed data batches, in offset order.
    pub decoded: Vec<Rec>,
    /// Offset ranges of compressed data batches: (base or first, last, record count).
    pub compressed: Vec<(i64, i64, u64)>,
}

fn be_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().unwrap())
}
fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}
fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes(b[at..at + 2].try_into().unwrap())
}

/// Unsigned LEB128 then ZigZag.
fn varlong(b: &[u8], at: &mut usize) -> i64 {
    let mut raw: u64 = 0;
    let mut shift = 0;
    loop {
        let byte = b[*at];
        *at += 1;
        raw |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    ((raw >> 1) as i64) ^ -((raw & 1) as i64)
}

fn bytes(b: &[u8], at: &mut usize, len: i64) -> Option<String> {
    if len < 0 {
        return None;
    }
    let s = hex(&b[*at..*at + len as usize]);
    *at += len as usize;
    Some(s)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Walks every `.log` of `dir` in base-offset order.
pub fn walk_dir(dir: &Path) -> Walk {
    let mut logs: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    let mut walk = Walk::default();
    for log in logs {
        walk_file(&std::fs::read(&log).unwrap(), &mut walk);
    }
    walk
}

/// Walks one `.log` file's bytes.
pub fn walk_file(file: &[u8], walk: &mut Walk) {
    let mut pos = 0usize;
    while file.len() > pos + 17 {
        let size = be_i32(file, pos + 8);
        assert!(size >= 14, "bad size at {pos}");
        let end = pos + 12 + size as usize;
        if end > file.len() {
            break;
        }
        let batch = &file[pos..end];
        walk.batches += 1;
        match batch[16] {
            2 => walk_v2(batch, walk),
            0 | 1 => walk_legacy(batch, walk),
            m => panic!("magic {m} at {pos}"),
        }
        pos = end;
    }
}

fn walk_v2(b: &[u8], walk: &mut Walk) {
    let base_offset = be_i64(b, 0);
    let attributes = be_i16(b, 21);
    let last_offset = base_offset + i64::from(be_i32(b, 23));
    let base_timestamp = be_i64(b, 27);
    let max_timestamp = be_i64(b, 35);
    let count = be_i32(b, 57) as u64;
    let log_append = attributes & 0x08 != 0;
    if attributes & 0x20 != 0 {
        walk.control_records += count;
        return;
    }
    walk.data_records += count;
    if attributes & 0x07 != 0 {
        walk.compressed.push((base_offset, last_offset, count));
        return;
    }
    let mut at = 61;
    for _ in 0..count {
        let len = varlong(b, &mut at);
        let start = at;
        at += 1; // attributes
        let ts_delta = varlong(b, &mut at);
        let offset_delta = varlong(b, &mut at);
        let key_len = varlong(b, &mut at);
        let key = bytes(b, &mut at, key_len);
        let value_len = varlong(b, &mut at);
        let value = bytes(b, &mut at, value_len);
        let header_count = varlong(b, &mut at);
        let mut headers = Vec::new();
        for _ in 0..header_count {
            let name_len = varlong(b, &mut at) as usize;
            let name = String::from_utf8_lossy(&b[at..at + name_len]).into_owned();
            at += name_len;
            let hv_len = varlong(b, &mut at);
            headers.push((name, bytes(b, &mut at, hv_len)));
        }
        assert_eq!(at - start, len as usize, "record length");
        walk.decoded.push(Rec {
            offset: base_offset + offset_delta,
            timestamp: Some(if log_append {
                max_timestamp
            } else {
                base_timestamp + ts_delta
            }),
            timestamp_type: Some(if log_append { "log_append" } else { "create" }),
            key,
            value,
            headers,
        });
    }
}

fn walk_legacy(b: &[u8], walk: &mut Walk) {
    let offset = be_i64(b, 0);
    let magic = b[16];
    let attributes = b[17];
    assert_eq!(
        attributes & 0x07,
        0,
        "compressed legacy messages are not in the corpus"
    );
    let (timestamp, timestamp_type, mut at) = if magic == 1 {
        let ty = if attributes & 0x08 != 0 {
            "log_append"
        } else {
            "create"
        };
        (Some(be_i64(b, 18)), Some(ty), 26)
    } else {
        (None, None, 18)
    };
    let key_len = i64::from(be_i32(b, at));
    at += 4;
    let key = bytes(b, &mut at, key_len);
    let value_len = i64::from(be_i32(b, at));
    at += 4;
    let value = bytes(b, &mut at, value_len);
    assert_eq!(at, b.len(), "legacy message length");
    walk.data_records += 1;
    walk.decoded.push(Rec {
        offset,
        timestamp,
        timestamp_type,
        key,
        value,
        headers: Vec::new(),
    });
}

#[test]
fn walker_decodes_the_spec_vector() {
    // spec §4.6: two records, v2, CreateTime
    let text = "00 00 00 00 00 00 00 00 00 00 00 55 ff ff ff ff 02 e5 8c f1 ff 00 00 00 00 00 01 00 00 00 00 00 04 54 c3 00 00 00 00 00 04 54 c3 ff ff ff ff ff ff ff ff ff ff ff ff ff ff 00 00 00 02 20 00 00 00 08 6b 65 79 31 0c 76 61 6c 75 65 31 00 24 00 e1 bf 22 02 08 6b 65 79 32 0c 76 61 6c 75 65 32 00";
    let batch: Vec<u8> = text
        .split(' ')
        .map(|h| u8::from_str_radix(h, 16).unwrap())
        .collect();
    assert_eq!(batch.len(), 97);
    let mut walk = Walk::default();
    walk_file(&batch, &mut walk);
    assert_eq!(walk.data_records, 2);
    assert_eq!(walk.decoded[0].timestamp, Some(283843));
    assert_eq!(walk.decoded[1].timestamp, Some(1234));
    assert_eq!(walk.decoded[1].key.as_deref(), Some("6b657932"));
    assert_eq!(walk.decoded[1].offset, 1);
}
