//! Bounded blocking waits for threads.

use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::thread;
use std::time::{Duration, Instant};

use bulkhead_core::{Bulkhead, Error, MaxWait, Name, OwnedSeat, RawLock, Seat};

use crate::detect::{EventLoop, event_loop};
use crate::park::with_thread_waker;
use crate::wait_timer::{Named, Queues, WaitTimer};

#[cfg(feature = "partitions")]
mod partition;
#[cfg(feature = "partitions")]
pub use partition::BlockingAcquirePartition;

/// Blocking acquisition for threads, and owned seats, for any
/// [`Bulkhead<L>`](bulkhead_core::Bulkhead) (the std
/// [`Bulkhead`](crate::Bulkhead) included).
///
/// A waiting thread queues in the compartment's one waiter list, next to
/// async tasks, and parks. Only the thread that is handed a seat is woken:
/// there is no spinning and no polling loop.
pub trait BlockingAcquire<L: RawLock> {
    /// Takes a seat, waiting at most `max_wait`.
    ///
    /// `max_wait` is a [`MaxWait`], or a [`Duration`](std::time::Duration):
    ///
    /// - [`MaxWait::FailFast`] (or `Duration::ZERO`) gives the immediate
    ///   verdict: fail fast.
    /// - a duration, or [`MaxWait::UpTo`], waits up to that budget.
    /// - [`MaxWait::Forever`] waits with no time limit.
    ///
    /// If a seat is handed to this thread at the moment the budget runs out,
    /// the thread keeps it rather than reporting a timeout.
    ///
    /// # Never blocks an event loop
    ///
    /// On a thread that is driving an async runtime (see
    /// [`event_loop`](crate::event_loop) for exactly which are detected),
    /// the budget is ignored and the verdict is immediate, as with
    /// `MaxWait::FailFast`:
    /// the seat this thread would wait for may be held by a task of the
    /// very loop it would block. A full compartment then answers
    /// [`Error::FullOnEventLoop`] (not `Full`), whose message says so, and
    /// the first such verdict of each compartment logs a `tracing`
    /// warning. Wait from async code with
    /// core's `acquire_timeout`, [`Run::run_timeout`](crate::Run::run_timeout) (or
    /// bulkhead-tokio's `acquire_within`), or from a `spawn_blocking`
    /// thread.
    ///
    /// # Cancel safety
    /// Not applicable: the call blocks until it has a verdict and cannot be
    /// cancelled from outside; bound it with `max_wait`. The wait lives in
    /// this call's stack frame, so if the thread unwinds it leaves the line
    /// (a seat handed to it at that moment goes to the next waiter), and
    /// the returned [`Seat`] gives its seat back when dropped, also while a
    /// panic unwinds.
    ///
    /// # Memory ordering
    /// As for every seat: everything the seat's previous holder did before
    /// giving it back (on any thread or task) happens-before everything this
    /// thread does after the call returns `Ok`. The precise orderings are
    /// in [`Bulkhead`](bulkhead_core::Bulkhead#memory-ordering).
    ///
    /// # Errors
    /// [`Error::Full`] (fail fast), [`Error::Timeout`], [`Error::QueueFull`],
    /// [`Error::Closed`], or [`Error::FullOnEventLoop`] (a wait budget on
    /// an event-loop thread).
    ///
    /// # Examples
    /// ```
    /// use bulkhead_std::MaxWait;
    /// use std::time::Duration;
    /// use bulkhead_std::{BlockingAcquire, Bulkhead, Error};
    ///
    /// let db = Bulkhead::new("database", 1).unwrap();
    /// let seat = db.acquire_blocking(MaxWait::FailFast).unwrap();
    /// // Full, and no wait budget: rejected at once.
    /// assert!(matches!(db.acquire_blocking(MaxWait::FailFast), Err(Error::Full { .. })));
    /// // Full, with a budget: waits 10 ms, then gives up.
    /// let err = db.acquire_blocking(Duration::from_millis(10)).unwrap_err();
    /// assert!(matches!(err, Error::Timeout { .. }));
    /// drop(seat);
    /// ```
    fn acquire_blocking(&self, max_wait: impl Into<MaxWait>) -> Result<Seat<'_, L>, Error>;

