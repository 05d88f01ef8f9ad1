//! [`Bulkhead`], a compartment with a fixed number of seats.

#[cfg(feature = "alloc")]
use alloc::sync::Arc;
use core::fmt;
use core::time::Duration;

use crate::acquire::{Acquire, AcquireTimeout};
use crate::config::{Admission, Config, MAX_WAITING_LIMIT, NO_QUEUE_LIMIT, Problem, State};
use crate::engine::Refusal;
use crate::error::{ConfigError, Error};
use crate::list::List;
use crate::lock::{ConstInit, RawLock};
use crate::name::{Name, Repr};
use crate::seat::Seat;
use crate::sync::{AtomicU32, AtomicUsize, Counter, Ordering, UnsafeCell, loom_const_fn};
use crate::word::{self, CLOSED, MAX_CONCURRENT_LIMIT};

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
pub struct Bulkhead<L: RawLock> {
    /// Available seats and flags; see [`crate::word`].
    pub(crate) word: AtomicUsize,
    /// Barging mode: the waiters notified and not re-polled yet, plus
    /// [`ALL_NOTIFIED`](crate::engine::ALL_NOTIFIED) while none is left to
    /// notify. Written only under the lock (rule 8 in `engine.rs`).
    pub(crate) notified: AtomicUsize,
    /// The limit, for snapshots and reconfiguration. Written under the lock.
    /// 32 bits, as is `max_waiting`: the two share one word on 64-bit
    /// targets ([`MAX_CONCURRENT_LIMIT`] and [`MAX_WAITING_LIMIT`] keep
    /// them in range).
    pub(crate) max: AtomicU32,
    /// The queue limit, [`NO_QUEUE_LIMIT`] for none; read it with
    /// [`queue_limit`](Self::queue_limit).
    pub(crate) max_waiting: AtomicU32,
    /// How many nodes the list links: the list's one count, kept by the
    /// engine where it links and unlinks nodes (only under the lock), and
    /// read without the lock by snapshots. 32 bits: the queue limit, also
    /// when there is none, is at most [`MAX_WAITING_LIMIT`].
    pub(crate) waiting: AtomicU32,
    pub(crate) rejected: Counter,
    pub(crate) timed_out: Counter,
    /// The name, as the start of its bytes and its length in 31 bits
    /// (checked by [`Config::validate`]): 12 bytes on 64-bit targets
    /// instead of 16, and the length shares a word with `waiting`. The top
    /// bit, [`SHARED`], says whether the bytes are those of an `Arc<str>`
    /// whose one strong reference this compartment owns (given back in
    /// `Drop`); without it they are a `&'static str`. Read it with
    /// [`name`](Self::name), share it with [`name_handle`](Self::name_handle).
    name_start: *const u8,
    name_len: u32,
    /// # Safety
    /// Accessed only inside `lock`'s closures.
    pub(crate) list: UnsafeCell<List>,
    pub(crate) lock: L,
}

// SAFETY: the list's raw pointers are only dereferenced under `lock`, which
// is `Sync`; the nodes they point to belong to `Send` futures that unlink
// them before they move or die. `name_start` points into a `&'static str`
// or into an `Arc<str>` this compartment owns a reference to; both are
// `Send` and `Sync`. Everything else is atomic or immutable.
unsafe impl<L: RawLock + Send> Send for Bulkhead<L> {}
// SAFETY: as above; shared access to the list goes through `lock`.
unsafe impl<L: RawLock + Sync> Sync for Bulkhead<L> {}

