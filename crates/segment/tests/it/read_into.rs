//! `Segment::read_into` (one speculative `pread`) against `Segment::read` +
//! `FileSlice::read_into` (header walk, then the copy): the same bytes and metadata for
//! every offset and limit, small and large batches, multi-batch appends, the tail after the
//! last index entry, corrupt headers, reused buffers and concurrent appends.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use proptest::prelude::*;
use seglog_records::Compression;
use seglog_segment::{
    ActiveSegment, CorruptKind, Error, OpenMode, Segment, SegmentConfig, SegmentOpenOptions,
};

use crate::support::{append_batch, batch, preads_of, scan, simple_batch, small_config, tempdir};

/// Both paths for one request; panics unless they agree. Returns the bytes read (`None`
/// when the segment holds nothing at or after the offset). `buf` is reused as given.
fn same_read(
    segment: &Segment,
    offset: i64,
    max_bytes: u32,
    max_position: u64,
    min_one: bool,
    buf: &mut Vec<u8>,
) -> Option<Vec<u8>> {
    let label = format!(
        "offset {offset}, max_bytes {max_bytes}, max_position {max_position}, min_one {min_one}"
    );
    let expected = segment
        .read(offset, max_bytes, max_position, min_one)
        .and_then(|slice| {
            slice
                .map(|slice| slice.read_to_vec().map(|bytes| (slice, bytes)))
                .transpose()
        });
    let got = segment.read_into(offset, max_bytes, max_position, min_one, buf);
    match (expected, got) {
        (Ok(Some((slice, bytes))), Ok(Some(copied))) => {
            assert_eq!(copied.position, slice.position(), "{label}: position");
            assert_eq!(copied.offsets, slice.offsets(), "{label}: offsets");
            assert_eq!(buf.len(), bytes.len(), "{label}: length");
            assert!(*buf == bytes, "{label}: bytes");
            Some(bytes)
        }
        (Ok(None), Ok(None)) => {
            assert!(buf.is_empty(), "{label}: buffer after None");
            None
        }
        (Err(a), Err(b)) => {
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{label}: errors");
            assert!(buf.is_empty(), "{label}: buffer after an error");
            None
        }
        (a, b) => panic!("{label}: read {a:?} vs read_into {b:?}"),
    }
}

/// Every offset from below the base to past the end, with a few size limits.
fn check_every_offset(segment: &Segment, buf: &mut Vec<u8>) {
    let base = segment.base_offset();
    let next = segment.read_next_offset().unwrap();
    let size = segment.size();
    for offset in base - 1..=next + 1 {
        for (max_bytes, min_one) in [(1, true), (0, false), (0, true), (100, false), (5000, true)] {
            same_read(segment, offset, max_bytes, u64::MAX, min_one, buf);
        }
        same_read(segment, offset, 1 << 20, size / 2, false, buf);
        same_read(segment, offset, 1 << 20, size / 2, true, buf);
    }
}

fn config(interval: u32) -> SegmentConfig {
    SegmentConfig {
        index_interval_bytes: interval,
        max_index_bytes: 64 * 1024,
        ..small_config()
    }
}

/// Appends `batches` batches of `count` records of `len`-byte values each, one batch per
/// append (a leader).
fn fill(active: &mut ActiveSegment, from: i64, batches: usize, count: usize, len: usize) -> i64 {
    let mut offset = from;
    for i in 0..batches {
        append_batch(
            active,
            &simple_batch(offset, count, 1_000 + offset, len + i % 7),
        );
        offset += count as i64;
    }
    offset
}

#[test]
fn large_batches_every_one_indexed() {
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, &config(4096)).unwrap();
    fill(&mut active, 0, 12, 10, 1_000);
    assert!(active.segment().offset_index_entries() >= 10);
    let mut buf = Vec::new();
    check_every_offset(active.segment(), &mut buf);
    let segment = active.seal().unwrap();
    check_every_offset(&segment, &mut buf);
}

#[test]
fn small_batches_many_per_index_entry() {
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, &config(4096)).unwrap();
    fill(&mut active, 0, 300, 2, 30);
    let segment = active.segment();
    assert!(segment.offset_index_entries() >= 2);
    assert!(segment.offset_index_entries() * 20 < 300);
    let mut buf = Vec::new();
    check_every_offset(segment, &mut buf);
}

