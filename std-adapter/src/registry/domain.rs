//! [`Domain`] and [`RegistrySeat`]: one handle type for the registry's
//! static and adaptive compartments, and the seat that feeds an adaptive
//! limit when it is given back.

use std::fmt;
use std::sync::Arc;

use bulkhead_core::limit::{AnyLimit, CallOutcome, Clock, Controller, Recorded, Sample, Windowed};
use bulkhead_core::{Bulkhead as CoreBulkhead, Error, OwnedSeat, RawLock, State};

use super::settings::DomainConfig;
use crate::adaptive::StdClock;
use crate::{Bulkhead, StdLock};

/// The feedback path of a registered adaptive compartment: core's
/// [`Controller`] around the algorithm its [`LimitConfig`](crate::LimitConfig)
/// builds.
pub type DomainController = Controller<Windowed<AnyLimit>>;

/// A registered semaphore compartment as the registry's lookups that take
/// a seat see it: the compartment, the settings it runs with, and, for an
/// adaptive compartment, its [`DomainController`].
///
/// One type for static and adaptive compartments: its seats
/// ([`RegistrySeat`]) time themselves and feed the limit when the
/// compartment is adaptive, and are plain seats otherwise.
///
/// ```
/// use bulkhead_std::{Algorithm, LimitConfig};
/// use bulkhead_std::registry::{DomainConfig, Registry};
///
/// let registry = Registry::local();
/// registry.get_or_create("search", DomainConfig::new(4).limit(LimitConfig::new(Algorithm::Aimd)))?;
/// let search = registry.domain("search")?;
/// let seat = search.try_acquire()?;
/// drop(seat); // a success, fed to the limit
/// assert!(registry.domain("database")?.controller().is_none()); // static
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Domain {
    pub(super) bulkhead: Arc<Bulkhead>,
    pub(super) controller: Option<Arc<DomainController>>,
    pub(super) config: DomainConfig,
}

impl Domain {
    /// The compartment.
    pub fn bulkhead(&self) -> &Arc<Bulkhead> {
        &self.bulkhead
    }

    /// The compartment's seat counters, as on every compartment: for an
    /// adaptive one, `max_concurrent` is the current limit.
    ///
    /// ```
    /// use bulkhead_std::registry::Registry;
    ///
    /// let registry = Registry::local();
    /// let database = registry.domain("database")?;
    /// let seat = database.try_acquire()?;
    /// let state = database.state();
    /// assert_eq!((state.max_concurrent, state.active), (10, 1));
    /// drop(seat);
    /// assert_eq!(database.state().active, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn state(&self) -> State {
        self.bulkhead.state()
    }

    /// The settings it runs with (for an adaptive compartment,
    /// `max_concurrent` is where the limit started; the current limit is
    /// in [`state`](Self::state)).
    pub fn config(&self) -> &DomainConfig {
        &self.config
    }

    /// The adaptive limit's controller (its `changes` and `skipped`
    /// counters), or `None` for a compartment with a fixed limit.
    pub fn controller(&self) -> Option<&DomainController> {
        self.controller.as_deref()
    }

    /// Takes a seat if one is free right now; it times itself if the
    /// compartment is adaptive.
    ///
    /// # Errors
    /// As [`Bulkhead::try_acquire`](bulkhead_core::Bulkhead::try_acquire).
    pub fn try_acquire(&self) -> Result<RegistrySeat, Error> {
        self.try_acquire_many(1)
    }

    /// Takes `weight` seats at once, as one seat of that weight, if they
    /// are all free right now (core's
    /// [`try_acquire_many`](bulkhead_core::Bulkhead::try_acquire_many)). In
    /// an adaptive compartment the seat records one sample when it is
    /// given back, whatever its weight, with `in_flight` counted in seats.
    ///
    /// ```
    /// use bulkhead_std::Error;
    /// use bulkhead_std::registry::Registry;
    ///
    /// let registry = Registry::local();
    /// let database = registry.domain("database")?; // 10 seats
    /// let import = database.try_acquire_many(8)?;
    /// assert_eq!((import.weight(), database.state().active), (8, 8));
    /// assert!(matches!(database.try_acquire_many(3), Err(Error::Full { .. })));
    /// assert!(matches!(database.try_acquire_many(11), Err(Error::WeightAboveLimit { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Bulkhead::try_acquire_many`](bulkhead_core::Bulkhead::try_acquire_many):
    /// [`Error::Full`], [`Error::Closed`], [`Error::ZeroWeight`] or
    /// [`Error::WeightAboveLimit`].
    pub fn try_acquire_many(&self, weight: usize) -> Result<RegistrySeat, Error> {
        let seat = OwnedSeat::try_acquire_many(Arc::clone(&self.bulkhead), weight)?;
        Ok(self.start(seat))
    }

    /// Starts timing a seat of this compartment taken by any other wait
    /// (a tokio `acquire_within_owned`, or a tower layer's admission), so that it
    /// feeds the limit when it is given back.
    ///
    /// Generic over the lock only so that code generic over it (the tower
    /// layer) can call it; a registered compartment always has the
    /// [`StdLock`], so a seat of another lock is never this compartment's.
    ///
    /// # Errors
    /// The seat itself, untouched, if it belongs to another compartment.
    pub fn track<L: RawLock>(
        &self,
        seat: OwnedSeat<Arc<CoreBulkhead<L>>>,
    ) -> Result<RegistrySeat<L>, OwnedSeat<Arc<CoreBulkhead<L>>>> {
        // Identity by address: two live compartments never share one.
        if std::ptr::addr_eq(Arc::as_ptr(seat.handle()), Arc::as_ptr(&self.bulkhead)) {
            Ok(self.start(seat))
        } else {
            Err(seat)
        }
    }

    /// Wraps a seat known to be of this compartment.
    pub(super) fn start<L: RawLock>(
        &self,
        seat: OwnedSeat<Arc<CoreBulkhead<L>>>,
    ) -> RegistrySeat<L> {
        let timing = self.controller.as_ref().map(|controller| Timing {
            controller: Arc::clone(controller),
            in_flight: self.bulkhead.active(),
            started: StdClock.now_nanos(),
        });
        RegistrySeat { timing, seat }
    }
}

