//! The cargo-fuzz targets of `fuzz/fuzz_targets/`, run as plain tests on stable.
//!
//! `build.rs` copies each target without its `#![no_main]` and `libfuzzer_sys` import; the
//! `fuzz_target!` macro below turns its body into `run(data)`. Each target then runs over its
//! seeds (the shared Kafka corpus, hand-made cases, and any saved regression input in
//! `reliability/tests/fuzz-regressions/<target>/`) and over random mutations of them. A
//! failing input is saved to the temp directory and its path printed; copy it into
//! `fuzz-regressions/<target>/` to keep it as a regression test.
//!
//! `SEGLOG_FUZZ_CORPUS_OUT=<dir>` also writes each target's seeds to `<dir>/<target>/`, which
//! is how the cargo-fuzz corpora in `fuzz/corpus/` are seeded from the Kafka corpus.
//!
//! The targets that fuzz a parser, the readers or the swap decision in memory
//! (`producer_snapshot`, `txn_index`, `leader_epoch_checkpoint`, `record_readers`,
//! `swap_recovery`) have a log-level half here ([`log_level`]): the same input
//! installed in a small log that is reopened. It runs on every seed and on the first random
//! inputs.
//!
//! `SEGLOG_FUZZ_ITERATIONS` sets the random inputs per target (defaults: 2000 for the pure
//! parsers, 300-400 for the targets that touch files); `SEGLOG_FUZZ_LOG_ITERATIONS` how many
//! of them the log-level halves run (default 100).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use rand::Rng;
use rand::rngs::StdRng;

use crate::support::{iterations, seeded_rng};

/// libfuzzer-sys's macro, reduced to what the targets use.
macro_rules! fuzz_target {
    (|$data:ident: &[u8]| $body:block) => {
        /// Runs the target's body on one input.
        pub fn run($data: &[u8]) $body
    };
}

mod log_level;

#[allow(dead_code)]
mod targets {
    include!(concat!(env!("OUT_DIR"), "/fuzz_targets.rs"));
}

