//! Bounded waits for a partition's seat, measured with embassy-time: the
//! plain compartment's wait ([`Wait`]) over a partition's line.

use core::fmt;
use core::pin::Pin;
use core::task::{Context, Poll};

use bulkhead_core::partition::{AcquirePartition, PartitionId, PartitionSeat, Partitioned};
use bulkhead_core::{Error, RawLock};
use embassy_time::{Duration, Instant};

use super::{One, Request, Wait, Weight};

/// Bounded waits for a partition's seat, measured with embassy-time.
///
/// Implemented for every [`Partitioned`] compartment, whatever its lock
/// (the [`Partitioned<M>`](crate::Partitioned) alias among them). The
/// waits follow the plain compartment's ([`acquire_within`](crate::acquire_within)):
/// a zero budget (or a deadline already past) fails fast, a wait joins the
/// partition's own line, and a timeout is counted in the partition's
/// [`timed_out`](bulkhead_core::partition::PartitionState::timed_out).
///
/// Who gets a freed seat is the compartment's decision, not the order of
/// the calls: a partition below its share is served before one that
/// borrows, then the higher priority (see [`bulkhead_core::partition`]).
///
/// ```
/// use bulkhead_embassy::partition::{Amount, PartitionConfig};
/// use bulkhead_embassy::{EmbassyAcquirePartition, Error, Partitioned, raw::CriticalSectionRawMutex};
/// use embassy_time::Duration;
///
/// // Four bus slots: commands are guaranteed two and come first; logging
/// // is guaranteed two and borrows the command slots while they are idle.
/// let bus: Partitioned<CriticalSectionRawMutex> = Partitioned::new("bus", 4, &[
///     PartitionConfig::new("command", Amount::Seats(2)).priority(1),
///     PartitionConfig::new("logging", Amount::Seats(2)),
/// ])?;
/// let logging = bus.id("logging")?;
///
/// async fn log(bus: &Partitioned<CriticalSectionRawMutex>, logging: bulkhead_embassy::partition::PartitionId) -> Result<(), Error> {
///     let _seat = bus.acquire_within(logging, Duration::from_millis(50)).await?;
///     // ... write the record; the seat goes back when `_seat` drops
///     Ok(())
/// }
/// # let _ = log(&bus, logging);
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
pub trait EmbassyAcquirePartition {
    /// The compartment's lock.
    type Lock: RawLock;

    /// Waits at most `budget` for a seat of partition `id`.
    ///
    /// - A zero budget fails fast, exactly like
    ///   [`try_acquire`](Partitioned::try_acquire).
    /// - Otherwise the caller joins the partition's line and gets
    ///   [`Error::Timeout`] once the budget has passed. The budget bounds
    ///   only the wait, not the work done with the seat.
    /// - A budget so long that the deadline would not fit in an
    ///   [`Instant`] waits without a time limit.
    ///
    /// The deadline is fixed when this method is called.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future at any point loses nothing: a waiter leaves the
    /// line, and a seat that had just been handed to it goes back (and on
    /// to the next waiter). A seat handed over at the very moment the timer
    /// fires is returned to the caller rather than lost.
    ///
    /// # Memory ordering
    ///
    /// Every decision is made under the compartment's lock: everything a
    /// seat's previous holder did before giving it back (in a task or an
    /// interrupt handler) happens-before everything done after this future
    /// resolves to `Ok`.
    ///
    /// # Errors
    ///
    /// [`Error::PartitionFull`] (zero budget), [`Error::Timeout`],
    /// [`Error::QueueFull`] (the partition's line is full; with a
    /// newest-first line, also while waiting, when a newcomer drops the
    /// oldest waiter), [`Error::Closed`], [`Error::ForeignPartition`] (an
    /// id of another compartment).
    fn acquire_within(
        &self,
        id: PartitionId,
        budget: Duration,
    ) -> EmbassyAcquirePartitionWithin<'_, Self::Lock>;

