//! [`LayerHandle`]: the three kinds of compartment a
//! [`BulkheadLayer`](super::BulkheadLayer) admits requests through, and
//! the seat each one's admitted requests hold.

use std::fmt;
use std::sync::Arc;

use bulkhead_core::limit::{Adaptive, CallOutcome, Clock, Limit, Sample};
use bulkhead_core::{Bulkhead, Handle, MaxWait, OwnedSeat, RawLock, Seat};
use bulkhead_std::StdLock;
use bulkhead_std::registry::{Domain, RegistrySeat};

use crate::AcquireWithinOwned;

/// What a [`BulkheadLayer`](super::BulkheadLayer) admits requests through:
///
/// - `Arc<Bulkhead<L>>`, a compartment with a fixed limit: its requests
///   record nothing;
/// - `Arc<Adaptive<L, A, C>>`, an adaptive compartment (core's
///   [`Adaptive`], for instance bulkhead-std's `Adaptive<A>`, or one timed
///   by [`TokioClock`](crate::TokioClock)): each admitted request records
///   one sample on the compartment's clock when its response completes;
/// - a registry [`Domain`]: adaptive when its configuration has a `limit`,
///   fixed otherwise, decided when the domain is looked up; its layer
///   starts with the domain's configured `max_wait`.
///
/// Sealed: these three are the only ones.
pub trait LayerHandle: Clone + sealed::Admit {}

impl<L: RawLock + 'static> LayerHandle for Arc<Bulkhead<L>> {}
impl<L: RawLock + 'static, A: Limit, C: Clock> LayerHandle for Arc<Adaptive<L, A, C>> {}
impl LayerHandle for Domain {}

pub(crate) mod sealed {
    use std::future::Future;

    use super::{Bulkhead, CallOutcome, Handle, MaxWait, OwnedSeat, RawLock, Seat};
    use crate::AcquireWithinOwned;
    use bulkhead_core::Error;

    /// What a layer's response future holds for a request: the wait of
    /// a request that waits for its seat, and the seat of an admitted
    /// one. Shared by [`LayerHandle`](super::LayerHandle)s and a
    /// partitioned compartment's `Arc`, so that one response future
    /// serves both layers.
    pub trait Hold {
        /// The named wait of a request that waits for its seat.
        type Wait: Future<Output = Result<Self::Waited, Error>>;
        /// What the wait resolves to.
        type Waited;
        /// What a request that waits for its seat keeps to start the seat
        /// once admitted (nothing unless the seat is timed).
        type Feedback;
        /// The seat an admitted request holds until its response is ready.
        type Seat;

        /// The seat of a request admitted after a wait, timed from now.
        fn start_later(feedback: &Self::Feedback, seat: Self::Waited) -> Self::Seat;
        /// Gives the seat back, recording `outcome()` first if it is timed
        /// (`outcome` is not called otherwise).
        fn finish(seat: Self::Seat, outcome: impl FnOnce() -> CallOutcome);
        /// Whether the seat records a sample when given back.
        fn is_timed(seat: &Self::Seat) -> bool;
    }

    /// How a [`LayerHandle`](super::LayerHandle) admits a request and
    /// feeds its limit. Not nameable outside the crate, so nothing else
    /// implements it.
    pub trait Admit:
        Hold<Wait = AcquireWithinOwned<Self::Owner>, Waited = OwnedSeat<Self::Owner>>
    {
        /// The compartment's lock.
        type Lock: RawLock + 'static;
        /// What an owned seat holds: the handle itself, or the `Arc` of
        /// the compartment behind it.
        type Owner: Handle<Lock = Self::Lock>;

        /// The compartment.
        fn bulkhead(&self) -> &Bulkhead<Self::Lock>;
        /// A new owner (an `Arc` clone), for an owned seat or wait.
        fn owner(&self) -> Self::Owner;
        /// What a waiting request keeps; see [`Hold::Feedback`].
        fn feedback(&self) -> Self::Feedback;
        /// Whether admitted requests record samples.
        fn is_adaptive(&self) -> bool;
        /// The wait budget a layer starts with.
        fn default_max_wait(&self) -> MaxWait;

        /// The seat of a request admitted at once.
        fn start(&self, seat: Seat<'_, Self::Lock>) -> Self::Seat;
    }
}

impl<L: RawLock + 'static> sealed::Hold for Arc<Bulkhead<L>> {
    type Wait = AcquireWithinOwned<Self>;
    type Waited = OwnedSeat<Self>;
    type Feedback = ();
    type Seat = OwnedSeat<Self>;

    fn start_later((): &(), seat: OwnedSeat<Self>) -> Self::Seat {
        seat
    }
    fn finish(seat: Self::Seat, _: impl FnOnce() -> CallOutcome) {
        drop(seat);
    }
    fn is_timed(_: &Self::Seat) -> bool {
        false
    }
}

impl<L: RawLock + 'static> sealed::Admit for Arc<Bulkhead<L>> {
    type Lock = L;
    type Owner = Self;

    fn bulkhead(&self) -> &Bulkhead<L> {
        self
    }
    fn owner(&self) -> Self {
        Arc::clone(self)
    }
    fn feedback(&self) {}
    fn is_adaptive(&self) -> bool {
        false
    }
    fn default_max_wait(&self) -> MaxWait {
        MaxWait::FailFast
    }
    fn start(&self, seat: Seat<'_, L>) -> Self::Seat {
        // The `Arc` is cloned only for an admitted request: a rejection
        // touches no reference count.
        OwnedSeat::from_seat(seat, Arc::clone(self))
    }
}

