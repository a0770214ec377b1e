//! The record readers: positions, isolation, compacted gaps, CRC checks, compression and
//! out-of-range starts, for the borrowed and the owned flavour alike.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use seglog::{
    BatchBuilder, Compression, Error, Isolation, Log, NextRecord, PollEnd, ReadRequest,
    ReaderOptions, RecordView,
};

use crate::support::{T0, append_numbered, fresh, numbered, small_config};

/// Every record the borrowed reader passes from its position: (offset, value).
fn borrowed(reader: &mut seglog::RecordReader<'_>) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let end = reader
        .poll(|_, r: RecordView<'_>| {
            out.push((r.offset(), r.value().unwrap_or_default().to_vec()));
            Ok::<_, Error>(ControlFlow::Continue(()))
        })
        .unwrap();
    assert_eq!(end, PollEnd::CaughtUp);
    out
}

fn owned(log: &Log, from: i64, isolation: Isolation) -> Vec<(i64, Vec<u8>)> {
    log.owned_reader(from, isolation)
        .until_caught_up()
        .map(|r| {
            let r = r.unwrap().record;
            (r.offset, r.value.unwrap_or_default().to_vec())
        })
        .collect()
}

#[test]
fn starts_inside_a_batch_and_keeps_its_position_across_appends() {
    let (_dir, _clock, log) = fresh(small_config(1 << 20));
    append_numbered(&log, 3, "a", 4); // offsets 0..12, batches of 4
    let mut reader = log.reader(5, Isolation::LogEnd);
    let got = borrowed(&mut reader);
    assert_eq!(
        got.iter().map(|r| r.0).collect::<Vec<_>>(),
        (5..12).collect::<Vec<_>>()
    );
    assert_eq!(got[0].1, b"a-1");
    assert_eq!(reader.position(), 12);
    assert!(borrowed(&mut reader).is_empty());
    append_numbered(&log, 1, "b", 2);
    let got = borrowed(&mut reader);
    assert_eq!(got, vec![(12, b"b-0".to_vec()), (13, b"b-1".to_vec())]);
    assert_eq!(owned(&log, 5, Isolation::LogEnd).len(), 9);

    let mut owned_reader = log.owned_reader(13, Isolation::LogEnd);
    let next = |r: &mut seglog::OwnedRecordReader<'_>| r.next_available().unwrap().into_record();
    assert_eq!(next(&mut owned_reader).unwrap().record.offset, 13);
    assert_eq!(owned_reader.next_available().unwrap(), NextRecord::CaughtUp);
    assert_eq!(owned_reader.until_caught_up().count(), 0);
    append_numbered(&log, 1, "c", 1);
    assert_eq!(next(&mut owned_reader).unwrap().record.offset, 14);
    assert_eq!(owned_reader.position(), 15);
}

#[test]
fn a_break_resumes_after_the_last_record_passed() {
    let (_dir, _clock, log) = fresh(small_config(1 << 20));
    append_numbered(&log, 2, "a", 3);
    let mut reader = log.reader(0, Isolation::LogEnd);
    let mut seen = Vec::new();
    for _ in 0..6 {
        let end = reader
            .poll(|_, r| {
                seen.push(r.offset());
                Ok::<_, Error>(ControlFlow::Break(()))
            })
            .unwrap();
        assert_eq!(end, PollEnd::Stopped);
    }
    assert_eq!(seen, (0..6).collect::<Vec<_>>());
    assert!(borrowed(&mut reader).is_empty());
}

#[test]
fn high_watermark_isolation_stops_at_the_high_watermark() {
    let (_dir, _clock, log) = fresh(small_config(1 << 20));
    append_numbered(&log, 2, "a", 5);
    log.set_high_watermark(7).unwrap();
    let got = owned(&log, 0, Isolation::ReadUncommitted);
    // Whole batches below the high watermark's batch only.
    assert_eq!(got.len(), 5);
    let mut reader = log.reader(0, Isolation::ReadUncommitted);
    assert_eq!(borrowed(&mut reader).len(), 5);
    log.set_high_watermark(10).unwrap();
    assert_eq!(borrowed(&mut reader).len(), 5);
}

