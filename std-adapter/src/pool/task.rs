//! [`TaskHandle`]: the result of a thread-pool task, for a blocking thread
//! or for async code.

use std::fmt;
use std::panic;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::Duration;

use super::error::PoolError;

/// What a finished task left: its value, its panic, or why it has none.
type Verdict<T> = Result<thread::Result<T>, PoolError>;

enum State<T> {
    Pending(Option<Waker>),
    Done(Verdict<T>),
    Taken,
}

/// The one-shot meeting point of a task and its handle. The first verdict
/// wins: a result that arrives after a timeout is dropped, and vice versa.
pub(crate) struct Slot<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
    name: &'static str,
}

impl<T> Slot<T> {
    pub(crate) fn new(name: &'static str) -> Self {
        Self {
            state: Mutex::new(State::Pending(None)),
            ready: Condvar::new(),
            name,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stores `verdict` if none is stored yet; wakes the waiter. Returns
    /// whether it was stored. Whatever is dropped is dropped unlocked.
    fn settle(&self, verdict: Verdict<T>) -> bool {
        self.settle_then(verdict, || {})
    }

    /// As `settle`, running `stored` once the verdict is in place but
    /// before the waiter is woken, so that whatever `stored` records (a
    /// counter) is visible to a waiter that sees the verdict.
    fn settle_then(&self, verdict: Verdict<T>, stored: impl FnOnce()) -> bool {
        let mut state = self.lock();
        let State::Pending(waker) = &mut *state else {
            drop(state);
            drop(verdict);
            return false;
        };
        let waker = waker.take();
        *state = State::Done(verdict);
        stored();
        drop(state);
        self.ready.notify_all();
        if let Some(waker) = waker {
            waker.wake();
        }
        true
    }
}

/// A slot whose task type is erased, for the deadline thread.
pub(crate) trait Expire: Send + Sync {
    /// Settles the slot with a timeout, counting it in `timed_out` before
    /// the waiter can see it; whether that was the verdict.
    fn expire(&self, timeout: Duration, timed_out: &AtomicUsize) -> bool;
}

impl<T: Send> Expire for Slot<T> {
    fn expire(&self, timeout: Duration, timed_out: &AtomicUsize) -> bool {
        let verdict = Err(PoolError::Timeout {
            name: self.name,
            timeout,
        });
        self.settle_then(verdict, || {
            timed_out.fetch_add(1, Ordering::Relaxed);
        })
    }
}

/// Travels with the job. Dropped without completing (the job was
/// cancelled, or dropped with the queue), it settles the slot as
/// cancelled, so no waiter ever hangs.
pub(crate) struct Completer<T> {
    slot: Option<Arc<Slot<T>>>,
}

impl<T> Completer<T> {
    pub(crate) fn new(slot: Arc<Slot<T>>) -> Self {
        Self { slot: Some(slot) }
    }

    pub(crate) fn complete(mut self, result: thread::Result<T>) {
        if let Some(slot) = self.slot.take() {
            slot.settle(Ok(result));
        }
    }
}

impl<T> Drop for Completer<T> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            let name = slot.name;
            slot.settle(Err(PoolError::Cancelled { name }));
        }
    }
}

/// The result of a task submitted to a
/// [`ThreadPoolBulkhead`](crate::ThreadPoolBulkhead).
///
/// Wait for it from a thread with [`join`](Self::join), or `.await` it
/// from async code on any runtime. Dropping it detaches the task: it still
/// runs, and its result is dropped.
///
/// It always resolves: to the task's value, to [`PoolError::Timeout`] at
/// the pool's execution timeout, or to [`PoolError::Cancelled`] if the task
/// can no longer run. A panic inside the task is resumed, unchanged, in the
/// thread or task that joins.
///
/// # Cancel safety
/// Dropping the handle, or a `.await` on it, never cancels the task: the
/// task keeps its place, runs, gives its seat back when it finishes, and
/// its value is dropped.
///
/// # Memory ordering
/// Everything the task did happens-before [`join`](Self::join) or the
/// `.await` returns its value (the value passes through a mutex). The
/// task's seat is ordered as every seat (see
/// [`Bulkhead`](bulkhead_core::Bulkhead#memory-ordering)). A
/// [`PoolError::Timeout`] promises nothing about the task, which may still
/// be running.
///
/// ```
/// use bulkhead_std::{PoolConfig, ThreadPoolBulkhead};
///
/// let pool = ThreadPoolBulkhead::new(PoolConfig::new("reports", 2).queue(4))?;
/// let handle = pool.submit(|| 6 * 7)?;
/// assert_eq!(handle.join(), Ok(42));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "dropping a TaskHandle detaches the task and drops its result"]
pub struct TaskHandle<T> {
    slot: Arc<Slot<T>>,
}

impl<T> TaskHandle<T> {
    pub(crate) fn new(slot: Arc<Slot<T>>) -> Self {
        Self { slot }
    }

    /// Blocks this thread until the task's verdict.
    ///
    /// Do not call it on a thread that drives an event loop; `.await` the
    /// handle there instead.
    ///
    /// # Errors
    /// [`PoolError::Timeout`] or [`PoolError::Cancelled`].
    ///
    /// # Panics
    /// Resumes the task's panic, if it panicked.
    pub fn join(self) -> Result<T, PoolError> {
        let mut state = self.slot.lock();
        while matches!(*state, State::Pending(_)) {
            state = self
                .slot
                .ready
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        let verdict = take(&mut state);
        drop(state);
        unwrap(verdict)
    }

    /// Whether the verdict is in (the task finished, timed out or was
    /// cancelled).
    pub fn is_finished(&self) -> bool {
        !matches!(*self.slot.lock(), State::Pending(_))
    }
}

fn take<T>(state: &mut State<T>) -> Verdict<T> {
    match std::mem::replace(state, State::Taken) {
        State::Done(verdict) => verdict,
        _ => panic!("`TaskHandle` polled after it completed"),
    }
}

fn unwrap<T>(verdict: Verdict<T>) -> Result<T, PoolError> {
    match verdict {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(payload)) => panic::resume_unwind(payload),
        Err(e) => Err(e),
    }
}

impl<T> Future for TaskHandle<T> {
    type Output = Result<T, PoolError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.slot.lock();
        match &mut *state {
            State::Pending(waker) => {
                match waker {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => {
                        let old = waker.replace(cx.waker().clone());
                        drop(state);
                        drop(old);
                    }
                }
                Poll::Pending
            }
            _ => {
                let verdict = take(&mut state);
                drop(state);
                Poll::Ready(unwrap(verdict))
            }
        }
    }
}

impl<T> fmt::Debug for TaskHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskHandle")
            .field("pool", &self.slot.name)
            .field("finished", &self.is_finished())
            .finish()
    }
}
