//! Waiting for a seat, and running a future inside a compartment, from
//! async code on any runtime.

use std::time::Duration;

use std::pin::Pin;
use std::task::{Context, Poll};

use bulkhead_core::{Bulkhead, Error, MaxWait, RawLock, Seat};

use crate::wait_timer::WaitTimer;

/// Async waits and runs for any [`Bulkhead<L>`](bulkhead_core::Bulkhead),
/// on any runtime: the caller passes its runtime's timer.
///
/// # Names next to bulkhead-tokio
///
/// The methods that take a timer are named `*_with_timer`, so that they
/// never share a name with bulkhead-tokio's `BulkheadExt` methods, which
/// measure the budget on tokio's own clock (`acquire_within`,
/// `acquire_owned`). Both traits can be in scope at
/// once (both crates' preludes imported) without any call becoming
/// ambiguous.
///
/// Sealed: implemented for core's compartment only, so methods can be added
/// without breaking anyone.
///
/// # Send
///
/// The futures are `Send` whenever their inputs are: the trait is only
/// implemented for core's compartment, and callers see the
/// implementation's futures (the `tokio::spawn` in the example below
/// needs that).
///
/// ```
/// use std::{sync::Arc, time::Duration};
/// use bulkhead_std::{Bulkhead, Run};
///
/// # tokio::runtime::Builder::new_multi_thread().enable_time().build().unwrap().block_on(async {
/// let api = Arc::new(Bulkhead::new("external_api", 1).unwrap());
/// let api2 = api.clone();
/// let task = tokio::spawn(async move {
///     api2.run_with_timer(Duration::from_secs(1), tokio::time::sleep, async { 7 }).await
/// });
/// assert_eq!(task.await.unwrap(), Ok(7));
/// # });
/// ```
pub trait Run<L: RawLock>: crate::sealed::Sealed {
    /// Takes a seat from async code, waiting at most `max_wait` with the
    /// caller's runtime timer: `sleep` turns the budget into a future that
    /// completes when it has elapsed (`tokio::time::sleep`,
    /// `async_std::task::sleep`, `async_io::Timer::after`, …).
    ///
    /// `max_wait` is a [`MaxWait`] or a [`Duration`] (zero fails fast).
    /// `MaxWait::FailFast` gives the immediate verdict without calling
    /// `sleep`; `MaxWait::Forever` waits without calling it either.
    /// Nothing happens until the first poll. The task waits in the same FIFO line as blocking threads,
    /// without blocking its runtime. Whether it got a seat or timed out is
    /// decided in one step, so a seat handed over as the timer fires is
    /// kept, never lost.
    ///
    /// # Cancel safety
    /// Dropping the future at any point loses nothing: a waiting task
    /// leaves the line, and a seat already handed to it goes to the next
    /// waiter. The timer is dropped with it.
    ///
    /// # Memory ordering
    /// As for every seat: everything the seat's previous holder did before
    /// giving it back happens-before everything done after this future
    /// resolves to `Ok`. The precise orderings are in
    /// [`Bulkhead`](bulkhead_core::Bulkhead#memory-ordering).
    ///
    /// # Errors
    /// [`Error::Full`] (no budget), [`Error::Timeout`],
    /// [`Error::QueueFull`] or [`Error::Closed`].
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::{Bulkhead, Run};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let api = Bulkhead::new("external_api", 1).unwrap();
    /// let seat = api.acquire_with_timer(Duration::from_secs(1), tokio::time::sleep).await;
    /// assert!(seat.is_ok());
    /// # });
    /// ```
    fn acquire_with_timer<'a, T: Future>(
        &'a self,
        max_wait: impl Into<MaxWait>,
        sleep: impl FnOnce(Duration) -> T,
    ) -> impl Future<Output = Result<Seat<'a, L>, Error>>
    where
        L: 'a;

    /// Runs `work` while holding a seat, failing fast when the compartment
    /// is full. `work`'s output, business errors included, is returned
    /// untouched inside `Ok`; if `work` panics, the seat is given back as
    /// the panic unwinds.
    ///
    /// # Cancel safety
    /// Dropping the future loses no seat: before admission it leaves the
    /// line; after admission `work` is dropped unfinished and the seat is
    /// given back.
    ///
    /// # Memory ordering
    /// `work` is first polled holding a seat, so the seat's previous
    /// holder's work happens-before it (see
    /// [`acquire_with_timer`](Self::acquire_with_timer)).
    ///
    /// # Errors
    /// [`Error::Full`] or [`Error::Closed`]; `work` has then not been
    /// polled.
    ///
    /// # Examples
    /// ```
    /// use bulkhead_std::{Bulkhead, Run};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let cache = Bulkhead::new("cache", 2).unwrap();
    /// assert_eq!(cache.run(async { 7 }).await, Ok(7));
    /// # });
    /// ```
    fn run<F: Future>(&self, work: F) -> impl Future<Output = Result<F::Output, Error>>;

    /// As [`run`](Self::run), but waits at most `max_wait` for a seat with
    /// the runtime timer `sleep`, as
    /// [`acquire_with_timer`](Self::acquire_with_timer). The budget bounds
    /// only the wait, not `work`: compose with the runtime's own timeout
    /// (inside the bulkhead) to bound the work.
    ///
    /// # Cancel safety
    /// Dropping the future loses no seat: before admission it leaves the
    /// line; after admission `work` is dropped unfinished and the seat is
    /// given back.
    ///
    /// # Memory ordering
    /// `work` is first polled holding a seat, so the seat's previous
    /// holder's work happens-before it (see
    /// [`acquire_with_timer`](Self::acquire_with_timer)).
    ///
    /// # Errors
    /// As [`acquire_with_timer`](Self::acquire_with_timer).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::{Bulkhead, Run};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let api = Bulkhead::new("external_api", 2).unwrap();
    /// let budget = Duration::from_millis(50);
    /// let reply = api.run_with_timer(budget, tokio::time::sleep, async { "pong" }).await;
    /// assert_eq!(reply, Ok("pong"));
    /// # });
    /// ```
    fn run_with_timer<F: Future, T: Future>(
        &self,
        max_wait: impl Into<MaxWait>,
        sleep: impl FnOnce(Duration) -> T,
        work: F,
    ) -> impl Future<Output = Result<F::Output, Error>>;

    /// As [`run_with_timer`](Self::run_with_timer), but runs `fallback`
    /// with the rejection when the compartment is full, its queue is full
    /// or the wait timed out. Never masks [`Error::Closed`].
    ///
    /// # Cancel safety
    /// As [`run_with_timer`](Self::run_with_timer); a fallback runs
    /// synchronously, so it is never cut short.
    ///
    /// # Errors
    /// [`Error::Closed`] only.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::{Bulkhead, Run};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let api = Bulkhead::new("external_api", 1).unwrap();
    /// let _busy = api.try_acquire().unwrap();
    /// let budget = Duration::from_millis(5);
    /// let reply = api
    ///     .run_or_else(budget, tokio::time::sleep, async { "fresh" }, |_timeout| "cached")
    ///     .await;
    /// assert_eq!(reply, Ok("cached"));
    /// # });
    /// ```
    fn run_or_else<F: Future, T: Future>(
        &self,
        max_wait: impl Into<MaxWait>,
        sleep: impl FnOnce(Duration) -> T,
        work: F,
        fallback: impl FnOnce(Error) -> F::Output,
    ) -> impl Future<Output = Result<F::Output, Error>>;

    /// [`acquire_with_timer`](Self::acquire_with_timer) with async-std's
    /// timer (`async_std::task::sleep`).
    ///
    /// async-std is discontinued upstream in favour of smol; prefer the
    #[cfg_attr(
        feature = "smol",
        doc = "`smol` feature and [`acquire_smol`](Self::acquire_smol) in new code."
    )]
    #[cfg_attr(
        not(feature = "smol"),
        doc = "`smol` feature and its `acquire_smol` in new code."
    )]
    ///
    /// # Cancel safety
    /// As [`acquire_with_timer`](Self::acquire_with_timer): dropping the
    /// future at any point loses nothing.
    ///
    /// # Memory ordering
    /// As [`acquire_with_timer`](Self::acquire_with_timer).
    ///
    /// # Errors
    /// As [`acquire_with_timer`](Self::acquire_with_timer).
    ///
    /// # Examples
    /// ```
    /// use bulkhead_std::MaxWait;
    /// use std::time::Duration;
    /// use bulkhead_std::{Bulkhead, Error, Run};
    ///
    /// async_std::task::block_on(async {
    ///     let b = Bulkhead::new("db", 1).unwrap();
    ///     let _seat = b.acquire_async_std(MaxWait::FailFast).await.unwrap();
    ///     let err = b.acquire_async_std(Duration::from_millis(5)).await.unwrap_err();
    ///     assert!(matches!(err, Error::Timeout { .. }));
    /// });
    /// ```
    #[cfg(feature = "async-std")]
    fn acquire_async_std<'a>(
        &'a self,
        max_wait: impl Into<MaxWait>,
    ) -> impl Future<Output = Result<Seat<'a, L>, Error>>
    where
        L: 'a;

    /// [`acquire_with_timer`](Self::acquire_with_timer) with smol's timer
    /// (`async_io::Timer::after`). Works on any executor: the timer is
    /// driven by async-io's own reactor thread when no smol executor is
    /// running.
    ///
    /// # Cancel safety
    /// As [`acquire_with_timer`](Self::acquire_with_timer): dropping the
    /// future at any point loses nothing.
    ///
    /// # Memory ordering
    /// As [`acquire_with_timer`](Self::acquire_with_timer).
    ///
    /// # Errors
    /// As [`acquire_with_timer`](Self::acquire_with_timer).
    ///
    /// # Examples
    /// ```
    /// use bulkhead_std::MaxWait;
    /// use std::time::Duration;
    /// use bulkhead_std::{Bulkhead, Error, Run};
    ///
    /// async_io::block_on(async {
    ///     let b = Bulkhead::new("db", 1).unwrap();
    ///     let _seat = b.acquire_smol(MaxWait::FailFast).await.unwrap();
    ///     let err = b.acquire_smol(Duration::from_millis(5)).await.unwrap_err();
    ///     assert!(matches!(err, Error::Timeout { .. }));
    /// });
    /// ```
    #[cfg(feature = "smol")]
    fn acquire_smol<'a>(
        &'a self,
        max_wait: impl Into<MaxWait>,
    ) -> impl Future<Output = Result<Seat<'a, L>, Error>>
    where
        L: 'a;
}

