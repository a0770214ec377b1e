//! `records_borrowed` (`RecordRef`) agrees with the owned `records` on every batch it
//! accepts, valid or damaged: same records, same errors at the same positions.

use proptest::prelude::*;
use seglog_records::{BatchBuilder, Batches, Compression, Record, TimestampType};

use crate::support::varied_v2_log;

/// Owned and borrowed decodes of every batch of `bytes` (CRC not checked); the borrowed side
/// is `None` exactly for compressed batches. Returns how many records were compared.
fn compare(bytes: &[u8], base: u64) -> Result<usize, TestCaseError> {
    let mut compared = 0;
    for batch in Batches::new(bytes, base) {
        let Ok(batch) = batch else { break };
        let Some(borrowed) = batch.records_borrowed() else {
            prop_assert!(
                batch.header().compression != Compression::None || batch.header().magic < 2
            );
            continue;
        };
        let owned: Vec<_> = batch.records(1 << 20).collect();
        let borrowed: Vec<_> = borrowed.collect();
        prop_assert_eq!(owned.len(), borrowed.len());
        for (o, b) in owned.iter().zip(&borrowed) {
            match (o, b) {
                (Ok(o), Ok(b)) => {
                    prop_assert_eq!(o, &b.to_record());
                    prop_assert_eq!(o.key.as_deref(), b.key);
                    prop_assert_eq!(o.value.as_deref(), b.value);
                    let headers: Vec<_> = b.headers().collect();
                    prop_assert_eq!(headers.len(), b.header_count());
                    for (h, (key, value)) in o.headers.iter().zip(headers) {
                        prop_assert_eq!(h.key.as_str(), key);
                        prop_assert_eq!(h.value.as_deref(), value);
                    }
                    compared += 1;
                }
                (Err(o), Err(b)) => prop_assert_eq!(format!("{o:?}"), format!("{b:?}")),
                _ => prop_assert!(false, "owned {o:?} vs borrowed {b:?}"),
            }
        }
    }
    Ok(compared)
}

#[test]
fn borrowed_records_match_owned_ones() {
    let log = varied_v2_log();
    // The uncompressed batch (4 records) and the control batch (1 record).
    assert_eq!(compare(&log, 100).unwrap(), 5);
    let mut builder = BatchBuilder::new(10).timestamp_type(TimestampType::LogAppendTime);
    builder.append(5, None, None, &[]);
    builder.append(6, Some(b""), Some(b"v"), &[("k", Some(b"")), ("k", None)]);
    let batch = builder.build().unwrap();
    let first = Batches::new(&batch, 0).next().unwrap().unwrap();
    let records: Vec<Record> = first
        .records_borrowed()
        .unwrap()
        .map(|r| r.unwrap().to_record())
        .collect();
    assert_eq!(records.len(), 2);
    assert_eq!(records[1].offset, 11);
    assert_eq!(
        records[1].timestamp_type,
        Some(TimestampType::LogAppendTime)
    );
    assert_eq!(compare(&batch, 0).unwrap(), 2);
}

#[test]
fn compressed_batches_have_no_borrowed_records() {
    let mut builder = BatchBuilder::new(0).compression(Compression::Gzip);
    builder.append(1, None, Some(b"v"), &[]);
    let batch = builder.build().unwrap();
    let first = Batches::new(&batch, 0).next().unwrap().unwrap();
    assert!(first.records_borrowed().is_none());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Damaged record bytes (the header left intact so the batch still parses): both
    /// decoders stop at the same record with the same error.
    #[test]
    fn damaged_batches_fail_alike(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
    ) {
        let mut builder = BatchBuilder::new(40);
        for j in 0..6i64 {
            builder.append(
                1_700_000_000_000 + j,
                (j % 3 != 1).then_some(&b"key"[..]),
                (j % 4 != 2).then_some(&b"value bytes"[..]),
                &[("h", Some(b"x")), ("e", None)],
            );
        }
        let mut batch = builder.build().unwrap().to_vec();
        let records_start = seglog_records::RECORD_BATCH_OVERHEAD;
        for (at, byte) in &edits {
            let i = records_start + at.index(batch.len() - records_start);
            batch[i] = *byte;
        }
        compare(&batch, 1_000)?;
    }
}
