//! Bounded blocking waits for a partition's seat: the plain compartment's
//! wait loop ([`block`]) over core's `AcquirePartition`.

use std::pin::{Pin, pin};
use std::sync::Arc;
use std::time::Duration;

use bulkhead_core::partition::{
    AcquirePartition, PartitionHandle, PartitionId, PartitionSeat, Partitioned,
};
use bulkhead_core::{Error, MaxWait, RawLock};

use super::{BlockingWait, block, warn_once};

/// Blocking acquisition of a partition's seat for threads, and owned
/// seats, for any [`Partitioned<L>`](bulkhead_core::partition::Partitioned)
/// (the std [`Partitioned`](crate::partition::Partitioned) included): the
/// partition forms of [`BlockingAcquire`](crate::BlockingAcquire).
///
/// A waiting thread queues in its partition's line, next to async tasks
/// of that partition, and parks; only the thread handed a seat is woken.
/// Which line a freed seat goes to (a partition below its share first,
/// then by priority) is core's decision, made under the compartment's
/// lock, the same for threads and tasks.
pub trait BlockingAcquirePartition<L: RawLock> {
    /// Takes a seat of partition `id`, waiting at most `max_wait` (a
    /// [`MaxWait`] or a [`Duration`]), as
    /// [`BlockingAcquire::acquire_blocking`](crate::BlockingAcquire::acquire_blocking)
    /// does for a plain compartment: `MaxWait::FailFast` (or
    /// `Duration::ZERO`) gives the immediate verdict, a duration waits up
    /// to it, `MaxWait::Forever` waits without limit, and a seat handed
    /// over as the budget runs out is kept. The partition's own
    /// [`PartitionConfig::max_wait`](bulkhead_core::partition::PartitionConfig::max_wait)
    /// is not read: pass it here if it should apply
    /// (`db.partition_config(id)?.max_wait`).
    ///
    /// # Never blocks an event loop
    ///
    /// On a thread that drives an async runtime (see
    /// [`event_loop`](crate::event_loop)) the budget is ignored and the
    /// verdict is immediate, as for a plain compartment. A partition with
    /// no seat for the caller then answers [`Error::PartitionFull`], as
    /// a fail-fast call would, not [`Error::FullOnEventLoop`]: the
    /// partition's figures (its share, what it may hold) are what explain
    /// the refusal, and that variant has no room for them. The first such
    /// verdict of each compartment logs the same `tracing` warning as a
    /// plain compartment's, saying that the call did not wait. Wait from
    /// async code with core's `acquire_timeout(id, …)`, or from a
    /// `spawn_blocking` thread.
    ///
    /// # Cancel safety and memory ordering
    ///
    /// As [`BlockingAcquire::acquire_blocking`](crate::BlockingAcquire::acquire_blocking):
    /// the wait lives in this call's frame and leaves the line if the
    /// thread unwinds; everything the seat's previous holder did before
    /// giving it back happens-before everything after `Ok`.
    ///
    /// # Errors
    /// [`Error::PartitionFull`] (fail fast, or on an event loop),
    /// [`Error::Timeout`] (counted in the partition's
    /// [`timed_out`](bulkhead_core::partition::PartitionState::timed_out)),
    /// [`Error::QueueFull`] (the partition's `max_waiting`),
    /// [`Error::Closed`], [`Error::ForeignPartition`] (an id of another
    /// compartment).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::{BlockingAcquirePartition, Error, MaxWait};
    /// use bulkhead_std::partition::{Amount, PartitionConfig, Partitioned};
    ///
    /// let db = Partitioned::new("db", 2, &[
    ///     PartitionConfig::new("live", Amount::Seats(1)).lendable(Amount::Seats(0)),
    ///     PartitionConfig::new("batch", Amount::Seats(1)),
    /// ])?;
    /// let (live, batch) = (db.id("live")?, db.id("batch")?);
    /// let seat = db.acquire_blocking(batch, MaxWait::FailFast)?;
    /// // Live's seat is reserved for live: batch waits 10 ms, then gives up.
    /// let err = db.acquire_blocking(batch, Duration::from_millis(10)).unwrap_err();
    /// assert!(matches!(err, Error::Timeout { .. }));
    /// assert_eq!(db.partition_state(batch)?.timed_out, 1);
    /// let live_seat = db.acquire_blocking(live, Duration::from_millis(10))?;
    /// # drop((seat, live_seat));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn acquire_blocking(
        &self,
        id: PartitionId,
        max_wait: impl Into<MaxWait>,
    ) -> Result<PartitionSeat<&Partitioned<L>>, Error>;

    /// Takes `weight` seats of partition `id` at once, as one seat of that
    /// weight, waiting at most `max_wait`: all or none. The budget and
    /// the event-loop rule are those of
    /// [`acquire_blocking`](Self::acquire_blocking).
    ///
    /// # Errors
    /// Those of [`acquire_blocking`](Self::acquire_blocking), and
    /// [`Error::ZeroWeight`] for `weight == 0` (not counted), or
    /// [`Error::WeightAboveLimit`] (counted) if `weight` is more than the
    /// partition may ever hold (its `may_hold`, the error's
    /// `max_concurrent`).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::{BlockingAcquirePartition, Error};
    /// use bulkhead_std::partition::{Amount, PartitionConfig, Partitioned};
    ///
    /// let gpu = Partitioned::new("gpu", 4, &[
    ///     PartitionConfig::new("train", Amount::Seats(2)).borrow(Amount::Seats(1)),
    ///     PartitionConfig::new("serve", Amount::Seats(2)),
    /// ])?;
    /// let train = gpu.id("train")?;
    /// let job = gpu.acquire_many_blocking(train, 3, Duration::from_millis(10))?;
    /// assert_eq!((job.weight(), gpu.state().active), (3, 3));
    /// // More than train may ever hold (2 + 1): refused at once.
    /// let err = gpu.acquire_many_blocking(train, 4, Duration::from_secs(60)).unwrap_err();
    /// assert!(matches!(err, Error::WeightAboveLimit { weight: 4, max_concurrent: 3, .. }));
    /// # drop(job);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn acquire_many_blocking(
        &self,
        id: PartitionId,
        weight: usize,
        max_wait: impl Into<MaxWait>,
    ) -> Result<PartitionSeat<&Partitioned<L>>, Error>;

    /// Takes a seat of partition `id` if it has one for the caller right
    /// now, as core's `try_acquire`, but the seat keeps a clone of the
    /// `Arc`, so it may move to another thread. (Core takes the handle by
    /// value, so the clone is made before the attempt and dropped on a
    /// refusal.)
    ///
    /// # Errors
    /// As core's `try_acquire`: [`Error::PartitionFull`],
    /// [`Error::Closed`], [`Error::ForeignPartition`].
    ///
    /// # Examples
    /// ```
    /// use std::sync::Arc;
    /// use bulkhead_std::BlockingAcquirePartition;
    /// use bulkhead_std::partition::{Amount, PartitionConfig, Partitioned};
    ///
    /// let db = Arc::new(Partitioned::new("db", 1, &[PartitionConfig::new("live", Amount::Seats(1))])?);
    /// let live = db.id("live")?;
    /// let seat = db.try_acquire_owned(live)?;
    /// assert!(db.try_acquire_owned(live).is_err());
    /// std::thread::spawn(move || drop(seat)).join().unwrap();
    /// assert_eq!(db.state().active, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn try_acquire_owned(
        self: &Arc<Self>,
        id: PartitionId,
    ) -> Result<PartitionSeat<Arc<Partitioned<L>>>, Error>;

    /// As [`acquire_blocking`](Self::acquire_blocking), but the seat keeps
    /// a clone of the `Arc`. The clone is made before the wait (the wait
    /// holds it) and dropped if the wait fails.
    ///
    /// # Errors
    /// As [`acquire_blocking`](Self::acquire_blocking).
    ///
    /// # Examples
    /// ```
    /// use std::{sync::Arc, time::Duration};
    /// use bulkhead_std::BlockingAcquirePartition;
    /// use bulkhead_std::partition::{Amount, PartitionConfig, Partitioned};
    ///
    /// let db = Arc::new(Partitioned::new("db", 1, &[PartitionConfig::new("live", Amount::Seats(1))])?);
    /// let seat = db.acquire_blocking_owned(db.id("live")?, Duration::from_millis(10))?;
    /// std::thread::spawn(move || drop(seat)).join().unwrap();
    /// assert_eq!(db.state().active, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn acquire_blocking_owned(
        self: &Arc<Self>,
        id: PartitionId,
        max_wait: impl Into<MaxWait>,
    ) -> Result<PartitionSeat<Arc<Partitioned<L>>>, Error>;

    /// As [`try_acquire_owned`](Self::try_acquire_owned), for `weight`
    /// seats at once, as core's `try_acquire_many`.
    ///
    /// # Errors
    /// As core's `try_acquire_many`: those of
    /// [`try_acquire_owned`](Self::try_acquire_owned), and
    /// [`Error::ZeroWeight`], [`Error::WeightAboveLimit`].
    ///
    /// # Examples
    /// ```
    /// use std::sync::Arc;
    /// use bulkhead_std::BlockingAcquirePartition;
    /// use bulkhead_std::partition::{Amount, PartitionConfig, Partitioned};
    ///
    /// let gpu = Arc::new(Partitioned::new("gpu", 4, &[PartitionConfig::new("train", Amount::Seats(4))])?);
    /// let seat = gpu.try_acquire_many_owned(gpu.id("train")?, 3)?;
    /// assert_eq!(std::thread::spawn(move || seat.weight()).join().unwrap(), 3);
    /// assert_eq!(gpu.state().active, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn try_acquire_many_owned(
        self: &Arc<Self>,
        id: PartitionId,
        weight: usize,
    ) -> Result<PartitionSeat<Arc<Partitioned<L>>>, Error>;

    /// As [`acquire_many_blocking`](Self::acquire_many_blocking), but the
    /// seat keeps a clone of the `Arc` (made before the wait, as in
    /// [`acquire_blocking_owned`](Self::acquire_blocking_owned)).
    ///
    /// # Errors
    /// As [`acquire_many_blocking`](Self::acquire_many_blocking).
    ///
    /// # Examples
    /// ```
    /// use std::{sync::Arc, time::Duration};
    /// use bulkhead_std::BlockingAcquirePartition;
    /// use bulkhead_std::partition::{Amount, PartitionConfig, Partitioned};
    ///
    /// let gpu = Arc::new(Partitioned::new("gpu", 4, &[PartitionConfig::new("train", Amount::Seats(4))])?);
    /// let seat = gpu.acquire_many_blocking_owned(gpu.id("train")?, 2, Duration::from_millis(10))?;
    /// assert_eq!(std::thread::spawn(move || seat.weight()).join().unwrap(), 2);
    /// assert_eq!(gpu.state().active, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn acquire_many_blocking_owned(
        self: &Arc<Self>,
        id: PartitionId,
        weight: usize,
        max_wait: impl Into<MaxWait>,
    ) -> Result<PartitionSeat<Arc<Partitioned<L>>>, Error>;
}

