//! A full disk is a typed error, never a signal (issue #13): on a 512 KiB tmpfs, `produce`
//! runs out of space and fails with exit 2 naming the file, and `read`, `info`, `verify`,
//! `recover` and `produce` on what was left all exit with a code, never by SIGBUS. Index
//! space is reserved when an index is created (`fallocate`), so no store to a mapped page can
//! find the disk full. Needs root to mount the tmpfs; elsewhere it says so and passes.

use std::path::Path;
use std::process::Command;

use crate::support::seglog;

/// A small tmpfs mounted at a temp dir for the test's life.
struct SmallFs {
    dir: tempfile::TempDir,
}

impl SmallFs {
    fn mount(size: &str) -> Option<SmallFs> {
        let dir = tempfile::tempdir().ok()?;
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .ok()
            .is_some_and(|out| out.status.success());
        if !mounted {
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "note: cannot mount a tmpfs here (not root?); the full-disk test passes without checking"
            );
            return None;
        }
        Some(SmallFs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

#[test]
fn a_full_disk_is_an_error_and_never_a_signal() {
    let Some(fs) = SmallFs::mount("512k") else {
        return;
    };
    let dir = fs.path().join("full-0");
    let out = seglog([
        "produce".as_ref(),
        dir.as_os_str(),
        "--count".as_ref(),
        "100000".as_ref(),
        "--record-bytes".as_ref(),
        "100".as_ref(),
        "--config".as_ref(),
        "segment.bytes=65536".as_ref(),
        "--quiet".as_ref(),
    ]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("No space left on device"),
        "{}",
        out.stderr
    );
    for command in ["read", "info", "verify", "recover", "dump"] {
        let run = seglog([command.as_ref(), dir.as_os_str()]);
        assert!(
            (0..=2).contains(&run.code),
            "{command} ended with {} (a signal?): {}",
            run.code,
            run.stderr
        );
    }
    let again = seglog([
        "produce".as_ref(),
        dir.as_os_str(),
        "--count".as_ref(),
        "1000".as_ref(),
    ]);
    assert!((0..=2).contains(&again.code), "{}", again.stderr);
}
