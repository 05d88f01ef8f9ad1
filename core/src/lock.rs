//! The pluggable, closure-scoped lock that guards a compartment's waiter list.
//!
//! Core owns the algorithm; adapters only say how to lock. The lock is
//! closure-scoped (`with_lock(|| ..)`) rather than guard-based so that a
//! critical section, which cannot be held across an arbitrary scope, can
//! serve as the lock. That is what lets a compartment live in firmware and
//! be released from an interrupt handler.

use crate::counts::Counts;

/// A lock that guards a compartment's waiter list.
///
/// The seat counter itself is lock-free. The lock is only taken by callers
/// that must wait, by a release that finds waiters, and by reconfiguration.
/// Core never holds it while running foreign code: wakers are cloned before
/// locking and woken after unlocking.
///
/// Only core locks a compartment's lock: [`with_lock`] and
/// [`try_with_lock`] are `unsafe` to call, so safe code that reaches the
/// lock through [`Bulkhead::raw_lock`](crate::Bulkhead::raw_lock) can read
/// an adapter's own state on it but cannot lock it. A release made while
/// someone else held the lock would find its try refused and leave its seat
/// to a "holder" that never hands it on:
///
/// ```compile_fail,E0133
/// use bulkhead_core::{Bulkhead, RawLock, Seat};
///
/// fn release_under_the_lock<L: RawLock>(b: &Bulkhead<L>, seat: Seat<'_, L>) {
///     b.raw_lock().with_lock(|| drop(seat)); // error: call to unsafe function
/// }
/// ```
///
/// # Bounded sections
///
/// Each closure core passes runs for a time bounded by a constant,
/// whatever the number of waiters: it reaches at most `BATCH + 2` nodes
/// through the list (`BATCH` = 8: a drain hands on at most a batch of seats,
/// `Closed` verdicts or wake-ups; plus the caller's own node, and one look
/// at an empty list), and relinks a fixed number of pointers per node. A
/// larger hand-off is split over several sections, each one after
/// unlocking.
#[cfg_attr(
    feature = "critical-section",
    doc = "With [`CsLock`](crate::CsLock) this bounds how long interrupts stay masked."
)]
#[cfg_attr(
    not(feature = "critical-section"),
    doc = "With `CsLock` (feature `critical-section`) this bounds how long interrupts stay masked."
)]
///
/// # Safety
///
/// Core's unsafe code relies on every promise below. An implementation that
/// breaks one causes undefined behaviour.
///
/// 1. **Mutual exclusion.** While a closure passed to [`with_lock`] or
///    [`try_with_lock`] runs, no other closure passed to either method of the
///    same lock value runs, on any thread or interrupt priority. The end of
///    one closure happens-before the start of the next (release/acquire).
/// 2. **No spurious failure.** [`try_with_lock`] returns `None` only
///    because of a closure passed to this same lock value that has not
///    finished as far as the try can tell: if the end of every earlier
///    closure of this lock value happens-before the try, the try succeeds.
///    Core's lost-wake-up argument depends on it: a failed try means that
///    core's own section for *this* compartment is running (or has just
///    ended without being ordered before the try), and that section
///    re-checks after it unlocks. Hence one lock value serves exactly
///    one compartment, and distinct values never contend with each other
///    (a lock made of a handle to a shared mutex breaks this; a lock whose
///    try never fails, such as a critical section, satisfies it even when
///    its state is shared). A lock with no real "try" (a critical section,
///    an embassy raw mutex) may simply run the closure.
/// 3. **Unlock on unwind.** If the closure panics, the lock is released
///    before the panic continues.
/// 4. **Panics only before the closure.** A method either runs `f` to
///    completion and returns its result, or propagates a panic of `f`, or
///    panics before `f` has started, without holding the lock. It never
///    panics after `f` has returned.
///
/// A panic before `f` (promise 4) is allowed: a lock may refuse a context
/// it does not support, as embassy's `ThreadModeRawMutex` does outside
/// thread mode. It is not a safety matter, but it can be fatal. A waiting
/// future that is dropped must unlink its node under the lock before its
/// memory is freed; if the lock refuses, core tries once more while the
/// panic unwinds, and a second refusal is a panic during unwinding, which
/// aborts the process instead of leaving a dangling node in the list. A
/// refused release keeps its seat counted as free but may leave a waiter
/// asleep. Use a lock that supports every context a seat or a waiting
/// future may be dropped in.
///
/// Re-entrancy: core never calls `with_lock` or `try_with_lock` from inside
/// one of its own closures. An implementation may therefore deadlock or
/// panic on re-entry (a `std::sync::Mutex`) or allow it (a critical
/// section); either is sound.
///
/// # Example: a lock of your own
///
/// A lock over `std::sync::Mutex` that keeps the compartment's counts in
/// an [`AtomicCounts`](crate::AtomicCounts) (bulkhead-std's `StdLock` is
/// the finished one; this shows every part a lock has):
///
/// ```
/// use std::sync::{Mutex, TryLockError};
///
/// use bulkhead_core::{AtomicCounts, Bulkhead, Config, Counts, RawLock};
///
/// #[derive(Default)]
/// struct MyLock {
///     mutex: Mutex<()>,
///     counts: AtomicCounts,
/// }
///
/// // SAFETY: one mutex per lock value (promise 2: its `try_lock` fails
/// // only while this value is held, `WouldBlock`); it excludes with
/// // acquire/release ordering (1) and its guard unlocks on unwind (3);
/// // `lock` does not panic once poisoning is ignored, which is sound
/// // because core keeps its state consistent at every step (4).
/// unsafe impl RawLock for MyLock {
///     unsafe fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
///         let _guard = self.mutex.lock().unwrap_or_else(|e| e.into_inner());
///         f()
///     }
///
///     unsafe fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
///         let _guard = match self.mutex.try_lock() {
///             Ok(guard) => guard,
///             Err(TryLockError::Poisoned(e)) => e.into_inner(),
///             Err(TryLockError::WouldBlock) => return None,
///         };
///         Some(f())
///     }
///
///     fn record_rejection(&self) {
///         self.counts.record_rejection();
///     }
///
///     fn record_timeout(&self) {
///         self.counts.record_timeout();
///     }
///
///     fn counts(&self) -> Counts {
///         self.counts.get()
///     }
/// }
///
/// let api = Bulkhead::with_lock(Config::new("api", 1), MyLock::default())?;
/// let _seat = api.try_acquire()?;
/// assert!(api.try_acquire().is_err());
/// assert_eq!(api.state().rejected, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// [`with_lock`]: RawLock::with_lock
/// [`try_with_lock`]: RawLock::try_with_lock
pub unsafe trait RawLock {
    /// Runs `f` with the lock held, waiting for the lock if needed.
    ///
    /// # Safety
    ///
    /// Only the compartment that owns this lock value calls it (core does,
    /// under the contract above). Anyone else locking a lock that belongs
    /// to a compartment can make a release hand its seat to nobody. A lock
    /// value that belongs to no compartment may be locked freely.
    unsafe fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R;

