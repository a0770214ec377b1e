//! A batch entry: many client requests carried by one Raft log entry, and the answers of
//! applying them.
//!
//! [`Batch`] is the application data (`RaftTypeConfig::D`) of a config whose writes go through
//! a [`crate::Proposer`]; [`BatchResponse`] is its response (`RaftTypeConfig::R`). The state
//! machine applies the requests of one entry in order, as one step, and answers one response
//! per request, in the same order. On disk a batch entry is an ordinary Raft entry (one
//! record) whose payload is `{"Normal": [request, request, ...]}` (docs/format.md, "Batch
//! entries").

use serde::{Deserialize, Serialize};

/// The requests of one log entry, in the order the state machine applies them (the order in
/// which they reached the [`crate::Proposer`]).
///
/// Serialized as a plain JSON array of the requests.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Batch<Q> {
    /// The requests, first applied first.
    pub requests: Vec<Q>,
}

impl<Q> Batch<Q> {
    /// A batch of one request (what a plain `Raft::client_write` of one request proposes).
    pub fn one(request: Q) -> Self {
        Self {
            requests: vec![request],
        }
    }

    /// The requests in the entry.
    pub fn len(&self) -> usize {
        self.requests.len()
    }

    /// Whether the entry carries no request.
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }
}

impl<Q> From<Vec<Q>> for Batch<Q> {
    fn from(requests: Vec<Q>) -> Self {
        Self { requests }
    }
}

/// What applying one entry returns: one response per request of its [`Batch`], in order
/// (none for a blank or membership entry).
///
/// Serialized as a plain JSON array of the responses.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BatchResponse<P> {
    /// `responses[i]` answers `requests[i]` of the entry.
    pub responses: Vec<P>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_a_json_array_of_its_requests() {
        let batch = Batch::from(vec!["a".to_owned(), "b".to_owned()]);
        let json = serde_json::to_string(&batch).unwrap();
        assert_eq!(json, r#"["a","b"]"#);
        let back: Batch<String> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, batch);
        assert_eq!(Batch::one(7u8).len(), 1);
        assert!(Batch::<u8>::default().is_empty());
        let response = BatchResponse {
            responses: vec![1u8, 2],
        };
        assert_eq!(serde_json::to_string(&response).unwrap(), "[1,2]");
    }
}
