//! The feedback path: samples from many callers into one algorithm, and
//! the result into the compartment, without ever waiting.
//!
//! See the limit module's "The feedback path" section for the design.

use core::fmt;

use crate::bulkhead::Bulkhead;
use crate::error::Error;
use crate::lock::RawLock;
use crate::seat::Seat;
use crate::sync::{AtomicU8, AtomicUsize, Counter, Ordering, UnsafeCell, loom_const_fn};

use super::{CallOutcome, Limit, Sample};
use crate::error::ConfigError;

/// What a [`Controller`] resizes: a plain compartment ([`Bulkhead`]), or a
/// partitioned one (`partition::Partitioned`, whose percentage shares
/// follow the limit).
///
/// ```
/// use bulkhead_core::{Bulkhead, CsLock};
/// use bulkhead_core::limit::{Aimd, AimdParams, CallOutcome, Controller, Recorded, Sample};
/// use core::time::Duration;
///
/// let api: Bulkhead<CsLock> = Bulkhead::new("api", 10)?;
/// let aimd = Aimd::new(AimdParams { initial: 10, min: 1, max: 20, ..AimdParams::DEFAULT })?;
/// let controller = Controller::new(aimd);
/// let dropped = Sample::new(Duration::from_millis(5), 10, CallOutcome::Dropped);
/// assert!(matches!(controller.record(&api, &dropped), Recorded::Changed { old: 10, .. }));
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
pub trait Resize {
    /// The current limit, read without waiting.
    fn max_concurrent(&self) -> usize;

    /// Moves the limit if the compartment's lock is free right now:
    /// `Ok(Some(old))`, or `Ok(None)` without change if it is held.
    ///
    /// # Errors
    /// If the compartment refuses the limit; it is then unchanged.
    fn try_set_max_concurrent(&self, max_concurrent: usize) -> Result<Option<usize>, ConfigError>;
}

/// Through any handle: `&Arc<Bulkhead<_>>` records as `&Bulkhead<_>` does.
impl<P> Resize for P
where
    P: core::ops::Deref,
    P::Target: Resize,
{
    #[inline]
    fn max_concurrent(&self) -> usize {
        (**self).max_concurrent()
    }

    #[inline]
    fn try_set_max_concurrent(&self, max_concurrent: usize) -> Result<Option<usize>, ConfigError> {
        (**self).try_set_max_concurrent(max_concurrent)
    }
}

impl<L: RawLock> Resize for Bulkhead<L> {
    #[inline]
    fn max_concurrent(&self) -> usize {
        // One relaxed load: `max` is what `state()` reports, written under
        // the lock by every resize.
        self.engine().max_concurrent()
    }

    #[inline]
    fn try_set_max_concurrent(&self, max_concurrent: usize) -> Result<Option<usize>, ConfigError> {
        Bulkhead::try_set_max_concurrent(self, max_concurrent)
    }
}

const FREE: u8 = 0;
const TAKEN: u8 = 1;

/// Bits of `missed`: the open window's drops and timeouts.
const MISSED_DROP: u8 = 1;
const MISSED_TIMEOUT: u8 = 2;

/// `window` before the first sample: every sample is then a closer, and
/// the first one to hold the flag asks the algorithm for the size.
const UNKNOWN_WINDOW: usize = 0;

/// The open window sums round trips in units of `1 << RTT_SHIFT` ns: whole
/// nanoseconds where `usize` has 64 bits, 256 ns on narrower targets. The
/// sum saturates at `usize::MAX` units: 2^64 − 1 ns (about 584 years) per
/// window on 64-bit targets, 2^32 × 256 ns (about 18 minutes) on 32-bit
/// ones. Up to that the window's mean is exact (to the unit); a saturated
/// window's mean reads as `usize::MAX` units over its count, never a wrapped
/// sum's near-zero. On 64-bit targets every window of at most 2^24 samples
/// (each at most [`MAX_RTT`](super::MAX_RTT)) is below the saturation,
/// and 2^24 samples of `MAX_RTT` saturate exactly
/// (`tests_window::controller_window_sum_saturates_instead_of_wrapping`).
#[cfg(target_pointer_width = "64")]
const RTT_SHIFT: u32 = 0;
#[cfg(not(target_pointer_width = "64"))]
const RTT_SHIFT: u32 = 8;

