//! Every `.log` in the shared Kafka corpus (written by real brokers) parses: valid CRCs,
//! consistent counts, strictly increasing offsets, records decode with every codec. Totals are
//! compared with the corpus's PROVENANCE.md, which an independent reader (kafka-python)
//! produced.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use seglog_records::{Batches, Compression, ControlRecordType, TimestampType};

const LIMIT: usize = 64 << 20;

/// What one partition directory holds, summed over its `.log` files.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Totals {
    segments: usize,
    batches: usize,
    records: usize,
    first_offset: Option<i64>,
    last_offset: i64,
    magics: Vec<u8>,
    codecs: BTreeMap<String, usize>,
    log_append_time_batches: usize,
    control_types: BTreeMap<String, usize>,
    records_with_headers: usize,
}

fn logs(dir: &Path) -> Vec<PathBuf> {
    let mut logs: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    logs
}

/// Every partition directory with its `<source>/<partition>` name; empty when the corpus is
/// absent outside CI (see `seglog-test-corpus`).
fn partition_dirs() -> Vec<(String, PathBuf)> {
    let Some(root) = seglog_test_corpus::root() else {
        return Vec::new();
    };
    let mut dirs = Vec::new();
    for source in std::fs::read_dir(&root).unwrap() {
        let source = source.unwrap().path();
        if !source.is_dir() {
            continue;
        }
        for partition in std::fs::read_dir(&source).unwrap() {
            let partition = partition.unwrap().path();
            if partition.is_dir() {
                let name = format!(
                    "{}/{}",
                    source.file_name().unwrap().to_string_lossy(),
                    partition.file_name().unwrap().to_string_lossy()
                );
                dirs.push((name, partition));
            }
        }
    }
    dirs.sort();
    dirs
}

/// Reads one partition directory with every check this crate has.
fn read_partition(dir: &Path) -> Totals {
    let mut totals = Totals::default();
    let mut previous_offset: Option<i64> = None;
    for log in logs(dir) {
        let bytes = std::fs::read(&log).unwrap();
        totals.segments += 1;
        let mut batches = Batches::new(&bytes, 0).validated();
        for batch in batches.by_ref() {
            let batch = batch.unwrap_or_else(|e| panic!("{}: {e}", log.display()));
            let header = *batch.header();
            totals.batches += 1;
            if !totals.magics.contains(&header.magic) {
                totals.magics.push(header.magic);
            }
            *totals
                .codecs
                .entry(header.compression.to_string())
                .or_default() += 1;
            if header.timestamp_type == Some(TimestampType::LogAppendTime) {
                totals.log_append_time_batches += 1;
            }
            let mut count = 0i32;
            for record in batch.records(LIMIT) {
                let record = record.unwrap_or_else(|e| panic!("{}: {e}", log.display()));
                count += 1;
                assert!(
                    previous_offset.is_none_or(|p| record.offset > p),
                    "{}: offset {} after {previous_offset:?}",
                    log.display(),
                    record.offset
                );
                previous_offset = Some(record.offset);
                assert!(record.offset <= header.last_offset);
                if let Some(base) = header.base_offset {
                    assert!(record.offset >= base);
                }
                if header.magic == 2 {
                    assert!(
                        record.timestamp_ms <= Some(header.max_timestamp_ms)
                            || header.timestamp_type == Some(TimestampType::LogAppendTime),
                        "{}: record timestamp above maxTimestamp",
                        log.display()
                    );
                }
                if !record.headers.is_empty() {
                    totals.records_with_headers += 1;
                }
                totals.first_offset.get_or_insert(record.offset);
                totals.last_offset = record.offset;
            }
            totals.records += count as usize;
            if let Some(declared) = header.record_count {
                assert_eq!(count, declared, "{}: record count", log.display());
            }
            assert_eq!(
                previous_offset,
                Some(header.last_offset),
                "{}",
                log.display()
            );
            if header.is_control {
                assert_eq!(header.compression, Compression::None);
                let control = batch.control_record().unwrap().unwrap();
                let name = match control.control_type {
                    ControlRecordType::LeaderChange => "leader_change".to_owned(),
                    other => format!("{other:?}"),
                };
                *totals.control_types.entry(name).or_default() += 1;
            }
        }
        assert_eq!(
            batches.partial_tail_bytes(),
            0,
            "{}: trailing bytes",
            log.display()
        );
        assert_eq!(batches.valid_bytes(), bytes.len() as u64);
    }
    totals
}

/// The partition table rows of PROVENANCE.md: name -> (segments, batches, records, offsets,
/// magics, codecs, notable).
fn provenance(root: &Path) -> BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(root.join("PROVENANCE.md")).unwrap();
    let mut rows = BTreeMap::new();
    let mut source = String::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("### ") {
            source = name.trim().to_owned();
        } else if line.starts_with("| ") && line.contains("`") && !source.is_empty() {
            let cells: Vec<String> = line
                .trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_owned())
                .collect();
            rows.insert(format!("{source}/{}", cells[0]), cells);
        }
    }
    rows
}

#[test]
fn every_corpus_log_parses_and_matches_provenance() {
    let Some(root) = seglog_test_corpus::root() else {
        return;
    };
    let expected = provenance(&root);
    let dirs = partition_dirs();
    assert_eq!(
        dirs.len(),
        32,
        "PROVENANCE.md lists 32 partition directories"
    );
    let mut segments = 0;
    for (name, dir) in &dirs {
        let totals = read_partition(dir);
        segments += totals.segments;
        let row = expected
            .get(name)
            .unwrap_or_else(|| panic!("{name} is not in PROVENANCE.md"));
        assert_eq!(row[2], totals.segments.to_string(), "{name}: segments");
        assert_eq!(
            row[3],
            format!("{} / {}", totals.batches, totals.records),
            "{name}: batches / records"
        );
        assert_eq!(
            row[4],
            format!(
                "{}..{}",
                totals.first_offset.unwrap_or(-1),
                totals.last_offset
            ),
            "{name}: offsets"
        );
        let magics: Vec<String> = totals.magics.iter().map(u8::to_string).collect();
        assert_eq!(row[5], format!("[{}]", magics.join(", ")), "{name}: magic");
        let codecs: Vec<String> = totals
            .codecs
            .iter()
            .map(|(c, n)| format!("{c}:{n}"))
            .collect();
        assert_eq!(row[6], codecs.join(" "), "{name}: codecs");
        let notable = &row[7];
        if totals.log_append_time_batches > 0 {
            assert!(
                notable.contains(&format!(
                    "LogAppendTime batches: {}",
                    totals.log_append_time_batches
                )),
                "{name}: {notable}"
            );
        }
        for (control, n) in &totals.control_types {
            assert!(
                notable.contains(&format!("{control}x{n}")),
                "{name}: {notable}"
            );
        }
        if totals.records_with_headers > 0 {
            assert!(
                notable.contains(&format!(
                    "records with headers: {}",
                    totals.records_with_headers
                )),
                "{name}: {notable}"
            );
        }
    }
    assert_eq!(segments, 40, "PROVENANCE.md counts 40 segments");
}
