//! Bounded blocking waits for threads.

use std::cell::RefCell;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use bulkhead_core::{Bulkhead, Error, RawLock, Seat};

use crate::detect::event_loop;
use crate::lock::StdLock;

/// Blocking acquisition for threads.
///
/// A waiting thread queues in the compartment's one waiter list, next to
/// async tasks, and parks. Only the thread that is handed a seat is woken:
/// there is no spinning and no polling loop.
pub trait BlockingAcquire<L: RawLock> {
    /// Takes a seat, waiting at most `max_wait`.
    ///
    /// - `None` (or a zero duration) gives the immediate verdict: fail fast.
    /// - `Some(budget)` waits up to `budget` for a seat.
    ///
    /// If a seat is handed to this thread at the moment the budget runs out,
    /// the thread keeps it rather than reporting a timeout.
    ///
    /// # Never blocks an event loop
    ///
    /// On a thread that is driving an async runtime (see
    /// [`event_loop`](crate::event_loop) for exactly which are detected),
    /// the budget is ignored and the verdict is immediate, as with `None`:
    /// the seat this thread would wait for may be held by a task of the
    /// very loop it would block. Wait from async code with
    /// [`Bulkhead::acquire_within`](crate::Bulkhead::acquire_within), or
    /// from a `spawn_blocking` thread.
    ///
    /// # Errors
    /// [`Error::Full`] (fail fast), [`Error::Timeout`], [`Error::QueueFull`]
    /// or [`Error::Closed`].
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::{BlockingAcquire, Bulkhead, Error};
    ///
    /// let db = Bulkhead::new("database", 1).unwrap();
    /// let seat = db.acquire_blocking(None).unwrap();
    /// // Full, and no wait budget: rejected at once.
    /// assert!(matches!(db.acquire_blocking(None), Err(Error::Full { .. })));
    /// // Full, with a budget: waits 10 ms, then gives up.
    /// let err = db.acquire_blocking(Some(Duration::from_millis(10))).unwrap_err();
    /// assert!(matches!(err, Error::Timeout { .. }));
    /// drop(seat);
    /// ```
    fn acquire_blocking(&self, max_wait: Option<Duration>) -> Result<Seat<'_, L>, Error>;
}

impl<L: RawLock> BlockingAcquire<L> for Bulkhead<L> {
    fn acquire_blocking(&self, max_wait: Option<Duration>) -> Result<Seat<'_, L>, Error> {
        let budget = match max_wait {
            Some(budget) if !budget.is_zero() && event_loop().is_none() => budget,
            _ => return self.try_acquire(),
        };
        // A budget too large to add to `now` is a wait with no deadline.
        let deadline = Instant::now().checked_add(budget);
        let waker = thread_waker();
        let mut cx = Context::from_waker(&waker);
        let mut acquire = pin!(self.acquire());
        loop {
            if let Poll::Ready(result) = acquire.as_mut().poll(&mut cx) {
                return result;
            }
            match deadline {
                None => thread::park(),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return acquire.as_mut().time_out(budget);
                    }
                    thread::park_timeout(deadline - now);
                }
            }
        }
    }
}

/// The std compartment: as core's, and the rejection is timed.
impl BlockingAcquire<StdLock> for crate::Bulkhead {
    fn acquire_blocking(&self, max_wait: Option<Duration>) -> Result<Seat<'_, StdLock>, Error> {
        self.core()
            .acquire_blocking(max_wait)
            .map_err(|e| self.note(e))
    }
}

/// Unparks the thread it was made on.
struct ThreadWaker(Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

thread_local! {
    /// One waker per thread, made on its first wait, so that a wait
    /// allocates nothing: cloning it is a reference-count increment. The
    /// waker owns the thread handle and never points into the waiting
    /// stack frame, so a drainer may wake it after the wait has ended.
    static THREAD_WAKER: RefCell<Option<Waker>> = const { RefCell::new(None) };
}

fn thread_waker() -> Waker {
    THREAD_WAKER.with(|cell| {
        cell.borrow_mut()
            .get_or_insert_with(|| Waker::from(Arc::new(ThreadWaker(thread::current()))))
            .clone()
    })
}