impl<L: RawLock> BlockingAcquirePartition<L> for Partitioned<L> {
    fn acquire_blocking(
        &self,
        id: PartitionId,
        max_wait: impl Into<MaxWait>,
    ) -> Result<PartitionSeat<&Partitioned<L>>, Error> {
        wait(self, self, id, 1, max_wait.into())
    }

    fn acquire_many_blocking(
        &self,
        id: PartitionId,
        weight: usize,
        max_wait: impl Into<MaxWait>,
    ) -> Result<PartitionSeat<&Partitioned<L>>, Error> {
        wait(self, self, id, weight, max_wait.into())
    }

    fn try_acquire_owned(
        self: &Arc<Self>,
        id: PartitionId,
    ) -> Result<PartitionSeat<Arc<Partitioned<L>>>, Error> {
        PartitionSeat::try_acquire(Arc::clone(self), id)
    }

    fn acquire_blocking_owned(
        self: &Arc<Self>,
        id: PartitionId,
        max_wait: impl Into<MaxWait>,
    ) -> Result<PartitionSeat<Arc<Partitioned<L>>>, Error> {
        wait(self, Arc::clone(self), id, 1, max_wait.into())
    }

    fn try_acquire_many_owned(
        self: &Arc<Self>,
        id: PartitionId,
        weight: usize,
    ) -> Result<PartitionSeat<Arc<Partitioned<L>>>, Error> {
        PartitionSeat::try_acquire_many(Arc::clone(self), id, weight)
    }

