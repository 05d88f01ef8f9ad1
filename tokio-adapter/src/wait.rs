//! Bounded async waits measured by tokio's clock, borrowed and owned
//! seats.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bulkhead_core::{
    Acquire, AcquireOwned, Bulkhead, Error, Handle, MaxWait, OwnedSeat, RawLock, Seat,
};
use bulkhead_std::WaitTimer;
use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};

/// tokio-flavoured ways to take a seat in any [`Bulkhead`].
///
/// Every method takes `max_wait: impl Into<MaxWait>`, the workspace's one
/// wait-budget convention:
///
/// - [`MaxWait::FailFast`] or `Duration::ZERO`: **fail fast**, the
///   immediate verdict of [`Bulkhead::try_acquire`]. This is the default a
///   bulkhead should have.
/// - a [`Duration`], or [`MaxWait::UpTo`]: wait at most that budget for a
///   seat, measured by [`tokio::time`] (so tests can pause and advance the
///   clock), then give up with [`Error::Timeout`].
/// - [`MaxWait::Forever`]: wait with no time limit.
///
/// Every future does nothing until it is polled: a fail-fast future made
/// early (a `select!` branch, a stored future) takes its seat, or reports
/// `Full`, at its first poll, never at creation.
///
/// A seat handed to a caller at the moment its budget runs out is kept by
/// that caller: the choice between the seat and the timeout is made in one
/// step under the compartment's lock.
pub trait TokioAcquire<L: RawLock>: sealed::Sealed {
    /// Takes a seat, waiting at most `max_wait` on tokio's clock.
    ///
    /// # Fairness
    /// Waiters queue in the compartment's single list, next to blocking
    /// threads; see [`Admission`](bulkhead_core::Admission) for who gets a
    /// freed seat, and [`QueueOrder`](bulkhead_core::QueueOrder) for which
    /// end of the line it goes to (oldest first by default).
    ///
    /// # Cancel safety
    /// Cancel safe. Dropping the future (in `tokio::select!`, or when a
    /// `tokio::time::timeout` around it fires) leaves the line; a seat that
    /// had already been handed over goes to the next waiter. No seat is ever
    /// lost.
    ///
    /// # Memory ordering
    /// As for every seat: everything the seat's previous holder did before
    /// giving it back happens-before everything done after this future
    /// resolves to `Ok`. The precise orderings are in
    /// [`Bulkhead`](bulkhead_core::Bulkhead#memory-ordering).
    ///
    /// # Panics
    /// When polled with a budget outside a tokio runtime with the time
    /// driver enabled, as any [`tokio::time::sleep`]. Making the future
    /// needs no runtime; the budget counts from the first poll that does
    /// not get a seat (a seat free at the first poll costs no clock read).
    ///
    /// # Errors
    /// [`Error::Full`] (fail fast), [`Error::Timeout`],
    /// [`Error::QueueFull`] (the line is full; in
    /// [`QueueOrder::Lifo`](bulkhead_core::QueueOrder::Lifo), also a
    /// waiter turned out of a full line to make room for a newer one) or
    /// [`Error::Closed`].
    ///
    /// # Examples
    /// ```
    /// use bulkhead_tokio::MaxWait;
    /// use std::time::Duration;
    /// use bulkhead_tokio::{Bulkhead, TokioAcquire, Error};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let db = Bulkhead::new("database", 1).unwrap();
    /// let seat = db.acquire_within(MaxWait::FailFast).await.unwrap();
    /// // Full and no budget: rejected at once.
    /// assert!(matches!(db.acquire_within(MaxWait::FailFast).await, Err(Error::Full { .. })));
    /// // Full with a budget: waits 50 ms, then gives up.
    /// let err = db.acquire_within(Duration::from_millis(50)).await.unwrap_err();
    /// assert!(matches!(err, Error::Timeout { .. }));
    /// drop(seat);
    /// # }
    /// ```
    fn acquire_within(&self, max_wait: impl Into<MaxWait>) -> AcquireWithin<'_, L>;