// A panic never leaves a compartment inconsistent: core runs no foreign
// code under the lock, and seats and waiters are given back by `Drop`.
impl<L: RawLock + core::panic::RefUnwindSafe> core::panic::RefUnwindSafe for Bulkhead<L> {}
impl<L: RawLock + core::panic::UnwindSafe> core::panic::UnwindSafe for Bulkhead<L> {}

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
        /// use bulkhead_core::{Admission, Bulkhead, Config, CsLock};
        ///
        /// static SPI: Bulkhead<CsLock> =
        ///     Bulkhead::from_config_static(Config::new("spi", 2).max_waiting(4).admission(Admission::Barging));
        /// assert_eq!(SPI.admission(), Admission::Barging);
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
                None => Self::build(config, lock),
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
        /// As [`Config::validate`].
        pub fn with_lock(config: Config, lock: L) -> Result<Self, ConfigError> {
            match config.problem(config.name.len()) {
                None => Ok(Self::build(config, lock)),
                Some(problem) => {
                    // A `const fn` cannot run `L`'s destructor. Locks hold
                    // no resources before first use, so forgetting is free.
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
        let len = name.len();
        let mut bulkhead = Self::build(config, lock);
        // The reference `into_raw` hands over is the compartment's; `Drop`
        // gives it back.
        bulkhead.name_start = Arc::into_raw(name).cast::<u8>();
        // Checked above: the length fits in 31 bits, below `SHARED`.
        bulkhead.name_len = len as u32 | SHARED;
        Ok(bulkhead)
    }

    loom_const_fn! {
        /// The compartment of a validated `config`.
        fn build(config: Config, lock: L) -> Self {
            Self {
                word: AtomicUsize::new(word::initial(config.max_concurrent, config.admission)),
                notified: AtomicUsize::new(crate::engine::ALL_NOTIFIED),
                // Validated: both fit in 32 bits.
                max: AtomicU32::new(config.max_concurrent as u32),
                max_waiting: AtomicU32::new(queue_limit_field(config.max_waiting)),
                waiting: AtomicU32::new(0),
                rejected: Counter::new(),
                timed_out: Counter::new(),
                name_start: config.name.as_ptr(),
                // Validated: the length fits in 32 bits.
                name_len: config.name.len() as u32,
                list: UnsafeCell::new(List::new()),
                lock,
            }
        }
    }

    /// The compartment's name.
    ///
    /// It borrows the compartment: a shared name (see
    /// `with_shared_name` (feature `alloc`)) lives only as long as
    /// its holders. To keep it, take a [`name_handle`](Self::name_handle).
    pub fn name(&self) -> &str {
        let bytes = core::ptr::slice_from_raw_parts(self.name_start, self.name_len());
        // SAFETY: `name_start` and the length are the start and the length
        // of the string this compartment was built with (checked to fit in
        // 31 bits, so the length is exact). That string is valid UTF-8 and
        // immutable, and lives at least as long as `self`: a `&'static str`
        // forever, a shared name until `Drop` gives back the reference the
        // compartment owns, which cannot happen while `self` is borrowed.
        unsafe { core::str::from_utf8_unchecked(&*bytes) }
    }

    /// The compartment's name, to keep: the `&'static str` it was built
    /// with, or one more reference to its shared name. Errors and states
    /// carry this.
    pub fn name_handle(&self) -> Name {
        #[cfg(feature = "alloc")]
        if self.name_len & SHARED != 0 {
            let name =
                core::ptr::slice_from_raw_parts(self.name_start, self.name_len()) as *const str;
            // SAFETY: with `SHARED` set, `name` is the pointer
            // `Arc::<str>::into_raw` returned in `with_shared_name` (the
            // same address and length), and the compartment still owns
            // the reference that call handed over (`Drop` has not run
            // while `self` is borrowed), so the count is at least 1 and
            // the allocation is live. Incrementing first and then taking
            // the new reference with `from_raw` leaves the compartment's
            // own reference untouched.
            return Name::shared(unsafe {
                Arc::increment_strong_count(name);
                Arc::from_raw(name)
            });
        }
        Name::from_static(self.static_name())
    }

    /// The name of a compartment built with a `&'static str`.
    fn static_name(&self) -> &'static str {
        let bytes = core::ptr::slice_from_raw_parts(self.name_start, self.name_len());
        // SAFETY: only called without `SHARED` (`name_handle` checks it,
        // and without `alloc` no constructor sets it), so `name_start` and
        // the length are those of the `&'static str` the compartment was
        // built with: valid UTF-8, immutable, for the rest of the program.
        unsafe { core::str::from_utf8_unchecked(&*bytes) }
    }

    /// The name's length, without the `SHARED` bit.
    fn name_len(&self) -> usize {
        (self.name_len & !SHARED) as usize
    }

    /// The admission order chosen at construction.
    pub fn admission(&self) -> Admission {
        // The mode's bits never change after construction (a hand-off only
        // flips `BARGING` of a `BoundedBarging` compartment, whose
        // `BOUNDED` bit tells), so any value of the word tells.
        word::admission(self.word.load(Ordering::Relaxed))
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
        match self.try_take() {
            Ok(()) => Ok(Seat::new(self)),
            Err(Refusal::Closed) => Err(self.closed_error()),
            Err(Refusal::Full) => Err(self.reject_full()),
        }
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
        Acquire::new(self)
    }

    /// Waits for a seat at most until `timer` completes.
    ///
    /// `timer` is any future that completes when the budget has elapsed:
    /// `tokio::time::sleep(budget)`, `embassy_time::Timer::after(budget)`,
    /// an async-std or smol timer. `budget` is only reported in the error.
    /// The adapter crates wrap this with their own timers.
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
    /// [`Error::Timeout`] (counted in [`State::timed_out`]), and those of
    /// [`acquire`](Self::acquire).
    pub fn acquire_timeout<T: Future>(
        &self,
        budget: Duration,
        timer: T,
    ) -> AcquireTimeout<'_, L, T> {
        AcquireTimeout::new(self.acquire(), budget, timer)
    }

    /// Changes the number of seats, live.
    ///
    /// - Growing hands the new seats to waiters at once.
    /// - Shrinking never blocks and never takes back a held seat: holders
    ///   keep their seats, and admissions resume once fewer than the new
    ///   maximum are inside.
    /// - `0` admits nobody until the limit is raised again (a pause).
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
        Ok(self.with_list(|_, _| self.resize_locked(max_concurrent)))
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
        Ok(self.try_with_list(|_, _| self.resize_locked(max_concurrent)))
    }

    /// The current limit.
    #[inline]
    pub(crate) fn max_concurrent(&self) -> usize {
        self.max.load(Ordering::Relaxed) as usize
    }

    /// The current queue limit. With none it is [`MAX_WAITING_LIMIT`],
    /// the most that the 32-bit waiter count holds (documented on
    /// [`Config::max_waiting`]).
    #[inline]
    pub(crate) fn queue_limit(&self) -> usize {
        match self.max_waiting.load(Ordering::Relaxed) {
            NO_QUEUE_LIMIT => MAX_WAITING_LIMIT,
            n => n as usize,
        }
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

    /// Moves the limit to `max_concurrent`; returns the old one. Only with
    /// the lock held, so that concurrent changes apply in some order.
    fn resize_locked(&self, max_concurrent: usize) -> usize {
        let old = self.max_concurrent();
        // Checked against `MAX_CONCURRENT_LIMIT`: it fits in 32 bits.
        self.max.store(max_concurrent as u32, Ordering::Relaxed);
        if max_concurrent > old {
            self.add_seats(max_concurrent - old);
        } else if max_concurrent < old {
            // A debt that later releases pay before anyone is admitted.
            // `Relaxed`: it frees no seat and publishes nothing; as an RMW
            // it continues the release sequences of the seats in the word.
            self.word
                .fetch_sub(word::seats(old - max_concurrent), Ordering::Relaxed);
        }
        old
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
        self.max_waiting
            .store(queue_limit_field(max_waiting), Ordering::Relaxed);
        Ok(())
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
        self.with_list(|_, _| {
            // `Release`: pairs with `is_closed`'s `Acquire`. The closer
            // reads nothing it needs, so no `Acquire`.
            self.word.fetch_or(CLOSED, Ordering::Release);
        });
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
        self.word.load(Ordering::Acquire) & CLOSED != 0
    }

    /// A snapshot of the compartment's counters.
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
        let w = self.word.load(Ordering::Acquire);
        let max = self.max_concurrent();
        State {
            name: self.name_handle(),
            max_concurrent: max,
            active: active(max, w),
            waiting: self.waiting.load(Ordering::Relaxed) as usize,
            rejected: self.rejected.get(),
            timed_out: self.timed_out.get(),
            closed: w & CLOSED != 0,
        }
    }

    /// The lock that guards the waiter list. Adapters whose lock also
    /// records rejections ([`RawLock::record_rejection`]) read them here.
    ///
    /// Reading the lock's own state is safe; locking it is not
    /// ([`RawLock::with_lock`] is `unsafe`): only the compartment locks its
    /// lock, because a seat given back while someone else held it would
    /// strand the oldest waiter.
    pub fn raw_lock(&self) -> &L {
        &self.lock
    }

    /// Counts a caller turned away (full, or queue full).
    pub(crate) fn count_rejection(&self) {
        self.rejected.increment();
        self.lock.record_rejection();
    }

    /// Counts a fail-fast rejection and describes it.
    pub(crate) fn reject_full(&self) -> Error {
        self.count_rejection();
        let max_concurrent = self.max_concurrent();
        Error::Full {
            name: self.name_handle(),
            max_concurrent,
            active: active(max_concurrent, self.word.load(Ordering::Relaxed)),
        }
    }

    /// Counts a timed-out wait and describes it.
    pub(crate) fn time_out(&self, budget: Duration) -> Error {
        self.timed_out.increment();
        self.lock.record_rejection();
        Error::Timeout {
            name: self.name_handle(),
            budget,
        }
    }
}

