//! [`Seat`], the RAII proof that a caller is inside a compartment.

use core::fmt;

use crate::engine::{Engine, Refusal};
use crate::error::{Error, MergeError, SplitError};
use crate::lock::RawLock;

/// A taken seat. Dropping it gives the seat back: to the next waiter in
/// FIFO mode, or to whoever takes it first in barging mode.
///
/// A seat has a *weight*: the number of the compartment's seats it holds,
/// 1 unless it came from
/// [`try_acquire_many`](crate::Bulkhead::try_acquire_many) or
/// [`acquire_many`](crate::Bulkhead::acquire_many). It is given back
/// whole, and [`split`](Self::split) and [`merge`](Self::merge) change how
/// it is held.
///
/// Dropping never waits for a lock, so it is safe in `Drop`, while a panic
/// unwinds, and (with a critical-section lock) in an interrupt handler.
/// A seat held across a panic is therefore given back as the stack unwinds.
///
/// ```
/// # use bulkhead_core::{Bulkhead, CsLock};
/// let b: Bulkhead<CsLock> = Bulkhead::new("db", 1).unwrap();
/// {
///     let _seat = b.try_acquire().unwrap();
///     assert_eq!(b.state().active, 1);
/// } // given back here
/// assert_eq!(b.state().active, 0);
/// ```
#[must_use = "a seat is given back as soon as it is dropped"]
pub struct Seat<'a, L: RawLock> {
    /// The compartment's state; [`bulkhead`](Self::bulkhead) names the
    /// compartment itself.
    engine: &'a Engine<L>,
    /// Seats held, at least 1: 32 bits, as every count of seats.
    pub(crate) weight: u32,
}

impl<'a, L: RawLock> Seat<'a, L> {
    /// Only for `weight` seats that have been counted in the seat word.
    /// Every admission makes exactly one `Seat` here, so this is where the
    /// lock's admission hook runs (once per admission, whatever the
    /// weight). The seat exists before the hook runs, so a hook that
    /// panics gives the seat back as it unwinds instead of leaking it.
    #[inline]
    pub(crate) fn new(engine: &'a Engine<L>, weight: u32) -> Self {
        let seat = Self { engine, weight };
        engine.lock.record_admission();
        seat
    }

    /// Takes `weight` seats together if they are free right now: the fast
    /// path, and the verdict of a wait that may not wait (`try_acquire`,
    /// a fail-fast budget). A refusal is counted and described; a weight
    /// of 0 is refused and not counted (no caller was turned away for
    /// lack of room).
    #[inline]
    pub(crate) fn try_take(engine: &'a Engine<L>, weight: usize) -> Result<Self, Error> {
        let weight = check_weight(engine, weight)?;
        match engine.try_take(weight) {
            Ok(()) => Ok(Self::new(engine, weight)),
            Err(Refusal::Closed) => Err(engine.closed_error()),
            Err(Refusal::Full) if engine.oversized(weight) => {
                engine.count_rejection();
                Err(engine.weight_above_limit(weight))
            }
            Err(Refusal::Full) => Err(engine.reject_full()),
        }
    }

    /// How many of the compartment's seats this seat holds.
    ///
    /// ```
    /// # use bulkhead_core::{Bulkhead, CsLock};
    /// let gpu: Bulkhead<CsLock> = Bulkhead::new("gpu", 4).unwrap();
    /// let seat = gpu.try_acquire_many(3).unwrap();
    /// assert_eq!(seat.weight(), 3);
    /// assert_eq!(gpu.state().active, 3);
    /// ```
    #[inline]
    pub fn weight(&self) -> usize {
        self.weight as usize
    }

