//! The pluggable, closure-scoped lock that guards a compartment's waiter list.
//!
//! Core owns the algorithm; adapters only say how to lock. The lock is
//! closure-scoped (`with_lock(|| ..)`) rather than guard-based so that a
//! critical section, which cannot be held across an arbitrary scope, can
//! serve as the lock. That is what lets a compartment live in firmware and
//! be released from an interrupt handler.

/// A lock that guards a compartment's waiter list.
///
/// The seat counter itself is lock-free. The lock is only taken by callers
/// that must wait, by a release that finds waiters, and by reconfiguration.
/// Core never holds it while running foreign code: wakers are cloned before
/// locking and woken after unlocking.
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
/// 2. **No spurious failure.** [`try_with_lock`] returns `None` only if
///    another closure is running at that moment. Core's lost-wake-up
///    argument depends on it: a failed try means the current holder will
///    re-check after it unlocks. A lock with no real "try" (a critical
///    section, an embassy raw mutex) may simply run the closure.
/// 3. **Unlock on unwind.** If the closure panics, the lock is released
///    before the panic continues.
///
/// Re-entrancy: core never calls `with_lock` or `try_with_lock` from inside
/// one of its own closures. An implementation may therefore deadlock or
/// panic on re-entry (a `std::sync::Mutex`) or allow it (a critical
/// section); either is sound.
///
/// Panics (not a safety matter): a lock may panic when used from a context
/// it does not support, as embassy's `ThreadModeRawMutex` does outside
/// thread mode. Core hands seats on from `Drop` and re-checks for owed
/// hand-offs while unwinding, so such a panic there becomes an abort: use
/// a lock that supports every context a seat may be dropped in.
///
/// Time spent inside the closure is bounded: core only relinks pointers and
/// moves at most a small, fixed batch of wakers there.
///
/// [`with_lock`]: RawLock::with_lock
/// [`try_with_lock`]: RawLock::try_with_lock
pub unsafe trait RawLock {
    /// Runs `f` with the lock held, waiting for the lock if needed.
    fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R;

    /// Runs `f` with the lock held if it is free right now; returns `None`
    /// without running `f` if another closure holds it.
    fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R>;

    /// Called, never under the lock, each time the compartment turns a
    /// caller away: full, queue full, or a wait budget ran out.
    ///
    /// The lock is the adapter's one plug-in point into core, so it is also
    /// where an adapter that has a clock notes *when* (bulkhead-std keeps
    /// the time of the last rejection this way). The default does nothing
    /// and compiles away.
    #[inline(always)]
    fn record_rejection(&self) {}

    /// Called, never under the lock, each time a caller gets a seat: on the
    /// fast path, after a wait, or as a hand-off, through any API (core's
    /// own methods and every adapter's). Not called for a seat that is
    /// passed on without reaching a caller (a cancelled waiter's).
    ///
    /// Core keeps no admission count itself, so that its fast path stays
    /// one CAS on targets that need no metrics. An adapter that exports
    /// metrics counts here (bulkhead-std keeps an admission counter). The
    /// default does nothing and compiles away.
    #[inline(always)]
    fn record_admission(&self) {}
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
    /// static SENSOR_BUS: Bulkhead<CsLock> = match Bulkhead::new("sensor_bus", 2) {
    ///     Ok(b) => b,
    ///     Err(_) => panic!("invalid compartment"),
    /// };
    /// let seat = SENSOR_BUS.try_acquire().unwrap();
    /// assert_eq!(SENSOR_BUS.state().active, 1);
    /// drop(seat);
    /// ```
    #[derive(Debug, Default, Clone, Copy)]
    pub struct CsLock {
        _private: (),
    }

    impl CsLock {
        /// A new critical-section lock.
        pub const fn new() -> Self {
            Self { _private: () }
        }
    }

    impl ConstInit for CsLock {
        const INIT: Self = Self::new();
    }

    // SAFETY: a critical section excludes every other critical section on
    // all cores and interrupt priorities, with acquire/release semantics
    // (the `critical-section` crate's contract). `critical_section::with`
    // releases the section through a drop guard, so it unlocks on unwind.
    // Re-entry is allowed by `critical-section`, which nests sections.
    unsafe impl RawLock for CsLock {
        #[inline]
        fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
            critical_section::with(|_| f())
        }

        #[inline]
        fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
            Some(self.with_lock(f))
        }
    }
}

#[cfg(bulkhead_loom)]
pub use loom_lock::LoomLock;

#[cfg(bulkhead_loom)]
mod loom_lock {
    use super::RawLock;

    /// A waiter-list lock made of loom's model-checked mutex.
    ///
    /// Only exists under `--cfg bulkhead_loom`, so that users' own loom
    /// suites can model-check code that uses a compartment.
    #[derive(Debug, Default)]
    pub struct LoomLock(loom::sync::Mutex<()>);

    impl LoomLock {
        /// A new, unlocked loom mutex.
        pub fn new() -> Self {
            Self(loom::sync::Mutex::new(()))
        }
    }

    // SAFETY: loom's mutex gives mutual exclusion with acquire/release
    // ordering, its `try_lock` fails only when the mutex is held, and its
    // guard unlocks on drop, also when unwinding.
    unsafe impl RawLock for LoomLock {
        fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
            let _guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
            f()
        }

        fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
            // loom's mutex never reports poisoning, so an error here always
            // means "held".
            let _guard = self.0.try_lock().ok()?;
            Some(f())
        }
    }
}
