//! `raft durable 8 proposers` and `raft batched 8 proposers`: durable requests/s through
//! seglog-raft (a one-node openraft cluster, 8 concurrent proposers, one 100 B write per
//! request), beside seglog's own `append_durable` doing the same work (8 writer threads, one
//! 100 B record per durable append), measured in the same rounds:
//! - `raft durable`: each request an entry of its own (`Raft::client_write`), beside one seglog
//!   writer too (the rate of one fsync per entry);
//! - `raft batched`: through `seglog_raft::Proposer`, which sends the requests that queued
//!   while one entry was in flight together as the next entry.
//!
//! A RocksDB-backed openraft store is not a contender: building RocksDB from source does not
//! fit this machine's build budget.
//!
//! openraft 0.9.25's core awaits each append's flush callback before it handles the next client
//! write (`RaftCore::append_to_log`), so on one node every entry costs one fsync of its own,
//! whatever the store: one request per entry runs near the one-writer rate; the batched path
//! lets the requests of one entry share its fsync.

use crate::Result;
use crate::data::{DataSpec, Dataset};
use crate::harness::{Contender, Role, WorkloadResult, measure_together};
use crate::raft_contender::{Proposal, RaftDurable};
use crate::seglog_contender;
use crate::workloads::{Context, names};

/// Concurrent proposers (and seglog writer threads).
const PROPOSERS: usize = 8;
/// Value bytes per request.
const VALUE_BYTES: usize = 100;

/// See the module docs.
///
/// # Errors
///
/// The first failing trial.
pub fn run(context: &mut Context) -> Result<Vec<WorkloadResult>> {
    let requests = context.plan.raft_requests;
    let spec = DataSpec {
        records: requests as u64,
        record_bytes: VALUE_BYTES,
        batch_records: 1,
    };
    let data = Dataset::generate(spec)?;
    let root = context.scratch.dir("raft")?;
    context.notes.push(format!(
        "{} / {}: records are requests; the ratio is seglog-raft over seglog's append_durable \
         with 8 writers (the ceiling column); a request is part of a whole openraft client write \
         (JSON entry, commit, apply); openraft 0.9.25's core waits for each append's flush \
         before the next client write, so one request per entry cannot share fsyncs and the \
         batched path shares them inside one entry (entries_per_s, req_per_entry)",
        names::RAFT_DURABLE,
        names::RAFT_BATCHED
    ));
    let contenders = vec![
        (
            0,
            Contender::new(
                Role::Ceiling,
                "seglog append_durable",
                seglog_contender::DurableAppend::new(
                    &data,
                    requests,
                    PROPOSERS,
                    root.join("seglog"),
                ),
            ),
        ),
        (
            0,
            Contender::new(
                Role::Reference,
                crate::workloads::labels::RAFT_ONE_WRITER,
                seglog_contender::DurableAppend::new(&data, requests, 1, root.join("seglog-1")),
            ),
        ),
        (
            0,
            Contender::new(
                Role::Seglog,
                "seglog-raft, 1 request/entry (openraft 0.9.25)",
                RaftDurable::new(
                    requests,
                    PROPOSERS,
                    Proposal::OnePerEntry,
                    VALUE_BYTES,
                    root.join("raft"),
                ),
            ),
        ),
        (
            1,
            Contender::new(
                Role::Ceiling,
                "seglog append_durable",
                seglog_contender::DurableAppend::new(
                    &data,
                    requests,
                    PROPOSERS,
                    root.join("seglog-b"),
                ),
            ),
        ),
        (
            1,
            Contender::new(
                Role::Seglog,
                "seglog-raft Proposer (openraft 0.9.25)",
                RaftDurable::new(
                    requests,
                    PROPOSERS,
                    Proposal::Batched,
                    VALUE_BYTES,
                    root.join("raft-batched"),
                ),
            ),
        ),
    ];
    let one = format!(
        "{requests} requests of {VALUE_BYTES} B, each its own entry, durable before its \
         proposer moves on; {PROPOSERS} proposers"
    );
    let batched = format!(
        "{requests} requests of {VALUE_BYTES} B through the batching Proposer (the requests \
         queued while one entry is in flight share the next), each durable before its proposer \
         moves on; {PROPOSERS} proposers"
    );
    measure_together(
        &[
            (names::RAFT_DURABLE, one.as_str()),
            (names::RAFT_BATCHED, batched.as_str()),
        ],
        context.plan.rounds,
        contenders,
    )
}