#[test]
fn out_of_range_start_names_log_start_and_end() {
    let (_dir, _clock, log) = fresh(small_config(1 << 20));
    append_numbered(&log, 1, "a", 3);
    let mut reader = log.reader(4, Isolation::LogEnd);
    let err = reader
        .poll(|_, _| Ok::<_, Error>(ControlFlow::Continue(())))
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::OffsetOutOfRange {
                offset: 4,
                log_start_offset: 0,
                log_end_offset: 3
            }
        ),
        "{err:?}"
    );
    let mut it = log.owned_reader(-1, Isolation::LogEnd);
    assert!(matches!(
        it.next_available(),
        Err(Error::OffsetOutOfRange { offset: -1, .. })
    ));
    // An error is not caught up: the next call tries the same position again.
    assert!(matches!(
        it.next_available(),
        Err(Error::OffsetOutOfRange { offset: -1, .. })
    ));
    // The iterator ends after yielding the error, so `collect` cannot spin on it.
    let mut until = it.until_caught_up();
    assert!(matches!(
        until.next(),
        Some(Err(Error::OffsetOutOfRange { .. }))
    ));
    assert!(until.next().is_none(), "ended after an error");
    it.seek(1);
    let NextRecord::Record(first) = it.next_available().unwrap() else {
        panic!("caught up at 1 of 3");
    };
    assert_eq!(first.record.offset, 1);
}

#[test]
fn compacted_gaps_are_stepped_over() {
    let (_dir, _clock, log) = fresh(small_config(1 << 20));
    // Follower batches with offset gaps, as compaction leaves them: 0..2, then 10..12, then 20.
    for base in [0, 10, 20] {
        let mut b = BatchBuilder::new(base);
        b.append(T0, None, Some(format!("v{base}").as_bytes()), &[]);
        b.append(T0, None, Some(b"w"), &[]);
        log.append_as_follower(&b.build().unwrap()).unwrap();
    }
    let offsets = |v: Vec<(i64, Vec<u8>)>| v.into_iter().map(|r| r.0).collect::<Vec<_>>();
    assert_eq!(
        offsets(owned(&log, 0, Isolation::LogEnd)),
        vec![0, 1, 10, 11, 20, 21]
    );
    // A start inside a gap begins at the next record.
    let mut reader = log.reader(5, Isolation::LogEnd);
    assert_eq!(offsets(borrowed(&mut reader)), vec![10, 11, 20, 21]);
    assert_eq!(reader.position(), 22);
}

#[test]
fn compressed_batches_are_decompressed_and_headers_passed() {
    let (_dir, _clock, log) = fresh(small_config(1 << 20));
    let mut b = BatchBuilder::new(0).compression(Compression::Lz4);
    for i in 0..10u8 {
        b.append(T0, Some(&[i]), Some(&[i; 100]), &[("h", Some(&b"x"[..]))]);
    }
    log.append(&b.build().unwrap()).unwrap();
    let mut reader = log.reader(3, Isolation::LogEnd);
    let mut seen = Vec::new();
    reader
        .poll(|header, r| {
            assert_eq!(header.compression, Compression::Lz4);
            assert_eq!(
                r.headers().collect::<Vec<_>>(),
                vec![("h", Some(&b"x"[..]))]
            );
            seen.push((r.offset(), r.key().unwrap()[0], r.to_record().offset));
            Ok::<_, Error>(ControlFlow::Continue(()))
        })
        .unwrap();
    assert_eq!(seen, (3..10).map(|i| (i, i as u8, i)).collect::<Vec<_>>());
    assert_eq!(owned(&log, 0, Isolation::LogEnd).len(), 10);
    // A limit below the batch's records is an error, not an allocation.
    let mut small = ReaderOptions::new(0, Isolation::LogEnd)
        .max_decompressed_bytes(64)
        .owned_reader(&log);
    assert!(matches!(
        small.next_available(),
        Err(Error::DamagedBatch { .. })
    ));
}