#[test]
fn mixed_sizes_defeat_the_speculation_and_fall_back() {
    // Small appends, then an unindexed large one before an indexed one: offsets in the large
    // append lie below the next entry's batch.
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, &config(4096)).unwrap();
    let mut offset = 0;
    for round in 0..6 {
        offset = fill(&mut active, offset, 20 + round, 1, 200);
        offset = fill(&mut active, offset, 1, 30, 400);
        offset = fill(&mut active, offset, 2, 5, 3_000);
    }
    let mut buf = Vec::new();
    check_every_offset(active.segment(), &mut buf);
}

#[test]
fn multi_batch_follower_appends_one_entry_per_append() {
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, &config(4096)).unwrap();
    let mut offset = 0i64;
    for append in 0..10 {
        // 1 to 4 batches of ~2.5 KB in one append: one entry at most, at the append start.
        let mut bytes = Vec::new();
        for _ in 0..=(append % 4) {
            bytes.extend(simple_batch(offset, 5, 1_000 + offset, 500));
            offset += 5;
        }
        append_batch(&mut active, &bytes);
    }
    let mut buf = Vec::new();
    check_every_offset(active.segment(), &mut buf);
    // A rebuilt index indexes batches, not appends: still the same answers.
    let segment = active.seal().unwrap();
    drop(segment);
    std::fs::remove_file(crate::support::path(
        dir.path(),
        0,
        seglog_segment::FileKind::new(seglog_segment::FileType::Index),
    ))
    .unwrap();
    let (segment, _) =
        Segment::open(dir.path(), 0, &config(4096), SegmentOpenOptions::default()).unwrap();
    check_every_offset(&segment, &mut buf);
}

#[test]
fn first_batch_last_batch_and_the_tail_after_the_last_entry() {
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 100, &config(4096)).unwrap();
    // Large batches (indexed), then small ones after the last entry.
    let offset = fill(&mut active, 100, 4, 10, 1_000);
    let end = fill(&mut active, offset, 15, 1, 40);
    let segment = active.segment();
    let mut buf = Vec::new();
    for offset in [
        99,
        100,
        109,
        110,
        offset - 1,
        offset,
        offset + 3,
        end - 1,
        end,
        end + 1,
    ] {
        for (max_bytes, min_one) in [(1, true), (0, false), (1 << 20, false), (150, true)] {
            same_read(segment, offset, max_bytes, u64::MAX, min_one, &mut buf);
        }
    }
    assert_eq!(
        same_read(segment, end - 1, 1, u64::MAX, true, &mut buf)
            .map(|b| scan(&b, 0).batches[0].last_offset),
        Some(end - 1)
    );
    assert!(same_read(segment, end, 1, u64::MAX, true, &mut buf).is_none());
    // An empty segment holds nothing.
    let dir = tempdir();
    let empty = ActiveSegment::create(dir.path(), 0, &config(4096)).unwrap();
    assert!(same_read(empty.segment(), 0, 1, u64::MAX, true, &mut buf).is_none());
}

#[test]
fn offset_gaps_like_a_compacted_log() {
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, &config(4096)).unwrap();
    let mut offset = 0;
    for i in 0..30i64 {
        let len = if i % 3 == 0 { 4_000 } else { 300 };
        append_batch(&mut active, &simple_batch(offset, 2, 1_000 + offset, len));
        offset += 2 + (i % 4) * 5; // gaps of 0 to 15 offsets
    }
    let mut buf = Vec::new();
    check_every_offset(active.segment(), &mut buf);
}

#[test]
fn compressed_batches() {
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, &config(512)).unwrap();
    let mut offset = 0;
    for i in 0..20i64 {
        let records: Vec<(i64, usize)> = (0..(1 + i % 6))
            .map(|j| (1_000 + j, 200 + 50 * j as usize))
            .collect();
        let compression = if i % 2 == 0 {
            Compression::Gzip
        } else {
            Compression::None
        };
        append_batch(&mut active, &batch(offset, &records, compression));
        offset += records.len() as i64;
    }
    let mut buf = Vec::new();
    check_every_offset(active.segment(), &mut buf);
}

/// Flips the magic byte of the batch at `position` through a second handle.
fn corrupt_magic(segment: &Segment, position: u64) {
    use std::os::unix::fs::FileExt;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(segment.log_path())
        .unwrap();
    file.write_all_at(&[7], position + 16).unwrap();
}

