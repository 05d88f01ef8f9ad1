//! Waiting for a seat, and running a future inside a compartment, from
//! async code on any runtime.

use std::time::Duration;

use bulkhead_core::{Bulkhead, Error, MaxWait, RawLock, Seat};

use crate::wait_timer::Timed;

/// Async runs for any [`Bulkhead<L>`](bulkhead_core::Bulkhead), on any
/// runtime: the caller passes its runtime's timer.
///
/// To take a seat from async code, use core's inherent `acquire` (no time
/// limit), `try_acquire` (fail fast) or `acquire_timeout` (a budget and a
/// timer); this trait runs a future while holding one.
///
/// # Timers
///
/// The `_timeout` methods take `sleep`, a function that turns the budget
/// into a future completing when it has elapsed: `tokio::time::sleep`,
/// `sleep_smol` (feature `smol`),
/// `sleep_async_std` (feature `async-std`), or
/// any runtime's own. `sleep` is not called when the budget fails fast or
/// is unbounded.
///
/// # Names next to bulkhead-tokio
///
/// No method here shares a name with bulkhead-tokio's `TokioAcquire`
/// (`acquire_within`, `acquire_within_owned`, which measure the budget on
/// tokio's own clock), so both crates' preludes can be imported together.
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
///     api2.run_timeout(Duration::from_secs(1), async { 7 }, tokio::time::sleep).await
/// });
/// assert_eq!(task.await.unwrap(), Ok(7));
/// # });
/// ```
pub trait Run<L: RawLock>: crate::sealed::Sealed {
    /// Runs `work` while holding a seat, failing fast when the compartment
    /// is full. `work`'s output, business errors included, is returned
    /// untouched inside `Ok`; if `work` panics, the seat is given back as
    /// the panic unwinds.
    ///
    /// # Cancel safety
    /// Dropping the future loses no seat: after admission `work` is
    /// dropped unfinished and the seat is given back.
    ///
    /// # Memory ordering
    /// `work` is first polled holding a seat, so everything the seat's
    /// previous holder did before giving it back happens-before it (see
    /// [`Bulkhead`](bulkhead_core::Bulkhead#memory-ordering)).
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
    /// assert_eq!(cache.try_run(async { 7 }).await, Ok(7));
    /// # });
    /// ```
    fn try_run<F: Future>(&self, work: F) -> impl Future<Output = Result<F::Output, Error>>;

    /// Runs `work` while holding a seat, waiting at most `max_wait` for it
    /// on the runtime timer `sleep` (see [Timers](Self#timers)).
    ///
    /// `max_wait` is a [`MaxWait`] or a [`Duration`] (zero fails fast).
    /// The task waits in the same FIFO line as blocking threads, without
    /// blocking its runtime. Whether it got a seat or timed out is decided
    /// in one step, so a seat handed over as the timer fires is kept,
    /// never lost. The budget bounds only the wait, not `work`: compose
    /// with the runtime's own timeout (inside the bulkhead) to bound the
    /// work.
    ///
    /// # Cancel safety
    /// Dropping the future loses no seat: before admission it leaves the
    /// line; after admission `work` is dropped unfinished and the seat is
    /// given back.
    ///
    /// # Memory ordering
    /// As [`try_run`](Self::try_run).
    ///
    /// # Errors
    /// [`Error::Full`] (no budget), [`Error::Timeout`],
    /// [`Error::QueueFull`] or [`Error::Closed`]; `work` has then not been
    /// polled.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::{Bulkhead, Run};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let api = Bulkhead::new("external_api", 2).unwrap();
    /// let budget = Duration::from_millis(50);
    /// let reply = api.run_timeout(budget, async { "pong" }, tokio::time::sleep).await;
    /// assert_eq!(reply, Ok("pong"));
    /// # });
    /// ```
    fn run_timeout<F: Future, T: Future>(
        &self,
        max_wait: impl Into<MaxWait>,
        work: F,
        sleep: impl FnOnce(Duration) -> T,
    ) -> impl Future<Output = Result<F::Output, Error>>;

    /// As [`run_timeout`](Self::run_timeout), holding `weight` seats at
    /// once (core's `acquire_many_timeout`): for work that counts as
    /// `weight` callers. It gets all of them or none; in FIFO order a
    /// heavy waiter is never passed by lighter ones behind it.
    ///
    /// # Cancel safety
    /// As [`run_timeout`](Self::run_timeout).
    ///
    /// # Errors
    /// Those of [`run_timeout`](Self::run_timeout), [`Error::ZeroWeight`]
    /// for `weight == 0`, and [`Error::WeightAboveLimit`] when `weight` is
    /// above `max_concurrent`; `work` has then not been polled.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::{Bulkhead, Error, Run};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let gpu = Bulkhead::new("gpu", 4).unwrap();
    /// let budget = Duration::from_millis(50);
    /// let held = gpu.run_timeout_weighted(3, budget, async { gpu.state().active }, tokio::time::sleep).await;
    /// assert_eq!(held, Ok(3));
    /// let too_big = gpu.run_timeout_weighted(5, budget, async {}, tokio::time::sleep).await;
    /// assert!(matches!(too_big, Err(Error::WeightAboveLimit { .. })));
    /// # });
    /// ```
    fn run_timeout_weighted<F: Future, T: Future>(
        &self,
        weight: usize,
        max_wait: impl Into<MaxWait>,
        work: F,
        sleep: impl FnOnce(Duration) -> T,
    ) -> impl Future<Output = Result<F::Output, Error>>;

