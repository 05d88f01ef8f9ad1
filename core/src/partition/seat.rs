//! [`PartitionSeat`], a partition's seat, and [`PartitionHandle`], what
//! leads a seat or a wait to its compartment.

use core::fmt;
use core::ops::Deref;

use super::table::Refusal;
use super::{AcquirePartition, AcquirePartitionTimeout, Owed, PartitionId, Partitioned};
use crate::error::Error;
#[cfg(feature = "weights")]
use crate::error::{MergeError, SplitError};
use crate::lock::RawLock;
use crate::max_wait::MaxWait;
use crate::word::MAX_CONCURRENT_LIMIT;

/// Anything that leads to a [`Partitioned`] compartment and can be kept:
/// `&Partitioned`, `Arc<Partitioned>`, `&'static Partitioned`.
/// Implemented for every [`Deref`] whose target is a `Partitioned`.
///
/// Every call of one handle should lead to the same compartment: a seat
/// taken through one call is given back through a later one, so a handle
/// that switches compartments makes both counts wrong (saturating, never
/// memory-unsafe: a wait keeps the compartment its first poll found).
pub trait PartitionHandle {
    /// The compartment's lock.
    type Lock: RawLock;

    /// The compartment the handle leads to.
    fn partitioned(&self) -> &Partitioned<Self::Lock>;
}

impl<P, L: RawLock> PartitionHandle for P
where
    P: Deref<Target = Partitioned<L>>,
{
    type Lock = L;

    #[inline]
    fn partitioned(&self) -> &Partitioned<L> {
        self
    }
}

/// A partition's seat: `weight` seats of one partition, given back to it
/// when dropped. It holds its handle: `PartitionSeat<&Partitioned<_>>`
/// borrows the compartment, `PartitionSeat<Arc<Partitioned<_>>>` can move
/// into a spawned task.
///
/// Giving it back takes the compartment's lock (see the module's notes on
/// locks and interrupt handlers).
///
/// ```
/// # extern crate std;
/// use std::sync::Arc;
/// use bulkhead_core::CsLock;
/// use bulkhead_core::partition::{Amount, PartitionConfig, PartitionSeat, Partitioned};
///
/// let db = Arc::new(Partitioned::<CsLock>::new("db", 4, &[
///     PartitionConfig::new("live", Amount::Percent(50)),
///     PartitionConfig::new("batch", Amount::Percent(50)),
/// ])?);
/// let batch = db.id("batch")?;
/// let seat = PartitionSeat::try_acquire(Arc::clone(&db), batch)?;
/// std::thread::spawn(move || drop(seat)).join().unwrap();
/// assert_eq!(db.state().active, 0);
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
#[must_use = "a seat is given back as soon as it is dropped"]
pub struct PartitionSeat<P: PartitionHandle> {
    handle: P,
    id: PartitionId,
    weight: usize,
}

impl<P: PartitionHandle> PartitionSeat<P> {
    /// A seat counted in the table; runs the lock's admission hook after
    /// the seat exists, so a hook that panics gives it back.
    pub(crate) fn new(handle: P, id: PartitionId, weight: usize) -> Self {
        let seat = Self { handle, id, weight };
        seat.handle.partitioned().raw_lock().record_admission();
        seat
    }

    /// Takes a seat of partition `id` without waiting, and keeps `handle`.
    ///
    /// # Errors
    /// As [`Partitioned::try_acquire`].
    pub fn try_acquire(handle: P, id: PartitionId) -> Result<Self, Error> {
        take_now(handle, id, 1)
    }

    /// Takes `weight` seats of partition `id` together without waiting.
    ///
    /// # Errors
    /// As [`Partitioned::try_acquire_many`].
    #[cfg(feature = "weights")]
    pub fn try_acquire_many(handle: P, id: PartitionId, weight: usize) -> Result<Self, Error> {
        take_now(handle, id, weight)
    }