/// A round trip (at most [`MAX_RTT`](super::MAX_RTT), 2^40 ns) in units
/// of `1 << RTT_SHIFT` ns, rounded to nearest.
#[inline(always)]
fn rtt_units(rtt_nanos: u64) -> usize {
    // Half a unit, for rounding: 0 for whole nanoseconds.
    let half = (1 << RTT_SHIFT) >> 1;
    // 2^40 ns is 2^32 units of 256 ns: one unit more than a 32-bit sum
    // holds, hence the clamp (it saturates the sum anyway).
    usize::try_from((rtt_nanos + half) >> RTT_SHIFT).unwrap_or(usize::MAX)
}

/// What became of one recorded sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// The algorithm moved the limit and the compartment now has it.
    Changed {
        /// The limit before.
        old: usize,
        /// The limit now.
        new: usize,
    },
    /// The algorithm kept the compartment's limit.
    Unchanged {
        /// The limit.
        limit: usize,
    },
    /// The algorithm chose `limit`, but the compartment's lock was busy;
    /// the next sample applies it.
    Deferred {
        /// The limit waiting to be applied.
        limit: usize,
    },
    /// The sample closed its window, but another sampler was updating
    /// the algorithm: the window stays open, with this sample in it, and
    /// the next sample closes it.
    Skipped,
    /// The sample was added to the open window; the algorithm sees it when
    /// the window closes.
    Added,
}

/// Feeds samples into a [`Limit`] and applies its limit to a compartment.
///
/// Any number of threads, tasks and interrupt handlers may call
/// [`record`](Self::record) at once; none of them ever waits. See the
/// [feedback path](super#the-feedback-path) for what happens to a sample that arrives
/// while another one is being processed.
///
/// # Memory ordering
///
/// Taking the flag is an `Acquire` compare-exchange and giving it back a `Release`
/// store, so each update of the algorithm happens-before the next one.
/// The flag orders nothing else: seats keep the ordering of
/// [`Bulkhead`](crate::Bulkhead#memory-ordering). The open window's
/// fields (count, round-trip sum, largest in-flight count, drop bits, and
/// the window size) are all `Relaxed`: they are statistics, each taken
/// by a read-modify-write, so none is lost or taken twice; a sample racing
/// the close may have its count in one window and its round trip in the
/// next.
///
/// ```
/// use core::time::Duration;
/// use bulkhead_core::{Bulkhead, CsLock};
/// use bulkhead_core::limit::{Aimd, AimdParams, CallOutcome, Controller, Recorded, Sample};
///
/// let db: Bulkhead<CsLock> = Bulkhead::new("database", 10)?;
/// let aimd = Aimd::new(AimdParams { initial: 10, min: 1, ..AimdParams::DEFAULT })?;
/// let controller = Controller::new(aimd);
/// let dropped = Sample::new(Duration::from_millis(4), 10, CallOutcome::Dropped);
/// assert_eq!(controller.record(&db, &dropped), Recorded::Changed { old: 10, new: 9 });
/// assert_eq!(db.state().max_concurrent, 9);
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
pub struct Controller<A> {
    pub(super) busy: AtomicU8,
    pub(super) missed: AtomicU8,
    /// Samples in the open window.
    count: AtomicUsize,
    /// Their round trips, in units of `1 << RTT_SHIFT` ns.
    rtt_sum: AtomicUsize,
    /// Their largest in-flight count.
    max_in_flight: AtomicUsize,
    /// Samples per window, as the algorithm last asked
    /// ([`Limit::window`]); written under the flag. `UNKNOWN_WINDOW` until
    /// the first sample.
    window: AtomicUsize,
    changes: Counter,
    skipped: Counter,
    /// # Safety
    /// Accessed only by the holder of `busy`.
    algorithm: UnsafeCell<A>,
}

// SAFETY: `algorithm` is only touched by the one caller that holds the
// `busy` flag (taken with an Acquire compare-exchange, given back with a Release
// store), so sharing the controller never shares `&mut A`; `A: Send`
// because successive holders may be different threads.
unsafe impl<A: Send> Sync for Controller<A> {}

