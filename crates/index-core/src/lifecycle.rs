//! The public lifecycle methods both index types expose, written once.
//!
//! [`OffsetIndex`](crate::OffsetIndex) and [`TimeIndex`](crate::TimeIndex) are thin wrappers
//! over [`IndexCore`](crate::core::IndexCore), which holds the shared logic (Kafka's
//! `AbstractIndex`). Their lifecycle methods (open, in-memory, sizes, truncate, reset, resize,
//! trim, flush, rename, close, delete) only delegate, so `index_lifecycle!` generates them and
//! the `Debug` impl for a type with a `core: IndexCore<_>` field. Each type's own file keeps
//! what is specific to its entry kind (lookups, append rules, fullness, sanity rules) and the
//! doc comments that differ between the two (entry size, Kafka's name for the call).
//!
//! A macro rather than a generic wrapper type: the public types, their inherent methods and
//! their docs stay exactly as they were, and `close(self)` / `delete(self)` keep consuming the
//! index, which a `Deref` to a shared type could not do.

/// Generates the delegating lifecycle methods and `Debug` for `$index` (a struct with a
/// `core: IndexCore<$entry>` field). The doc comments of the methods whose docs differ per index
/// are passed in, in the order below; the rest are shared.
macro_rules! index_lifecycle {
    (
        $index:ident, $entry:ty;
        $(#[$open:meta])* fn open;
        $(#[$in_memory:meta])* fn in_memory;
        $(#[$max_entries:meta])* fn max_entries;
        $(#[$size_in_bytes:meta])* fn size_in_bytes;
        $(#[$reset:meta])* fn reset;
        $(#[$resize:meta])* fn resize;
        $(#[$trim:meta])* fn trim_to_valid_size;
        $(#[$rename:meta])* fn rename_to;
    ) => {
        impl $index {
            $(#[$open])*
            pub fn open(
                path: impl Into<PathBuf>,
                base_offset: i64,
                max_index_bytes: u32,
            ) -> Result<Self> {
                Ok($index {
                    core: IndexCore::open(path.into(), base_offset, max_index_bytes)?,
                })
            }

            /// Reads an existing index into memory (one `read` of the whole file; the file is
            /// never mapped and never written). Mutating calls fail with [`Error::ReadOnly`].
            ///
            /// Safe beside a process that owns the file and appends to, trims or truncates
            /// it (a broker, a live seglog writer): the copy cannot fault, and an index that
            /// changed while it was read is judged by the sanity checks like any other file.
            /// Later changes to the file are not seen; open it again to see them.
            ///
            /// # Errors
            ///
            /// `Io` when the file cannot be opened or read.
            pub fn open_read_only(path: impl Into<PathBuf>, base_offset: i64) -> Result<Self> {
                Ok($index {
                    core: IndexCore::open_read_only(path.into(), base_offset)?,
                })
            }

            $(#[$in_memory])*
            #[must_use]
            pub fn in_memory(
                path_for_errors: impl Into<PathBuf>,
                base_offset: i64,
                max_index_bytes: u32,
            ) -> Self {
                $index {
                    core: IndexCore::in_memory(path_for_errors.into(), base_offset, max_index_bytes),
                }
            }

            #[doc = concat!("The file path (after any [`", stringify!($index), "::rename_to`]).")]
            #[must_use]
            pub fn path(&self) -> PathBuf {
                self.core.path()
            }

            /// The segment's base offset.
            #[must_use]
            pub fn base_offset(&self) -> i64 {
                self.core.base_offset()
            }

            /// Number of entries.
            #[must_use]
            pub fn entries(&self) -> usize {
                self.core.entries()
            }

            $(#[$max_entries])*
            #[must_use]
            pub fn max_entries(&self) -> usize {
                self.core.max_entries()
            }

            $(#[$size_in_bytes])*
            #[must_use]
            pub fn size_in_bytes(&self) -> u64 {
                self.entries() as u64 * <$entry>::SIZE as u64
            }

            /// Current file (or buffer) length in bytes.
            #[must_use]
            pub fn file_len(&self) -> u64 {
                self.core.file_len()
            }

            /// Removes every entry.
            ///
            /// # Errors
            ///
            /// `ReadOnly`.
            pub fn truncate(&self) -> Result<()> {
                self.core.truncate_with(|_| 0)
            }

            $(#[$reset])*
            pub fn reset(&self) -> Result<()> {
                self.core.reset()
            }

            $(#[$resize])*
            pub fn resize(&self, new_len: u32) -> Result<bool> {
                self.core.resize(u64::from(new_len))
            }

            $(#[$trim])*
            pub fn trim_to_valid_size(&self) -> Result<()> {
                self.core.trim_to_valid_size()
            }

            /// Makes the published entries and the file length durable: `msync(MS_SYNC)` of the
            /// used prefix of the map (whole pages holding entries), not of the preallocated
            /// rest; an `fdatasync` when there are no entries. A no-op for read-only and
            /// in-memory indexes.
            ///
            /// # Errors
            ///
            /// `Io`.
            pub fn flush(&self) -> Result<()> {
                self.core.flush()
            }

            $(#[$rename])*
            pub fn rename_to(&self, new_path: impl Into<PathBuf>) -> Result<()> {
                self.core.rename_to(new_path.into())
            }

            /// Trims to the valid size and unmaps (read-only and in-memory: just unmaps).
            ///
            /// # Errors
            ///
            /// `Io` when trimming fails.
            pub fn close(self) -> Result<()> {
                self.core.close()
            }

            /// Unmaps, then deletes the file; a missing file is not an error.
            ///
            /// # Errors
            ///
            /// `ReadOnly`; `Io`.
            pub fn delete(self) -> Result<()> {
                self.core.delete()
            }

            #[doc = concat!(
                "Whether the index was opened with [`",
                stringify!($index),
                "::open_read_only`]."
            )]
            #[must_use]
            pub fn is_read_only(&self) -> bool {
                self.core.is_read_only()
            }
        }

        impl std::fmt::Debug for $index {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($index))
                    .field("path", &self.path())
                    .field("base_offset", &self.base_offset())
                    .field("entries", &self.entries())
                    .field("max_entries", &self.max_entries())
                    .finish()
            }
        }
    };
}

pub(crate) use index_lifecycle;
