//! Seats and waits that own a handle to their compartment instead of
//! borrowing it: [`OwnedSeat`], [`AcquireOwned`] and
//! [`AcquireOwnedTimeout`], which are `'static` whenever the handle is, so
//! they can move into a spawned task or be named in a tower response
//! future without boxing; and [`Handle`], what such a handle is.

use core::fmt;
use core::ops::Deref;
use core::pin::Pin;
use core::ptr::NonNull;
use core::task::{Context, Poll};
use core::time::Duration;

use crate::acquire::{Acquire, Bounded, normalize, poll_bounded, timer};
use crate::bulkhead::Bulkhead;
use crate::error::Error;
#[cfg(feature = "weights")]
use crate::error::{MergeError, SplitError};
use crate::limit::{Adaptive, Clock, Limit};
use crate::lock::RawLock;
use crate::max_wait::MaxWait;
use crate::seat::Seat;
#[cfg(feature = "weights")]
use crate::seat::split_weight;
use crate::weight::Weight;

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

impl<L: RawLock, A: Limit, C: Clock> AsBulkhead for Adaptive<L, A, C> {
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
    /// Seats held, at least 1, as [`Seat::weight`].
    weight: Weight,
}

impl<P: Handle> OwnedSeat<P> {
    /// Takes a seat without waiting, as [`Bulkhead::try_acquire`], and keeps
    /// `handle` with it.
    ///
    /// # Errors
    /// As [`Bulkhead::try_acquire`].
    pub fn try_acquire(handle: P) -> Result<Self, Error> {
        let weight = forget_seat(handle.bulkhead().try_acquire()?);
        Ok(Self { handle, weight })
    }

    /// Takes `weight` seats at once without waiting, as
    /// [`Bulkhead::try_acquire_many`], and keeps `handle` with them.
    ///
    /// # Errors
    /// As [`Bulkhead::try_acquire_many`].
    ///
    /// ```
    /// # extern crate std;
    /// # use std::sync::Arc;
    /// use bulkhead_core::{Bulkhead, CsLock, OwnedSeat};
    ///
    /// let gpu = Arc::new(Bulkhead::<CsLock>::new("gpu", 4).unwrap());
    /// let seat = OwnedSeat::try_acquire_many(gpu.clone(), 3).unwrap();
    /// assert_eq!((seat.weight(), gpu.state().active), (3, 3));
    /// ```
    #[cfg(feature = "weights")]
    pub fn try_acquire_many(handle: P, weight: usize) -> Result<Self, Error> {
        let weight = forget_seat(handle.bulkhead().try_acquire_many(weight)?);
        Ok(Self { handle, weight })
    }

    /// Takes a seat if one is free right now, keeping `handle` with it,
    /// and otherwise gives `handle` back: the owned form of
    /// [`Bulkhead::acquire_if_free`], with its rules (it admits exactly
    /// when [`try_acquire`](Self::try_acquire) would; a miss builds no
    /// error and counts nothing). The handle comes back unchanged on a
    /// miss, so a caller can wait with it next without cloning it.
    ///
    /// ```
    /// # extern crate std;
    /// # use std::sync::Arc;
    /// use bulkhead_core::{Bulkhead, CsLock, OwnedSeat};
    ///
    /// let db = Arc::new(Bulkhead::<CsLock>::new("db", 1).unwrap());
    /// let seat = OwnedSeat::acquire_if_free(db.clone()).expect("a seat is free");
    /// let handle = OwnedSeat::acquire_if_free(db.clone()).unwrap_err();
    /// assert!(Arc::ptr_eq(&handle, &db)); // ready for `OwnedSeat::acquire(handle)`
    /// assert_eq!(db.state().rejected, 0);
    /// # drop(seat);
    /// ```
    ///
    /// # Errors
    /// `handle`, when no seat was free: not a rejection.
    #[inline]
    pub fn acquire_if_free(handle: P) -> Result<Self, P> {
        Self::take_free(handle, 1)
    }

    /// Takes `weight` seats at once if they are all free right now,
    /// keeping `handle` with them, and otherwise gives `handle` back: the
    /// owned form of [`Bulkhead::acquire_many_if_free`].
    ///
    /// # Errors
    /// `handle`, when the seats were not all free, or `weight` is 0 or
    /// above the limit (as [`Bulkhead::acquire_many_if_free`]).
    #[cfg(feature = "weights")]
    #[inline]
    pub fn acquire_many_if_free(handle: P, weight: usize) -> Result<Self, P> {
        Self::take_free(handle, weight)
    }