impl<A: Limit> Controller<A> {
    loom_const_fn! {
        /// A controller around `algorithm`.
        pub fn new(algorithm: A) -> Self {
            Self {
                busy: AtomicU8::new(FREE),
                missed: AtomicU8::new(0),
                count: AtomicUsize::new(0),
                rtt_sum: AtomicUsize::new(0),
                max_in_flight: AtomicUsize::new(0),
                window: AtomicUsize::new(UNKNOWN_WINDOW),
                changes: Counter::new(),
                skipped: Counter::new(),
                algorithm: UnsafeCell::new(algorithm),
            }
        }
    }

    /// Adds `sample` to the open window; the sampler that fills the window
    /// feeds the algorithm its aggregate and applies the resulting limit to
    /// `bulkhead`. Never waits, never allocates, never panics unless the
    /// algorithm does.
    ///
    /// Pass samples of calls that held seats in `bulkhead`; the controller
    /// cannot tell.
    pub fn record<R: Resize + ?Sized>(&self, bulkhead: &R, sample: &Sample) -> Recorded {
        // An algorithm that takes every sample (a window of 1) tries the
        // flag first: uncontended, that is one compare-exchange, and the
        // sample goes to the algorithm as it is.
        if self.window.load(Ordering::Relaxed) == 1
            && let Some(flag) = self.try_flag()
        {
            return self.update_holding(bulkhead, flag, Some(sample));
        }
        // The common path: relaxed adds to the open window and a compare,
        // no flag, no division. Relaxed: the window's fields are
        // statistics, not synchronisation. A sample racing the sampler that
        // closes the window may have its round trip or its outcome taken
        // with this window and its count with the next (never lost, never
        // taken twice: each field is taken by a swap, a read-modify-write).
        let count = self.add(sample);
        if count < self.window.load(Ordering::Relaxed) {
            return Recorded::Added;
        }
        // The window is full. Every sample from here on tries the flag
        // until one gets it, so a window whose closer lost the try is
        // closed by the next sample.
        let Some(flag) = self.try_flag() else {
            self.skipped.increment();
            return Recorded::Skipped;
        };
        self.update_holding(bulkhead, flag, None)
    }

    /// Feeds the algorithm, holding the flag: `sample` as it is if the open
    /// window is empty, else the window's aggregate (with `sample` added to
    /// it); then applies the limit.
    fn update_holding<R: Resize + ?Sized>(
        &self,
        bulkhead: &R,
        flag: Flag<'_>,
        sample: Option<&Sample>,
    ) -> Recorded {
        let limit = self.algorithm.with_mut(|algorithm| {
            // SAFETY: we hold the `busy` flag, so no other `&mut` exists.
            let algorithm = unsafe { &mut *algorithm };
            let size = algorithm.window().max(1);
            if self.window.load(Ordering::Relaxed) == UNKNOWN_WINDOW {
                // The first sample learns the window size. If that window
                // is not full yet, it stays open: a first window of one
                // lucky fast sample would set a baseline the rest cannot
                // reach.
                self.window.store(size, Ordering::Relaxed);
                if self.count.load(Ordering::Relaxed) < size {
                    return algorithm.limit();
                }
            }
            let limit = match sample {
                // A window of one sample is the sample. A drop bit without
                // a count is possible too: a closer may have taken a racing
                // sample's count before its bit was visible; it goes with
                // this window.
                Some(sample)
                    if self.count.load(Ordering::Relaxed) == 0
                        && self.missed.load(Ordering::Relaxed) == 0 =>
                {
                    algorithm.update_window(sample)
                }
                _ => {
                    if let Some(sample) = sample {
                        // Samples that lost the flag wait in the window:
                        // this one joins them.
                        self.add(sample);
                    }
                    match self.take_window() {
                        Some(aggregate) => algorithm.update_window(&aggregate),
                        // A previous holder took this window: only apply.
                        None => algorithm.limit(),
                    }
                }
            };
            self.window
                .store(algorithm.window().max(1), Ordering::Relaxed);
            limit
        });
        let recorded = self.apply(bulkhead, limit);
        drop(flag);
        recorded
    }

