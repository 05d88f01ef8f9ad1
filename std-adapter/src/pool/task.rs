//! [`TaskHandle`]: the result of a thread-pool task, for a blocking thread
//! or for async code.

use std::fmt;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::Duration;

use bulkhead_core::Name;

use super::error::{PoolError, panic_message};
use crate::Bulkhead;

/// A task's seat, which keeps the pool's compartment alive.
pub(crate) type PoolSeat = bulkhead_core::OwnedSeat<Arc<Bulkhead>>;

/// What a finished task left: its value, or why it has none.
type Verdict<T> = Result<T, PoolError>;

/// A task's life, as its handle sees it:
///
/// | from | event | to |
/// |---|---|---|
/// | `Pending { started: false }` | a worker picks the job | `Pending { started: true }` |
/// | `Pending { started: false }` | timeout, cancel, shutdown | `Done(Err)`; the seat is given back at once and the worker later skips the job |
/// | `Pending { started: true }` | the task returns or panics | `Done` |
/// | `Pending { started: true }` | timeout | `Done(Err(Timeout))`; the late result is dropped |
/// | `Done` | `join` or `.await` | `Taken` |
enum State<T> {
    Pending {
        waker: Option<Waker>,
        started: bool,
        /// The task's seat until a worker starts it.
        seat: Option<PoolSeat>,
    },
    Done(Verdict<T>),
    Taken,
}

/// The one-shot meeting point of a task and its handle. The first verdict
/// wins: a result that arrives after a timeout is dropped, and vice versa.
///
/// The slot keeps the task's seat until a worker starts the task, so that
/// a verdict given before that (a timeout, a cancel) gives the seat back at
/// once, not when a worker later reaches and skips the job.
pub(crate) struct Slot<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
    name: Name,
}

/// Which slots a verdict may settle.
#[derive(PartialEq)]
enum Settle {
    /// Any slot still pending.
    Pending,
    /// Only a slot whose task has not started (a cancel).
    Unstarted,
}

impl<T> Slot<T> {
    pub(crate) fn new(name: Name, seat: PoolSeat) -> Self {
        Self {
            state: Mutex::new(State::Pending {
                waker: None,
                started: false,
                seat: Some(seat),
            }),
            ready: Condvar::new(),
            name,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stores `verdict` if none is stored yet; gives back the seat of a
    /// task that never started, then wakes the waiter. Returns whether it
    /// was stored. Whatever is dropped is dropped unlocked.
    fn settle(&self, verdict: Verdict<T>) -> bool {
        self.settle_then(verdict, Settle::Pending, || {})
    }

    /// As `settle`, for the slots `which` selects, running `stored` once
    /// the verdict is in place but before the waiter is woken, so that
    /// whatever `stored` records (a counter) is visible to a waiter that
    /// sees the verdict. Checked and stored in one lock section, so a
    /// worker starting the task at that moment either runs it or skips it,
    /// never both.
    fn settle_then(&self, verdict: Verdict<T>, which: Settle, stored: impl FnOnce()) -> bool {
        let mut state = self.lock();
        let (waker, seat) = match &mut *state {
            State::Pending { started, .. } if *started && which == Settle::Unstarted => {
                drop(state);
                drop(verdict);
                return false;
            }
            State::Pending { waker, seat, .. } => (waker.take(), seat.take()),
            _ => {
                drop(state);
                drop(verdict);
                return false;
            }
        };
        *state = State::Done(verdict);
        stored();
        drop(state);
        // Seat first, so a caller woken by the verdict sees it free.
        drop(seat);
        self.ready.notify_all();
        if let Some(waker) = waker {
            waker.wake();
        }
        true
    }

    /// A worker is about to run the task: returns its seat if it should
    /// run, `None` if a verdict came first (a timeout or a cancel while it
    /// was queued), in which case the worker skips it.
    fn start(&self) -> Option<PoolSeat> {
        match &mut *self.lock() {
            State::Pending { started, seat, .. } if !*started => {
                *started = true;
                seat.take()
            }
            _ => None,
        }
    }

    /// Settles a task that has not started as cancelled; whether it did.
    fn cancel(&self) -> bool {
        let verdict = Err(PoolError::Cancelled {
            name: self.name.clone(),
        });
        self.settle_then(verdict, Settle::Unstarted, || {})
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
            name: self.name.clone(),
            timeout,
        });
        self.settle_then(verdict, Settle::Pending, || {
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

    /// The task's seat if it should run (see `Slot::start`).
    pub(crate) fn start(&self) -> Option<PoolSeat> {
        self.slot.as_ref().and_then(|slot| slot.start())
    }

    pub(crate) fn complete(mut self, result: thread::Result<T>) {
        if let Some(slot) = self.slot.take() {
            let verdict = result.map_err(|payload| PoolError::Panicked {
                name: slot.name.clone(),
                message: panic_message(&*payload),
            });
            slot.settle(verdict);
        }
    }
}

impl<T> Drop for Completer<T> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            let name = slot.name.clone();
            slot.settle(Err(PoolError::Cancelled { name }));
        }
    }
}