    /// Takes a seat that owns its compartment handle, so it can move into a
    /// spawned task: `tokio::spawn(async move { let _seat = seat; .. })`.
    ///
    /// Takes the `Arc` by value, like tokio's `Semaphore::acquire_within_owned`;
    /// clone it first to keep one. For the fail-fast case without a future,
    /// [`OwnedSeat::try_acquire`] does the same synchronously.
    ///
    /// # Cancel safety
    /// As [`acquire_within`](Self::acquire_within). The future is `Send`
    /// and `'static`, and allocates nothing.
    ///
    /// # Memory ordering
    /// As [`acquire_within`](Self::acquire_within), also when the seat is
    /// then moved into another task or thread.
    ///
    /// # Errors
    /// As [`acquire_within`](Self::acquire_within).
    ///
    /// # Examples
    /// ```
    /// use std::{sync::Arc, time::Duration};
    /// use bulkhead_tokio::{Bulkhead, TokioAcquire};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let api = Arc::new(Bulkhead::new("external_api", 4).unwrap());
    /// let seat = api.clone().acquire_within_owned(Duration::from_millis(100)).await.unwrap();
    /// let task = tokio::spawn(async move {
    ///     let _seat = seat; // held for the whole task
    ///     "called the API"
    /// });
    /// assert_eq!(task.await.unwrap(), "called the API");
    /// assert_eq!(api.state().active, 0);
    /// # }
    /// ```
    fn acquire_within_owned(
        self: Arc<Self>,
        max_wait: impl Into<MaxWait>,
    ) -> AcquireWithinOwned<Arc<Bulkhead<L>>>
    where
        Self: Sized,
        L: 'static;

    /// Takes `weight` seats at once, as one [`Seat`] of that weight (see
    /// [`Seat::weight`]), waiting at most `max_wait` on tokio's clock: the
    /// weighted form of [`acquire_within`](Self::acquire_within), on core's
    /// [`Bulkhead::acquire_many`]. The seats are taken together or not at
    /// all, and given back together when the seat drops
    /// ([`Seat::split`] gives some back early).
    ///
    /// A weight counts as that many callers: a bulk import that holds
    /// four database connections takes a seat of weight 4. Taking one
    /// seat at a time instead could deadlock two such tasks, each holding
    /// some seats and waiting for the rest.
    ///
    /// `acquire_many_within(1, max_wait)` is
    /// [`acquire_within(max_wait)`](Self::acquire_within).
    ///
    /// # Fairness
    /// In FIFO order a waiter at the head of the line is never passed by
    /// a lighter one behind it: seats freed while it waits are kept for
    /// it until it has all `weight`, so a heavy task is never starved by
    /// a stream of light ones (the light ones wait behind it). With
    /// [`QueueOrder::Lifo`](bulkhead_core::QueueOrder::Lifo) the newest
    /// waiter is served first, whatever its weight.
    ///
    /// # Cancel safety
    /// As [`acquire_within`](Self::acquire_within): dropping the future
    /// leaves the line, and seats already kept for it go to the next
    /// waiter at once. No seat is ever lost.
    ///
    /// # Memory ordering
    /// As [`acquire_within`](Self::acquire_within).
    ///
    /// # Panics
    /// As [`acquire_within`](Self::acquire_within); never for a bad
    /// weight, which is an error.
    ///
    /// # Errors
    /// Those of [`acquire_within`](Self::acquire_within), and, at the
    /// first poll:
    /// - [`Error::ZeroWeight`] for `weight == 0`;
    /// - [`Error::WeightAboveLimit`] if `weight` is above the
    ///   compartment's `max_concurrent` (waiting could never help), or
    ///   when the limit shrinks below it while the task waits. A limit of
    ///   0 is a pause: the task waits for it to rise, within its budget.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_tokio::{Bulkhead, Error, TokioAcquire};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let db = Bulkhead::new("database", 4).unwrap();
    /// let import = db.acquire_many_within(3, Duration::from_millis(50)).await.unwrap();
    /// assert_eq!((import.weight(), db.state().active), (3, 3));
    /// // Two more do not fit: waits 50 ms, then gives up.
    /// let err = db.acquire_many_within(2, Duration::from_millis(50)).await.unwrap_err();
    /// assert!(matches!(err, Error::Timeout { .. }));
    /// // More than the compartment has: refused at once, whatever the budget.
    /// let err = db.acquire_many_within(5, Duration::from_secs(60)).await.unwrap_err();
    /// assert!(matches!(err, Error::WeightAboveLimit { weight: 5, max_concurrent: 4, .. }));
    /// drop(import);
    /// # }
    /// ```
    fn acquire_many_within(
        &self,
        weight: usize,
        max_wait: impl Into<MaxWait>,
    ) -> AcquireWithin<'_, L>;