    /// Adds `sample` to the open window; returns the window's sample count
    /// with it.
    #[inline(always)]
    fn add(&self, sample: &Sample) -> usize {
        self.add_rtt(sample.rtt());
        if sample.in_flight > self.max_in_flight.load(Ordering::Relaxed) {
            self.max_in_flight
                .fetch_max(sample.in_flight, Ordering::Relaxed);
        }
        let bit = match sample.outcome {
            CallOutcome::Success => 0,
            CallOutcome::Dropped => MISSED_DROP,
            CallOutcome::Timeout => MISSED_TIMEOUT,
        };
        if bit != 0 {
            self.missed.fetch_or(bit, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed).wrapping_add(1)
    }

    /// Adds one round trip to the open window's sum, saturating: a window
    /// can hold any number of samples (`max(min_samples, limit)`, up to
    /// 2^26, and more while samples pile up behind a slow closer), so a
    /// wrapping add could turn the slowest window into the fastest. One
    /// compare-exchange loop on the sum alone, so a concurrent close
    /// either takes this round trip or leaves it for the next window.
    #[inline(always)]
    fn add_rtt(&self, rtt_nanos: u64) {
        let units = rtt_units(rtt_nanos);
        let _ = self
            .rtt_sum
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |sum| {
                Some(sum.saturating_add(units))
            });
    }

    /// Takes the open window's aggregate and starts the next window; `None`
    /// if it holds no sample. Only under the flag.
    fn take_window(&self) -> Option<Sample> {
        let count = self.count.swap(0, Ordering::Relaxed);
        if count == 0 {
            return None;
        }
        let sum = self.rtt_sum.swap(0, Ordering::Relaxed) as u64;
        let in_flight = self.max_in_flight.swap(0, Ordering::Relaxed);
        let missed = if self.missed.load(Ordering::Relaxed) != 0 {
            self.missed.swap(0, Ordering::Relaxed)
        } else {
            0
        };
        let outcome = if missed & MISSED_DROP != 0 {
            CallOutcome::Dropped
        } else if missed & MISSED_TIMEOUT != 0 {
            CallOutcome::Timeout
        } else {
            CallOutcome::Success
        };
        // The one division per window. `from_nanos` saturates the mean.
        let mean = (sum / count as u64).saturating_mul(1 << RTT_SHIFT);
        Some(Sample::from_nanos(mean, in_flight, outcome))
    }

    /// Brings `bulkhead` to `limit` if it differs; only under the flag.
    fn apply<R: Resize + ?Sized>(&self, bulkhead: &R, limit: usize) -> Recorded {
        let current = bulkhead.max_concurrent();
        if current == limit {
            return Recorded::Unchanged { limit };
        }
        match bulkhead.try_set_max_concurrent(limit) {
            Ok(Some(old)) => {
                self.changes.increment();
                Recorded::Changed { old, new: limit }
            }
            Ok(None) => Recorded::Deferred { limit },
            // Algorithms clamp to at most 2^26 - 1, which every target can
            // count; a custom `Limit` that returns more keeps the old limit,
            // and so does a partitioned compartment whose shares, given as
            // counts, do not fit the new limit.
            Err(_) => Recorded::Unchanged { limit: current },
        }
    }

    /// Takes the flag if it is free. A compare-exchange rather than a
    /// swap: a loser then writes nothing, so it cannot disturb the
    /// holder's cache line or, in a model checker, the flag's history.
    fn try_flag(&self) -> Option<Flag<'_>> {
        self.busy
            .compare_exchange(FREE, TAKEN, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| Flag(&self.busy))
    }

    /// How many times a sample changed the compartment's limit.
    pub fn changes(&self) -> usize {
        self.changes.get()
    }

    /// How many samples filled or found a full window while another
    /// sampler was updating the algorithm. They are not lost: they stay in
    /// the open window, which the next sample closes.
    pub fn skipped(&self) -> usize {
        self.skipped.get()
    }

    /// Runs `f` on the algorithm if no sample is being processed right now
    /// (for inspection); `None` otherwise. Never waits.
    pub fn try_inspect<R>(&self, f: impl FnOnce(&A) -> R) -> Option<R> {
        let _flag = self.try_flag()?;
        // SAFETY: we hold the `busy` flag.
        Some(self.algorithm.with_mut(|a| f(unsafe { &*a })))
    }
}

/// The held flag; gives it back on drop, also if the algorithm panics.
struct Flag<'a>(&'a AtomicU8);

impl Drop for Flag<'_> {
    fn drop(&mut self) {
        self.0.store(FREE, Ordering::Release);
    }
}

impl<A> fmt::Debug for Controller<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("changes", &self.changes.get())
            .field("skipped", &self.skipped.get())
            .finish_non_exhaustive()
    }
}

