//! Read-only opens beside a process that owns the file: they never map it, so a truncation by
//! the owner cannot kill the reader with `SIGBUS` (issue 12, bug 1).
//!
//! A mapped reader that touches a page past the file's new end dies of a signal, which would
//! take the whole test binary down; so the body runs in a child process (this test binary,
//! re-executed for one test with `SEGLOG_READ_ONLY_CHILD` set) and the parent checks that the
//! child exited normally.

use std::process::Command;

use seglog_index_core::{OffsetIndex, OffsetPosition, TimeIndex, TimestampOffset};

const CHILD: &str = "SEGLOG_READ_ONLY_CHILD";

/// Runs `body` in a child process when called from the parent, or runs it when this is the
/// child; the parent fails if the child was killed by a signal or failed.
fn in_child(test_name: &str, body: impl FnOnce()) {
    if std::env::var_os(CHILD).is_some() {
        body();
        return;
    }
    let status = Command::new(std::env::current_exe().unwrap())
        .args([test_name, "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD, "1")
        .status()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        status.signal(),
        None,
        "the reader died of a signal (SIGBUS = 7): {status}"
    );
    assert!(status.success(), "the child failed: {status}");
}

#[test]
fn read_only_offset_index_survives_the_owner_truncating_the_file() {
    in_child(
        "read_only::read_only_offset_index_survives_the_owner_truncating_the_file",
        || {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("00000000000000000100.index");
            // The owner's preallocated index with a few entries (many pages long).
            let owner = OffsetIndex::open(&path, 100, 1024 * 1024).unwrap();
            for i in 1..=4 {
                owner.append(100 + i * 10, i as u32 * 4096).unwrap();
            }
            owner.flush().unwrap();
            let reader = OffsetIndex::open_read_only(&path, 100).unwrap();
            // The owner rolls (trims to its entries), then truncates them all and trims again:
            // the file shrinks to nothing.
            owner.trim_to_valid_size().unwrap();
            owner.truncate().unwrap();
            owner.trim_to_valid_size().unwrap();
            assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
            // Every page the reader saw at open is still readable: it holds a copy.
            let last = reader.entries() - 1;
            assert_eq!(
                reader.entry(last),
                Some(OffsetPosition {
                    offset: 100,
                    position: 0
                })
            );
            assert_eq!(
                reader.entry(1),
                Some(OffsetPosition {
                    offset: 120,
                    position: 8192
                })
            );
            assert!(reader.sanity_check(None).is_err(), "zero-padded tail");
        },
    );
}

#[test]
fn read_only_time_index_survives_the_owner_truncating_the_file() {
    in_child(
        "read_only::read_only_time_index_survives_the_owner_truncating_the_file",
        || {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("00000000000000000000.timeindex");
            let owner = TimeIndex::open(&path, 0, 1024 * 1024).unwrap();
            owner.maybe_append(1_000, 5, false).unwrap();
            owner.maybe_append(2_000, 9, false).unwrap();
            let reader = TimeIndex::open_read_only(&path, 0).unwrap();
            owner.truncate().unwrap();
            owner.trim_to_valid_size().unwrap();
            assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
            assert_eq!(
                reader.entry(0),
                Some(TimestampOffset {
                    timestamp_ms: 1_000,
                    offset: 5
                })
            );
            let last = reader.entries() - 1;
            assert_eq!(
                reader.entry(last),
                Some(TimestampOffset {
                    timestamp_ms: 0,
                    offset: 0
                })
            );
        },
    );
}

#[test]
fn read_only_open_is_a_copy_of_the_file_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("00000000000000000000.index");
    let owner = OffsetIndex::open(&path, 0, 80).unwrap();
    owner.append(3, 30).unwrap();
    owner.close().unwrap();
    let reader = OffsetIndex::open_read_only(&path, 0).unwrap();
    assert_eq!((reader.entries(), reader.file_len()), (1, 8));
    // Changes made after the open are not seen (a copy, not a view of the file).
    std::fs::write(&path, [0, 0, 0, 4, 0, 0, 0, 40, 0, 0, 0, 5, 0, 0, 0, 50]).unwrap();
    assert_eq!(reader.entries(), 1);
    assert_eq!(reader.lookup(9).offset, 3);
    reader.close().unwrap();
}
