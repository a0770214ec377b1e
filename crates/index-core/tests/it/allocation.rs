//! A writable index's preallocated space is reserved for real (not a sparse file), so a full
//! disk is an error when the index is created or grown, never a fault on a store to its map.

use std::os::unix::fs::MetadataExt;

use seglog_index_core::{OffsetIndex, TimeIndex};

fn allocated_bytes(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).unwrap().blocks() * 512
}

#[test]
fn created_and_grown_indexes_have_their_blocks_reserved() {
    let dir = tempfile::tempdir().unwrap();
    let index_path = dir.path().join("00000000000000000000.index");
    let index = OffsetIndex::open(&index_path, 0, 1 << 20).unwrap();
    let len = std::fs::metadata(&index_path).unwrap().len();
    assert_eq!(len, 1 << 20);
    assert!(
        allocated_bytes(&index_path) >= len,
        "{} of {len} bytes allocated",
        allocated_bytes(&index_path)
    );
    index.resize(2 << 20).unwrap();
    assert!(allocated_bytes(&index_path) >= 2 << 20);

    let time_path = dir.path().join("00000000000000000000.timeindex");
    let _time = TimeIndex::open(&time_path, 0, 1 << 20).unwrap();
    let len = std::fs::metadata(&time_path).unwrap().len();
    assert!(allocated_bytes(&time_path) >= len);
}

#[test]
fn a_sparse_index_left_by_another_writer_is_allocated_when_opened_for_writing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("00000000000000000000.index");
    // What a broker's preallocation leaves: a sparse file of zeros.
    std::fs::File::create(&path)
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    assert!(allocated_bytes(&path) < 1 << 20, "the file starts sparse");
    let _index = OffsetIndex::open(&path, 0, 1 << 20).unwrap();
    assert!(allocated_bytes(&path) >= 1 << 20);
}
