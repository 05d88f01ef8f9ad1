//! [`Seat`], the RAII proof that a caller is inside a compartment.

use core::fmt;

use crate::engine::{Engine, Refusal};
use crate::error::Error;
#[cfg(feature = "weights")]
use crate::error::{MergeError, SplitError};
use crate::lock::RawLock;
use crate::weight::Weight;

/// A taken seat. Dropping it gives the seat back: to the next waiter in
/// FIFO mode, or to whoever takes it first in barging mode.
///
/// A seat has a *weight*: the number of the compartment's seats it holds,
/// 1 unless it came from `try_acquire_many` or `acquire_many` (feature
/// `weights`). It is given back whole, and `split` and `merge` change how
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
    /// Seats held, at least 1: 32 bits, as every count of seats (no room
    /// at all without the `weights` feature).
    pub(crate) weight: Weight,
}

impl<'a, L: RawLock> Seat<'a, L> {
    /// Only for `weight` seats that have been counted in the seat word.
    /// Every admission makes exactly one `Seat` here, so this is where the
    /// lock's admission hook runs (once per admission, whatever the
    /// weight). The seat exists before the hook runs, so a hook that
    /// panics gives the seat back as it unwinds instead of leaking it.
    #[inline]
    pub(crate) fn new(engine: &'a Engine<L>, weight: Weight) -> Self {
        let seat = Self { engine, weight };
        engine.lock.record_admission();
        seat
    }

    /// Takes `weight` seats together if they are free right now: the
    /// verdict of a wait that may not wait (`try_acquire`, a fail-fast
    /// budget). It is [`take_free`](Self::take_free), then, on a refusal,
    /// [`refused`]: the refusal is counted and described; a weight of 0 is
    /// refused and not counted (no caller was turned away for lack of
    /// room).
    #[inline(always)]
    pub(crate) fn try_take(engine: &'a Engine<L>, weight: usize) -> Result<Self, Error> {
        match Self::take_free(engine, weight) {
            Ok(seat) => Ok(seat),
            // The common refusal, built here, where the caller keeps it:
            // an error built out of line is returned through memory and
            // copied again by the caller, and on x86_64 that copy stalls
            // on store forwarding (a rejection took about 2.6× as long).
            // One seat is never above a limit (a limit of 0 is a pause).
            Err(Refusal::Full) if weight == 1 => Err(engine.reject_full()),
            Err(refusal) => Err(refused(engine, weight, refusal)),
        }
    }

    /// Takes `weight` seats together if they are free right now, under
    /// exactly `try_take`'s rules (the engine's newcomer take: in FIFO mode
    /// never past a waiter), and otherwise does nothing: no count, no call
    /// to the lock, no error built. A weight of 0 or above
    /// `MAX_CONCURRENT_LIMIT` is refused as `Full`; [`refused`] tells it
    /// apart.
    #[inline]
    pub(crate) fn take_free(engine: &'a Engine<L>, weight: usize) -> Result<Self, Refusal> {
        let Some(weight) = weight_in_range(weight) else {
            return Err(Refusal::Full);
        };
        engine.try_take(weight)?;
        Ok(Self::new(engine, weight))
    }

    /// How many of the compartment's seats this seat holds: always 1
    /// without the `weights` feature.
    ///
    /// ```
    /// # use bulkhead_core::{Bulkhead, CsLock};
    /// let gpu: Bulkhead<CsLock> = Bulkhead::new("gpu", 4).unwrap();
    /// assert_eq!(gpu.try_acquire().unwrap().weight(), 1);
    /// # #[cfg(feature = "weights")] {
    /// let seat = gpu.try_acquire_many(3).unwrap();
    /// assert_eq!(seat.weight(), 3);
    /// assert_eq!(gpu.state().active, 3);
    /// # }
    /// ```
    #[inline]
    pub fn weight(&self) -> usize {
        self.weight.seats()
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
    #[cfg(feature = "weights")]
    pub fn split(&mut self, weight: usize) -> Result<Self, SplitError> {
        let (kept, weight) = split_weight(self.weight, weight)?;
        self.weight = kept;
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
    #[cfg(feature = "weights")]
    pub fn merge(&mut self, other: Self) -> Result<(), MergeError<Self>> {
        if !core::ptr::eq(self.engine, other.engine) {
            return Err(MergeError::new(
                self.engine.name_handle(),
                other.engine.name_handle(),
                other,
            ));
        }
        // Both weights are within the limit's 31 bits: their sum is at most
        // the seats the compartment has ever had out at once.
        self.weight = Weight::new(self.weight.get() + other.weight.get());
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

/// The error of a [`Seat::take_free`] refusal of `weight` seats, counted
/// unless the weight was 0 or the compartment closed: `try_take`'s slow
/// half, out of line: the refusal of one seat because the compartment is
/// full, the common one, is built inline by `try_take` instead.
#[cold]
#[inline(never)]
pub(crate) fn refused<L: RawLock>(engine: &Engine<L>, weight: usize, refusal: Refusal) -> Error {
    let weight = match check_weight(engine, weight) {
        Ok(weight) => weight,
        Err(e) => {
            if matches!(e, Error::WeightAboveLimit { .. }) {
                engine.count_rejection();
            }
            return e;
        }
    };
    match refusal {
        Refusal::Closed => engine.closed_error(),
        Refusal::Full if engine.oversized(weight) => {
            engine.count_rejection();
            engine.weight_above_limit(weight.seats())
        }
        Refusal::Full => engine.reject_full(),
    }
}

/// `weight` as the engine counts it, if a caller may ask for it (at least
/// 1 and at most `MAX_CONCURRENT_LIMIT`); `None` otherwise, describing
/// nothing. Without the `weights` feature every caller asks for 1.
#[inline(always)]
fn weight_in_range(weight: usize) -> Option<Weight> {
    #[cfg(feature = "weights")]
    {
        // Fits in 31 bits.
        (1..=crate::MAX_CONCURRENT_LIMIT)
            .contains(&weight)
            .then(|| Weight::new(weight as u32))
    }
    #[cfg(not(feature = "weights"))]
    {
        debug_assert_eq!(weight, 1, "only one seat at a time without `weights`");
        Some(Weight::ONE)
    }
}

/// `weight` as the engine counts it, if a caller may ask for it: at least
/// 1 ([`Error::ZeroWeight`] otherwise, never counted) and at most
/// `MAX_CONCURRENT_LIMIT` (more than any limit: [`Error::WeightAboveLimit`],
/// which the caller counts, after it has settled its own state, since the
/// count runs the lock's rejection hook). Without the `weights` feature
/// every caller asks for 1.
#[inline(always)]
pub(crate) fn check_weight<L: RawLock>(engine: &Engine<L>, weight: usize) -> Result<Weight, Error> {
    match weight_in_range(weight) {
        Some(weight) => Ok(weight),
        None if weight == 0 => Err(Error::ZeroWeight {
            name: engine.name_handle(),
        }),
        None => Err(engine.weight_above_limit(weight)),
    }
}

/// Splits `weight` off a seat of `held`, `1 <= weight < held`: the weights
/// kept and split off.
#[cfg(feature = "weights")]
pub(crate) fn split_weight(held: Weight, weight: usize) -> Result<(Weight, Weight), SplitError> {
    let held = held.get();
    match u32::try_from(weight) {
        Ok(w) if w >= 1 && w < held => Ok((Weight::new(held - w), Weight::new(w))),
        _ => Err(SplitError {
            held: held as usize,
            requested: weight,
        }),
    }
}
