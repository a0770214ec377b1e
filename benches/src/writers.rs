//! Writer threads for the durable-append trials: each contender spreads its batches over the
//! same number of scoped threads and waits for all of them inside its timed run.

use crate::Result;

/// Runs `write` once per job, each job on its own scoped thread, and waits for every thread.
/// Spawns and joins exactly what a hand-written `std::thread::scope` would, so it adds no work
/// to a timed run.
///
/// # Errors
/// The first writer's error, in job order; a writer thread that panicked.
pub fn run_writers<J, F>(jobs: impl IntoIterator<Item = J>, write: F) -> Result<()>
where
    J: Send,
    F: Fn(J) -> Result<()> + Sync,
{
    let write = &write;
    std::thread::scope(|scope| -> Result<()> {
        let handles: Vec<_> = jobs
            .into_iter()
            .map(|job| scope.spawn(move || write(job)))
            .collect();
        for handle in handles {
            handle.join().map_err(|_| "writer thread panicked")??;
        }
        Ok(())
    })
}
