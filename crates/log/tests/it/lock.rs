//! The directory lock against other processes: a Kafka broker's POSIX (`fcntl`) lock and
//! another seglog's `flock`. The other process is this test binary run again as a child
//! (`lock::child_process`, an ignored test that only runs when the parent asks).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use seglog::{LOCK_FILE, Log, LogConfig, LogDir};

const MODE: &str = "SEGLOG_LOCK_CHILD_MODE";
const PATH: &str = "SEGLOG_LOCK_CHILD_PATH";
/// Marks the child's answers among the test harness's own output.
const TAG: &str = "seglog-lock-child: ";

/// The child: `hold-posix` takes a POSIX write lock as the JVM's `FileChannel.tryLock` does,
/// `hold-flock` an `flock`, then both print `locked` and wait for stdin to close; `probe`
/// tries a POSIX lock and prints `acquired` or `conflict`.
#[test]
#[ignore = "run as a child process by the other tests of this module"]
fn child_process() {
    let mode = std::env::var(MODE).expect("run by the lock tests");
    let path = std::env::var(PATH).unwrap();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .unwrap();
    let posix =
        || rustix::fs::fcntl_lock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive);
    // Retried briefly: a parent test that just closed this file may still share its `flock`
    // with a process another test thread is forking (flock locks follow forks until exec).
    let retry = |take: &dyn Fn() -> bool| {
        let ok = (0..100).any(|_| {
            take() || {
                std::thread::sleep(std::time::Duration::from_millis(20));
                false
            }
        });
        assert!(ok, "could not take the {mode} lock");
    };
    match mode.as_str() {
        "hold-posix" => retry(&|| posix().is_ok()),
        "hold-flock" => retry(&|| file.try_lock().is_ok()),
        "probe" => {
            let answer = if posix().is_ok() {
                "acquired"
            } else {
                "conflict"
            };
            println!("{TAG}{answer}");
            return;
        }
        other => panic!("unknown mode {other}"),
    }
    println!("{TAG}locked");
    std::io::stdout().flush().unwrap();
    let mut rest = String::new();
    while std::io::stdin().read_line(&mut rest).unwrap() > 0 {}
}

fn child(mode: &str, lock_file: &Path) -> (Child, BufReader<std::process::ChildStdout>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["lock::child_process", "--exact", "--ignored", "--nocapture"])
        .args(["--test-threads", "1"])
        .env(MODE, mode)
        .env(PATH, lock_file)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    (child, stdout)
}

/// Waits for one of `words` on the child's stdout (the test harness prints its own lines).
fn wait_for(stdout: &mut BufReader<std::process::ChildStdout>, words: &[&str]) -> String {
    let mut seen = String::new();
    let mut line = String::new();
    loop {
        line.clear();
        let n = stdout.read_line(&mut line).unwrap();
        assert!(n > 0, "the child exited without answering: {seen}");
        seen.push_str(&line);
        let answer = line.split(TAG).nth(1).map(str::trim);
        if let Some(word) = words.iter().find(|w| answer == Some(**w)) {
            return (*word).to_owned();
        }
    }
}

fn probe(lock_file: &Path) -> String {
    let (mut child, mut stdout) = child("probe", lock_file);
    let answer = wait_for(&mut stdout, &["acquired", "conflict"]);
    assert!(child.wait().unwrap().success());
    answer
}

fn release(mut child: Child) {
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
}

#[test]
fn a_posix_lock_of_another_process_refuses_the_open() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("orders-0");
    std::fs::create_dir(&dir).unwrap();
    for (mode, lock_dir) in [("hold-posix", &dir), ("hold-flock", &dir)] {
        let (holder, mut stdout) = child(mode, &lock_dir.join(LOCK_FILE));
        wait_for(&mut stdout, &["locked"]);
        let err = Log::open(&dir, LogConfig::default()).unwrap_err();
        assert!(matches!(err, seglog::Error::Locked { .. }), "{mode}: {err}");
        assert!(err.to_string().contains("Kafka broker"), "{err}");
        release(holder);
        Log::open(&dir, LogConfig::default())
            .unwrap()
            .close()
            .unwrap();
    }
    // The same for a log.dirs root held the way a broker holds it.
    let (holder, mut stdout) = child("hold-posix", &root.path().join(LOCK_FILE));
    wait_for(&mut stdout, &["locked"]);
    let err = LogDir::open(root.path(), LogConfig::default()).unwrap_err();
    assert!(matches!(err, seglog::Error::Locked { .. }), "{err}");
    release(holder);
    LogDir::open(root.path(), LogConfig::default()).unwrap();
}

#[test]
fn an_open_log_refuses_a_posix_lock_from_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let lock_file = dir.path().join(LOCK_FILE);
    let log = Log::open(dir.path(), LogConfig::default()).unwrap();
    assert_eq!(probe(&lock_file), "conflict", "a broker could not lock it");
    // A refused second open in this process must not release the POSIX lock.
    assert!(Log::open(dir.path(), LogConfig::default()).is_err());
    assert_eq!(probe(&lock_file), "conflict");
    log.close().unwrap();
    drop(log);
    assert_eq!(probe(&lock_file), "acquired");
}