    /// Splits `weight` seats off this one into a new seat of the same
    /// compartment; this seat keeps the rest. Nothing is given back or
    /// taken, and no lock is touched: the compartment's count is
    /// unchanged.
    ///
    /// # Errors
    /// [`SplitError`] unless `1 <= weight < self.weight()`: each seat
    /// must keep at least one seat. This seat is then unchanged.
    ///
    /// ```
    /// # use bulkhead_core::{Bulkhead, CsLock};
    /// let db: Bulkhead<CsLock> = Bulkhead::new("db", 4).unwrap();
    /// let mut import = db.try_acquire_many(4).unwrap();
    /// let done_early = import.split(1).unwrap();
    /// drop(done_early); // one connection back, three still held
    /// assert_eq!((import.weight(), db.state().active), (3, 3));
    /// assert!(import.split(3).is_err());
    /// ```
    pub fn split(&mut self, weight: usize) -> Result<Self, SplitError> {
        let weight = split_weight(self.weight, weight)?;
        self.weight -= weight;
        // Not `new`: no admission happened, so the hook does not run.
        Ok(Self {
            engine: self.engine,
            weight,
        })
    }

    /// Merges `other`, a seat of the same compartment, into this one,
    /// which then holds both weights and gives them back together.
    ///
    /// # Errors
    /// [`MergeError`] if `other` belongs to another compartment; it
    /// carries `other` back, unchanged and still held.
    ///
    /// ```
    /// # use bulkhead_core::{Bulkhead, CsLock};
    /// let db: Bulkhead<CsLock> = Bulkhead::new("db", 4).unwrap();
    /// let cache: Bulkhead<CsLock> = Bulkhead::new("cache", 1).unwrap();
    /// let mut seat = db.try_acquire().unwrap();
    /// seat.merge(db.try_acquire_many(2).unwrap()).unwrap();
    /// assert_eq!(seat.weight(), 3);
    ///
    /// let err = seat.merge(cache.try_acquire().unwrap()).unwrap_err();
    /// assert_eq!(err.into_inner().weight(), 1); // still held, still cache's
    /// ```
    pub fn merge(&mut self, other: Self) -> Result<(), MergeError<Self>> {
        if !core::ptr::eq(self.engine, other.engine) {
            return Err(MergeError::new(
                self.engine.name_handle(),
                other.engine.name_handle(),
                other,
            ));
        }
        // Both weights are within the limit's 32 bits: their sum is at most
        // the seats the compartment has ever had out at once.
        self.weight += other.weight;
        core::mem::forget(other);
        Ok(())
    }

    /// The compartment's state.
    #[inline]
    pub(crate) fn engine(&self) -> &'a Engine<L> {
        self.engine
    }
}

impl<L: RawLock> Drop for Seat<'_, L> {
    #[inline]
    fn drop(&mut self) {
        self.engine.release(self.weight);
    }
}

impl<L: RawLock> fmt::Debug for Seat<'_, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Seat")
            .field("bulkhead", &self.engine.name())
            .field("weight", &self.weight)
            .finish()
    }
}

/// `weight` as the engine counts it, if a caller may ask for it: at least
/// 1 ([`Error::ZeroWeight`] otherwise, not counted) and, for a weight above
/// `u32::MAX` (more than any limit), [`Error::WeightAboveLimit`].
#[inline(always)]
pub(crate) fn check_weight<L: RawLock>(engine: &Engine<L>, weight: usize) -> Result<u32, Error> {
    match u32::try_from(weight) {
        Ok(0) => Err(Error::ZeroWeight {
            name: engine.name_handle(),
        }),
        Ok(weight) if weight as usize <= crate::MAX_CONCURRENT_LIMIT => Ok(weight),
        _ => {
            engine.count_rejection();
            Err(Error::WeightAboveLimit {
                name: engine.name_handle(),
                weight,
                max_concurrent: engine.max_concurrent(),
            })
        }
    }
}

/// The weight to split off a seat of `held`: `1 <= weight < held`.
pub(crate) fn split_weight(held: u32, weight: usize) -> Result<u32, SplitError> {
    match u32::try_from(weight) {
        Ok(w) if w >= 1 && w < held => Ok(w),
        _ => Err(SplitError {
            held: held as usize,
            requested: weight,
        }),
    }
}