    /// Takes `weight` seats at once as one owned seat that can move into
    /// a spawned task: the weighted form of
    /// [`acquire_within_owned`](Self::acquire_within_owned), with the
    /// fairness and errors of
    /// [`acquire_many_within`](Self::acquire_many_within).
    /// [`OwnedSeat::split`] hands part of it to another task.
    ///
    /// # Cancel safety
    /// As [`acquire_many_within`](Self::acquire_many_within). The future
    /// is `Send` and `'static`, and allocates nothing.
    ///
    /// # Memory ordering
    /// As [`acquire_within_owned`](Self::acquire_within_owned).
    ///
    /// # Errors
    /// As [`acquire_many_within`](Self::acquire_many_within).
    ///
    /// # Examples
    /// ```
    /// use std::{sync::Arc, time::Duration};
    /// use bulkhead_tokio::{Bulkhead, TokioAcquire};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let gpu = Arc::new(Bulkhead::new("gpu", 4).unwrap());
    /// let mut seat = gpu.clone().acquire_many_within_owned(3, Duration::from_millis(100)).await.unwrap();
    /// let one = seat.split(1).unwrap(); // one of the three, for a helper task
    /// let helper = tokio::spawn(async move {
    ///     let _one = one;
    /// });
    /// helper.await.unwrap();
    /// assert_eq!((seat.weight(), gpu.state().active), (2, 2));
    /// # }
    /// ```
    fn acquire_many_within_owned(
        self: Arc<Self>,
        weight: usize,
        max_wait: impl Into<MaxWait>,
    ) -> AcquireWithinOwned<Arc<Bulkhead<L>>>
    where
        Self: Sized,
        L: 'static;
}

mod sealed {
    /// Only core's `Bulkhead` gets the extension methods.
    pub trait Sealed {}
    impl<L: bulkhead_core::RawLock> Sealed for bulkhead_core::Bulkhead<L> {}
}

impl<L: RawLock> TokioAcquire<L> for Bulkhead<L> {
    #[inline]
    fn acquire_within(&self, max_wait: impl Into<MaxWait>) -> AcquireWithin<'_, L> {
        self.acquire_many_within(1, max_wait)
    }

    #[inline]
    fn acquire_within_owned(
        self: Arc<Self>,
        max_wait: impl Into<MaxWait>,
    ) -> AcquireWithinOwned<Arc<Bulkhead<L>>>
    where
        L: 'static,
    {
        AcquireWithinOwned::new(self, 1, max_wait.into())
    }

    #[inline]
    fn acquire_many_within(
        &self,
        weight: usize,
        max_wait: impl Into<MaxWait>,
    ) -> AcquireWithin<'_, L> {
        AcquireWithin {
            within: Within::new(
                Borrowed {
                    bulkhead: self,
                    weight,
                },
                max_wait.into(),
            ),
        }
    }

    #[inline]
    fn acquire_many_within_owned(
        self: Arc<Self>,
        weight: usize,
        max_wait: impl Into<MaxWait>,
    ) -> AcquireWithinOwned<Arc<Bulkhead<L>>>
    where
        L: 'static,
    {
        AcquireWithinOwned::new(self, weight, max_wait.into())
    }
}

