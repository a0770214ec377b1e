//! Fuzzes `leader-epoch-checkpoint` (Kafka's `LeaderEpochCheckpointFile`): arbitrary bytes
//! parsed directly, then installed as the checkpoint of a small closed log whose batches carry
//! leader epochs 0, 2 and 5, which is reopened, cleanly and after a crash.
//!
//! Properties, besides "never panics":
//! - what parses is written back by the formatter and parses back equal;
//! - the log opens whatever the file holds and serves every record it had;
//! - the reopened cache is what a broker may rely on: epochs and start offsets strictly
//!   increasing, every start offset but the first inside the log;
//! - a checkpoint that does not parse is rebuilt from the batches: the epoch of every
//!   record's offset is then its batch's own epoch.
//!
//! Input: byte 0 bit 0 removes the clean-shutdown marker (an unclean open); the rest is the
//! file.

#![no_main]

use libfuzzer_sys::fuzz_target;
use seglog::{
    BatchBuilder, CLEAN_SHUTDOWN_FILE, Durability, Isolation, LEADER_EPOCH_CHECKPOINT, Log,
    LogConfig,
};

const T0: i64 = 1_700_000_000_000;
const EPOCHS: [i32; 3] = [0, 2, 5];

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 300,
        segment_index_bytes: 4096,
        message_timestamp_after_max_ms: i64::MAX,
        message_timestamp_before_max_ms: i64::MAX,
        ..LogConfig::default()
    }
}

struct Template {
    dir: std::path::PathBuf,
    /// Every record's offset with its batch's leader epoch.
    records: Vec<(i64, i32)>,
    _tmp: tempfile::TempDir,
}

fn records(log: &Log) -> Vec<(i64, i32)> {
    log.owned_reader(0, Isolation::LogEnd)
        .until_caught_up()
        .map(|r| {
            let r = r.expect("every record reads back");
            (r.record.offset, r.batch.partition_leader_epoch)
        })
        .collect()
}

fn template() -> &'static Template {
    static TEMPLATE: std::sync::OnceLock<Template> = std::sync::OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let tmp = tempfile::tempdir().expect("a temp dir");
        let dir = tmp.path().join("t-0");
        let log = Log::open(&dir, config()).expect("open a fresh log");
        for (i, epoch) in EPOCHS.into_iter().enumerate() {
            for j in 0..4i64 {
                let mut builder = BatchBuilder::new(0);
                builder.append(T0 + j, None, Some(&[i as u8; 40]), &[]);
                let batch = builder.build().expect("build");
                log.append_as_leader(&batch, epoch, Durability::PageCache)
                    .expect("append");
            }
        }
        let records = records(&log);
        assert_eq!(
            log.leader_epochs().len(),
            EPOCHS.len(),
            "the template has its epochs"
        );
        log.close().expect("close");
        Template {
            dir,
            records,
            _tmp: tmp,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, file)) = data.split_first() else {
        return;
    };
    let parsed = std::str::from_utf8(file)
        .ok()
        .and_then(|text| seglog::parse_leader_epoch_checkpoint(text).ok());
    if let Some(entries) = &parsed {
        let mut written = String::from("0\n");
        written.push_str(&format!("{}\n", entries.len()));
        for e in entries {
            written.push_str(&format!("{} {}\n", e.epoch, e.start_offset));
        }
        assert_eq!(
            seglog::parse_leader_epoch_checkpoint(&written).as_ref(),
            Ok(entries),
            "parsed entries do not read back"
        );
    }

    let template = template();
    let tmp = tempfile::tempdir().expect("a temp dir");
    let dir = tmp.path().join("t-0");
    std::fs::create_dir(&dir).expect("mkdir");
    for entry in std::fs::read_dir(&template.dir).expect("list the template") {
        let entry = entry.expect("list the template");
        std::fs::copy(entry.path(), dir.join(entry.file_name())).expect("copy");
    }
    std::fs::write(dir.join(LEADER_EPOCH_CHECKPOINT), file).expect("write the checkpoint");
    if flags & 1 == 1 {
        std::fs::remove_file(dir.join(CLEAN_SHUTDOWN_FILE)).expect("remove the marker");
    }

    let log = Log::open(&dir, config()).expect("the log opens whatever its checkpoint holds");
    assert_eq!(records(&log), template.records, "records lost or changed");
    let epochs = log.leader_epochs();
    for pair in epochs.windows(2) {
        assert!(
            pair[0].0 < pair[1].0 && pair[0].1 < pair[1].1,
            "the cache does not increase: {epochs:?}"
        );
    }
    let (start, end) = (log.log_start_offset(), log.log_end_offset());
    for &(epoch, start_offset) in &epochs {
        assert!(
            (start..=end).contains(&start_offset) || epochs.first() == Some(&(epoch, start_offset)),
            "entry ({epoch}, {start_offset}) outside the log [{start}, {end}]: {epochs:?}"
        );
    }
    if parsed.is_some() {
        return;
    }
    let cache = log.leader_epoch_cache();
    for &(offset, epoch) in &template.records {
        assert_eq!(
            cache.epoch_for_offset(offset),
            Some(epoch),
            "offset {offset} of epoch {epoch}: the cache says otherwise ({epochs:?})"
        );
    }
});