impl<L: RawLock + 'static, A: Limit, C: Clock> sealed::Hold for Arc<Adaptive<L, A, C>> {
    type Wait = AcquireWithinOwned<Self>;
    type Waited = OwnedSeat<Self>;
    type Feedback = ();
    type Seat = TimedSeat<L, A, C>;

    fn start_later((): &(), seat: OwnedSeat<Self>) -> Self::Seat {
        TimedSeat::new(seat)
    }
    fn finish(mut seat: Self::Seat, outcome: impl FnOnce() -> CallOutcome) {
        seat.finish(outcome());
    }
    fn is_timed(_: &Self::Seat) -> bool {
        true
    }
}

impl<L: RawLock + 'static, A: Limit, C: Clock> sealed::Admit for Arc<Adaptive<L, A, C>> {
    type Lock = L;
    type Owner = Self;

    fn bulkhead(&self) -> &Bulkhead<L> {
        Adaptive::bulkhead(self)
    }
    fn owner(&self) -> Self {
        Arc::clone(self)
    }
    fn feedback(&self) {}
    fn is_adaptive(&self) -> bool {
        true
    }
    fn default_max_wait(&self) -> MaxWait {
        MaxWait::FailFast
    }
    fn start(&self, seat: Seat<'_, L>) -> Self::Seat {
        TimedSeat::new(OwnedSeat::from_seat(seat, Arc::clone(self)))
    }
}

impl sealed::Hold for Domain {
    type Wait = AcquireWithinOwned<Arc<Bulkhead<StdLock>>>;
    type Waited = OwnedSeat<Arc<Bulkhead<StdLock>>>;
    // The domain only if it is adaptive: a fixed one's waiting requests
    // clone nothing more.
    type Feedback = Option<Domain>;
    type Seat = RegistrySeat;

    fn start_later(feedback: &Option<Domain>, seat: Self::Waited) -> RegistrySeat {
        match feedback {
            Some(domain) => track(domain, seat),
            None => RegistrySeat::from(seat),
        }
    }
    fn finish(seat: RegistrySeat, outcome: impl FnOnce() -> CallOutcome) {
        // The classifier runs only for a timed seat.
        if seat.is_timed() {
            let _ = seat.record(outcome());
        }
    }
    fn is_timed(seat: &RegistrySeat) -> bool {
        seat.is_timed()
    }
}

impl sealed::Admit for Domain {
    type Lock = StdLock;
    type Owner = Arc<Bulkhead<StdLock>>;

    fn bulkhead(&self) -> &Bulkhead<StdLock> {
        Domain::bulkhead(self)
    }
    fn owner(&self) -> Self::Owner {
        Arc::clone(Domain::bulkhead(self))
    }
    fn feedback(&self) -> Option<Domain> {
        self.controller().is_some().then(|| self.clone())
    }
    fn is_adaptive(&self) -> bool {
        self.controller().is_some()
    }
    fn default_max_wait(&self) -> MaxWait {
        self.config().max_wait
    }
    fn start(&self, seat: Seat<'_, StdLock>) -> RegistrySeat {
        track(self, OwnedSeat::from_seat(seat, self.owner()))
    }
}

/// A seat of `domain` (taken from its own `Arc`), timed if it is adaptive.
fn track(domain: &Domain, seat: OwnedSeat<Arc<Bulkhead<StdLock>>>) -> RegistrySeat {
    // `track` hands back a seat of another compartment untouched; the seat
    // came from `domain`'s compartment, so that never happens.
    domain.track(seat).unwrap_or_else(RegistrySeat::from)
}

/// An owned seat of an adaptive compartment, timed from admission: it
/// records one sample when given back, with the outcome of
/// [`finish`](Self::finish), or, dropped without one (the response future
/// was dropped, a client that hung up), a success, the default of every
/// adaptive seat; a drop during a panic records a drop.
pub struct TimedSeat<L: RawLock, A: Limit, C: Clock> {
    // `None` once the sample is recorded and the seat given back.
    seat: Option<OwnedSeat<Arc<Adaptive<L, A, C>>>>,
    started: u64,
    in_flight: usize,
}

impl<L: RawLock, A: Limit, C: Clock> TimedSeat<L, A, C> {
    fn new(seat: OwnedSeat<Arc<Adaptive<L, A, C>>>) -> Self {
        let adaptive = seat.handle();
        Self {
            in_flight: adaptive.bulkhead().active(),
            started: adaptive.clock().now_nanos(),
            seat: Some(seat),
        }
    }

    /// Records the sample, then gives the seat back (so that a lower limit
    /// already applies to it).
    fn finish(&mut self, outcome: CallOutcome) {
        if let Some(seat) = self.seat.take() {
            let adaptive = seat.handle();
            let rtt = adaptive.clock().now_nanos().saturating_sub(self.started);
            adaptive.record(&Sample::from_nanos(rtt, self.in_flight, outcome));
            drop(seat);
        }
    }
}

impl<L: RawLock, A: Limit, C: Clock> Drop for TimedSeat<L, A, C> {
    fn drop(&mut self) {
        let outcome = if std::thread::panicking() {
            CallOutcome::Dropped
        } else {
            CallOutcome::Success
        };
        self.finish(outcome);
    }
}

impl<L: RawLock, A: Limit, C: Clock> fmt::Debug for TimedSeat<L, A, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimedSeat")
            .field(
                "bulkhead",
                &self.seat.as_ref().map(|s| s.handle().bulkhead().name()),
            )
            .field("in_flight", &self.in_flight)
            .finish()
    }
}