    fn acquire_many_blocking_owned(
        self: &Arc<Self>,
        id: PartitionId,
        weight: usize,
        max_wait: impl Into<MaxWait>,
    ) -> Result<PartitionSeat<Arc<Partitioned<L>>>, Error> {
        wait(self, Arc::clone(self), id, weight, max_wait.into())
    }
}

impl<P: PartitionHandle> BlockingWait for AcquirePartition<P> {
    type Seat = PartitionSeat<P>;

    fn abandon(self: Pin<&mut Self>) -> Option<PartitionSeat<P>> {
        AcquirePartition::abandon(self)
    }

    fn time_out(self: Pin<&mut Self>, budget: Duration) -> Result<PartitionSeat<P>, Error> {
        AcquirePartition::time_out(self, budget)
    }
}

/// The blocking wait for `weight` seats of partition `id` of
/// `partitioned`, through `handle` (which leads to it: `&Partitioned`, or
/// an `Arc` for an owned seat), not generic over the budget's type.
fn wait<L: RawLock, P: PartitionHandle<Lock = L> + Clone>(
    partitioned: &Partitioned<L>,
    handle: P,
    id: PartitionId,
    weight: usize,
    max_wait: MaxWait,
) -> Result<PartitionSeat<P>, Error> {
    if max_wait.is_fail_fast() {
        return PartitionSeat::try_acquire_many(handle, id, weight);
    }
    let acquire = pin!(PartitionSeat::acquire_many(handle, id, weight));
    block(acquire, max_wait, partitioned, |acquire, event_loop| {
        // The wait has left the line without a seat but keeps its handle
        // (it never resolved): a clone of it takes the immediate verdict,
        // so an `Arc` is cloned only here.
        let handle = acquire
            .handle()
            .cloned()
            .expect("a wait that left the line without a seat keeps its handle");
        PartitionSeat::try_acquire_many(handle, id, weight).inspect_err(|e| {
            if let Error::PartitionFull { name, .. } = e {
                warn_once(partitioned.raw_lock(), name, event_loop);
            }
        })
    })
}
