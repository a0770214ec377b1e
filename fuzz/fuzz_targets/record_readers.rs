//! Fuzzes the record readers over hostile batches, in memory: arbitrary bytes as one fetch's
//! batches (`FetchedBytes`, with the aborted transactions their own ABORT markers imply, as a
//! `.txnindex` would list them), read by the borrowed reader (`RecordReader::poll`) and the
//! owned one (`OwnedRecordReader`) with the same options.
//!
//! Properties, besides "never panics":
//! - both readers return the same records (offset, key, value, and the batch they came from)
//!   and both stop with an error or both do not; when neither fails they end at the same
//!   position;
//! - offsets strictly increase and none is below the start;
//! - the borrowed reader stopped after every record and polled again passes exactly what one
//!   poll passes (the stop/resume path);
//! - with `read_committed`, no record of a transaction the bytes abort is passed.
//!
//! The log-level property (the bytes as one segment's `.log` of a small log, reopened after a
//! clean or an unclean shutdown, every record below that segment served as written) stays in
//! the stable harness (`reliability/tests/it/fuzz.rs`, `log_level::record_readers`): it needs
//! a log.
//!
//! Input: byte 0 picks the start offset (bits 0-1), whether the CRCs of the v2 batches in the
//! bytes are recomputed (bit 2, so the fuzzer reaches the records), whether control records
//! are passed (bit 3), the isolation (bits 4-5), CRC checks off (bit 6) and a small
//! decompression bound (bit 7); the rest is the bytes.

#![no_main]

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use libfuzzer_sys::fuzz_target;
use seglog::{
    AbortedTransaction, Batches, ControlRecordType, FetchedBytes, Isolation, NextRecord,
    ReaderOptions,
};
use seglog_reliability::fuzz_support::fix_v2_crcs;

/// offset, key, value, and the batch's base offset.
type Seen = (i64, Option<Vec<u8>>, Option<Vec<u8>>, i64);

/// The aborted transactions the bytes' ABORT markers imply (what a `.txnindex` rebuilt from
/// them lists): each producer's first transactional offset since its last marker.
fn aborted(bytes: &[u8]) -> Vec<AbortedTransaction> {
    let mut open: BTreeMap<i64, i64> = BTreeMap::new();
    let mut out = Vec::new();
    for batch in Batches::new(bytes, 0) {
        let Ok(batch) = batch else { break };
        let h = *batch.header();
        if h.producer_id < 0 || !h.is_transactional {
            continue;
        }
        if h.is_control {
            let abort = matches!(
                batch.control_record(),
                Ok(Some(c)) if c.control_type == ControlRecordType::Abort
            );
            if let Some(first_offset) = open.remove(&h.producer_id)
                && abort
            {
                out.push(AbortedTransaction {
                    producer_id: h.producer_id,
                    first_offset,
                });
            }
        } else {
            let first = h.base_offset.unwrap_or(h.last_offset);
            open.entry(h.producer_id).or_insert(first);
        }
    }
    out
}

fn options(flags: u8) -> ReaderOptions {
    let start = [0, 1, 7, 40][usize::from(flags & 0b11)];
    let isolation = [
        Isolation::LogEnd,
        Isolation::ReadUncommitted,
        Isolation::ReadCommitted,
        Isolation::ReadCommitted,
    ][usize::from(flags >> 4 & 0b11)];
    ReaderOptions::new(start, isolation)
        .include_control(flags & 0b1000 != 0)
        .check_crcs(flags & 0b100_0000 == 0)
        .max_decompressed_bytes(if flags & 0x80 != 0 { 256 } else { 1 << 20 })
}

/// The owned reader's records until it ends or fails, and its position.
fn owned(options: ReaderOptions, fetched: FetchedBytes<'_>) -> (Vec<Seen>, bool, i64) {
    let mut out = Vec::new();
    let mut reader = options.owned_reader_over(fetched);
    loop {
        match reader.next_available() {
            Ok(NextRecord::CaughtUp) => break,
            Ok(NextRecord::Record(r)) => out.push((
                r.record.offset,
                r.record.key.map(|k| k.to_vec()),
                r.record.value.map(|v| v.to_vec()),
                r.batch.base_offset.unwrap_or(r.batch.last_offset),
            )),
            Err(_) => return (out, true, reader.position()),
        }
    }
    (out, false, reader.position())
}