    /// Waits for a seat of partition `id` until `deadline` at the latest:
    /// [`acquire_within`](Self::acquire_within) with a deadline shared by
    /// several steps. A deadline already past fails fast; a timeout
    /// reports the time that was left at the call as its budget.
    ///
    /// # Cancel safety
    /// As [`acquire_within`](Self::acquire_within).
    ///
    /// # Memory ordering
    /// As [`acquire_within`](Self::acquire_within).
    ///
    /// # Errors
    /// As [`acquire_within`](Self::acquire_within).
    fn acquire_until(
        &self,
        id: PartitionId,
        deadline: Instant,
    ) -> EmbassyAcquirePartitionWithin<'_, Self::Lock>;

    /// Waits at most `budget` for one seat of `weight` seats of partition
    /// `id`, taken together or not at all (as
    /// [`acquire_many`](Partitioned::acquire_many), with a budget).
    ///
    /// # Cancel safety
    /// As [`acquire_within`](Self::acquire_within).
    ///
    /// # Memory ordering
    /// As [`acquire_within`](Self::acquire_within).
    ///
    /// # Errors
    /// Those of [`acquire_within`](Self::acquire_within), and
    /// [`Error::ZeroWeight`] for `weight == 0`, [`Error::WeightAboveLimit`]
    /// if `weight` is more than the partition may ever hold.
    #[cfg(feature = "weights")]
    fn acquire_many_within(
        &self,
        id: PartitionId,
        weight: usize,
        budget: Duration,
    ) -> EmbassyAcquirePartitionManyWithin<'_, Self::Lock>;

    /// Waits until `deadline` at the latest for one seat of `weight` seats
    /// of partition `id`, with the rules of
    /// [`acquire_many_within`](Self::acquire_many_within).
    ///
    /// # Cancel safety
    /// As [`acquire_within`](Self::acquire_within).
    ///
    /// # Memory ordering
    /// As [`acquire_within`](Self::acquire_within).
    ///
    /// # Errors
    /// As [`acquire_many_within`](Self::acquire_many_within).
    #[cfg(feature = "weights")]
    fn acquire_many_until(
        &self,
        id: PartitionId,
        weight: usize,
        deadline: Instant,
    ) -> EmbassyAcquirePartitionManyWithin<'_, Self::Lock>;
}

impl<L: RawLock> EmbassyAcquirePartition for Partitioned<L> {
    type Lock = L;

    #[inline]
    fn acquire_within(
        &self,
        id: PartitionId,
        budget: Duration,
    ) -> EmbassyAcquirePartitionWithin<'_, L> {
        EmbassyAcquirePartitionWithin {
            wait: Wait::within(InPartition::new(self, id, One), budget),
        }
    }

    #[inline]
    fn acquire_until(
        &self,
        id: PartitionId,
        deadline: Instant,
    ) -> EmbassyAcquirePartitionWithin<'_, L> {
        EmbassyAcquirePartitionWithin {
            wait: Wait::until(InPartition::new(self, id, One), deadline),
        }
    }

    #[cfg(feature = "weights")]
    #[inline]
    fn acquire_many_within(
        &self,
        id: PartitionId,
        weight: usize,
        budget: Duration,
    ) -> EmbassyAcquirePartitionManyWithin<'_, L> {
        EmbassyAcquirePartitionManyWithin {
            wait: Wait::within(InPartition::new(self, id, weight), budget),
        }
    }

    #[cfg(feature = "weights")]
    #[inline]
    fn acquire_many_until(
        &self,
        id: PartitionId,
        weight: usize,
        deadline: Instant,
    ) -> EmbassyAcquirePartitionManyWithin<'_, L> {
        EmbassyAcquirePartitionManyWithin {
            wait: Wait::until(InPartition::new(self, id, weight), deadline),
        }
    }
}

/// Waits for a partition's seat with an embassy-time budget. Returned by
/// [`EmbassyAcquirePartition::acquire_within`] and
/// [`acquire_until`](EmbassyAcquirePartition::acquire_until).
///
/// # Cancel safety
/// As [`EmbassyAcquirePartition::acquire_within`].
#[must_use = "futures do nothing unless polled"]
pub struct EmbassyAcquirePartitionWithin<'a, L: RawLock> {
    wait: Wait<InPartition<'a, L, One>>,
}

