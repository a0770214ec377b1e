//! The segment cache: sealed segments' files are closed when evicted and reopened on use,
//! never under a reader; the active segment stays open; eviction races reads.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use seglog_segment::{
    ActiveSegment, FileKind, OpenMode, Segment, SegmentCache, SegmentConfig, SegmentOpenOptions,
    TempSuffix, file_path,
};

use crate::support::{append_batch, simple_batch, small_config, tempdir};

const RECORDS: usize = 20;

fn cached(cache: &SegmentCache) -> SegmentConfig {
    SegmentConfig {
        cache: Some(cache.clone()),
        ..small_config()
    }
}

/// `count` sealed segments of three batches of `RECORDS` records each, bases 0, 60, 120, ...
fn sealed_segments(
    dir: &std::path::Path,
    config: &SegmentConfig,
    count: usize,
) -> Vec<Arc<Segment>> {
    (0..count)
        .map(|n| {
            let base = (n * 3 * RECORDS) as i64;
            let mut active = ActiveSegment::create(dir, base, config).unwrap();
            for b in 0..3 {
                let first = base + (b * RECORDS) as i64;
                append_batch(
                    &mut active,
                    &simple_batch(first, RECORDS, 1_000 + first, 40),
                );
            }
            active.seal().unwrap()
        })
        .collect()
}

/// The batch holding `offset`, as its segment reads it.
fn read_at(segment: &Segment, offset: i64) -> Vec<u8> {
    let slice = segment.read(offset, 1, u64::MAX, true).unwrap().unwrap();
    slice.read_to_vec().unwrap()
}

#[test]
fn eviction_bounds_open_segments_and_reads_reopen_them() {
    let dir = tempdir();
    let cache = SegmentCache::new(4);
    let config = cached(&cache);
    let segments = sealed_segments(dir.path(), &config, 20);
    assert!(cache.open_segments() <= 4, "{}", cache.open_segments());
    assert_eq!(segments.iter().filter(|s| s.is_open()).count(), 4);
    for (n, segment) in segments.iter().enumerate() {
        let base = (n * 3 * RECORDS) as i64;
        for offset in [base, base + 25, base + 59] {
            let bytes = read_at(segment, offset);
            let first = offset / RECORDS as i64 * RECORDS as i64;
            assert_eq!(bytes, simple_batch(first, RECORDS, 1_000 + first, 40));
        }
        let found = segment
            .find_offset_by_timestamp(1_000 + base + 30, 0)
            .unwrap();
        assert_eq!(found.map(|f| f.offset), Some(base + 30));
        assert_eq!(segment.read_next_offset().unwrap(), base + 60);
        assert!(cache.open_segments() <= 4);
    }
    assert_eq!(segments.iter().filter(|s| s.is_open()).count(), 4);
    // Closed segments still know their metadata without reopening.
    let closed = segments.iter().find(|s| !s.is_open()).unwrap();
    assert_eq!(closed.size(), segments[19].size());
    assert!(closed.offset_index_entries() > 0);
    assert!(closed.time_index_entries() > 0);
    assert!(closed.max_timestamp_and_offset().timestamp_ms > 0);
    assert!(!closed.is_open());
}

#[test]
fn the_active_segment_is_never_evicted_and_not_counted() {
    let dir = tempdir();
    let cache = SegmentCache::new(1);
    let config = cached(&cache);
    let sealed = sealed_segments(dir.path(), &config, 3);
    let mut active = ActiveSegment::create(dir.path(), 1_000, &config).unwrap();
    append_batch(&mut active, &simple_batch(1_000, RECORDS, 5_000, 40));
    for segment in &sealed {
        read_at(segment, segment.base_offset());
        assert!(active.segment().is_open());
    }
    assert_eq!(cache.evict_all(), 1);
    assert!(active.segment().is_open());
    append_batch(&mut active, &simple_batch(1_020, RECORDS, 5_020, 40));
    assert_eq!(
        read_at(active.segment(), 1_030),
        simple_batch(1_020, RECORDS, 5_020, 40)
    );
    // Sealed, it counts and can be evicted like the others.
    let now_sealed = active.seal().unwrap();
    assert_eq!(cache.open_segments(), 1);
    assert_eq!(cache.evict_all(), 1);
    assert!(!now_sealed.is_open());
    assert_eq!(
        read_at(&now_sealed, 1_005),
        simple_batch(1_000, RECORDS, 5_000, 40)
    );
}