pin_project! {
    /// Waits for a seat at most a budget on tokio's clock. Returned by
    /// [`TokioAcquire::acquire_within`] and, for a seat of several seats'
    /// weight, [`TokioAcquire::acquire_many_within`].
    ///
    /// # Cancel safety
    /// Dropping it at any point loses nothing: a queued waiter leaves the
    /// line, and a seat already handed to it goes to the next waiter.
    ///
    /// # Memory ordering
    /// As for every seat: everything the seat's previous holder did before
    /// giving it back happens-before everything done after this future
    /// resolves to `Ok`. The precise orderings are in
    /// [`Bulkhead`](bulkhead_core::Bulkhead#memory-ordering).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_tokio::{Bulkhead, TokioAcquire};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let cache = Bulkhead::new("cache", 1).unwrap();
    /// let held = cache.try_acquire().unwrap();
    /// tokio::select! {
    ///     _ = cache.acquire_within(Duration::from_secs(1)) => unreachable!(),
    ///     _ = tokio::time::sleep(Duration::from_millis(10)) => {} // cancelled
    /// }
    /// assert_eq!(cache.state().waiting, 0); // it left the line
    /// # drop(held);
    /// # }
    /// ```
    #[must_use = "futures do nothing unless polled"]
    pub struct AcquireWithin<'a, L: RawLock> {
        #[pin]
        within: Within<Borrowed<'a, L>>,
    }
}

impl<'a, L: RawLock> Future for AcquireWithin<'a, L> {
    type Output = Result<Seat<'a, L>, Error>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().within.poll(cx, "AcquireWithin")
    }
}

impl<L: RawLock> std::fmt::Debug for AcquireWithin<'_, L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.within.fmt(f, "AcquireWithin")
    }
}

pin_project! {
    /// Waits for a seat at most a budget on tokio's clock, holding a
    /// [`Handle`] to the compartment (its `Arc`, or an adaptive
    /// compartment's); resolves to an [`OwnedSeat`]. Returned by
    /// [`TokioAcquire::acquire_within_owned`] and
    /// [`TokioAcquire::acquire_many_within_owned`].
    ///
    /// A named, `'static` future built on core's
    /// [`AcquireOwned`](bulkhead_core::AcquireOwned): it allocates nothing,
    /// so a tower response future can hold it without boxing. `Send` when
    /// the handle is.
    ///
    /// # Cancel safety
    /// As [`AcquireWithin`]: dropping it at any point loses nothing.
    ///
    /// # Memory ordering
    /// As [`AcquireWithin`], also when the seat then moves to another task.
    #[must_use = "futures do nothing unless polled"]
    pub struct AcquireWithinOwned<H>
    where
        H: Handle,
        H::Lock: 'static,
    {
        #[pin]
        within: Within<Owned<H>>,
    }
}

impl<H: Handle> AcquireWithinOwned<H>
where
    H::Lock: 'static,
{
    /// The wait of [`TokioAcquire::acquire_many_within_owned`], on any
    /// handle. A bad `weight` is refused at the first poll, as core's
    /// waits refuse it.
    #[inline]
    pub(crate) fn new(handle: H, weight: usize, max_wait: MaxWait) -> Self {
        Self {
            within: Within::new(Owned { handle, weight }, max_wait),
        }
    }
}

impl<H: Handle> Future for AcquireWithinOwned<H>
where
    H::Lock: 'static,
{
    type Output = Result<OwnedSeat<H>, Error>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().within.poll(cx, "AcquireWithinOwned")
    }
}

impl<H: Handle> std::fmt::Debug for AcquireWithinOwned<H>
where
    H::Lock: 'static,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.within.fmt(f, "AcquireWithinOwned")
    }
}

/// One of core's waits for a seat, which the tokio futures bound with a
/// budget on tokio's clock: it says whether it queued (for the wait
/// histogram) and gives up under the compartment's lock when the budget
/// runs out (keeping a seat handed over meanwhile).
pub(crate) trait CoreWait:
    Future<Output = Result<Self::Seat, Error>> + std::fmt::Debug
{
    /// The seat it resolves to.
    type Seat;
    /// Whether the wait joined its line.
    fn has_queued(&self) -> bool;
    /// Gives up because `budget` ran out.
    fn time_out(self: Pin<&mut Self>, budget: Duration) -> Self::Output;
    /// Records, in `timer`, a wait that ended with `seat`.
    fn record(timer: &mut WaitTimer, seat: &Self::Seat);
}

