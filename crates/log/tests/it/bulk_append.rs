//! Bulk appends (`Log::append_vectored`, `Log::append_as_follower_vectored`, and `Log::append`
//! of several concatenated batches) against the oracle of one `Log::append` per batch: the
//! same records, offsets and timestamps are read back, every read by timestamp finds the same
//! offset, and the `.log` files hold the same bytes.

use proptest::prelude::*;
use seglog::{Durability, ListOffsets, Log, LogConfig, TimestampType};

use crate::support::*;

fn config(log_append_time: bool) -> LogConfig {
    LogConfig {
        message_timestamp_type: if log_append_time {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        },
        ..small_config(1500)
    }
}

/// `batches` producer batches (base offset 0): batch `i` holds `sizes[i]` records.
fn producer_batches(sizes: &[usize], ts_step: i64) -> Vec<Vec<u8>> {
    let mut ts = T0;
    sizes
        .iter()
        .enumerate()
        .map(|(i, &count)| {
            let b = numbered(ts, &format!("b{i}"), count);
            ts += ts_step * count as i64;
            b
        })
        .collect()
}

/// Splits `batches` into groups of `cuts[i] % 4 + 1` consecutive batches.
fn groups<'a>(batches: &'a [Vec<u8>], cuts: &[u8]) -> Vec<&'a [Vec<u8>]> {
    let mut out = Vec::new();
    let mut rest = batches;
    let mut cut = cuts.iter().cycle();
    while !rest.is_empty() {
        let n = (usize::from(*cut.next().unwrap_or(&0)) % 4 + 1).min(rest.len());
        let (group, tail) = rest.split_at(n);
        out.push(group);
        rest = tail;
    }
    out
}

/// (offset, timestamp, value) of every record, and the offset found for each probed timestamp.
type Observed = (Vec<(i64, i64, Option<Vec<u8>>)>, Vec<Option<i64>>);

/// Everything a reader can observe of `log`.
fn observe(log: &Log, timestamps: &[i64]) -> Observed {
    let records = read_all(log, 0, seglog::Isolation::LogEnd);
    let by_time = timestamps
        .iter()
        .map(|&ts| {
            log.offset_for_timestamp(ListOffsets::Timestamp(ts))
                .unwrap()
                .map(|found| found.offset)
        })
        .collect();
    (records, by_time)
}