/// A monotonic clock, injected by an adapter: core never reads time.
///
/// bulkhead-std implements it with `std::time::Instant`, bulkhead-tokio
/// with tokio's (pausable) clock, bulkhead-embassy with embassy-time. Any
/// `Fn() -> u64` returning nanoseconds is a clock too.
pub trait Clock {
    /// Nanoseconds since an arbitrary, fixed origin; never decreasing.
    fn now_nanos(&self) -> u64;
}

impl<F: Fn() -> u64> Clock for F {
    fn now_nanos(&self) -> u64 {
        self()
    }
}

/// A compartment whose limit adapts: a [`Bulkhead`], a [`Controller`]
/// and a [`Clock`].
///
/// Seats taken through it ([`try_acquire`](Self::try_acquire), or any
/// acquire on [`bulkhead`](Self::bulkhead) followed by
/// [`track`](Self::track)) time themselves and record a sample when they
/// are given back. The compartment starts at its configured
/// `max_concurrent` and moves to the algorithm's limit at the first sample.
/// Calling `set_max_concurrent` by hand is undone by the next sample.
///
/// Const-constructible, so it can be a `static` in firmware.
///
/// ```
/// use core::sync::atomic::{AtomicU64, Ordering};
/// use bulkhead_core::{Bulkhead, CsLock};
/// use bulkhead_core::limit::{Adaptive, Aimd, AimdParams, CallOutcome};
///
/// static NOW: AtomicU64 = AtomicU64::new(0);
/// let clock = || NOW.load(Ordering::Relaxed);
/// let aimd = Aimd::new(AimdParams { initial: 2, min: 1, max: 8, ..AimdParams::DEFAULT })?;
/// let api = Adaptive::new(Bulkhead::<CsLock>::new("api", 2)?, aimd, clock);
///
/// let a = api.try_acquire()?;
/// let _b = api.try_acquire()?;
/// NOW.store(3_000_000, Ordering::Relaxed); // 3 ms later
/// drop(a); // a success with both seats in use: + 1
/// assert_eq!(api.limit(), 3);
/// let c = api.try_acquire()?;
/// c.record(CallOutcome::Dropped); // floor(0.9 × 3) = 2
/// assert_eq!(api.limit(), 2);
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
pub struct Adaptive<L: RawLock, A, C> {
    bulkhead: Bulkhead<L>,
    controller: Controller<A>,
    clock: C,
}

impl<L: RawLock, A: Limit, C: Clock> Adaptive<L, A, C> {
    loom_const_fn! {
        /// `bulkhead`, driven by `algorithm`, timed by `clock`.
        pub fn new(bulkhead: Bulkhead<L>, algorithm: A, clock: C) -> Self {
            Self {
                bulkhead,
                controller: Controller::new(algorithm),
                clock,
            }
        }
    }

    /// The compartment, for every other operation (waiting acquires,
    /// snapshots, closing).
    pub fn bulkhead(&self) -> &Bulkhead<L> {
        &self.bulkhead
    }

    /// The controller, for its counters.
    pub fn controller(&self) -> &Controller<A> {
        &self.controller
    }

    /// The injected clock.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// The compartment's current limit.
    pub fn limit(&self) -> usize {
        self.bulkhead.max_concurrent()
    }