/// What a tokio wait starts from: a compartment (or handle) and what is
/// asked of it. A fail-fast wait takes the verdict now at its first poll;
/// any other starts core's wait at once (it does nothing until polled).
pub(crate) trait Start {
    /// Core's wait for the seat.
    type Wait: CoreWait;
    /// The verdict without waiting.
    fn try_now(self) -> Result<<Self::Wait as CoreWait>::Seat, Error>;
    /// Core's wait, without limit; the budget is added by [`Within`].
    fn wait(self) -> Self::Wait;
    /// The compartment's name, for `Debug`.
    fn name(&self) -> &str;
    /// The weight asked for, for `Debug`.
    fn weight(&self) -> usize;
}

/// A borrowed compartment's wait.
pub(crate) struct Borrowed<'a, L: RawLock> {
    bulkhead: &'a Bulkhead<L>,
    weight: usize,
}

impl<'a, L: RawLock> Start for Borrowed<'a, L> {
    type Wait = Acquire<'a, L>;
    fn try_now(self) -> Result<Seat<'a, L>, Error> {
        self.bulkhead.try_acquire_many(self.weight)
    }
    fn wait(self) -> Acquire<'a, L> {
        self.bulkhead.acquire_many(self.weight)
    }
    fn name(&self) -> &str {
        self.bulkhead.name()
    }
    fn weight(&self) -> usize {
        self.weight
    }
}

impl<'a, L: RawLock> CoreWait for Acquire<'a, L> {
    type Seat = Seat<'a, L>;
    fn has_queued(&self) -> bool {
        Acquire::has_queued(self)
    }
    fn time_out(self: Pin<&mut Self>, budget: Duration) -> Self::Output {
        Acquire::time_out(self, budget)
    }
    fn record(timer: &mut WaitTimer, seat: &Seat<'a, L>) {
        timer.admitted(seat.bulkhead());
    }
}

/// A wait that keeps a handle to its compartment.
pub(crate) struct Owned<H> {
    handle: H,
    weight: usize,
}

impl<H: Handle> Start for Owned<H>
where
    H::Lock: 'static,
{
    type Wait = AcquireOwned<H>;
    fn try_now(self) -> Result<OwnedSeat<H>, Error> {
        OwnedSeat::try_acquire_many(self.handle, self.weight)
    }
    fn wait(self) -> AcquireOwned<H> {
        OwnedSeat::acquire_many(self.handle, self.weight)
    }
    fn name(&self) -> &str {
        self.handle.bulkhead().name()
    }
    fn weight(&self) -> usize {
        self.weight
    }
}

impl<H: Handle> CoreWait for AcquireOwned<H>
where
    H::Lock: 'static,
{
    type Seat = OwnedSeat<H>;
    fn has_queued(&self) -> bool {
        AcquireOwned::has_queued(self)
    }
    fn time_out(self: Pin<&mut Self>, budget: Duration) -> Self::Output {
        AcquireOwned::time_out(self, budget)
    }
    fn record(timer: &mut WaitTimer, seat: &OwnedSeat<H>) {
        timer.admitted(seat.handle().bulkhead());
    }
}

pin_project! {
    /// The one timed wait of this crate: fail fast at the first poll, or
    /// core's wait raced against a [`LazySleep`] of the budget, timed for
    /// the wait histogram. Every named future of the crate's `_within`
    /// verbs holds one.
    #[project = WithinProj]
    pub(crate) enum Within<S>
    where
        S: Start,
    {
        // Fail fast: `try_now` at the first poll, never before.
        FailFast { start: Option<S> },
        Waiting {
            #[pin]
            wait: S::Wait,
            #[pin]
            sleep: LazySleep,
            budget: Duration,
            timer: WaitTimer,
        },
    }
}