/// The borrowed reader's records until it catches up or fails (stopping after every record
/// and polling again when `stop_each` is set), and its position.
fn borrowed(
    options: ReaderOptions,
    fetched: FetchedBytes<'_>,
    stop_each: bool,
) -> (Vec<Seen>, bool, i64) {
    let mut out = Vec::new();
    let mut reader = options.reader_over(fetched);
    loop {
        let result = reader.poll::<seglog::Error>(|header, record| {
            out.push((
                record.offset(),
                record.key().map(<[u8]>::to_vec),
                record.value().map(<[u8]>::to_vec),
                header.base_offset.unwrap_or(header.last_offset),
            ));
            Ok(if stop_each {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            })
        });
        match result {
            Ok(seglog::PollEnd::Stopped) => continue,
            Ok(_) => return (out, false, reader.position()),
            Err(_) => return (out, true, reader.position()),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, bytes)) = data.split_first() else {
        return;
    };
    let mut bytes = bytes.to_vec();
    if flags & 0b100 != 0 {
        fix_v2_crcs(&mut bytes);
    }
    let aborted = aborted(&bytes);
    let fetched = || {
        FetchedBytes::new(&bytes, "t-0/00000000000000000000.log", 0)
            .aborted_transactions(aborted.clone())
    };
    let options = options(flags);

    let (owned_records, owned_failed, owned_position) = owned(options, fetched());
    let (borrowed_records, borrowed_failed, borrowed_position) =
        borrowed(options, fetched(), false);
    assert_eq!(owned_records, borrowed_records, "the two readers disagree");
    assert_eq!(
        owned_failed, borrowed_failed,
        "one reader failed, the other did not"
    );
    if !owned_failed {
        assert_eq!(
            owned_position, borrowed_position,
            "the readers end at other positions"
        );
    }
    let start = [0, 1, 7, 40][usize::from(flags & 0b11)];
    for pair in owned_records.windows(2) {
        assert!(pair[0].0 < pair[1].0, "offsets do not increase: {pair:?}");
    }
    if let Some(first) = owned_records.first() {
        assert!(
            first.0 >= start,
            "a record below the start {start}: {first:?}"
        );
    }
    let (stepped, stepped_failed, _) = borrowed(options, fetched(), true);
    assert_eq!(
        stepped, borrowed_records,
        "stopping after every record changed what is read"
    );
    assert_eq!(stepped_failed, borrowed_failed);

    if flags >> 4 & 0b10 != 0 {
        let dropped = aborted_batches(&bytes, &aborted);
        for record in &owned_records {
            assert!(
                !dropped.contains(&record.3),
                "read_committed passed a record of an aborted transaction: {record:?}"
            );
        }
    }
});

/// The base offsets of the data batches `aborted` covers, when the batches' offsets increase
/// (else none: the order of a hostile file decides, and the readers must only agree): for
/// each transaction, its producer's transactional batches from the first batch reaching its
/// first offset up to that producer's next ABORT marker.
fn aborted_batches(bytes: &[u8], aborted: &[AbortedTransaction]) -> Vec<i64> {
    let batches: Vec<(seglog::BatchHeader, bool)> = Batches::new(bytes, 0)
        .map_while(Result::ok)
        .map(|b| {
            let abort = matches!(
                b.control_record(),
                Ok(Some(c)) if c.control_type == ControlRecordType::Abort
            );
            (*b.header(), b.header().is_control && abort)
        })
        .collect();
    let base = |h: &seglog::BatchHeader| h.base_offset.unwrap_or(h.last_offset);
    let increasing = batches
        .windows(2)
        .all(|w| base(&w[0].0) <= w[0].0.last_offset && w[0].0.last_offset < base(&w[1].0));
    let mut out = Vec::new();
    if !increasing {
        return out;
    }
    for txn in aborted {
        let Some(from) = batches
            .iter()
            .position(|(h, _)| h.last_offset >= txn.first_offset)
        else {
            continue;
        };
        for (h, abort) in &batches[from..] {
            if h.producer_id != txn.producer_id {
                continue;
            }
            if *abort {
                break;
            }
            if h.is_transactional && !h.is_control {
                out.push(base(h));
            }
        }
    }
    out
}