    /// Runs `f` with the lock held if it is free right now; returns `None`
    /// without running `f` if another closure holds it.
    ///
    /// # Safety
    ///
    /// As [`with_lock`](RawLock::with_lock).
    unsafe fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R>;

    /// Called, never under the lock, each time the compartment turns a
    /// caller away because it or its queue is full
    /// ([`Error::Full`](crate::Error::Full),
    /// [`Error::QueueFull`](crate::Error::QueueFull), a weight above the
    /// limit, a partition's `PartitionFull`).
    ///
    /// The lock is the adapter's one plug-in point into core, so it keeps
    /// the compartment's counts ([`counts`](Self::counts)), and an adapter
    /// that has a clock notes *when* here (bulkhead-std keeps the time of
    /// the last rejection this way). The default does nothing and compiles
    /// away.
    #[inline(always)]
    fn record_rejection(&self) {}

    /// Called, never under the lock, each time a wait's budget runs out
    /// ([`Error::Timeout`](crate::Error::Timeout)). As
    /// [`record_rejection`](Self::record_rejection); the default does
    /// nothing.
    #[inline(always)]
    fn record_timeout(&self) {}

    /// The compartment's counts: what [`record_rejection`] and
    /// [`record_timeout`] were called for, read by
    /// [`Bulkhead::state`](crate::Bulkhead::state). Core keeps no counts of
    /// its own: where they live decides what counting costs (one shared
    /// counter written by every rejecting thread, or one per thread summed
    /// here). Keep them in an [`AtomicCounts`](crate::AtomicCounts) unless
    /// you can do better.
    ///
    /// There is no default, so that a lock cannot forget its counts and
    /// leave [`State::rejected`](crate::State::rejected) silently at 0: a
    /// lock that keeps none on purpose says so by returning
    /// [`Counts::NONE`].
    ///
    /// [`record_rejection`]: Self::record_rejection
    /// [`record_timeout`]: Self::record_timeout
    fn counts(&self) -> Counts;