/// The top bit of `name_len`: the name is a shared `Arc<str>` the
/// compartment owns a reference to. Never set in a validated length
/// (at most [`MAX_NAME_LEN`](crate::MAX_NAME_LEN)).
const SHARED: u32 = 1 << 31;

/// Gives back the compartment's reference to a shared name. A no-op for a
/// `&'static str` name (and without `alloc`), so a `static` compartment,
/// which is never dropped anyway, costs nothing more. The impl exists in
/// every build, so that enabling `alloc` changes nothing about where a
/// compartment may be built (`Drop` types cannot be dropped in a `const`
/// initializer: build `static`s with `new_static`/`from_config_static`).
impl<L: RawLock> Drop for Bulkhead<L> {
    fn drop(&mut self) {
        #[cfg(feature = "alloc")]
        if self.name_len & SHARED != 0 {
            let name =
                core::ptr::slice_from_raw_parts(self.name_start, self.name_len()) as *const str;
            // SAFETY: with `SHARED` set, `name` is what
            // `Arc::<str>::into_raw` returned in `with_shared_name`, and
            // the reference that call handed over is the compartment's
            // alone (`name_handle` takes new ones). It is given back once:
            // `drop` runs once, and nothing borrows `self` any more, so no
            // `name()` borrow outlives the string.
            drop(unsafe { Arc::from_raw(name) });
        }
    }
}

/// The stored queue limit for a validated `max_waiting`: at most
/// [`MAX_WAITING_LIMIT`], so it cannot collide with [`NO_QUEUE_LIMIT`].
const fn queue_limit_field(max_waiting: Option<usize>) -> u32 {
    match max_waiting {
        Some(n) => n as u32,
        None => NO_QUEUE_LIMIT,
    }
}

/// Seats held: `max - available`, clamped into `usize`.
fn active(max: usize, w: usize) -> usize {
    let available = word::available(w);
    if available >= 0 {
        max.saturating_sub(available as usize)
    } else {
        max.saturating_add(available.unsigned_abs())
    }
}

impl<L: RawLock> fmt::Debug for Bulkhead<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bulkhead")
            .field("admission", &self.admission())
            .field("state", &self.state())
            .finish()
    }
}
