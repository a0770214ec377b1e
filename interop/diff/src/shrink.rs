//! Delta debugging: remove steps while the same divergence (the same field) persists.

use crate::history::Step;
use crate::run::{Coverage, Divergence, Runner, Source};

/// At most this many replays per shrink (each is a whole history on both sides).
const MAX_REPLAYS: usize = 400;

/// Shrinks `steps` (a history that diverged as `found`) to a shorter one that still diverges
/// at the same field. Returns the shrunk steps and their divergence.
///
/// # Errors
/// Harness failures.
pub fn shrink(
    runner: &mut Runner,
    steps: Vec<Step>,
    found: Divergence,
) -> Result<(Vec<Step>, Divergence), String> {
    let target = field_class(&found.difference.path);
    let mut best = (steps, found);
    let mut replays = 0;
    let mut scratch = Coverage::default();
    let mut still_fails =
        |runner: &mut Runner, candidate: &[Step]| -> Result<Option<Divergence>, String> {
            let (_, d) = runner.run(Source::Replay(candidate), &mut scratch)?;
            Ok(d.filter(|d| field_class(&d.difference.path) == target))
        };
    // ddmin: remove chunks of halving size, then single steps, until nothing can go.
    let mut chunk = best.0.len().div_ceil(2).max(1);
    loop {
        let mut removed_any = false;
        let mut start = 0;
        while start < best.0.len() && replays < MAX_REPLAYS {
            let end = (start + chunk).min(best.0.len());
            let candidate: Vec<Step> = best.0[..start]
                .iter()
                .chain(&best.0[end..])
                .cloned()
                .collect();
            replays += 1;
            if !candidate.is_empty()
                && let Some(d) = still_fails(runner, &candidate)?
            {
                // Only the steps up to the divergence matter.
                let mut c = candidate;
                c.truncate(d.step.max(1));
                best = (c, d);
                removed_any = true;
            } else {
                start = end;
            }
        }
        if replays >= MAX_REPLAYS || (chunk == 1 && !removed_any) {
            break;
        }
        if !removed_any {
            chunk = (chunk / 2).max(1);
        }
    }
    Ok(best)
}

/// The field a divergence is in, without array indexes (a shrunk history may move a
/// producer to another index or a batch to another position).
fn field_class(path: &str) -> String {
    let mut out = String::new();
    let mut skipping = false;
    for c in path.chars() {
        match c {
            '[' => skipping = true,
            ']' => skipping = false,
            _ if !skipping => out.push(c),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::field_class;

    #[test]
    fn field_classes_ignore_indexes() {
        assert_eq!(
            field_class("state.producers[2].last_sequence"),
            "state.producers.last_sequence"
        );
        assert_eq!(
            field_class("read_committed.batches"),
            "read_committed.batches"
        );
    }
}
