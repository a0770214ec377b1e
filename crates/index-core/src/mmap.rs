//! Entry storage and the publish/observe protocol. The only `unsafe` code in the workspace
//! (besides these, [`prefetch`]: the search loop's cache hint).
//!
//! [`Slots`] owns a byte buffer (a mapped file, a heap buffer, or under `cfg(loom)` a
//! loom-tracked buffer; see [`Buffer`]) and the count of *published* entries. Its safe API
//! upholds one invariant that every `unsafe` block below relies on:
//!
//! **Invariant:** bytes below `published * slot_size` of the current buffer are never written
//! while a reader may read them, `published * slot_size <= buffer.len()` once a reader has
//! loaded both, and a buffer (or a file length) a reader may still be using is not freed,
//! unmapped or shrunk below what that reader may read.
//! * [`Slots::push_with`] writes only the slot at `published` (under the `writer` mutex, so one
//!   writer at a time), then publishes it with a `Release` store.
//! * Readers take no lock: inside a read section ([`crate::grace`]) they load `published`
//!   with `Acquire`, then the current buffer, and only read below `published * slot_size`
//!   (clamped to the buffer's length), so they see fully written entries and never an
//!   unwritten or half-written one.
//! * Lowering `published` (truncation) waits for a grace period before returning, with the
//!   writer mutex held: no later append can overwrite a slot an earlier reader still reads, and
//!   no reader holds an entry count above the new one afterwards.
//! * Resizing never changes a buffer in place: it sets the file length, maps (or allocates) a
//!   new buffer holding the published entries, swaps it in, waits for a grace period, and only
//!   then unmaps or frees the old one. The file may be shorter than an old mapping during the
//!   grace period; that is safe because no reader touches a byte at or above
//!   `published * slot_size`, which the new length holds (a mapped page past the end of the
//!   file raises `SIGBUS` only when touched).
//!
//! A mapped file can change under us if another process writes or truncates it, and touching
//! a mapped page past the file's new end raises `SIGBUS`, which kills the process. So only
//! files this process owns exclusively are ever mapped: [`FileBuffer`] is created only by the
//! writable open (`OffsetIndex::open` / `TimeIndex::open`), whose documented precondition is
//! exclusive ownership of the file (the log layer holds the directory lock for as long as any
//! such index lives), and we only shrink a file below bytes some reader may touch after that
//! reader is done. Read-only opens, which exist precisely for directories another process owns
//! (a broker, a live seglog writer), never map: they copy the file into a read-only
//! [`HeapBuffer`] with `read(2)`, which cannot fault.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::Arc;

use crate::grace;
use crate::sync::{AtomicPtr, AtomicUsize, Mutex, Ordering, lock};

/// Raw memory that holds entry bytes. Implemented by the mapped file, the heap buffer and the
/// loom buffer; [`Backing`] dispatches to them.
pub(crate) trait Buffer: Send + Sync {
    /// Length in bytes.
    fn len(&self) -> usize;

    /// Calls `f` with bytes `0..len`.
    ///
    /// # Safety
    /// `len <= self.len()` and nothing writes to `0..len` while `f` runs.
    unsafe fn with_prefix<R>(&self, len: usize, f: impl FnOnce(&[u8]) -> R) -> R;

    /// Copies `bytes` to `at..at + bytes.len()`.
    ///
    /// # Safety
    /// The range is within `self.len()`, the buffer is writable, and nothing else reads or
    /// writes that range meanwhile.
    unsafe fn write(&self, at: usize, bytes: &[u8]);

    /// Makes the written bytes in `0..used` durable, and the buffer's length (msync of that
    /// range for a file; nothing for memory). Bytes at or above `used` were never written
    /// (or belong to entries no longer published), so they need no sync.
    fn flush(&self, used: usize) -> io::Result<()>;

    /// A new buffer of `new_len` bytes holding this one's bytes below `keep` (which is `<=` both
    /// the old and the new length); new bytes are zero. For a mapped file, the file's length
    /// changes and the new buffer maps it again; this one stays mapped (and valid below `keep`)
    /// until it is dropped.
    fn resized(&self, new_len: usize, keep: usize) -> io::Result<Self>
    where
        Self: Sized;

    /// Whether [`Buffer::write`] is allowed.
    fn writable(&self) -> bool;

    /// Hints that bytes from `from` on hold no entries and will be written one entry at a
    /// time (no readahead for them). Changes no byte; nothing to do for memory.
    fn advise_unwritten(&self, _from: usize) {}
}

