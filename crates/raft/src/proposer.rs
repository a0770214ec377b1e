//! The batching proposal path: concurrent callers submit requests to a [`Proposer`]; while one
//! openraft `client_write` is in flight, newly arrived requests queue, and they go out
//! together as **one** log entry (a [`Batch`]) once it returns. Each caller gets its own
//! response once that entry is committed and applied.
//!
//! Why: openraft 0.9.25's core awaits each append's flush callback before it handles the next
//! client write (`RaftCore::append_to_log`), so on one node every `client_write` costs one
//! fsync of its own, however many proposers wait. Batching before openraft makes one entry
//! (one append, one fsync, one replication round, one commit) carry every request that
//! arrived meanwhile: the requests share the fsync the way seglog's own group commit lets
//! writers share one.
//!
//! One task (spawned on openraft's runtime) owns the queue and keeps at most one entry in
//! flight; a request waits at most one entry's round trip, plus [`ProposerConfig::linger`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use openraft::error::{ClientWriteError, ForwardToLeader, RaftError};
use openraft::raft::ClientWriteResponse;
use openraft::raft::responder::OneshotResponder;
use openraft::{AsyncRuntime, Instant, LogId, Raft, RaftTypeConfig};
use tokio::sync::{mpsc, oneshot};

use crate::Error;
use crate::batch::{Batch, BatchResponse};

/// Bounds of a [`Proposer`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProposerConfig {
    /// The most requests one entry carries. Default: 1024.
    ///
    /// With the default store config, the entry is one record of one batch; the leader writes
    /// it without the `max.message.bytes` check (seglog-raft appends as a follower does), so
    /// this count is what bounds an entry's size: at most this many encoded requests.
    pub max_batch_requests: usize,
    /// The most requests waiting for an entry (queued, not yet sent). A caller beyond it waits
    /// in [`Proposer::propose`] until there is room. Default: 8192.
    pub max_queued_requests: usize,
    /// How long the first request of an entry waits for more before the entry goes out,
    /// unless the entry is full first (Kafka's producer `linger.ms`). Default: zero (an
    /// entry takes what queued while the previous one was in flight, and goes at once).
    pub linger: Duration,
}

impl Default for ProposerConfig {
    fn default() -> Self {
        Self {
            max_batch_requests: 1024,
            max_queued_requests: 8192,
            linger: Duration::ZERO,
        }
    }
}

impl ProposerConfig {
    /// Checks the bounds.
    ///
    /// # Errors
    /// [`Error::InvalidProposerConfig`] for a zero `max_batch_requests` or
    /// `max_queued_requests`.
    pub fn validate(&self) -> Result<(), Error> {
        if self.max_batch_requests == 0 {
            return Err(Error::InvalidProposerConfig {
                reason: "max_batch_requests must be at least 1",
            });
        }
        if self.max_queued_requests == 0 {
            return Err(Error::InvalidProposerConfig {
                reason: "max_queued_requests must be at least 1",
            });
        }
        Ok(())
    }
}

/// One caller's answer: its request is committed and applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposed<C: RaftTypeConfig, P> {
    /// The log entry that carried the request.
    pub log_id: LogId<C::NodeId>,
    /// The request's position among the entry's requests (applied after those before it).
    pub position: usize,
    /// The requests the entry carried.
    pub entry_requests: usize,
    /// What the state machine answered for this request.
    pub response: P,
}

