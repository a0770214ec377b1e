//! Grace periods: index readers take no lock, and a writer that is about to free, unmap or
//! shrink memory a reader may still be using first waits until every read that could be using
//! it has ended (userspace RCU, the "membarrier" flavour of liburcu).
//!
//! **Read side** ([`read_section`]): each thread has one registered `seq` counter, odd while the
//! thread is inside a read section. Entering an outermost section stores `seq + 1` and issues a
//! *reader barrier*; leaving it stores `seq + 1` with `Release`; a section that finds its
//! counter odd is nested in one of its thread's and does neither. Only the owning thread writes
//! its counter, so both are plain stores, no read-modify-write. The counter lives in a slot
//! that is never freed (reused by a later thread once its owner exits), so a constant-
//! initialised thread-local holds a `&'static` to it: a read section costs one thread-local
//! load, a load and two uncontended stores of the counter, and one load of the barrier
//! flavour (against the two atomic read-modify-writes of the `RwLock` read side it replaced).
//! Every instruction counts there: a lookup in a large index is a chain of cache misses, and
//! how much of the next lookup the CPU overlaps with them depends on its instruction count
//! (docs/performance.md, "Floor lookup").
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

#[cfg(not(loom))]
use std::sync::atomic::AtomicBool;

use crate::sync::{AtomicUsize, Mutex, Ordering, lock};

/// One thread's read-section counter (odd: inside a section). Allocated once and never freed:
/// when its thread exits, the slot goes back to the registry and the next new thread reuses
/// it, so there are at most as many as threads ever ran index reads at the same time. A
/// `&'static` reference in a constant-initialised thread-local is what makes entering a
/// section cheap: one thread-local load, no lazy-initialisation check, no reference count.
struct Reader {
    seq: AtomicUsize,
    /// Owned by a live thread (`false`: free for the next thread that registers).
    #[cfg(not(loom))]
    taken: AtomicBool,
}

#[cfg(not(loom))]
static REGISTRY: Mutex<Vec<&'static Reader>> = Mutex::new(Vec::new());

#[cfg(loom)]
loom::lazy_static! {
    static ref REGISTRY: Mutex<Vec<&'static Reader>> = Mutex::new(Vec::new());
}

/// Readers running without their thread-local counter (only during thread teardown).
#[cfg(not(loom))]
static OUTSIDE: AtomicUsize = AtomicUsize::new(0);

/// This thread's slot, taken on its first read section and given back when the thread exits.
/// Only touched when registering: the read sections use [`READER`].
struct Slot {
    reader: &'static Reader,
}

impl Slot {
    fn take() -> Slot {
        // Decide the barrier flavour before this thread's first read section: until a writer
        // decided it, readers would take the full-fence path.
        #[cfg(not(loom))]
        membarrier_registered();
        let mut registry = lock(&REGISTRY);
        #[cfg(not(loom))]
        if let Some(&reader) = registry.iter().find(|reader| {
            // A free slot's counter is even (its thread left every section before exiting)
            // and stays so: only the thread that takes it writes it again.
            reader
                .taken
                // `Acquire`: pairs with the `Release` of the previous owner's `Slot::drop`, so
                // this thread's first load of the counter sees that owner's last store.
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        }) {
            return Slot { reader };
        }
        let reader: &'static Reader = Box::leak(Box::new(Reader {
            seq: AtomicUsize::new(0),
            #[cfg(not(loom))]
            taken: AtomicBool::new(true),
        }));
        registry.push(reader);
        Slot { reader }
    }
}

// Under loom the registry lives for one execution and thread-locals are dropped at its end,
// when its statics are gone: an exited thread's even counter is simply never waited for.
#[cfg(not(loom))]
impl Drop for Slot {
    fn drop(&mut self) {
        // Later reads of this thread (other thread-locals' destructors) use `OUTSIDE`: the slot
        // may belong to another thread from the next line on.
        let _ = READER.try_with(|reader| reader.set(None));
        self.reader.taken.store(false, Ordering::Release);
    }
}

#[cfg(not(loom))]
std::thread_local! {
    /// This thread's counter once registered (`None` before the first read section and
    /// after the thread's [`SLOT`] is gone). Constant-initialised and without destructor, so
    /// reading it is a plain thread-local load.
    static READER: Cell<Option<&'static Reader>> = const { Cell::new(None) };
    static SLOT: Slot = Slot::take();
}

#[cfg(loom)]
loom::thread_local! {
    static READER: Cell<Option<&'static Reader>> = Cell::new(None);
    static SLOT: Slot = Slot::take();
}

/// This thread's counter, registering it on first use; `None` during thread teardown.
#[inline]
fn reader() -> Option<&'static Reader> {
    match READER.try_with(Cell::get) {
        Ok(Some(reader)) => Some(reader),
        Ok(None) => register(),
        Err(_) => None,
    }
}

#[cold]
#[inline(never)]
fn register() -> Option<&'static Reader> {
    let reader = SLOT.try_with(|slot| slot.reader).ok()?;
    READER.try_with(|cell| cell.set(Some(reader))).ok()?;
    Some(reader)
}

