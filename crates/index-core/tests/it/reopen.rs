//! Reopening damaged files: untrimmed zero-padded, short, garbage, odd length, empty. Kafka's
//! open accepts all of them; `sanity_check` tells the segment layer to rebuild.

use seglog_index_core::{
    CorruptKind, Error, OffsetIndex, OffsetPosition, TimeIndex, TimestampOffset,
};

fn corrupt_kind<T: std::fmt::Debug>(result: Result<T, Error>) -> (u64, CorruptKind) {
    match result {
        Err(Error::Corrupt { position, kind, .. }) => (position, kind),
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn untrimmed_zero_padded_offset_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("00000000000000000100.index");
    let index = OffsetIndex::open(&path, 100, 4096).unwrap();
    index.append(100, 0).unwrap();
    index.append(107, 4200).unwrap();
    index.flush().unwrap();
    drop(index); // a crash: never trimmed

    let index = OffsetIndex::open(&path, 100, 4096).unwrap();
    // Kafka's view: every slot counts, the index is full, the last "entry" is (base, 0).
    assert_eq!(
        (index.entries(), index.max_entries(), index.is_full()),
        (512, 512, true)
    );
    assert_eq!(index.last_offset(), 100);
    assert_eq!(
        corrupt_kind(index.sanity_check(None)),
        (16, CorruptKind::ZeroPaddedTail)
    );
    // The segment layer rebuilds: reset, then append again.
    index.reset().unwrap();
    index.append(100, 0).unwrap();
    index.sanity_check(None).unwrap();
}

#[test]
fn untrimmed_zero_padded_time_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("00000000000000000100.timeindex");
    let index = TimeIndex::open(&path, 100, 1200).unwrap();
    index.maybe_append(1_700_000_000_000, 103, false).unwrap();
    drop(index);

    let index = TimeIndex::open(&path, 100, 1200).unwrap();
    assert_eq!((index.entries(), index.is_full()), (100, true));
    // KAFKA-10207 / KAFKA-19200: Kafka would see a largest timestamp of 0 here.
    assert_eq!(
        index.last_entry(),
        TimestampOffset {
            timestamp_ms: 0,
            offset: 100
        }
    );
    assert_eq!(
        corrupt_kind(index.sanity_check(None)),
        (12, CorruptKind::ZeroPaddedTail)
    );
    // The full index must not overrun with the roll-time entry (KAFKA-10207's BufferOverflow).
    assert!(matches!(
        index.maybe_append(1_800_000_000_000, 200, true),
        Err(Error::IndexFull { .. })
    ));
}

#[test]
fn short_files_hold_no_entry() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("0.index");
    std::fs::write(&path, [0, 0, 0, 1, 0]).unwrap();
    let index = OffsetIndex::open(&path, 0, 4096).unwrap();
    assert_eq!(
        (index.entries(), index.max_entries(), index.is_full()),
        (0, 0, true)
    );
    assert_eq!(
        index.lookup(10),
        OffsetPosition {
            offset: 0,
            position: 0
        }
    );
    assert_eq!(
        corrupt_kind(index.sanity_check(None)),
        (0, CorruptKind::LengthNotMultiple)
    );
    index.trim_to_valid_size().unwrap();
    index.sanity_check(None).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);

    let path = dir.path().join("0.timeindex");
    std::fs::write(&path, [1; 11]).unwrap();
    let index = TimeIndex::open(&path, 0, 4096).unwrap();
    assert_eq!((index.entries(), index.max_entries()), (0, 0));
    assert_eq!(
        index.lookup(10),
        TimestampOffset {
            timestamp_ms: -1,
            offset: 0
        }
    );
    assert_eq!(
        corrupt_kind(index.sanity_check(None)),
        (0, CorruptKind::LengthNotMultiple)
    );
}

#[test]
fn empty_file_reopens_empty_and_full() {
    // Brokers trim an index with no entries to zero bytes (most of the corpus).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("0.index");
    std::fs::write(&path, []).unwrap();
    let index = OffsetIndex::open(&path, 0, 4096).unwrap();
    assert!(index.is_full(), "KAFKA-6388: a zero-length index is full");
    index.sanity_check(Some(0)).unwrap();
    assert!(index.resize(4096).unwrap());
    index.append(0, 0).unwrap();
    assert_eq!(index.entries(), 1);
}