#[test]
fn a_slice_and_a_header_walk_outlive_the_eviction_of_their_segment() {
    let dir = tempdir();
    let cache = SegmentCache::new(8);
    let segments = sealed_segments(dir.path(), &cached(&cache), 2);
    let slice = segments[0]
        .read(0, u32::MAX, u64::MAX, true)
        .unwrap()
        .unwrap();
    let mut headers = segments[0].batch_headers(0);
    let first = headers.next().unwrap().unwrap();
    assert_eq!(cache.evict_all(), 2);
    assert!(!segments[0].is_open());
    // Both hold their own reference to the `.log`: still readable, nothing reopened.
    assert_eq!(
        slice.read_to_vec().unwrap().len() as u64,
        segments[0].size()
    );
    assert_eq!(headers.count(), 2);
    assert_eq!(first.last_offset, RECORDS as i64 - 1);
    assert!(!segments[0].is_open());
}

#[test]
fn a_closed_segment_is_renamed_on_disk_and_reopens_under_its_new_name() {
    let dir = tempdir();
    let cache = SegmentCache::new(8);
    let segments = sealed_segments(dir.path(), &cached(&cache), 2);
    let before = read_at(&segments[1], 70);
    cache.evict_all();
    segments[1].mark_deleted().unwrap();
    let deleted = FileKind::LOG.with_suffix(Some(TempSuffix::Deleted));
    assert!(file_path(dir.path(), 60, deleted).exists());
    assert!(
        file_path(
            dir.path(),
            60,
            FileKind::INDEX.with_suffix(Some(TempSuffix::Deleted))
        )
        .exists()
    );
    assert!(!file_path(dir.path(), 60, FileKind::INDEX).exists());
    assert_eq!(read_at(&segments[1], 70), before);
    segments[1].delete_files().unwrap();
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
}

#[test]
fn indexes_rebuilt_in_memory_by_a_read_only_open_survive_an_eviction_of_the_log() {
    let dir = tempdir();
    let writer_cache = SegmentCache::new(8);
    let segments = sealed_segments(dir.path(), &cached(&writer_cache), 1);
    drop(segments);
    std::fs::remove_file(file_path(dir.path(), 0, FileKind::INDEX)).unwrap();
    let cache = SegmentCache::new(1);
    let (segment, report) = Segment::open(
        dir.path(),
        0,
        &cached(&cache),
        SegmentOpenOptions::read_only(),
    )
    .unwrap();
    assert!(report.rebuilt.is_some());
    assert_eq!(segment.mode(), OpenMode::ReadOnly);
    // The rebuilt indexes hold no descriptor; the `.log`'s is closed like any other (so a
    // read-only recovery of any number of segments stays in the cache's bound), and the
    // reopen uses the indexes rebuilt in memory again: the missing file is not read.
    let entries = (segment.offset_index_entries(), segment.time_index_entries());
    assert!(entries.0 > 0, "{entries:?}");
    assert_eq!(cache.evict_all(), 1);
    assert!(!segment.is_open());
    assert_eq!(read_at(&segment, 45), simple_batch(40, RECORDS, 1_040, 40));
    assert!(segment.is_open());
    assert_eq!(
        (segment.offset_index_entries(), segment.time_index_entries()),
        entries
    );
    assert!(!file_path(dir.path(), 0, FileKind::INDEX).exists());
}

#[test]
fn eviction_racing_reads_never_fails_a_read() {
    let dir = tempdir();
    let cache = SegmentCache::new(2);
    let segments = Arc::new(sealed_segments(dir.path(), &cached(&cache), 12));
    let stop = Arc::new(AtomicBool::new(false));
    let evictor = {
        let (cache, stop) = (cache.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut evicted = 0;
            while !stop.load(Ordering::Relaxed) {
                evicted += cache.evict_all();
                std::thread::yield_now();
            }
            evicted
        })
    };
    let readers: Vec<_> = (0..3)
        .map(|t| {
            let segments = Arc::clone(&segments);
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                for i in 0..400usize {
                    let n = (i * 7 + t * 5) % segments.len();
                    let segment = &segments[n];
                    let base = segment.base_offset();
                    let offset = base + ((i * 13) % (3 * RECORDS)) as i64;
                    let first = (offset - base) / RECORDS as i64 * RECORDS as i64 + base;
                    let expected = simple_batch(first, RECORDS, 1_000 + first, 40);
                    assert_eq!(read_at(segment, offset), expected, "read of {offset}");
                    let copied = segment
                        .read_into(offset, 1, u64::MAX, true, &mut buf)
                        .unwrap()
                        .unwrap();
                    assert_eq!(
                        copied.position,
                        segment
                            .translate_offset(offset, 0)
                            .unwrap()
                            .unwrap()
                            .position
                    );
                    assert_eq!(buf, expected, "read_into of {offset}");
                    let by_time = segment.find_offset_by_timestamp(1_000 + offset, 0).unwrap();
                    assert_eq!(by_time.map(|f| f.offset), Some(offset));
                }
            })
        })
        .collect();
    for reader in readers {
        reader.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let evicted = evictor.join().unwrap();
    assert!(evicted > 0, "the evictor never closed a segment");
    assert!(cache.open_segments() <= 12);
}