    /// Takes a seat if one is free right now, as
    /// [`Bulkhead::try_acquire`], and starts timing it.
    ///
    /// # Errors
    /// As [`Bulkhead::try_acquire`].
    pub fn try_acquire(&self) -> Result<AdaptiveSeat<'_, L, A, C>, Error> {
        let seat = self.bulkhead.try_acquire()?;
        Ok(self.start(seat))
    }

    /// Takes `weight` seats at once if they are free right now, as
    /// [`Bulkhead::try_acquire_many`], and starts timing them.
    ///
    /// The seat records **one** sample when given back, whatever its
    /// weight: the round trip of one call says how the dependency answers
    /// one call. The sample's `in_flight` is the compartment's `active`
    /// count, which counts seats, so a call of weight 3 counts 3 towards
    /// the load the algorithm sees.
    ///
    /// # Errors
    /// As [`Bulkhead::try_acquire_many`].
    ///
    /// ```
    /// use bulkhead_core::{Bulkhead, CsLock};
    /// use bulkhead_core::limit::{Adaptive, Aimd, AimdParams};
    ///
    /// let aimd = Aimd::new(AimdParams { initial: 4, min: 1, max: 8, ..AimdParams::DEFAULT })?;
    /// let api = Adaptive::new(Bulkhead::<CsLock>::new("api", 4)?, aimd, || 0_u64);
    /// let batch = api.try_acquire_many(3)?;
    /// assert_eq!((batch.weight(), batch.in_flight()), (3, 3));
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    #[cfg(feature = "weights")]
    pub fn try_acquire_many(&self, weight: usize) -> Result<AdaptiveSeat<'_, L, A, C>, Error> {
        let seat = self.bulkhead.try_acquire_many(weight)?;
        Ok(self.start(seat))
    }

    /// Starts timing a seat taken from [`bulkhead`](Self::bulkhead) by any
    /// other means (a blocking or async wait, of any weight).
    ///
    /// # Errors
    /// The seat itself, untouched, if it belongs to another compartment.
    pub fn track<'a>(
        &'a self,
        seat: Seat<'a, L>,
    ) -> Result<AdaptiveSeat<'a, L, A, C>, Seat<'a, L>> {
        if core::ptr::eq(seat.bulkhead(), &self.bulkhead) {
            Ok(self.start(seat))
        } else {
            Err(seat)
        }
    }

    fn start<'a>(&'a self, seat: Seat<'a, L>) -> AdaptiveSeat<'a, L, A, C> {
        AdaptiveSeat {
            in_flight: self.bulkhead.active(),
            started: self.clock.now_nanos(),
            adaptive: self,
            seat: Some(seat),
        }
    }

    /// Records a sample measured elsewhere, as [`Controller::record`].
    pub fn record(&self, sample: &Sample) -> Recorded {
        self.controller.record(&self.bulkhead, sample)
    }
}

impl<L: RawLock, A, C> fmt::Debug for Adaptive<L, A, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Adaptive")
            .field("bulkhead", &self.bulkhead)
            .field("controller", &self.controller)
            .finish_non_exhaustive()
    }
}

/// A seat of an [`Adaptive`] compartment that times itself.
///
/// Give it back with [`record`](Self::record) to say how the call ended.
/// Dropped without an outcome, it counts as a [`CallOutcome::Success`]:
/// most calls succeed, and a seat given back by an early return or `?`
/// usually belongs to a call that completed; an adapter that can tell a
/// failure (an `Err`, a panic, a 5xx) records it explicitly. Use
/// [`ignore`](Self::ignore) for calls that say nothing about the
/// dependency (cancelled, or failed before reaching it).
#[must_use = "a seat is given back as soon as it is dropped"]
pub struct AdaptiveSeat<'a, L: RawLock, A: Limit, C: Clock> {
    adaptive: &'a Adaptive<L, A, C>,
    seat: Option<Seat<'a, L>>,
    started: u64,
    in_flight: usize,
}

impl<L: RawLock, A: Limit, C: Clock> AdaptiveSeat<'_, L, A, C> {
    /// Seats held when this one was taken, its own weight included.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// How many of the compartment's seats this seat holds, as
    /// [`Seat::weight`].
    pub fn weight(&self) -> usize {
        self.seat.as_ref().map_or(0, Seat::weight)
    }

    /// Gives the seat back, recording how the call ended. The sample is
    /// recorded first, so a lower limit already applies to the seat being
    /// freed.
    pub fn record(mut self, outcome: CallOutcome) -> Recorded {
        self.finish(outcome)
    }

    /// Gives the seat back without recording anything.
    pub fn ignore(mut self) {
        self.seat = None;
    }

    fn finish(&mut self, outcome: CallOutcome) -> Recorded {
        let rtt = self.adaptive.clock.now_nanos().saturating_sub(self.started);
        let recorded = self
            .adaptive
            .record(&Sample::from_nanos(rtt, self.in_flight, outcome));
        self.seat = None;
        recorded
    }
}

impl<L: RawLock, A: Limit, C: Clock> Drop for AdaptiveSeat<'_, L, A, C> {
    fn drop(&mut self) {
        if self.seat.is_some() {
            self.finish(CallOutcome::Success);
        }
    }
}

impl<L: RawLock, A: Limit, C: Clock> fmt::Debug for AdaptiveSeat<'_, L, A, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdaptiveSeat")
            .field("bulkhead", &self.adaptive.bulkhead.name())
            .field("in_flight", &self.in_flight)
            .finish_non_exhaustive()
    }
}