fn log_files(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    files.sort();
    files
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Leader: per-batch appends vs. one `append` of each group's concatenation vs. one
    /// `append_vectored` of each group's batches as separate chunks (with empty chunks mixed in).
    #[test]
    fn leader_bulk_append_reads_like_per_batch_appends(
        sizes in proptest::collection::vec(1usize..6, 1..24),
        cuts in proptest::collection::vec(any::<u8>(), 1..8),
        ts_step in 0i64..3,
        log_append_time in any::<bool>(),
    ) {
        let batches = producer_batches(&sizes, ts_step);
        let total: usize = sizes.iter().sum();
        let probes: Vec<i64> = (-1..=total as i64 * ts_step + 1).map(|d| T0 + d).collect();
        let config = config(log_append_time);
        let (dir_one, _c1, one) = fresh(config.clone());
        let (dir_cat, _c2, cat) = fresh(config.clone());
        let (dir_vec, _c3, vec) = fresh(config);
        for b in &batches {
            one.append(b).unwrap();
        }
        for group in groups(&batches, &cuts) {
            let info = cat.append(&group.concat()).unwrap();
            prop_assert_eq!(info.batch_count, group.len());
            let mut chunks: Vec<&[u8]> = vec![&[]];
            for b in group {
                chunks.push(b);
                chunks.push(&[]);
            }
            let vinfo = vec.append_vectored(&chunks, Durability::PageCache).unwrap();
            prop_assert_eq!(&vinfo, &info);
        }
        prop_assert_eq!(one.log_end_offset(), total as i64);
        let want = observe(&one, &probes);
        prop_assert_eq!(&observe(&cat, &probes), &want);
        prop_assert_eq!(&observe(&vec, &probes), &want);
        // Rolls fall between appends, so per-batch appends may roll where a group does not:
        // the segments' bytes concatenated are the same, and the same grouping gives the same
        // files.
        prop_assert_eq!(concat(log_files(dir_cat.path())), concat(log_files(dir_one.path())));
        prop_assert_eq!(log_files(dir_vec.path()), log_files(dir_cat.path()));
    }

    /// Follower: the leader's log bytes replicated per batch vs. in chunks of several batches,
    /// the last chunk of each call ending in a partial batch that is dropped and sent again.
    #[test]
    fn follower_bulk_append_reads_like_per_batch_appends(
        sizes in proptest::collection::vec(1usize..6, 1..24),
        cuts in proptest::collection::vec(any::<u8>(), 1..8),
    ) {
        let produced = producer_batches(&sizes, 1);
        let (_leader_dir, _c0, leader) = fresh(config(false));
        for b in &produced {
            leader.append(b).unwrap();
        }
        // The leader's batches with their assigned offsets, as a fetch returns them.
        let fetched: Vec<Vec<u8>> = {
            let bytes: Vec<u8> = read_log_bytes(&leader);
            seglog::Batches::new(&bytes, 0)
                .map(|b| b.unwrap().as_bytes().to_vec())
                .collect()
        };
        prop_assert_eq!(fetched.len(), produced.len());
        let (dir_one, _c1, one) = fresh(config(false));
        let (dir_vec, _c2, vec) = fresh(config(false));
        for b in &fetched {
            one.append_as_follower(b).unwrap();
        }
        for group in groups(&fetched, &cuts) {
            let mut chunks: Vec<&[u8]> = group.iter().map(Vec::as_slice).collect();
            let partial = &group[0][..group[0].len() / 2];
            chunks.push(partial);
            let info = vec.append_as_follower_vectored(&chunks, Durability::PageCache).unwrap();
            prop_assert_eq!(info.batch_count, group.len());
            prop_assert_eq!(info.size_bytes, group.iter().map(|b| b.len() as u64).sum::<u64>());
        }
        let probes: Vec<i64> = (-1..=sizes.iter().sum::<usize>() as i64 + 1).map(|d| T0 + d).collect();
        prop_assert_eq!(observe(&vec, &probes), observe(&one, &probes));
        prop_assert_eq!(concat(log_files(dir_vec.path())), concat(log_files(dir_one.path())));
    }
}

fn concat(files: Vec<(String, Vec<u8>)>) -> Vec<u8> {
    files.into_iter().flat_map(|(_, bytes)| bytes).collect()
}

/// Every byte of `log`'s records, in offset order (all segments).
fn read_log_bytes(log: &Log) -> Vec<u8> {
    let mut out = Vec::new();
    let mut next = 0;
    while next < log.log_end_offset() {
        let data = log
            .read(next, 1 << 20, seglog::Isolation::LogEnd, true)
            .unwrap();
        let bytes = data.slice.read_to_vec().unwrap();
        for batch in seglog::Batches::new(&bytes, 0) {
            let batch = batch.unwrap();
            next = batch.header().last_offset + 1;
            out.extend_from_slice(batch.as_bytes());
        }
    }
    out
}

#[test]
fn a_chunk_ending_inside_a_batch_writes_nothing() {
    let (_dir, _clock, log) = fresh(config(false));
    let one = numbered(T0, "a", 3);
    let two = numbered(T0, "b", 2);
    let e = log
        .append_vectored(&[&one[..10], &one[10..], &two], Durability::PageCache)
        .unwrap_err();
    assert!(
        matches!(
            e,
            seglog::Error::InvalidAppend {
                kind: seglog::AppendErrorKind::TrailingBytes { trailing: 10 }
            }
        ),
        "{e}"
    );
    assert_eq!(log.log_end_offset(), 0);
    let e = log
        .append_vectored(&[&[], &[]], Durability::PageCache)
        .unwrap_err();
    assert!(
        matches!(
            e,
            seglog::Error::InvalidAppend {
                kind: seglog::AppendErrorKind::Empty { size: 0 }
            }
        ),
        "{e}"
    );
    let info = log
        .append_vectored(&[&one, &two], Durability::Fsync)
        .unwrap();
    assert_eq!(
        (info.first_offset, info.last_offset, info.batch_count),
        (0, 4, 2)
    );
    assert!(log.durable_end_offset() >= 5);
}