/// A memory-mapped index file, always read-write: only the writable open, whose caller owns
/// the file exclusively, maps a file (see the module docs).
///
/// It holds no file descriptor: a map stays valid after its descriptor is closed, so the file
/// is reopened by its current path (shared with the index, which renames it) only for the
/// rare calls that need one (a resize, an `fdatasync` when no entry is written). A segment
/// then costs one descriptor (its `.log`), not three.
pub(crate) struct FileBuffer {
    path: Arc<Mutex<PathBuf>>,
    map: memmap2::MmapRaw,
}

impl FileBuffer {
    /// Maps the first `len` bytes of `file` read-write (the caller has set the file to that
    /// length, and owns it exclusively: no other process truncates it while it is mapped), of
    /// which the first `written` hold entries. `file` is closed once mapped; `path` names it
    /// (and follows its renames).
    pub(crate) fn map(
        file: File,
        path: Arc<Mutex<PathBuf>>,
        len: usize,
        written: usize,
    ) -> io::Result<FileBuffer> {
        let map = Self::map_raw(&file, len, written)?;
        Ok(FileBuffer { path, map })
    }

    fn map_raw(file: &File, len: usize, written: usize) -> io::Result<memmap2::MmapRaw> {
        let mut options = memmap2::MmapOptions::new();
        options.len(len);
        // memmap2's `map_raw` is a safe function: it hands out raw pointers, and every
        // dereference below is an `unsafe` block with its own SAFETY note.
        let map = options.map_raw(file)?;
        advise_random_from(&map, written);
        Ok(map)
    }

    /// Opens the mapped file again (read-write), by its current path.
    fn reopen(&self) -> io::Result<File> {
        let path = lock(&self.path);
        OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(NO_FOLLOW)
            .open(&*path)
    }
}

/// `O_NOFOLLOW`, for the writable opens of index files (never through a symlink).
#[allow(clippy::cast_possible_wrap)]
pub(crate) const NO_FOLLOW: i32 = rustix::fs::OFlags::NOFOLLOW.bits() as i32;

/// `MADV_RANDOM` for the pages of `map` from `from` on (page-aligned down by memmap2).
///
/// The preallocated tail of an index is a hole (or stale bytes) that appends fill one entry
/// at a time. Without this, the first store to each new page faults in a readahead window of
/// large folios (zeros read from the hole), which dominated the append and recovery profiles;
/// only the faulting page is needed. Pure advice, no effect on contents: a failure only
/// costs speed, so it is ignored.
fn advise_random_from(map: &memmap2::MmapRaw, from: usize) {
    if from < map.len() {
        let _ = map.advise_range(memmap2::Advice::Random, from, map.len() - from);
    }
}

impl Buffer for FileBuffer {
    fn len(&self) -> usize {
        self.map.len()
    }

    unsafe fn with_prefix<R>(&self, len: usize, f: impl FnOnce(&[u8]) -> R) -> R {
        if len == 0 {
            return f(&[]);
        }
        // SAFETY: `len <= map.len()` (caller contract), so the range is inside one live
        // mapping. The file is at least `len` long: a resize shortens it only to a length that
        // holds every published entry and waits for a grace period before any reader could
        // see a larger count again (module invariant), and no other process truncates it,
        // because only the writable open maps a file and its caller owns the file exclusively
        // (the directory lock; see the module docs). Nothing writes to it while `f` runs
        // (caller contract), so a shared slice is sound.
        f(unsafe { std::slice::from_raw_parts(self.map.as_ptr(), len) })
    }

    unsafe fn write(&self, at: usize, bytes: &[u8]) {
        debug_assert!(at + bytes.len() <= self.map.len());
        // SAFETY: the destination is inside a live read-write mapping of a file at least that
        // long (as in `with_prefix`: the writer mutex excludes resizes), and nobody else
        // accesses it meanwhile (caller contract); `bytes` cannot overlap the mapping's
        // unpublished tail because no slice over that range exists.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                self.map.as_mut_ptr().add(at),
                bytes.len(),
            );
        }
    }

    fn flush(&self, used: usize) -> io::Result<()> {
        if used > 0 {
            // `msync(MS_SYNC)` of the used prefix only (memmap2 rounds the start down to a
            // page; the length covers the last partly used page). On Linux it ends in
            // `vfs_fsync_range(.., datasync)`, which also makes the file length durable. The
            // rest of a preallocated map was never written: syncing it is wasted work.
            self.map.flush_range(0, used.min(self.map.len()))
        } else {
            // Nothing written: still make the length (a resize or trim) durable.
            self.reopen()?.sync_data()
        }
    }

    fn resized(&self, new_len: usize, keep: usize) -> io::Result<FileBuffer> {
        // This mapping stays until the caller drops it after a grace period; meanwhile it may
        // cover bytes past the new end of the file, which no reader touches (module docs).
        let file = self.reopen()?;
        file.set_len(new_len as u64)?;
        allocate(&file, new_len)?;
        Ok(FileBuffer {
            path: Arc::clone(&self.path),
            map: Self::map_raw(&file, new_len, keep)?,
        })
    }

    fn writable(&self) -> bool {
        true
    }

    fn advise_unwritten(&self, from: usize) {
        advise_random_from(&self.map, from);
    }
}