#[test]
fn corrupt_headers_give_reads_typed_errors() {
    for (count, len) in [(10, 1_000), (1, 40)] {
        let dir = tempdir();
        let mut active = ActiveSegment::create(dir.path(), 0, &config(4096)).unwrap();
        fill(&mut active, 0, 40, count, len);
        let segment = active.seal().unwrap();
        let batches = scan(&std::fs::read(segment.log_path()).unwrap(), 0).batches;
        let victim = batches[batches.len() / 2];
        corrupt_magic(&segment, victim.position);
        let mut buf = vec![1, 2, 3];
        let mut errors = 0;
        for offset in 0..=segment.read_next_offset().unwrap_or(0) + 1 {
            let expected = segment.read(offset, 1, u64::MAX, true);
            let got = segment.read_into(offset, 1, u64::MAX, true, &mut buf);
            match (&expected, &got) {
                (Err(Error::Corrupt { position, kind, .. }), Ok(Some(copied))) => {
                    // The only difference allowed: the speculation skipped the corrupt
                    // header, which lies before the batch it read.
                    assert_eq!(*position, victim.position);
                    assert!(matches!(kind, CorruptKind::Batch(_)));
                    assert!(copied.position > victim.position, "offset {offset}");
                }
                _ => {
                    same_read(&segment, offset, 1, u64::MAX, true, &mut buf);
                    if let Err(Error::Corrupt { position, .. }) = got {
                        assert_eq!(position, victim.position);
                        errors += 1;
                    }
                }
            }
        }
        // Reads of the corrupt batch itself fail the same way on both paths.
        assert!(errors >= 1, "batches of {count}x{len}");
    }
}

#[test]
fn a_reused_buffer_keeps_its_allocation_and_loses_its_old_contents() {
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, &config(4096)).unwrap();
    fill(&mut active, 0, 20, 10, 1_000);
    let segment = active.segment();
    let mut buf = vec![0xAB; 100_000];
    let ptr = buf.as_ptr();
    let bytes = same_read(segment, 55, 1, u64::MAX, true, &mut buf).unwrap();
    assert_eq!(buf, bytes);
    assert_eq!(buf.as_ptr(), ptr, "no reallocation");
    assert!(buf.capacity() >= 100_000);
    // A larger read after a small one, then nothing at all.
    same_read(segment, 0, 50_000, u64::MAX, true, &mut buf);
    assert_eq!(buf.as_ptr(), ptr);
    assert!(same_read(segment, 10_000, 1, u64::MAX, true, &mut buf).is_none());
    assert!(buf.is_empty());
}

#[test]
fn readers_racing_appends_see_published_whole_batches() {
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, &config(1024)).unwrap();
    let segment = Arc::clone(active.segment());
    let done = Arc::new(AtomicBool::new(false));
    let appended = Arc::new(AtomicI64::new(0));
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (segment, done, appended) = (
                Arc::clone(&segment),
                Arc::clone(&done),
                Arc::clone(&appended),
            );
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut i = r as i64;
                let mut checks = 0;
                while !done.load(Ordering::Acquire) || checks < 100 {
                    let known = appended.load(Ordering::Acquire);
                    if known == 0 {
                        continue;
                    }
                    i += 7919;
                    let offset = i % known;
                    let size_before = segment.size();
                    let copied = segment
                        .read_into(offset, (i % 3000) as u32, u64::MAX, true, &mut buf)
                        .unwrap()
                        .unwrap();
                    let end = copied.position + buf.len() as u64;
                    assert!(end <= segment.size(), "past the published size");
                    assert!(copied.position < segment.size().max(size_before));
                    let found = scan(&buf, copied.position);
                    let first = found.batches.first().expect("a whole first batch");
                    assert_eq!(first.position, copied.position);
                    assert!(first.last_offset >= offset);
                    assert_eq!(first.last_offset, copied.offsets.first_batch_last_offset);
                    checks += 1;
                }
            })
        })
        .collect();
    let mut offset = 0i64;
    for i in 0..400usize {
        let count = 1 + i % 4;
        let len = if i % 5 == 0 { 1_500 } else { 40 };
        append_batch(
            &mut active,
            &simple_batch(offset, count, 1_000 + offset, len),
        );
        offset += count as i64;
        appended.store(offset, Ordering::Release);
    }
    done.store(true, Ordering::Release);
    for reader in readers {
        reader.join().unwrap();
    }
}

