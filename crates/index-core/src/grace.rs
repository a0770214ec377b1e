//! Grace periods: index readers take no lock, and a writer that is about to free, unmap or
//! shrink memory a reader may still be using first waits until every read that could be using
//! it has ended (userspace RCU, the "membarrier" flavour of liburcu).
//!
//! **Read side** ([`read_section`]): each thread has one registered `seq` counter, odd while the
//! thread is inside a read section (nested sections count once). Entering stores `seq + 1` and
//! issues a *reader barrier*; leaving stores `seq + 1` with `Release`. Only the owning thread
//! writes its counter, so both are plain stores, no read-modify-write: a read section costs two
//! thread-local accesses and two uncontended stores, against the two atomic read-modify-writes
//! of the `RwLock` read side it replaced.
//!
//! **Write side** ([`synchronize`]): the writer has already made the old state unreachable for
//! new readers (published a lower entry count, swapped the buffer pointer). It issues a *writer
//! barrier*, then, for every registered counter that is odd, waits until it changes. A reader
//! whose section began before the barrier is seen odd and waited for; a reader whose section
//! began after it sees the new state. After `synchronize` returns, no reader holds the old state.
//!
//! **Barriers.** With `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` (Linux >= 4.14; registered
//! on first use), the writer barrier forces a full memory barrier on every running thread of the
//! process, so the reader barrier is only a compiler fence. Without it (registration refused,
//! e.g. by a seccomp filter), both are `fence(SeqCst)`: the Dekker pattern (store own counter,
//! fence, load the entry count / store the entry count, fence, load the counters). Under loom,
//! which models neither `membarrier` nor all of `SeqCst`, entering and the writer's look at a
//! counter are read-modify-writes of that counter (`AcqRel`), which order the same two accesses
//! through the counter's modification order; the rest of the protocol is the same code.
//!
//! A thread whose thread-locals are already destroyed (a read from another thread-local's
//! destructor) falls back to one shared counter of such readers, with read-modify-writes.
//!
//! `synchronize` must not be called from inside a read section of the same thread (it skips its
//! own counter, so it would not wait for itself, but the section would then outlive the state it
//! reads); index code never does.

use std::cell::Cell;

use crate::sync::{Arc, AtomicUsize, Mutex, Ordering, lock};

/// One thread's read-section counter (odd: inside a section).
struct Reader {
    seq: AtomicUsize,
}

#[cfg(not(loom))]
static REGISTRY: Mutex<Vec<Arc<Reader>>> = Mutex::new(Vec::new());

#[cfg(loom)]
loom::lazy_static! {
    static ref REGISTRY: Mutex<Vec<Arc<Reader>>> = Mutex::new(Vec::new());
}

/// Readers running without their thread-local counter (only during thread teardown).
#[cfg(not(loom))]
static OUTSIDE: AtomicUsize = AtomicUsize::new(0);

struct Local {
    reader: Arc<Reader>,
    depth: Cell<usize>,
}

impl Local {
    fn register() -> Local {
        // Decide the barrier flavour before this thread's first read section: until a writer
        // decided it, readers would take the full-fence path.
        #[cfg(not(loom))]
        membarrier_registered();
        let reader = Arc::new(Reader {
            seq: AtomicUsize::new(0),
        });
        lock(&REGISTRY).push(Arc::clone(&reader));
        Local {
            reader,
            depth: Cell::new(0),
        }
    }

    #[inline]
    fn enter(&self) {
        let depth = self.depth.get();
        self.depth.set(depth + 1);
        if depth == 0 {
            #[cfg(not(loom))]
            {
                // Only this thread writes its counter.
                let seq = self.reader.seq.load(Ordering::Relaxed);
                self.reader
                    .seq
                    .store(seq.wrapping_add(1), Ordering::Relaxed);
                reader_barrier();
            }
            #[cfg(loom)]
            self.reader.seq.fetch_add(1, Ordering::AcqRel);
        }
    }

    #[inline]
    fn exit(&self) {
        let depth = self.depth.get().saturating_sub(1);
        self.depth.set(depth);
        if depth == 0 {
            #[cfg(not(loom))]
            {
                let seq = self.reader.seq.load(Ordering::Relaxed);
                // `Release`: every access of the section happens before a writer's `Acquire`
                // load that sees the new value.
                self.reader
                    .seq
                    .store(seq.wrapping_add(1), Ordering::Release);
            }
            #[cfg(loom)]
            self.reader.seq.fetch_add(1, Ordering::Release);
        }
    }
}

// Under loom the registry lives for one execution and thread-locals are dropped at its end,
// when its statics are gone: an exited thread's even counter is simply never waited for.
#[cfg(not(loom))]
impl Drop for Local {
    fn drop(&mut self) {
        lock(&REGISTRY).retain(|reader| !Arc::ptr_eq(reader, &self.reader));
    }
}

