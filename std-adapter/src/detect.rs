//! Which async runtime, if any, is driving the current thread.
//!
//! A blocking acquire made on such a thread gives the immediate verdict
//! instead of parking: the seat it would wait for may be held by a task of
//! the very event loop it would block, which then could never release it.
//!
//! This is the one place in the workspace that decides it: everything built
//! on [`BlockingAcquire`] (bulkhead-tokio re-exports it) asks
//! [`event_loop`].
//!
//! [`BlockingAcquire`]: crate::BlockingAcquire

use std::fmt;

/// An async runtime found driving the current thread by [`event_loop`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventLoop {
    /// A tokio runtime: a worker thread of a multi-thread runtime, the
    /// thread that drives a current-thread runtime or a `LocalRuntime`, or
    /// the future given to any runtime's `block_on`.
    Tokio,
    /// An async-std task: inside `async_std::task::spawn` or
    /// `async_std::task::block_on`.
    AsyncStd,
}

impl fmt::Display for EventLoop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EventLoop::Tokio => "a tokio runtime",
            EventLoop::AsyncStd => "an async-std task",
        })
    }
}

/// The event loop driving the current thread, if one of the detected kinds
/// is.
///
/// # The rule
///
/// A thread drives an event loop if **any** of these signals says so. Each
/// signal errs only towards "may block" in the cases listed under
/// *not detected*, so taking them together never blocks a thread that one
/// of them recognises.
///
/// | runtime | feature | signal | detected | not detected |
/// |---|---|---|---|---|
/// | tokio ≥ 1.54 | `tokio` | `tokio::runtime::worker_index()` is `Some` | worker threads of a multi-thread runtime, also inside `tokio::task::unconstrained`; the thread driving a current-thread runtime or `LocalRuntime` (inside `block_on`, including its `LocalSet`s) | the thread inside a multi-thread runtime's `block_on`; `block_in_place` sections (tokio leaves the runtime there) |
/// | tokio ≥ 1.54 | `tokio` | a runtime context exists and the task's coop budget is constrained (`tokio::task::coop`) | the future given to `block_on` on either flavour, `#[tokio::main]`'s body and `Handle::block_on` included; every task a runtime polls | `spawn_blocking` and `block_in_place` sections and `unconstrained` futures (tokio lifts the budget there) |
/// | async-std 1.13 | `async-std` | `async_std::task::try_current()` is `Some` | code inside an async-std task (`task::spawn`, `spawn_local`, `block_on`) | `spawn_blocking` closures |
///
/// Never detected, so a blocking acquire there waits: tokio's
/// `spawn_blocking` threads and `block_in_place` sections and async-std's
/// `spawn_blocking` closures (they may block: that is what they are for),
/// threads that merely entered a runtime with `Handle::enter`, and plain
/// threads.
///
/// Either tokio signal alone would be less precise: the worker index misses
/// the body of a multi-thread `block_on` (so of a default
/// `#[tokio::main]`), and the budget misses `unconstrained` futures, where
/// a wait would block the runtime.
///
/// Limits, by design of the signals:
/// - a future wrapped in `tokio::task::unconstrained` inside a multi-thread
///   runtime's `block_on` is seen by neither tokio signal;
/// - smol, `futures::executor`, `pollster` and other executors expose no
///   "am I inside a task" signal and are **not** detected: never make a
///   blocking acquire with a wait budget from their tasks;
/// - without the `tokio` / `async-std` feature, that runtime is not
///   detected at all.
///
/// # Cost
///
/// A thread-local read per signal. Only on a thread that has a tokio
/// context but no worker index (a multi-thread `block_on` caller, a
/// `spawn_blocking` thread or `block_in_place` section, an entered thread)
/// does the budget probe run: it spends and
/// then restores the budget, up to 257 pairs of thread-local reads and
/// writes, leaving the task's budget exactly as it found it. A blocking
/// acquire asks only when it has a wait budget.
///
/// The probe relies on tokio's budget being a count below 256, true of
/// every tokio 1.x release so far; the tests check each context above, so
/// a tokio release that changed it would fail them.
///
/// # Examples
///
/// ```
/// // A plain thread runs no event loop.
/// assert_eq!(bulkhead_std::event_loop(), None);
/// ```
#[must_use]
pub fn event_loop() -> Option<EventLoop> {
    #[cfg(feature = "tokio")]
    if tokio_rt::drives_tokio() {
        return Some(EventLoop::Tokio);
    }
    #[cfg(feature = "async-std")]
    if async_std::task::try_current().is_some() {
        return Some(EventLoop::AsyncStd);
    }
    None
}

#[cfg(feature = "tokio")]
mod tokio_rt {
    //! The two tokio signals.
    //!
    //! tokio has no public "may this thread block?" query; its own
    //! blocking calls (`blocking_recv`, `Handle::block_on`) consult a
    //! private flag and panic. Two public signals come close:
    //!
    //! - `worker_index()` names the threads that run the scheduler;
    //! - the cooperative task budget: while a runtime polls a task (on a
    //!   worker, or the future of `block_on` on either flavour), tokio sets
    //!   it to 128 units before each poll; `spawn_blocking` closures,
    //!   `block_in_place` sections and `unconstrained` futures run with it
    //!   unconstrained.
    //!
    //! The budget's value is private, but it can be measured with public
    //! calls: take units with `poll_proceed` until `has_budget_remaining`
    //! turns false. A constrained budget (an 8-bit count in tokio) runs out
    //! within 256 units; an unconstrained one never does. The first unit's
    //! guard is kept and dropped last, which restores the budget to what it
    //! was, so the probe leaves the task exactly as it found it.

    use std::task::{Context, Poll, Waker};

    use tokio::task::coop;

    /// More units than any constrained budget holds: tokio counts it in a
    /// `u8`.
    const PROBE_LIMIT: usize = 256;

    pub(super) fn drives_tokio() -> bool {
        if tokio::runtime::worker_index().is_some() {
            return true;
        }
        tokio::runtime::Handle::try_current().is_ok() && budget_is_constrained()
    }

    /// Measures the coop budget without changing it (see the module docs).
    fn budget_is_constrained() -> bool {
        if !coop::has_budget_remaining() {
            return true;
        }
        let mut cx = Context::from_waker(Waker::noop());
        // Dropped last, without `made_progress`: restores the budget to its
        // value before the probe.
        let Poll::Ready(_restore) = coop::poll_proceed(&mut cx) else {
            return true;
        };
        for _ in 0..PROBE_LIMIT {
            if !coop::has_budget_remaining() {
                return true;
            }
            match coop::poll_proceed(&mut cx) {
                // Keep the unit spent; `_restore` gives them all back.
                Poll::Ready(unit) => unit.made_progress(),
                Poll::Pending => return true,
            }
        }
        false
    }
}