/// Every file under `dir` whose name ends with one of `suffixes`, sorted.
fn files(dir: &Path, suffixes: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| suffixes.iter().any(|s| n.ends_with(s)))
            {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn head(path: &Path, max: usize) -> Vec<u8> {
    let mut bytes = std::fs::read(path).unwrap();
    bytes.truncate(max);
    bytes
}

/// Seeds for `target`: the shared Kafka corpus's files when it is present (see
/// `seglog-test-corpus`: required under CI), and the hand-made cases.
fn seeds(target: &str) -> Vec<Vec<u8>> {
    let corpus = seglog_test_corpus::root();
    let corpus_files = |exts: &[&str]| {
        corpus
            .as_deref()
            .map_or_else(Vec::new, |corpus| files(corpus, exts))
    };
    let mut seeds: Vec<Vec<u8>> = match target {
        "parse_batches" => corpus_files(&[".log"])
            .iter()
            .map(|p| head(p, 64 * 1024))
            .collect(),
        "segment_recovery" => corpus_files(&[".log"])
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut seed = vec![i as u8];
                seed.extend(head(p, 16 * 1024));
                seed
            })
            .collect(),
        "index_open" => corpus_files(&[".index", ".timeindex"])
            .iter()
            .map(|p| {
                let time = p.extension().is_some_and(|e| e == "timeindex");
                let mut seed = vec![u8::from(time)];
                seed.extend(head(p, 4096));
                seed
            })
            .collect(),
        "checkpoint_parse" => {
            let mut seeds: Vec<Vec<u8>> =
                corpus_files(&["leader-epoch-checkpoint", "partition.metadata"])
                    .iter()
                    .map(|p| head(p, 4096))
                    .collect();
            for text in [
                "",
                "0\n",
                "0\n0\n",
                "0\n1\nt-0 0 5\n",
                "0\r\n1\r\nt 0 5\r\n",
                "0\n2\na 0 1\nb 1 2\n",
                "1\n0\n",
                "0\n1\nt 0\n",
                "0\n1\nt x 5\n",
                "0\n3\nt 0 1\n",
                "0\n1\nt 0 99999999999999999999\n",
                "0\n1\nt 0 -1\n",
                "0\n1\nt 0 7\n\n\n",
                "{\"version\":0,\"brokerEpoch\":5}",
            ] {
                seeds.push(text.as_bytes().to_vec());
            }
            seeds
        }
        "producer_snapshot" => corpus_files(&[".snapshot"])
            .iter()
            .flat_map(|p| {
                let file = head(p, 8192);
                // As the file is, and with its CRC recomputed (flag bit 0).
                [0u8, 1].map(|flags| [vec![flags], file.clone()].concat())
            })
            .collect(),
        "txn_index" => {
            let mut seeds: Vec<Vec<u8>> = corpus_files(&[".txnindex"])
                .iter()
                .enumerate()
                .map(|(i, p)| [vec![i as u8 & 0x0f], head(p, 4096)].concat())
                .collect();
            // A removed file (bit 7), an empty one, and a hand-made entry of each shape Kafka
            // may read (another producer's, an inverted one, a negative one).
            seeds.push(vec![0x81]);
            seeds.push(vec![1]);
            for (producer_id, first, last) in
                [(5i64, 0i64, 3i64), (6, 4, 2), (-1, -5, 9), (7, 0, 3)]
            {
                let entry = seglog::AbortedTxn {
                    producer_id,
                    first_offset: first,
                    last_offset: last,
                    last_stable_offset: last + 1,
                };
                seeds.push([vec![1], entry.encode().to_vec()].concat());
            }
            seeds
        }
        "leader_epoch_checkpoint" => {
            let mut seeds: Vec<Vec<u8>> = corpus_files(&["leader-epoch-checkpoint"])
                .iter()
                .map(|p| [vec![0], head(p, 4096)].concat())
                .collect();
            for text in [
                "0\n3\n0 0\n2 4\n5 8\n",
                "0\r\n3\r\n0 0\r\n2 4\r\n5 8\r\n",
                "0\n2\n5 0\n2 4\n",
                "0\n2\n0 8\n2 4\n",
                "0\n2\n0 0\n0 4\n",
                "0\n1\n9 100\n",
                "0\n1\n1 -3\n",
                "0\n0\n",
                "1\n0\n",
                "",
            ] {
                for flags in [0u8, 1] {
                    seeds.push([vec![flags], text.as_bytes().to_vec()].concat());
                }
            }
            seeds
        }
        "record_readers" => corpus_files(&[".log"])
            .iter()
            .enumerate()
            .map(|(i, p)| [vec![(i as u8).wrapping_mul(37)], head(p, 8192)].concat())
            .collect(),
        "swap_recovery" => {
            let mut seeds = Vec::new();
            for at in 0..12u8 {
                for kind in 0..6u8 {
                    // An empty leftover, a copy of a live segment, and a copy followed by a
                    // batch-like tail whose CRCs are recomputed.
                    seeds.push(vec![at, kind, 0, 0]);
                    seeds.push(vec![at, kind, 0b10, at / 2]);
                    seeds.push([vec![at, kind, 0b11, at / 3], vec![0; 70]].concat());
                }
            }
            seeds
        }
        _ => Vec::new(),
    };
    let regressions = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz-regressions")
        .join(target);
    seeds.extend(
        files(&regressions, &[""])
            .iter()
            .map(|p| std::fs::read(p).unwrap()),
    );
    seeds.push(Vec::new());
    seeds
}

/// A random mutation of `seed`: bit flips, byte sets, cuts, inserts, splices with `other`.
fn mutate(seed: &[u8], other: &[u8], rng: &mut StdRng) -> Vec<u8> {
    let mut data = seed.to_vec();
    for _ in 0..rng.random_range(1..=8) {
        match rng.random_range(0..6) {
            0 if !data.is_empty() => {
                let i = rng.random_range(0..data.len());
                data[i] ^= 1 << rng.random_range(0..8);
            }
            1 if !data.is_empty() => {
                let i = rng.random_range(0..data.len());
                data[i] = [0, 0xff, 0x7f, 0x80, rng.random()][rng.random_range(0..5)];
            }
            2 if !data.is_empty() => {
                let cut = rng.random_range(0..=data.len());
                data.truncate(cut);
            }
            3 => {
                let at = rng.random_range(0..=data.len());
                let n = rng.random_range(1..32);
                let bytes: Vec<u8> = (0..n).map(|_| rng.random()).collect();
                data.splice(at..at, bytes);
            }
            4 if !other.is_empty() => {
                let at = rng.random_range(0..=data.len());
                let from = rng.random_range(0..other.len());
                let to = rng.random_range(from..=other.len().min(from + 512));
                data.splice(at..at, other[from..to].iter().copied());
            }
            _ => {
                data = (0..rng.random_range(0..256))
                    .map(|_| rng.random())
                    .collect()
            }
        }
    }
    data
}