#[cfg(not(loom))]
std::thread_local! {
    static LOCAL: Local = Local::register();
}

#[cfg(loom)]
loom::thread_local! {
    static LOCAL: Local = Local::register();
}

/// Leaves the read section when dropped (also when `f` panics).
struct Section {
    local: bool,
}

impl Drop for Section {
    #[inline]
    fn drop(&mut self) {
        if self.local {
            let _ = LOCAL.try_with(Local::exit);
        } else {
            #[cfg(not(loom))]
            OUTSIDE.fetch_sub(1, Ordering::Release);
        }
    }
}

/// Runs `f` inside a read section: memory that a writer retires while `f` runs stays valid
/// until `f` returns (the writer's [`synchronize`] waits for it).
#[inline]
pub(crate) fn read_section<R>(f: impl FnOnce() -> R) -> R {
    let local = LOCAL.try_with(Local::enter).is_ok();
    #[cfg(not(loom))]
    if !local {
        OUTSIDE.fetch_add(1, Ordering::SeqCst);
    }
    let _section = Section { local };
    f()
}

/// Waits until every read section that began before this call has ended. The caller has
/// already made the state it is about to retire unreachable for new read sections.
pub(crate) fn synchronize() {
    writer_barrier();
    let readers: Vec<Arc<Reader>> = lock(&REGISTRY).clone();
    let me = LOCAL.try_with(|local| Arc::clone(&local.reader)).ok();
    for reader in readers {
        if me.as_ref().is_some_and(|me| Arc::ptr_eq(me, &reader)) {
            continue;
        }
        let seq = observe(&reader.seq);
        if seq % 2 == 1 {
            while observe(&reader.seq) == seq {
                crate::sync::yield_now();
            }
        }
    }
    #[cfg(not(loom))]
    while OUTSIDE.load(Ordering::SeqCst) != 0 {
        crate::sync::yield_now();
    }
}

/// The writer's look at a reader's counter; `Acquire` pairs with the `Release` of `exit`.
#[inline]
fn observe(seq: &AtomicUsize) -> usize {
    #[cfg(not(loom))]
    return seq.load(Ordering::Acquire);
    #[cfg(loom)]
    return seq.fetch_add(0, Ordering::AcqRel);
}

/// Whether `membarrier(PRIVATE_EXPEDITED)` is registered for this process (decided when the
/// first thread registers as a reader or the first writer synchronizes; a reader that finds it
/// undecided uses the full fence, which is correct with either writer barrier).
#[cfg(not(loom))]
static MEMBARRIER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

#[cfg(not(loom))]
#[inline]
fn reader_barrier() {
    if MEMBARRIER.get() == Some(&true) {
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
    } else {
        std::sync::atomic::fence(Ordering::SeqCst);
    }
}

/// Registers `membarrier(PRIVATE_EXPEDITED)` once for the process; whether it is usable.
#[cfg(not(loom))]
fn membarrier_registered() -> bool {
    use rustix::thread::{MembarrierCommand, membarrier};
    *MEMBARRIER.get_or_init(|| {
        membarrier(MembarrierCommand::RegisterPrivateExpedited).is_ok()
            && membarrier(MembarrierCommand::PrivateExpedited).is_ok()
    })
}

#[cfg(not(loom))]
fn writer_barrier() {
    use rustix::thread::{MembarrierCommand, membarrier};
    let registered = membarrier_registered();
    // A reader that loaded `MEMBARRIER` before it was set used the full fence; one that sees it
    // set relies on this call. The fence orders the caller's own stores in both cases.
    std::sync::atomic::fence(Ordering::SeqCst);
    if registered && membarrier(MembarrierCommand::PrivateExpedited).is_err() {
        // Registered commands do not fail; if one ever did, readers that rely on it would be
        // unordered: stop here rather than free memory under them.
        std::process::abort();
    }
}

#[cfg(loom)]
fn writer_barrier() {}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    #[test]
    fn synchronize_waits_for_a_section_that_began_before_it() {
        let inside = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let (i, d) = (Arc::clone(&inside), Arc::clone(&done));
        let reader = std::thread::spawn(move || {
            read_section(|| {
                // Nested sections count once.
                read_section(|| {});
                i.store(true, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(100));
                d.store(true, Ordering::SeqCst);
            });
        });
        while !inside.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        synchronize();
        assert!(
            done.load(Ordering::SeqCst),
            "synchronize returned inside a read section"
        );
        reader.join().unwrap();
        // Exited threads are unregistered, idle ones are not waited for.
        synchronize();
    }
}