/// A buffer in memory: zero-initialised for indexes that never touch the disk, or a read-only
/// copy of a file's bytes for read-only opens (which must not map a file they do not own).
///
/// A large zeroed buffer is an anonymous mapping, not a heap allocation: an in-memory index
/// is sized for the maximum index size (`segment.index.bytes`, 10 MiB by default) and usually
/// holds a few entries. From the heap, `calloc` of 10 MiB is a 10 MiB `memset` as soon as glibc
/// serves it from its arena (its mmap threshold rises to the size of the first large block
/// freed), which made the read-only recovery of one-batch segments cost ~3 ms of `memset` per
/// segment (issue #28). Fresh anonymous pages are zero and cost nothing until touched.
pub(crate) struct HeapBuffer {
    /// The first byte: of `owner`'s mapping, or from `Box::<[u8]>::into_raw`.
    ptr: *mut u8,
    len: usize,
    writable: bool,
    /// What frees the memory (in `Drop`).
    owner: Owner,
}

/// Who owns a [`HeapBuffer`]'s memory.
enum Owner {
    /// A `Box<[u8]>` turned into `ptr`/`len` by `Box::into_raw`.
    Boxed,
    /// An anonymous mapping; `ptr` is its first byte. Never read: dropping it unmaps it.
    Anonymous { _map: memmap2::MmapMut },
}

// SAFETY: `HeapBuffer` owns its memory like a `Box<[u8]>` (or a `MmapMut`, which is `Send` and
// `Sync`). Shared access goes through `with_prefix`/`write`, whose contracts (upheld by
// `Slots`) rule out data races.
unsafe impl Send for HeapBuffer {}
// SAFETY: as above.
unsafe impl Sync for HeapBuffer {}

/// Zeroed buffers of at least this many bytes are anonymous mappings (glibc's initial mmap
/// threshold): below it, `calloc`'s `memset` is cheaper than `mmap` + `munmap`.
const ANONYMOUS_FROM_BYTES: usize = 128 << 10;

impl HeapBuffer {
    #[cfg_attr(loom, allow(dead_code))] // under loom, in-memory indexes use `LoomBuffer`
    pub(crate) fn zeroed(len: usize) -> HeapBuffer {
        if len >= ANONYMOUS_FROM_BYTES {
            // Pages of a fresh private anonymous mapping read as zero (mmap(2)). If the map
            // fails (address space or map count exhausted), the heap below still zeroes them.
            if let Ok(mut map) = memmap2::MmapMut::map_anon(len) {
                return HeapBuffer {
                    ptr: map.as_mut_ptr(),
                    len,
                    writable: true,
                    owner: Owner::Anonymous { _map: map },
                };
            }
        }
        Self::from_boxed(vec![0u8; len].into_boxed_slice(), true)
    }

    /// A read-only buffer holding `bytes` (a copy of a file read with `read(2)`).
    pub(crate) fn read_only(bytes: Vec<u8>) -> HeapBuffer {
        Self::from_boxed(bytes.into_boxed_slice(), false)
    }

    fn from_boxed(boxed: Box<[u8]>, writable: bool) -> HeapBuffer {
        let len = boxed.len();
        HeapBuffer {
            ptr: Box::into_raw(boxed).cast::<u8>(),
            len,
            writable,
            owner: Owner::Boxed,
        }
    }

    /// Whether the memory is an anonymous mapping (tests of the choice).
    #[cfg(test)]
    fn is_anonymous(&self) -> bool {
        matches!(self.owner, Owner::Anonymous { .. })
    }
}