/// Leaves the read section when dropped (also when `f` panics).
enum Section {
    /// Entered by the outermost section of this thread: the counter to make even again.
    Outer(&'static Reader),
    /// Nested in another section of this thread, which leaves it.
    Nested,
    /// Counted in `OUTSIDE`.
    #[cfg(not(loom))]
    Outside,
}

impl Section {
    #[inline]
    fn enter() -> Section {
        let Some(reader) = reader() else {
            #[cfg(not(loom))]
            {
                OUTSIDE.fetch_add(1, Ordering::SeqCst);
                return Section::Outside;
            }
            #[cfg(loom)]
            unreachable!("loom threads register on their first read");
        };
        // Only this thread writes its counter, so a plain load and store suffice, and an odd
        // value means an enclosing section of this thread is still open (sections nest
        // strictly: they are scoped to a call).
        let seq = reader.seq.load(Ordering::Relaxed);
        if seq % 2 == 1 {
            return Section::Nested;
        }
        #[cfg(not(loom))]
        {
            reader.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
            reader_barrier();
        }
        #[cfg(loom)]
        reader.seq.fetch_add(1, Ordering::AcqRel);
        Section::Outer(reader)
    }
}

impl Drop for Section {
    #[inline]
    fn drop(&mut self) {
        match self {
            Section::Outer(reader) => {
                #[cfg(not(loom))]
                {
                    let seq = reader.seq.load(Ordering::Relaxed);
                    // `Release`: every access of the section happens before a writer's
                    // `Acquire` load that sees the new value.
                    reader.seq.store(seq.wrapping_add(1), Ordering::Release);
                }
                #[cfg(loom)]
                reader.seq.fetch_add(1, Ordering::Release);
            }
            Section::Nested => {}
            #[cfg(not(loom))]
            Section::Outside => {
                OUTSIDE.fetch_sub(1, Ordering::Release);
            }
        }
    }
}

/// Runs `f` inside a read section: memory that a writer retires while `f` runs stays valid
/// until `f` returns (the writer's [`synchronize`] waits for it).
#[inline]
pub(crate) fn read_section<R>(f: impl FnOnce() -> R) -> R {
    let _section = Section::enter();
    f()
}

/// Waits until every read section that began before this call has ended. The caller has
/// already made the state it is about to retire unreachable for new read sections.
pub(crate) fn synchronize() {
    writer_barrier();
    let readers: Vec<&'static Reader> = lock(&REGISTRY).clone();
    let me = READER.try_with(Cell::get).ok().flatten();
    for reader in readers {
        if me.is_some_and(|me| std::ptr::eq(me, reader)) {
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

/// `MEMBARRIER` decided `true`, for the readers' barrier: one `Relaxed` load, no `OnceLock`
/// state check. Stored inside `MEMBARRIER`'s initialisation, so every thread that registered
/// as a reader (which decides `MEMBARRIER` first, and sees its initialisation) reads the final
/// value; every writer barrier from then on is a `membarrier` call.
#[cfg(not(loom))]
static READER_COMPILER_FENCE: AtomicBool = AtomicBool::new(false);

#[cfg(not(loom))]
#[inline]
fn reader_barrier() {
    if READER_COMPILER_FENCE.load(Ordering::Relaxed) {
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
        let registered = membarrier(MembarrierCommand::RegisterPrivateExpedited).is_ok()
            && membarrier(MembarrierCommand::PrivateExpedited).is_ok();
        READER_COMPILER_FENCE.store(registered, Ordering::Relaxed);
        registered
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
    use std::sync::Arc;
    use std::time::Duration;

    /// Starts a reader thread that stays 100 ms in a read section (`nested`: with a nested
    /// section inside, which counts once), calls `synchronize` once it is inside, and asserts
    /// that `synchronize` returned only after the section ended.
    fn assert_synchronize_waits_for_a_reader(nested: bool) {
        let inside = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let (i, d) = (Arc::clone(&inside), Arc::clone(&done));
        let reader = std::thread::spawn(move || {
            read_section(|| {
                if nested {
                    read_section(|| {});
                }
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
        assert!(reader.join().is_ok(), "the reader thread panicked");
    }

    #[test]
    fn synchronize_waits_for_a_section_that_began_before_it() {
        // Nested sections count once.
        assert_synchronize_waits_for_a_reader(true);
        // Exited threads are unregistered, idle ones are not waited for.
        synchronize();
    }

    #[test]
    fn an_exited_threads_slot_is_reused_and_still_waited_for() {
        let slot = Slot::take();
        let reader = slot.reader;
        assert!(reader.taken.load(Ordering::SeqCst));
        drop(slot);
        assert!(
            !reader.taken.load(Ordering::SeqCst),
            "a dropped slot is free"
        );
        // The next registration takes the first free slot (this one unless another test's
        // thread took it meanwhile or an earlier one is free): never a taken one.
        let again = Slot::take();
        assert!(again.reader.taken.load(Ordering::SeqCst));
        assert_eq!(again.reader.seq.load(Ordering::SeqCst) % 2, 0);
        let before = lock(&REGISTRY).len();
        drop(again);
        let reused = Slot::take();
        assert!(lock(&REGISTRY).len() <= before + 1);
        drop(reused);

        // A reused slot's section is waited for like any other.
        assert_synchronize_waits_for_a_reader(false);
    }

    #[test]
    fn a_read_from_a_thread_local_destructor_is_counted_outside() {
        struct ReadsOnDrop(Arc<AtomicBool>);
        impl Drop for ReadsOnDrop {
            fn drop(&mut self) {
                // Runs during thread teardown, possibly after this thread's slot is gone.
                let value = read_section(|| 7);
                self.0.store(value == 7, Ordering::SeqCst);
            }
        }
        std::thread_local! {
            static LATE: std::cell::RefCell<Option<ReadsOnDrop>> = const { std::cell::RefCell::new(None) };
        }
        let ran = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&ran);
        std::thread::spawn(move || {
            read_section(|| {});
            LATE.with(|late| *late.borrow_mut() = Some(ReadsOnDrop(flag)));
        })
        .join()
        .unwrap();
        assert!(ran.load(Ordering::SeqCst));
        assert_eq!(OUTSIDE.load(Ordering::SeqCst), 0);
        synchronize();
    }
}
