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
/// this crate's traits, bulkhead-tokio). Read the time with
/// [`last_rejection`](Self::last_rejection), or in a
/// [`Snapshot`](crate::Snapshot) through [`Inspect`](crate::Inspect).
/// [`Error::Closed`] is not a rejection by load and is not recorded.
///
/// A shedding service rejects most when it is overloaded, so a rejection
/// must stay cheap: the clock is read for at most one rejection between two
/// reads of the time, and every other rejection costs one relaxed load on
/// top of core's counter. The time is resolved when it is read
/// ("observed"):
///
/// - **At most one rejection since the previous observation:** its exact
///   time, read from the clock when it happened.
/// - **Several:** the time of the observation that found them. That is
///   never earlier than the last of them, and later by at most the time
///   since the previous observation. Read the time regularly (a metrics
///   exporter that scrapes every 10 s bounds it to 10 s) if a burst's end
///   must be known more precisely than that.
///
/// The precision is otherwise that of [`SystemTime`] (nanoseconds on Linux),
/// rounded down to a multiple of 4 ns. A compartment that does not need the
/// time at all can be built with [`StdLock::untimed`].
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
/// use bulkhead_std::{Bulkhead, bulkhead_core::RawLock};
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
    /// The last rejection, see [`Rejections`].
    rejections: Rejections,
    /// Callers admitted so far (every seat handed to a caller), in the low
    /// 63 bits; the top bit is [`WARNED`].
    admitted: AtomicU64,
}

/// The top bit of `StdLock::admitted`: the compartment's "a blocking
/// acquire could not wait on an event loop" warning was logged. Kept in
/// the admission word so that the lock does not grow; the count would
/// need 2^63 admissions to reach it.
const WARNED: u64 = 1 << 63;

impl StdLock {
    /// A new, unlocked lock that has seen no rejection. `const`, so that a
    /// compartment using it can be a `static`.
    pub const fn new() -> Self {
        Self {
            mutex: Mutex::new(()),
            rejections: Rejections(AtomicU64::new(QUIET)),
            admitted: AtomicU64::new(0),
        }
    }

    /// A new, unlocked lock that keeps no rejection time:
    /// [`last_rejection`](Self::last_rejection) is always `None`, and no
    /// rejection ever reads the clock. `const`, like [`new`](Self::new).
    ///
    /// ```
    /// use bulkhead_std::{Bulkhead, Config, StdLock};
    ///
    /// static SHED: Bulkhead = Bulkhead::with_lock_static(Config::new("shed", 1), StdLock::untimed());
    /// let _seat = SHED.try_acquire().unwrap();
    /// assert!(SHED.try_acquire().is_err()); // counted, not timed
    /// assert_eq!((SHED.state().rejected, SHED.raw_lock().last_rejection()), (1, None));
    /// ```
    pub const fn untimed() -> Self {
        Self {
            mutex: Mutex::new(()),
            rejections: Rejections(AtomicU64::new(UNTIMED)),
            admitted: AtomicU64::new(0),
        }
    }

    /// When the compartment last turned a caller away (`Full`, `QueueFull`
    /// or `Timeout`), if ever, with the precision described in
    /// [the last rejection](Self#the-last-rejection); always `None` for an
    /// [`untimed`](Self::untimed) lock. This read is an observation: the
    /// next rejection after it is timed exactly.
    pub fn last_rejection(&self) -> Option<SystemTime> {
        self.rejections.observe()
    }
}

