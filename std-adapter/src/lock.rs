//! The waiter-list lock for std targets, which also keeps the
//! compartment's counts (per thread) and the time of its last rejection.

use std::time::SystemTime;

use bulkhead_core::{ConstInit, Counts, RawLock};

use crate::counts::{Event, PerThreadCounts};
use crate::mutex::Mutex;

/// A four-byte mutex per compartment, so that two compartments never
/// contend on one lock (unlike a process-wide critical section), plus the
/// compartment's counts (admissions, rejections, time-outs), kept per
/// thread, and the wall-clock time of its last rejection. Eight bytes in
/// all, so that a compartment is 64.
///
/// The lock is only taken by callers that must wait, by releases that find
/// waiters, and by reconfiguration; the seat count itself is lock-free.
/// The mutex is a four-byte futex word with no poisoning and no
/// allocation: core never panics while holding the lock, and a panicking
/// waker runs after it is released.
///
/// # Counts per thread
///
/// Core calls [`RawLock::record_admission`], [`RawLock::record_rejection`]
/// and [`RawLock::record_timeout`] outside the lock each time a caller
/// gets a seat, is turned away ([`Error::Full`], [`Error::QueueFull`]) or
/// runs out of time ([`Error::Timeout`]), whichever API it used (a
/// thread, a tokio or async-std task, the tower layer, a thread pool, a
/// bare `try_acquire`). `StdLock` counts each in a cell that only the
/// calling thread writes: a load and a store, with no locked instruction
/// and no cache line shared with another writer, so that a full
/// compartment's rejections cost about what the seat word's one load costs,
/// also when many threads are rejected at once.
///
/// A read sums the cells: [`Bulkhead::state`](bulkhead_core::Bulkhead::state)
/// (`rejected`, `timed_out`), [`admitted`](Self::admitted),
/// [`last_rejection`](Self::last_rejection). It takes a process-wide lock
/// and reads one cell per live thread that has ever counted anything, so
/// read counts when you export them (every few seconds), not per call;
/// [`Bulkhead::active`](bulkhead_core::Bulkhead::active) and
/// [`Bulkhead::max_concurrent`](bulkhead_core::Bulkhead::max_concurrent)
/// read the seat word alone. Counts are exact: a thread that exits leaves
/// its counts behind, and a read made once the counting threads are done
/// reads exactly what they counted.
///
/// Memory: each thread that counts keeps an array of 32-byte cells, one
/// per compartment *slot* up to the highest slot it has counted on,
/// rounded up to a power of two (at least 32 cells, 1 KiB). Slots are
/// numbered from 0 among the compartments that have counted and are
/// still alive, and reused smallest first, so with `n` such compartments
/// a thread's array is at most `32 × n` bytes rounded up to a power of
/// two, whichever of them it counts on: 32 threads and 20,000 live
/// compartments take up to 32 × 1 MiB. An exited thread's array is kept,
/// zeroed, for the next thread, so the total is bounded by the most
/// threads that counted at once.
///
/// # The last rejection
///
/// Each rejection (full, queue full, a weight above the limit, a waiter
/// dropped from a full newest-first line, a partition full) and each
/// time-out also notes its time. Read it with
/// [`last_rejection`](Self::last_rejection), or in a
/// [`Snapshot`](crate::Snapshot) through [`Inspect`](crate::Inspect).
/// [`Error::Closed`] is not a rejection by load and is not recorded.
///
/// A shedding service rejects most when it is overloaded, so a rejection
/// must stay cheap: a thread reads the clock for at most one rejection
/// between two reads of the time, and its other rejections cost one
/// relaxed load of its own cell. The time is resolved when it is read
/// ("observed"):
///
/// - **At most one rejection in a thread since the previous
///   observation:** its exact time, read from the clock when it happened.
/// - **Several in one thread:** the time of the observation that found
///   them. That is never earlier than the last of them, and later by at
///   most the time since the previous observation. Read the time
///   regularly (a metrics exporter that scrapes every 10 s bounds it to
///   10 s) if a burst's end must be known more precisely than that.
///
/// The latest over all threads is reported. The precision is otherwise
/// that of [`SystemTime`] (nanoseconds on Linux), rounded down to a
/// multiple of 4 ns, and a clock that steps back never makes the time
/// earlier. A compartment that does not need the time at all can be built
/// with [`StdLock::untimed`].
///
/// The registry's metrics publish the counts as `bulkhead_admitted_total`,
/// `bulkhead_rejected_total` and `bulkhead_timed_out_total`.
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
#[derive(Debug)]
pub struct StdLock {
    /// A four-byte futex mutex (see [`crate::mutex`]): std's takes eight,
    /// and the compartment fits in 64 bytes only with this one.
    mutex: Mutex,
    /// Admissions, rejections, time-outs and the last rejection's time,
    /// counted per thread, and the event-loop warning's flag.
    counts: PerThreadCounts,
}

