//! tokio waits on a partitioned compartment (core's
//! [`Partitioned`](bulkhead_core::partition::Partitioned)): borrowed and
//! owned seats, on the crate's one timed wait.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bulkhead_core::partition::{
    AcquirePartition, PartitionHandle, PartitionId, PartitionSeat, Partitioned,
};
use bulkhead_core::{Error, MaxWait, RawLock};
use bulkhead_std::WaitTimer;
use pin_project_lite::pin_project;

use crate::wait::{CoreWait, Start, Within};

/// tokio-flavoured ways to take a seat of one partition of a
/// [`Partitioned`] compartment: the partitioned forms of
/// [`TokioAcquire`](crate::TokioAcquire), with the same budgets
/// (`max_wait: impl Into<MaxWait>`: fail fast, up to a budget on
/// [`tokio::time`], or forever), the same lazy first poll, and the same
/// wait histogram (feature `metrics`, under the compartment's name).
///
/// Every seat is a [`PartitionSeat`] of the handle it was taken through:
/// `PartitionSeat<&Partitioned<L>>` from the borrowed forms,
/// `PartitionSeat<Arc<Partitioned<L>>>` from the `_owned` forms, which can
/// move into a spawned task.
///
/// A partition's own wait budget
/// ([`PartitionConfig::max_wait`](bulkhead_core::partition::PartitionConfig::max_wait))
/// is not read here: these methods take the budget as an argument, as
/// every `_within` verb does. The tower layer (`PartitionedLayer`,
/// feature `tower`) reads it.
///
/// ```
/// use std::time::Duration;
/// use bulkhead_tokio::{Error, StdLock, TokioAcquirePartition};
/// use bulkhead_tokio::bulkhead_core::partition::{Amount, PartitionConfig, Partitioned};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let db: Partitioned<StdLock> = Partitioned::new("db", 4, &[
///     PartitionConfig::new("live", Amount::Seats(3)),
///     PartitionConfig::new("batch", Amount::Seats(1)).borrow(Amount::Seats(0)),
/// ])?;
/// let batch = db.id("batch")?;
/// let seat = db.acquire_within(batch, Duration::from_millis(50)).await?;
/// // Batch may not borrow: its second caller waits 50 ms, then gives up.
/// let err = db.acquire_within(batch, Duration::from_millis(50)).await.unwrap_err();
/// assert!(matches!(err, Error::Timeout { .. }));
/// assert_eq!(db.partition_state(batch)?.timed_out, 1);
/// drop(seat);
/// # Ok(())
/// # }
/// ```
pub trait TokioAcquirePartition<L: RawLock>: sealed::Sealed {
    /// Takes a seat of partition `id`, waiting at most `max_wait` on
    /// tokio's clock.
    ///
    /// # Fairness
    /// Each partition has its own line; a freed seat goes to a partition
    /// below its share first, then by priority (see core's
    /// [`partition`](bulkhead_core::partition) module for the rules).
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future leaves the line, and a seat that
    /// had already been handed over is given back (to the next waiter).
    ///
    /// # Panics
    /// As [`TokioAcquire::acquire_within`](crate::TokioAcquire::acquire_within):
    /// polled with a budget outside a tokio runtime with the time driver.
    ///
    /// # Errors
    /// [`Error::PartitionFull`] (fail fast), [`Error::Timeout`] (counted in
    /// the partition's `timed_out`), [`Error::QueueFull`] (its line is
    /// full), [`Error::Closed`], [`Error::ForeignPartition`] (an id of
    /// another compartment).
    fn acquire_within(
        &self,
        id: PartitionId,
        max_wait: impl Into<MaxWait>,
    ) -> AcquirePartitionWithin<&Partitioned<L>>;