    /// As [`run_timeout`](Self::run_timeout), but runs `fallback` with the
    /// rejection when the compartment is full, its queue is full or the
    /// wait timed out. Never masks [`Error::Closed`].
    ///
    /// # Cancel safety
    /// As [`run_timeout`](Self::run_timeout); a fallback runs
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
    ///     .run_timeout_or_else(budget, async { "fresh" }, |_timeout| "cached", tokio::time::sleep)
    ///     .await;
    /// assert_eq!(reply, Ok("cached"));
    /// # });
    /// ```
    fn run_timeout_or_else<F: Future, T: Future>(
        &self,
        max_wait: impl Into<MaxWait>,
        work: F,
        fallback: impl FnOnce(Error) -> F::Output,
        sleep: impl FnOnce(Duration) -> T,
    ) -> impl Future<Output = Result<F::Output, Error>>;
}

impl<L: RawLock> Run<L> for Bulkhead<L> {
    async fn try_run<F: Future>(&self, work: F) -> Result<F::Output, Error> {
        let _seat = self.try_acquire()?;
        Ok(work.await)
    }

    async fn run_timeout<F: Future, T: Future>(
        &self,
        max_wait: impl Into<MaxWait>,
        work: F,
        sleep: impl FnOnce(Duration) -> T,
    ) -> Result<F::Output, Error> {
        let _seat = acquire_timeout(self, max_wait.into(), sleep).await?;
        Ok(work.await)
    }

    async fn run_timeout_weighted<F: Future, T: Future>(
        &self,
        weight: usize,
        max_wait: impl Into<MaxWait>,
        work: F,
        sleep: impl FnOnce(Duration) -> T,
    ) -> Result<F::Output, Error> {
        let _seat = acquire_many_timeout(self, weight, max_wait.into(), sleep).await?;
        Ok(work.await)
    }

    async fn run_timeout_or_else<F: Future, T: Future>(
        &self,
        max_wait: impl Into<MaxWait>,
        work: F,
        fallback: impl FnOnce(Error) -> F::Output,
        sleep: impl FnOnce(Duration) -> T,
    ) -> Result<F::Output, Error> {
        match self.run_timeout(max_wait, work, sleep).await {
            Err(e @ Error::Closed { .. }) => Err(e),
            Err(e) => Ok(fallback(e)),
            ok => ok,
        }
    }
}

/// A seat within `max_wait` on the timer `sleep`, timed for the wait
/// histogram: the one async wait with a budget that this crate's
/// `_timeout` methods share.
///
/// `MaxWait::FailFast` gives the immediate verdict and
/// `MaxWait::Forever` waits without a limit, neither calling `sleep`.
pub(crate) fn acquire_timeout<L: RawLock, T: Future>(
    bulkhead: &Bulkhead<L>,
    max_wait: MaxWait,
    sleep: impl FnOnce(Duration) -> T,
) -> impl Future<Output = Result<Seat<'_, L>, Error>> {
    acquire_many_timeout(bulkhead, 1, max_wait, sleep)
}

/// As [`acquire_timeout`], for `weight` seats at once (core serves weight
/// 1 exactly as its one-seat wait).
pub(crate) fn acquire_many_timeout<L: RawLock, T: Future>(
    bulkhead: &Bulkhead<L>,
    weight: usize,
    max_wait: MaxWait,
    sleep: impl FnOnce(Duration) -> T,
) -> impl Future<Output = Result<Seat<'_, L>, Error>> {
    // Core decides fail fast at the first poll without calling `sleep`, and
    // `Timed` times only a wait that really queued.
    Timed::new(
        bulkhead.acquire_many_timeout(weight, max_wait, sleep),
        bulkhead,
    )
}

/// async-std's timer, for the `_timeout` methods (`sleep` arguments):
/// a future that completes after `duration`.
///
/// async-std is discontinued upstream in favour of smol; prefer
/// `sleep_smol` (feature `smol`) in new code.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use bulkhead_std::{Bulkhead, Error, Run, sleep_async_std};
///
/// async_std::task::block_on(async {
///     let b = Bulkhead::new("db", 1).unwrap();
///     let _seat = b.try_acquire().unwrap();
///     let err = b.run_timeout(Duration::from_millis(5), async {}, sleep_async_std).await.unwrap_err();
///     assert!(matches!(err, Error::Timeout { .. }));
/// });
/// ```
#[cfg(feature = "async-std")]
pub fn sleep_async_std(duration: Duration) -> impl Future<Output = ()> + Send + 'static {
    async_std::task::sleep(duration)
}

/// smol's timer (`async_io::Timer::after`), for the `_timeout` methods
/// (`sleep` arguments): a future that completes after `duration`. Works on
/// any executor: the timer is driven by async-io's own reactor thread
/// when no smol executor is running.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use bulkhead_std::{Bulkhead, Error, Run, sleep_smol};
///
/// async_io::block_on(async {
///     let b = Bulkhead::new("db", 1).unwrap();
///     let _seat = b.try_acquire().unwrap();
///     let err = b.run_timeout(Duration::from_millis(5), async {}, sleep_smol).await.unwrap_err();
///     assert!(matches!(err, Error::Timeout { .. }));
/// });
/// ```
#[cfg(feature = "smol")]
pub fn sleep_smol(duration: Duration) -> impl Future<Output = ()> + Send + 'static {
    let timer = async_io::Timer::after(duration);
    async move {
        timer.await;
    }
}
