//! [`Seat`], the RAII proof that a caller is inside a compartment.

use core::fmt;

use crate::engine::{Engine, Refusal};
use crate::error::Error;
use crate::lock::RawLock;

/// A taken seat. Dropping it gives the seat back: to the oldest waiter in
/// FIFO mode, or to whoever takes it first in barging mode.
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
}

impl<'a, L: RawLock> Seat<'a, L> {
    /// Only for a seat that has been counted in the seat word. Every
    /// admission makes exactly one `Seat` here, so this is where the
    /// lock's admission hook runs.
    /// The seat exists before the hook runs, so a hook that panics gives
    /// the seat back as it unwinds instead of leaking it.
    #[inline]
    pub(crate) fn new(engine: &'a Engine<L>) -> Self {
        let seat = Self { engine };
        engine.lock.record_admission();
        seat
    }

    /// Takes a seat if one is free right now: the fast path, and the
    /// verdict of a wait that may not wait (`try_acquire`, a fail-fast
    /// budget). A refusal is counted and described.
    #[inline]
    pub(crate) fn try_take(engine: &'a Engine<L>) -> Result<Self, Error> {
        match engine.try_take() {
            Ok(()) => Ok(Self::new(engine)),
            Err(Refusal::Closed) => Err(engine.closed_error()),
            Err(Refusal::Full) => Err(engine.reject_full()),
        }
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
        self.engine.release();
    }
}

impl<L: RawLock> fmt::Debug for Seat<'_, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Seat")
            .field("bulkhead", &self.engine.name())
            .finish()
    }
}
