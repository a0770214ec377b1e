//! Damage that a command does not serve is always named, with exit 1 (issue #26 item 6):
//! `info` on a `log.dirs` root reports a partition whose only batch is corrupt as `info` on
//! the partition does (it showed it as empty, exit 0); after a non-destructive `recover` set a
//! damaged last segment aside, `read` and `verify` name the bytes they no longer serve (they
//! exited 0).

use std::path::Path;

use crate::support::seglog;

fn produce(dir: &Path, count: &str) {
    let out = seglog([
        "produce".as_ref(),
        dir.as_os_str(),
        "--count".as_ref(),
        count.as_ref(),
        "--record-bytes".as_ref(),
        "50".as_ref(),
        "--batch-records".as_ref(),
        "10".as_ref(),
        "--config".as_ref(),
        "segment.bytes=8000".as_ref(),
        "--quiet".as_ref(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

/// Flips a byte inside the first batch's CRC-covered bytes and forgets the clean shutdown.
fn damage_first_batch(log: &Path) {
    let mut bytes = std::fs::read(log).unwrap();
    bytes[30] ^= 0xff;
    std::fs::write(log, bytes).unwrap();
    let marker = log.parent().unwrap().join(".kafka_cleanshutdown");
    let _ = std::fs::remove_file(marker);
}

#[test]
fn info_on_a_root_reports_a_damaged_partition_like_info_on_the_partition() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    produce(&root.join("bad-0"), "10");
    produce(&root.join("good-0"), "10");
    let log = root.join("bad-0").join("00000000000000000000.log");
    damage_first_batch(&log);
    for dir in [root.join("bad-0"), root.clone()] {
        let out = seglog(["info".as_ref(), dir.as_os_str(), "--json".as_ref()]);
        assert_eq!(out.code, 1, "{}: {}", dir.display(), out.stderr);
        assert!(
            out.stderr.contains("00000000000000000000.log")
                && out.stderr.contains("bad-0")
                && out.stderr.contains("checksum mismatch"),
            "{}: {}",
            dir.display(),
            out.stderr
        );
    }
    // The root still lists every partition.
    let out = seglog(["info".as_ref(), root.as_os_str(), "--json".as_ref()]);
    assert_eq!(out.json_lines().len(), 2, "{}", out.stdout);
    let out = seglog(["info".as_ref(), root.join("good-0").as_os_str()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn read_and_verify_name_a_segment_recover_set_aside() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t-0");
    produce(&dir, "300");
    damage_first_batch(&dir.join("00000000000000000220.log"));
    let recover = seglog(["recover".as_ref(), dir.as_os_str()]);
    assert_eq!(recover.code, 1, "{}", recover.stdout);
    let aside = dir.join("00000000000000000220.log.damaged");
    assert!(aside.exists(), "{}", recover.stdout);
    let read = seglog(["read".as_ref(), dir.as_os_str(), "--json".as_ref()]);
    assert_eq!(read.code, 1, "{}", read.stderr);
    assert_eq!(read.json_lines().len(), 220);
    assert!(
        read.stderr.contains("00000000000000000220.log.damaged")
            && read.stderr.contains("offsets from 220")
            && read.stderr.contains("not served"),
        "{}",
        read.stderr
    );
    // Reading below it only: nothing passed it, nothing to say.
    let head = seglog([
        "read".as_ref(),
        dir.as_os_str(),
        "--max-records".as_ref(),
        "5".as_ref(),
    ]);
    assert_eq!(head.code, 0, "{}", head.stderr);
    let verify = seglog(["verify".as_ref(), dir.as_os_str(), "--json".as_ref()]);
    assert_eq!(verify.code, 1, "{}", verify.stdout);
    assert!(
        verify.stdout.contains("damaged_set_aside"),
        "{}",
        verify.stdout
    );
    // Nothing was deleted: the bytes are all still there.
    assert_eq!(std::fs::metadata(&aside).unwrap().len(), 5608);
}