    /// Called, never under the lock, each time a caller gets a seat: on the
    /// fast path, after a wait, or as a hand-off, through any API (core's
    /// own methods and every adapter's). Not called for a seat that is
    /// passed on without reaching a caller (a cancelled waiter's).
    ///
    /// Core keeps no admission count itself, so that its fast path stays
    /// one CAS on targets that need no metrics. An adapter that exports
    /// metrics counts here (bulkhead-std counts admissions per thread). The
    /// default does nothing and compiles away.
    #[inline(always)]
    fn record_admission(&self) {}

    /// Claims the compartment's one warning that a blocking acquire could
    /// not wait on an event-loop thread ([`Error::FullOnEventLoop`]):
    /// `true` the first time it is called on this lock value, `false`
    /// after, so that an adapter logs it once per compartment. Core never
    /// calls it. The default keeps no flag and returns `false`: such a
    /// lock never logs, and the error itself still says why.
    ///
    /// [`Error::FullOnEventLoop`]: crate::Error::FullOnEventLoop
    #[inline(always)]
    fn claim_event_loop_warning(&self) -> bool {
        false
    }
}

/// A lock that can be built in a `const` context, so that a compartment
/// using it can be a `static`.
pub trait ConstInit {
    /// A new, unlocked lock.
    const INIT: Self;
}

#[cfg(feature = "critical-section")]
pub use cs::CsLock;

#[cfg(feature = "critical-section")]
mod cs {
    use super::{ConstInit, RawLock};
    use crate::counts::{AtomicCounts, Counts};

    /// A waiter-list lock made of a [`critical_section`].
    ///
    /// Use it in firmware whose compartment is shared with interrupt
    /// handlers, and on targets without CAS. On a single-core MCU the
    /// critical section masks interrupts for the few instructions that
    /// relink the list, so a release from an ISR can never deadlock against
    /// the thread it interrupted (bug class 13 in docs/bug-classes.md).
    ///
    /// `try_with_lock` always succeeds: a critical section has no "busy"
    /// state that a caller could observe. A release therefore always hands
    /// its seat over itself, inside one bounded critical section.
    ///
    /// On a host, `critical-section`'s `std` feature implements the section
    /// with one process-wide mutex. That is correct but serialises every
    /// compartment; std programs should use `bulkhead-std`'s lock instead.
    ///
    /// ```
    /// use bulkhead_core::{Bulkhead, CsLock};
    ///
    /// static SENSOR_BUS: Bulkhead<CsLock> = Bulkhead::new_static("sensor_bus", 2);
    /// let seat = SENSOR_BUS.try_acquire().unwrap();
    /// assert_eq!(SENSOR_BUS.state().active, 1);
    /// drop(seat);
    /// ```
    ///
    /// It keeps the compartment's counts in an [`AtomicCounts`]: on a
    /// single core a locked increment costs no more than a plain one.
    #[derive(Debug, Default)]
    pub struct CsLock {
        counts: AtomicCounts,
    }

    impl CsLock {
        crate::sync::loom_const_fn! {
            /// A new critical-section lock, with nothing counted.
            pub fn new() -> Self {
                Self {
                    counts: AtomicCounts::new(),
                }
            }
        }
    }

    #[cfg(not(bulkhead_loom))]
    impl ConstInit for CsLock {
        const INIT: Self = Self::new();
    }

    // SAFETY: a critical section excludes every other critical section on
    // all cores and interrupt priorities, with acquire/release semantics
    // (the `critical-section` crate's contract). `critical_section::with`
    // releases the section through a drop guard, so it unlocks on unwind.
    // Re-entry is allowed by `critical-section`, which nests sections.
    // Entering a section cannot fail, so nothing panics before `f`. Every
    // `CsLock` is the same section, but its try never fails, so sharing it
    // between compartments is sound (promise 2).
    unsafe impl RawLock for CsLock {
        #[inline]
        unsafe fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
            critical_section::with(|_| f())
        }

        #[inline]
        unsafe fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
            Some(critical_section::with(|_| f()))
        }

        #[inline]
        fn record_rejection(&self) {
            self.counts.record_rejection();
        }

        #[inline]
        fn record_timeout(&self) {
            self.counts.record_timeout();
        }

        #[inline]
        fn counts(&self) -> Counts {
            self.counts.get()
        }
    }
}

#[cfg(bulkhead_loom)]
pub use loom_lock::LoomLock;

#[cfg(bulkhead_loom)]
mod loom_lock {
    // loom needs std anyway; the model build is never no_std.
    extern crate std;

    use std::sync::{Mutex, MutexGuard};
    use std::vec::Vec;

