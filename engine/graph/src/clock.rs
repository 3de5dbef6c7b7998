//! Time, in microseconds since the Unix epoch, behind a trait so tests can pin it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

pub trait Clock: Send + Sync {
    /// Microseconds since the Unix epoch.
    fn now_us(&self) -> u64;
}

/// The wall clock. Never goes backwards within one process: a reading earlier
/// than the last one returns the last one plus one microsecond, so versions
/// written in order have increasing timestamps.
#[derive(Default)]
pub struct SystemClock {
    last: AtomicU64,
}

impl Clock for SystemClock {
    fn now_us(&self) -> u64 {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0);
        let mut prev = self.last.load(Ordering::Relaxed);
        loop {
            let next = if wall > prev { wall } else { prev + 1 };
            match self
                .last
                .compare_exchange_weak(prev, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return next,
                Err(p) => prev = p,
            }
        }
    }
}

/// A clock that only moves when told to; for tests.
pub struct ManualClock(AtomicU64);

impl ManualClock {
    pub fn new(start_us: u64) -> ManualClock {
        ManualClock(AtomicU64::new(start_us))
    }
    pub fn set(&self, us: u64) {
        self.0.store(us, Ordering::SeqCst);
    }
    pub fn advance(&self, us: u64) {
        self.0.fetch_add(us, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_us(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}
