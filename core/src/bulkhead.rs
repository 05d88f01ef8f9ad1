//! [`Bulkhead`], a compartment with a fixed number of seats.

#[cfg(feature = "alloc")]
use alloc::sync::Arc;
use core::fmt;
use core::time::Duration;

use crate::acquire::{Acquire, AcquireTimeout};
use crate::admission::Admission;
#[cfg(feature = "queue-limits")]
use crate::config::MAX_WAITING_LIMIT;
use crate::config::{Config, Problem, State};
use crate::engine::Engine;
use crate::error::{ConfigError, Error};
use crate::lock::{ConstInit, RawLock};
use crate::max_wait::MaxWait;
use crate::name::{Name, Repr};
use crate::queue_order::QueueOrder;
use crate::seat::Seat;
use crate::sync::loom_const_fn;
use crate::word::MAX_CONCURRENT_LIMIT;

/// A compartment: at most `max_concurrent` callers inside at once.
///
/// A caller takes a [`Seat`], does its work, and gives the seat back by
/// dropping it, also when the work panics. When every seat is taken, a
/// caller is either turned away at once ([`try_acquire`]) or waits in line
/// ([`acquire`], [`acquire_timeout`]).
///
/// `L` is the lock that guards the waiter list; the seat count itself is
/// lock-free. Users normally name a lock-specific alias from an adapter
/// crate (`bulkhead_std::Bulkhead`, `bulkhead_embassy::Bulkhead<M>`), or
#[cfg_attr(
    feature = "critical-section",
    doc = "[`CsLock`](crate::CsLock) with the `critical-section` feature."
)]
#[cfg_attr(
    not(feature = "critical-section"),
    doc = "`CsLock` with the `critical-section` feature."
)]
///
/// # Fairness
///
/// With [`Admission::Fifo`] (the default), a release hands its seat straight
/// to the oldest waiter, and a caller that arrives while others wait joins
/// the back of the line, even if a seat is momentarily free. With
/// [`Admission::Barging`], a release wakes the oldest waiter and any caller
/// may take the free seat first. [`Admission::BoundedBarging`] barges too,
/// but hands the next seat to a waiter that has lost
/// [`MAX_LOST_RACES`](crate::MAX_LOST_RACES) races. See [`Admission`] for
/// the trade-off.
///
/// Blocking threads and async tasks queue in the same list and share one
/// seat count.
///
/// # Memory ordering
///
/// Everything a seat holder did before dropping its seat happens-before
/// everything the next holder of that seat does after getting it, however
/// the seat travelled (fast path, hand-off, or barging). Precisely: a
/// release is an `AcqRel` read-modify-write of the seat word, every take
/// of a seat is an `Acquire` CAS, and a hand-off is the drainer's CAS
/// followed by a `Release` store of the verdict, which the waiter reads
/// with `Acquire`. In barging mode a woken waiter takes the seat with the
/// same `Acquire` CAS.
///
/// # Examples
///
/// ```
/// use bulkhead_core::{Bulkhead, CsLock, Error};
///
/// let db: Bulkhead<CsLock> = Bulkhead::new("database", 2)?;
/// let a = db.try_acquire()?;
/// let b = db.try_acquire()?;
/// assert!(matches!(db.try_acquire(), Err(Error::Full { active: 2, .. })));
/// drop(a);
/// let c = db.try_acquire()?; // the freed seat is reused
/// # drop((b, c));
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
///
/// A compartment can be a `static`, with no allocation and no lazy
/// initialisation; bad settings are a compile error:
///
/// ```
/// use bulkhead_core::{Bulkhead, CsLock};
///
/// static RADIO: Bulkhead<CsLock> = Bulkhead::new_static("radio", 1);
/// assert_eq!(RADIO.name(), "radio");
/// ```
///
/// A compartment has a destructor (it gives back a shared name, see
/// `with_shared_name` (feature `alloc`); for a `&'static str`
/// name it does nothing), so a `static` cannot `match` on the `Result` of
/// [`new`](Self::new): build it with [`new_static`](Self::new_static),
/// [`from_config_static`](Self::from_config_static) or
/// [`with_lock_static`](Self::with_lock_static).
///
/// [`try_acquire`]: Bulkhead::try_acquire
/// [`acquire`]: Bulkhead::acquire
/// [`acquire_timeout`]: Bulkhead::acquire_timeout
// `repr(transparent)` and no field or invariant beside the engine: seats
// and waits hold the engine and turn it back into its compartment with
// `from_engine`, whose soundness rests on both.
#[repr(transparent)]
pub struct Bulkhead<L: RawLock> {
    /// All of the compartment's state; this type is its public face.
    /// `#[repr(transparent)]`, so that [`from_engine`](Self::from_engine)
    /// can turn the engine a seat or a future holds back into its
    /// compartment.
    engine: Engine<L>,
}

impl<L: RawLock + ConstInit> Bulkhead<L> {
    loom_const_fn! {
        /// A FIFO compartment called `name` with `max_concurrent` seats.
        ///
        /// # Errors
        /// [`ConfigError::ZeroCapacity`] for 0 seats (to pause a live
        /// compartment, use [`set_max_concurrent(0)`](Self::set_max_concurrent)),
        /// [`ConfigError::CapacityOverflow`] above [`MAX_CONCURRENT_LIMIT`].
        pub fn new(name: &'static str, max_concurrent: usize) -> Result<Self, ConfigError> {
            Self::from_config(Config::new(name, max_concurrent))
        }
    }

