//! Telling a thread that drives tokio futures from one that may block.
//!
//! tokio has no public "may this thread block?" query; its own blocking
//! calls (`blocking_recv`, `Handle::block_on`) consult a private flag and
//! panic. This module reads the one public signal that differs: the
//! cooperative task budget (`tokio::task::coop`).
//!
//! - While a runtime polls a task (on a worker thread, or the future of
//!   `block_on`, on either runtime flavour), the budget is *constrained*:
//!   tokio sets it to 128 units before each poll.
//! - `spawn_blocking` closures and `block_in_place` sections run with the
//!   budget *unconstrained*: tokio calls its internal `coop::stop()` before
//!   running them, precisely because blocking is allowed there.
//! - A thread outside any runtime has no tokio context at all.
//!
//! The budget's value is private, but it can be measured with public calls:
//! take units with `poll_proceed` until `has_budget_remaining` turns false.
//! A constrained budget (an 8-bit count in tokio) runs out within 256
//! units; an unconstrained one never does. The first unit's guard is kept
//! and dropped last, which restores the budget to what it was, so the probe
//! leaves the task exactly as it found it.

use std::task::{Context, Poll, Waker};

use tokio::task::coop;

/// More units than any constrained budget holds: tokio counts it in a `u8`.
const PROBE_LIMIT: usize = 256;

/// Whether the current thread may block without stalling a tokio runtime.
///
/// - `false` while a tokio runtime is polling futures on this thread: a
///   worker thread of the multi-thread runtime, the thread of a
///   current-thread runtime, and the future given to `block_on` (including
///   `#[tokio::main]`'s body).
/// - `true` inside `spawn_blocking` and `block_in_place`, on threads that
///   merely [`enter`](tokio::runtime::Handle::enter) a runtime, and on
///   threads with no tokio runtime at all.
///
/// [`BulkheadExt::blocking_acquire`](crate::BulkheadExt::blocking_acquire)
/// waits only where this returns `true`.
///
/// # Limits
///
/// - A future wrapped in [`tokio::task::unconstrained`] opts out of the
///   budget, so inside it this returns `true` although a runtime thread is
///   polling it. Do not call blocking functions from async code, wrapped or
///   not: use [`acquire_within`](crate::BulkheadExt::acquire_within).
/// - Other executors are invisible: a thread inside
///   `futures::executor::block_on` or an async-std task counts as a plain
///   thread.
/// - The probe relies on tokio's budget being a count below 256, true of
///   every tokio 1.x release so far; the crate's tests check each context
///   above, so a tokio release that changed it would fail them.
/// - Cost: outside a runtime, one thread-local read. Inside one, up to 257
///   pairs of thread-local reads and writes. A blocking acquire pays it
///   only when it has a wait budget.
///
/// # Examples
///
/// ```
/// use bulkhead_tokio::can_block;
///
/// assert!(can_block()); // a plain thread
///
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// rt.block_on(async {
///     assert!(!can_block()); // polling futures: never block here
///     let blocking = tokio::task::spawn_blocking(can_block).await.unwrap();
///     assert!(blocking); // tokio's blocking pool may block
/// });
/// ```
pub fn can_block() -> bool {
    if tokio::runtime::Handle::try_current().is_err() {
        return true;
    }
    !budget_is_constrained()
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
