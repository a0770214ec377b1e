//! Tiered storage for seglog (KIP-405): sealed segments copied to an object store in the layout
//! of Kafka's `LocalTieredStorage`, so Kafka's own code reads what seglog tiered.
//!
//! What it does: Kafka's object names ([`Layout`], [`parse_file_name`]); the shape of Kafka's
//! `RemoteStorageManager` ([`RemoteStorageManager`]: copy a segment's six parts, fetch a range
//! of its `.log`, fetch an index, delete); a durable metadata store with Kafka's four states
//! ([`MetadataStore`], [`RemoteLogSegmentState`]); the crash-safe copy and delete protocols
//! over both ([`PartitionTier`]); the driver of one log ([`Tier`]: copies, remote retention
//! checked against the leader-epoch lineage as Kafka 4.4 does); and the background service of a
//! whole `seglog::LogDir` ([`TieringService`], Kafka's `RemoteLogManager` tasks: bounded pools,
//! the KIP-956 copy and fetch quotas, retries with backoff, [`TierStats`] and, with the `metrics`
//! feature, Kafka's remote-storage metrics).
//!
//! What it does not do: it holds no local segment and decides nothing about local retention
//! (that is `seglog`'s, run by the `LogDir` ticker beside the service); it assumes one copier
//! per partition (Kafka's leader).
//!
//! ```
//! use std::sync::Arc;
//! use object_store::{memory::InMemory, path::Path};
//! use seglog_tiered::{Layout, PartitionTier, TopicIdPartition, Uuid};
//!
//! let tp = TopicIdPartition::new("orders", 0, Uuid::random()).unwrap();
//! let tier = PartitionTier::new(Arc::new(InMemory::new()), Layout::new(Path::default(), tp), 1);
//! let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! assert!(rt.block_on(tier.segments()).unwrap().is_empty());
//! ```

#![forbid(unsafe_code)]

// The `aws` feature names reqwest only to select its rustls-without-aws-lc-rs TLS (object_store
// makes the client); the provider is rustls's ring one, installed by `s3_store`.
#[cfg(feature = "aws")]
use reqwest as _;

mod adopt;
#[cfg(test)]
mod crash_tests;
mod error;
#[cfg(test)]
mod faulty;
mod layout;
mod lineage;
mod metadata;
#[cfg(test)]
mod model_tests;
mod partition_metadata;
mod protocol;
mod quota;
mod rsm;
mod service;
mod service_config;
#[cfg(test)]
mod service_tests;
mod state;
mod stats;
mod store;
mod tier;
mod uuid;

pub use adopt::{AdoptProblem, AdoptReport, AdoptedSegment, IncompleteFileset};
pub use error::{CorruptKind, Error};
pub use layout::{
    DATA_ROOT, FileKind, Layout, METADATA_ROOT, SegmentFileName, TopicIdPartition, parse_file_name,
    segment_stem,
};
pub use metadata::{Chain, MetadataStore, RemoteLogSegmentMetadata};
pub use partition_metadata::{PARTITION_METADATA_FILE, read_topic_id};
pub use protocol::{PartitionTier, RecoveryReport, SegmentToCopy};
pub use quota::FetchQuota;
pub use rsm::{
    DEFAULT_PART_SIZE, IndexType, LogSegmentData, Part, RemoteStorageManager,
    leader_epoch_checkpoint,
};
pub use service::{
    PartitionRun, ServiceRunReport, TaskFailure, TierFactory, TieringHandle, TieringService,
};
pub use service_config::TieringConfig;
pub use state::RemoteLogSegmentState;
pub use stats::{TierStats, TierStatsSnapshot, names as metric_names};
#[cfg(feature = "aws")]
pub use store::s3_store;
pub use store::{StoreRoot, open_store};
pub use tier::{
    CopiedSegment, CopyReport, ExpireReport, ObjectTier, Tier, remote_error, remote_segment,
};
pub use uuid::Uuid;

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