/// The last rejection as one `AtomicU64`: a time in the high 62 bits
/// (nanoseconds since the Unix epoch, a multiple of 4; 0 for "never") and
/// a state in the low two bits. Transitions, each one CAS:
///
/// | state | a rejection | an observation |
/// |---|---|---|
/// | `QUIET`: none since the last observation; the time is final | reads the clock → `ONE` | returns the time |
/// | `ONE`: one since; the time is its own | → `MANY` (no clock) | returns the time → `QUIET` |
/// | `MANY`: several since; the time is the first one's | nothing: one load | returns "now" → `QUIET` with that time |
/// | `UNTIMED` | nothing: one load | returns `None` |
///
/// `MANY` and `UNTIMED` share bit 1, which is all the common path tests.
/// Times only grow (the later of the stored and the new time is kept), so a
/// clock stepping back never makes the last rejection earlier.
#[derive(Debug, Default)]
struct Rejections(AtomicU64);

const QUIET: u64 = 0b00;
const ONE: u64 = 0b01;
const MANY: u64 = 0b10;
const UNTIMED: u64 = 0b11;
const STATE: u64 = 0b11;

impl Rejections {
    /// The common path: a single relaxed load once a rejection has been
    /// seen since the last observation. Relaxed is enough: the word is only
    /// ever read for its own value, never to publish other memory.
    #[inline]
    fn record(&self) {
        let v = self.0.load(Ordering::Relaxed);
        if v & MANY == 0 {
            self.record_slow(v);
        }
    }

    /// `QUIET` → `ONE` (the clock read) or `ONE` → `MANY`: at most twice
    /// between two observations.
    #[cold]
    #[inline(never)]
    fn record_slow(&self, mut v: u64) {
        loop {
            let new = match v & STATE {
                QUIET => later(v, now_stamp()) | ONE,
                ONE => (v & !STATE) | MANY,
                _ => return,
            };
            match self
                .0
                .compare_exchange_weak(v, new, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(actual) => v = actual,
            }
        }
    }

    /// Resolves the time (see the table) and returns it.
    fn observe(&self) -> Option<SystemTime> {
        let mut v = self.0.load(Ordering::Relaxed);
        loop {
            let resolved = match v & STATE {
                UNTIMED => return None,
                QUIET => return to_time(v),
                ONE => v & !STATE,
                _ => later(v, now_stamp()),
            };
            match self
                .0
                .compare_exchange_weak(v, resolved, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return to_time(resolved),
                Err(actual) => v = actual,
            }
        }
    }
}

/// The later of `v`'s time and `stamp`, with the state bits cleared.
fn later(v: u64, stamp: u64) -> u64 {
    (v & !STATE).max(stamp)
}

/// "Now" as a stamp: nanoseconds since the epoch, rounded down to a
/// multiple of 4 and at least 4 (a clock set before 1970 still records a
/// rejection), saturating in the year 2554 instead of wrapping.
fn now_stamp() -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    nanos.max(STATE + 1) & !STATE
}

fn to_time(v: u64) -> Option<SystemTime> {
    match v & !STATE {
        0 => None,
        nanos => UNIX_EPOCH.checked_add(Duration::from_nanos(nanos)),
    }
}

impl StdLock {
    /// How many callers the compartment has admitted, through any API.
    /// Wraps only after 2^63 admissions.
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
        self.admitted.load(Ordering::Relaxed) & !WARNED
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
// for this compartment runs (promises 2 and 4). `record_rejection`,
// `record_admission` and `claim_event_loop_warning` touch only their own
// atomics and never panic.
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

    /// Notes the rejection; see [the last rejection](StdLock#the-last-rejection).
    #[inline]
    fn record_rejection(&self) {
        self.rejections.record();
    }

    /// One relaxed `fetch_add`: the count is a statistic and orders
    /// nothing.
    #[inline]
    fn record_admission(&self) {
        self.admitted.fetch_add(1, Ordering::Relaxed);
    }

