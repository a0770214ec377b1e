//! `verify` catches damage with file and position; `recover` repairs it.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{assert_unchanged, copy_dir, corpus, seglog};

/// A corpus directory with 2 segments and a 14-entry broker index on the first.
fn damaged_copy() -> Option<(tempfile::TempDir, PathBuf)> {
    Some(copy_dir(
        &corpus()?.join("NikhilDighe9975-kafka_setup/__consumer_offsets-12"),
    ))
}

fn verify_json(dir: &Path) -> (i32, Value) {
    let run = assert_unchanged(dir, || {
        seglog(["verify".as_ref(), dir.as_os_str(), "--json".as_ref()])
    });
    let report = run.json_lines().remove(0);
    (run.code, report)
}

fn problem_kinds(report: &Value) -> Vec<String> {
    report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["kind"].as_str().unwrap().to_owned())
        .collect()
}

fn edit(path: &Path, f: impl FnOnce(&mut Vec<u8>)) {
    let mut bytes = std::fs::read(path).unwrap();
    f(&mut bytes);
    std::fs::write(path, bytes).unwrap();
}

const LOG0: &str = "00000000000000000000.log";
const INDEX0: &str = "00000000000000000000.index";

#[test]
fn a_clean_copy_verifies() {
    let Some((_tmp, dir)) = damaged_copy() else {
        return;
    };
    let (code, report) = verify_json(&dir);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["ok"], true);
}

#[test]
fn a_flipped_byte_is_a_crc_mismatch_at_its_batch() {
    let Some((_tmp, dir)) = damaged_copy() else {
        return;
    };
    edit(&dir.join(LOG0), |b| b[5000] ^= 0x40);
    let (code, report) = verify_json(&dir);
    assert_eq!(code, 1);
    assert_eq!(problem_kinds(&report), ["crc_mismatch"]);
    let problem = &report["problems"][0];
    assert!(problem["file"].as_str().unwrap().ends_with(LOG0));
    assert_eq!(
        problem["position"], 4830,
        "the batch holding byte 5000 starts at 4830"
    );

    let text = seglog(["verify".as_ref(), dir.as_os_str()]);
    assert_eq!(text.code, 1);
    assert!(
        text.stdout
            .contains("00000000000000000000.log at byte 4830: ")
            && text.stdout.contains("checksum"),
        "{}",
        text.stdout
    );
}

#[test]
fn a_zero_padded_index_is_reported() {
    let Some((_tmp, dir)) = damaged_copy() else {
        return;
    };
    edit(&dir.join(INDEX0), |b| b.extend_from_slice(&[0; 8 * 100]));
    let (code, report) = verify_json(&dir);
    assert_eq!(code, 1);
    assert_eq!(problem_kinds(&report), ["index_zero_padding"]);
    assert_eq!(report["problems"][0]["position"], 14 * 8);
}

#[test]
fn a_wrong_index_entry_is_reported() {
    let Some((_tmp, dir)) = damaged_copy() else {
        return;
    };
    // entry 3: relative offset + 1 (no longer the last offset of the batch at its position)
    edit(&dir.join(INDEX0), |b| b[3 * 8 + 3] += 1);
    // entry 5: position + 1 (no longer a batch start)
    edit(&dir.join(INDEX0), |b| b[5 * 8 + 7] += 1);
    let (code, report) = verify_json(&dir);
    assert_eq!(code, 1);
    assert_eq!(problem_kinds(&report), ["index_offset", "index_position"]);
    assert_eq!(report["problems"][0]["position"], 24);
    assert_eq!(report["problems"][1]["position"], 40);
}

#[test]
fn torn_tails_leftovers_and_orphans_are_reported() {
    let Some((_tmp, dir)) = damaged_copy() else {
        return;
    };
    let active = dir.join("00000000000000000862.log");
    edit(&active, |b| b.truncate(b.len() - 10));
    std::fs::write(dir.join("00000000000000000000.log.deleted"), b"").unwrap();
    std::fs::write(dir.join("00000000000000000500.timeindex"), b"").unwrap();
    let (code, report) = verify_json(&dir);
    assert_eq!(code, 1);
    let kinds = problem_kinds(&report);
    for kind in ["torn_tail", "leftover", "orphan_index"] {
        assert!(kinds.contains(&kind.to_owned()), "{kinds:?}");
    }
}
