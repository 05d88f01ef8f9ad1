//! [`AcquireOwned`]: the wait for a seat that owns its compartment handle,
//! so that it is `'static` and can be named (a tower response future, a
//! spawned task) without boxing.

use core::fmt;
use core::pin::Pin;
use core::ptr::NonNull;
use core::task::{Context, Poll};
use core::time::Duration;

use crate::acquire::Acquire;
use crate::bulkhead::Bulkhead;
use crate::error::Error;
use crate::seat::{Handle, OwnedSeat, Seat};

/// Waits for a seat, holding the compartment's handle (`Arc<Bulkhead<_>>`,
/// `&'static Bulkhead<_>`, …) instead of borrowing it; resolves to an
/// [`OwnedSeat`]. Returned by [`OwnedSeat::acquire`].
///
/// It is [`Acquire`] with the handle inside: the same line, the same
/// verdicts, the same [`abandon`](Self::abandon) and
/// [`time_out`](Self::time_out) for building bounded waits. Because it
/// borrows nothing, it is `'static` whenever the handle is, so adapters can
/// store it in a named future without allocating.
///
/// # Cancel safety
/// As [`Acquire`]: dropping it at any point loses nothing.
///
/// # Memory ordering
/// As [`Acquire`].
///
/// # Pinning
/// `!Unpin`, like [`Acquire`]; it does nothing until its first poll.
///
/// ```
/// # extern crate std;
/// # use std::sync::Arc;
/// use core::{pin::pin, task::{Context, Poll, Waker}};
/// use bulkhead_core::{Bulkhead, CsLock, OwnedSeat};
///
/// let db = Arc::new(Bulkhead::<CsLock>::new("db", 1).unwrap());
/// let first = OwnedSeat::try_acquire(db.clone()).unwrap();
/// let mut waiting = pin!(OwnedSeat::acquire(db.clone()));
/// let mut cx = Context::from_waker(Waker::noop());
/// assert!(waiting.as_mut().poll(&mut cx).is_pending());
/// drop(first); // handed straight to the waiter
/// let Poll::Ready(Ok(seat)) = waiting.poll(&mut cx) else { panic!() };
/// assert!(Arc::ptr_eq(seat.handle(), &db));
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct AcquireOwned<P: Handle>
where
    P::Lock: 'static,
{
    // Declared before `handle`, so that it is dropped first: it borrows
    // the compartment that `handle` leads to.
    acquire: Option<Acquire<'static, P::Lock>>,
    /// `None` once the future has resolved (the handle went into the seat).
    handle: Option<P>,
    /// Whether the inner wait, now dropped, had queued.
    queued: bool,
}