impl<S: Start> Within<S> {
    /// A wait for what `start` asks, at most `max_wait`.
    #[inline]
    pub(crate) fn new(start: S, max_wait: MaxWait) -> Self {
        if max_wait.is_fail_fast() {
            // Nothing is decided until the first poll.
            Within::FailFast { start: Some(start) }
        } else {
            // `Forever` is a timer that never fires.
            let budget = max_wait.budget().unwrap_or(Duration::MAX);
            Within::Waiting {
                wait: start.wait(),
                sleep: LazySleep::new(budget),
                budget,
                timer: WaitTimer::new(),
            }
        }
    }

    /// Polls the wait; `what` names the public future in the panic of a
    /// poll after completion.
    pub(crate) fn poll(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        what: &'static str,
    ) -> Poll<<S::Wait as Future>::Output> {
        // Every poll spends a unit of the task's coop budget, as tokio's
        // own semaphore does, so a task that loops on acquire and release
        // still yields to the scheduler now and then.
        let coop = ready!(tokio::task::coop::poll_proceed(cx));
        let outcome = match self.project() {
            WithinProj::FailFast { start } => Poll::Ready(
                start
                    .take()
                    .unwrap_or_else(|| panic!("`{what}` polled after it completed"))
                    .try_now(),
            ),
            WithinProj::Waiting {
                mut wait,
                sleep,
                budget,
                timer,
            } => {
                let poll = wait.as_mut().poll(cx);
                // Not only on `Pending`: a wait can queue and be handed its
                // seat within one poll, and is timed too.
                if wait.has_queued() {
                    timer.queued();
                }
                // The wait first: a seat that arrives with the timer wins,
                // and `time_out` decides under the compartment's lock.
                let result = if let Poll::Ready(result) = poll {
                    Some(result)
                } else if sleep.poll(cx).is_ready() {
                    Some(wait.time_out(*budget))
                } else {
                    None
                };
                match result {
                    Some(result) => {
                        // Only a seat is recorded, under its compartment.
                        if let Ok(seat) = &result {
                            S::Wait::record(timer, seat);
                        }
                        Poll::Ready(result)
                    }
                    None => Poll::Pending,
                }
            }
        };
        if outcome.is_ready() {
            coop.made_progress();
        }
        outcome
    }

    /// `Debug` for the public future called `what`.
    pub(crate) fn fmt(
        &self,
        f: &mut std::fmt::Formatter<'_>,
        what: &'static str,
    ) -> std::fmt::Result {
        match self {
            Within::FailFast { start } => f
                .debug_struct(what)
                .field("fail_fast", &start.as_ref().map(S::name))
                .field("weight", &start.as_ref().map(S::weight))
                .finish(),
            Within::Waiting { wait, budget, .. } => f
                .debug_struct(what)
                .field("waiting", wait)
                .field("budget", budget)
                .finish(),
        }
    }
}

pin_project! {
    /// `tokio::time::sleep`, made at its first poll: a wait can be built
    /// outside a runtime, and a wait that gets its seat on the first try
    /// never reads the clock. The budget counts from that first poll, which
    /// comes right after the first poll of the wait that did not get a
    /// seat.
    pub(crate) struct LazySleep {
        budget: Duration,
        // No deadline: a budget too large to add to now (`Forever`).
        unbounded: bool,
        #[pin]
        sleep: Option<Sleep>,
    }
}

impl LazySleep {
    fn new(budget: Duration) -> Self {
        Self {
            budget,
            unbounded: budget == Duration::MAX,
            sleep: None,
        }
    }
}

impl Future for LazySleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut this = self.project();
        if *this.unbounded {
            return Poll::Pending;
        }
        if this.sleep.is_none() {
            match Instant::now().checked_add(*this.budget) {
                Some(deadline) => this.sleep.set(Some(tokio::time::sleep_until(deadline))),
                None => {
                    *this.unbounded = true;
                    return Poll::Pending;
                }
            }
        }
        match this.sleep.as_pin_mut() {
            Some(sleep) => sleep.poll(cx),
            None => Poll::Pending,
        }
    }
}
