//! Bad arguments and missing paths: exit 2 and one clear line on stderr.

use crate::support::seglog;

#[test]
fn missing_directories_exit_2_naming_the_path() {
    for cmd in ["verify", "dump", "read", "info", "recover", "retain"] {
        let run = seglog([cmd, "/definitely/not/here"]);
        assert_eq!(run.code, 2, "{cmd}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
        assert!(
            run.stderr
                .contains("/definitely/not/here: no such file or directory"),
            "{}",
            run.stderr
        );
        assert!(run.stdout.is_empty());
    }
}

#[test]
fn bad_arguments_exit_2() {
    for args in [
        &["frobnicate"][..],
        &["read"],
        &["read", "d", "--from", "1", "--from-timestamp", "2"],
        &["read", "d", "--from", "-5"],
        &["produce", "d", "--compression", "brotli"],
        &["produce", "d", "--encoding", "base64"],
        &["produce", "d", "--input", "x", "--count", "3"],
        &["demo", "--records", "abc"],
        &["verify", "d", "--no-such-flag"],
    ] {
        let run = seglog(args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(!run.stderr.is_empty());
    }
}

#[test]
fn verify_of_a_file_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("x");
    std::fs::write(&file, b"").unwrap();
    let run = seglog(["verify".as_ref(), file.as_os_str()]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("not a directory"), "{}", run.stderr);
}

#[test]
fn a_log_dirs_root_is_not_a_partition() {
    let Some(root) = crate::support::corpus().map(|c| c.join("xpxwo100-bullShit")) else {
        return;
    };
    for cmd in ["read", "verify"] {
        let run = seglog([cmd.as_ref(), root.as_os_str()]);
        assert_eq!(run.code, 2, "{cmd}");
        assert!(run.stderr.contains("log.dirs root"), "{}", run.stderr);
    }
}