impl<L: RawLock> Run<L> for Bulkhead<L> {
    async fn acquire_with_timer<'a, T: Future>(
        &'a self,
        max_wait: impl Into<MaxWait>,
        sleep: impl FnOnce(Duration) -> T,
    ) -> Result<Seat<'a, L>, Error>
    where
        L: 'a,
    {
        let max_wait = max_wait.into();
        match max_wait.budget() {
            Some(budget) => Timed::new(self.acquire_timeout(budget, sleep), self).await,
            None if max_wait.is_unbounded() => Timed::new(self.acquire(), self).await,
            None => self.try_acquire(),
        }
    }

    async fn run<F: Future>(&self, work: F) -> Result<F::Output, Error> {
        let _seat = self.try_acquire()?;
        Ok(work.await)
    }

    async fn run_with_timer<F: Future, T: Future>(
        &self,
        max_wait: impl Into<MaxWait>,
        sleep: impl FnOnce(Duration) -> T,
        work: F,
    ) -> Result<F::Output, Error> {
        let _seat = self.acquire_with_timer(max_wait, sleep).await?;
        Ok(work.await)
    }

    async fn run_or_else<F: Future, T: Future>(
        &self,
        max_wait: impl Into<MaxWait>,
        sleep: impl FnOnce(Duration) -> T,
        work: F,
        fallback: impl FnOnce(Error) -> F::Output,
    ) -> Result<F::Output, Error> {
        match self.run_with_timer(max_wait, sleep, work).await {
            Err(e @ Error::Closed { .. }) => Err(e),
            Err(e) => Ok(fallback(e)),
            ok => ok,
        }
    }

    #[cfg(feature = "async-std")]
    async fn acquire_async_std<'a>(
        &'a self,
        max_wait: impl Into<MaxWait>,
    ) -> Result<Seat<'a, L>, Error>
    where
        L: 'a,
    {
        self.acquire_with_timer(max_wait, async_std::task::sleep)
            .await
    }

    #[cfg(feature = "smol")]
    async fn acquire_smol<'a>(&'a self, max_wait: impl Into<MaxWait>) -> Result<Seat<'a, L>, Error>
    where
        L: 'a,
    {
        self.acquire_with_timer(max_wait, async_io::Timer::after)
            .await
    }
}