impl StdLock {
    /// A new, unlocked lock that has counted nothing. `const`, so that a
    /// compartment using it can be a `static`.
    pub const fn new() -> Self {
        Self {
            mutex: Mutex::new(),
            counts: PerThreadCounts::new(true),
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
            mutex: Mutex::new(),
            counts: PerThreadCounts::new(false),
        }
    }

    /// When the compartment last turned a caller away (`Full`, `QueueFull`
    /// or `Timeout`), if ever, with the precision described in
    /// [the last rejection](Self#the-last-rejection); always `None` for an
    /// [`untimed`](Self::untimed) lock. This read is an observation: the
    /// next rejection after it is timed exactly.
    pub fn last_rejection(&self) -> Option<SystemTime> {
        self.counts.last_rejection()
    }

    /// How many callers the compartment has admitted, through any API:
    /// the sum of every thread's count (see
    /// [counts per thread](Self#counts-per-thread) for what a read costs).
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
        self.counts.sum().admitted
    }
}

impl Default for StdLock {
    fn default() -> Self {
        Self::new()
    }
}

impl ConstInit for StdLock {
    const INIT: Self = Self::new();
}

// SAFETY: the futex mutex (`crate::mutex`) gives mutual exclusion, its
// lock an `Acquire` RMW and its unlock a `Release` swap; `try_lock` is a
// strong compare-exchange that fails (`None`) only while another thread
// holds it, never spuriously; its guard unlocks on drop, also while
// unwinding; it never panics. Core never re-enters the lock (re-entry
// would deadlock); nobody else can lock it (locking is `unsafe`, and the mutex
// is private), so a failed `try_lock` means core's own section for this
// compartment runs (promises 2 and 4). The record hooks never run under
// this lock (core's contract) and never take it: they write this thread's
// cells, and on a slow path take the counts' process-wide table lock,
// which nothing holds while taking another lock.
unsafe impl RawLock for StdLock {
    #[inline]
    unsafe fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
        let _guard = self.mutex.lock();
        f()
    }

    #[inline]
    unsafe fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        let _guard = self.mutex.try_lock()?;
        Some(f())
    }

    /// Counts the rejection in this thread's cell and notes its time; see
    /// [the last rejection](StdLock#the-last-rejection).
    #[inline]
    fn record_rejection(&self) {
        self.counts.record(Event::Rejected);
    }

    /// As [`record_rejection`](Self::record_rejection), for a time-out.
    #[inline]
    fn record_timeout(&self) {
        self.counts.record(Event::TimedOut);
    }

    /// Counts the admission in this thread's cell: a load and a store, no
    /// locked instruction.
    #[inline]
    fn record_admission(&self) {
        self.counts.record(Event::Admitted);
    }

    /// Sums every thread's cells.
    fn counts(&self) -> Counts {
        let sum = self.counts.sum();
        let saturate = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        Counts {
            rejected: saturate(sum.rejected),
            timed_out: saturate(sum.timed_out),
        }
    }

    /// A flag in the counts' word; a load first, so that later verdicts
    /// write nothing.
    fn claim_event_loop_warning(&self) -> bool {
        self.counts.claim_warning()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_counts_what_core_tells_it() {
        let lock = StdLock::new();
        assert_eq!((lock.counts(), lock.admitted()), (Counts::NONE, 0));
        assert_eq!(lock.last_rejection(), None);
        for _ in 0..2 {
            lock.record_rejection();
        }
        for _ in 0..3 {
            lock.record_timeout();
        }
        for _ in 0..4 {
            lock.record_admission();
        }
        assert_eq!(
            lock.counts(),
            Counts {
                rejected: 2,
                timed_out: 3
            }
        );
        assert_eq!(lock.admitted(), 4);
        assert!(lock.last_rejection().is_some());
    }

    #[test]
    fn an_untimed_lock_counts_but_never_has_a_time() {
        let lock = StdLock::untimed();
        lock.record_rejection();
        lock.record_timeout();
        assert_eq!(
            lock.counts(),
            Counts {
                rejected: 1,
                timed_out: 1
            }
        );
        assert_eq!(lock.last_rejection(), None);
    }

    #[test]
    fn the_event_loop_warning_is_claimed_once_per_lock() {
        let (a, b) = (StdLock::new(), StdLock::new());
        assert!(a.claim_event_loop_warning());
        assert!(!a.claim_event_loop_warning());
        assert!(b.claim_event_loop_warning(), "each lock has its own");
    }
}