    /// `weight` seats if they are free right now, else `handle` back.
    #[inline]
    fn take_free(handle: P, weight: usize) -> Result<Self, P> {
        // The seat's count moves to the owned seat, and the seat is gone,
        // before the handle moves (see `AcquireOwned::settle`).
        let taken = Seat::take_free(handle.bulkhead().engine(), weight).map(forget_seat);
        match taken {
            Ok(weight) => Ok(Self { handle, weight }),
            Err(_) => Err(handle),
        }
    }

    /// Waits for a seat, keeping `handle` with it: the owned form of
    /// [`Bulkhead::acquire`], a `'static` future when the handle is
    /// (see [`AcquireOwned`]).
    pub fn acquire(handle: P) -> AcquireOwned<P>
    where
        P::Lock: 'static,
    {
        AcquireOwned::new(handle, 1)
    }

    /// Waits for `weight` seats at once, keeping `handle` with them: the
    /// owned form of [`Bulkhead::acquire_many`].
    #[cfg(feature = "weights")]
    pub fn acquire_many(handle: P, weight: usize) -> AcquireOwned<P>
    where
        P::Lock: 'static,
    {
        AcquireOwned::new(handle, weight)
    }

    /// Waits for a seat at most `max_wait`, on a timer you supply, keeping
    /// `handle` with it: the owned form of
    /// [`Bulkhead::acquire_timeout`], with the same budgets (`FailFast`
    /// and a zero `UpTo` decide at the first poll and never call `sleep`;
    /// `UpTo(d)` calls `sleep(d)` here; `Forever` waits without a timer).
    /// A `'static` future when the handle and the timer are.
    ///
    /// ```
    /// # extern crate std;
    /// # use std::sync::Arc;
    /// use core::{future::{ready, Ready}, pin::pin, task::{Context, Poll, Waker}, time::Duration};
    /// use bulkhead_core::{Bulkhead, CsLock, Error, MaxWait, OwnedSeat};
    ///
    /// let db = Arc::new(Bulkhead::<CsLock>::new("db", 1)?);
    /// let mut cx = Context::from_waker(Waker::noop());
    /// let no_timer = |_: Duration| -> Ready<()> { unreachable!() };
    ///
    /// // Fail fast, with a seat free: the owned seat at the first poll.
    /// let wait = pin!(OwnedSeat::acquire_timeout(db.clone(), MaxWait::FailFast, no_timer));
    /// let Poll::Ready(Ok(held)) = wait.poll(&mut cx) else { panic!() };
    ///
    /// // Fail fast (here a zero budget), all seats taken: `Full`.
    /// let wait = pin!(OwnedSeat::acquire_timeout(db.clone(), Duration::ZERO, no_timer));
    /// assert!(matches!(wait.poll(&mut cx), Poll::Ready(Err(Error::Full { .. }))));
    ///
    /// // Up to 10 ms, on a timer that has already run out: `Timeout`.
    /// let up_to = MaxWait::UpTo(Duration::from_millis(10));
    /// let wait = pin!(OwnedSeat::acquire_timeout(db.clone(), up_to, |_| ready(())));
    /// assert!(matches!(wait.poll(&mut cx), Poll::Ready(Err(Error::Timeout { .. }))));
    ///
    /// // Forever: the seat comes when the holder gives it back.
    /// let mut wait = pin!(OwnedSeat::acquire_timeout(db.clone(), MaxWait::Forever, no_timer));
    /// assert!(wait.as_mut().poll(&mut cx).is_pending());
    /// drop(held);
    /// let Poll::Ready(Ok(seat)) = wait.poll(&mut cx) else { panic!() };
    /// assert!(Arc::ptr_eq(seat.handle(), &db));
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Bulkhead::acquire_timeout`].
    pub fn acquire_timeout<T: Future>(
        handle: P,
        max_wait: impl Into<MaxWait>,
        sleep: impl FnOnce(Duration) -> T,
    ) -> AcquireOwnedTimeout<P, T>
    where
        P::Lock: 'static,
    {
        AcquireOwnedTimeout::new(AcquireOwned::new(handle, 1), max_wait, sleep)
    }

    /// Waits for `weight` seats at once at most `max_wait`, on a timer you
    /// supply, keeping `handle` with them: the owned form of
    /// [`Bulkhead::acquire_many_timeout`].
    ///
    /// # Errors
    /// As [`Bulkhead::acquire_many_timeout`].
    #[cfg(feature = "weights")]
    pub fn acquire_many_timeout<T: Future>(
        handle: P,
        weight: usize,
        max_wait: impl Into<MaxWait>,
        sleep: impl FnOnce(Duration) -> T,
    ) -> AcquireOwnedTimeout<P, T>
    where
        P::Lock: 'static,
    {
        AcquireOwnedTimeout::new(AcquireOwned::new(handle, weight), max_wait, sleep)
    }

    /// `weight` seats already counted in the compartment's seat word.
    pub(crate) fn counted(handle: P, weight: Weight) -> Self {
        Self { handle, weight }
    }

    /// How many of the compartment's seats this seat holds, as
    /// [`Seat::weight`]: always 1 without the `weights` feature.
    pub fn weight(&self) -> usize {
        self.weight.seats()
    }

    /// Splits `weight` seats off into a new owned seat with a clone of the
    /// handle, as [`Seat::split`].
    ///
    /// # Errors
    /// As [`Seat::split`].
    #[cfg(feature = "weights")]
    pub fn split(&mut self, weight: usize) -> Result<Self, SplitError>
    where
        P: Clone,
    {
        let (kept, weight) = split_weight(self.weight, weight)?;
        self.weight = kept;
        Ok(Self {
            handle: self.handle.clone(),
            weight,
        })
    }

    /// Merges `other`, a seat of the same compartment, into this one, as
    /// [`Seat::merge`]; `other`'s handle is dropped.
    ///
    /// # Errors
    /// As [`Seat::merge`]: a seat of another compartment comes back in
    /// the error, still held.
    ///
    /// ```
    /// # extern crate std;
    /// # use std::sync::Arc;
    /// use bulkhead_core::{Bulkhead, CsLock, OwnedSeat};
    ///
    /// let db = Arc::new(Bulkhead::<CsLock>::new("db", 4).unwrap());
    /// let mut seat = OwnedSeat::try_acquire_many(db.clone(), 3).unwrap();
    /// let one = seat.split(1).unwrap();
    /// seat.merge(one).unwrap();
    /// assert_eq!((seat.weight(), db.state().active), (3, 3));
    /// ```
    #[cfg(feature = "weights")]
    pub fn merge(&mut self, other: Self) -> Result<(), MergeError<Self>> {
        let (mine, theirs) = (self.handle.bulkhead(), other.handle.bulkhead());
        if !core::ptr::eq(mine, theirs) {
            return Err(MergeError::new(
                mine.name_handle(),
                theirs.name_handle(),
                other,
            ));
        }
        // Within 31 bits, as for `Seat::merge`.
        self.weight = Weight::new(self.weight.get() + other.weight.get());
        let mut other = core::mem::ManuallyDrop::new(other);
        // SAFETY: `other` is never used again and its `Drop` never runs
        // (its seats are now this seat's); its handle is dropped exactly
        // once, here.
        unsafe { core::ptr::drop_in_place(&mut other.handle) };
        Ok(())
    }

