//! Fuzzes the `leader-epoch-checkpoint` parser (Kafka's `LeaderEpochCheckpointFile`) on the
//! input bytes in memory, and the cache a load makes of what parses (Kafka's
//! `LeaderEpochFileCache`): built from the entries, brought up to date with the batches of a
//! log whose batches carry leader epochs 0, 2 and 5 (offsets 0-3, 4-7, 8-11), then truncated
//! to the log's bounds, as `Log::open` does.
//!
//! Properties, besides "never panics":
//! - what parses has non-negative, strictly increasing epochs and start offsets, is written
//!   back by the formatter (with `\n` or `\r\n` line ends) and parses back equal; a cache built
//!   from it holds exactly those entries;
//! - a refusal names a line of the text (1-based, at most one past the last line);
//! - the loaded cache is what a broker may rely on: epochs and start offsets strictly
//!   increasing, every start offset but the first inside the log; `epoch_for_offset` and
//!   `end_offset_for` answer as a linear scan of the entries says Kafka's rules answer;
//! - a checkpoint that does not parse is rebuilt from the batches: the epoch of every
//!   record's offset is then its batch's own epoch.
//!
//! The log-level property (the log opens whatever the file holds, cleanly and after a crash,
//! and serves every record) stays in the stable harness (`reliability/tests/it/fuzz.rs`,
//! `log_level::leader_epoch_checkpoint`): it needs a log.
//!
//! Input: byte 0 bit 0 learns every batch as an unclean open's recovery does (else only a
//! checkpoint that does not parse makes the load scan the batches); the rest is the file.

#![no_main]

use libfuzzer_sys::fuzz_target;
use seglog::{EpochEndOffset, EpochEntry, LeaderEpochCache, UNDEFINED_EPOCH};

/// The log's batches: (leader epoch, base offset), one record each.
const BATCHES: [(i32, i64); 12] = [
    (0, 0),
    (0, 1),
    (0, 2),
    (0, 3),
    (2, 4),
    (2, 5),
    (2, 6),
    (2, 7),
    (5, 8),
    (5, 9),
    (5, 10),
    (5, 11),
];
const LOG_END: i64 = 12;

fn render(entries: &[EpochEntry], eol: &str) -> String {
    let mut out = format!("0{eol}{}{eol}", entries.len());
    for e in entries {
        out.push_str(&format!("{} {}{eol}", e.epoch, e.start_offset));
    }
    out
}

/// Kafka's `endOffsetFor` over the entries, by a linear scan.
fn end_offset_oracle(entries: &[EpochEntry], requested: i32, log_end: i64) -> EpochEndOffset {
    if requested == UNDEFINED_EPOCH {
        return EpochEndOffset::UNDEFINED;
    }
    if entries.last().map(|e| e.epoch) == Some(requested) {
        return EpochEndOffset {
            epoch: requested,
            end_offset: log_end,
        };
    }
    let Some(higher) = entries.iter().find(|e| e.epoch > requested) else {
        return EpochEndOffset::UNDEFINED;
    };
    let floor = entries.iter().rev().find(|e| e.epoch <= requested);
    EpochEndOffset {
        epoch: floor.map_or(requested, |e| e.epoch),
        end_offset: higher.start_offset,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, file)) = data.split_first() else {
        return;
    };
    let parsed = match std::str::from_utf8(file) {
        Ok(text) => match seglog::parse_leader_epoch_checkpoint(text) {
            Ok(entries) => Some(entries),
            Err((line, _kind)) => {
                let lines = text.split('\n').count() as u64;
                assert!(line >= 1 && line <= lines + 1, "line {line} of {lines}");
                None
            }
        },
        Err(_) => None,
    };
    if let Some(entries) = &parsed {
        for e in entries {
            assert!(
                e.epoch >= 0 && e.start_offset >= 0,
                "a negative entry parsed: {e:?}"
            );
        }
        for pair in entries.windows(2) {
            assert!(
                pair[0].epoch < pair[1].epoch && pair[0].start_offset < pair[1].start_offset,
                "entries that do not increase parsed: {pair:?}"
            );
        }
        for eol in ["\n", "\r\n"] {
            assert_eq!(
                seglog::parse_leader_epoch_checkpoint(&render(entries, eol)).as_ref(),
                Ok(entries),
                "parsed entries do not read back"
            );
        }
        let cache = LeaderEpochCache::from_entries(entries.iter().copied())
            .expect("parsed entries are valid");
        assert_eq!(
            &cache.entries(),
            entries,
            "the cache dropped parsed entries"
        );
    }

    // The load: the checkpoint's cache (or an empty one to rebuild), the batches learnt,
    // truncated to [log start, log end].
    let rebuild = parsed.is_none();
    let mut cache = LeaderEpochCache::from_entries(parsed.iter().flatten().copied())
        .expect("parsed entries are valid");
    if rebuild || flags & 1 == 1 {
        for (epoch, base_offset) in BATCHES {
            cache.learn_from_recovery(epoch, base_offset);
        }
    }
    cache.truncate_from_end(LOG_END);
    cache.truncate_from_start(0);
    let entries = cache.entries();
    for pair in entries.windows(2) {
        assert!(
            pair[0].epoch < pair[1].epoch && pair[0].start_offset < pair[1].start_offset,
            "the cache does not increase: {entries:?}"
        );
    }
    for (i, e) in entries.iter().enumerate() {
        assert!(
            (0..LOG_END).contains(&e.start_offset) || i == 0,
            "entry {e:?} outside the log [0, {LOG_END}): {entries:?}"
        );
    }
    for offset in [-1, 0, 3, 4, 7, 8, 11, 12, 100] {
        let oracle = entries
            .iter()
            .rev()
            .find(|e| e.start_offset <= offset)
            .map(|e| e.epoch);
        assert_eq!(
            cache.epoch_for_offset(offset),
            oracle,
            "epoch_for_offset({offset})"
        );
    }
    let mut requested: Vec<i32> = vec![UNDEFINED_EPOCH, 0, 1, 2, 3, 5, 6, i32::MAX];
    requested.extend(entries.iter().map(|e| e.epoch));
    for epoch in requested {
        assert_eq!(
            cache.end_offset_for(epoch, LOG_END),
            end_offset_oracle(&entries, epoch, LOG_END),
            "end_offset_for({epoch}) over {entries:?}"
        );
    }
    if rebuild {
        for (epoch, base_offset) in BATCHES {
            assert_eq!(
                cache.epoch_for_offset(base_offset),
                Some(epoch),
                "offset {base_offset} of epoch {epoch}: the rebuilt cache says otherwise ({entries:?})"
            );
        }
    }
});