impl<P: Handle> AcquireOwned<P>
where
    P::Lock: 'static,
{
    pub(crate) fn new(handle: P) -> Self {
        Self {
            acquire: None,
            handle: Some(handle),
            queued: false,
        }
    }

    /// The handle, until the future resolves.
    pub fn handle(&self) -> Option<&P> {
        self.handle.as_ref()
    }

    /// Whether this wait joined the line, as [`Acquire::has_queued`]; it
    /// stays true once the future has finished.
    pub fn has_queued(&self) -> bool {
        self.queued || self.acquire.as_ref().is_some_and(Acquire::has_queued)
    }

    /// The inner wait, made at the first poll from the handle.
    fn acquire(self: Pin<&mut Self>) -> Pin<&mut Acquire<'static, P::Lock>> {
        // SAFETY: `acquire` is structurally pinned: it is never moved out
        // of; it is only ever replaced by assignment, which drops the old
        // value in place. `handle` is not structurally pinned.
        let this = unsafe { self.get_unchecked_mut() };
        if this.acquire.is_none() {
            let handle = this
                .handle
                .as_ref()
                .expect("`AcquireOwned` polled after it completed");
            let bulkhead: NonNull<Bulkhead<P::Lock>> = NonNull::from(handle.bulkhead());
            // SAFETY: the compartment outlives this `'static` borrow's
            // every use. `handle` leads to it (`Handle::bulkhead` borrows
            // the handle, or what it keeps alive) and is kept in this future,
            // unmoved while the future is pinned, until `acquire` is
            // dropped: `acquire` is dropped first (field order, and
            // explicitly in `finish`), and `handle` is only moved out after
            // that. An `Acquire` that is done or dropped never touches its
            // compartment again. The `Seat<'static>` it resolves to is
            // forgotten before the handle moves, and never passed to a call
            // that moves it (see `settle`): with a handle that holds its
            // compartment inline, that move moves the compartment.
            let bulkhead: &'static Bulkhead<P::Lock> = unsafe { bulkhead.as_ref() };
            this.acquire = Some(bulkhead.acquire());
        }
        match this.acquire.as_mut() {
            // SAFETY: pinned, as above.
            Some(acquire) => unsafe { Pin::new_unchecked(acquire) },
            None => unreachable!("made above"),
        }
    }

    /// Ends the inner wait and gives back the handle.
    fn take_handle(self: Pin<&mut Self>) -> P {
        // SAFETY: `acquire` is dropped in place by the assignment, before
        // `handle` (not structurally pinned) is moved out.
        let this = unsafe { self.get_unchecked_mut() };
        this.queued |= this.acquire.as_ref().is_some_and(Acquire::has_queued);
        this.acquire = None;
        this.handle
            .take()
            .expect("`AcquireOwned` polled after it completed")
    }

    /// Ends the inner wait with `result`, in which the inner seat has
    /// already been forgotten (`Ok(())`): its count moves to the owned
    /// seat.
    ///
    /// The inner `Seat<'static>` must be gone before this is called, never
    /// passed in: a reference held by a function argument must stay valid
    /// for the whole call, and with a handle that holds its compartment
    /// inline, moving the handle out moves the compartment that reference
    /// points to (undefined behaviour, even if the seat is never used).
    fn settle(self: Pin<&mut Self>, result: Result<(), Error>) -> Result<OwnedSeat<P>, Error> {
        let handle = self.take_handle();
        result.map(|()| OwnedSeat::counted(handle))
    }

    /// Stops waiting, as [`Acquire::abandon`]: the seat if one had already
    /// been handed over, `None` otherwise. The future is then finished; on
    /// a future that has already finished (resolved or abandoned) it does
    /// nothing and returns `None`, as [`Acquire::abandon`] does.
    pub fn abandon(mut self: Pin<&mut Self>) -> Option<OwnedSeat<P>> {
        // Finished: the handle went into the seat or an earlier abandon.
        self.handle.as_ref()?;
        let seated = self.as_mut().acquire().abandon().map(forget_seat);
        let handle = self.take_handle();
        seated.map(|()| OwnedSeat::counted(handle))
    }

    /// Gives up after a wait budget ran out, as [`Acquire::time_out`]: the
    /// seat if one was handed over in the meantime, otherwise
    /// [`Error::Timeout`] (or [`Error::Closed`]). The future is then
    /// finished.
    ///
    /// # Errors
    /// As [`Acquire::time_out`].
    ///
    /// # Panics
    /// If the future has already finished: its handle went into the seat
    /// (or was dropped by [`abandon`](Self::abandon)), so there is no
    /// compartment left to name in the error. Adapters call it only on a
    /// wait that is still pending.
    pub fn time_out(mut self: Pin<&mut Self>, budget: Duration) -> Result<OwnedSeat<P>, Error> {
        let result = self.as_mut().acquire().time_out(budget).map(forget_seat);
        self.settle(result)
    }
}

impl<P: Handle> Future for AcquireOwned<P>
where
    P::Lock: 'static,
{
    type Output = Result<OwnedSeat<P>, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.as_mut().acquire().poll(cx) {
            Poll::Ready(result) => Poll::Ready(self.settle(result.map(forget_seat))),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Forgets the inner wait's seat, whose count an [`OwnedSeat`] takes over;
/// see `AcquireOwned::settle` for why this happens before the handle
/// moves, outside any call that also moves it.
fn forget_seat<L: crate::lock::RawLock>(seat: Seat<'static, L>) {
    core::mem::forget(seat);
}

impl<P: Handle> fmt::Debug for AcquireOwned<P>
where
    P::Lock: 'static,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcquireOwned")
            .field(
                "bulkhead",
                &self.handle.as_ref().map(|h| h.bulkhead().name()),
            )
            .field("acquire", &self.acquire)
            .finish()
    }
}
