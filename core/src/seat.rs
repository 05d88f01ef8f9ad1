//! [`Seat`], the RAII proof that a caller is inside a compartment.

use core::fmt;

use crate::bulkhead::Bulkhead;
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
    bulkhead: &'a Bulkhead<L>,
}

impl<'a, L: RawLock> Seat<'a, L> {
    /// Only for a seat that has been counted in the seat word.
    pub(crate) fn new(bulkhead: &'a Bulkhead<L>) -> Self {
        Self { bulkhead }
    }

    /// The compartment this seat belongs to.
    pub fn bulkhead(&self) -> &'a Bulkhead<L> {
        self.bulkhead
    }
}

impl<L: RawLock> Drop for Seat<'_, L> {
    #[inline]
    fn drop(&mut self) {
        self.bulkhead.release();
    }
}

impl<L: RawLock> fmt::Debug for Seat<'_, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Seat")
            .field("bulkhead", &self.bulkhead.name())
            .finish()
    }
}
