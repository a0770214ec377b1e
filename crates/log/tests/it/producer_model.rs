//! Producer state and transactions against a simple in-memory model (proptest): random
//! producers appending idempotent and transactional batches, retries of recent batches, epoch
//! bumps, commits, aborts, rolls, truncations, clean reopens and crashes. After every step the
//! open transactions, the last stable offset and the `read_committed` records equal the
//! model's; at the end a full recovery rebuilds the same `.txnindex` files.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;
use seglog::{
    BatchBuilder, Durability, HighWatermarkPolicy, Isolation, Log, LogConfig, LogOpenOptions,
    ManualClock, ReaderOptions, TxnResult,
};

use crate::support::{T0, small_config};

const PRODUCERS: i64 = 3;

#[derive(Debug, Clone)]
enum Op {
    Append { pid: i64, records: usize },
    Retry { pid: i64, back: usize },
    Begin { pid: i64 },
    End { pid: i64, commit: bool },
    BumpEpoch { pid: i64 },
    Roll,
    Truncate { back: u16 },
    Reopen,
    Crash,
}

fn op() -> impl Strategy<Value = Op> {
    let pid = 0..PRODUCERS;
    prop_oneof![
        8 => (pid.clone(), 1usize..4).prop_map(|(pid, records)| Op::Append { pid, records }),
        2 => (pid.clone(), 0usize..5).prop_map(|(pid, back)| Op::Retry { pid, back }),
        2 => pid.clone().prop_map(|pid| Op::Begin { pid }),
        3 => (pid.clone(), any::<bool>()).prop_map(|(pid, commit)| Op::End { pid, commit }),
        1 => pid.prop_map(|pid| Op::BumpEpoch { pid }),
        1 => Just(Op::Roll),
        1 => (0u16..6).prop_map(|back| Op::Truncate { back }),
        1 => Just(Op::Reopen),
        1 => Just(Op::Crash),
    ]
}

/// One written batch or marker, as the model keeps it.
#[derive(Debug, Clone)]
struct Written {
    pid: i64,
    epoch: i16,
    first_offset: i64,
    last_offset: i64,
    /// Data: (first sequence, values, transactional); a marker: `None`.
    data: Option<(i32, Vec<String>, bool)>,
    /// For a marker: commit?
    commit: bool,
}

/// The client side of one producer.
#[derive(Debug, Clone, Default)]
struct Client {
    epoch: i16,
    next_sequence: i32,
    in_txn: bool,
    /// Batches that may be retried (first sequence, count, first offset), newest last.
    recent: Vec<(i32, usize, i64)>,
}

#[derive(Debug, Default)]
struct Model {
    log: Vec<Written>,
    clients: BTreeMap<i64, Client>,
    end: i64,
}

impl Model {
    /// Open transactions: `(pid, first offset)` of transactional data after the producer's
    /// last marker.
    fn open_txns(&self) -> Vec<(i64, i64)> {
        let mut open: BTreeMap<i64, i64> = BTreeMap::new();
        for w in &self.log {
            match &w.data {
                Some((_, _, true)) => {
                    open.entry(w.pid).or_insert(w.first_offset);
                }
                Some(_) => {}
                None => {
                    open.remove(&w.pid);
                }
            }
        }
        let mut out: Vec<(i64, i64)> = open.into_iter().collect();
        out.sort_by_key(|(_, o)| *o);
        out
    }

    /// The records a read_committed consumer sees below `lso`.
    fn committed(&self, lso: i64) -> Vec<String> {
        // A transaction's fate is its next marker.
        let mut out = Vec::new();
        for (i, w) in self.log.iter().enumerate() {
            let Some((_, values, txn)) = &w.data else {
                continue;
            };
            if w.first_offset >= lso {
                break;
            }
            let kept = !txn
                || self.log[i + 1..]
                    .iter()
                    .find(|m| m.pid == w.pid && m.data.is_none())
                    .is_none_or(|m| m.commit);
            if kept {
                out.extend(values.iter().cloned());
            }
        }
        out
    }

    /// After a truncation to `offset` (a batch boundary) or a reload: the clients continue
    /// from what the log kept; only the last batch of each is surely retained for retries.
    fn resync(&mut self, offset: i64) {
        self.log.retain(|w| w.last_offset < offset);
        self.end = offset;
        let mut clients: BTreeMap<i64, Client> = BTreeMap::new();
        for w in &self.log {
            let c = clients.entry(w.pid).or_default();
            if c.epoch != w.epoch {
                // A new epoch (a marker may carry it first) starts at sequence 0.
                c.next_sequence = 0;
            }
            c.epoch = w.epoch;
            match &w.data {
                Some((seq, values, txn)) => {
                    c.next_sequence = seq + values.len() as i32;
                    c.in_txn = *txn;
                    c.recent = vec![(*seq, values.len(), w.first_offset)];
                }
                None => {
                    c.in_txn = false;
                    c.recent.clear();
                }
            }
        }
        // A producer whose data is all gone starts over with a new epoch, as a new producer.
        for (pid, old) in &self.clients {
            clients.entry(*pid).or_insert_with(|| Client {
                epoch: old.epoch.saturating_add(1),
                ..Client::default()
            });
        }
        self.clients = clients;
    }
}

fn config() -> LogConfig {
    LogConfig {
        file_delete_delay_ms: 0,
        producer_id_expiration_ms: i64::MAX,
        ..small_config(500)
    }
}

