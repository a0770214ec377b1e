//! Fuzzes every reader of `seglog-records` (v0, v1 and v2) on arbitrary bytes.
//!
//! Properties checked, besides "never panics, never allocates beyond the limit":
//! - every error position lies inside the region;
//! - validated iteration yields a prefix of shallow iteration;
//! - `BatchHeader::parse` at each batch position agrees with the iterator;
//! - an in-place rewrite either fails or leaves a batch that still validates.
//!
//! Seeds: `fuzz/seed.sh` cuts the shared Kafka corpus into per-batch files.

#![no_main]

use libfuzzer_sys::fuzz_target;
use seglog_records::{
    BatchHeader, BatchRef, Batches, HeaderRead, RECORD_BATCH_OVERHEAD, set_base_offset,
    set_log_append_time, set_partition_leader_epoch,
};

/// Decompression limit: small, so hostile batches cannot use much memory.
const LIMIT: usize = 1 << 20;
const BASE: u64 = 1 << 33;

fn check_position(error: &seglog_records::Error, len: usize) {
    if let Some(position) = error.position() {
        assert!(
            position >= BASE && position <= BASE + len as u64,
            "error position {position} outside the region: {error}"
        );
    }
}

fn exercise(batch: &BatchRef<'_>, len: usize) {
    let valid = batch.ensure_valid();
    if let Err(e) = &valid {
        check_position(e, len);
    }
    for record in batch.records(LIMIT) {
        match record {
            Ok(record) => {
                for header in &record.headers {
                    assert!(std::str::from_utf8(header.key.as_bytes()).is_ok());
                }
            }
            Err(e) => check_position(&e, len),
        }
    }
    if let Err(e) = batch.control_record() {
        check_position(&e, len);
    }
    // In-place rewrites on a copy.
    let mut copy = batch.as_bytes().to_vec();
    let _ = set_base_offset(&mut copy, 12_345);
    let _ = set_partition_leader_epoch(&mut copy, 7);
    if set_log_append_time(&mut copy, 1_700_000_000_000).is_ok() {
        let rewritten = BatchRef::parse(&copy, 0);
        assert!(rewritten.is_ok_and(|b| b.ensure_valid().is_ok()));
    }
}

fuzz_target!(|data: &[u8]| {
    let shallow: Vec<_> = Batches::new(data, BASE).collect();
    let validated: Vec<_> = Batches::new(data, BASE).validated().collect();
    // Validation can only stop earlier.
    assert!(validated.len() <= shallow.len());
    for (v, s) in validated.iter().zip(&shallow) {
        match (v, s) {
            (Ok(v), Ok(s)) => assert_eq!(v.header(), s.header()),
            (Err(_), _) => {}
            (Ok(_), Err(_)) => panic!("validated iteration accepted what shallow refused"),
        }
    }
    for item in &shallow {
        match item {
            Ok(batch) => {
                let start = (batch.position() - BASE) as usize;
                let rest = &data[start..];
                let prefix = &rest[..rest.len().min(RECORD_BATCH_OVERHEAD)];
                let read = BatchHeader::parse(prefix, batch.position(), rest.len() as u64);
                assert!(matches!(read, Ok(HeaderRead::Batch(h)) if h == *batch.header()));
                exercise(batch, data.len());
            }
            Err(e) => check_position(e, data.len()),
        }
    }
});