impl fmt::Debug for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Domain")
            .field("name", &self.bulkhead.name())
            .field("config", &self.config)
            .field("adaptive", &self.controller.is_some())
            .finish()
    }
}

/// A seat taken through the registry. It owns an `Arc` of its
/// compartment, so it may move to another thread or task.
///
/// In an adaptive compartment it times itself from admission to release
/// and feeds the limit one sample when it is given back:
///
/// - [`record`](Self::record) says how the call went;
/// - dropped without an outcome it counts as a
///   [`CallOutcome::Success`] (the default of every adaptive seat), or as
///   [`CallOutcome::Dropped`] when it is dropped while its thread panics;
/// - [`ignore`](Self::ignore) gives it back without a sample.
///
/// In a compartment with a fixed limit all three just give the seat back.
///
/// A seat taken with a `_many` form holds [`weight`](Self::weight) of
/// the compartment's seats and gives them all back together. It still
/// records one sample: the sample's `in_flight` is the compartment's
/// `active` when it was admitted, in seats, its own weight included.
///
/// The lock parameter `L` is [`StdLock`], the registry's, except in code
/// generic over the lock (the tower layer's response future), which holds
/// an untimed seat of any compartment through its `From<OwnedSeat>`
/// impl.
#[must_use = "a seat is given back as soon as it is dropped"]
pub struct RegistrySeat<L: RawLock = StdLock> {
    // Declared first, but consumed in `Drop::drop`, which runs before the
    // fields drop: the sample is recorded before the seat is freed, so a
    // lower limit already applies to the seat being given back.
    timing: Option<Timing>,
    seat: OwnedSeat<Arc<CoreBulkhead<L>>>,
}

struct Timing {
    controller: Arc<DomainController>,
    started: u64,
    in_flight: usize,
}

impl<L: RawLock> RegistrySeat<L> {
    /// The compartment's `Arc`.
    pub fn handle(&self) -> &Arc<CoreBulkhead<L>> {
        self.seat.handle()
    }

    /// How many of the compartment's seats it holds: 1, or the weight a
    /// `_many` form asked for.
    pub fn weight(&self) -> usize {
        self.seat.weight()
    }

    /// Whether this seat feeds an adaptive limit.
    pub fn is_timed(&self) -> bool {
        self.timing.is_some()
    }

    /// Gives the seat back, recording how the call ended; `None` for a
    /// compartment with a fixed limit.
    pub fn record(mut self, outcome: CallOutcome) -> Option<Recorded> {
        let timing = self.timing.take()?;
        Some(timing.finish(&self.seat, outcome))
    }

    /// Gives the seat back without recording anything (a call that never
    /// reached the dependency, or was cancelled).
    pub fn ignore(mut self) {
        self.timing = None;
    }
}

impl Timing {
    /// Records the sample; with feature `metrics`, publishes the new limit
    /// and the change count when the limit moved (never on the common,
    /// unchanged path, which only reads the clock and the controller).
    fn finish<L: RawLock>(
        self,
        seat: &OwnedSeat<Arc<CoreBulkhead<L>>>,
        outcome: CallOutcome,
    ) -> Recorded {
        let bulkhead: &CoreBulkhead<L> = seat.handle();
        let rtt = StdClock.now_nanos().saturating_sub(self.started);
        let recorded = self
            .controller
            .record(bulkhead, &Sample::from_nanos(rtt, self.in_flight, outcome));
        #[cfg(feature = "metrics")]
        if let Recorded::Changed { new, .. } = recorded {
            crate::series::limit_changed(&bulkhead.name_handle(), new, self.controller.changes());
        }
        recorded
    }
}

impl<L: RawLock> Drop for RegistrySeat<L> {
    fn drop(&mut self) {
        if let Some(timing) = self.timing.take() {
            let outcome = if std::thread::panicking() {
                CallOutcome::Dropped
            } else {
                CallOutcome::Success
            };
            timing.finish(&self.seat, outcome);
        }
    }
}

/// A seat that feeds nothing: what a [`Domain`] with a fixed limit hands
/// out, and what code that may hold either kind stores for a plain seat.
impl<L: RawLock> From<OwnedSeat<Arc<CoreBulkhead<L>>>> for RegistrySeat<L> {
    fn from(seat: OwnedSeat<Arc<CoreBulkhead<L>>>) -> Self {
        Self { timing: None, seat }
    }
}

impl<L: RawLock> fmt::Debug for RegistrySeat<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegistrySeat")
            .field("bulkhead", &self.seat.handle().name())
            .field("weight", &self.seat.weight())
            .field("timed", &self.timing.is_some())
            .finish()
    }
}
