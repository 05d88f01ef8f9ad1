//! [`Seat`], the RAII proof that a caller is inside a compartment.

use core::fmt;
use core::ops::Deref;

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
    /// Only for a seat that has been counted in the seat word. Every
    /// admission makes exactly one `Seat` here, so this is where the
    /// lock's admission hook runs.
    /// The seat exists before the hook runs, so a hook that panics gives
    /// the seat back as it unwinds instead of leaking it.
    #[inline]
    pub(crate) fn new(bulkhead: &'a Bulkhead<L>) -> Self {
        let seat = Self { bulkhead };
        bulkhead.raw_lock().record_admission();
        seat
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

/// Anything that leads to a compartment and can be kept: `&Bulkhead`,
/// `Arc<Bulkhead>`, `Rc<Bulkhead>`, `&'static Bulkhead`, or a value that
/// holds its compartment inline. Implemented for every
/// `Deref<Target = Bulkhead<L>>`.
///
/// Every `deref` of one handle must lead to the same compartment: a seat
/// is taken through one `deref` and given back through a later one, so a
/// handle that switches compartments would move a seat from one count to
/// the other (never memory unsafety, but both limits would be wrong).
pub trait Handle: Deref<Target = Bulkhead<Self::Lock>> {
    /// The compartment's lock.
    type Lock: RawLock;
}

impl<P, L> Handle for P
where
    P: Deref<Target = Bulkhead<L>>,
    L: RawLock,
{
    type Lock = L;
}

/// A seat that owns a handle to its compartment instead of borrowing it, so
/// it can move into a spawned task or thread (`OwnedSeat<Arc<Bulkhead<_>>>`).
///
/// Dropping it gives the seat back, exactly like [`Seat`].
///
/// ```
/// # extern crate std;
/// # use std::{sync::Arc, thread};
/// use bulkhead_core::{Bulkhead, CsLock, OwnedSeat};
///
/// let db = Arc::new(Bulkhead::<CsLock>::new("db", 1).unwrap());
/// let seat = OwnedSeat::try_acquire(db.clone()).unwrap();
/// thread::spawn(move || drop(seat)).join().unwrap();
/// assert_eq!(db.state().active, 0);
/// ```
#[must_use = "a seat is given back as soon as it is dropped"]
pub struct OwnedSeat<P: Handle> {
    handle: P,
}

impl<P: Handle> OwnedSeat<P> {
    /// Takes a seat without waiting, as [`Bulkhead::try_acquire`], and keeps
    /// `handle` with it.
    ///
    /// # Errors
    /// As [`Bulkhead::try_acquire`].
    pub fn try_acquire(handle: P) -> Result<Self, crate::Error> {
        let seat = handle.try_acquire()?;
        core::mem::forget(seat);
        Ok(Self { handle })
    }

    /// Waits for a seat, keeping `handle` with it: the owned form of
    /// [`Bulkhead::acquire`], a `'static` future when the handle is
    /// (see [`AcquireOwned`](crate::AcquireOwned)).
    pub fn acquire(handle: P) -> crate::AcquireOwned<P>
    where
        P::Lock: 'static,
    {
        crate::AcquireOwned::new(handle)
    }

    /// A seat already counted in the compartment's seat word.
    pub(crate) fn counted(handle: P) -> Self {
        Self { handle }
    }

    /// Turns a borrowed seat into an owned one. `handle` must lead to the
    /// seat's own compartment.
    ///
    /// # Panics
    /// If `handle` leads to another compartment: giving the seat back there
    /// would corrupt both compartments' counts.
    pub fn from_seat(seat: Seat<'_, P::Lock>, handle: P) -> Self {
        assert!(
            core::ptr::eq(seat.bulkhead, &*handle),
            "OwnedSeat::from_seat: the handle leads to `{}`, but the seat belongs to `{}`",
            handle.name(),
            seat.bulkhead.name()
        );
        core::mem::forget(seat);
        Self { handle }
    }

    /// The handle to the compartment.
    pub fn handle(&self) -> &P {
        &self.handle
    }
}

impl<P: Handle> Drop for OwnedSeat<P> {
    #[inline]
    fn drop(&mut self) {
        self.handle.release();
    }
}

impl<P: Handle> fmt::Debug for OwnedSeat<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedSeat")
            .field("bulkhead", &self.handle.name())
            .finish()
    }
}