fn open(dir: &Path, clock: &Arc<ManualClock>, recover_all: bool) -> Log {
    Log::open_with(
        dir,
        config(),
        LogOpenOptions {
            clock: clock.clone(),
            high_watermark: HighWatermarkPolicy::LogEnd,
            recover_all,
            ..LogOpenOptions::default()
        },
    )
    .unwrap()
}

fn batch(pid: i64, epoch: i16, sequence: i32, values: &[String], txn: bool) -> Vec<u8> {
    let mut b = BatchBuilder::new(0)
        .producer(pid, epoch, sequence)
        .transactional(txn);
    for v in values {
        b.append(T0, None, Some(v.as_bytes()), &[]);
    }
    b.build().unwrap().to_vec()
}

fn check(log: &Log, model: &Model) {
    assert_eq!(log.log_end_offset(), model.end);
    assert_eq!(log.ongoing_transactions(), model.open_txns());
    let lso = model.open_txns().first().map_or(model.end, |(_, o)| *o);
    assert_eq!(log.last_stable_offset(), lso);
    let got: Vec<String> = ReaderOptions::new(log.log_start_offset(), Isolation::ReadCommitted)
        .owned_reader(log)
        .until_caught_up()
        .map(|r| String::from_utf8(r.unwrap().record.value.unwrap().to_vec()).unwrap())
        .collect();
    assert_eq!(got, model.committed(lso));
}

fn txnindexes(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txnindex"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .filter(|(_, b)| !b.is_empty())
        .collect();
    out.sort();
    out
}

fn run(ops: Vec<Op>) {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let mut log = open(dir.path(), &clock, false);
    let mut model = Model::default();
    for pid in 0..PRODUCERS {
        model.clients.insert(pid, Client::default());
    }
    let mut counter = 0u64;
    for op in ops {
        match op {
            Op::Append { pid, records } => {
                let c = model.clients.get_mut(&pid).unwrap();
                let values: Vec<String> = (0..records)
                    .map(|_| {
                        counter += 1;
                        format!("v{counter}")
                    })
                    .collect();
                let info = log
                    .append(&batch(pid, c.epoch, c.next_sequence, &values, c.in_txn))
                    .unwrap();
                assert!(!info.duplicate);
                assert_eq!(info.first_offset, model.end);
                model.log.push(Written {
                    pid,
                    epoch: c.epoch,
                    first_offset: info.first_offset,
                    last_offset: info.last_offset,
                    data: Some((c.next_sequence, values, c.in_txn)),
                    commit: false,
                });
                c.recent.push((c.next_sequence, records, info.first_offset));
                if c.recent.len() > 5 {
                    c.recent.remove(0);
                }
                c.next_sequence += records as i32;
                model.end = info.last_offset + 1;
            }
            Op::Retry { pid, back } => {
                let c = &model.clients[&pid];
                let Some(&(sequence, count, first_offset)) = c.recent.iter().rev().nth(back) else {
                    continue;
                };
                let values: Vec<String> = (0..count).map(|i| format!("retry{i}")).collect();
                let info = log
                    .append(&batch(pid, c.epoch, sequence, &values, c.in_txn))
                    .unwrap();
                assert!(info.duplicate, "{op:?}");
                assert_eq!(info.first_offset, first_offset);
            }
            Op::Begin { pid } => model.clients.get_mut(&pid).unwrap().in_txn = true,
            Op::End { pid, commit } => {
                let c = model.clients.get_mut(&pid).unwrap();
                if !c.in_txn {
                    continue;
                }
                let result = if commit {
                    TxnResult::Commit
                } else {
                    TxnResult::Abort
                };
                let info = log
                    .write_txn_marker(pid, c.epoch, 0, result, None, Durability::PageCache)
                    .unwrap();
                c.in_txn = false;
                model.log.push(Written {
                    pid,
                    epoch: c.epoch,
                    first_offset: info.first_offset,
                    last_offset: info.last_offset,
                    data: None,
                    commit,
                });
                model.end = info.last_offset + 1;
            }
            Op::BumpEpoch { pid } => {
                let c = model.clients.get_mut(&pid).unwrap();
                if !c.in_txn {
                    c.epoch += 1;
                    c.next_sequence = 0;
                    c.recent.clear();
                }
            }
            Op::Roll => log.roll().unwrap(),
            Op::Truncate { back } => {
                let Some(cut) = model
                    .log
                    .iter()
                    .rev()
                    .nth(usize::from(back))
                    .map(|w| w.first_offset)
                else {
                    continue;
                };
                log.truncate_to(cut).unwrap();
                model.resync(cut);
            }
            Op::Reopen | Op::Crash => {
                if matches!(op, Op::Reopen) {
                    log.close().unwrap();
                }
                drop(log);
                log = open(dir.path(), &clock, false);
                let end = model.end;
                model.resync(end);
            }
        }
        check(&log, &model);
    }
    let written = txnindexes(dir.path());
    log.close().unwrap();
    drop(log);
    let log = open(dir.path(), &clock, true);
    assert_eq!(
        txnindexes(dir.path()),
        written,
        "rebuilt by a full recovery"
    );
    check(&log, &model);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn producer_state_matches_the_model(ops in proptest::collection::vec(op(), 1..60)) {
        run(ops);
    }
}
