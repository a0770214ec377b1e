//! The injectable clock: rolls, retention and flush policies read time only through it.

use std::fmt::Debug;
use std::time::{SystemTime, UNIX_EPOCH};

// Plain std atomics: the clock is not part of any loom model.
use crate::sync::{AtomicI64, Ordering};

/// A source of wall-clock time in milliseconds since the Unix epoch.
pub trait Clock: Send + Sync + Debug {
    /// Now, in ms since the epoch.
    fn now_ms(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
            // A clock before 1970: report negative ms rather than panic.
            Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
        }
    }
}

/// A clock that moves only when told to: tests of rolls and retention need no sleeping.
#[derive(Debug)]
pub struct ManualClock {
    now_ms: AtomicI64,
}

impl ManualClock {
    /// A clock reading `now_ms`.
    pub fn new(now_ms: i64) -> Self {
        Self {
            now_ms: AtomicI64::new(now_ms),
        }
    }

    /// Sets the time.
    pub fn set(&self, now_ms: i64) {
        self.now_ms.store(now_ms, Ordering::SeqCst);
    }

    /// Moves the time forward by `ms` and returns the new time.
    pub fn advance(&self, ms: i64) -> i64 {
        self.now_ms.fetch_add(ms, Ordering::SeqCst) + ms
    }
}

impl Default for ManualClock {
    /// A clock reading 0.
    fn default() -> Self {
        Self::new(0)
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.now_ms.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(1000);
        assert_eq!(clock.now_ms(), 1000);
        assert_eq!(clock.advance(500), 1500);
        clock.set(7);
        assert_eq!(clock.now_ms(), 7);
        assert!(SystemClock.now_ms() > 1_600_000_000_000);
    }
}