    loom_const_fn! {
        /// A compartment built from `config`.
        ///
        /// # Errors
        /// As [`Config::validate`].
        pub fn from_config(config: Config) -> Result<Self, ConfigError> {
            Self::with_lock(config, L::INIT)
        }
    }

    loom_const_fn! {
        /// A FIFO compartment called `name` with `max_concurrent` seats, for
        /// a `static` or `const`, in one line:
        ///
        /// ```
        /// use bulkhead_core::{Bulkhead, CsLock};
        ///
        /// static DATABASE: Bulkhead<CsLock> = Bulkhead::new_static("database", 8);
        /// assert_eq!(DATABASE.state().max_concurrent, 8);
        /// ```
        ///
        /// Bad settings are a compile-time error in a `static` or `const`:
        ///
        /// ```compile_fail
        /// use bulkhead_core::{Bulkhead, CsLock};
        ///
        /// static NOBODY: Bulkhead<CsLock> = Bulkhead::new_static("nobody", 0);
        /// # let _ = &NOBODY;
        /// ```
        ///
        /// # Panics
        /// If `max_concurrent` is 0 or above [`MAX_CONCURRENT_LIMIT`]; at
        /// compile time when evaluated in a `static` or `const`. Outside
        /// one, use [`new`](Self::new), which returns the error instead.
        pub fn new_static(name: &'static str, max_concurrent: usize) -> Self {
            Self::from_config_static(Config::new(name, max_concurrent))
        }
    }

    loom_const_fn! {
        /// A compartment built from `config`, for a `static` or `const`:
        /// as [`new_static`](Self::new_static), with every setting of a
        /// [`Config`].
        ///
        /// ```
        /// # // A queue limit and barging need their features.
        /// # #[cfg(all(feature = "queue-limits", feature = "barging"))] {
        /// use bulkhead_core::{Admission, Bulkhead, Config, CsLock};
        ///
        /// static SPI: Bulkhead<CsLock> =
        ///     Bulkhead::from_config_static(Config::new("spi", 2).max_waiting(4).admission(Admission::Barging));
        /// assert_eq!(SPI.admission(), Admission::Barging);
        /// # }
        /// ```
        ///
        /// # Panics
        /// If [`Config::validate`] refuses `config`; at compile time in a
        /// `static` or `const`.
        pub fn from_config_static(config: Config) -> Self {
            Self::with_lock_static(config, L::INIT)
        }
    }
}

impl<L: RawLock> Bulkhead<L> {
    loom_const_fn! {
        /// A compartment built from `config` that guards its waiter list
        /// with `lock`, for a `static` or `const`: as
        /// [`from_config_static`](Self::from_config_static), with a lock
        /// of your choice.
        ///
        /// (A compartment has a destructor, which gives back a shared
        /// name, so a `static` cannot `match` on
        /// [`with_lock`](Self::with_lock)'s `Result`: a `const`
        /// initializer cannot drop one. This constructor panics instead.)
        ///
        /// # Panics
        /// If [`Config::validate`] refuses `config`; at compile time in a
        /// `static` or `const`.
        pub fn with_lock_static(config: Config, lock: L) -> Self {
            // On the name-free `Problem`, not on `validate`'s error: an
            // error may own a shared name, which a `const fn` cannot drop.
            match config.problem(config.name.len()) {
                None => Self { engine: Engine::new(config, lock) },
                // `const` panics take a literal: one message per error.
                Some(Problem::ZeroCapacity) => panic!(
                    "bulkhead: max_concurrent = 0 would admit nobody; give it at least 1 seat"
                ),
                Some(Problem::CapacityOverflow) => panic!(
                    "bulkhead: max_concurrent is above MAX_CONCURRENT_LIMIT for this target; \
                     choose a smaller value"
                ),
                Some(Problem::QueueLimitOverflow(_)) => panic!(
                    "bulkhead: max_waiting is above MAX_WAITING_LIMIT; choose a smaller value, \
                     or no queue limit"
                ),
                Some(Problem::NameTooLong(_)) => panic!(
                    "bulkhead: the name is longer than MAX_NAME_LEN bytes; choose a shorter name"
                ),
                Some(Problem::LifoUnavailable) => panic!(
                    "bulkhead: queue_order = lifo needs bulkhead-core's `lifo` feature; \
                     enable it, or use queue_order = fifo"
                ),
                Some(Problem::BargingUnavailable(_)) => panic!(
                    "bulkhead: a barging admission needs bulkhead-core's `barging` feature; \
                     enable it, or use admission = fifo"
                ),
                Some(Problem::QueueLimitUnavailable) => panic!(
                    "bulkhead: max_waiting needs bulkhead-core's `queue-limits` feature; \
                     enable it, or set no queue limit"
                ),
            }
        }
    }
}

impl<L: RawLock> Bulkhead<L> {
    loom_const_fn! {
        /// A compartment built from `config` that guards its waiter list
        /// with `lock`.
        ///
        /// # Errors
        /// As [`Config::validate`]. `lock` is then forgotten, not dropped:
        /// this is a `const fn`, which cannot run a destructor. Every lock
        /// of this workspace holds nothing to free before its first use; a
        /// lock of your own that holds a resource (an `Arc`, a handle)
        /// leaks it, so check `config` first ([`Config::validate`]) or
        /// build with [`with_name`](Self::with_name), which drops it.
        pub fn with_lock(config: Config, lock: L) -> Result<Self, ConfigError> {
            match config.problem(config.name.len()) {
                None => Ok(Self { engine: Engine::new(config, lock) }),
                Some(problem) => {
                    // A `const fn` cannot run `L`'s destructor; the docs
                    // say so (the workspace's locks hold nothing yet).
                    core::mem::forget(lock);
                    Err(problem.error(&config))
                }
            }
        }
    }