impl Drop for HeapBuffer {
    fn drop(&mut self) {
        if let Owner::Boxed = self.owner {
            // SAFETY: `ptr`/`len` came from `Box::<[u8]>::into_raw` and are freed exactly once.
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.ptr, self.len)) });
        }
        // An anonymous mapping is unmapped when `owner` is dropped, right after this.
    }
}

impl Buffer for HeapBuffer {
    fn len(&self) -> usize {
        self.len
    }

    unsafe fn with_prefix<R>(&self, len: usize, f: impl FnOnce(&[u8]) -> R) -> R {
        // SAFETY: `len <= self.len` and no concurrent writes to `0..len` (caller contract).
        f(unsafe { std::slice::from_raw_parts(self.ptr, len) })
    }

    unsafe fn write(&self, at: usize, bytes: &[u8]) {
        debug_assert!(self.writable && at + bytes.len() <= self.len);
        // SAFETY: inside the allocation, and nobody else accesses the range (caller contract).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr.add(at), bytes.len()) }
    }

    fn flush(&self, _used: usize) -> io::Result<()> {
        Ok(())
    }

    fn resized(&self, new_len: usize, keep: usize) -> io::Result<HeapBuffer> {
        if !self.writable {
            return Err(io::Error::from(io::ErrorKind::PermissionDenied));
        }
        let next = HeapBuffer::zeroed(new_len);
        let keep = keep.min(new_len).min(self.len);
        // SAFETY: both ranges are in bounds; `next` is fresh, and the bytes below `keep` of
        // this buffer are published, so only read meanwhile (the caller holds the writer mutex).
        unsafe { std::ptr::copy_nonoverlapping(self.ptr, next.ptr, keep) };
        Ok(next)
    }

    fn writable(&self) -> bool {
        self.writable
    }
}

/// A buffer whose every slot is a loom `UnsafeCell`, so loom reports any read that is not
/// ordered after the write of the same slot.
#[cfg(loom)]
pub(crate) struct LoomBuffer {
    slots: Vec<loom::cell::UnsafeCell<Vec<u8>>>,
    slot_size: usize,
    /// Touched (a `Relaxed` RMW, which orders nothing) before every slot access, so that loom
    /// may switch threads between the accesses of one read, like real parallel threads.
    schedule_point: loom::sync::atomic::AtomicUsize,
    /// Set (a write) when the buffer is retired after a resize: loom fails the model if any
    /// access of the buffer is not ordered before it, i.e. if the grace period let a reader
    /// still use a buffer the real code would have freed or unmapped.
    retired: loom::cell::UnsafeCell<bool>,
}

// SAFETY: every access to a slot goes through loom's `UnsafeCell::with`/`with_mut`, and loom
// fails the model on any access that races another (that is what the models check).
#[cfg(loom)]
unsafe impl Sync for LoomBuffer {}

#[cfg(loom)]
impl LoomBuffer {
    pub(crate) fn zeroed(len: usize, slot_size: usize) -> LoomBuffer {
        let slots = (0..len / slot_size)
            .map(|_| loom::cell::UnsafeCell::new(vec![0u8; slot_size]))
            .collect();
        LoomBuffer {
            slots,
            slot_size,
            schedule_point: loom::sync::atomic::AtomicUsize::new(0),
            retired: loom::cell::UnsafeCell::new(false),
        }
    }

    fn check_live(&self) {
        // SAFETY: loom checks the access: it panics if this read races `retire`'s write.
        self.retired
            .with(|retired| assert!(!unsafe { *retired }, "access to a retired index buffer"));
    }

    fn retire(&self) {
        // SAFETY: loom checks the access: it panics if it races any `check_live`.
        self.retired.with_mut(|retired| unsafe { *retired = true });
    }
}

#[cfg(loom)]
impl Buffer for LoomBuffer {
    fn len(&self) -> usize {
        self.slots.len() * self.slot_size
    }

    unsafe fn with_prefix<R>(&self, len: usize, f: impl FnOnce(&[u8]) -> R) -> R {
        self.check_live();
        let mut copy = Vec::with_capacity(len);
        for cell in &self.slots[..len / self.slot_size] {
            self.schedule_point.fetch_add(1, Ordering::Relaxed);
            // SAFETY: loom checks the contract: it panics if this read races a write.
            cell.with(|slot| copy.extend_from_slice(unsafe { &*slot }));
        }
        f(&copy)
    }

    unsafe fn write(&self, at: usize, bytes: &[u8]) {
        self.check_live();
        let cell = &self.slots[at / self.slot_size];
        self.schedule_point.fetch_add(1, Ordering::Relaxed);
        // SAFETY: loom checks the contract: it panics if this write races any access.
        cell.with_mut(|slot| unsafe { (*slot).copy_from_slice(bytes) });
    }