    /// Waits for a seat of partition `id` without limit, keeping `handle`.
    pub fn acquire(handle: P, id: PartitionId) -> AcquirePartition<P> {
        AcquirePartition::new(handle, id, 1)
    }

    /// Waits for `weight` seats of partition `id` together, without limit.
    #[cfg(feature = "weights")]
    pub fn acquire_many(handle: P, id: PartitionId, weight: usize) -> AcquirePartition<P> {
        AcquirePartition::new(handle, id, weight)
    }

    /// Waits for a seat of partition `id` at most `max_wait`, on the timer
    /// `sleep(d)` returns.
    pub fn acquire_timeout<T: Future>(
        handle: P,
        id: PartitionId,
        max_wait: MaxWait,
        sleep: impl FnOnce(core::time::Duration) -> T,
    ) -> AcquirePartitionTimeout<P, T> {
        AcquirePartitionTimeout::new(AcquirePartition::new(handle, id, 1), max_wait, sleep)
    }

    /// As [`acquire_timeout`](Self::acquire_timeout), for `weight` seats.
    #[cfg(feature = "weights")]
    pub fn acquire_many_timeout<T: Future>(
        handle: P,
        id: PartitionId,
        weight: usize,
        max_wait: MaxWait,
        sleep: impl FnOnce(core::time::Duration) -> T,
    ) -> AcquirePartitionTimeout<P, T> {
        AcquirePartitionTimeout::new(AcquirePartition::new(handle, id, weight), max_wait, sleep)
    }

    /// How many of the compartment's seats this seat holds.
    pub fn weight(&self) -> usize {
        self.weight
    }

    /// The partition the seat belongs to.
    pub fn partition(&self) -> PartitionId {
        self.id
    }

    /// The handle the seat keeps.
    pub fn handle(&self) -> &P {
        &self.handle
    }

    /// Splits `weight` seats off this one into a new seat of the same
    /// partition (with a clone of the handle); this seat keeps the rest.
    /// Nothing is given back or taken: the counts are unchanged.
    ///
    /// ```
    /// use bulkhead_core::CsLock;
    /// use bulkhead_core::partition::{Amount, PartitionConfig, Partitioned};
    ///
    /// let db: Partitioned<CsLock> =
    ///     Partitioned::new("db", 4, &[PartitionConfig::new("etl", Amount::Seats(4))])?;
    /// let mut import = db.try_acquire_many(db.id("etl")?, 3)?;
    /// let done_early = import.split(1)?;
    /// drop(done_early); // one seat back, two still held
    /// assert_eq!((import.weight(), db.state().active), (2, 2));
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`SplitError`] unless `1 <= weight < self.weight()`; this seat is
    /// then unchanged.
    #[cfg(feature = "weights")]
    pub fn split(&mut self, weight: usize) -> Result<Self, SplitError>
    where
        P: Clone,
    {
        if weight == 0 || weight >= self.weight {
            return Err(SplitError {
                held: self.weight,
                requested: weight,
            });
        }
        self.weight -= weight;
        // Not `new`: no admission happened, so the hook does not run.
        Ok(Self {
            handle: self.handle.clone(),
            id: self.id,
            weight,
        })
    }

    /// Merges `other`, a seat of the same partition of the same
    /// compartment, into this one; nothing is given back or taken.
    ///
    /// # Errors
    /// [`MergeError`], carrying `other` still held, if it is a seat of
    /// another compartment or another partition.
    #[cfg(feature = "weights")]
    pub fn merge(&mut self, other: Self) -> Result<(), MergeError<Self>> {
        let (a, b) = (self.handle.partitioned(), other.handle.partitioned());
        if !core::ptr::eq(a, b) || self.id != other.id {
            let name = |p: &Partitioned<P::Lock>, id: PartitionId| match p.index(id) {
                Ok(i) => p.error_name(i),
                Err(_) => p.name_handle(),
            };
            let (into, from) = (name(a, self.id), name(b, other.id));
            return Err(MergeError::new(into, from, other));
        }
        self.weight += other.weight;
        // Its seats are this seat's now: it must not give them back.
        let other = core::mem::ManuallyDrop::new(other);
        // SAFETY: `other` is never used again and its drop is skipped; the
        // handle is read out once, to be dropped as an owned value.
        drop(unsafe { core::ptr::read(&other.handle) });
        Ok(())
    }
}

