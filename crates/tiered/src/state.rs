//! Kafka's `RemoteLogSegmentState`: the four states of a remote segment and the transitions
//! between them.

use serde::{Deserialize, Serialize};

/// `RemoteLogSegmentState`: where a remote segment is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RemoteLogSegmentState {
    /// The copy began: objects may be partly uploaded; never read, never counted.
    CopySegmentStarted,
    /// Every part is uploaded: readable, and the local segment may go.
    CopySegmentFinished,
    /// Deletion began (retention, or the clean-up of a failed or abandoned copy).
    DeleteSegmentStarted,
    /// Every part is deleted.
    DeleteSegmentFinished,
}

impl RemoteLogSegmentState {
    /// Kafka's `RemoteLogSegmentState.isValidTransition` (without the same-state case: a
    /// chain never repeats a state).
    pub fn can_move_to(self, next: RemoteLogSegmentState) -> bool {
        use RemoteLogSegmentState::*;
        matches!(
            (self, next),
            (CopySegmentStarted, CopySegmentFinished)
                | (CopySegmentStarted, DeleteSegmentStarted)
                | (CopySegmentFinished, DeleteSegmentStarted)
                | (DeleteSegmentStarted, DeleteSegmentFinished)
        )
    }

    /// Kafka's name (`COPY_SEGMENT_STARTED`, ...).
    pub fn kafka_name(self) -> &'static str {
        match self {
            RemoteLogSegmentState::CopySegmentStarted => "COPY_SEGMENT_STARTED",
            RemoteLogSegmentState::CopySegmentFinished => "COPY_SEGMENT_FINISHED",
            RemoteLogSegmentState::DeleteSegmentStarted => "DELETE_SEGMENT_STARTED",
            RemoteLogSegmentState::DeleteSegmentFinished => "DELETE_SEGMENT_FINISHED",
        }
    }
}
