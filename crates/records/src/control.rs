//! Control records: transaction markers and KRaft control types (spec 4.3).
//!
//! A control record's key is `version: i16, type: i16`; ABORT/COMMIT records carry an
//! end-transaction marker value `version: i16, coordinatorEpoch: i32`.

use crate::{CorruptKind, Record};

/// The type in a control record's key (Kafka's `ControlRecordType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControlRecordType {
    /// 0: transaction aborted.
    Abort,
    /// 1: transaction committed.
    Commit,
    /// 2: KRaft leader change.
    LeaderChange,
    /// 3: KRaft snapshot header.
    SnapshotHeader,
    /// 4: KRaft snapshot footer.
    SnapshotFooter,
    /// 5: KRaft version record.
    KraftVersion,
    /// 6: KRaft voters record.
    KraftVoters,
    /// Any other type id (Kafka reads these as `UNKNOWN`).
    Unknown(i16),
}

impl ControlRecordType {
    /// Size of a control record key.
    pub const KEY_SIZE: usize = 4;
    /// The key version this crate writes.
    pub const CURRENT_KEY_VERSION: i16 = 0;

    /// The type with id `id`.
    pub fn from_id(id: i16) -> Self {
        match id {
            0 => ControlRecordType::Abort,
            1 => ControlRecordType::Commit,
            2 => ControlRecordType::LeaderChange,
            3 => ControlRecordType::SnapshotHeader,
            4 => ControlRecordType::SnapshotFooter,
            5 => ControlRecordType::KraftVersion,
            6 => ControlRecordType::KraftVoters,
            other => ControlRecordType::Unknown(other),
        }
    }

    /// The type id.
    pub fn id(self) -> i16 {
        match self {
            ControlRecordType::Abort => 0,
            ControlRecordType::Commit => 1,
            ControlRecordType::LeaderChange => 2,
            ControlRecordType::SnapshotHeader => 3,
            ControlRecordType::SnapshotFooter => 4,
            ControlRecordType::KraftVersion => 5,
            ControlRecordType::KraftVoters => 6,
            ControlRecordType::Unknown(id) => id,
        }
    }

    /// Parses a control record key. Bytes after the first four are ignored, as in Kafka.
    ///
    /// # Errors
    /// [`CorruptKind::InvalidControlRecord`] for a key shorter than 4 bytes or a negative
    /// version.
    pub fn parse_key(key: &[u8]) -> Result<Self, CorruptKind> {
        let Some(&[v0, v1, t0, t1]) = key.first_chunk::<4>() else {
            return Err(CorruptKind::InvalidControlRecord {
                reason: "control record key is shorter than 4 bytes",
            });
        };
        if i16::from_be_bytes([v0, v1]) < 0 {
            return Err(CorruptKind::InvalidControlRecord {
                reason: "control record key has a negative version",
            });
        }
        Ok(Self::from_id(i16::from_be_bytes([t0, t1])))
    }

    /// The 4-byte key for this type (version 0).
    pub fn key(self) -> [u8; 4] {
        let mut key = [0u8; 4];
        key[..2].copy_from_slice(&Self::CURRENT_KEY_VERSION.to_be_bytes());
        key[2..].copy_from_slice(&self.id().to_be_bytes());
        key
    }

    /// True for ABORT and COMMIT, the types that carry an [`EndTransactionMarker`].
    pub fn is_transaction_marker(self) -> bool {
        matches!(self, ControlRecordType::Abort | ControlRecordType::Commit)
    }
}

/// The value of an ABORT/COMMIT control record (Kafka's `EndTransactionMarker`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EndTransactionMarker {
    /// Value version (0 today).
    pub version: i16,
    /// Epoch of the transaction coordinator that wrote the marker.
    pub coordinator_epoch: i32,
}

impl EndTransactionMarker {
    /// Size of the marker value.
    pub const VALUE_SIZE: usize = 6;

    /// A version-0 marker.
    pub fn new(coordinator_epoch: i32) -> Self {
        EndTransactionMarker {
            version: 0,
            coordinator_epoch,
        }
    }

    /// Parses a marker value; bytes after the first six are ignored (newer versions may add
    /// fields).
    ///
    /// # Errors
    /// [`CorruptKind::InvalidControlRecord`] for a value shorter than 6 bytes or a negative
    /// version.
    pub fn parse_value(value: &[u8]) -> Result<Self, CorruptKind> {
        let Some(&[v0, v1, e0, e1, e2, e3]) = value.first_chunk::<6>() else {
            return Err(CorruptKind::InvalidControlRecord {
                reason: "end transaction marker is shorter than 6 bytes",
            });
        };
        let version = i16::from_be_bytes([v0, v1]);
        if version < 0 {
            return Err(CorruptKind::InvalidControlRecord {
                reason: "end transaction marker has a negative version",
            });
        }
        Ok(EndTransactionMarker {
            version,
            coordinator_epoch: i32::from_be_bytes([e0, e1, e2, e3]),
        })
    }

    /// The 6-byte value.
    pub fn value(&self) -> [u8; 6] {
        let mut value = [0u8; 6];
        value[..2].copy_from_slice(&self.version.to_be_bytes());
        value[2..].copy_from_slice(&self.coordinator_epoch.to_be_bytes());
        value
    }
}

/// A decoded control record: its type, and the marker for ABORT/COMMIT. For the KRaft types
/// the value (a KRaft message this crate does not decode) stays in the [`Record`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlRecord {
    /// The type from the key.
    pub control_type: ControlRecordType,
    /// The end-transaction marker, for ABORT and COMMIT.
    pub marker: Option<EndTransactionMarker>,
    /// The record itself.
    pub record: Record,
}

impl ControlRecord {
    /// Interprets `record` as a control record.
    ///
    /// # Errors
    /// [`CorruptKind::InvalidControlRecord`] for a null or malformed key, or a null or
    /// malformed ABORT/COMMIT value.
    pub fn parse(record: &Record) -> Result<Self, CorruptKind> {
        let key = record
            .key
            .as_deref()
            .ok_or(CorruptKind::InvalidControlRecord {
                reason: "control record has a null key",
            })?;
        let control_type = ControlRecordType::parse_key(key)?;
        let marker = if control_type.is_transaction_marker() {
            let value = record
                .value
                .as_deref()
                .ok_or(CorruptKind::InvalidControlRecord {
                    reason: "end transaction marker is null",
                })?;
            Some(EndTransactionMarker::parse_value(value)?)
        } else {
            None
        };
        Ok(ControlRecord {
            control_type,
            marker,
            record: record.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_unknown_types_survive() {
        for id in -2..10 {
            let t = ControlRecordType::from_id(id);
            assert_eq!(t.id(), id);
            assert_eq!(ControlRecordType::parse_key(&t.key()), Ok(t));
        }
        assert_eq!(ControlRecordType::from_id(7), ControlRecordType::Unknown(7));
        assert!(ControlRecordType::parse_key(&[0, 0, 1]).is_err());
        assert!(ControlRecordType::parse_key(&[0xff, 0xff, 0, 1]).is_err());
    }

    #[test]
    fn marker_round_trips() {
        let marker = EndTransactionMarker::new(-5);
        assert_eq!(
            EndTransactionMarker::parse_value(&marker.value()),
            Ok(marker)
        );
        assert!(EndTransactionMarker::parse_value(&[0, 0, 0]).is_err());
    }
}
