//! Waiting for durability after the fact: [`Log::sync_to`], the group commit of
//! [`crate::Durability::Fsync`] for bytes appended with [`crate::Durability::PageCache`].
//!
//! A caller that must acknowledge an append only once it is durable, but must not block the
//! append itself (a consensus engine: entries are readable at once, the flush is reported
//! later), appends at page-cache durability and later calls [`Log::sync_to`] with the end
//! offset it needs. Concurrent callers share fsyncs with each other and with durable appends.

use crate::log::Log;
use crate::{Error, Result};

impl Log {
    /// Returns once every offset below `end_offset` is durable, exactly as a
    /// [`crate::Durability::Fsync`] append ending there would have made it: one group-commit
    /// sync (`fdatasync` of every `.log` holding offsets not yet known durable, then the
    /// directory when segments were created, renamed or removed since the last one), shared
    /// with every concurrent durable appender and caller. Indexes are not synced and the
    /// recovery point does not move. Returns at once when the offsets are already durable
    /// (a flush, an earlier sync, or `end_offset` at or below the recovery point); on a
    /// read-only log, at once.
    ///
    /// # Errors
    /// [`Error::OffsetOutOfRange`] when `end_offset` is above the log end offset when the sync
    /// runs (never appended, or removed by a truncation before it became durable);
    /// [`Error::Poisoned`] and fsync failures (which poison the log).
    pub fn sync_to(&self, end_offset: i64) -> Result<()> {
        if self.read_only {
            return Ok(());
        }
        let kept = self
            .durability
            .wait_durable(end_offset, || self.sync_appended())?;
        if kept {
            // The `DurableEnd` high-watermark policy follows this sync too.
            return self.follow_durable_end();
        }
        Err(Error::OffsetOutOfRange {
            offset: end_offset.saturating_sub(1),
            log_start_offset: self.log_start_offset(),
            log_end_offset: self.log_end_offset(),
        })
    }

    /// Every offset below the returned one is known durable (fsynced by a durable append, a
    /// [`Log::sync_to`], a flush, or at load: the recovery point). It may be above
    /// [`Log::recovery_point`], which also needs the indexes flushed.
    pub fn durable_end_offset(&self) -> i64 {
        self.durability.durable_end_offset()
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use crate::{BatchBuilder, Log, LogConfig};

    fn batch(base_offset: i64, records: usize) -> Vec<u8> {
        let mut builder = BatchBuilder::new(base_offset);
        for i in 0..records {
            builder.append(
                1_700_000_000_000,
                None,
                Some(format!("v{i}").as_bytes()),
                &[],
            );
        }
        builder.build().map(|b| b.to_vec()).unwrap_or_default()
    }

    #[test]
    fn sync_to_makes_page_cache_appends_durable_and_refuses_offsets_never_written() {
        let dir = tempfile::tempdir().unwrap();
        let log = Log::open(dir.path().join("t-0"), LogConfig::default()).unwrap();
        assert_eq!(log.durable_end_offset(), 0);
        log.append(&batch(0, 3)).unwrap();
        assert_eq!(
            log.durable_end_offset(),
            0,
            "a page-cache append is not durable"
        );
        log.sync_to(3).unwrap();
        assert!(log.durable_end_offset() >= 3);
        // Already durable: no sync needed, still Ok.
        log.sync_to(2).unwrap();
        let err = log.sync_to(10).unwrap_err();
        assert!(
            matches!(
                err,
                crate::Error::OffsetOutOfRange {
                    offset: 9,
                    log_end_offset: 3,
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn sync_to_after_a_truncation_refuses_the_removed_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let log = Log::open(dir.path().join("t-0"), LogConfig::default()).unwrap();
        log.append(&batch(0, 2)).unwrap();
        log.append(&batch(0, 2)).unwrap();
        log.truncate_to(2).unwrap();
        assert!(log.sync_to(4).is_err());
        log.sync_to(2).unwrap();
        assert!(log.durable_end_offset() >= 2);
    }
}
