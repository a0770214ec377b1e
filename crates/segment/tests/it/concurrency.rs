//! One writer, many readers of the active segment: readers never see unpublished bytes, the
//! max timestamp and its offset change together (KAFKA-12981), truncation and deletion do
//! not crash readers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use seglog_segment::{ActiveSegment, Error, IoOp};

use seglog_segment::SegmentConfig;

use crate::support::{scan, simple_batch, small_config, tempdir};

fn config() -> SegmentConfig {
    SegmentConfig {
        max_index_bytes: 64 * 1024,
        ..small_config()
    }
}

/// Batch `offset` carries timestamp `10 * offset`, so the max timestamp's offset is
/// `timestamp / 10`: a torn (ts, offset) pair is detectable.
fn batch_for(offset: i64) -> Vec<u8> {
    simple_batch(offset, 1, 10 * offset, 20 + (offset % 13) as usize)
}

#[test]
fn readers_of_the_active_segment_see_only_published_whole_batches() {
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, &config()).unwrap();
    let segment = Arc::clone(active.segment());
    let done = Arc::new(AtomicBool::new(false));
    let appended = Arc::new(AtomicI64::new(0));
    let readers: Vec<_> = (0..3)
        .map(|r| {
            let segment = Arc::clone(&segment);
            let done = Arc::clone(&done);
            let appended = Arc::clone(&appended);
            std::thread::spawn(move || {
                let mut checks = 0u64;
                let mut i = r;
                while !done.load(Ordering::Acquire) || checks < 100 {
                    i += 1;
                    // At least `known` batches are published (the counter is stored after
                    // `append` returns).
                    let known = appended.load(Ordering::Acquire);
                    let next = segment.read_next_offset().unwrap();
                    assert!(next >= known);
                    let max = segment.max_timestamp_and_offset();
                    if max.timestamp_ms >= 0 {
                        assert_eq!(max.timestamp_ms, 10 * max.offset, "KAFKA-12981");
                    }
                    if next > 0 {
                        let offset = (i * 7919) % next;
                        let slice = segment.read(offset, 300, u64::MAX, true).unwrap().unwrap();
                        assert!(slice.position() + slice.len() <= segment.size());
                        let bytes = slice.read_to_vec().unwrap();
                        let found = scan(&bytes, slice.position());
                        assert_eq!(found.batches[0].last_offset, offset);
                        let ts = segment.find_offset_by_timestamp(10 * offset, 0).unwrap();
                        assert_eq!(ts.map(|t| t.offset), Some(offset));
                    }
                    checks += 1;
                }
                checks
            })
        })
        .collect();
    for offset in 0..1_500 {
        active
            .append(offset, 10 * offset, offset, &batch_for(offset))
            .unwrap();
        appended.store(offset + 1, Ordering::Release);
    }
    done.store(true, Ordering::Release);
    for reader in readers {
        assert!(reader.join().unwrap() >= 100);
    }
    let sealed = active.seal().unwrap();
    assert_eq!(sealed.read_next_offset().unwrap(), 1_500);
}

#[test]
fn max_timestamp_and_offset_are_read_as_one_value() {
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, &config()).unwrap();
    let segment = Arc::clone(active.segment());
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut seen = 0u64;
            while !done.load(Ordering::Acquire) {
                let max = segment.max_timestamp_and_offset();
                if max.timestamp_ms >= 0 {
                    assert_eq!(max.timestamp_ms, 10 * max.offset);
                    seen += 1;
                }
            }
            seen
        })
    };
    for offset in 0..3_000 {
        active
            .append(offset, 10 * offset, offset, &batch_for(offset))
            .unwrap();
    }
    done.store(true, Ordering::Release);
    reader.join().unwrap();
}

#[test]
fn readers_survive_truncation_and_deletion() {
    let dir = tempdir();
    let mut active = ActiveSegment::create(dir.path(), 0, &config()).unwrap();
    for offset in 0..800 {
        active
            .append(offset, 10 * offset, offset, &batch_for(offset))
            .unwrap();
    }
    let segment = Arc::clone(active.segment());
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|r| {
            let segment = Arc::clone(&segment);
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                let mut i = r;
                while !done.load(Ordering::Acquire) {
                    i += 1;
                    let offset = (i * 31) % 800;
                    // A slice whose bytes were truncated away fails cleanly; anything else
                    // it returns is whole, valid batches from the right place.
                    match segment.read(offset, 500, u64::MAX, true) {
                        Ok(Some(slice)) => match slice.read_to_vec() {
                            Ok(bytes) => {
                                let found = scan(&bytes, slice.position());
                                if let Some(first) = found.batches.first() {
                                    assert!(first.last_offset >= offset);
                                }
                            }
                            Err(Error::Io {
                                op: IoOp::Read,
                                source,
                                ..
                            }) => {
                                assert_eq!(source.kind(), std::io::ErrorKind::UnexpectedEof);
                            }
                            Err(e) => panic!("{e}"),
                        },
                        Ok(None) => {}
                        Err(Error::Io { op: IoOp::Read, .. }) => {}
                        // A header walk racing a cut can meet a partial view of the file.
                        Err(e) if e.is_corruption() => {}
                        Err(e) => panic!("{e}"),
                    }
                }
            })
        })
        .collect();
    for cut in (100..800).rev().step_by(50) {
        active.truncate_to(cut).unwrap();
        assert_eq!(active.segment().read_next_offset().unwrap(), cut);
    }
    let sealed = active.seal().unwrap();
    sealed.mark_deleted().unwrap();
    sealed.delete_files().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    done.store(true, Ordering::Release);
    for reader in readers {
        reader.join().unwrap();
    }
}
