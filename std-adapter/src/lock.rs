//! The waiter-list lock for std targets, which also counts the
//! compartment's admissions and keeps the time of its last rejection.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, TryLockError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bulkhead_core::{ConstInit, RawLock};

/// A small mutex per compartment, so that two compartments never contend on
/// one lock (unlike a process-wide critical section), plus the
/// compartment's admission count and the wall-clock time of its last
/// rejection.
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
/// clock read and one `fetch_max`, with no lock. The clock read dominates a
/// rejection's cost (about 40 ns on a VM, against about 5 ns without it);
/// a program that sheds load at very high rates and does not need the time
/// can build its compartments with [`StdLock::untimed`]. Read it with
/// [`last_rejection`](Self::last_rejection), or in a
/// [`Snapshot`](crate::Snapshot) through [`Inspect`](crate::Inspect).
/// [`Error::Closed`] is not a rejection by load and is not recorded.
///
/// # Admissions
///
/// Core calls [`RawLock::record_admission`] each time a caller gets a
/// seat, whichever API took it (a thread, a tokio or async-std task, the
/// tower layer, a thread pool, a bare `try_acquire`). `StdLock` counts it
/// with one relaxed `fetch_add`; [`admitted`](Self::admitted) reads the
/// count, and the registry's metrics publish it as
/// `bulkhead_admitted_total`, next to core's own rejected and timed-out
/// counters.
///
/// ```
/// use bulkhead_std::Bulkhead;
///
/// static CACHE: Bulkhead = Bulkhead::new_static("cache", 1);
/// let _seat = CACHE.try_acquire().unwrap();
/// assert_eq!(CACHE.raw_lock().last_rejection(), None);
/// assert!(CACHE.try_acquire().is_err());
/// assert!(CACHE.raw_lock().last_rejection().is_some());
/// ```
///
/// # Only core locks it
///
/// A compartment's lock is reachable through `raw_lock()`, for
/// [`last_rejection`](Self::last_rejection), but locking it is `unsafe`
/// ([`RawLock::with_lock`]): a seat dropped while someone else held the
/// mutex would leave its hand-off to a holder that never makes it, and the
/// oldest waiter would sleep next to a free seat.
///
/// ```compile_fail,E0133
/// use bulkhead_std::{Bulkhead, core::RawLock};
///
/// let b = Bulkhead::new("db", 1).unwrap();
/// let seat = b.try_acquire().unwrap();
/// b.raw_lock().with_lock(|| drop(seat)); // error: call to unsafe function
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
    /// "never", [`UNTIMED`] for a lock that keeps no time. Saturates one
    /// below `UNTIMED` (the year 2554) instead of wrapping.
    last_rejection: AtomicU64,
    /// Callers admitted so far (every seat handed to a caller).
    admitted: AtomicU64,
}

/// The `last_rejection` value of a lock built by [`StdLock::untimed`].
const UNTIMED: u64 = u64::MAX;

impl StdLock {
    /// A new, unlocked lock that has seen no rejection. `const`, so that a
    /// compartment using it can be a `static`.
    pub const fn new() -> Self {
        Self {
            mutex: Mutex::new(()),
            last_rejection: AtomicU64::new(0),
            admitted: AtomicU64::new(0),
        }
    }

    /// A new, unlocked lock that keeps no rejection time: rejections then
    /// cost only core's counter, and [`last_rejection`](Self::last_rejection)
    /// is always `None`. `const`, like [`new`](Self::new).
    ///
    /// ```
    /// use bulkhead_std::{Bulkhead, Config, StdLock};
    ///
    /// static SHED: Bulkhead = match Bulkhead::with_lock(Config::new("shed", 1), StdLock::untimed()) {
    ///     Ok(b) => b,
    ///     Err(_) => panic!("bad settings"),
    /// };
    /// let _seat = SHED.try_acquire().unwrap();
    /// assert!(SHED.try_acquire().is_err()); // counted, not timed
    /// assert_eq!((SHED.state().rejected, SHED.raw_lock().last_rejection()), (1, None));
    /// ```
    pub const fn untimed() -> Self {
        Self {
            mutex: Mutex::new(()),
            last_rejection: AtomicU64::new(UNTIMED),
            admitted: AtomicU64::new(0),
        }
    }

    /// When the compartment last turned a caller away (`Full`, `QueueFull`
    /// or `Timeout`), if ever; always `None` for an
    /// [`untimed`](Self::untimed) lock. Of racing rejections, the latest is
    /// kept.
    pub fn last_rejection(&self) -> Option<SystemTime> {
        match self.last_rejection.load(Ordering::Relaxed) {
            0 | UNTIMED => None,
            nanos => UNIX_EPOCH.checked_add(Duration::from_nanos(nanos)),
        }
    }
}

impl StdLock {
    /// How many callers the compartment has admitted, through any API.
    /// Wraps only after 2^64 admissions.
    ///
    /// ```
    /// use bulkhead_std::Bulkhead;
    ///
    /// let b = Bulkhead::new("cache", 1).unwrap();
    /// drop(b.try_acquire().unwrap());
    /// assert!(b.try_acquire().is_ok());
    /// assert_eq!(b.raw_lock().admitted(), 2);
    /// ```
    pub fn admitted(&self) -> u64 {
        self.admitted.load(Ordering::Relaxed)
    }
}

impl ConstInit for StdLock {
    const INIT: Self = Self::new();
}

// SAFETY: std's mutex gives mutual exclusion with acquire/release ordering;
// `try_lock` fails only while another thread holds it (`WouldBlock`), never
// spuriously; its guard unlocks on drop, also while unwinding. Core never
// re-enters the lock, so std's "re-entry may deadlock" is never triggered;
// nobody else can lock it (locking is `unsafe`, and the mutex is private),
// so `lock` never panics and a failed `try_lock` means core's own section
// for this compartment runs (promises 2 and 4). `record_rejection` and
// `record_admission` touch only their own atomics and never panic.
unsafe impl RawLock for StdLock {
    #[inline]
    unsafe fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
        let _guard = self
            .mutex
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        f()
    }

    #[inline]
    unsafe fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        let _guard = match self.mutex.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        Some(f())
    }

    /// Stores "now", unless the lock is untimed. A clock set before 1970
    /// records 1 ns after the epoch, so that the rejection is still seen;
    /// `fetch_max` keeps the latest of racing rejections, and can never
    /// reach the `UNTIMED` marker because stamps saturate below it.
    fn record_rejection(&self) {
        if self.last_rejection.load(Ordering::Relaxed) == UNTIMED {
            return;
        }
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| u64::try_from(d.as_nanos()).unwrap_or(UNTIMED - 1))
            .clamp(1, UNTIMED - 1);
        self.last_rejection.fetch_max(nanos, Ordering::Relaxed);
    }

    /// One relaxed `fetch_add`: the count is a statistic and orders
    /// nothing.
    #[inline]
    fn record_admission(&self) {
        self.admitted.fetch_add(1, Ordering::Relaxed);
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
        lock.last_rejection.store(UNTIMED - 1, Ordering::Relaxed);
        lock.record_rejection(); // now < the saturated stamp: fetch_max keeps it
        assert_eq!(lock.last_rejection.load(Ordering::Relaxed), UNTIMED - 1);
        assert!(lock.last_rejection().is_some());
    }

    #[test]
    fn an_untimed_lock_never_reads_the_clock_or_reports_a_time() {
        let lock = StdLock::untimed();
        lock.record_rejection();
        assert_eq!(lock.last_rejection.load(Ordering::Relaxed), UNTIMED);
        assert_eq!(lock.last_rejection(), None);
    }
}
