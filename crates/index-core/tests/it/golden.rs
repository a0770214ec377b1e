//! Golden tests over real broker-written `.index` / `.timeindex` files in
//! `shared/kafka-corpus` (see its PROVENANCE.md). The files are opened read-only in place and
//! never modified; lookups are checked against entries decoded independently here.

use std::path::{Path, PathBuf};

use seglog_index_core::{OffsetIndex, OffsetPosition, TimeIndex, TimestampOffset};

/// Every `<base>.index` in the corpus with its `.timeindex`, `.log` and base offset; empty
/// when the corpus is absent outside CI (see `seglog-test-corpus`).
fn corpus_segments() -> Vec<(PathBuf, i64)> {
    let Some(root) = seglog_test_corpus::root() else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let mut dirs = vec![root];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("kafka corpus missing at {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "index") {
                let stem = path.file_stem().unwrap().to_str().unwrap();
                found.push((path.with_extension(""), stem.parse::<i64>().unwrap()));
            }
        }
    }
    found.sort();
    assert!(
        found.len() >= 25,
        "expected the corpus's 25 broker-written index pairs, found {}",
        found.len()
    );
    found
}

/// Independent decoding: plain big-endian reads, no crate code.
fn decode_index(bytes: &[u8], base: i64) -> Vec<(i64, u32)> {
    bytes
        .chunks_exact(8)
        .map(|c| {
            let rel = i32::from_be_bytes([c[0], c[1], c[2], c[3]]);
            let pos = u32::from_be_bytes([c[4], c[5], c[6], c[7]]);
            (base + i64::from(rel), pos)
        })
        .collect()
}

fn decode_timeindex(bytes: &[u8], base: i64) -> Vec<(i64, i64)> {
    bytes
        .chunks_exact(12)
        .map(|c| {
            let ts = i64::from_be_bytes(c[..8].try_into().unwrap());
            let rel = i32::from_be_bytes(c[8..].try_into().unwrap());
            (ts, base + i64::from(rel))
        })
        .collect()
}

fn probes(keys: impl Iterator<Item = i64>) -> Vec<i64> {
    let mut all = vec![i64::MIN, -1, 0, i64::MAX];
    for k in keys {
        all.extend([k - 1, k, k + 1]);
    }
    all
}

fn with_ext(stem: &Path, ext: &str) -> PathBuf {
    stem.with_extension(ext)
}

#[test]
fn broker_offset_indexes_open_read_only_and_look_up_like_a_linear_scan() {
    for (stem, base) in corpus_segments() {
        let path = with_ext(&stem, "index");
        let before = std::fs::read(&path).unwrap();
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        let expected = decode_index(&before, base);

        let index = OffsetIndex::open_read_only(&path, base).unwrap();
        assert_eq!(index.entries(), expected.len(), "{}", path.display());
        assert_eq!(index.file_len(), before.len() as u64);
        for (n, &(offset, position)) in expected.iter().enumerate() {
            assert_eq!(index.entry(n), Some(OffsetPosition { offset, position }));
        }
        for target in probes(expected.iter().map(|e| e.0)) {
            let floor = expected.iter().rev().find(|e| e.0 <= target);
            let want = floor.map_or(
                OffsetPosition {
                    offset: base,
                    position: 0,
                },
                |&(offset, position)| OffsetPosition { offset, position },
            );
            assert_eq!(
                index.lookup(target),
                want,
                "{} target {target}",
                path.display()
            );
        }
        for &(_, position) in &expected {
            for fetch_end in [position.saturating_sub(1), position, position + 1] {
                let want = expected
                    .iter()
                    .find(|e| e.1 >= fetch_end)
                    .map(|&(offset, position)| OffsetPosition { offset, position });
                assert_eq!(index.fetch_upper_bound_offset(0, fetch_end), want);
            }
        }
        let log_size = std::fs::metadata(with_ext(&stem, "log")).unwrap().len();
        index.sanity_check(Some(log_size)).unwrap();
        assert_eq!(index.last_offset(), expected.last().map_or(base, |e| e.0));
        index.close().unwrap();

        assert_unchanged(&path, &before, modified);
    }
}

#[test]
fn broker_time_indexes_open_read_only_and_look_up_like_a_linear_scan() {
    for (stem, base) in corpus_segments() {
        let path = with_ext(&stem, "timeindex");
        let before = std::fs::read(&path).unwrap();
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        let expected = decode_timeindex(&before, base);

        let index = TimeIndex::open_read_only(&path, base).unwrap();
        assert_eq!(index.entries(), expected.len(), "{}", path.display());
        for (n, &(timestamp_ms, offset)) in expected.iter().enumerate() {
            assert_eq!(
                index.entry(n),
                Some(TimestampOffset {
                    timestamp_ms,
                    offset
                })
            );
        }
        for target in probes(expected.iter().map(|e| e.0)) {
            let floor = expected.iter().rev().find(|e| e.0 <= target);
            let want = floor.map_or(
                TimestampOffset {
                    timestamp_ms: -1,
                    offset: base,
                },
                |&(timestamp_ms, offset)| TimestampOffset {
                    timestamp_ms,
                    offset,
                },
            );
            assert_eq!(
                index.lookup(target),
                want,
                "{} target {target}",
                path.display()
            );
        }
        let last = expected.last().map_or(
            TimestampOffset {
                timestamp_ms: -1,
                offset: base,
            },
            |&(timestamp_ms, offset)| TimestampOffset {
                timestamp_ms,
                offset,
            },
        );
        assert_eq!(index.last_entry(), last);
        index.sanity_check(None).unwrap();
        index.close().unwrap();

        assert_unchanged(&path, &before, modified);
    }
}

/// A broker directory opens unchanged for writing too (on a copy): entries are kept, appends go
/// after them, and closing trims back to exactly the broker's bytes plus ours.
#[test]
fn broker_indexes_open_writable_on_a_copy_and_keep_their_bytes() {
    let dir = tempfile::tempdir().unwrap();
    for (stem, base) in corpus_segments() {
        let original = std::fs::read(with_ext(&stem, "index")).unwrap();
        let expected = decode_index(&original, base);
        let copy = dir
            .path()
            .join(format!("{base:020}-{}.index", expected.len()));
        std::fs::write(&copy, &original).unwrap();

        let index = OffsetIndex::open(&copy, base, 10 * 1024 * 1024).unwrap();
        assert_eq!(index.entries(), expected.len());
        // Like Kafka, a reopened file is as long as it was: the segment layer resizes the
        // active segment's index before appending.
        assert!(index.is_full());
        index.resize(10 * 1024 * 1024).unwrap();
        let (last_offset, last_position) = expected.last().copied().unwrap_or((base, 0));
        index.append(last_offset + 1, last_position + 1).unwrap();
        index.close().unwrap();

        let written = std::fs::read(&copy).unwrap();
        assert_eq!(written.len(), original.len() + 8);
        assert_eq!(&written[..original.len()], &original[..]);
        let rel = i32::try_from(last_offset + 1 - base).unwrap();
        assert_eq!(
            &written[original.len()..],
            [rel.to_be_bytes(), (last_position + 1).to_be_bytes()].concat()
        );
    }
}

/// Asserts that a corpus file still holds `before` and its modification time is `modified`.
fn assert_unchanged(path: &std::path::Path, before: &[u8], modified: std::time::SystemTime) {
    assert_eq!(
        std::fs::read(path).unwrap(),
        before,
        "{} was modified",
        path.display()
    );
    assert_eq!(
        std::fs::metadata(path).unwrap().modified().unwrap(),
        modified,
        "{} was touched",
        path.display()
    );
}