/// Why a request was not acknowledged. Every caller of one entry gets a copy of the same
/// error (this type is `Clone`, unlike the store's [`Error`], which holds I/O errors).
///
/// After any error other than [`ProposeError::Stopped`] the request may still have been
/// applied (an entry can be committed by a later leader after this one lost leadership), as
/// with openraft's own `client_write`: an application that must know deduplicates requests
/// itself (openraft's docs, `Raft::client_write`).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ProposeError<C: RaftTypeConfig> {
    /// This node is not the leader (or stopped being it before the entry was committed): send
    /// the request to this one, when known. openraft's `ForwardToLeader`, as is.
    #[error(transparent)]
    ForwardToLeader(ForwardToLeader<C::NodeId, C::Node>),
    /// openraft failed or refused the entry that carried the request (a fatal error: storage
    /// I/O, a stopped node, a panicked core).
    #[error("the entry of {entry_requests} requests failed: {source}")]
    Raft {
        /// The requests the failed entry carried (all got this error).
        entry_requests: usize,
        /// openraft's error.
        #[source]
        source: WriteError<C>,
    },
    /// The state machine did not answer one response per request of the entry.
    #[error(
        "the entry at {log_id} carried {entry_requests} requests but applying it answered {responses} responses"
    )]
    ResponseCount {
        /// The entry.
        log_id: LogId<C::NodeId>,
        /// The requests it carried.
        entry_requests: usize,
        /// The responses the state machine returned.
        responses: usize,
    },
    /// The proposer's task is gone (its runtime shut down): the request was not proposed, or
    /// its answer was lost.
    #[error("the proposer's task is not running")]
    Stopped,
}

/// What a [`Proposer`] has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProposerStats {
    /// Entries committed and applied.
    pub entries: u64,
    /// Requests those entries carried.
    pub requests: u64,
    /// Entries that failed (each of their callers got the error).
    pub failed_entries: u64,
    /// Requests those failed entries carried.
    pub failed_requests: u64,
    /// The most requests one entry carried.
    pub largest_entry: u64,
}

/// The answer sent to one caller.
type Answer<C, P> = Result<Proposed<C, P>, ProposeError<C>>;

/// openraft's error of one `client_write`.
type WriteError<C> = RaftError<
    <C as RaftTypeConfig>::NodeId,
    ClientWriteError<<C as RaftTypeConfig>::NodeId, <C as RaftTypeConfig>::Node>,
>;

/// One queued request and where its answer goes.
struct Pending<C: RaftTypeConfig, Q, P> {
    request: Q,
    reply: oneshot::Sender<Answer<C, P>>,
}

#[derive(Debug, Default)]
struct Counters {
    entries: AtomicU64,
    requests: AtomicU64,
    failed_entries: AtomicU64,
    failed_requests: AtomicU64,
    largest_entry: AtomicU64,
}

/// Batches concurrent client writes into entries of [`Batch`]es before they reach openraft:
/// while one `client_write` is in flight, newly arrived requests queue, and they go out
/// together as one entry (one append, one fsync, one replication round) once it returns;
/// each caller gets its own response once that entry is applied. Cloning shares the queue; the task stops once every clone is
/// dropped and the queued requests are answered.
///
/// The config's app data must be `Batch<Q>` and its response `BatchResponse<P>`; the state
/// machine applies an entry's requests in order and answers one response each.
///
/// ```no_run
/// # async fn example(raft: openraft::Raft<seglog_raft::KvConfig>) -> Result<(), Box<dyn std::error::Error>> {
/// use seglog_raft::{KvProposer, KvRequest, ProposerConfig};
///
/// let proposer = KvProposer::new(raft, ProposerConfig::default())?;
/// let answer = proposer
///     .propose(KvRequest { key: "a".into(), value: "1".into() })
///     .await?;
/// println!("applied at {} as request {} of {}", answer.log_id, answer.position, answer.entry_requests);
/// # Ok(())
/// # }
/// ```
pub struct Proposer<C: RaftTypeConfig, Q, P> {
    queue: mpsc::Sender<Pending<C, Q, P>>,
    counters: Arc<Counters>,
}

impl<C: RaftTypeConfig, Q, P> Clone for Proposer<C, Q, P> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            counters: Arc::clone(&self.counters),
        }
    }
}