/// Waits for one seat of several seats of a partition with an
/// embassy-time budget. Returned by
/// [`EmbassyAcquirePartition::acquire_many_within`] and
/// [`acquire_many_until`](EmbassyAcquirePartition::acquire_many_until).
///
/// # Cancel safety
/// As [`EmbassyAcquirePartition::acquire_within`].
#[cfg(feature = "weights")]
#[must_use = "futures do nothing unless polled"]
pub struct EmbassyAcquirePartitionManyWithin<'a, L: RawLock> {
    wait: Wait<InPartition<'a, L, usize>>,
}

/// A seat of `W` in partition `id`.
pub(crate) struct InPartition<'a, L: RawLock, W> {
    partitioned: &'a Partitioned<L>,
    id: PartitionId,
    weight: W,
}

impl<'a, L: RawLock, W> InPartition<'a, L, W> {
    #[inline(always)]
    fn new(partitioned: &'a Partitioned<L>, id: PartitionId, weight: W) -> Self {
        Self {
            partitioned,
            id,
            weight,
        }
    }
}

// By hand: a derive would ask for `L: Copy`, and no lock is.
impl<L: RawLock, W: Copy> Clone for InPartition<'_, L, W> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<L: RawLock, W: Copy> Copy for InPartition<'_, L, W> {}

impl<'a, L: RawLock, W: Weight> Request for InPartition<'a, L, W> {
    type Seat = PartitionSeat<&'a Partitioned<L>>;
    type Acquire = AcquirePartition<&'a Partitioned<L>>;

    #[inline(always)]
    fn try_take(self) -> Result<Self::Seat, Error> {
        self.weight.try_take_partition(self.partitioned, self.id)
    }

    #[inline(always)]
    fn wait(self) -> Self::Acquire {
        self.weight.wait_partition(self.partitioned, self.id)
    }

    #[inline(always)]
    fn time_out(
        acquire: Pin<&mut Self::Acquire>,
        budget: core::time::Duration,
    ) -> Result<Self::Seat, Error> {
        acquire.time_out(budget)
    }

    #[inline(always)]
    fn polled_after_completion() -> ! {
        if W::MANY {
            panic!("`EmbassyAcquirePartitionManyWithin` polled after it completed")
        }
        panic!("`EmbassyAcquirePartitionWithin` polled after it completed")
    }

    fn fmt_fields(self, f: &mut fmt::DebugStruct<'_, '_>) {
        let partition = self
            .partitioned
            .partitions()
            .find(|(id, _)| *id == self.id)
            .map(|(_, name)| name.as_str());
        f.field("partitioned", &self.partitioned.name())
            .field("partition", &partition.unwrap_or("(another compartment's)"))
            .field("weight", &self.weight.get());
    }
}

impl<'a, L: RawLock> Future for EmbassyAcquirePartitionWithin<'a, L> {
    type Output = Result<PartitionSeat<&'a Partitioned<L>>, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `wait` is pinned with `self` and never moved out of it.
        unsafe { self.get_unchecked_mut().wait.poll(cx) }
    }
}

#[cfg(feature = "weights")]
impl<'a, L: RawLock> Future for EmbassyAcquirePartitionManyWithin<'a, L> {
    type Output = Result<PartitionSeat<&'a Partitioned<L>>, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `wait` is pinned with `self` and never moved out of it.
        unsafe { self.get_unchecked_mut().wait.poll(cx) }
    }
}

impl<L: RawLock> fmt::Debug for EmbassyAcquirePartitionWithin<'_, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.wait.fmt(f, "EmbassyAcquirePartitionWithin")
    }
}

#[cfg(feature = "weights")]
impl<L: RawLock> fmt::Debug for EmbassyAcquirePartitionManyWithin<'_, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.wait.fmt(f, "EmbassyAcquirePartitionManyWithin")
    }
}
