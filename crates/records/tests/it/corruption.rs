//! Corruption and truncation: every single-bit flip of a small batch is detected (except in the
//! two header fields Kafka leaves outside the CRC), truncation at every byte is a quiet partial
//! tail, and no input panics.

use proptest::prelude::*;
use seglog_records::{BatchBuilder, Batches, Compression, OwnedBatches};

use crate::support::{decode_all, legacy_gzip_wrapper, legacy_message, shared, varied_v2_log};

/// Byte ranges of a v2 batch that the CRC-32C does not cover: baseOffset and
/// partitionLeaderEpoch (the broker rewrites them without recomputing the CRC).
fn uncovered_v2(byte: usize) -> bool {
    byte < 8 || (12..16).contains(&byte)
}

/// Outcome of reading `bytes` with full validation: `Ok(records)` only if every batch was whole,
/// valid and decodable and no bytes were left over.
fn read_strictly(bytes: &[u8]) -> Result<usize, String> {
    let mut batches = Batches::new(bytes, 0).validated();
    let mut records = 0;
    for batch in batches.by_ref() {
        let batch = batch.map_err(|e| e.to_string())?;
        for record in batch.records(1 << 20) {
            record.map_err(|e| e.to_string())?;
            records += 1;
        }
    }
    match batches.partial_tail_bytes() {
        0 => Ok(records),
        n => Err(format!("partial tail of {n} bytes")),
    }
}

fn small_batches() -> Vec<(String, Vec<u8>, bool)> {
    let mut out = Vec::new();
    for codec in Compression::ALL {
        let mut builder = BatchBuilder::new(5).compression(codec).producer(9, 1, 0);
        builder
            .append(1_000, Some(b"k"), Some(b"v1"), &[("h", Some(b"x"))])
            .append(1_001, None, Some(b"v2"), &[]);
        out.push((
            format!("v2 {codec}"),
            builder.build().unwrap().to_vec(),
            true,
        ));
    }
    out.push((
        "v1".into(),
        legacy_message(1, 7, 0, 1_000, Some(b"k"), Some(b"v")),
        false,
    ));
    out.push((
        "v0".into(),
        legacy_message(0, 7, 0, 0, Some(b"k"), Some(b"v")),
        false,
    ));
    out.push(("v1 gzip wrapper".into(), legacy_gzip_wrapper(9, 3), false));
    out
}

#[test]
fn every_single_bit_flip_is_detected() {
    for (name, batch, is_v2) in small_batches() {
        let clean = read_strictly(&batch).unwrap();
        for byte in 0..batch.len() {
            for bit in 0..8 {
                let mut flipped = batch.clone();
                flipped[byte] ^= 1 << bit;
                let outcome = read_strictly(&flipped);
                if is_v2 && uncovered_v2(byte) {
                    // Outside the CRC: still a valid batch, as in Kafka.
                    assert_eq!(outcome, Ok(clean), "{name} byte {byte} bit {bit}");
                } else if !is_v2 && byte < 8 {
                    // A legacy message's offset is outside its CRC too: an uncompressed
                    // message stays valid; a wrapper may now disagree with its inner offsets.
                    if !name.contains("wrapper") {
                        assert_eq!(outcome, Ok(clean), "{name} byte {byte} bit {bit}");
                    }
                } else {
                    assert!(
                        outcome.is_err(),
                        "{name}: flip of byte {byte} bit {bit} went unnoticed"
                    );
                }
            }
        }
    }
}

#[test]
fn truncation_at_every_byte_is_a_quiet_partial_tail() {
    let mut log = varied_v2_log();
    log.extend_from_slice(&legacy_message(1, 100, 0, 5, None, Some(b"legacy")));
    log.extend_from_slice(&legacy_gzip_wrapper(103, 3));
    let boundaries: Vec<u64> = {
        let mut b = vec![0];
        b.extend(Batches::new(&log, 0).map(|r| r.unwrap().header().end_position()));
        b
    };
    assert_eq!(*boundaries.last().unwrap(), log.len() as u64);
    for cut in 0..=log.len() {
        let mut batches = Batches::new(&log[..cut], 0).validated();
        let whole = batches
            .by_ref()
            .inspect(|r| assert!(r.is_ok(), "cut {cut}"))
            .count();
        let expected_end = *boundaries
            .iter()
            .filter(|&&b| b <= cut as u64)
            .max()
            .unwrap();
        assert_eq!(
            whole,
            boundaries
                .iter()
                .filter(|&&b| b > 0 && b <= cut as u64)
                .count()
        );
        assert_eq!(batches.valid_bytes(), expected_end, "cut {cut}");
        assert_eq!(
            batches.partial_tail_bytes(),
            cut as u64 - expected_end,
            "cut {cut}"
        );
        // The owning iterator agrees.
        let mut owned = OwnedBatches::new(shared(&log[..cut]), 0).validated();
        assert_eq!(owned.by_ref().filter(Result::is_ok).count(), whole);
        assert_eq!(owned.partial_tail_bytes(), cut as u64 - expected_end);
    }
}

#[test]
fn truncated_batch_given_as_whole_is_an_error_not_a_panic() {
    let log = varied_v2_log();
    let first = Batches::new(&log, 0).next().unwrap().unwrap();
    let len = first.as_bytes().len();
    for cut in 0..len {
        assert!(
            seglog_records::BatchRef::parse(&log[..cut], 0).is_err(),
            "{cut}"
        );
    }
}

/// A hostile byte region must never panic; every error names a position inside it.
fn never_panics(bytes: &[u8], base: u64) -> Result<(), TestCaseError> {
    if let Err(e) = decode_all(bytes, base)
        && let Some(position) = e.position()
    {
        prop_assert!(
            position >= base && position <= base + bytes.len() as u64,
            "{e}"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400), base in 0u64..1 << 40) {
        never_panics(&bytes, base)?;
    }

    #[test]
    fn mutated_batches_never_panic(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut log = varied_v2_log();
        log.extend_from_slice(&legacy_gzip_wrapper(50, 2));
        for (at, byte) in &edits {
            let i = at.index(log.len());
            log[i] = *byte;
        }
        let cut = cut.index(log.len() + 1);
        never_panics(&log[..cut], 7)?;
    }
}