#[test]
fn a_damaged_batch_fails_its_crc_naming_the_file() {
    let (dir, _clock, log) = fresh(small_config(1 << 20));
    append_numbered(&log, 2, "a", 3);
    // Flip a byte in the second batch's values.
    let path = dir.path().join("00000000000000000000.log");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.len() - 3;
    bytes[at] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let mut reader = log.reader(0, Isolation::LogEnd);
    let mut passed = 0;
    let err = reader
        .poll(|_, _| {
            passed += 1;
            Ok::<_, Error>(ControlFlow::Continue(()))
        })
        .unwrap_err();
    assert_eq!(passed, 3, "the first batch is good");
    match &err {
        Error::DamagedBatch { path: p, .. } => assert_eq!(p, &path),
        other => panic!("{other:?}"),
    }
    assert!(
        err.to_string().starts_with("damaged record batch in"),
        "{err}"
    );
    assert_eq!(reader.position(), 3, "the position stays before the damage");
    let owned: Vec<_> = log
        .owned_reader(0, Isolation::LogEnd)
        .until_caught_up()
        .collect();
    assert_eq!(owned.len(), 4);
    assert!(matches!(owned[3], Err(Error::DamagedBatch { .. })));
    // Without the check the records decode (the flipped byte is inside a value).
    let mut unchecked = ReaderOptions::new(0, Isolation::LogEnd)
        .check_crcs(false)
        .reader(&log);
    assert_eq!(borrowed(&mut unchecked).len(), 6);
}

#[test]
fn question_mark_converts_record_errors() {
    fn build() -> seglog::Result<usize> {
        // An empty builder is invalid input for the records layer.
        let bytes = BatchBuilder::new(0).build()?;
        Ok(bytes.len())
    }
    let e = build().unwrap_err();
    assert!(matches!(e, Error::Records(_)), "{e:?}");
    assert!(e.to_string().starts_with("invalid record batch: "), "{e}");
}

#[test]
fn malformed_records_are_one_variant_whether_built_or_appended() {
    // One meaning, one variant: records the caller gave are malformed, whether `?` converted
    // a builder's error or an append refused the buffer's framing.
    let (_dir, _clock, log) = fresh(small_config(1 << 20));
    let mut builder = BatchBuilder::new(0);
    builder.append(0, None, Some(b"v"), &[]);
    let mut bytes = builder.build().unwrap().to_vec();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff; // inside the records: the CRC no longer matches
    let appended = log.append(&bytes).unwrap_err();
    assert!(matches!(appended, Error::Records(_)), "{appended:?}");
    assert!(
        appended.to_string().starts_with("invalid record batch: "),
        "{appended}"
    );
    assert_eq!(log.log_end_offset(), 0, "nothing of the append was written");
}

#[test]
fn wait_for_returns_at_once_when_past_and_times_out_otherwise() {
    let (_dir, _clock, log) = fresh(small_config(1 << 20));
    append_numbered(&log, 1, "a", 3);
    assert!(log.wait_for(2, Isolation::LogEnd, Duration::ZERO).unwrap());
    assert!(
        !log.wait_for(3, Isolation::LogEnd, Duration::from_millis(20))
            .unwrap()
    );
    // The high watermark is at the log start until moved.
    assert!(
        !log.wait_for(0, Isolation::ReadUncommitted, Duration::ZERO)
            .unwrap()
    );
    log.set_high_watermark(3).unwrap();
    assert!(
        log.wait_for(2, Isolation::ReadUncommitted, Duration::ZERO)
            .unwrap()
    );
}