    /// A compartment built from `config` and guarded by `lock`, called
    /// `name` (`config.name` is not used): [`with_lock`](Self::with_lock)
    /// for a `&'static str` name, `with_shared_name` (feature `alloc`)
    /// for a shared one. For code that keeps names as [`Name`]s.
    ///
    /// # Errors
    /// As [`Config::validate`], naming `name`.
    pub fn with_name(name: Name, config: Config, lock: L) -> Result<Self, ConfigError> {
        match name.into_repr() {
            Repr::Static(name) => Self::with_lock(Config { name, ..config }, lock),
            #[cfg(feature = "alloc")]
            Repr::Shared(name) => Self::with_shared_name(name, config, lock),
        }
    }

    /// A compartment built from `config` and guarded by `lock`, called
    /// `name` instead of `config.name`: a name made at run time (a tenant,
    /// a host). The compartment keeps `name` (one reference) until it is
    /// dropped, and every [`Error`], [`State`] and
    /// [`name_handle`](Self::name_handle) that names it shares it, so the
    /// string is freed with the last of them. `config.name` is not used.
    ///
    /// ```
    /// # extern crate alloc;
    /// use alloc::sync::Arc;
    /// use bulkhead_core::{Bulkhead, Config, CsLock, RawLock};
    ///
    /// let tenant: Arc<str> = Arc::from(format!("tenant-{}", 7));
    /// let b = Bulkhead::with_shared_name(tenant.clone(), Config::new("", 1), CsLock::INIT)?;
    /// assert_eq!(b.name(), "tenant-7");
    /// let err = { let _seat = b.try_acquire()?; b.try_acquire().unwrap_err() };
    /// drop(b);
    /// assert_eq!(err.name(), "tenant-7"); // the error shares the name
    /// drop(err);
    /// assert_eq!(Arc::strong_count(&tenant), 1); // and nothing else holds it
    /// # use bulkhead_core::ConstInit;
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Config::validate`], naming `name`; a name longer than
    /// [`MAX_NAME_LEN`](crate::MAX_NAME_LEN) bytes is
    /// [`ConfigError::NameTooLong`].
    #[cfg(feature = "alloc")]
    pub fn with_shared_name(name: Arc<str>, config: Config, lock: L) -> Result<Self, ConfigError> {
        if let Some(problem) = config.problem(name.len()) {
            return Err(problem.error(&config).renamed(Name::shared(name)));
        }
        Ok(Self {
            engine: Engine::with_shared_name(name, config, lock),
        })
    }

    /// The compartment that holds `engine`. Seats and the acquire futures
    /// hold the engine, not the compartment, so that they sit below the
    /// facade; this is how they name their compartment.
    #[inline]
    pub(crate) fn from_engine(engine: &Engine<L>) -> &Self {
        // SAFETY: `Bulkhead` is `#[repr(transparent)]` over `Engine`, and
        // `repr(transparent)` refuses at compile time any second field that
        // is not zero-sized, so the two have one layout and a reference to
        // one is a valid reference to the other, with the same provenance
        // and lifetime. `Bulkhead` has no invariant of its own beyond its
        // engine's (a validated config is already `Engine::new`'s
        // precondition), so any engine, wherever it was made, is a valid
        // compartment. (Every engine is in fact a `Bulkhead`'s field: only
        // its constructors make one, and nothing moves it out.)
        unsafe { &*core::ptr::from_ref(engine).cast::<Self>() }
    }

    /// The state this compartment wraps.
    #[inline]
    pub(crate) fn engine(&self) -> &Engine<L> {
        &self.engine
    }

    /// The compartment's name.
    ///
    /// It borrows the compartment: a shared name (see
    /// `with_shared_name` (feature `alloc`)) lives only as long as
    /// its holders. To keep it, take a [`name_handle`](Self::name_handle).
    pub fn name(&self) -> &str {
        self.engine.name()
    }

    /// The compartment's name, to keep: the `&'static str` it was built
    /// with, or one more reference to its shared name. Errors and states
    /// carry this.
    pub fn name_handle(&self) -> Name {
        self.engine.name_handle()
    }

    /// The admission order chosen at construction.
    pub fn admission(&self) -> Admission {
        self.engine.admission()
    }

    /// Takes a seat if one is free right now, without waiting.
    ///
    /// With a free seat and (in FIFO mode) nobody waiting, this is one CAS:
    /// no lock, no allocation. In FIFO mode it refuses while others wait,
    /// even if a seat was just freed, because that seat belongs to the
    /// oldest waiter.
    ///
    /// # Errors
    /// [`Error::Full`] (counted in [`State::rejected`]) or
    /// [`Error::Closed`].
    ///
    /// # Examples
    /// ```
    /// # use bulkhead_core::{Bulkhead, CsLock, Error};
    /// let cache: Bulkhead<CsLock> = Bulkhead::new("cache", 1).unwrap();
    /// let seat = cache.try_acquire().unwrap();
    /// let err = cache.try_acquire().unwrap_err();
    /// assert_eq!(err, Error::Full { name: "cache".into(), max_concurrent: 1, active: 1 });
    /// drop(seat);
    /// assert!(cache.try_acquire().is_ok());
    /// ```
    #[inline]
    pub fn try_acquire(&self) -> Result<Seat<'_, L>, Error> {
        Seat::try_take(&self.engine, 1)
    }

    /// Takes `weight` seats at once, as one [`Seat`] of that weight, if
    /// they are all free right now; never some of them. The seat gives them
    /// all back when dropped, and [`Seat::split`] gives some back early.
    ///
    /// A weight counts as that many callers: a bulk import that holds four
    /// database connections takes a seat of weight 4. Taking seats one by
    /// one instead could deadlock two such callers against each other, each
    /// holding some seats and waiting for the rest.
    ///
    /// `try_acquire_many(1)` is [`try_acquire`](Self::try_acquire). In FIFO
    /// mode it refuses while others wait, as `try_acquire` does.
    ///
    /// # Errors
    /// - [`Error::Full`] (counted in [`State::rejected`]) or
    ///   [`Error::Closed`], as `try_acquire`;
    /// - [`Error::ZeroWeight`] for `weight == 0`;
    /// - [`Error::WeightAboveLimit`] (counted) if `weight` is above the
    ///   limit, so that waiting could never help. A limit of 0 is a pause:
    ///   then the verdict is `Full`, unless `weight` is above
    ///   [`MAX_CONCURRENT_LIMIT`], which no limit can ever reach.
    ///
    /// # Examples
    /// ```
    /// # use bulkhead_core::{Bulkhead, CsLock, Error};
    /// let db: Bulkhead<CsLock> = Bulkhead::new("db", 4).unwrap();
    /// let import = db.try_acquire_many(3).unwrap();
    /// assert_eq!(db.state().active, 3);
    /// assert!(matches!(db.try_acquire_many(2), Err(Error::Full { .. })));
    /// assert!(matches!(db.try_acquire_many(5), Err(Error::WeightAboveLimit { weight: 5, .. })));
    /// assert!(matches!(db.try_acquire_many(0), Err(Error::ZeroWeight { .. })));
    /// drop(import);
    /// assert_eq!(db.try_acquire_many(4).unwrap().weight(), 4);
    /// ```
    #[cfg(feature = "weights")]
    #[inline]
    pub fn try_acquire_many(&self, weight: usize) -> Result<Seat<'_, L>, Error> {
        Seat::try_take(&self.engine, weight)
    }

    /// Takes a seat if one is free right now, and otherwise does nothing:
    /// for a caller that will wait next, to whom "no seat free" is not a
    /// rejection.
    ///
    /// It admits exactly when [`try_acquire`](Self::try_acquire) would
    /// (in FIFO mode never past a waiter; never in a closed compartment),
    /// but a miss is `None`: no [`Error`] is built, nothing is counted in
    /// [`State::rejected`], and the lock's rejection hook does not run. A
    /// seat taken is an admission like any other. With a free seat and
    /// (in FIFO mode) nobody waiting, this is one CAS; a miss is one load.
    ///
    /// `try_acquire` is this, then a counted error on a miss. To learn
    /// why there was no seat, call `try_acquire`, or wait: the wait gives
    /// the verdict.
    ///
    /// # Examples
    /// ```
    /// # use core::{pin::pin, task::{Context, Poll, Waker}};
    /// # use bulkhead_core::{Bulkhead, CsLock};
    /// let api: Bulkhead<CsLock> = Bulkhead::new("api", 1).unwrap();
    /// let held = api.acquire_if_free().expect("a seat is free");
    /// assert!(api.acquire_if_free().is_none());
    /// assert_eq!(api.state().rejected, 0); // a miss is no rejection
    ///
    /// // Free seat or not, then the wait: the usual shape.
    /// let mut cx = Context::from_waker(Waker::noop());
    /// let mut wait = pin!(api.acquire());
    /// assert!(wait.as_mut().poll(&mut cx).is_pending());
    /// drop(held); // handed to the waiter...
    /// assert!(api.acquire_if_free().is_none()); // ...which a newcomer may not pass
    /// assert!(matches!(wait.poll(&mut cx), Poll::Ready(Ok(_))));
    /// ```
    #[inline]
    pub fn acquire_if_free(&self) -> Option<Seat<'_, L>> {
        Seat::take_free(&self.engine, 1).ok()
    }

    /// Takes `weight` seats at once if they are all free right now, and
    /// otherwise does nothing: [`acquire_if_free`](Self::acquire_if_free)
    /// for a seat of `weight` seats, admitting exactly when
    /// [`try_acquire_many`](Self::try_acquire_many) would.
    ///
    /// A weight of 0, or above the limit, is `None` too, and not counted:
    /// the wait that follows refuses it with the error `try_acquire_many`
    /// gives ([`Error::ZeroWeight`], [`Error::WeightAboveLimit`]).
    ///
    /// # Examples
    /// ```
    /// # use bulkhead_core::{Bulkhead, CsLock};
    /// let db: Bulkhead<CsLock> = Bulkhead::new("db", 4).unwrap();
    /// let import = db.acquire_many_if_free(3).expect("three seats are free");
    /// assert!(db.acquire_many_if_free(2).is_none());
    /// assert!(db.acquire_many_if_free(0).is_none());
    /// assert_eq!(db.state().rejected, 0);
    /// drop(import);
    /// assert_eq!(db.acquire_many_if_free(4).map(|s| s.weight()), Some(4));
    /// ```
    #[cfg(feature = "weights")]
    #[inline]
    pub fn acquire_many_if_free(&self, weight: usize) -> Option<Seat<'_, L>> {
        Seat::take_free(&self.engine, weight).ok()
    }

    /// Waits for a seat, with no time limit.
    ///
    /// The future needs nothing but a [`core::task::Waker`], so any executor
    /// can drive it. Prefer [`acquire_timeout`](Self::acquire_timeout) or an
    /// adapter's bounded wait: an unbounded wait lets a stuck dependency
    /// hold its callers forever.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future at any point is safe and loses nothing: a waiter
    /// that had not been handed a seat leaves the line (and, in barging
    /// mode, passes its wake-up on); one that had been handed a seat passes
    /// that seat to the next waiter. The future is `!Unpin`: it holds the
    /// intrusive list node, which it unlinks in `Drop`.
    ///
    /// # Memory ordering
    /// As for every seat; see [Memory ordering](Self#memory-ordering).
    ///
    /// # Errors
    /// [`Error::Closed`], or [`Error::QueueFull`] when
    /// [`max_waiting`](Config::max_waiting) callers already wait.
    ///
    /// # Examples
    /// ```
    /// # use bulkhead_core::{Bulkhead, CsLock};
    /// # use core::{pin::pin, task::{Context, Poll, Waker}};
    /// let api: Bulkhead<CsLock> = Bulkhead::new("external_api", 1).unwrap();
    /// let first = api.try_acquire().unwrap();
    /// let mut waiting = pin!(api.acquire());
    /// let mut cx = Context::from_waker(Waker::noop());
    /// assert!(waiting.as_mut().poll(&mut cx).is_pending());
    /// assert_eq!(api.state().waiting, 1);
    /// drop(first); // handed straight to the waiter
    /// let Poll::Ready(Ok(_seat)) = waiting.poll(&mut cx) else { panic!() };
    /// ```
    pub fn acquire(&self) -> Acquire<'_, L> {
        Acquire::new(&self.engine, 1)
    }

    /// Waits, with no time limit, for `weight` seats at once: one
    /// [`Seat`] of that weight, never some of them.
    ///
    /// In FIFO order a waiter for `weight` at the head of the line is never
    /// passed by a lighter one behind it: seats freed while it waits are
    /// kept for it until it has all `weight` (no newcomer may take them),
    /// so a heavy caller is never starved. If it leaves first (dropped,
    /// timed out, closed), those seats go to the next waiter at once. In
    /// the barging modes a waiter is woken when enough seats are free for
    /// its weight and competes for them like any caller (a lighter waiter
    /// behind a heavier one is woken for seats the heavier one cannot use,
    /// among the next few waiters one lock section looks at); with
    /// `BoundedBarging`, a weighted waiter that loses too many races gets
    /// the hand-off like any other, and from then on the freed seats are
    /// kept for it.
    ///
    /// Weight 1 is [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    ///
    /// # Errors
    /// Those of [`acquire`](Self::acquire), and:
    /// - [`Error::ZeroWeight`] for `weight == 0`;
    /// - [`Error::WeightAboveLimit`] (counted in [`State::rejected`]) if
    ///   `weight` is above the limit when it asks, or when the limit
    ///   shrinks below it while it waits (it is refused when it reaches
    ///   the front of the line). A limit of 0 is a pause: it waits.
    ///
    /// # Examples
    /// ```
    /// # use bulkhead_core::{Bulkhead, CsLock};
    /// # use core::{pin::pin, task::{Context, Poll, Waker}};
    /// let db: Bulkhead<CsLock> = Bulkhead::new("db", 4).unwrap();
    /// let mut cx = Context::from_waker(Waker::noop());
    /// let (a, b) = (db.try_acquire_many(2).unwrap(), db.try_acquire_many(2).unwrap());
    /// let mut import = pin!(db.acquire_many(3));
    /// assert!(import.as_mut().poll(&mut cx).is_pending());
    /// drop(a); // 2 free: kept for the import, not enough yet
    /// assert!(import.as_mut().poll(&mut cx).is_pending());
    /// assert!(db.try_acquire().is_err()); // a newcomer may not take them
    /// drop(b);
    /// let Poll::Ready(Ok(seat)) = import.poll(&mut cx) else { panic!() };
    /// assert_eq!(seat.weight(), 3);
    /// ```
    #[cfg(feature = "weights")]
    pub fn acquire_many(&self, weight: usize) -> Acquire<'_, L> {
        Acquire::new(&self.engine, weight)
    }

    /// Waits for a seat at most `max_wait`, measured by a timer you
    /// supply: `sleep(d)` returns a future that completes after `d`
    /// (`tokio::time::sleep`, `async_io::Timer::after`, an embassy-time
    /// timer). Any runtime's timer fits, so a library can offer bounded
    /// waits without picking a runtime.
    ///
    /// - [`MaxWait::FailFast`] and a zero [`MaxWait::UpTo`] decide at the
    ///   first poll, as [`try_acquire`](Self::try_acquire) does (a seat,
    ///   [`Error::Full`] or [`Error::Closed`]), and never call `sleep`.
    /// - `UpTo(d)` calls `sleep(d)` here, so the budget starts now, and
    ///   waits until a seat arrives or the timer completes, then gives up
    ///   with [`Error::Timeout`] (counted in [`State::timed_out`]).
    /// - [`MaxWait::Forever`] waits as [`acquire`](Self::acquire) does,
    ///   and never calls `sleep`.
    ///
    /// A plain [`Duration`] is a `MaxWait` too (zero fails fast).
    ///
    /// Whether the caller got a seat or timed out is decided in one step
    /// under the lock: a seat handed over at the moment the timer fires is
    /// returned to the caller, never lost or counted twice.
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    ///
    /// # Memory ordering
    /// As for every seat; see [Memory ordering](Self#memory-ordering).
    ///
    /// # Errors
    /// [`Error::Full`] (fail fast, counted in [`State::rejected`]),
    /// [`Error::Timeout`], and those of [`acquire`](Self::acquire).
    ///
    /// # Examples
    ///
    /// Each budget, with a timer that completes at its first poll (the
    /// examples run without a runtime):
    ///
    /// ```
    /// use core::{future::ready, pin::pin, task::{Context, Poll, Waker}, time::Duration};
    /// use bulkhead_core::{Bulkhead, CsLock, Error, MaxWait};
    ///
    /// let api: Bulkhead<CsLock> = Bulkhead::new("api", 1)?;
    /// let mut cx = Context::from_waker(Waker::noop());
    /// let held = api.try_acquire()?;
    ///
    /// // Fail fast: decided at the first poll; the timer is never asked for.
    /// let no_timer = |_: Duration| -> core::future::Ready<()> { unreachable!() };
    /// let wait = pin!(api.acquire_timeout(MaxWait::FailFast, no_timer));
    /// let Poll::Ready(Err(Error::Full { .. })) = wait.poll(&mut cx) else { panic!() };
    ///
    /// // A zero budget is the same.
    /// let wait = pin!(api.acquire_timeout(Duration::ZERO, no_timer));
    /// assert!(matches!(wait.poll(&mut cx), Poll::Ready(Err(Error::Full { .. }))));
    ///
    /// // Up to 50 ms: the timer completes, the wait times out.
    /// let wait = pin!(api.acquire_timeout(MaxWait::UpTo(Duration::from_millis(50)), |_| ready(())));
    /// let Poll::Ready(Err(Error::Timeout { budget, .. })) = wait.poll(&mut cx) else { panic!() };
    /// assert_eq!(budget, Duration::from_millis(50));
    /// assert_eq!(api.state().timed_out, 1);
    ///
    /// // Forever: no timer; the seat comes when the holder gives it back.
    /// let mut wait = pin!(api.acquire_timeout(MaxWait::Forever, no_timer));
    /// assert!(wait.as_mut().poll(&mut cx).is_pending());
    /// drop(held);
    /// let Poll::Ready(Ok(_seat)) = wait.poll(&mut cx) else { panic!() };
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    ///
    /// With tokio it reads
    /// `api.acquire_timeout(Duration::from_millis(250), tokio::time::sleep).await`.
    pub fn acquire_timeout<T: Future>(
        &self,
        max_wait: impl Into<MaxWait>,
        sleep: impl FnOnce(Duration) -> T,
    ) -> AcquireTimeout<'_, L, T> {
        AcquireTimeout::new(self.acquire(), max_wait.into(), sleep)
    }

    /// [`acquire_many`](Self::acquire_many) bounded by `max_wait` on a
    /// timer you supply, as [`acquire_timeout`](Self::acquire_timeout):
    /// fail fast decides at the first poll as
    /// [`try_acquire_many`](Self::try_acquire_many) does.
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    ///
    /// # Errors
    /// Those of [`acquire_timeout`](Self::acquire_timeout) and of
    /// [`acquire_many`](Self::acquire_many).
    ///
    /// # Examples
    /// ```
    /// use core::{future::ready, pin::pin, task::{Context, Poll, Waker}, time::Duration};
    /// use bulkhead_core::{Bulkhead, CsLock, Error};
    ///
    /// let gpu: Bulkhead<CsLock> = Bulkhead::new("gpu", 4)?;
    /// let mut cx = Context::from_waker(Waker::noop());
    /// let _held = gpu.try_acquire_many(2)?;
    /// // Three slots within 10 ms; the timer here completes at once.
    /// let wait = pin!(gpu.acquire_many_timeout(3, Duration::from_millis(10), |_| ready(())));
    /// let Poll::Ready(Err(Error::Timeout { .. })) = wait.poll(&mut cx) else { panic!() };
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    #[cfg(feature = "weights")]
    pub fn acquire_many_timeout<T: Future>(
        &self,
        weight: usize,
        max_wait: impl Into<MaxWait>,
        sleep: impl FnOnce(Duration) -> T,
    ) -> AcquireTimeout<'_, L, T> {
        AcquireTimeout::new(self.acquire_many(weight), max_wait.into(), sleep)
    }

    /// Changes the number of seats, live.
    ///
    /// - Growing hands the new seats to waiters at once.
    /// - Shrinking never blocks and never takes back a held seat: holders
    ///   keep their seats, and admissions resume once fewer than the new
    ///   maximum are inside.
    /// - `0` admits nobody until the limit is raised again (a pause).
    /// - A waiter asking for more seats at once than a new limit above 0
    ///   is refused with [`Error::WeightAboveLimit`] when it reaches the
    ///   front of the line, since it could never be admitted; with an
    ///   adaptive limit, a brief dip can refuse such waiters.
    ///
    /// Returns the previous limit. Takes the list lock briefly, so
    /// concurrent reconfigurations apply in some order and add up.
    ///
    /// # Errors
    /// [`ConfigError::CapacityOverflow`] above [`MAX_CONCURRENT_LIMIT`]; the
    /// limit is then unchanged.
    ///
    /// # Examples
    /// ```
    /// # use bulkhead_core::{Bulkhead, CsLock};
    /// let b: Bulkhead<CsLock> = Bulkhead::new("db", 2).unwrap();
    /// let (s1, s2) = (b.try_acquire().unwrap(), b.try_acquire().unwrap());
    /// assert_eq!(b.set_max_concurrent(1), Ok(2)); // both holders keep their seats
    /// drop(s1);
    /// assert!(b.try_acquire().is_err()); // still one inside, the new limit
    /// drop(s2);
    /// assert!(b.try_acquire().is_ok());
    /// ```
    pub fn set_max_concurrent(&self, max_concurrent: usize) -> Result<usize, ConfigError> {
        self.check_capacity(max_concurrent)?;
        Ok(self.engine.resize(max_concurrent))
    }

    /// As [`set_max_concurrent`](Self::set_max_concurrent), but never waits
    /// for the waiter-list lock: returns `Ok(None)`, changing nothing, if
    /// another caller holds it right now.
    #[cfg_attr(
        feature = "critical-section",
        doc = "With [`CsLock`](crate::CsLock) it always succeeds."
    )]
    #[cfg_attr(
        not(feature = "critical-section"),
        doc = "With `CsLock` (feature `critical-section`) it always succeeds."
    )]
    /// Safe in an interrupt handler; adaptive limits
    /// apply their changes this way.
    ///
    /// # Errors
    /// As [`set_max_concurrent`](Self::set_max_concurrent).
    ///
    /// ```
    /// # use bulkhead_core::{Bulkhead, CsLock};
    /// let b: Bulkhead<CsLock> = Bulkhead::new("db", 2).unwrap();
    /// assert_eq!(b.try_set_max_concurrent(5), Ok(Some(2)));
    /// assert_eq!(b.state().max_concurrent, 5);
    /// ```
    pub fn try_set_max_concurrent(
        &self,
        max_concurrent: usize,
    ) -> Result<Option<usize>, ConfigError> {
        self.check_capacity(max_concurrent)?;
        Ok(self.engine.try_resize(max_concurrent))
    }

    fn check_capacity(&self, max_concurrent: usize) -> Result<(), ConfigError> {
        if max_concurrent > MAX_CONCURRENT_LIMIT {
            return Err(ConfigError::CapacityOverflow {
                name: self.name_handle(),
                requested: max_concurrent,
                limit: MAX_CONCURRENT_LIMIT,
            });
        }
        Ok(())
    }

    /// Changes the queue limit, live; `None` removes it. Callers already
    /// waiting keep their place.
    ///
    /// # Errors
    /// [`ConfigError::QueueLimitOverflow`] above [`MAX_WAITING_LIMIT`];
    /// the queue limit is then unchanged.
    ///
    /// ```
    /// # use bulkhead_core::{Bulkhead, ConfigError, CsLock, MAX_WAITING_LIMIT};
    /// let b: Bulkhead<CsLock> = Bulkhead::new("db", 1).unwrap();
    /// assert_eq!(b.set_max_waiting(Some(16)), Ok(()));
    /// let too_many = b.set_max_waiting(Some(MAX_WAITING_LIMIT + 1));
    /// assert!(matches!(too_many, Err(ConfigError::QueueLimitOverflow { .. })));
    /// assert_eq!(b.set_max_waiting(None), Ok(()));
    /// ```
    #[cfg(feature = "queue-limits")]
    #[cfg_attr(docsrs, doc(cfg(feature = "queue-limits")))]
    pub fn set_max_waiting(&self, max_waiting: Option<usize>) -> Result<(), ConfigError> {
        if let Some(requested) = max_waiting
            && requested > MAX_WAITING_LIMIT
        {
            return Err(ConfigError::QueueLimitOverflow {
                name: self.name_handle(),
                requested,
                limit: MAX_WAITING_LIMIT,
            });
        }
        self.engine.set_queue_limit(max_waiting);
        Ok(())
    }

    /// The order in which waiters are served; see [`QueueOrder`].
    pub fn queue_order(&self) -> QueueOrder {
        self.engine.queue_order()
    }

    /// Changes the order of the line, live; returns the old order. Waiters
    /// already in line keep their places: the order decides where
    /// newcomers join (at the back, or at the front), while a freed seat
    /// always goes to the front and a full newest-first queue drops the
    /// waiter at the back; see [`QueueOrder`]. Takes the list lock briefly.
    ///
    /// ```
    /// # use bulkhead_core::{Bulkhead, CsLock, QueueOrder};
    /// # use core::{pin::pin, task::{Context, Poll, Waker}};
    /// let api: Bulkhead<CsLock> = Bulkhead::new("api", 1).unwrap();
    /// assert_eq!(api.set_queue_order(QueueOrder::Lifo), QueueOrder::Fifo);
    /// let mut cx = Context::from_waker(Waker::noop());
    /// let held = api.try_acquire().unwrap();
    /// let mut old = pin!(api.acquire());
    /// let mut new = pin!(api.acquire());
    /// assert!(old.as_mut().poll(&mut cx).is_pending());
    /// assert!(new.as_mut().poll(&mut cx).is_pending());
    /// drop(held); // goes to the newest waiter
    /// let Poll::Ready(Ok(_seat)) = new.poll(&mut cx) else { panic!() };
    /// assert!(old.poll(&mut cx).is_pending());
    /// ```
    #[cfg(feature = "lifo")]
    pub fn set_queue_order(&self, order: QueueOrder) -> QueueOrder {
        self.engine.set_queue_order(order)
    }

    /// Closes the compartment for good: new callers get [`Error::Closed`],
    /// and every waiter is woken with it. Seats already held stay valid and
    /// are given back normally. Idempotent.
    ///
    /// ```
    /// # use bulkhead_core::{Bulkhead, CsLock, Error};
    /// let b: Bulkhead<CsLock> = Bulkhead::new("queue", 1).unwrap();
    /// let seat = b.try_acquire().unwrap();
    /// b.close();
    /// assert_eq!(b.try_acquire().unwrap_err(), Error::Closed { name: "queue".into() });
    /// drop(seat); // still fine
    /// assert!(b.state().closed);
    /// ```
    pub fn close(&self) {
        self.engine.close();
    }

    /// Whether [`close`](Self::close) was called.
    ///
    /// # Memory ordering
    ///
    /// A `close` happens-before every `is_closed` that returns `true`
    /// (`Release` and `Acquire` on the seat word), so it can serve as a
    /// shutdown flag: what the closer wrote before closing is visible to a
    /// thread that saw the compartment closed.
    pub fn is_closed(&self) -> bool {
        self.engine.is_closed()
    }

    /// The current limit: [`State::max_concurrent`] without the rest of
    /// a snapshot. One relaxed load.
    ///
    /// ```
    /// use bulkhead_core::{Bulkhead, CsLock};
    ///
    /// let db: Bulkhead<CsLock> = Bulkhead::new("database", 4)?;
    /// db.set_max_concurrent(2)?;
    /// assert_eq!(db.max_concurrent(), 2);
    /// # Ok::<(), bulkhead_core::ConfigError>(())
    /// ```
    pub fn max_concurrent(&self) -> usize {
        self.engine.max_concurrent()
    }

    /// Seats held right now: [`State::active`] without the rest of a
    /// snapshot, for a hot path (an adaptive limit's in-flight count).
    /// Two relaxed loads, no ordering: an estimate while seats come and
    /// go. [`state`](Self::state) also reads the lock's counts, which a
    /// lock may sum at a cost. [`waiting`](Self::waiting) is the same
    /// for the line.
    ///
    /// ```
    /// use bulkhead_core::{Bulkhead, CsLock};
    ///
    /// let db: Bulkhead<CsLock> = Bulkhead::new("database", 4)?;
    /// let _seat = db.try_acquire()?;
    /// assert_eq!(db.active(), 1);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn active(&self) -> usize {
        self.engine.active()
    }

    /// Callers waiting for a seat right now: [`State::waiting`] without
    /// the rest of a snapshot. One relaxed load.
    ///
    /// ```
    /// use bulkhead_core::{Bulkhead, CsLock};
    ///
    /// let db: Bulkhead<CsLock> = Bulkhead::new("database", 1)?;
    /// assert_eq!(db.waiting(), 0);
    /// # Ok::<(), bulkhead_core::ConfigError>(())
    /// ```
    pub fn waiting(&self) -> usize {
        self.engine.waiting.load(crate::sync::Ordering::Relaxed) as usize
    }

    /// A snapshot of the compartment's counters.
    ///
    /// `rejected` and `timed_out` are the lock's ([`RawLock::counts`]):
    /// reading them costs what the lock's sum costs (bulkhead-std's lock
    /// sums one counter per thread). Use [`active`](Self::active),
    /// [`waiting`](Self::waiting) and [`max_concurrent`](Self::max_concurrent)
    /// on a hot path.
    ///
    /// # Memory ordering
    ///
    /// `active` and `closed` come from one `Acquire` load of the seat word:
    /// every seat given back and every `close` that the snapshot reflects
    /// happens-before it. A snapshot with `active == 0` taken while no
    /// [`set_max_concurrent`](Self::set_max_concurrent) runs therefore sees
    /// everything the holders did before they gave their seats back. A
    /// resize changes the limit and the seat word in two steps, so a
    /// snapshot taken between them can report a seat too few or too many:
    /// treat `active` under a concurrent resize as an estimate. The other
    /// fields are plain counters with no ordering.
    pub fn state(&self) -> State {
        self.engine.state()
    }

    /// The lock that guards the waiter list, which also keeps the
    /// compartment's counts ([`RawLock::counts`]). Adapters whose lock
    /// keeps more (the time of the last rejection, admissions) read it
    /// here.
    ///
    /// Reading the lock's own state is safe; locking it is not
    /// ([`RawLock::with_lock`] is `unsafe`): only the compartment locks its
    /// lock, because a seat given back while someone else held it would
    /// strand the oldest waiter.
    pub fn raw_lock(&self) -> &L {
        &self.engine.lock
    }

    /// The most nodes one lock section reached through the list since the
    /// last call, and starts counting afresh; for the loom models of rule
    /// 7 of the engine (`loom-tests/tests/drain.rs`). Not part of the API:
    /// it exists only under `--cfg bulkhead_loom`. Call it only while no
    /// other thread uses the compartment: misuse can strand a seat, never
    /// cause undefined behaviour.
    #[cfg(bulkhead_loom)]
    #[doc(hidden)]
    pub fn loom_max_section_visits(&self) -> usize {
        self.engine.take_max_section_visits()
    }
}

impl<'a, L: RawLock> Seat<'a, L> {
    /// The compartment this seat belongs to.
    pub fn bulkhead(&self) -> &'a Bulkhead<L> {
        Bulkhead::from_engine(self.engine())
    }
}

impl<'a, L: RawLock> Acquire<'a, L> {
    /// The compartment this future waits on.
    pub fn bulkhead(&self) -> &'a Bulkhead<L> {
        Bulkhead::from_engine(self.engine())
    }
}

/// The name, the mode and what the seat word and the line hold; not the
/// lock's counts, which a lock may sum at a cost (read them with
/// [`state`](Bulkhead::state)), so that `{:?}` stays cheap in a log line.
impl<L: RawLock> fmt::Debug for Bulkhead<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bulkhead")
            .field("name", &self.name())
            .field("admission", &self.admission())
            .field("max_concurrent", &self.max_concurrent())
            .field("active", &self.active())
            .field("waiting", &self.waiting())
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}