    /// Turns a borrowed seat into an owned one. `handle` must lead to the
    /// seat's own compartment.
    ///
    /// # Panics
    /// If `handle` leads to another compartment: giving the seat back there
    /// would corrupt both compartments' counts.
    pub fn from_seat(seat: Seat<'_, P::Lock>, handle: P) -> Self {
        assert!(
            core::ptr::eq(seat.bulkhead(), handle.bulkhead()),
            "OwnedSeat::from_seat: the handle leads to `{}`, but the seat belongs to `{}`",
            handle.bulkhead().name(),
            seat.bulkhead().name()
        );
        let weight = forget_seat(seat);
        Self { handle, weight }
    }

    /// The handle to the compartment.
    pub fn handle(&self) -> &P {
        &self.handle
    }
}

impl<P: Handle> Drop for OwnedSeat<P> {
    #[inline]
    fn drop(&mut self) {
        self.handle.bulkhead().engine().release(self.weight);
    }
}

impl<P: Handle> fmt::Debug for OwnedSeat<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedSeat")
            .field("bulkhead", &self.handle.bulkhead().name())
            .field("weight", &self.weight)
            .finish()
    }
}

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
    /// The seats asked for, until the inner wait is made.
    #[cfg(feature = "weights")]
    weight: usize,
}

