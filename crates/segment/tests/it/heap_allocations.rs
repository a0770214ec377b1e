//! Recovery's in-memory indexes never cost a heap buffer of the maximum index size per segment
//! (issue #28: full recovery of 10,000 one-batch segments spent 71% of its CPU in `memset`,
//! the allocator zeroing two 10 MiB index buffers for every segment of the dry run).
//!
//! A counting allocator records the largest heap allocation made on the test's own thread
//! (other tests of this binary run on other threads), so the guard does not depend on timing.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use seglog_segment::{ActiveSegment, Segment, SegmentConfig, SegmentOpenOptions};

use crate::support::{append_batch, simple_batch, tempdir};

struct LargestPerThread;

thread_local! {
    /// The largest allocation (or reallocation) in bytes on this thread while counting;
    /// `None`: not counting.
    static LARGEST: Cell<Option<usize>> = const { Cell::new(None) };
}

fn note(size: usize) {
    let _ = LARGEST.try_with(|largest| {
        if let Some(so_far) = largest.get() {
            largest.set(Some(so_far.max(size)));
        }
    });
}

// SAFETY: forwards every call to `System` unchanged; it only notes sizes in a const
// thread-local `Cell` (which itself never allocates).
unsafe impl GlobalAlloc for LargestPerThread {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: LargestPerThread = LargestPerThread;

/// The largest heap allocation `f` made on this thread.
fn largest_allocation_in(f: impl FnOnce()) -> usize {
    LARGEST.with(|largest| largest.set(Some(0)));
    f();
    LARGEST.with(|largest| largest.take()).unwrap_or(0)
}

#[test]
fn in_memory_recovery_allocates_no_heap_buffer_of_the_maximum_index_size() {
    // Kafka's default `segment.index.bytes`: 10 MiB.
    let config = SegmentConfig::default();
    let max = config.max_index_bytes as usize;
    assert_eq!(max, 10 << 20);
    let dir = tempdir();
    let segments = 4i64;
    for base in 0..segments {
        let mut active = ActiveSegment::create(dir.path(), base, &config).unwrap();
        append_batch(&mut active, &simple_batch(base, 1, 1_000 + base, 20));
        active.close().unwrap();
    }
    let mut recovered = 0;
    let largest = largest_allocation_in(|| {
        for base in 0..segments {
            let (segment, _) =
                Segment::open(dir.path(), base, &config, SegmentOpenOptions::read_only()).unwrap();
            let report = segment.recover().unwrap();
            assert!(!report.on_disk);
            assert_eq!(report.valid_bytes, segment.size());
            // One batch smaller than the index interval: no offset entry, one time entry.
            assert_eq!((report.index_entries, report.time_index_entries), (0, 1));
            let slice = segment
                .read(base, 1 << 20, u64::MAX, true)
                .unwrap()
                .unwrap();
            assert_eq!(slice.read_to_vec().unwrap().len() as u64, segment.size());
            recovered += 1;
        }
    });
    assert_eq!(recovered, segments);
    // The segments' bytes and the scan's buffer are a few hundred bytes; an index buffer of
    // the maximum size (zeroed by the allocator, a 10 MiB `memset` once glibc serves it from
    // the heap) must come from elsewhere (an anonymous map, whose pages cost only when used).
    assert!(
        largest < max / 8,
        "recovering {segments} one-batch segments allocated {largest} bytes at once on the heap"
    );
}