    /// Takes a seat if one is free right now, as core's `try_acquire`,
    /// but the seat keeps a clone of the `Arc` (made only on success), so
    /// it may move into another thread or task. Core's
    /// [`OwnedSeat::try_acquire`] does the same for any handle.
    ///
    /// # Errors
    /// [`Error::Full`] or [`Error::Closed`].
    ///
    /// # Examples
    /// ```
    /// use std::sync::Arc;
    /// use bulkhead_std::{BlockingAcquire, Bulkhead};
    ///
    /// let db = Arc::new(Bulkhead::new("db", 1)?);
    /// let seat = db.try_acquire_owned()?;
    /// assert!(db.try_acquire_owned().is_err());
    /// std::thread::spawn(move || drop(seat)).join().unwrap();
    /// assert_eq!(db.state().active, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn try_acquire_owned(self: &Arc<Self>) -> Result<OwnedSeat<Arc<Bulkhead<L>>>, Error>;

    /// As [`acquire_blocking`](Self::acquire_blocking), but the seat keeps a
    /// clone of the `Arc` (made only on success).
    ///
    /// # Errors
    /// As [`acquire_blocking`](Self::acquire_blocking).
    ///
    /// # Examples
    /// ```
    /// use std::{sync::Arc, time::Duration};
    /// use bulkhead_std::{BlockingAcquire, Bulkhead};
    ///
    /// let db = Arc::new(Bulkhead::new("db", 1)?);
    /// let seat = db.acquire_blocking_owned(Duration::from_millis(10))?;
    /// let worker = std::thread::spawn(move || {
    ///     let _seat = seat; // held by the worker thread
    /// });
    /// worker.join().unwrap();
    /// assert_eq!(db.state().active, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn acquire_blocking_owned(
        self: &Arc<Self>,
        max_wait: impl Into<MaxWait>,
    ) -> Result<OwnedSeat<Arc<Bulkhead<L>>>, Error>;

    /// Takes `weight` seats at once, as one seat of that weight, waiting
    /// at most `max_wait`: [`acquire_blocking`](Self::acquire_blocking)
    /// for a caller that counts as `weight` callers (a bulk import that
    /// holds four connections). It gets all `weight` seats or none, so two
    /// heavy callers can never deadlock each holding part of what they
    /// need. The seat gives them all back when dropped;
    /// [`Seat::split`] gives some back early.
    ///
    /// The budget, the event-loop rule and the hand-off at the deadline
    /// are those of [`acquire_blocking`](Self::acquire_blocking). In FIFO
    /// order (core's [`QueueOrder::Fifo`](bulkhead_core::QueueOrder::Fifo)
    /// with [`Admission::Fifo`](bulkhead_core::Admission::Fifo), the
    /// defaults) a heavy waiter at the head of the line is never passed by
    /// a lighter caller behind it: seats freed while it waits are kept for
    /// it until it has all `weight`. `acquire_many_blocking(1, …)` is
    /// `acquire_blocking(…)`.
    ///
    /// # Errors
    /// Those of [`acquire_blocking`](Self::acquire_blocking), and:
    /// - [`Error::ZeroWeight`] for `weight == 0` (not counted as a
    ///   rejection);
    /// - [`Error::WeightAboveLimit`] (counted in `State::rejected`) if
    ///   `weight` is above `max_concurrent` when it asks, or the limit
    ///   shrinks below it while it waits: no wait could help. A limit of 0
    ///   is a pause, not a refusal: the caller waits its budget.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::{BlockingAcquire, Bulkhead, Error};
    ///
    /// let db = Bulkhead::new("database", 4)?;
    /// let import = db.acquire_many_blocking(3, Duration::from_millis(10))?;
    /// assert_eq!((import.weight(), db.state().active), (3, 3));
    /// // One seat left: a caller of weight 2 waits its budget, then gives up.
    /// let err = db.acquire_many_blocking(2, Duration::from_millis(10)).unwrap_err();
    /// assert!(matches!(err, Error::Timeout { .. }));
    /// // More seats than the compartment has: refused at once, whatever the budget.
    /// let err = db.acquire_many_blocking(5, Duration::from_secs(60)).unwrap_err();
    /// assert!(matches!(err, Error::WeightAboveLimit { weight: 5, max_concurrent: 4, .. }));
    /// drop(import);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn acquire_many_blocking(
        &self,
        weight: usize,
        max_wait: impl Into<MaxWait>,
    ) -> Result<Seat<'_, L>, Error>;

    /// As [`try_acquire_owned`](Self::try_acquire_owned), for `weight`
    /// seats at once, as core's `try_acquire_many`.
    ///
    /// # Errors
    /// [`Error::Full`], [`Error::Closed`], [`Error::ZeroWeight`] or
    /// [`Error::WeightAboveLimit`], as core's `try_acquire_many`.
    ///
    /// # Examples
    /// ```
    /// use std::sync::Arc;
    /// use bulkhead_std::{BlockingAcquire, Bulkhead};
    ///
    /// let gpu = Arc::new(Bulkhead::new("gpu", 4)?);
    /// let seat = gpu.try_acquire_many_owned(3)?;
    /// assert!(gpu.try_acquire_many_owned(2).is_err());
    /// std::thread::spawn(move || drop(seat)).join().unwrap();
    /// assert_eq!(gpu.state().active, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn try_acquire_many_owned(
        self: &Arc<Self>,
        weight: usize,
    ) -> Result<OwnedSeat<Arc<Bulkhead<L>>>, Error>;

    /// As [`acquire_many_blocking`](Self::acquire_many_blocking), but the
    /// seat keeps a clone of the `Arc` (made only on success), so it may
    /// move to another thread.
    ///
    /// # Errors
    /// As [`acquire_many_blocking`](Self::acquire_many_blocking).
    ///
    /// # Examples
    /// ```
    /// use std::{sync::Arc, time::Duration};
    /// use bulkhead_std::{BlockingAcquire, Bulkhead};
    ///
    /// let db = Arc::new(Bulkhead::new("db", 4)?);
    /// let mut seat = db.acquire_many_blocking_owned(3, Duration::from_millis(10))?;
    /// let one = seat.split(1)?; // give one seat back early, keep two
    /// drop(one);
    /// let worker = std::thread::spawn(move || seat.weight());
    /// assert_eq!(worker.join().unwrap(), 2);
    /// assert_eq!(db.state().active, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn acquire_many_blocking_owned(
        self: &Arc<Self>,
        weight: usize,
        max_wait: impl Into<MaxWait>,
    ) -> Result<OwnedSeat<Arc<Bulkhead<L>>>, Error>;
}