    fn flush(&self, _used: usize) -> io::Result<()> {
        Ok(())
    }

    fn resized(&self, new_len: usize, keep: usize) -> io::Result<LoomBuffer> {
        self.check_live();
        let next = LoomBuffer::zeroed(new_len, self.slot_size);
        for (from, to) in self
            .slots
            .iter()
            .zip(&next.slots)
            .take(keep / self.slot_size)
        {
            // SAFETY: loom checks the read of `from` (published, so only read meanwhile);
            // `to` is fresh.
            from.with(|src| to.with_mut(|dst| unsafe { (*dst).copy_from_slice(&*src) }));
        }
        Ok(next)
    }

    fn writable(&self) -> bool {
        true
    }
}

/// The storage behind one index (static dispatch over the [`Buffer`] implementations).
pub(crate) enum Backing {
    File(FileBuffer),
    Heap(HeapBuffer),
    #[cfg(loom)]
    Loom(LoomBuffer),
}

macro_rules! dispatch {
    ($self:expr, $b:ident => $body:expr) => {
        match $self {
            Backing::File($b) => $body,
            Backing::Heap($b) => $body,
            #[cfg(loom)]
            Backing::Loom($b) => $body,
        }
    };
}

impl Buffer for Backing {
    fn len(&self) -> usize {
        dispatch!(self, b => b.len())
    }
    unsafe fn with_prefix<R>(&self, len: usize, f: impl FnOnce(&[u8]) -> R) -> R {
        // SAFETY: same contract, forwarded.
        dispatch!(self, b => unsafe { b.with_prefix(len, f) })
    }
    unsafe fn write(&self, at: usize, bytes: &[u8]) {
        // SAFETY: same contract, forwarded.
        dispatch!(self, b => unsafe { b.write(at, bytes) })
    }
    fn flush(&self, used: usize) -> io::Result<()> {
        dispatch!(self, b => b.flush(used))
    }
    fn resized(&self, new_len: usize, keep: usize) -> io::Result<Backing> {
        match self {
            Backing::File(b) => b.resized(new_len, keep).map(Backing::File),
            Backing::Heap(b) => b.resized(new_len, keep).map(Backing::Heap),
            #[cfg(loom)]
            Backing::Loom(b) => b.resized(new_len, keep).map(Backing::Loom),
        }
    }
    fn writable(&self) -> bool {
        dispatch!(self, b => b.writable())
    }
    fn advise_unwritten(&self, from: usize) {
        dispatch!(self, b => b.advise_unwritten(from))
    }
}

/// Outcome of [`Slots::push_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Push {
    /// The entry was written and published.
    Appended,
    /// The decision closure chose not to append.
    Skipped,
    /// No whole slot left in the buffer (or the entry has the wrong size).
    NoRoom,
    /// The buffer is read-only (a copy of a file opened read-only).
    ReadOnly,
}

/// A buffer in use, with where its bytes are, so that a read needs no dispatch on the kind of
/// buffer (the lookups' hot path: `Slots::read`).
struct Current {
    backing: Backing,
    /// `backing`'s first byte: the mapping or heap allocation (never null; dangling and
    /// never dereferenced when `len` is 0).
    #[cfg(not(loom))]
    bytes: std::ptr::NonNull<u8>,
    /// `backing.len()`.
    len: usize,
}

impl Current {
    fn new(backing: Backing) -> Current {
        let len = backing.len();
        Current {
            #[cfg(not(loom))]
            bytes: match &backing {
                Backing::File(file) => std::ptr::NonNull::new(file.map.as_mut_ptr()),
                Backing::Heap(heap) => std::ptr::NonNull::new(heap.ptr),
            }
            .filter(|_| len > 0)
            .unwrap_or(std::ptr::NonNull::dangling()),
            len,
            backing,
        }
    }
}

/// Fixed-size slots over a [`Backing`], with the entry count published atomically.
pub(crate) struct Slots {
    slot_size: usize,
    /// The buffer in use, from `Box::into_raw`. Never changed in place: `resize` swaps in a new
    /// one and frees the old one after a grace period; `Drop` frees the last.
    current: AtomicPtr<Current>,
    /// Entries readers may read. See the module docs for the invariant. Written only under
    /// `writer`; loaded by readers.
    published: AtomicUsize,
    /// Serializes appends, truncations and resizes, and holds the writer's own copy of the
    /// entry count (it never reads `published` back: it is the only writer of it).
    writer: Mutex<WriterState>,
}