    use loom::sync::atomic::AtomicBool;
    use loom::sync::atomic::Ordering::{Acquire, Relaxed, Release};
    use loom::thread::Thread;

    use super::RawLock;
    use crate::counts::{AtomicCounts, Counts};

    /// A waiter-list lock made of loom atomics: a test-and-set lock whose
    /// blocked callers park.
    ///
    /// Only exists under `--cfg bulkhead_loom`, so that users' own loom
    /// suites can model-check code that uses a compartment.
    ///
    /// The lock is an atomic flag, not loom's `Mutex`, so that its own
    /// orderings are part of the model. loom's mutex is sequentially
    /// consistent: a failed `try_lock` there always sees the latest state,
    /// which hides every bug in how core orders its lock-free release
    /// against the lock (rule 1 in `core/src/engine.rs`). This lock is as
    /// weak as [`RawLock`]'s contract allows:
    ///
    /// - taking the flag is a `compare_exchange(false, true, Acquire,
    ///   Relaxed)`; giving it back is a `Release` store made by a drop
    ///   guard, so it also unlocks when the closure unwinds;
    /// - a try starts with a `Relaxed` load and gives up if that reads
    ///   "held". loom gives a read-modify-write the newest value, but a
    ///   load any value coherence allows, so a try may still see a holder
    ///   that has already unlocked, unless that unlock happens-before the
    ///   try. The contract promises no more, and core must not assume more;
    /// - a `with_lock` that finds the flag held parks, and the unlock
    ///   unparks every parked caller, which then tries again.
    ///
    /// Parking rather than spinning keeps loom's executions finite: loom
    /// treats a switch away from a yielding thread as free, so two spinners
    /// could hand the processor to each other forever. loom switches
    /// threads only at its own operations, so "the CAS failed, note this
    /// thread, park" cannot interleave with "unlock, unpark the noted
    /// threads", and no unpark is lost. The list of parked threads is a
    /// plain `std` mutex, invisible to the model; loom's unpark orders the
    /// unlock before the parked thread's next try, which the flag's
    /// `Acquire` would give it anyway.
    ///
    /// It keeps the compartment's counts in an [`AtomicCounts`].
    #[derive(Debug)]
    pub struct LoomLock {
        locked: AtomicBool,
        parked: Mutex<Vec<Thread>>,
        counts: AtomicCounts,
    }

    impl LoomLock {
        /// A new, unlocked lock.
        pub fn new() -> Self {
            Self {
                locked: AtomicBool::new(false),
                parked: Mutex::new(Vec::new()),
                counts: AtomicCounts::new(),
            }
        }

        fn take_if_free(&self) -> Option<Unlock<'_>> {
            self.locked
                .compare_exchange(false, true, Acquire, Relaxed)
                .ok()
                .map(|_| Unlock(self))
        }

        fn parked(&self) -> MutexGuard<'_, Vec<Thread>> {
            // A panic never happens while the list is locked; ignore the
            // poison flag that loom's panicking threads may still set.
            self.parked.lock().unwrap_or_else(|e| e.into_inner())
        }
    }

    impl Default for LoomLock {
        fn default() -> Self {
            Self::new()
        }
    }

    /// Gives the flag back on drop, also while unwinding.
    struct Unlock<'a>(&'a LoomLock);

    impl Drop for Unlock<'_> {
        fn drop(&mut self) {
            self.0.locked.store(false, Release);
            let parked = core::mem::take(&mut *self.0.parked());
            for thread in parked {
                thread.unpark();
            }
        }
    }

    // SAFETY: the flag's CAS admits one holder at a time, and its `Acquire`
    // pairs with the previous unlock's `Release` store, so one closure's
    // end happens-before the next one's start. A try fails only after
    // reading `true`, written by a holder whose unlock does not
    // happen-before the try (coherence forbids reading an older value
    // otherwise). The drop guard unlocks on unwind. Nothing here panics
    // before `f` runs or after it returns (a loom panic ends the model).
    unsafe impl RawLock for LoomLock {
        unsafe fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
            let _unlock = loop {
                if let Some(unlock) = self.take_if_free() {
                    break unlock;
                }
                self.parked().push(loom::thread::current());
                loom::thread::park();
            };
            f()
        }

        unsafe fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
            if self.locked.load(Relaxed) {
                return None;
            }
            let _unlock = self.take_if_free()?;
            Some(f())
        }

        fn record_rejection(&self) {
            self.counts.record_rejection();
        }

        fn record_timeout(&self) {
            self.counts.record_timeout();
        }

        fn counts(&self) -> Counts {
            self.counts.get()
        }
    }
}