    /// Takes `weight` seats of partition `id` together, waiting at most
    /// `max_wait` on tokio's clock: the weighted form of
    /// [`acquire_within`](Self::acquire_within).
    ///
    /// # Errors
    /// Those of [`acquire_within`](Self::acquire_within), and, at the first
    /// poll, [`Error::ZeroWeight`] for `weight == 0` and
    /// [`Error::WeightAboveLimit`] for more than the partition may ever
    /// hold (its share plus its borrowing limit), whatever the budget.
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_tokio::{Error, StdLock, TokioAcquirePartition};
    /// use bulkhead_tokio::bulkhead_core::partition::{Amount, PartitionConfig, Partitioned};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let db: Partitioned<StdLock> = Partitioned::new("db", 8, &[
    ///     PartitionConfig::new("live", Amount::Seats(6)),
    ///     PartitionConfig::new("batch", Amount::Seats(2)).borrow(Amount::Seats(2)),
    /// ])?;
    /// let batch = db.id("batch")?;
    /// let import = db.acquire_many_within(batch, 3, Duration::from_millis(50)).await?;
    /// assert_eq!((import.weight(), db.partition_state(batch)?.borrowed), (3, 1));
    /// // 5 is more than batch may ever hold (2 + 2): refused at once.
    /// let err = db.acquire_many_within(batch, 5, Duration::from_secs(60)).await.unwrap_err();
    /// assert!(matches!(err, Error::WeightAboveLimit { weight: 5, max_concurrent: 4, .. }));
    /// # drop(import);
    /// # Ok(())
    /// # }
    /// ```
    fn acquire_many_within(
        &self,
        id: PartitionId,
        weight: usize,
        max_wait: impl Into<MaxWait>,
    ) -> AcquirePartitionWithin<&Partitioned<L>>;

    /// As [`acquire_within`](Self::acquire_within), for a seat that owns
    /// its compartment's `Arc`, so it can move into a spawned task. Takes
    /// the `Arc` by value; clone it first to keep one.
    ///
    /// # Errors
    /// As [`acquire_within`](Self::acquire_within).
    ///
    /// ```
    /// use std::{sync::Arc, time::Duration};
    /// use bulkhead_tokio::{StdLock, TokioAcquirePartition};
    /// use bulkhead_tokio::bulkhead_core::partition::{Amount, PartitionConfig, Partitioned};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let db = Arc::new(Partitioned::<StdLock>::new("db", 4, &[
    ///     PartitionConfig::new("live", Amount::Percent(50)),
    ///     PartitionConfig::new("batch", Amount::Percent(50)),
    /// ])?);
    /// let live = db.id("live")?;
    /// let seat = db.clone().acquire_within_owned(live, Duration::from_millis(100)).await?;
    /// tokio::spawn(async move {
    ///     let _seat = seat; // held for the whole task
    /// }).await?;
    /// assert_eq!(db.state().active, 0);
    /// # Ok(())
    /// # }
    /// ```
    fn acquire_within_owned(
        self: Arc<Self>,
        id: PartitionId,
        max_wait: impl Into<MaxWait>,
    ) -> AcquirePartitionWithin<Arc<Partitioned<L>>>
    where
        Self: Sized;

    /// As [`acquire_many_within`](Self::acquire_many_within), for an owned
    /// seat (see [`acquire_within_owned`](Self::acquire_within_owned)).
    ///
    /// # Errors
    /// As [`acquire_many_within`](Self::acquire_many_within).
    fn acquire_many_within_owned(
        self: Arc<Self>,
        id: PartitionId,
        weight: usize,
        max_wait: impl Into<MaxWait>,
    ) -> AcquirePartitionWithin<Arc<Partitioned<L>>>
    where
        Self: Sized;
}

mod sealed {
    /// Only core's `Partitioned` gets the extension methods.
    pub trait Sealed {}
    impl<L: bulkhead_core::RawLock> Sealed for bulkhead_core::partition::Partitioned<L> {}
}

impl<L: RawLock> TokioAcquirePartition<L> for Partitioned<L> {
    #[inline]
    fn acquire_within(
        &self,
        id: PartitionId,
        max_wait: impl Into<MaxWait>,
    ) -> AcquirePartitionWithin<&Partitioned<L>> {
        AcquirePartitionWithin::new(self, id, 1, max_wait.into())
    }