impl<L: RawLock> BlockingAcquire<L> for Bulkhead<L> {
    fn acquire_blocking(&self, max_wait: impl Into<MaxWait>) -> Result<Seat<'_, L>, Error> {
        wait(self, 1, max_wait.into())
    }

    fn try_acquire_owned(self: &Arc<Self>) -> Result<OwnedSeat<Arc<Bulkhead<L>>>, Error> {
        let seat = self.try_acquire()?;
        Ok(OwnedSeat::from_seat(seat, Arc::clone(self)))
    }

    fn acquire_blocking_owned(
        self: &Arc<Self>,
        max_wait: impl Into<MaxWait>,
    ) -> Result<OwnedSeat<Arc<Bulkhead<L>>>, Error> {
        let seat = self.acquire_blocking(max_wait)?;
        Ok(OwnedSeat::from_seat(seat, Arc::clone(self)))
    }

    fn acquire_many_blocking(
        &self,
        weight: usize,
        max_wait: impl Into<MaxWait>,
    ) -> Result<Seat<'_, L>, Error> {
        wait(self, weight, max_wait.into())
    }

    fn try_acquire_many_owned(
        self: &Arc<Self>,
        weight: usize,
    ) -> Result<OwnedSeat<Arc<Bulkhead<L>>>, Error> {
        OwnedSeat::try_acquire_many(Arc::clone(self), weight)
    }

    fn acquire_many_blocking_owned(
        self: &Arc<Self>,
        weight: usize,
        max_wait: impl Into<MaxWait>,
    ) -> Result<OwnedSeat<Arc<Bulkhead<L>>>, Error> {
        let seat = self.acquire_many_blocking(weight, max_wait)?;
        Ok(OwnedSeat::from_seat(seat, Arc::clone(self)))
    }
}

/// The blocking wait for `weight` seats at once (1 for the one-seat
/// forms, which core serves exactly as its one-seat calls), not generic
/// over the budget's type.
#[inline]
fn wait<L: RawLock>(
    bulkhead: &Bulkhead<L>,
    weight: usize,
    max_wait: MaxWait,
) -> Result<Seat<'_, L>, Error> {
    if max_wait.is_fail_fast() {
        return bulkhead.try_acquire_many(weight);
    }
    let acquire = pin!(bulkhead.acquire_many(weight));
    block(acquire, max_wait, bulkhead, |_, event_loop| {
        bulkhead
            .try_acquire_many(weight)
            .map_err(|e| could_not_wait(bulkhead, e, event_loop))
    })
}

/// A pinned wait for a seat that [`block`] drives on a thread: core's
/// [`Acquire`](bulkhead_core::Acquire) and, with partitions, its
/// `AcquirePartition`. Both decide `abandon` and `time_out` in one step
/// under the compartment's lock, which is what makes the deadline safe.
pub(crate) trait BlockingWait: Future<Output = Result<Self::Seat, Error>> + Queues {
    /// What the wait resolves to.
    type Seat;

    /// Leaves the line: the seat if one had been handed over.
    fn abandon(self: Pin<&mut Self>) -> Option<Self::Seat>;