/// Runs `run` on `data`; a panic saves the input and fails with its path.
fn run_one(target: &str, run: fn(&[u8]), data: &[u8], what: &str) {
    if let Err(panic) = catch_unwind(AssertUnwindSafe(|| run(data))) {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        let hash = seglog_reliability::Fnv::default();
        let mut hash = hash;
        hash.write(data);
        let path = std::env::temp_dir().join(format!("seglog-fuzz-{target}-{:016x}", hash.0));
        std::fs::write(&path, data).unwrap();
        panic!(
            "fuzz target {target} failed on {what} ({} bytes, saved to {}): {message}",
            data.len(),
            path.display()
        );
    }
}

fn exercise(target: &str, default_iterations: u64) {
    let (_, run) = targets::TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .unwrap_or_else(|| panic!("no fuzz target {target} in fuzz/fuzz_targets"));
    let (mut rng, seed) = seeded_rng(&format!("fuzz/{target}"));
    let seeds = seeds(target);
    if let Some(out) = std::env::var_os("SEGLOG_FUZZ_CORPUS_OUT") {
        // Seeds the cargo-fuzz corpora: SEGLOG_FUZZ_CORPUS_OUT=$PWD/fuzz/corpus.
        let dir = Path::new(&out).join(target);
        std::fs::create_dir_all(&dir).unwrap();
        for (i, data) in seeds.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{i:04}")), data).unwrap();
        }
    }
    let log_level = log_level::body(target);
    let log_iterations = iterations("SEGLOG_FUZZ_LOG_ITERATIONS", 100);
    for (i, data) in seeds.iter().enumerate() {
        run_one(target, *run, data, &format!("seed {i}"));
        if let Some(body) = log_level {
            run_one(target, body, data, &format!("seed {i}, log level"));
        }
    }
    for i in 0..iterations("SEGLOG_FUZZ_ITERATIONS", default_iterations) {
        let a = &seeds[rng.random_range(0..seeds.len())];
        let b = &seeds[rng.random_range(0..seeds.len())];
        let data = mutate(a, b, &mut rng);
        let what = format!("random input {i} of seed {seed}");
        run_one(target, *run, &data, &what);
        if let Some(body) = log_level.filter(|_| i < log_iterations) {
            run_one(target, body, &data, &format!("{what}, log level"));
        }
    }
}

#[test]
fn every_fuzz_target_has_a_harness_here() {
    let names: Vec<&str> = targets::TARGETS.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        [
            "checkpoint_parse",
            "index_open",
            "leader_epoch_checkpoint",
            "parse_batches",
            "producer_snapshot",
            "record_readers",
            "segment_recovery",
            "swap_recovery",
            "txn_index",
        ],
        "a new fuzz target needs seeds and a #[test] in tests/it/fuzz.rs"
    );
}

#[test]
fn fuzz_parse_batches() {
    exercise("parse_batches", 2000);
}

#[test]
fn fuzz_segment_recovery() {
    exercise("segment_recovery", 400);
}

#[test]
fn fuzz_index_open() {
    exercise("index_open", 400);
}

#[test]
fn fuzz_checkpoint_parse() {
    exercise("checkpoint_parse", 300);
}

#[test]
fn fuzz_producer_snapshot() {
    exercise("producer_snapshot", 2000);
}

#[test]
fn fuzz_txn_index() {
    exercise("txn_index", 2000);
}

#[test]
fn fuzz_leader_epoch_checkpoint() {
    exercise("leader_epoch_checkpoint", 2000);
}

#[test]
fn fuzz_record_readers() {
    exercise("record_readers", 2000);
}

#[test]
fn fuzz_swap_recovery() {
    exercise("swap_recovery", 2000);
}