struct WriterState {
    count: usize,
    /// Under loom, retired buffers are marked (see `LoomBuffer::retire`) and kept until the
    /// `Slots` is dropped, so that a late access is reported by loom rather than being a
    /// use-after-free.
    #[cfg(loom)]
    graveyard: Vec<Retired>,
}

#[cfg(loom)]
struct Retired(*mut Current);

// SAFETY: a retired buffer is only freed in `Slots::drop` (exclusive access); `Backing` is
// `Send`.
#[cfg(loom)]
unsafe impl Send for Retired {}

impl Slots {
    /// Wraps `backing`, publishing its first `published` slots (clamped to whole slots).
    pub(crate) fn new(backing: Backing, slot_size: usize, published: usize) -> Slots {
        let published = published.min(backing.len() / slot_size);
        Slots {
            slot_size,
            current: AtomicPtr::new(Box::into_raw(Box::new(Current::new(backing)))),
            published: AtomicUsize::new(published),
            writer: Mutex::new(WriterState {
                count: published,
                #[cfg(loom)]
                graveyard: Vec::new(),
            }),
        }
    }

    /// The current buffer. Valid while the caller is inside a read section or holds `writer`
    /// (a replaced buffer is freed only after both have ended).
    #[inline]
    fn current(&self) -> &Current {
        // SAFETY: the pointer came from `Box::into_raw` and is freed only after it was replaced
        // and a grace period passed (`resize`) or in `drop` (exclusive access); every caller
        // is inside a read section or holds `writer` for as long as it uses the reference.
        unsafe { &*self.current.load(Ordering::Acquire) }
    }

    /// Published entries (`Acquire`: the entries below it are fully written).
    pub(crate) fn published(&self) -> usize {
        self.published.load(Ordering::Acquire)
    }

    /// Whole slots the buffer can hold.
    pub(crate) fn capacity(&self) -> usize {
        self.byte_len() / self.slot_size
    }

    /// Buffer length in bytes (the file length for a mapped file).
    pub(crate) fn byte_len(&self) -> usize {
        grace::read_section(|| self.current().len)
    }