    /// The top bit of the admission word; a load first, so that later
    /// verdicts write nothing. Relaxed: the flag orders nothing, and two
    /// racing first verdicts still see one `fetch_or` win.
    fn claim_event_loop_warning(&self) -> bool {
        self.admitted.load(Ordering::Relaxed) & WARNED == 0
            && self.admitted.fetch_or(WARNED, Ordering::Relaxed) & WARNED == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;

    fn word(lock: &StdLock) -> u64 {
        lock.rejections.0.load(Ordering::Relaxed)
    }

    #[test]
    fn never_rejected_reads_none_and_a_rejection_reads_its_time() {
        let lock = StdLock::new();
        assert_eq!(lock.last_rejection(), None);
        let before = SystemTime::now();
        lock.record_rejection();
        let after = SystemTime::now();
        let at = lock.last_rejection().unwrap();
        // Stamps are rounded down to 4 ns.
        assert!(before - Duration::from_nanos(4) <= at && at <= after);
        assert_eq!(
            lock.last_rejection(),
            Some(at),
            "reading again changes nothing"
        );
    }

    #[test]
    fn a_single_rejection_keeps_its_own_time_however_late_it_is_read() {
        let lock = StdLock::new();
        lock.record_rejection();
        let after = SystemTime::now();
        thread::sleep(Duration::from_millis(20));
        assert!(lock.last_rejection().unwrap() <= after);
    }

    #[test]
    fn several_rejections_resolve_to_the_observation_never_before_the_last() {
        let lock = StdLock::new();
        lock.record_rejection();
        lock.record_rejection();
        let v = word(&lock);
        assert_eq!(v & STATE, MANY);
        // The common path: no clock, no write.
        lock.record_rejection();
        assert_eq!(word(&lock), v);
        let last = SystemTime::now();
        thread::sleep(Duration::from_millis(5));
        let before_read = SystemTime::now();
        let at = lock.last_rejection().unwrap();
        assert!(at >= last && at >= before_read - Duration::from_nanos(4));
        assert!(at <= SystemTime::now());
        assert_eq!(word(&lock) & STATE, QUIET);
    }

    #[test]
    fn the_first_rejection_after_an_observation_is_timed_exactly_again() {
        let lock = StdLock::new();
        lock.record_rejection();
        lock.record_rejection();
        let first = lock.last_rejection().unwrap();
        thread::sleep(Duration::from_millis(2));
        lock.record_rejection();
        let after = SystemTime::now();
        thread::sleep(Duration::from_millis(20));
        let at = lock.last_rejection().unwrap();
        assert!(first < at && at <= after, "{first:?} < {at:?} <= {after:?}");
    }

    #[test]
    fn the_time_never_goes_back_and_saturates() {
        let lock = StdLock::new();
        let top = !STATE; // the largest time
        lock.rejections.0.store(top, Ordering::Relaxed);
        lock.record_rejection(); // "now" is earlier than the stored time
        assert_eq!(word(&lock), top | ONE);
        assert_eq!(lock.last_rejection(), to_time(top));
        assert!(lock.last_rejection().is_some());
        assert_eq!(word(&lock), top);
    }

    #[test]
    fn an_untimed_lock_never_reads_the_clock_or_reports_a_time() {
        let lock = StdLock::untimed();
        lock.record_rejection();
        lock.record_rejection();
        assert_eq!(word(&lock), UNTIMED);
        assert_eq!(lock.last_rejection(), None);
        assert_eq!(word(&lock), UNTIMED);
    }

    #[test]
    fn racing_rejections_and_observations_stay_consistent() {
        let lock = StdLock::new();
        let start = SystemTime::now() - Duration::from_nanos(4);
        thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    for _ in 0..2_000 {
                        lock.record_rejection();
                    }
                });
            }
            s.spawn(|| {
                let mut seen = None;
                for _ in 0..500 {
                    let at = lock.last_rejection();
                    assert!(at >= seen, "went back: {seen:?} then {at:?}");
                    seen = at;
                }
            });
        });
        let at = lock.last_rejection().expect("rejections were recorded");
        let end = SystemTime::now();
        assert!(start <= at && at <= end);
        assert_eq!(word(&lock) & STATE, QUIET);
    }
}
