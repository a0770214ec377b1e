//! The bench's `floor lookup 1M` workload (`benches/src/workloads/index.rs`) in one small
//! process, for `perf record` and `valgrind --tool=callgrind`: 1M entries (relative offsets 37
//! apart, positions 2,000 apart) and 1M uniformly random targets in `0..=last + 37`, one
//! untimed pass first, as the bench does.
//!
//! `cargo run -p seglog-index-core --release --example floor_profile -- <modes> [rounds]`,
//! `modes` a comma-separated list of
//! * `vec`: `partition_point` on a `Vec<(u32, u32)>` (the bench's ceiling);
//! * `bytes`: `partition_point` on the `.index` bytes in a `Vec<u8>` (its reference row);
//! * `file`: `OffsetIndex::lookup` on a mapped `.index` written by appends (the seglog row);
//! * `memory`: `OffsetIndex::lookup` on an in-memory index.
//!
//! With several modes, each round runs them in turn over chunks of 50,000 targets (so that a
//! change in the machine's load hits all of them alike) and reports each one's time against the
//! first. Instructions per lookup: the difference of callgrind's totals for 3 rounds and 1
//! round of one mode, divided by 2M.

use std::hint::black_box;
use std::time::Instant;

use seglog_index_core::OffsetIndex;

const ENTRIES: u32 = 1_000_000;
const LOOKUPS: usize = 1_000_000;
const OFFSET_STRIDE: u32 = 37;
const POSITION_STRIDE: u32 = 2_000;
const CHUNK: usize = 50_000;

/// Uniform targets in `0..=last + OFFSET_STRIDE` (xorshift: no RNG dependency).
fn targets() -> Vec<u32> {
    let bound = u64::from((ENTRIES - 1) * OFFSET_STRIDE + OFFSET_STRIDE + 1);
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    (0..LOOKUPS)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            u32::try_from(x % bound).unwrap_or(0)
        })
        .collect()
}

struct Data {
    entries: Vec<(u32, u32)>,
    bytes: Vec<u8>,
    file: OffsetIndex,
    memory: OffsetIndex,
}

impl Data {
    fn run(&self, mode: &str, targets: &[u32]) -> Result<u64, String> {
        let mut sum = 0u64;
        match mode {
            "vec" => {
                for &target in targets {
                    let slot = self
                        .entries
                        .partition_point(|&(offset, _)| offset <= target);
                    sum = sum.wrapping_add(u64::from(self.entries[slot.saturating_sub(1)].1));
                }
            }
            "bytes" => {
                let raw = self.bytes.as_chunks::<8>().0;
                let offset = |e: &[u8; 8]| u32::from_be_bytes([e[0], e[1], e[2], e[3]]);
                for &target in targets {
                    let slot = raw.partition_point(|e| offset(e) <= target);
                    let e = raw[slot.saturating_sub(1)];
                    sum = sum.wrapping_add(u64::from(u32::from_be_bytes([e[4], e[5], e[6], e[7]])));
                }
            }
            "file" | "memory" => {
                let index = if mode == "file" {
                    &self.file
                } else {
                    &self.memory
                };
                for &target in targets {
                    sum = sum.wrapping_add(u64::from(index.lookup(i64::from(target)).position));
                }
            }
            _ => return Err(format!("unknown mode {mode}")),
        }
        Ok(black_box(sum))
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let modes = args.next().unwrap_or_else(|| "file".to_owned());
    let modes: Vec<&str> = modes.split(',').collect();
    let rounds: usize = args.next().map_or(Ok(5), |r| r.parse())?;
    let dir = tempfile::tempdir()?;
    let entries: Vec<(u32, u32)> = (0..ENTRIES)
        .map(|slot| (slot * OFFSET_STRIDE, slot * POSITION_STRIDE))
        .collect();
    let file = OffsetIndex::open(
        dir.path().join("00000000000000000000.index"),
        0,
        ENTRIES * 8,
    )?;
    let memory = OffsetIndex::in_memory("mem.index", 0, ENTRIES * 8);
    for &(offset, position) in &entries {
        if modes.contains(&"file") {
            file.append(i64::from(offset), position)?;
        }
        if modes.contains(&"memory") {
            memory.append(i64::from(offset), position)?;
        }
    }
    let bytes = entries
        .iter()
        .flat_map(|&(o, p)| [o.to_be_bytes(), p.to_be_bytes()].concat())
        .collect();
    let data = Data {
        entries,
        bytes,
        file,
        memory,
    };
    let targets = targets();
    for mode in &modes {
        data.run(mode, &targets)?;
    }
    let mut nanos = vec![0u128; modes.len()];
    for _ in 0..rounds {
        let chunks: Vec<&[u32]> = if modes.len() == 1 {
            vec![&targets]
        } else {
            targets.chunks(CHUNK).collect()
        };
        for chunk in chunks {
            for (mode, total) in modes.iter().zip(&mut nanos) {
                let start = Instant::now();
                data.run(mode, chunk)?;
                *total += start.elapsed().as_nanos();
            }
        }
    }
    for (mode, total) in modes.iter().zip(&nanos) {
        let per = *total as f64 / (rounds * LOOKUPS) as f64;
        let ratio = *total as f64 / nanos[0].max(1) as f64;
        println!("{mode:>7}: {per:7.1} ns/lookup, {ratio:.3}x the first");
    }
    Ok(())
}