impl<C, Q, P> Proposer<C, Q, P>
where
    C: RaftTypeConfig<D = Batch<Q>, R = BatchResponse<P>, Responder = OneshotResponder<C>>,
    Q: Send + 'static,
    P: Send + 'static,
{
    /// A proposer writing through `raft`; spawns its task on openraft's runtime (call it
    /// where `Raft::new` may be called: inside that runtime).
    ///
    /// # Errors
    /// [`Error::InvalidProposerConfig`] (see [`ProposerConfig::validate`]).
    ///
    /// # Panics
    /// Outside openraft's runtime, as its `AsyncRuntime::spawn` does (Tokio's `spawn` panics
    /// outside a Tokio runtime).
    pub fn new(raft: Raft<C>, config: ProposerConfig) -> Result<Self, Error> {
        config.validate()?;
        let (queue, rx) = mpsc::channel(config.max_queued_requests);
        let counters = Arc::new(Counters::default());
        // Detached: the task ends by itself once every sender is dropped.
        drop(C::AsyncRuntime::spawn(drive(
            raft,
            rx,
            config,
            Arc::clone(&counters),
        )));
        Ok(Self { queue, counters })
    }

    /// Proposes `request`; returns once the entry carrying it is committed and applied (on
    /// this node, the leader), with the state machine's response to it.
    ///
    /// Requests are applied in the order they entered the queue: two calls of one caller, the
    /// second made after the first returned, apply in that order. Waits for room when
    /// [`ProposerConfig::max_queued_requests`] are queued. Dropping the returned future before
    /// the request went out withdraws it; after, the request is applied all the same and only
    /// its answer is discarded.
    ///
    /// # Errors
    /// See [`ProposeError`]: every caller of a failed entry gets the same error.
    pub async fn propose(&self, request: Q) -> Answer<C, P> {
        let (reply, answer) = oneshot::channel();
        self.queue
            .send(Pending { request, reply })
            .await
            .map_err(|_| ProposeError::Stopped)?;
        answer.await.map_err(|_| ProposeError::Stopped)?
    }

    /// What the proposer has done so far.
    pub fn stats(&self) -> ProposerStats {
        let c = &self.counters;
        ProposerStats {
            entries: c.entries.load(Ordering::Relaxed),
            requests: c.requests.load(Ordering::Relaxed),
            failed_entries: c.failed_entries.load(Ordering::Relaxed),
            failed_requests: c.failed_requests.load(Ordering::Relaxed),
            largest_entry: c.largest_entry.load(Ordering::Relaxed),
        }
    }
}

/// The proposer's task: takes what is queued (up to the batch bound, lingering when asked),
/// writes it as one entry, answers every caller, and again, until every sender is gone.
async fn drive<C, Q, P>(
    raft: Raft<C>,
    mut queue: mpsc::Receiver<Pending<C, Q, P>>,
    config: ProposerConfig,
    counters: Arc<Counters>,
) where
    C: RaftTypeConfig<D = Batch<Q>, R = BatchResponse<P>, Responder = OneshotResponder<C>>,
    Q: Send + 'static,
    P: Send + 'static,
{
    let mut batch: Vec<Pending<C, Q, P>> = Vec::new();
    while let Some(first) = queue.recv().await {
        batch.push(first);
        fill::<C, Q, P>(&mut queue, &mut batch, &config).await;
        // A caller that gave up before its request went out withdraws it.
        batch.retain(|pending| !pending.reply.is_closed());
        if batch.is_empty() {
            continue;
        }
        let (requests, replies): (Vec<Q>, Vec<_>) = batch
            .drain(..)
            .map(|pending| (pending.request, pending.reply))
            .unzip();
        let entry_requests = requests.len();
        let result = raft.client_write(Batch { requests }).await;
        answer(result, replies, entry_requests, &counters);
    }
}