/// Waiters each follow the tail while appenders and a high-watermark mover publish; a lost
/// wakeup would leave a waiter asleep until its (long) timeout and fail the test.
#[test]
fn wait_for_loses_no_wakeup_under_concurrent_appends() {
    const APPENDS: i64 = 400;
    const WAIT_LIMIT: Duration = Duration::from_secs(60);
    const WOKEN_WITHIN: Duration = Duration::from_secs(20);
    let (_dir, _clock, log) = fresh(small_config(1 << 16));
    let log = Arc::new(log);
    let follow = |isolation: Isolation| {
        let log = Arc::clone(&log);
        std::thread::spawn(move || {
            let mut reader = log.reader(0, isolation);
            let mut seen = 0i64;
            while seen < APPENDS {
                let asleep = Instant::now();
                assert!(reader.wait(WAIT_LIMIT).unwrap());
                // Woken by the publication, not by the timeout (after which the check would
                // succeed too).
                assert!(
                    asleep.elapsed() < WOKEN_WITHIN,
                    "no wakeup for offset {} ({isolation:?})",
                    reader.position()
                );
                reader
                    .poll(|_, r| {
                        assert_eq!(r.offset(), seen);
                        seen += 1;
                        Ok::<_, Error>(ControlFlow::Continue(()))
                    })
                    .unwrap();
            }
        })
    };
    let waiters = [
        follow(Isolation::LogEnd),
        follow(Isolation::LogEnd),
        follow(Isolation::ReadUncommitted),
    ];
    let appender = {
        let log = Arc::clone(&log);
        std::thread::spawn(move || {
            for i in 0..APPENDS {
                log.append(&numbered(T0 + i, "t", 1)).unwrap();
                log.set_high_watermark(log.log_end_offset()).unwrap();
            }
        })
    };
    appender.join().unwrap();
    for waiter in waiters {
        waiter.join().unwrap();
    }
}

#[test]
fn a_read_request_reads_as_the_positional_call() {
    let (_dir, _clock, log) = fresh(small_config(1 << 20));
    append_numbered(&log, 3, "a", 4);
    let request = ReadRequest::new(5, Isolation::LogEnd)
        .max_bytes(10)
        .min_one_message(true);
    let by_request = log.read_request(&request).unwrap();
    let by_position = log.read(5, 10, Isolation::LogEnd, true).unwrap();
    assert_eq!(by_request.slice.offsets(), by_position.slice.offsets());
    assert_eq!(by_request.slice.len(), by_position.slice.len());
    assert!(
        !by_request.slice.is_empty(),
        "one whole batch despite max_bytes"
    );
    let mut buf = Vec::new();
    let copied = log.read_request_into(&request, &mut buf).unwrap();
    assert_eq!(copied.offsets, by_position.slice.offsets());
    assert_eq!(buf, by_position.slice.read_to_vec().unwrap());
    let cut = log.read_request(&request.min_one_message(false)).unwrap();
    assert!(
        cut.slice.len() <= 10,
        "cut at max_bytes: {}",
        cut.slice.len()
    );
}

/// A high watermark inside a batch makes nothing of that batch visible: waiting on the
/// reader sleeps until the visible end moves again instead of returning at once (which
/// waiting on the position would, so a tail loop would spin).
#[test]
fn reader_wait_does_not_spin_on_a_high_watermark_inside_a_batch() {
    let (_dir, _clock, log) = fresh(small_config(1 << 20));
    append_numbered(&log, 2, "a", 5);
    log.set_high_watermark(7).unwrap();
    let mut reader = log.reader(0, Isolation::ReadUncommitted);
    assert_eq!(borrowed(&mut reader).len(), 5);
    assert_eq!(reader.position(), 5);
    assert!(
        log.wait_for(5, Isolation::ReadUncommitted, Duration::ZERO)
            .unwrap()
    );
    assert!(
        !reader.wait(Duration::from_millis(20)).unwrap(),
        "nothing new is visible"
    );
    log.set_high_watermark(8).unwrap();
    assert!(
        reader.wait(Duration::ZERO).unwrap(),
        "the visible end moved"
    );
    assert!(borrowed(&mut reader).is_empty());
    assert!(!reader.wait(Duration::from_millis(20)).unwrap());
    log.set_high_watermark(10).unwrap();
    assert!(reader.wait(Duration::ZERO).unwrap());
    assert_eq!(borrowed(&mut reader).len(), 5);

    let mut owned = log.owned_reader(10, Isolation::ReadUncommitted);
    assert_eq!(owned.next_available().unwrap(), NextRecord::CaughtUp);
    assert!(!owned.wait(Duration::from_millis(20)).unwrap());
    append_numbered(&log, 1, "b", 5);
    log.set_high_watermark(12).unwrap();
    assert!(owned.wait(Duration::ZERO).unwrap());
    assert_eq!(
        owned.next_available().unwrap(),
        NextRecord::CaughtUp,
        "12 is inside the new batch"
    );
    assert!(!owned.wait(Duration::from_millis(20)).unwrap());
}