impl<P: PartitionHandle> Drop for PartitionSeat<P> {
    fn drop(&mut self) {
        let p = self.handle.partitioned();
        // A handle that switched compartments gives back nothing here
        // (its id is not this compartment's): counts stay saturating.
        if let Ok(i) = p.index(self.id) {
            p.release(i, self.weight);
        }
    }
}

impl<P: PartitionHandle> fmt::Debug for PartitionSeat<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.handle.partitioned();
        f.debug_struct("PartitionSeat")
            .field("bulkhead", &p.name())
            .field("partition", &p.names.get(self.id.index()))
            .field("weight", &self.weight)
            .finish()
    }
}

/// Checks a weight asked for: 0 is refused uncounted, one above what any
/// compartment counts is refused and counted (in `take_now`).
pub(crate) fn check_weight<L: RawLock>(
    p: &Partitioned<L>,
    i: usize,
    weight: usize,
) -> Result<(), Error> {
    if weight == 0 {
        return Err(Error::ZeroWeight {
            name: p.error_name(i),
        });
    }
    Ok(())
}

/// The verdict without waiting: takes `weight` seats of `id` now, as a seat
/// that keeps `handle`, or says why not, counting a refusal. The seat is
/// made before the section's wakers (other tasks', foreign code) run, so a
/// waker that panics gives it back as it unwinds instead of leaking it.
pub(crate) fn take_now<P: PartitionHandle>(
    handle: P,
    id: PartitionId,
    weight: usize,
) -> Result<PartitionSeat<P>, Error> {
    let p = handle.partitioned();
    let i = p.index(id)?;
    check_weight(p, i, weight)?;
    let mut owed = Owed::new();
    let result = p.section_then(&mut owed, |t, _| {
        let refusal = if weight > MAX_CONCURRENT_LIMIT {
            Err(Refusal::Oversized)
        } else {
            t.admit(i, weight)
        };
        match refusal {
            Ok(()) => Ok(()),
            Err(Refusal::Closed) => Err(p.closed_error()),
            Err(Refusal::Oversized) => {
                t.parts[i].rejected += 1;
                Err(p.oversized_error(t, i, weight))
            }
            Err(Refusal::Full) => {
                t.parts[i].rejected += 1;
                Err(p.full_error(t, i))
            }
        }
    });
    match result {
        Ok(()) => {
            // Not `new`: the admission hook runs after the wakers.
            let seat = PartitionSeat { handle, id, weight };
            let p = seat.handle.partitioned();
            p.finish(&mut owed);
            p.raw_lock().record_admission();
            Ok(seat)
        }
        Err(error) => {
            p.finish(&mut owed);
            if matches!(
                error,
                Error::PartitionFull { .. } | Error::WeightAboveLimit { .. }
            ) {
                p.raw_lock().record_rejection();
            }
            Err(error)
        }
    }
}

impl<L: RawLock> Partitioned<L> {
    /// Gives back `weight` seats of partition `i`, and serves.
    pub(crate) fn release(&self, i: usize, weight: usize) {
        self.section(|t, _| t.give_back(i, weight));
    }

    pub(crate) fn closed_error(&self) -> Error {
        Error::Closed {
            name: self.name_handle(),
        }
    }

    /// Describes a weight above what partition `i` may ever hold.
    pub(crate) fn oversized_error(
        &self,
        t: &super::table::Table,
        i: usize,
        weight: usize,
    ) -> Error {
        Error::WeightAboveLimit {
            name: self.error_name(i),
            weight,
            max_concurrent: t.parts[i].resolved.may_hold,
        }
    }
}