#[test]
fn garbage_is_reported_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let mut x = 0x1234_5678_9abc_def0_u64;
    let garbage: Vec<u8> = (0..960)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let path = dir.path().join("0.index");
    std::fs::write(&path, &garbage).unwrap();
    let index = OffsetIndex::open(&path, 0, 4096).unwrap();
    assert_eq!(index.entries(), 120);
    let _ = index.lookup(12345); // any answer, no panic
    let (position, _) = corrupt_kind(index.sanity_check(Some(1 << 20)));
    assert!(position < 960 && position % 8 == 0);

    let path = dir.path().join("0.timeindex");
    std::fs::write(&path, &garbage).unwrap();
    let index = TimeIndex::open(&path, 0, 4096).unwrap();
    assert_eq!(index.entries(), 80);
    let _ = index.lookup(12345);
    let (position, _) = corrupt_kind(index.sanity_check(None));
    assert!(position < 960 && position % 12 == 0);
}

#[test]
fn odd_length_keeps_whole_entries_and_trims_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("0.index");
    let mut bytes: Vec<u8> = [(1i32, 10i32), (4, 300), (9, 700)]
        .iter()
        .flat_map(|&(o, p)| [o.to_be_bytes(), p.to_be_bytes()].concat())
        .collect();
    bytes.extend_from_slice(&[7, 7, 7]);
    std::fs::write(&path, &bytes).unwrap();
    let index = OffsetIndex::open(&path, 0, 4096).unwrap();
    assert_eq!((index.entries(), index.file_len()), (3, 27));
    assert_eq!(
        index.lookup(5),
        OffsetPosition {
            offset: 4,
            position: 300
        }
    );
    assert_eq!(
        corrupt_kind(index.sanity_check(Some(1000))),
        (24, CorruptKind::LengthNotMultiple)
    );
    index.trim_to_valid_size().unwrap();
    index.sanity_check(Some(1000)).unwrap();
    assert_eq!(
        corrupt_kind(index.sanity_check(Some(700))),
        (16, CorruptKind::PositionOutOfRange)
    );
    index.close().unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), bytes[..24]);
}

#[test]
fn read_only_open_of_a_missing_file_fails_with_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing.index");
    match OffsetIndex::open_read_only(&path, 0) {
        Err(Error::Io {
            path: p,
            op: "open",
            source,
        }) => {
            assert_eq!(p, path);
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        }
        other => panic!("expected Io, got {other:?}"),
    }
    assert!(!path.exists());
}

/// A mapped index holds no descriptor (a segment costs one, its `.log`): a resize after a
/// rename reopens the file by its new name.
#[test]
fn a_resize_after_a_rename_reopens_the_file_by_its_new_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("00000000000000000000.index");
    let renamed = dir.path().join("00000000000000000000.index.deleted");
    let index = OffsetIndex::open(&path, 0, 4096).unwrap();
    index.append(3, 30).unwrap();
    index.rename_to(&renamed).unwrap();
    index.trim_to_valid_size().unwrap();
    assert!(!path.exists());
    assert_eq!(std::fs::read(&renamed).unwrap(), [0, 0, 0, 3, 0, 0, 0, 30]);
    index.flush().unwrap();
    assert!(index.resize(800).unwrap());
    assert_eq!(std::fs::metadata(&renamed).unwrap().len(), 800);
    index.append(5, 50).unwrap();
    assert_eq!(index.lookup(6).position, 50);
    // The file is gone: a resize now fails with the path, it does not panic.
    std::fs::remove_file(&renamed).unwrap();
    match index.resize(400) {
        Err(Error::Io {
            path, op: "resize", ..
        }) => assert_eq!(path, renamed),
        other => panic!("expected Io, got {other:?}"),
    }
    // ... and the map is kept: lookups still work.
    assert_eq!(index.lookup(6).position, 50);
}
