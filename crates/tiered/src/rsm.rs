//! The shape of Kafka's `RemoteStorageManager`: copy a segment's parts, fetch a range of its
//! `.log`, fetch one of its indexes, delete it. It moves bytes only; the states live in
//! [`crate::MetadataStore`] and the order of the two in [`crate::PartitionTier`].

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::future::join_all;
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart};

use crate::{Error, FileKind, Layout, RemoteLogSegmentMetadata, Result};

/// Where the bytes of one part come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// A local file (read when uploaded: it must not change until the copy ends).
    File(PathBuf),
    /// Bytes in memory.
    Bytes(Bytes),
}

/// Kafka's `LogSegmentData`: what one copy uploads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSegmentData {
    /// The `.log`.
    pub log: Part,
    /// The `.index`.
    pub offset_index: Part,
    /// The `.timeindex`.
    pub time_index: Part,
    /// The `.txnindex`, when the segment has aborted transactions.
    pub txn_index: Option<Part>,
    /// The producer snapshot at the next segment's base offset.
    pub producer_snapshot: Part,
    /// The leader-epoch entries up to the next segment's base offset, as (epoch, start offset).
    pub leader_epochs: Vec<(i32, i64)>,
}

/// `RemoteStorageManager.IndexType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IndexType {
    /// `OFFSET`: the `.index`.
    Offset,
    /// `TIMESTAMP`: the `.timeindex`.
    Timestamp,
    /// `PRODUCER_SNAPSHOT`: the `.snapshot`.
    ProducerSnapshot,
    /// `TRANSACTION`: the `.txnindex` (NotFound when the segment has none, as Kafka's
    /// `RemoteResourceNotFoundException`).
    Transaction,
    /// `LEADER_EPOCH`: the `.leader_epoch_checkpoint`.
    LeaderEpoch,
}

impl IndexType {
    /// The file it is stored as.
    pub fn file_kind(self) -> FileKind {
        match self {
            IndexType::Offset => FileKind::OffsetIndex,
            IndexType::Timestamp => FileKind::TimeIndex,
            IndexType::ProducerSnapshot => FileKind::ProducerSnapshot,
            IndexType::Transaction => FileKind::TransactionIndex,
            IndexType::LeaderEpoch => FileKind::LeaderEpochCheckpoint,
        }
    }
}

/// The leader-epoch checkpoint text Kafka's `RemoteLogManager.epochEntriesAsByteBuffer` uploads
/// (`LeaderEpochCheckpointFile` format: version 0, the count, one `epoch offset` line each).
pub fn leader_epoch_checkpoint(entries: &[(i32, i64)]) -> Bytes {
    let mut text = format!("0\n{}\n", entries.len());
    for (epoch, start_offset) in entries {
        text.push_str(&format!("{epoch} {start_offset}\n"));
    }
    Bytes::from(text)
}

/// Uploads above this size go up in parts (S3's smallest part is 5 MiB). Default: 8 MiB.
pub const DEFAULT_PART_SIZE: usize = 8 << 20;

/// A `RemoteStorageManager` over an object store, in Kafka's `LocalTieredStorage` layout.
#[derive(Debug, Clone)]
pub struct RemoteStorageManager {
    store: Arc<dyn ObjectStore>,
    layout: Layout,
    part_size: usize,
}

impl RemoteStorageManager {
    /// The manager of `layout`'s partition in `store`.
    pub fn new(store: Arc<dyn ObjectStore>, layout: Layout) -> RemoteStorageManager {
        RemoteStorageManager {
            store,
            layout,
            part_size: DEFAULT_PART_SIZE,
        }
    }

    /// Uploads larger than `part_size` bytes use a multipart upload of parts that size.
    pub fn with_part_size(mut self, part_size: usize) -> RemoteStorageManager {
        self.part_size = part_size.max(1);
        self
    }

