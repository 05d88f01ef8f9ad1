//! The waiter-list lock for std targets, which also keeps the time of the
//! compartment's last rejection.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, TryLockError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bulkhead_core::{ConstInit, RawLock};

/// A small mutex per compartment, so that two compartments never contend on
/// one lock (unlike a process-wide critical section), plus the wall-clock
/// time of the compartment's last rejection.
///
/// The lock is only taken by callers that must wait, by releases that find
/// waiters, and by reconfiguration; the seat count itself is lock-free.
/// Poisoning is ignored: core never panics while holding the lock, and a
/// panicking waker runs after it is released.
///
/// # The last rejection
///
/// Core calls [`RawLock::record_rejection`] outside the lock each time the
/// compartment turns a caller away ([`Error::Full`], [`Error::QueueFull`]
/// or [`Error::Timeout`], whichever API took the seat: core's own methods,
/// this crate's traits, bulkhead-tokio). `StdLock` stores the time then, as
/// nanoseconds since the Unix epoch in one `AtomicU64`: recording is one
/// clock read and one `fetch_max`, with no lock. Read it with
/// [`last_rejection`](Self::last_rejection), or in a
/// [`Snapshot`](crate::Snapshot) through [`Inspect`](crate::Inspect).
/// [`Error::Closed`] is not a rejection by load and is not recorded.
///
/// ```
/// use bulkhead_std::Bulkhead;
///
/// static CACHE: Bulkhead = match Bulkhead::new("cache", 1) {
///     Ok(b) => b,
///     Err(_) => panic!("bad settings"),
/// };
/// let _seat = CACHE.try_acquire().unwrap();
/// assert_eq!(CACHE.raw_lock().last_rejection(), None);
/// assert!(CACHE.try_acquire().is_err());
/// assert!(CACHE.raw_lock().last_rejection().is_some());
/// ```
///
/// [`Error::Full`]: bulkhead_core::Error::Full
/// [`Error::QueueFull`]: bulkhead_core::Error::QueueFull
/// [`Error::Timeout`]: bulkhead_core::Error::Timeout
/// [`Error::Closed`]: bulkhead_core::Error::Closed
#[derive(Debug, Default)]
pub struct StdLock {
    mutex: Mutex<()>,
    /// Nanoseconds since the Unix epoch of the latest rejection; 0 for
    /// "never". Saturates at `u64::MAX` (the year 2554) instead of wrapping.
    last_rejection: AtomicU64,
}

impl StdLock {
    /// A new, unlocked lock that has seen no rejection. `const`, so that a
    /// compartment using it can be a `static`.
    pub const fn new() -> Self {
        Self {
            mutex: Mutex::new(()),
            last_rejection: AtomicU64::new(0),
        }
    }

    /// When the compartment last turned a caller away (`Full`, `QueueFull`
    /// or `Timeout`), if ever. Of racing rejections, the latest is kept.
    pub fn last_rejection(&self) -> Option<SystemTime> {
        match self.last_rejection.load(Ordering::Relaxed) {
            0 => None,
            nanos => UNIX_EPOCH.checked_add(Duration::from_nanos(nanos)),
        }
    }
}

impl ConstInit for StdLock {
    const INIT: Self = Self::new();
}

// SAFETY: std's mutex gives mutual exclusion with acquire/release ordering;
// `try_lock` fails only while another thread holds it (`WouldBlock`), never
// spuriously; its guard unlocks on drop, also while unwinding. Core never
// re-enters the lock, so std's "re-entry may deadlock" is never triggered.
// `record_rejection` touches only its own atomic.
unsafe impl RawLock for StdLock {
    #[inline]
    fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
        let _guard = self
            .mutex
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        f()
    }

    #[inline]
    fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        let _guard = match self.mutex.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        Some(f())
    }

    /// Stores "now". A clock set before 1970 records 1 ns after the epoch,
    /// so that the rejection is still seen; `fetch_max` keeps the latest of
    /// racing rejections.
    fn record_rejection(&self) {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
            .max(1);
        self.last_rejection.fetch_max(nanos, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_rejected_reads_none_and_a_rejection_reads_now() {
        let lock = StdLock::new();
        assert_eq!(lock.last_rejection(), None);
        let before = SystemTime::now();
        lock.record_rejection();
        let at = lock.last_rejection().unwrap();
        assert!(before <= at && at <= SystemTime::now());
    }

    #[test]
    fn the_stamp_saturates_and_keeps_the_latest() {
        let lock = StdLock::new();
        lock.last_rejection.store(u64::MAX, Ordering::Relaxed);
        lock.record_rejection(); // now < u64::MAX: fetch_max keeps the max
        assert_eq!(lock.last_rejection.load(Ordering::Relaxed), u64::MAX);
        assert!(lock.last_rejection().is_some());
    }
}