#[test]
fn read_only_reopen_reads_the_same() {
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, &config(4096)).unwrap();
    fill(&mut active, 0, 30, 4, 700);
    active.seal().unwrap();
    let options = SegmentOpenOptions {
        mode: OpenMode::ReadOnly,
        ..SegmentOpenOptions::default()
    };
    let (segment, _) = Segment::open(dir.path(), 0, &config(4096), options).unwrap();
    let mut buf = Vec::new();
    check_every_offset(&segment, &mut buf);
}

/// One append of the random log: batches of `(records, value length)`.
type AppendSpec = Vec<(usize, usize)>;

fn append_spec() -> impl Strategy<Value = AppendSpec> {
    // Tiny batches, batches around the interval, and batches several times larger; one to
    // three batches per append (a follower appends many at once).
    let batch = prop_oneof![
        3 => (1usize..4, 0usize..60),
        2 => (1usize..6, 100usize..900),
        2 => (1usize..4, 1_000usize..4_000),
    ];
    prop_oneof![
        4 => proptest::collection::vec(batch.clone(), 1..2),
        1 => proptest::collection::vec(batch, 2..4),
    ]
}

/// A request: (offset pick, max_bytes pick, max_position pick, min_one_message).
type Request = (u16, u8, u16, bool);

fn run_random(interval: u32, appends: Vec<(AppendSpec, u8)>, requests: Vec<Request>) {
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, &config(interval)).unwrap();
    let mut offset = 0i64;
    for (append, gap) in &appends {
        let mut bytes = Vec::new();
        for &(count, len) in append {
            bytes.extend(simple_batch(offset, count, 1_000 + offset, len));
            offset += count as i64;
        }
        append_batch(&mut active, &bytes);
        offset += i64::from(*gap % 4); // sometimes a gap, as compaction leaves
    }
    let segment = active.segment();
    let size = segment.size();
    let next = segment.read_next_offset().unwrap();
    let mut buf = vec![0x5A; 3_000];
    for (offset_pick, max_pick, position_pick, min_one) in requests {
        let offset = i64::from(offset_pick) % (next + 2) - 1;
        let max_bytes = match max_pick % 5 {
            0 => 0,
            1 => 1,
            2 => u32::from(max_pick) * 37,
            3 => 1 << 20,
            _ => u32::from(max_pick) * 131,
        };
        let max_position = match position_pick % 3 {
            0 => u64::MAX,
            _ => u64::from(position_pick) * size / u64::from(u16::MAX),
        };
        same_read(segment, offset, max_bytes, max_position, min_one, &mut buf);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn read_into_equals_read_then_copy(
        interval in prop_oneof![Just(100u32), Just(1_000), Just(4_096)],
        appends in proptest::collection::vec((append_spec(), any::<u8>()), 1..40),
        requests in proptest::collection::vec(any::<Request>(), 1..60),
    ) {
        run_random(interval, appends, requests);
    }
}

#[test]
fn one_pread_for_large_batches_and_for_small_batches_near_the_floor() {
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, &config(4096)).unwrap();
    // ~10.5 KB batches, every one indexed (the point-read benchmark's shape).
    fill(&mut active, 0, 12, 10, 1_000);
    let segment = active.seal().unwrap();
    let mut buf = Vec::new();
    for offset in [35, 40, 49, 59, 99, 115] {
        let walk = preads_of(|| {
            let slice = segment.read(offset, 1, u64::MAX, true).unwrap().unwrap();
            slice.read_into(&mut Vec::new()).unwrap();
        });
        let copied = preads_of(|| {
            segment
                .read_into(offset, 1, u64::MAX, true, &mut buf)
                .unwrap()
                .unwrap();
        });
        assert_eq!(copied, 1, "offset {offset} (read + copy: {walk})");
        // A scan fetch of 1 MiB from a batch start: one pread too.
        let scan = preads_of(|| {
            segment
                .read_into(offset, 1 << 20, u64::MAX, true, &mut buf)
                .unwrap()
                .unwrap();
        });
        assert_eq!(scan, 1, "offset {offset}: scan fetch");
    }
    // Small batches: the span from the floor and the batch in one pread.
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, &config(4096)).unwrap();
    fill(&mut active, 0, 300, 2, 30);
    let segment = active.seal().unwrap();
    for offset in [1, 77, 301, 598] {
        let copied = preads_of(|| {
            segment
                .read_into(offset, 1, u64::MAX, true, &mut buf)
                .unwrap()
                .unwrap();
        });
        assert_eq!(copied, 1, "offset {offset}");
    }
}
