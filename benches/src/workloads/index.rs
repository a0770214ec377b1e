//! Offset-index floor lookups on 1M entries, beside `partition_point` on a `Vec` holding the
//! same entries.

use rand::{Rng, SeedableRng};

use crate::Result;
use crate::ceiling;
use crate::harness::{Contender, Role, Trial, WorkloadResult, measure};
use crate::seglog_contender;
use crate::workloads::{Context, labels, names};

/// Relative offsets between consecutive index entries (a sparse index: about one entry per
/// `index.interval.bytes` of 100 B records).
pub const OFFSET_STRIDE: u32 = 37;

/// Bytes between consecutive entries' positions (1M entries stay below `i32::MAX`, as a
/// Kafka position must).
pub const POSITION_STRIDE: u32 = 2_000;

/// `floor lookup 1M`.
///
/// # Errors
///
/// The first failing trial.
pub fn run(context: &mut Context) -> Result<Vec<WorkloadResult>> {
    let entries = entries(context.plan.floor_entries);
    let last = entries.last().map_or(0, |entry| entry.0);
    let mut rng = rand::rngs::StdRng::seed_from_u64(13);
    let targets: Vec<u32> = (0..context.plan.floor_lookups)
        .map(|_| rng.random_range(0..=last + OFFSET_STRIDE))
        .collect();
    let about = format!(
        "{} floor lookups (last entry with offset <= target) at uniform random targets in an \
         offset index of {} entries",
        targets.len(),
        entries.len()
    );
    let root = context.scratch.dir("floor")?;
    let index_path = root.join("00000000000000000000.index");
    let mut seglog_index = seglog_contender::FloorLookup::new(&entries, &index_path, &targets)?;
    // Written through the map: `read` sees the same page-cache pages, no flush needed.
    let mut partition_point = ceiling::FloorLookup::new(entries, &targets);
    let mut index_bytes = ceiling::FloorLookupIndexBytes::new(&index_path, &targets)?;
    // One untimed pass each, so that no round pays for first touches of the entries (page
    // tables for the mapped index, the first reads of the Vec).
    partition_point.run()?;
    index_bytes.run()?;
    seglog_index.run()?;
    let mut contenders = vec![
        Contender::new(
            Role::Ceiling,
            "ceiling (Vec::partition_point)",
            partition_point,
        ),
        Contender::new(Role::Seglog, "seglog (OffsetIndex::lookup)", seglog_index),
        Contender::new(Role::Reference, labels::FLOOR_BOUND, index_bytes),
    ];
    if let Some(kafka) = context.kafka.floor_lookup(&index_path, &targets)? {
        contenders.push(Contender::new(
            Role::Kafka,
            crate::kafka_contender::INDEX_LABEL,
            kafka,
        ));
    }
    Ok(vec![measure(
        names::FLOOR,
        &about,
        context.plan.rounds,
        contenders,
    )?])
}

/// `count` entries `(relative_offset, position)`, strictly increasing in both.
pub fn entries(count: u32) -> Vec<(u32, u32)> {
    (0..count)
        .map(|slot| (slot * OFFSET_STRIDE, slot * POSITION_STRIDE))
        .collect()
}