    /// Calls `f` with the published entries' bytes. Takes no lock: a read section keeps the
    /// buffer alive (see the module docs).
    #[inline]
    pub(crate) fn read<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        grace::read_section(|| {
            // `published` first: a count published after a resize is only loaded together with
            // the buffer that holds it (the swap happens before that count's `Release` store).
            let published = self.published.load(Ordering::Acquire);
            let current = self.current();
            let len = (published * self.slot_size).min(current.len);
            // SAFETY: `len <= current.len`, and those bytes are fully written (the `Acquire`
            // load pairs with the `Release` store in `push_with`) and not written again while
            // this read section lasts (module invariant). `current.bytes` is the start of
            // `current.backing`'s bytes (dangling only when there are none, then `len` is 0):
            // the slice is what `with_prefix` passes, without dispatching on the buffer kind.
            #[cfg(not(loom))]
            let bytes = unsafe { std::slice::from_raw_parts(current.bytes.as_ptr(), len) };
            #[cfg(not(loom))]
            return f(bytes);
            // SAFETY: as above; the loom buffer copies the slots it reads, under loom's checks.
            #[cfg(loom)]
            unsafe {
                current.backing.with_prefix(len, f)
            }
        })
    }

    /// Appends one entry if `decide` says so. `decide` gets the published bytes and the
    /// capacity in slots, and returns the entry's bytes, `None` to skip, or an error. Calls are
    /// serialized, so the check and the append are atomic with respect to other appenders.
    pub(crate) fn push_with<B, E>(
        &self,
        decide: impl FnOnce(&[u8], usize) -> Result<Option<B>, E>,
    ) -> Result<Push, E>
    where
        B: AsRef<[u8]>,
    {
        let mut writer = lock(&self.writer);
        let backing = &self.current().backing;
        if !backing.writable() {
            return Ok(Push::ReadOnly);
        }
        let published = writer.count;
        let at = published * self.slot_size;
        let capacity = backing.len() / self.slot_size;
        // SAFETY: `at <= backing.len()` and bytes below `at` are never written while readers
        // may read them (module invariant); this thread is the only writer.
        let decision = unsafe { backing.with_prefix(at, |bytes| decide(bytes, capacity)) }?;
        let Some(entry) = decision else {
            return Ok(Push::Skipped);
        };
        let entry = entry.as_ref();
        if entry.len() != self.slot_size || at + self.slot_size > backing.len() {
            return Ok(Push::NoRoom);
        }
        // SAFETY: `at..at + slot_size` is inside the buffer, which is writable. Readers only
        // read below `published * slot_size = at` (a truncation waited for every reader of a
        // higher count before it returned), and other writers are excluded by `writer`.
        unsafe { backing.write(at, entry) };
        writer.count = published + 1;
        self.published.store(published + 1, Ordering::Release);
        Ok(Push::Appended)
    }

    /// Keeps `keep(published bytes)` entries (never more than now), then waits for a grace
    /// period (holding the writer mutex), so that no reader of the old count remains when a
    /// later append overwrites a dropped slot or a resize shrinks the buffer.
    pub(crate) fn truncate_with(&self, keep: impl FnOnce(&[u8]) -> usize) {
        let mut writer = lock(&self.writer);
        let backing = &self.current().backing;
        let published = writer.count;
        // SAFETY: as in `push_with` (this thread is the only writer).
        let keep = unsafe { backing.with_prefix(published * self.slot_size, keep) }.min(published);
        if keep == published {
            return;
        }
        writer.count = keep;
        self.published.store(keep, Ordering::Release);
        grace::synchronize();
        backing.advise_unwritten(keep * self.slot_size);
    }

    /// Replaces the buffer by one of `new_len(published entries, byte length)` bytes keeping
    /// the published entries (`None`: unchanged; the closure checks that the new length holds
    /// them). The old buffer is freed (unmapped) after a grace period. `Ok(false)` when
    /// unchanged. On a failed resize the old buffer stays in use.
    pub(crate) fn resize<E>(
        &self,
        new_len: impl FnOnce(usize, usize) -> Result<Option<usize>, E>,
        io_error: impl FnOnce(io::Error) -> E,
    ) -> Result<bool, E> {
        let mut writer = lock(&self.writer);
        let old = self.current.load(Ordering::Acquire);
        let backing = &self.current().backing;
        let Some(new_len) = new_len(writer.count, backing.len())? else {
            return Ok(false);
        };
        let keep = (writer.count * self.slot_size).min(new_len);
        let next = backing.resized(new_len, keep).map_err(io_error)?;
        // Never publish more than the new buffer holds (the closure's check makes this a no-op;
        // readers clamp to the buffer length in any case).
        let fits = next.len() / self.slot_size;
        if writer.count > fits {
            writer.count = fits;
            self.published.store(fits, Ordering::Release);
        }
        self.current.store(
            Box::into_raw(Box::new(Current::new(next))),
            Ordering::Release,
        );
        grace::synchronize();
        self.retire(&mut writer, old);
        Ok(true)
    }

    /// Frees a buffer that was replaced and whose grace period has passed.
    #[cfg_attr(not(loom), allow(clippy::unused_self))]
    fn retire(&self, writer: &mut WriterState, old: *mut Current) {
        #[cfg(not(loom))]
        {
            let _ = writer;
            // SAFETY: `old` came from `Box::into_raw`, is no longer `current`, and the grace
            // period has passed: no reader or writer holds a reference to it.
            drop(unsafe { Box::from_raw(old) });
        }
        #[cfg(loom)]
        {
            // SAFETY: as above; under loom it is marked retired instead and freed in `drop`.
            if let Backing::Loom(buffer) = unsafe { &(*old).backing } {
                buffer.retire();
            }
            writer.graveyard.push(Retired(old));
        }
    }

    /// Flushes the published entries' bytes and the buffer length (msync of the used range
    /// for a mapped file). Inside a read section: a resize meanwhile waits for it.
    pub(crate) fn flush(&self) -> io::Result<()> {
        grace::read_section(|| {
            let used = self.published() * self.slot_size;
            self.current().backing.flush(used)
        })
    }
}

