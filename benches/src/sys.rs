//! Facts about this process and machine, read from `/proc`: peak resident memory, bytes read
//! through `read(2)`-family syscalls, the file system under a path, and (only when asked, and
//! only as root) dropping the page cache.

use std::fs;
use std::path::Path;

use crate::{Result, io_error};

/// Peak resident set size of this process in KiB (`VmHWM` in `/proc/self/status`).
///
/// It counts anonymous memory and every mapped file page that was resident (so mmap'd indexes
/// count), which is what "memory the process holds" means to an operator.
pub fn peak_rss_kib() -> Result<u64> {
    status_field_kib("VmHWM:")
}

/// Current resident set size of this process in KiB (`VmRSS`).
pub fn current_rss_kib() -> Result<u64> {
    status_field_kib("VmRSS:")
}

/// This thread's scheduler accounting from `/proc/thread-self/schedstat`: nanoseconds spent
/// running on a CPU, and nanoseconds spent runnable but waiting for one (other processes had
/// it). The second is what a shared, busy machine adds to a single-threaded measurement.
pub fn thread_schedstat() -> Result<Schedstat> {
    let path = Path::new("/proc/thread-self/schedstat");
    let text = fs::read_to_string(path).map_err(|error| io_error("read", path, error))?;
    let mut fields = text.split_whitespace().map(str::parse::<u64>);
    match (fields.next(), fields.next()) {
        (Some(Ok(run_ns)), Some(Ok(wait_ns))) => Ok(Schedstat { run_ns, wait_ns }),
        _ => Err(format!("unexpected {}: {text:?}", path.display()).into()),
    }
}

/// See [`thread_schedstat`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Schedstat {
    /// Time on a CPU.
    pub run_ns: u64,
    /// Time runnable, waiting for a CPU.
    pub wait_ns: u64,
}

/// CPU time of this process and of its waited-for children, in seconds, from
/// `/proc/self/stat` (`utime + stime`, `cutime + cstime`). The kernel counts them in clock ticks
/// of `USER_HZ`, 100 on Linux: a resolution of 10 ms.
pub fn process_cpu() -> Result<ProcessCpu> {
    let path = Path::new("/proc/self/stat");
    let text = fs::read_to_string(path).map_err(|error| io_error("read", path, error))?;
    // Fields after the command name, which is in parentheses and may hold spaces: the state
    // (field 3) first, so utime (field 14) is at index 11.
    let rest = text
        .rfind(')')
        .map(|end| &text[end + 1..])
        .ok_or_else(|| format!("unexpected {}: {text:?}", path.display()))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |index: usize| -> Result<u64> {
        fields
            .get(index)
            .and_then(|field| field.parse().ok())
            .ok_or_else(|| format!("no field {} in {}", index + 3, path.display()).into())
    };
    const USER_HZ: f64 = 100.0;
    Ok(ProcessCpu {
        own_s: (ticks(11)? + ticks(12)?) as f64 / USER_HZ,
        children_s: (ticks(13)? + ticks(14)?) as f64 / USER_HZ,
    })
}

/// See [`process_cpu`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProcessCpu {
    /// This process's user and system time.
    pub own_s: f64,
    /// The user and system time of its children that have been waited for.
    pub children_s: f64,
}

/// Bytes this process has read through `read`, `pread` and friends (`rchar` in
/// `/proc/self/io`), whether they came from the page cache or the disk. Page faults on mapped
/// files are not counted.
pub fn bytes_read() -> Result<u64> {
    let path = Path::new("/proc/self/io");
    let text = fs::read_to_string(path).map_err(|error| io_error("read", path, error))?;
    field(&text, "rchar:").ok_or_else(|| format!("no rchar in {}", path.display()).into())
}

/// Writes back dirty pages and drops the clean page cache (`/proc/sys/vm/drop_caches`).
///
/// Needs root. The suite never does this unless `--drop-caches` is given: by default every read
/// workload runs against a warm page cache, for every contender alike.
pub fn drop_page_cache() -> Result<()> {
    let status = std::process::Command::new("sync")
        .status()
        .map_err(|error| format!("could not run `sync`: {error}"))?;
    if !status.success() {
        return Err(format!("`sync` failed with {status}").into());
    }
    let path = Path::new("/proc/sys/vm/drop_caches");
    fs::write(path, "3").map_err(|error| io_error("write (needs root)", path, error))
}

/// The file-system type mounted at the longest mount point that contains `path`
/// (from `/proc/self/mounts`), e.g. `ext4` or `tmpfs`.
pub fn fs_type(path: &Path) -> Option<String> {
    let path = path.canonicalize().ok()?;
    let mounts = fs::read_to_string("/proc/self/mounts").ok()?;
    mounts
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let _device = fields.next()?;
            let mount_point = fields.next()?;
            let kind = fields.next()?;
            path.starts_with(mount_point)
                .then(|| (mount_point.len(), kind.to_owned()))
        })
        .max_by_key(|(length, _)| *length)
        .map(|(_, kind)| kind)
}

/// The running kernel release (`/proc/sys/kernel/osrelease`), for the report.
pub fn kernel_release() -> String {
    fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|text| text.trim().to_owned())
        .unwrap_or_else(|_| "unknown".to_owned())
}

fn status_field_kib(name: &str) -> Result<u64> {
    let path = Path::new("/proc/self/status");
    let text = fs::read_to_string(path).map_err(|error| io_error("read", path, error))?;
    field(&text, name).ok_or_else(|| format!("no {name} in {}", path.display()).into())
}

/// The first number after `name` on the line that starts with it.
fn field(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix(name))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|number| number.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_its_own_counters() {
        let before = bytes_read().unwrap();
        let _ = fs::read("/proc/self/status").unwrap();
        assert!(bytes_read().unwrap() > before);
        assert!(peak_rss_kib().unwrap() >= current_rss_kib().unwrap() / 2);
        let first = thread_schedstat().unwrap();
        let mut spin = 0u64;
        for i in 0..1_000_000u64 {
            spin = std::hint::black_box(spin.wrapping_add(i));
        }
        assert!(thread_schedstat().unwrap().run_ns > first.run_ns);
    }

    #[test]
    fn process_cpu_counts_a_spin() {
        let before = process_cpu().unwrap();
        let start = thread_schedstat().unwrap();
        // 60 ms on a CPU, however long the machine makes that take.
        while thread_schedstat().unwrap().run_ns - start.run_ns < 60_000_000 {
            std::hint::black_box(0u64);
        }
        let after = process_cpu().unwrap();
        assert!(
            after.own_s - before.own_s >= 0.03,
            "{before:?} -> {after:?}"
        );
    }

    #[test]
    fn parses_status_lines() {
        let text = "Name:\tx\nVmHWM:\t   2164 kB\nVmRSS:\t 2000 kB\n";
        assert_eq!(field(text, "VmHWM:"), Some(2164));
        assert_eq!(field(text, "VmSwap:"), None);
    }
}