    #[inline]
    fn acquire_many_within(
        &self,
        id: PartitionId,
        weight: usize,
        max_wait: impl Into<MaxWait>,
    ) -> AcquirePartitionWithin<&Partitioned<L>> {
        AcquirePartitionWithin::new(self, id, weight, max_wait.into())
    }

    #[inline]
    fn acquire_within_owned(
        self: Arc<Self>,
        id: PartitionId,
        max_wait: impl Into<MaxWait>,
    ) -> AcquirePartitionWithin<Arc<Partitioned<L>>> {
        AcquirePartitionWithin::new(self, id, 1, max_wait.into())
    }

    #[inline]
    fn acquire_many_within_owned(
        self: Arc<Self>,
        id: PartitionId,
        weight: usize,
        max_wait: impl Into<MaxWait>,
    ) -> AcquirePartitionWithin<Arc<Partitioned<L>>> {
        AcquirePartitionWithin::new(self, id, weight, max_wait.into())
    }
}

pin_project! {
    /// Waits for a seat of one partition at most a budget on tokio's
    /// clock, through a handle `P` (`&Partitioned<L>` or
    /// `Arc<Partitioned<L>>`); resolves to a [`PartitionSeat<P>`].
    /// Returned by every method of [`TokioAcquirePartition`].
    ///
    /// The same timed wait as [`AcquireWithin`](crate::AcquireWithin) and
    /// [`AcquireWithinOwned`](crate::AcquireWithinOwned), on core's
    /// [`AcquirePartition`]: named, allocation-free, `Send` when the
    /// handle is, so a tower response future holds it without boxing.
    ///
    /// # Cancel safety
    /// Dropping it at any point loses nothing: a queued waiter leaves its
    /// partition's line, and a seat already handed to it is given back.
    ///
    /// # Memory ordering
    /// Every decision is made under the compartment's lock: everything a
    /// seat's previous holder did before giving it back happens-before
    /// everything done after this future resolves to `Ok`.
    #[must_use = "futures do nothing unless polled"]
    pub struct AcquirePartitionWithin<P: PartitionHandle> {
        #[pin]
        within: Within<Part<P>>,
    }
}

impl<P: PartitionHandle> AcquirePartitionWithin<P> {
    /// A wait for `weight` seats of partition `id` through `handle`, at
    /// most `max_wait`. A bad weight or id is refused at the first poll.
    #[inline]
    pub(crate) fn new(handle: P, id: PartitionId, weight: usize, max_wait: MaxWait) -> Self {
        Self {
            within: Within::new(Part { handle, id, weight }, max_wait),
        }
    }
}

impl<P: PartitionHandle> Future for AcquirePartitionWithin<P> {
    type Output = Result<PartitionSeat<P>, Error>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().within.poll(cx, "AcquirePartitionWithin")
    }
}

impl<P: PartitionHandle> std::fmt::Debug for AcquirePartitionWithin<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.within.fmt(f, "AcquirePartitionWithin")
    }
}

/// A wait for a partition's seats through a handle.
pub(crate) struct Part<P> {
    handle: P,
    id: PartitionId,
    weight: usize,
}

impl<P: PartitionHandle> Start for Part<P> {
    type Wait = AcquirePartition<P>;
    fn try_now(self) -> Result<PartitionSeat<P>, Error> {
        PartitionSeat::try_acquire_many(self.handle, self.id, self.weight)
    }
    fn wait(self) -> AcquirePartition<P> {
        PartitionSeat::acquire_many(self.handle, self.id, self.weight)
    }
    fn name(&self) -> &str {
        self.handle.partitioned().name()
    }
    fn weight(&self) -> usize {
        self.weight
    }
}

impl<P: PartitionHandle> CoreWait for AcquirePartition<P> {
    type Seat = PartitionSeat<P>;
    fn has_queued(&self) -> bool {
        AcquirePartition::has_queued(self)
    }
    fn time_out(self: Pin<&mut Self>, budget: Duration) -> Self::Output {
        AcquirePartition::time_out(self, budget)
    }
    fn record(timer: &mut WaitTimer, seat: &PartitionSeat<P>) {
        timer.admitted_partitioned(seat.handle().partitioned());
    }
}