impl Drop for Slots {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no reader or writer remains; the pointer came from
        // `Box::into_raw` and is freed once.
        drop(unsafe { Box::from_raw(self.current.load(Ordering::Acquire)) });
        #[cfg(loom)]
        for Retired(old) in std::mem::take(&mut lock(&self.writer).graveyard) {
            // SAFETY: as above, each retired buffer once.
            drop(unsafe { Box::from_raw(old) });
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn heap_push_publish_truncate_resize() {
        let slots = Slots::new(Backing::Heap(HeapBuffer::zeroed(20)), 8, 0);
        assert_eq!(slots.capacity(), 2);
        let push = |s: &Slots, b: [u8; 8]| s.push_with(|_, _| Ok::<_, ()>(Some(b)));
        assert_eq!(push(&slots, [1; 8]), Ok(Push::Appended));
        assert_eq!(push(&slots, [2; 8]), Ok(Push::Appended));
        assert_eq!(push(&slots, [3; 8]), Ok(Push::NoRoom));
        assert_eq!(slots.read(<[u8]>::to_vec), [[1u8; 8], [2; 8]].concat());
        slots.truncate_with(|_| 1);
        assert_eq!(slots.published(), 1);
        let to = |len: usize| move |_, _| Ok::<_, io::Error>(Some(len));
        assert!(matches!(slots.resize(to(8), |e| e), Ok(true)));
        assert_eq!(slots.capacity(), 1);
        assert_eq!(slots.read(<[u8]>::to_vec), vec![1u8; 8]);
        assert!(matches!(
            slots.resize(|_, _| Ok::<_, io::Error>(None), |e| e),
            Ok(false)
        ));
        assert!(matches!(slots.resize(to(0), |e| e), Ok(true)));
        assert_eq!(slots.published(), 0);
    }

    #[test]
    fn large_zeroed_buffers_are_anonymous_maps_that_read_zero_and_resize() {
        assert!(!HeapBuffer::zeroed(ANONYMOUS_FROM_BYTES - 1).is_anonymous());
        let len = 10 << 20;
        let slots = Slots::new(Backing::Heap(HeapBuffer::zeroed(len)), 8, 0);
        let Backing::Heap(heap) = &slots.current().backing else {
            unreachable!("a heap backing")
        };
        assert!(heap.is_anonymous());
        // SAFETY: in bounds, and nothing writes meanwhile (this thread is the only user).
        assert!(unsafe { heap.with_prefix(len, |bytes| bytes.iter().all(|b| *b == 0)) });
        let push = |s: &Slots, b: [u8; 8]| s.push_with(|_, _| Ok::<_, ()>(Some(b)));
        assert_eq!(push(&slots, [7; 8]), Ok(Push::Appended));
        assert_eq!(push(&slots, [8; 8]), Ok(Push::Appended));
        let to = |len: usize| move |_, _| Ok::<_, io::Error>(Some(len));
        // Grown (a new anonymous map keeping the entries) and shrunk to the heap.
        assert!(matches!(slots.resize(to(len + 4096), |e| e), Ok(true)));
        assert_eq!(slots.capacity(), (len + 4096) / 8);
        assert_eq!(slots.read(<[u8]>::to_vec), [[7u8; 8], [8; 8]].concat());
        assert!(matches!(slots.resize(to(16), |e| e), Ok(true)));
        assert_eq!(slots.read(<[u8]>::to_vec), [[7u8; 8], [8; 8]].concat());
        assert_eq!(push(&slots, [9; 8]), Ok(Push::NoRoom));
    }
}

/// Hints the CPU to fetch the cache line holding `slice[index]` (an index past the end hints a
/// line that is never read; nothing is ever dereferenced). The search loop's prefetch
/// (`crate::search`); a no-op where there is no stable prefetch instruction.
#[inline(always)]
pub(crate) fn prefetch<T>(slice: &[T], index: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let line = slice.as_ptr().wrapping_add(index).cast::<i8>();
        // SAFETY: `prefetcht0` (SSE, which every x86_64 CPU has) is only a hint: it reads no
        // data into the program, writes nothing, and never faults, whatever the address.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(line);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (slice, index);
}

/// Reserves the blocks of `file`'s first `len` bytes (`fallocate`, keeping the size), so that
/// no store to a mapped page can fault for want of disk space (SIGBUS on a full disk): the
/// failure is this call's `ENOSPC` instead. A file system that cannot reserve blocks
/// (`EOPNOTSUPP`) keeps the sparse file, as Kafka's `RandomAccessFile.setLength` leaves it.
pub(crate) fn allocate(file: &File, len: usize) -> io::Result<()> {
    if len == 0 {
        return Ok(());
    }
    match rustix::fs::fallocate(file, rustix::fs::FallocateFlags::KEEP_SIZE, 0, len as u64) {
        Ok(()) => Ok(()),
        Err(e) if e == rustix::io::Errno::OPNOTSUPP || e == rustix::io::Errno::NOSYS => Ok(()),
        Err(e) => Err(io::Error::from(e)),
    }
}
