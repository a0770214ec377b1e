//! `raft durable 8 proposers`: durable entries/s through seglog-raft (a one-node openraft
//! cluster, 8 concurrent proposers, one 100 B entry per write) beside seglog's own
//! `append_durable` doing the same work (8 writer threads, one 100 B record per durable
//! append), and beside one writer doing the same (the rate of one fsync per entry). A
//! RocksDB-backed openraft store is not a contender: building RocksDB from source does not fit
//! this machine's build budget.
//!
//! openraft 0.9.25's core awaits each append's flush callback before it handles the next client
//! write (`RaftCore::append_to_log`), so on one node every client write costs one fsync of its
//! own, whatever the store: expect seglog-raft near the one-writer rate, not the eight-writer
//! one.

use crate::Result;
use crate::data::{DataSpec, Dataset};
use crate::harness::{Contender, Role, WorkloadResult, measure};
use crate::raft_contender::RaftDurable;
use crate::seglog_contender;
use crate::workloads::{Context, names};

/// Concurrent proposers (and seglog writer threads).
const PROPOSERS: usize = 8;
/// Value bytes per entry.
const VALUE_BYTES: usize = 100;

/// See the module docs.
///
/// # Errors
///
/// The first failing trial.
pub fn run(context: &mut Context) -> Result<Vec<WorkloadResult>> {
    let entries = context.plan.raft_entries;
    let spec = DataSpec {
        records: entries as u64,
        record_bytes: VALUE_BYTES,
        batch_records: 1,
    };
    let data = Dataset::generate(spec)?;
    let root = context.scratch.dir("raft")?;
    context.notes.push(format!(
        "{}: the ratio is seglog-raft over seglog's append_durable (shown in the ceiling column); \
         a seglog-raft write is a whole openraft client write (JSON entry, commit, apply), and \
         openraft 0.9.25's core waits for each append's flush before the next client write, so \
         its proposers cannot share fsyncs",
        names::RAFT_DURABLE
    ));
    let contenders = vec![
        Contender::new(
            Role::Ceiling,
            "seglog append_durable",
            seglog_contender::DurableAppend::new(&data, entries, PROPOSERS, root.join("seglog")),
        ),
        Contender::new(
            Role::Reference,
            "seglog append_durable, 1 writer",
            seglog_contender::DurableAppend::new(&data, entries, 1, root.join("seglog-1")),
        ),
        Contender::new(
            Role::Seglog,
            "seglog-raft (openraft 0.9.25)",
            RaftDurable::new(entries, PROPOSERS, VALUE_BYTES, root.join("raft")),
        ),
    ];
    let about = format!(
        "{entries} entries of {VALUE_BYTES} B, each durable before its proposer moves on; \
         {PROPOSERS} proposers"
    );
    Ok(vec![measure(
        names::RAFT_DURABLE,
        &about,
        context.plan.rounds,
        contenders,
    )?])
}
