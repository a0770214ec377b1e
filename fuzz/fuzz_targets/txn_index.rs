//! Fuzzes the `.txnindex` reader (Kafka's `TransactionIndex`: 34-byte aborted-transaction
//! entries) and its first-use validation: the entry codec and `decode_txn_index` on the input
//! bytes in memory, and `read_txn_index` (the structural checks a segment's first use runs,
//! streaming the file) on the same bytes as one small file rewritten per input.
//!
//! Properties, besides "never panics":
//! - every entry of version 0 or below decodes, and one of version 0 encodes back to its 34
//!   bytes; one above 0 is refused with its position and version;
//! - `read_txn_index` accepts exactly what an oracle written from its documented checks
//!   accepts (at most `txn_index_limit(segment_bytes)` bytes, whole entries, versions Kafka
//!   reads, no negative field, first offset at or below its marker, markers from the base
//!   offset to `i32::MAX` above it, increasing), returns the decoded entries when it accepts,
//!   and names the first failing entry's position when it refuses.
//!
//! The log-level property (a log opens whatever a segment's `.txnindex` holds and
//! `read_committed` never trusts a file that fails the checks) stays in the stable harness
//! (`reliability/tests/it/fuzz.rs`, `log_level::txn_index`): it needs a log.
//!
//! Input: byte 0 picks the segment's base offset (bits 0-1) and its `.log` size (bits 2-3);
//! the rest is the file (the format of the log-level half too, whose byte 0 picks a segment).

#![no_main]

use libfuzzer_sys::fuzz_target;
use seglog_segment::{
    AbortedTxn, CorruptKind, Error, TxnIndexProblem, decode_txn_index, read_txn_index,
    txn_index_limit,
};

const BASES: [i64; 4] = [0, 7, 1_000, i64::MAX - 40];
const SEGMENT_BYTES: [u64; 4] = [0, 61 * 3, 4096, 1 << 30];

/// One file per process (the input is rewritten into it), in the temp directory.
fn path() -> &'static std::path::Path {
    static FILE: std::sync::OnceLock<(tempfile::TempDir, std::path::PathBuf)> =
        std::sync::OnceLock::new();
    &FILE
        .get_or_init(|| {
            let tmp = tempfile::tempdir().expect("a temp dir");
            let path = tmp.path().join("00000000000000000000.txnindex");
            (tmp, path)
        })
        .1
}

/// The checks `read_txn_index` documents, written from the layout: `Ok(entries)` or the
/// position of the first failure.
fn oracle(file: &[u8], base: i64, segment_bytes: u64) -> Result<Vec<AbortedTxn>, u64> {
    if file.len() as u64 > segment_bytes / 61 * 34 {
        return Err(0);
    }
    if !file.len().is_multiple_of(34) {
        return Err((file.len() - file.len() % 34) as u64);
    }
    let mut previous: Option<i64> = None;
    let mut out = Vec::new();
    for (i, e) in file.chunks_exact(34).enumerate() {
        let at = |i: usize| i64::from_be_bytes(e[i..i + 8].try_into().expect("8 bytes"));
        let (version, producer_id, first, last, lso) = (
            i16::from_be_bytes([e[0], e[1]]),
            at(2),
            at(10),
            at(18),
            at(26),
        );
        let ok = version <= 0
            && producer_id >= 0
            && first >= 0
            && last >= 0
            && lso >= 0
            && first <= last
            && last >= base
            && (last as i128 - base as i128) <= i128::from(i32::MAX)
            && previous.is_none_or(|p| last > p);
        if !ok {
            return Err((i * 34) as u64);
        }
        previous = Some(last);
        out.push(AbortedTxn {
            producer_id,
            first_offset: first,
            last_offset: last,
            last_stable_offset: lso,
        });
    }
    Ok(out)
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, file)) = data.split_first() else {
        return;
    };
    let base = BASES[usize::from(pick & 0b11)];
    let segment_bytes = SEGMENT_BYTES[usize::from(pick >> 2 & 0b11)];

    let decoded = decode_txn_index(file);
    for (i, chunk) in file.chunks_exact(AbortedTxn::SIZE).enumerate() {
        let entry: &[u8; AbortedTxn::SIZE] = chunk.try_into().expect("34 bytes");
        let version = i16::from_be_bytes([chunk[0], chunk[1]]);
        match AbortedTxn::decode(entry) {
            Ok(txn) => {
                assert!(
                    version <= AbortedTxn::CURRENT_VERSION,
                    "entry {i}: version {version}"
                );
                if version == AbortedTxn::CURRENT_VERSION {
                    assert_eq!(&txn.encode(), entry, "entry {i} does not round trip");
                }
                if let Ok(all) = &decoded {
                    assert_eq!(all[i], txn, "decode_txn_index differs at entry {i}");
                }
            }
            Err(v) => {
                assert_eq!(v, version);
                assert!(version > AbortedTxn::CURRENT_VERSION);
            }
        }
    }
    if let Err((position, version)) = decoded {
        assert_eq!(position % AbortedTxn::SIZE as u64, 0);
        let at = position as usize;
        assert_eq!(version, i16::from_be_bytes([file[at], file[at + 1]]));
    }
    assert_eq!(txn_index_limit(segment_bytes), segment_bytes / 61 * 34);

    let path = path();
    std::fs::write(path, file).expect("write the .txnindex");
    let read = read_txn_index(path, base, segment_bytes);
    match (read, oracle(file, base, segment_bytes)) {
        (Ok(entries), Ok(expected)) => assert_eq!(entries, expected, "other entries read"),
        (
            Err(Error::Corrupt {
                path: p,
                position,
                kind,
            }),
            Err(expected),
        ) => {
            assert_eq!(p, path, "the error names another file");
            assert_eq!(
                position, expected,
                "the error names another entry ({kind:?})"
            );
            let at = position as usize;
            match kind {
                CorruptKind::TxnIndexVersion { version } => {
                    assert!(version > 0);
                    assert_eq!(version, i16::from_be_bytes([file[at], file[at + 1]]));
                }
                CorruptKind::TxnIndex(TxnIndexProblem::TooLarge { len, limit }) => {
                    assert_eq!(
                        (len, limit),
                        (file.len() as u64, txn_index_limit(segment_bytes))
                    );
                    assert!(len > limit);
                }
                CorruptKind::TxnIndex(TxnIndexProblem::PartialEntry { len }) => {
                    assert_eq!(len, file.len() as u64);
                }
                CorruptKind::TxnIndex(_) => {}
                other => panic!("a .txnindex refused as {other:?}"),
            }
        }
        (got, expected) => {
            panic!("read_txn_index gave {got:?}, the documented checks {expected:?}")
        }
    }
});
