//! [`OwnedSeat`]: a seat that keeps its compartment alive.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use bulkhead_core::Error;

use crate::blocking::BlockingAcquire;
use crate::bulkhead::{Bulkhead, CoreBulkhead, Seat};

/// Leads core to the compartment inside a std [`Bulkhead`] handle.
struct Inner<P>(P);

impl<P: Deref<Target = Bulkhead>> Deref for Inner<P> {
    type Target = CoreBulkhead;

    fn deref(&self) -> &CoreBulkhead {
        self.0.core()
    }
}

/// A seat that owns a handle to its compartment (`Arc<Bulkhead>` by
/// default, or `&'static Bulkhead`), so it can move into a spawned thread
/// or task. Dropping it gives the seat back, like [`Seat`].
///
/// ```
/// use std::sync::Arc;
/// use bulkhead_std::{Bulkhead, OwnedSeat};
///
/// let db = Arc::new(Bulkhead::new("db", 1)?);
/// let seat = OwnedSeat::try_acquire(&db)?;
/// assert!(OwnedSeat::try_acquire(&db).is_err());
/// std::thread::spawn(move || drop(seat)).join().unwrap();
/// assert_eq!(db.state().active, 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a seat is given back as soon as it is dropped"]
pub struct OwnedSeat<P: Deref<Target = Bulkhead> = Arc<Bulkhead>> {
    seat: bulkhead_core::OwnedSeat<Inner<P>>,
}

impl<P: Deref<Target = Bulkhead> + Clone> OwnedSeat<P> {
    /// Takes a seat without waiting, as [`Bulkhead::try_acquire`], and
    /// keeps a clone of `handle` with it.
    ///
    /// # Errors
    /// As [`Bulkhead::try_acquire`].
    pub fn try_acquire(handle: &P) -> Result<Self, Error> {
        let seat = handle.try_acquire()?;
        Ok(Self::from_seat(seat, handle.clone()))
    }

    /// Takes a seat, waiting at most `max_wait`, as
    /// [`BlockingAcquire::acquire_blocking`].
    ///
    /// # Errors
    /// As [`BlockingAcquire::acquire_blocking`].
    pub fn acquire_blocking(handle: &P, max_wait: Option<Duration>) -> Result<Self, Error> {
        let seat = handle.acquire_blocking(max_wait)?;
        Ok(Self::from_seat(seat, handle.clone()))
    }
}

impl<P: Deref<Target = Bulkhead>> OwnedSeat<P> {
    /// Turns a borrowed seat into an owned one.
    ///
    /// # Panics
    /// If `handle` leads to another compartment than the seat's.
    pub fn from_seat(seat: Seat<'_>, handle: P) -> Self {
        Self {
            seat: bulkhead_core::OwnedSeat::from_seat(seat, Inner(handle)),
        }
    }

    /// The handle to the compartment.
    pub fn handle(&self) -> &P {
        &self.seat.handle().0
    }
}

impl<P: Deref<Target = Bulkhead>> fmt::Debug for OwnedSeat<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedSeat")
            .field("bulkhead", &self.handle().name())
            .finish()
    }
}
