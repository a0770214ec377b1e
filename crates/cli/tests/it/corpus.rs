//! Every broker-written directory of the corpus, read in place: nothing may change on disk,
//! and what we report must match the independent walker.

use crate::support::{assert_unchanged, corpus, corpus_partitions, seglog};
use crate::walker::walk_dir;

#[test]
fn verify_accepts_every_corpus_directory_without_writing() {
    for dir in corpus_partitions() {
        let run = assert_unchanged(&dir, || {
            seglog(["verify".as_ref(), dir.as_os_str(), "--json".as_ref()])
        });
        assert_eq!(
            run.code,
            0,
            "{}: {}{}",
            dir.display(),
            run.stdout,
            run.stderr
        );
        let report = &run.json_lines()[0];
        let walk = walk_dir(&dir);
        assert_eq!(report["ok"], true);
        assert_eq!(report["batches"], walk.batches, "{}", dir.display());
        assert_eq!(
            report["records"],
            walk.data_records + walk.control_records,
            "{}",
            dir.display()
        );
    }
}

#[test]
fn dump_lists_every_batch_of_every_corpus_directory_without_writing() {
    for dir in corpus_partitions() {
        let run = assert_unchanged(&dir, || {
            seglog(["dump".as_ref(), dir.as_os_str(), "--json".as_ref()])
        });
        assert_eq!(run.code, 0, "{}: {}", dir.display(), run.stderr);
        let lines = run.json_lines();
        // KRaft snapshot `.checkpoint` files hold batches too and are dumped as well.
        let from_logs =
            |l: &&serde_json::Value| l["file"].as_str().is_some_and(|f| f.ends_with(".log"));
        let batches = lines
            .iter()
            .filter(|l| l.get("last_offset").is_some())
            .filter(from_logs)
            .count() as u64;
        let walk = walk_dir(&dir);
        assert_eq!(batches, walk.batches, "{}", dir.display());
        assert!(
            lines
                .iter()
                .filter(|l| l.get("crc_valid").is_some())
                .all(|l| l["crc_valid"] == true)
        );
    }
}

#[test]
fn dump_records_of_a_log_file_match_the_walker() {
    let Some(dir) = corpus().map(|c| c.join("seanorth-kafka-server/some-topic-0")) else {
        return;
    };
    let log = dir.join("00000000000000000000.log");
    let run = seglog([
        "dump".as_ref(),
        log.as_os_str(),
        "--records".as_ref(),
        "--json".as_ref(),
    ]);
    let lines = run.json_lines();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let records: Vec<_> = lines
        .iter()
        .flat_map(|b| b["records"].as_array().unwrap().clone())
        .collect();
    assert_eq!(records.len(), 9);
    assert!(lines.iter().all(|b| b["codec"] == "snappy"));
    // snappy batches with headers: the walker cannot decode them, so check the header field
    assert!(
        records
            .iter()
            .all(|r| r["headers"].as_array().is_some_and(|h| !h.is_empty()))
    );
}

#[test]
fn dump_text_shows_control_markers_and_index_entries() {
    let Some(dir) = corpus().map(|c| c.join("christseng89-RealTime_Analysis/__cluster_metadata-0"))
    else {
        return;
    };
    let out = seglog(["dump".as_ref(), dir.as_os_str(), "--records".as_ref()]).ok();
    assert_eq!(out.matches("control: LEADER_CHANGE").count(), 5, "{out}");
    assert!(out.contains("isControl: true"));

    let Some(index) =
        corpus().map(|c| c.join("William0423-kafka/debug_topic-0/00000000000000000000.timeindex"))
    else {
        return;
    };
    let out = seglog(["dump".as_ref(), index.as_os_str()]).ok();
    assert_eq!(
        out.lines().filter(|l| l.starts_with("timestamp: ")).count(),
        2,
        "{out}"
    );
}
