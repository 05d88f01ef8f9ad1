//! [`EmbassyLock`]: an embassy-sync raw mutex as a compartment's waiter-list
//! lock.

use core::fmt;

use bulkhead_core::{AtomicCounts, ConstInit, Counts, RawLock};
use embassy_sync::blocking_mutex::raw::RawMutex;

/// Any embassy-sync [`RawMutex`], used as the lock that guards a
/// compartment's waiter list.
///
/// You rarely name this type: use the [`Bulkhead<M>`](crate::Bulkhead)
/// alias, which picks it for you.
///
/// # Which mutex
///
/// | `M` | compartment is | seats may be dropped in | statics |
/// |---|---|---|---|
/// | [`CriticalSectionRawMutex`] | `Send + Sync` | tasks on any executor, and interrupt handlers | yes |
/// | `ThreadModeRawMutex` | `Send + Sync` | thread mode only (tasks of a thread-mode executor) | yes |
/// | [`NoopRawMutex`] | `Send`, not `Sync` | tasks of the one executor that owns it | no (`!Sync`); share a `&'static` made with `static_cell` |
///
/// - **Shared with interrupts** (a seat dropped in an ISR, or tasks on an
///   interrupt-mode executor): [`CriticalSectionRawMutex`]. Its lock masks
///   interrupts for the few instructions that relink the waiter list, so an
///   interrupt can never find the list half-updated.
/// - **Thread mode only** (a single-core MCU, every user a task of the
///   thread-mode executor): `ThreadModeRawMutex` never masks interrupts.
///   Its lock **panics outside thread mode**, and a release that finds
///   waiters takes the lock, so dropping a seat in an interrupt handler
///   panics whenever someone waits, and dropping a *waiting* future
///   outside thread mode cannot unlink it: core then aborts the process
///   rather than free a node that is still linked. (Where panics unwind,
///   on a host, core retries the lock while unwinding, and the second
///   refusal aborts.) On
///   `std`, "thread mode" is the thread named `main`. The type only exists
///   on Cortex-M targets and with embassy-sync's `std` feature.
/// - **One executor, nothing else**: [`NoopRawMutex`] costs nothing; the
///   compiler enforces the restriction, because the compartment is then
///   `!Sync` and cannot be reached from another thread or from an
///   interrupt handler (which only sees `static`s, and those must be `Sync`).
///
/// A `NoopRawMutex` compartment cannot be a `static`:
///
/// ```compile_fail
/// use bulkhead_embassy::{Bulkhead, raw::NoopRawMutex};
/// static LOCAL: Bulkhead<NoopRawMutex> = bulkhead_embassy::new_static("local", 1);
/// //                                  ^ error: `*mut ()` cannot be shared between threads safely
/// # let _ = &LOCAL;
/// ```
///
/// but a task can own one, with no `static_cell`, and share it among the
/// futures it joins:
///
/// ```
/// use bulkhead_embassy::{Bulkhead, raw::NoopRawMutex};
///
/// async fn sensors() {
///     let i2c: Bulkhead<NoopRawMutex> = bulkhead_embassy::new_static("i2c", 1);
///     let read = |_address: u8| async {
///         let _seat = i2c.acquire().await.unwrap();
///         // ... one transfer at a time on the shared bus
///     };
///     let (a, b) = (read(0x40), read(0x41));
///     // join `a` and `b` with embassy_futures::join, or await them in turn
///     a.await;
///     b.await;
/// }
/// # let _ = sensors;
/// ```
///
/// # Lock contract
///
/// embassy's raw mutexes are closure-scoped with no "try", so
/// [`try_with_lock`](RawLock::try_with_lock) simply takes the lock: it never
/// fails spuriously, which is what core's contract asks. They are also
/// re-entrant on the same thread; core never re-enters, so that is unused.
///
/// [`CriticalSectionRawMutex`]: embassy_sync::blocking_mutex::raw::CriticalSectionRawMutex
/// [`NoopRawMutex`]: embassy_sync::blocking_mutex::raw::NoopRawMutex
pub struct EmbassyLock<M: RawMutex>(M, AtomicCounts);

impl<M: RawMutex> EmbassyLock<M> {
    /// A new, unlocked lock.
    pub const fn new() -> Self {
        Self(M::INIT, AtomicCounts::new())
    }

    /// The raw mutex inside.
    pub const fn raw(&self) -> &M {
        &self.0
    }
}

impl<M: RawMutex> Default for EmbassyLock<M> {
    fn default() -> Self {
        Self::new()
    }
}

impl<M: RawMutex> ConstInit for EmbassyLock<M> {
    const INIT: Self = Self::new();
}

impl<M: RawMutex> fmt::Debug for EmbassyLock<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EmbassyLock<")?;
        f.write_str(core::any::type_name::<M>())?;
        f.write_str(">")
    }
}

// SAFETY: core's four promises, one by one.
// 1. Mutual exclusion: `RawMutex` is an `unsafe trait` whose contract is
//    that no other thread can lock the mutex while a closure holds it. The
//    only gap it allows is re-entry on the same thread, and core never
//    re-enters. Interrupt handlers count as "other threads" for each
//    built-in mutex: `CriticalSectionRawMutex` masks them;
//    `ThreadModeRawMutex` refuses (panics) outside thread mode; and a
//    `NoopRawMutex` compartment is `!Sync`, so no other context can reach
//    it. A critical section and an executor hand-off both give the
//    release/acquire ordering between closures.
// 2. No spurious failure: `try_with_lock` always runs the closure, so it
//    holds even though `raw()` lets safe code lock the same raw mutex.
// 3. Unlock on unwind: `CriticalSectionRawMutex` locks with
//    `critical_section::with`, which restores the section through a drop
//    guard; `ThreadModeRawMutex` and `NoopRawMutex` hold no lock state at
//    all. `RawMutex`'s contract does not bind a third-party mutex to this,
//    but the bare-metal targets embassy runs on abort on panic, so no
//    closure unwinds through one there.
// 4. Panics only before the closure: `ThreadModeRawMutex` panics outside
//    thread mode before it runs `f` and holds nothing; the others do not
//    panic. Core then aborts rather than free a linked waiter
//    (`tests/thread_mode_drop.rs`).
unsafe impl<M: RawMutex> RawLock for EmbassyLock<M> {
    #[inline]
    unsafe fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
        self.0.lock(f)
    }

    #[inline]
    unsafe fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        Some(self.0.lock(f))
    }

    #[inline]
    fn record_rejection(&self) {
        self.1.record_rejection();
    }

    #[inline]
    fn record_timeout(&self) {
        self.1.record_timeout();
    }

    #[inline]
    fn counts(&self) -> Counts {
        self.1.get()
    }
}