impl<P: Handle> AcquireOwned<P>
where
    P::Lock: 'static,
{
    /// A wait for `weight` seats (1 without the `weights` feature).
    pub(crate) fn new(handle: P, weight: usize) -> Self {
        #[cfg(not(feature = "weights"))]
        debug_assert_eq!(weight, 1, "only one seat at a time without `weights`");
        Self {
            acquire: None,
            handle: Some(handle),
            queued: false,
            #[cfg(feature = "weights")]
            weight,
        }
    }

    /// The seats asked for.
    #[inline(always)]
    fn weight(&self) -> usize {
        #[cfg(feature = "weights")]
        {
            self.weight
        }
        #[cfg(not(feature = "weights"))]
        {
            1
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
            // explicitly in `take_handle`), and `handle` is only moved out
            // after that; the fail-fast path (`Bounded::try_now`) takes the
            // handle before any inner wait exists. An `Acquire` that is done or dropped never touches its
            // compartment again. The `Seat<'static>` it resolves to is
            // forgotten before the handle moves, and never passed to a call
            // that moves it (see `settle`): with a handle that holds its
            // compartment inline, that move moves the compartment.
            let bulkhead: &'static Bulkhead<P::Lock> = unsafe { bulkhead.as_ref() };
            this.acquire = Some(Acquire::new(bulkhead.engine(), this.weight()));
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
    fn settle(self: Pin<&mut Self>, result: Result<Weight, Error>) -> Result<OwnedSeat<P>, Error> {
        let handle = self.take_handle();
        result.map(|weight| OwnedSeat::counted(handle, weight))
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
        seated.map(|weight| OwnedSeat::counted(handle, weight))
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
/// Returns its weight.
fn forget_seat<L: RawLock>(seat: Seat<'_, L>) -> Weight {
    let weight = seat.weight;
    core::mem::forget(seat);
    weight
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

impl<P: Handle> Bounded for AcquireOwned<P>
where
    P::Lock: 'static,
{
    fn try_now(self: Pin<&mut Self>) -> Self::Output {
        // Before the first poll there is no inner wait yet, so taking the
        // handle moves nothing that is pinned.
        let weight = self.weight();
        let handle = self.take_handle();
        let weight = forget_seat(Seat::try_take(handle.bulkhead().engine(), weight)?);
        Ok(OwnedSeat::counted(handle, weight))
    }

    fn time_out(self: Pin<&mut Self>, budget: Duration) -> Self::Output {
        AcquireOwned::time_out(self, budget)
    }
}

/// Waits for a seat at most a [`MaxWait`], on a timer the caller supplies,
/// holding the compartment's handle; resolves to an [`OwnedSeat`].
/// Returned by [`OwnedSeat::acquire_timeout`].
///
/// # Cancel safety
/// As [`Acquire`]: dropping it loses nothing. The timer is dropped with
/// it.
///
/// # Memory ordering
/// As [`Acquire`].
#[must_use = "futures do nothing unless polled"]
pub struct AcquireOwnedTimeout<P: Handle, T>
where
    P::Lock: 'static,
{
    acquire: AcquireOwned<P>,
    /// `Some` for `UpTo`: the caller's `sleep(budget)`.
    timer: Option<T>,
    /// Normalized: a zero `UpTo` is `FailFast`.
    max_wait: MaxWait,
}

impl<P: Handle, T> AcquireOwnedTimeout<P, T>
where
    P::Lock: 'static,
{
    /// `acquire` bounded by `max_wait` on the caller's timer.
    fn new(
        acquire: AcquireOwned<P>,
        max_wait: impl Into<MaxWait>,
        sleep: impl FnOnce(Duration) -> T,
    ) -> Self {
        let max_wait = normalize(max_wait.into());
        Self {
            acquire,
            timer: timer(max_wait, sleep),
            max_wait,
        }
    }

    /// Whether this wait joined the line, as [`Acquire::has_queued`].
    pub fn has_queued(&self) -> bool {
        self.acquire.has_queued()
    }
}

impl<P: Handle, T: Future> Future for AcquireOwnedTimeout<P, T>
where
    P::Lock: 'static,
{
    type Output = Result<OwnedSeat<P>, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: a pin projection: no field is moved out of, and each is
        // dropped in place with the struct (`timer` too: `as_pin_mut`
        // pins the `Option`'s contents where they are).
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: as above.
        let acquire = unsafe { Pin::new_unchecked(&mut this.acquire) };
        // SAFETY: as above.
        let timer = unsafe { Pin::new_unchecked(&mut this.timer) }.as_pin_mut();
        poll_bounded(acquire, timer, this.max_wait, cx)
    }
}

impl<P: Handle, T> fmt::Debug for AcquireOwnedTimeout<P, T>
where
    P::Lock: 'static,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcquireOwnedTimeout")
            .field("acquire", &self.acquire)
            .field("max_wait", &self.max_wait)
            .finish()
    }
}