    /// The layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The parts a copy of `metadata` stores, in the order their uploads start (the `.txnindex` only when the
    /// segment has one).
    pub fn kinds(metadata: &RemoteLogSegmentMetadata) -> impl Iterator<Item = FileKind> + '_ {
        FileKind::ALL
            .into_iter()
            .filter(|&kind| kind != FileKind::TransactionIndex || !metadata.txn_index_empty)
    }

    /// `copyLogSegmentData`: uploads every part, all at once (their order does not matter:
    /// COPY_SEGMENT_FINISHED, written only after this returns, is what makes the copy count).
    /// Each part is written in one atomic put (or a multipart upload that is visible only once
    /// completed). Every upload runs to its end before the first error is answered, so none is
    /// still under way when the caller's clean-up deletes what was uploaded: a part written
    /// after that clean-up would be an orphan no metadata names.
    ///
    /// # Errors
    /// [`Error::Io`] reading a local part, [`Error::Store`] writing one (the first in upload
    /// order); what was uploaded stays (the caller's protocol deletes it).
    pub async fn copy_log_segment_data(
        &self,
        metadata: &RemoteLogSegmentMetadata,
        data: &LogSegmentData,
    ) -> Result<()> {
        let epochs = Part::Bytes(leader_epoch_checkpoint(&data.leader_epochs));
        let uploads = Self::kinds(metadata).filter_map(|kind| {
            let part = match kind {
                FileKind::Segment => &data.log,
                FileKind::OffsetIndex => &data.offset_index,
                FileKind::TimeIndex => &data.time_index,
                FileKind::TransactionIndex => data.txn_index.as_ref()?,
                FileKind::LeaderEpochCheckpoint => &epochs,
                FileKind::ProducerSnapshot => &data.producer_snapshot,
            };
            let key = self
                .layout
                .data_key(metadata.start_offset, metadata.segment_id, kind);
            Some(async move { self.upload(&key, part).await })
        });
        join_all(uploads).await.into_iter().collect()
    }

    /// `fetchLogSegment(metadata, start, end)`: the `.log` bytes from `start_position` to
    /// `end_position` inclusive (Kafka's RSM contract), or to the end of the segment.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a range outside the segment (Kafka's checks);
    /// [`Error::Store`] (NotFound when the segment's data is gone).
    pub async fn fetch_log_segment(
        &self,
        metadata: &RemoteLogSegmentMetadata,
        start_position: u64,
        end_position: Option<u64>,
    ) -> Result<Bytes> {
        let key = self.layout.data_key(
            metadata.start_offset,
            metadata.segment_id,
            FileKind::Segment,
        );
        let size = metadata.segment_size_in_bytes;
        let end = end_position.map_or(size, |end| end.saturating_add(1));
        if start_position > end || end > size {
            return Err(Error::InvalidArgument {
                key: key.to_string(),
                reason: format!("range {start_position}..{end} outside the segment's {size} bytes"),
            });
        }
        if start_position == end {
            return Ok(Bytes::new());
        }
        let options = GetOptions {
            range: Some(GetRange::Bounded(start_position..end)),
            ..GetOptions::default()
        };
        let result = self
            .store
            .get_opts(&key, options)
            .await
            .map_err(|e| Error::store("get", &key, e))?;
        result
            .bytes()
            .await
            .map_err(|e| Error::store("get", &key, e))
    }

    /// `fetchIndex(metadata, type)`: one index, whole.
    ///
    /// # Errors
    /// [`Error::Store`] with NotFound for a `.txnindex` the segment has not (Kafka:
    /// `RemoteResourceNotFoundException`) or data already deleted.
    pub async fn fetch_index(
        &self,
        metadata: &RemoteLogSegmentMetadata,
        index: IndexType,
    ) -> Result<Bytes> {
        let key = self.layout.data_key(
            metadata.start_offset,
            metadata.segment_id,
            index.file_kind(),
        );
        let result = self
            .store
            .get(&key)
            .await
            .map_err(|e| Error::store("get", &key, e))?;
        result
            .bytes()
            .await
            .map_err(|e| Error::store("get", &key, e))
    }

    /// `deleteLogSegmentData`: deletes every part the segment may have (all six names, so a
    /// part of an interrupted copy goes too). Idempotent: a missing part is not an error.
    ///
    /// # Errors
    /// [`Error::Store`] for any other failure (the caller retries; nothing is lost).
    pub async fn delete_log_segment_data(&self, metadata: &RemoteLogSegmentMetadata) -> Result<()> {
        self.delete_parts(metadata.start_offset, metadata.segment_id)
            .await
    }

    /// Deletes all six possible parts of the segment `start_offset`/`id` (idempotent).
    ///
    /// # Errors
    /// [`Error::Store`] for a failure other than NotFound.
    pub async fn delete_parts(&self, start_offset: i64, id: crate::Uuid) -> Result<()> {
        for kind in FileKind::ALL {
            let key = self.layout.data_key(start_offset, id, kind);
            match self.store.delete(&key).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(Error::store("delete", &key, e)),
            }
        }
        Ok(())
    }

    async fn upload(&self, key: &Path, part: &Part) -> Result<()> {
        match part {
            Part::Bytes(bytes) if bytes.len() <= self.part_size => {
                self.put(key, bytes.clone()).await
            }
            Part::Bytes(bytes) => self.put_multipart(key, &mut bytes.as_ref()).await,
            Part::File(path) => {
                let io = |op, source| Error::Io {
                    op,
                    path: path.clone(),
                    source,
                };
                let mut file = std::fs::File::open(path).map_err(|e| io("open", e))?;
                let len = file.metadata().map_err(|e| io("stat", e))?.len();
                if len <= self.part_size as u64 {
                    let mut bytes = Vec::with_capacity(len as usize);
                    file.read_to_end(&mut bytes).map_err(|e| io("read", e))?;
                    self.put(key, Bytes::from(bytes)).await
                } else {
                    let mut reader = IoReader {
                        file,
                        path: path.clone(),
                    };
                    self.put_multipart(key, &mut reader).await
                }
            }
        }
    }

    async fn put(&self, key: &Path, bytes: Bytes) -> Result<()> {
        self.store
            .put(key, PutPayload::from(bytes))
            .await
            .map_err(|e| Error::store("put", key, e))?;
        Ok(())
    }

    async fn put_multipart(&self, key: &Path, source: &mut dyn Chunks) -> Result<()> {
        let upload = self
            .store
            .put_multipart(key)
            .await
            .map_err(|e| Error::store("put_multipart", key, e))?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, self.part_size);
        let mut buf = vec![0u8; self.part_size];
        loop {
            let n = match source.next_chunk(&mut buf) {
                Ok(n) => n,
                Err(e) => {
                    // Nothing becomes visible: an aborted upload leaves no object.
                    let _ = writer.abort().await;
                    return Err(e);
                }
            };
            if n == 0 {
                break;
            }
            if let Err(e) = writer.wait_for_capacity(2).await {
                let _ = writer.abort().await;
                return Err(Error::store("put_part", key, e));
            }
            writer.write(&buf[..n]);
        }
        writer
            .finish()
            .await
            .map_err(|e| Error::store("complete_multipart", key, e))?;
        Ok(())
    }
}

/// A source read in chunks for a multipart upload.
trait Chunks {
    fn next_chunk(&mut self, buf: &mut [u8]) -> Result<usize>;
}

impl Chunks for &[u8] {
    fn next_chunk(&mut self, buf: &mut [u8]) -> Result<usize> {
        let n = buf.len().min(self.len());
        buf[..n].copy_from_slice(&self[..n]);
        *self = &self[n..];
        Ok(n)
    }
}

struct IoReader {
    file: std::fs::File,
    path: PathBuf,
}

impl Chunks for IoReader {
    fn next_chunk(&mut self, buf: &mut [u8]) -> Result<usize> {
        let mut filled = 0;
        while filled < buf.len() {
            match self.file.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(Error::Io {
                        op: "read",
                        path: self.path.clone(),
                        source,
                    });
                }
            }
        }
        Ok(filled)
    }
}