pin_project_lite::pin_project! {
    /// A wait for a seat, timed for the wait histogram (see [`WaitTimer`]).
    pub(crate) struct Timed<'a, L: RawLock, F> {
        #[pin]
        wait: F,
        timer: WaitTimer,
        bulkhead: &'a Bulkhead<L>,
    }
}

impl<'a, L: RawLock, F> Timed<'a, L, F> {
    pub(crate) fn new(wait: F, bulkhead: &'a Bulkhead<L>) -> Self {
        Self {
            wait,
            timer: WaitTimer::new(),
            bulkhead,
        }
    }
}

/// Core's waits, which tell whether they queued.
pub(crate) trait Queues {
    /// As [`Acquire::has_queued`](bulkhead_core::Acquire::has_queued).
    fn has_queued(&self) -> bool;
}

impl<L: RawLock> Queues for bulkhead_core::Acquire<'_, L> {
    fn has_queued(&self) -> bool {
        bulkhead_core::Acquire::has_queued(self)
    }
}

impl<L: RawLock, S> Queues for bulkhead_core::AcquireTimeout<'_, L, S> {
    fn has_queued(&self) -> bool {
        bulkhead_core::AcquireTimeout::has_queued(self)
    }
}

impl<L: RawLock, T, F: Future<Output = Result<T, Error>> + Queues> Future for Timed<'_, L, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let mut this = self.project();
        let poll = this.wait.as_mut().poll(cx);
        // Not only on `Pending`: a wait can queue and be handed its seat
        // within one poll, and is timed too.
        if this.wait.has_queued() {
            this.timer.queued();
        }
        match poll {
            Poll::Ready(result) => Poll::Ready(this.timer.finish(this.bulkhead, result)),
            Poll::Pending => Poll::Pending,
        }
    }
}
