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
/// `Arc<Bulkhead>`, `Rc<Bulkhead>`, `&'static Bulkhead`, a value that
/// holds its compartment inline, and the same for anything built around
/// a compartment ([`AsBulkhead`]: an adaptive compartment,
/// `Arc<Adaptive<..>>`). Implemented for every [`Deref`] whose target is
/// [`AsBulkhead`].
///
/// Every [`bulkhead`](Self::bulkhead) of one handle must lead to the same
/// compartment: a seat is taken through one call and given back through a
/// later one, so a handle that switches compartments would move a seat
/// from one count to the other (never memory unsafety, but both limits
/// would be wrong).
pub trait Handle {
    /// The compartment's lock.
    type Lock: RawLock;

    /// The compartment the handle leads to.
    fn bulkhead(&self) -> &Bulkhead<Self::Lock>;
}

impl<P> Handle for P
where
    P: Deref,
    P::Target: AsBulkhead,
{
    type Lock = <P::Target as AsBulkhead>::Lock;

    #[inline]
    fn bulkhead(&self) -> &Bulkhead<Self::Lock> {
        (**self).as_bulkhead()
    }
}

/// A compartment, or a value built around exactly one: what a [`Handle`]
/// derefs to. Implemented for [`Bulkhead`] itself and for core's adaptive
/// compartment ([`Adaptive`](crate::limit::Adaptive)), so that
/// `OwnedSeat<Arc<Adaptive<..>>>` works like `OwnedSeat<Arc<Bulkhead<_>>>`.
///
/// ```
/// # extern crate std;
/// # use std::sync::Arc;
/// use bulkhead_core::{Bulkhead, CsLock, OwnedSeat};
/// use bulkhead_core::limit::{Adaptive, Aimd, AimdParams};
///
/// let aimd = Aimd::new(AimdParams { initial: 2, min: 1, max: 8, ..AimdParams::DEFAULT })?;
/// let api = Arc::new(Adaptive::new(Bulkhead::<CsLock>::new("api", 2)?, aimd, || 0));
/// let seat = OwnedSeat::try_acquire(Arc::clone(&api))?; // no wrapper type needed
/// assert_eq!(api.bulkhead().state().active, 1);
/// drop(seat);
/// assert_eq!(api.bulkhead().state().active, 0);
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
///
/// An owned seat counts against the compartment, but it is not an
/// adaptive seat: it records no sample for the limit. Feed the limit by
/// recording the call yourself (`Adaptive::controller`), or use the
/// adaptive compartment's own `try_acquire`.
pub trait AsBulkhead {
    /// The compartment's lock.
    type Lock: RawLock;

    /// The compartment.
    fn as_bulkhead(&self) -> &Bulkhead<Self::Lock>;
}

impl<L: RawLock> AsBulkhead for Bulkhead<L> {
    type Lock = L;

    #[inline]
    fn as_bulkhead(&self) -> &Bulkhead<L> {
        self
    }
}

impl<L: RawLock, A: crate::limit::Limit, C: crate::limit::Clock> AsBulkhead
    for crate::limit::Adaptive<L, A, C>
{
    type Lock = L;

    #[inline]
    fn as_bulkhead(&self) -> &Bulkhead<L> {
        self.bulkhead()
    }
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
        let seat = handle.bulkhead().try_acquire()?;
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
            core::ptr::eq(seat.bulkhead, handle.bulkhead()),
            "OwnedSeat::from_seat: the handle leads to `{}`, but the seat belongs to `{}`",
            handle.bulkhead().name(),
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
        self.handle.bulkhead().release();
    }
}

impl<P: Handle> fmt::Debug for OwnedSeat<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedSeat")
            .field("bulkhead", &self.handle.bulkhead().name())
            .finish()
    }
}