/// The result of a task submitted to a
/// [`ThreadPoolBulkhead`](crate::ThreadPoolBulkhead): joinable from a
/// thread and a [`Future`] for async code.
///
/// Wait for it from a thread with [`join`](Self::join), or `.await` it
/// from async code on any runtime (it needs no runtime of its own: the
/// pool's threads settle it). Dropping it detaches the task: it still
/// runs, and its result is dropped; [`cancel`](Self::cancel) it first to
/// skip a task that has not started.
///
/// It always resolves: to the task's value, to [`PoolError::Timeout`] at
/// the pool's execution timeout, to [`PoolError::Panicked`] with the
/// panic's message, or to [`PoolError::Cancelled`] if the task can no
/// longer run.
///
/// # Cancel safety
/// Dropping the handle, or a `.await` on it, never cancels the task: the
/// task keeps its place, runs, gives its seat back when it finishes, and
/// its value is dropped. To give up on a task that has not started, call
/// [`cancel`](Self::cancel) (a `tokio::select!` branch that loses can do
/// it through a reference: `(&mut handle).await`, then `handle.cancel()`).
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
/// use bulkhead_std::{PoolError, ThreadPoolBulkhead};
///
/// let pool = ThreadPoolBulkhead::builder("reports").max_workers(2).queue_capacity(4).build()?;
/// let handle = pool.spawn(|| 6 * 7)?;
/// assert_eq!(handle.join(), Ok(42));
/// let panicked = pool.spawn(|| -> u32 { panic!("bad input") })?.join();
/// assert!(matches!(panicked, Err(PoolError::Panicked { ref message, .. }) if message == "bad input"));
/// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
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
    /// [`PoolError::Timeout`], [`PoolError::Panicked`] or
    /// [`PoolError::Cancelled`].
    pub fn join(self) -> Result<T, PoolError> {
        let mut state = self.slot.lock();
        while matches!(*state, State::Pending { .. }) {
            state = self
                .slot
                .ready
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        let verdict = take(&mut state);
        drop(state);
        verdict
    }

    /// Whether the verdict is in (the task finished, timed out or was
    /// cancelled).
    pub fn is_finished(&self) -> bool {
        !matches!(*self.slot.lock(), State::Pending { .. })
    }

    /// Cancels the task if no worker has started it: the worker will skip
    /// it, its closure is dropped unrun, its seat is given back, and the
    /// handle resolves to [`PoolError::Cancelled`]. Returns whether it was
    /// cancelled; a task already running or finished is not affected.
    pub fn cancel(&self) -> bool {
        self.slot.cancel()
    }
}

fn take<T>(state: &mut State<T>) -> Verdict<T> {
    match std::mem::replace(state, State::Taken) {
        State::Done(verdict) => verdict,
        _ => panic!("`TaskHandle` polled after it completed"),
    }
}

impl<T> Future for TaskHandle<T> {
    type Output = Result<T, PoolError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.slot.lock();
        match &mut *state {
            State::Pending { waker, .. } => {
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
                Poll::Ready(verdict)
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
