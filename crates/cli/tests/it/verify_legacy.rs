//! `verify`, `recover` and `read` agree on legacy (v0/v1) compressed message sets, written here
//! as Kafka's client library writes them (spec 4.4): a v1 wrapper's offset is the absolute offset
//! of its last inner message and the inner offsets are relative (0..n), v0 inner offsets are
//! absolute. Every legacy codec (gzip, snappy, lz4) for both magics.

use std::io::Write;
use std::path::Path;

use serde_json::Value;

use crate::support::seglog;

/// One legacy message (Kafka's `LegacyRecord.write`): offset, size, CRC-32 over magic..end.
fn message(magic: u8, offset: i64, attributes: u8, timestamp_ms: i64, value: &[u8]) -> Vec<u8> {
    let mut body = vec![magic, attributes];
    if magic == 1 {
        body.extend_from_slice(&timestamp_ms.to_be_bytes());
    }
    body.extend_from_slice(&1i32.to_be_bytes());
    body.push(b'k');
    body.extend_from_slice(&(value.len() as i32).to_be_bytes());
    body.extend_from_slice(value);
    let mut out = offset.to_be_bytes().to_vec();
    out.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
    out.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

#[derive(Clone, Copy, Debug)]
enum Codec {
    Gzip = 1,
    Snappy = 2,
    Lz4 = 3,
}

fn compress(codec: Codec, data: &[u8]) -> Vec<u8> {
    match codec {
        Codec::Gzip => {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            enc.write_all(data).unwrap();
            enc.finish().unwrap()
        }
        Codec::Snappy => snap::raw::Encoder::new().compress_vec(data).unwrap(),
        Codec::Lz4 => {
            let mut enc = lz4_flex::frame::FrameEncoder::new(Vec::new());
            enc.write_all(data).unwrap();
            enc.finish().unwrap()
        }
    }
}

/// A compressed wrapper holding the absolute offsets `first..first + n`, as a producer of
/// message format `magic` writes it.
fn wrapper(magic: u8, codec: Codec, first: i64, n: i64) -> Vec<u8> {
    let inner: Vec<u8> = (0..n)
        .flat_map(|i| {
            // v1: relative inner offsets; v0: absolute.
            let offset = if magic == 1 { i } else { first + i };
            let value = format!("value {}", first + i);
            message(magic, offset, 0, 1_000 + first + i, value.as_bytes())
        })
        .collect();
    let last = first + n - 1;
    message(
        magic,
        last,
        codec as u8,
        2_000 + last,
        &compress(codec, &inner),
    )
}

/// Offsets 0..=10 in a wrapper, one uncompressed message at 11, offsets 12..=15 in a wrapper.
fn write_log(dir: &Path, magic: u8, codec: Codec) {
    std::fs::create_dir_all(dir).unwrap();
    let mut log = wrapper(magic, codec, 0, 11);
    log.extend(message(magic, 11, 0, 1_011, b"value 11"));
    log.extend(wrapper(magic, codec, 12, 4));
    std::fs::write(dir.join("00000000000000000000.log"), log).unwrap();
}

fn verify_json(dir: &Path) -> (i32, Value) {
    let run = seglog(["verify".as_ref(), dir.as_os_str(), "--json".as_ref()]);
    (run.code, run.json_lines().remove(0))
}

#[test]
fn legacy_compressed_sets_verify_before_and_after_recover() {
    let tmp = tempfile::tempdir().unwrap();
    for magic in [0u8, 1] {
        for codec in [Codec::Gzip, Codec::Snappy, Codec::Lz4] {
            let dir = tmp.path().join(format!("legacy-v{magic}-{codec:?}-0"));
            write_log(&dir, magic, codec);
            let what = format!("v{magic} {codec:?}");

            let (code, report) = verify_json(&dir);
            assert_eq!(report["problems"], Value::Array(vec![]), "{what}: {report}");
            assert_eq!(code, 0, "{what}: {report}");
            assert_eq!(report["records"], 16, "{what}: {report}");

            let recover = seglog(["recover".as_ref(), dir.as_os_str(), "--quiet".as_ref()]);
            assert_eq!(recover.code, 0, "{what}: {}", recover.stderr);
            let (code, report) = verify_json(&dir);
            assert_eq!(report["problems"], Value::Array(vec![]), "{what}: {report}");
            assert_eq!(code, 0, "{what}: {report}");

            let read = seglog(["read".as_ref(), dir.as_os_str(), "--json".as_ref()]);
            assert_eq!(read.code, 0, "{what}: {}", read.stderr);
            let offsets: Vec<i64> = read
                .json_lines()
                .iter()
                .map(|r| r["offset"].as_i64().unwrap())
                .collect();
            assert_eq!(offsets, (0..16).collect::<Vec<_>>(), "{what}");
        }
    }
}

#[test]
fn a_legacy_inner_offset_outside_its_wrapper_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("legacy-bad-0");
    std::fs::create_dir_all(&dir).unwrap();
    // A v0 wrapper at offset 5 whose inner messages claim absolute offsets 7 and 8: its last
    // inner offset is past the wrapper's own.
    let inner: Vec<u8> = [7i64, 8]
        .iter()
        .flat_map(|&o| message(0, o, 0, 0, b"v"))
        .collect();
    let mut log = message(0, 4, 0, 0, b"first");
    log.extend(message(
        0,
        5,
        Codec::Gzip as u8,
        0,
        &compress(Codec::Gzip, &inner),
    ));
    std::fs::write(dir.join("00000000000000000000.log"), log).unwrap();
    let (code, report) = verify_json(&dir);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["problems"][0]["kind"], "invalid_records", "{report}");
}
