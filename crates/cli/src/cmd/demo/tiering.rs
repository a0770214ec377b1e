//! The demo's tiered-storage step (KIP-405): a log of its own (in a temporary directory,
//! removed at the end) with `remote.storage.enable`, its sealed segments copied to a `file://`
//! store beside it in Kafka's layout (`seglog-tiered`), local retention
//! (`local.retention.bytes=0`) deleting them from the disk, and every record read back from
//! offset 0 through the log (now from the remote tier) and checked against what was produced.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Instant;

use seglog::{BatchBuilder, Log, LogConfig};
use seglog_tiered::{Layout, ObjectTier, Tier, TopicIdPartition, Uuid, open_store};

use super::{
    Demo, MAX_SEGMENT_BYTES, MIN_SEGMENT_BYTES, RECORD_SIZE_ESTIMATE, VALUE_BYTES, group, mb,
    per_sec,
};
use crate::error::Error;
use crate::output::Out;
use crate::scan::for_each_record;

/// Most records of the tiered log (the step stays short whatever `--records` is).
const TIER_RECORDS: u64 = 200_000;

impl Demo {
    /// Tiers a log's sealed segments, deletes them locally, reads everything back.
    pub(super) fn tiering(&mut self, out: &mut Out) -> Result<(), Error> {
        let records = self.records.min(TIER_RECORDS);
        let tmp = tempfile::Builder::new()
            .prefix("seglog-demo-tier-")
            .tempdir()
            .map_err(Error::io("create directory", std::env::temp_dir()))?;
        let dir = tmp.path().join("tiered-0");
        let store = format!("file://{}", tmp.path().join("remote").display());
        // About ten segments.
        let segment_bytes =
            (records * RECORD_SIZE_ESTIMATE / 10).clamp(MIN_SEGMENT_BYTES, MAX_SEGMENT_BYTES);
        let config = LogConfig {
            segment_bytes: segment_bytes as i32,
            remote_storage_enable: true,
            local_retention_bytes: 0,
            ..LogConfig::default()
        };
        let log = Log::open(&dir, config)?;
        self.append_workload(&log, &dir, records)?;
        log.roll()?;
        log.set_high_watermark(log.log_end_offset())?;
        let before = log.segments();
        let bytes_before: u64 = before.iter().map(|s| s.size_bytes).sum();
        let opened = open_store(&store)?;
        let partition = TopicIdPartition::new("tiered", 0, Uuid::random())?;
        let tier = Tier::new(Arc::new(ObjectTier::new(
            opened.store,
            Layout::new(opened.root, partition),
            0,
        )?));
        tier.attach(&log)?;
        let started = Instant::now();
        let copied = tier.copy(&log)?;
        let copy_time = started.elapsed();
        let copied_bytes: u64 = copied.copied.iter().map(|c| c.size_in_bytes).sum();
        let deleted = log.delete_old_segments()?.deleted.len();
        let after = log.segments();
        let bytes_after: u64 = after.iter().map(|s| s.size_bytes).sum();
        let (log_start, local_start) = (log.log_start_offset(), log.local_log_start_offset());
        self.check(
            !copied.copied.is_empty()
                && deleted == copied.copied.len()
                && log_start == 0
                && local_start == records as i64,
            || {
                format!(
                    "tiering: {} segments copied, {deleted} deleted locally; log start {log_start}, local log start {local_start} (expected 0 and {records})",
                    copied.copied.len()
                )
            },
        );
        // Every record from offset 0, now read from the remote tier through the log.
        let workload = self.workload;
        let mut value = vec![0u8; VALUE_BYTES];
        let (mut read, mut wrong) = (0u64, None);
        let started = Instant::now();
        for_each_record(&log, 0, |_, record| {
            if wrong.is_none()
                && (record.offset != read as i64 || !workload.matches(&record, &mut value))
            {
                wrong = Some(record.offset);
            }
            read += 1;
            Ok(ControlFlow::Continue(()))
        })?;
        let read_time = started.elapsed();
        log.close()?;
        self.check(read == records && wrong.is_none(), || {
            format!(
                "tiering: {read} of {records} records read back from the remote tier, first wrong at {wrong:?}"
            )
        });
        self.row(
            out,
            "tiered storage",
            format!(
                "{} of {} local segments ({:.1} MB) copied to {store} in {:.0} ms ({:.0} MB/s); local retention deleted {deleted}: local segments {} -> {}, {:.1} MB -> {:.1} MB on disk; log start offset {log_start}, local log start offset {local_start}",
                copied.copied.len(),
                before.len(),
                mb(copied_bytes),
                copy_time.as_secs_f64() * 1e3,
                per_sec(mb(copied_bytes), copy_time),
                before.len(),
                after.len(),
                mb(bytes_before),
                mb(bytes_after),
            ),
        )?;
        self.row(
            out,
            "remote read",
            format!(
                "{read} records from offset 0 read back through the log from the remote tier in {:.0} ms ({} records/s), every one as produced",
                read_time.as_secs_f64() * 1e3,
                group(per_sec(read as f64, read_time))
            ),
        )?;
        self.summary(
            "tiered storage",
            format!(
                "{} segments ({:.1} MB) to the remote tier at {:.0} MB/s, local {} -> {} segments; {} records read back at {} records/s",
                copied.copied.len(),
                mb(copied_bytes),
                per_sec(mb(copied_bytes), copy_time),
                before.len(),
                after.len(),
                group(read as f64),
                group(per_sec(read as f64, read_time))
            ),
        );
        Ok(())
    }

    /// Appends records `0..records` of the workload to `log` (a new, empty log).
    fn append_workload(
        &mut self,
        log: &Log,
        dir: &std::path::Path,
        records: u64,
    ) -> Result<(), Error> {
        let mut value = vec![0u8; VALUE_BYTES];
        let mut i = 0u64;
        while i < records {
            let mut builder = BatchBuilder::new(0);
            let end = (i + self.batch_records).min(records);
            for j in i..end {
                self.workload.value(j, &mut value);
                builder.append(
                    self.workload.timestamp(j),
                    Some(&self.workload.key(j)),
                    Some(&value),
                    &[],
                );
            }
            let batch = builder.build().map_err(|source| Error::Records {
                path: dir.to_owned(),
                source,
            })?;
            log.append(&batch)?;
            i = end;
        }
        Ok(())
    }
}