/// Adds to `batch` what is queued, up to the bound; with a linger, waits for more until the
/// first request has waited that long or the batch is full.
///
/// Before the entry goes, the task yields to the runtime as long as each yield brought more
/// requests: the callers answered by the previous entry are woken together, and the first
/// to propose again would otherwise wake this task before the others have run (a runtime
/// runs the task just woken first), sending entries of one request and of the rest in turn.
/// A yield costs microseconds; an entry costs an fsync.
async fn fill<C, Q, P>(
    queue: &mut mpsc::Receiver<Pending<C, Q, P>>,
    batch: &mut Vec<Pending<C, Q, P>>,
    config: &ProposerConfig,
) where
    C: RaftTypeConfig,
    Q: Send + 'static,
    P: Send + 'static,
{
    take_queued(queue, batch, config.max_batch_requests);
    while batch.len() < config.max_batch_requests {
        let before = batch.len();
        YieldNow { yielded: false }.await;
        take_queued(queue, batch, config.max_batch_requests);
        if batch.len() == before {
            break;
        }
    }
    if config.linger.is_zero() {
        return;
    }
    let deadline = <C::AsyncRuntime as AsyncRuntime>::Instant::now() + config.linger;
    while batch.len() < config.max_batch_requests {
        match C::AsyncRuntime::timeout_at(deadline, queue.recv()).await {
            Ok(Some(pending)) => batch.push(pending),
            // Every sender is gone (the batch goes out, then the task ends) or time is up.
            Ok(None) | Err(_) => break,
        }
    }
}

/// Moves queued requests into `batch` without waiting, until it holds `max`.
fn take_queued<T>(queue: &mut mpsc::Receiver<T>, batch: &mut Vec<T>, max: usize) {
    while batch.len() < max {
        match queue.try_recv() {
            Ok(pending) => batch.push(pending),
            Err(_) => break,
        }
    }
}

/// Lets every other ready task of the runtime run once, then resumes (a wake of itself puts
/// the task behind them), on any runtime.
struct YieldNow {
    yielded: bool,
}

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Sends every caller of one entry its answer.
fn answer<C, Q, P>(
    result: Result<ClientWriteResponse<C>, WriteError<C>>,
    replies: Vec<oneshot::Sender<Answer<C, P>>>,
    entry_requests: usize,
    counters: &Counters,
) where
    C: RaftTypeConfig<D = Batch<Q>, R = BatchResponse<P>>,
{
    let requests = entry_requests as u64;
    counters
        .largest_entry
        .fetch_max(requests, Ordering::Relaxed);
    let error = match result {
        Ok(written) if written.data.responses.len() == entry_requests => {
            counters.entries.fetch_add(1, Ordering::Relaxed);
            counters.requests.fetch_add(requests, Ordering::Relaxed);
            let log_id = written.log_id;
            for (position, (reply, response)) in
                replies.into_iter().zip(written.data.responses).enumerate()
            {
                // A caller that stopped waiting discards its answer.
                let _ = reply.send(Ok(Proposed {
                    log_id: log_id.clone(),
                    position,
                    entry_requests,
                    response,
                }));
            }
            return;
        }
        Ok(written) => ProposeError::ResponseCount {
            log_id: written.log_id,
            entry_requests,
            responses: written.data.responses.len(),
        },
        Err(RaftError::APIError(ClientWriteError::ForwardToLeader(forward))) => {
            ProposeError::ForwardToLeader(forward)
        }
        Err(source) => ProposeError::Raft {
            entry_requests,
            source,
        },
    };
    counters.failed_entries.fetch_add(1, Ordering::Relaxed);
    counters
        .failed_requests
        .fetch_add(requests, Ordering::Relaxed);
    for reply in replies {
        let _ = reply.send(Err(error.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_with_a_zero_bound_is_refused() {
        assert!(ProposerConfig::default().validate().is_ok());
        for config in [
            ProposerConfig {
                max_batch_requests: 0,
                ..ProposerConfig::default()
            },
            ProposerConfig {
                max_queued_requests: 0,
                ..ProposerConfig::default()
            },
        ] {
            assert!(matches!(
                config.validate(),
                Err(Error::InvalidProposerConfig { .. })
            ));
        }
    }
}
