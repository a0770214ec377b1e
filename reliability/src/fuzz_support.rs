//! What the cargo-fuzz targets (`fuzz/fuzz_targets/`) and their stable harness
//! (`tests/it/fuzz.rs`) share: the checksum fix-ups that let a fuzzer reach past a CRC, and
//! the copy of a template log built once per process.
//!
//! The fuzz package depends on this crate for these only; the harness builds the targets'
//! bodies against the same functions, so a target behaves the same under libFuzzer and under
//! `cargo test`.

use std::io;
use std::path::{Path, PathBuf};

/// Recomputes the CRC-32C of every whole v2 batch in `log`, walking the batches' length
/// fields from the start (v0/v1 batches are stepped over, their CRC untouched); stops at the
/// first length that is negative, below a v2 header's or past the end.
pub fn fix_v2_crcs(log: &mut [u8]) {
    // A v2 batch: baseOffset (8), batchLength (4), partitionLeaderEpoch (4), magic (1),
    // crc (4), then the CRC-covered bytes; the header is 61 bytes.
    const HEADER: usize = seglog_records::RECORD_BATCH_OVERHEAD;
    let mut position = 0usize;
    while position + HEADER <= log.len() {
        let length = i32::from_be_bytes([
            log[position + 8],
            log[position + 9],
            log[position + 10],
            log[position + 11],
        ]);
        let Ok(length) = usize::try_from(length) else {
            return;
        };
        let end = position + 12 + length;
        if length < HEADER - 12 || end > log.len() {
            return;
        }
        if log[position + 16] == 2 {
            let crc = seglog_records::crc32c(&log[position + 21..end]);
            log[position + 17..position + 21].copy_from_slice(&crc.to_be_bytes());
        }
        position = end;
    }
}

/// Recomputes the CRC of a producer-state snapshot (`.snapshot`: the CRC-32C of every byte
/// from byte 6, stored at bytes 2-5); a file shorter than its 10-byte header is left alone.
pub fn fix_snapshot_crc(file: &mut [u8]) {
    if file.len() >= 10 {
        let crc = seglog_records::crc32c(&file[6..]);
        file[2..6].copy_from_slice(&crc.to_be_bytes());
    }
}

/// A closed log built once per process, copied for each input so that a target never pays
/// for building (and fsyncing) one per execution.
#[derive(Debug)]
pub struct TemplateLog {
    dir: PathBuf,
    _tmp: tempfile::TempDir,
}

impl TemplateLog {
    /// A template in a fresh temp directory: `build` fills `<tmp>/t-0` (it must leave the
    /// log closed).
    ///
    /// # Errors
    /// The temp directory's creation error, or `build`'s.
    pub fn build(build: impl FnOnce(&Path) -> io::Result<()>) -> io::Result<Self> {
        let tmp = tempfile::tempdir()?;
        let dir = tmp.path().join("t-0");
        build(&dir)?;
        Ok(Self { dir, _tmp: tmp })
    }

    /// The template's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A fresh copy of the template's files (`<new tmp>/t-0`), removed when the returned
    /// [`tempfile::TempDir`] drops.
    ///
    /// # Errors
    /// I/O errors of the copy.
    pub fn copy(&self) -> io::Result<(tempfile::TempDir, PathBuf)> {
        let tmp = tempfile::tempdir()?;
        let dir = tmp.path().join("t-0");
        copy_files(&self.dir, &dir)?;
        Ok((tmp, dir))
    }
}

/// Copies the regular files of `from` into `to` (created if missing; subdirectories and the
/// directory lock file are skipped).
///
/// # Errors
/// I/O errors of the listing, the creation or a copy.
pub fn copy_files(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        if entry.file_type()?.is_file() && entry.file_name() != seglog::LOCK_FILE {
            std::fs::copy(entry.path(), to.join(entry.file_name()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fix_v2_crcs_makes_a_damaged_batch_valid_again() {
        let mut builder = seglog_records::BatchBuilder::new(0);
        builder.append(1, Some(b"k"), Some(b"v"), &[]);
        let batch = builder.build().unwrap();
        let mut log = [&batch[..], &batch[..]].concat();
        let len = log.len();
        log[len - 1] ^= 0xff;
        let valid = |log: &[u8]| {
            seglog_records::Batches::new(log, 0)
                .validated()
                .all(|b| b.is_ok())
        };
        assert!(!valid(&log));
        fix_v2_crcs(&mut log);
        assert!(valid(&log));
    }

    #[test]
    fn fix_snapshot_crc_is_what_the_encoder_writes() {
        let snapshot = seglog::ProducerSnapshot::default().encode();
        let mut file = snapshot.clone();
        file[2..6].fill(0);
        fix_snapshot_crc(&mut file);
        assert_eq!(file, snapshot);
        let mut short = vec![0u8; 9];
        fix_snapshot_crc(&mut short);
        assert_eq!(short, [0u8; 9]);
    }
}
