//! `recover` and `verify` agree (issue #13): whatever `recover` keeps, `verify` passes;
//! whatever `verify` flags, `recover` repairs or refuses with a reason. The cases are batches
//! whose CRC is valid but whose records do not decode, which Kafka's CRC-only recovery keeps.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::seglog;

const LOG0: &str = "00000000000000000000.log";

/// A cleanly closed log of several segments: 300 records, 10 per batch.
fn small_log(tmp: &Path, name: &str, compression: &str) -> PathBuf {
    let dir = tmp.join(name);
    let out = seglog([
        "produce".as_ref(),
        dir.as_os_str(),
        "--count".as_ref(),
        "300".as_ref(),
        "--record-bytes".as_ref(),
        "50".as_ref(),
        "--batch-records".as_ref(),
        "10".as_ref(),
        "--compression".as_ref(),
        compression.as_ref(),
        "--config".as_ref(),
        "segment.bytes=8000".as_ref(),
        "--quiet".as_ref(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    dir
}

/// The byte position of batch `n` (0-based) of a v2 `.log`.
fn batch_position(log: &[u8], n: usize) -> usize {
    let mut at = 0;
    for _ in 0..n {
        let len = u32::from_be_bytes(log[at + 8..at + 12].try_into().unwrap()) as usize;
        at += 12 + len;
    }
    at
}

/// Rewrites the batch at `at` with `edit` and recomputes its CRC-32C, so only a decode of its
/// records can tell.
fn edit_batch(path: &Path, at: usize, edit: impl FnOnce(&mut [u8])) {
    let mut log = std::fs::read(path).unwrap();
    let len = u32::from_be_bytes(log[at + 8..at + 12].try_into().unwrap()) as usize;
    let batch = &mut log[at..at + 12 + len];
    edit(batch);
    let crc = seglog_records::crc32c(&batch[21..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
    std::fs::write(path, log).unwrap();
}

fn verify_json(dir: &Path) -> (i32, Value) {
    let out = seglog(["verify".as_ref(), dir.as_os_str(), "--json".as_ref()]);
    (out.code, serde_json::from_str(&out.stdout).unwrap())
}

fn recover(dir: &Path, extra: &[&str]) -> (i32, Value, String) {
    let mut args: Vec<&std::ffi::OsStr> =
        vec!["recover".as_ref(), dir.as_os_str(), "--json".as_ref()];
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    let out = seglog(args);
    let report = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {} {}", out.stdout, out.stderr));
    (out.code, report, out.stderr)
}

fn recover_text(dir: &Path) -> (i32, String) {
    let out = seglog(["recover".as_ref(), dir.as_os_str()]);
    (out.code, out.stdout)
}

/// Checks the agreement on a log whose batch at `at` of segment 0 is valid by CRC but does
/// not decode: verify flags it, recover keeps it (flushed data) and exits 1 naming it, verify
/// still flags it, and `--truncate-damaged` cuts it, after which verify passes.
fn agree_on(dir: &Path, at: usize) {
    let (code, report) = verify_json(dir);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["problems"][0]["kind"], "invalid_records", "{report}");

    let (code, text) = recover_text(dir);
    assert_eq!(code, 1, "recover must not pass what verify flags: {text}");
    assert!(
        text.contains(&format!("damaged at byte {at}")) && text.contains("kept on disk"),
        "{text}"
    );
    let (code, report, _) = recover(dir, &[]);
    assert_eq!(code, 1);
    let segment0 = &report["segments"][0];
    assert_eq!(segment0["damaged_tail_kept"], true, "{report}");
    assert_eq!(segment0["truncated_at"], at);
    assert_eq!(segment0["truncation"], "corrupt");
    // The damage is still there, so verify still flags it.
    assert_eq!(verify_json(dir).0, 1);

    let (code, report, stderr) = recover(dir, &["--truncate-damaged"]);
    assert_eq!(code, 0, "{report} {stderr}");
    assert_eq!(report["segments"][0]["truncated_at"], at);
    let (code, report) = verify_json(dir);
    assert_eq!(code, 0, "whatever recover keeps, verify passes: {report}");
    let out = seglog(["read".as_ref(), dir.as_os_str(), "--json".as_ref()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn a_lowered_record_count_with_a_valid_crc_is_damage_to_recover_too() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = small_log(tmp.path(), "count-0", "none");
    let log0 = dir.join(LOG0);
    let at = batch_position(&std::fs::read(&log0).unwrap(), 2);
    edit_batch(&log0, at, |batch| {
        let count = i32::from_be_bytes(batch[57..61].try_into().unwrap());
        batch[57..61].copy_from_slice(&(count - 1).to_be_bytes());
    });
    // read fails at the batch (the consumer's decode).
    let out = seglog(["read".as_ref(), dir.as_os_str(), "--json".as_ref()]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    agree_on(&dir, at);
}

#[test]
fn a_gzip_batch_with_garbage_and_a_valid_crc_is_damage_to_recover_too() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = small_log(tmp.path(), "gzip-0", "gzip");
    let log0 = dir.join(LOG0);
    let at = batch_position(&std::fs::read(&log0).unwrap(), 2);
    edit_batch(&log0, at, |batch| {
        for (i, b) in batch[61..].iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37).wrapping_add(11);
        }
    });
    agree_on(&dir, at);
}

/// A recover that fails (exit 2) leaves the directory exactly as it found it: every byte of
/// every file, and the clean-shutdown marker (it used to consume the marker and rewrite the
/// indexes before it failed).
#[test]
fn a_recover_that_cannot_succeed_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = small_log(tmp.path(), "overflow-0", "none");
    // The last segment's first batch claims base offset 0, below the segment's base: its
    // offsets overflow the segment and no split can place that batch.
    let mut logs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    assert!(logs.len() >= 3);
    let last = logs.last().unwrap();
    let mut bytes = std::fs::read(last).unwrap();
    bytes[..8].copy_from_slice(&0i64.to_be_bytes());
    std::fs::write(last, bytes).unwrap();
    assert!(dir.join(".kafka_cleanshutdown").exists());

    // verify flags it; recover refuses with the reason, and changes nothing.
    assert_eq!(verify_json(&dir).0, 1);
    for extra in [&[][..], &["--truncate-damaged"][..]] {
        let out = crate::support::assert_unchanged(&dir, || {
            let mut args: Vec<&std::ffi::OsStr> = vec!["recover".as_ref(), dir.as_os_str()];
            args.extend(extra.iter().map(std::ffi::OsStr::new));
            seglog(args)
        });
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(
            out.stderr.contains("nothing was changed")
                && out.stderr.contains(&last.display().to_string()),
            "{}",
            out.stderr
        );
    }
    assert!(dir.join(".kafka_cleanshutdown").exists());
}