/// A minimal executor: polls `future` on this thread, parking between wakeups; `None` when it
/// is still pending after `limit`.
fn block_on<F: std::future::Future>(future: F, limit: Duration) -> Option<F::Output> {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    let deadline = Instant::now() + limit;
    loop {
        if let std::task::Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return Some(out);
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        std::thread::park_timeout(deadline - now);
    }
}

#[test]
fn wait_for_async_completes_on_an_append_without_blocking() {
    let (_dir, _clock, log) = fresh(small_config(1 << 20));
    let log = Arc::new(log);
    append_numbered(&log, 1, "a", 3);
    assert_eq!(
        block_on(log.wait_for_async(2, Isolation::LogEnd), Duration::ZERO).map(|r| r.is_ok()),
        Some(true)
    );
    // Pending: the first poll returns at once (it does not block the executor's thread).
    assert_eq!(
        block_on(
            log.wait_for_async(3, Isolation::LogEnd),
            Duration::from_millis(20)
        )
        .map(|r| r.is_ok()),
        None
    );
    let appender = {
        let log = Arc::clone(&log);
        std::thread::spawn(move || {
            for i in 0..200 {
                log.append(&numbered(T0 + i, "b", 1)).unwrap();
            }
        })
    };
    // Every offset in turn: each wait is woken by the publication that makes it visible.
    for offset in 3..203 {
        let asleep = Instant::now();
        let woken = block_on(
            log.wait_for_async(offset, Isolation::LogEnd),
            Duration::from_secs(60),
        );
        assert_eq!(woken.map(|r| r.is_ok()), Some(true), "offset {offset}");
        assert!(
            asleep.elapsed() < Duration::from_secs(20),
            "offset {offset}"
        );
    }
    appender.join().unwrap();
}

#[test]
fn close_wakes_tail_follow_waiters_with_closed() {
    let (_dir, _clock, log) = fresh(small_config(1 << 20));
    let log = Arc::new(log);
    append_numbered(&log, 1, "a", 3);
    // A thread blocked without a time limit, and a future pending on this thread.
    let blocked = {
        let log = Arc::clone(&log);
        std::thread::spawn(move || log.wait_for(10, Isolation::LogEnd, Duration::MAX))
    };
    let closer = {
        let log = Arc::clone(&log);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            log.close().unwrap();
        })
    };
    let woken = block_on(
        log.wait_for_async(10, Isolation::LogEnd),
        Duration::from_secs(60),
    );
    assert!(
        matches!(woken, Some(Err(Error::Closed { .. }))),
        "{woken:?}"
    );
    closer.join().unwrap();
    let blocked = blocked.join().unwrap();
    assert!(matches!(blocked, Err(Error::Closed { .. })), "{blocked:?}");
    // After the close: a wait for more ends at once; what is visible still is.
    assert!(matches!(
        log.wait_for(3, Isolation::LogEnd, Duration::MAX),
        Err(Error::Closed { .. })
    ));
    assert!(log.wait_for(2, Isolation::LogEnd, Duration::MAX).unwrap());
    let mut reader = log.reader(0, Isolation::LogEnd);
    assert_eq!(borrowed(&mut reader).len(), 3);
    assert!(matches!(
        reader.wait(Duration::MAX),
        Err(Error::Closed { .. })
    ));
}
