//! Fuzzes the producer-state snapshot parser (`<offset>.snapshot`, Kafka's
//! `ProducerStateManager` format) on the input bytes in memory: `ProducerSnapshot::decode`,
//! then what a load makes of each entry (`ProducerStateEntry::from_snapshot_entry`).
//!
//! Properties, besides "never panics":
//! - `decode` refuses exactly what Kafka's `readSnapshot` refuses, with the matching
//!   `SnapshotProblem` (an oracle written from the layout: shorter than the header, a version
//!   other than 1, a negative count, fewer bytes than the count needs, a CRC that differs);
//! - what decodes holds `count` entries, each the 46 bytes at its place, and encodes to bytes
//!   that decode to the same snapshot;
//! - each entry's state (the one batch a snapshot keeps, the open transaction) writes back
//!   the entry it came from, up to Kafka's normalisation of "none" (-1), and that is stable;
//!   its batch's first sequence and offset wrap as Kafka's Java arithmetic does, and the batch
//!   is found as a retry of itself.
//!
//! The log-level properties (a log opens whatever its snapshot holds, a snapshot that does not
//! decode leaves the producer state the segments rebuild) stay in the stable harness
//! (`reliability/tests/it/fuzz.rs`, `log_level::producer_snapshot`): they need a log.
//!
//! Input: byte 0 is a set of flags (bit 0: rewrite the CRC so the fuzzer reaches the entries);
//! the rest is the file.

#![no_main]

use libfuzzer_sys::fuzz_target;
use seglog::{
    PRODUCER_SNAPSHOT_ENTRY_LEN, PRODUCER_SNAPSHOT_VERSION, ProducerSnapshot,
    ProducerSnapshotEntry, ProducerStateEntry, SnapshotProblem,
};
use seglog_reliability::fuzz_support::fix_snapshot_crc;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, file)) = data.split_first() else {
        return;
    };
    let mut file = file.to_vec();
    if flags & 1 == 1 {
        fix_snapshot_crc(&mut file);
    }
    let decoded = ProducerSnapshot::decode(&file);
    let be = |at: usize, n: usize| {
        file[at..at + n]
            .iter()
            .fold(0u64, |a, b| a << 8 | u64::from(*b))
    };
    let expected_problem = if file.len() < 10 {
        Some("truncated")
    } else if be(0, 2) as u16 as i16 != PRODUCER_SNAPSHOT_VERSION {
        Some("version")
    } else if (be(6, 4) as u32 as i32) < 0 {
        Some("count")
    } else if (file.len() as u64) < 10 + be(6, 4) * PRODUCER_SNAPSHOT_ENTRY_LEN as u64 {
        Some("truncated")
    } else if be(2, 4) as u32 != seglog_records::crc32c(&file[6..]) {
        Some("crc")
    } else {
        None
    };
    let snapshot = match (decoded, expected_problem) {
        (Ok(snapshot), None) => snapshot,
        (Err(SnapshotProblem::Truncated { len, .. }), Some("truncated")) => {
            assert_eq!(len, file.len() as u64);
            return;
        }
        (Err(SnapshotProblem::UnknownVersion(v)), Some("version")) => {
            assert_ne!(v, PRODUCER_SNAPSHOT_VERSION);
            return;
        }
        (Err(SnapshotProblem::NegativeCount(n)), Some("count")) => {
            assert!(n < 0);
            return;
        }
        (Err(SnapshotProblem::CrcMismatch { stored, computed }), Some("crc")) => {
            assert_ne!(stored, computed);
            return;
        }
        (got, expected) => panic!("decode gave {got:?}, the layout says {expected:?}"),
    };

    assert_eq!(
        snapshot.entries.len() as u64,
        be(6, 4),
        "not the count's entries"
    );
    for (i, e) in snapshot.entries.iter().enumerate() {
        let at = 10 + i * PRODUCER_SNAPSHOT_ENTRY_LEN;
        assert_eq!(e.producer_id, be(at, 8) as i64, "entry {i}: producer id");
        assert_eq!(
            e.current_txn_first_offset,
            be(at + 38, 8) as i64,
            "entry {i}: last field"
        );
    }
    let encoded = snapshot.encode();
    assert_eq!(
        encoded.len(),
        10 + snapshot.entries.len() * PRODUCER_SNAPSHOT_ENTRY_LEN
    );
    assert_eq!(
        ProducerSnapshot::decode(&encoded).as_ref(),
        Ok(&snapshot),
        "a decoded snapshot does not round trip"
    );

    for e in &snapshot.entries {
        let state = ProducerStateEntry::from_snapshot_entry(e);
        // What a later append asks of the loaded state: its last batch and whether a batch is
        // a retry of it (Java's wrapping arithmetic, never an overflow).
        for batch in state.batches() {
            assert_eq!(batch.first_sequence(), e.first_sequence());
            assert_eq!(
                batch.first_offset(),
                e.last_offset.wrapping_sub(i64::from(e.offset_delta))
            );
            let retry = state.find_duplicate(e.epoch, batch.first_sequence(), batch.last_sequence);
            assert_eq!(
                retry.as_ref(),
                Some(batch),
                "the retained batch is no duplicate of itself"
            );
        }
        assert_eq!(state.batches().len(), usize::from(e.has_batch()));
        let written = state.to_snapshot_entry();
        let normalised = ProducerSnapshotEntry {
            current_txn_first_offset: e.current_txn_first_offset.max(-1),
            ..*e
        };
        if e.has_batch() {
            assert_eq!(
                written, normalised,
                "an entry with a batch does not write back"
            );
        } else {
            // No batch is kept: only the producer's own fields come back.
            assert_eq!(
                (
                    written.producer_id,
                    written.epoch,
                    written.coordinator_epoch
                ),
                (e.producer_id, e.epoch, e.coordinator_epoch)
            );
            assert_eq!(
                written.current_txn_first_offset,
                normalised.current_txn_first_offset
            );
            assert_eq!(written.timestamp_ms, e.timestamp_ms);
            assert!(!written.has_batch(), "a batch appeared: {written:?}");
        }
        let again = ProducerStateEntry::from_snapshot_entry(&written).to_snapshot_entry();
        assert_eq!(again, written, "the state of a written entry is not stable");
    }
});