    /// Leaves the line after the budget ran out, counting the timeout.
    fn time_out(self: Pin<&mut Self>, budget: Duration) -> Result<Self::Seat, Error>;
}

impl<'a, L: RawLock> BlockingWait for bulkhead_core::Acquire<'a, L> {
    type Seat = Seat<'a, L>;

    fn abandon(self: Pin<&mut Self>) -> Option<Seat<'a, L>> {
        bulkhead_core::Acquire::abandon(self)
    }

    fn time_out(self: Pin<&mut Self>, budget: Duration) -> Result<Seat<'a, L>, Error> {
        bulkhead_core::Acquire::time_out(self, budget)
    }
}

/// Drives `acquire` (not yet polled; the caller has handled a fail-fast
/// budget) on this thread until it has a verdict or `max_wait` runs out,
/// timing a wait that queued under `compartment`'s name. On an event-loop
/// thread it leaves the line at once and answers `immediate` with the
/// abandoned wait (unless a seat was handed over meanwhile).
#[inline]
pub(crate) fn block<W: BlockingWait>(
    mut acquire: Pin<&mut W>,
    max_wait: MaxWait,
    compartment: &impl Named,
    immediate: impl FnOnce(Pin<&mut W>, EventLoop) -> Result<W::Seat, Error>,
) -> Result<W::Seat, Error> {
    // First attempt: no clock, no event-loop probe and no waker clone, so a
    // free seat costs core's fast path (one CAS). The thread's waker is
    // lent, not cloned: core clones it only if the node queues, so the wait
    // is registered in this one lock section and the loop below parks at
    // once instead of re-polling to register.
    let first = with_thread_waker(|waker| acquire.as_mut().poll(&mut Context::from_waker(waker)));
    let mut timer = WaitTimer::new();
    // Queued, whether the poll returned `Pending` or the seat was handed
    // over before it returned: the clock starts now.
    if acquire.has_queued() {
        timer.queued();
    }
    if let Poll::Ready(result) = first {
        return timer.finish_in(compartment, result);
    }
    if let Some(event_loop) = event_loop() {
        // Waiting here could block the very loop that holds the seat:
        // leave the line and give the immediate verdict instead.
        let result = match acquire.as_mut().abandon() {
            Some(seat) => Ok(seat),
            None => immediate(acquire, event_loop),
        };
        return timer.finish_in(compartment, result);
    }
    // `Forever`, or a budget too large to add to `now`, is a wait with
    // no deadline.
    let budget = max_wait.budget();
    let deadline = budget.and_then(|budget| Instant::now().checked_add(budget));
    loop {
        match deadline {
            None => thread::park(),
            Some(deadline) => {
                let now = Instant::now();
                if now >= deadline {
                    let budget = budget.unwrap_or_default();
                    let result = acquire.as_mut().time_out(budget);
                    return timer.finish_in(compartment, result);
                }
                thread::park_timeout(deadline - now);
            }
        }
        // Woken (a hand-off, a barging notification) or spuriously: `poll`
        // tells which, and re-registers the waker if needed.
        let poll =
            with_thread_waker(|waker| acquire.as_mut().poll(&mut Context::from_waker(waker)));
        if let Poll::Ready(result) = poll {
            return timer.finish_in(compartment, result);
        }
    }
}

/// The immediate verdict of a blocking acquire that had a wait budget on
/// an event-loop thread: `Full` says so ([`Error::FullOnEventLoop`]), and
/// the first such verdict of each compartment is logged as a `tracing`
/// warning (the flag is the lock's, [`RawLock::claim_event_loop_warning`]).
#[cold]
fn could_not_wait<L: RawLock>(
    bulkhead: &Bulkhead<L>,
    error: Error,
    event_loop: EventLoop,
) -> Error {
    let Error::Full {
        name,
        max_concurrent,
        active,
    } = error
    else {
        return error;
    };
    warn_once(bulkhead.raw_lock(), &name, event_loop);
    Error::FullOnEventLoop {
        name,
        max_concurrent,
        active,
    }
}

/// Logs, once per compartment (the flag is its lock's), that a blocking
/// acquire with a wait budget was turned away at once on an event loop.
#[cold]
fn warn_once(lock: &impl RawLock, name: &Name, event_loop: EventLoop) {
    if lock.claim_event_loop_warning() {
        tracing::warn!(
            compartment = name.as_str(),
            "bulkhead `{name}`: a blocking acquire with a wait budget ran on a thread that \
             drives {event_loop}, so it did not wait and was turned away at once (full); \
             use the async acquire there, or call from spawn_blocking (logged once per \
             compartment)"
        );
    }
}
