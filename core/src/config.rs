//! A compartment's settings, and its state snapshot.

use crate::admission::Admission;
use crate::error::ConfigError;
use crate::name::Name;
use crate::queue_order::QueueOrder;
use crate::word::MAX_CONCURRENT_LIMIT;

/// The largest queue limit ([`Config::max_waiting`]) a compartment
/// accepts: `u32::MAX - 1`, 4,294,967,294, on every target.
///
/// The compartment keeps its queue limit in 32 bits, beside the 32-bit
/// seat limit (on 64-bit targets the two take one word instead of two),
/// and uses the one value above this limit for "no limit". For a queue
/// that is never full, give no limit (`None`).
pub const MAX_WAITING_LIMIT: usize = NO_QUEUE_LIMIT as usize - 1;

/// The stored queue limit that means "none".
pub(crate) const NO_QUEUE_LIMIT: u32 = NEWEST_FIRST - 1;

/// The top bit of the engine's queue field: newest-first order
/// ([`QueueOrder::Lifo`]). Below it, the queue limit.
pub(crate) const NEWEST_FIRST: u32 = 1 << 31;

/// The settings of one compartment.
///
/// Every setter is `const`, so a configuration can be built in a `static`.
///
/// ```
/// use bulkhead_core::{Admission, Config};
///
/// # #[cfg(feature = "queue-limits")]
/// const DB: Config = Config::new("database", 16)
///     .max_waiting(64)
///     .admission(Admission::Fifo);
/// # // A queue limit needs the `queue-limits` feature.
/// # #[cfg(not(feature = "queue-limits"))]
/// # const DB: Config = Config::new("database", 16).admission(Admission::Fifo);
/// assert_eq!(DB.max_concurrent, 16);
/// assert!(DB.validate().is_ok());
/// ```
///
/// With the `serde` feature, `Config` is `Serialize` and `Deserialize`.
/// Its `name` is `&'static str` (the name of a `static` compartment; a
/// name made at run time is a shared one, see [`Name`]), so deserializing
/// borrows it from
/// `'static` input (a string literal, `include_str!`, text leaked once)
/// through a deserializer that lends strings (serde_json, postcard). TOML's
/// deserializer never lends strings, so it reports "expected a borrowed
/// string"; for settings read at run time, deserialize bulkhead-std's
/// `DomainConfig` (no name; the registry keys it by name) instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct Config {
    /// The compartment's name: its domain, as it appears in errors and
    /// snapshots. At most [`MAX_NAME_LEN`] bytes. A name made at run time
    /// (a tenant, a host) is given to `Bulkhead::with_shared_name` instead,
    /// with the `alloc` feature.
    pub name: &'static str,
    /// How many callers may hold a seat at once. At least 1, at most
    /// [`MAX_CONCURRENT_LIMIT`].
    pub max_concurrent: usize,
    /// How many callers may wait at once; `None` for no limit. At most
    /// [`MAX_WAITING_LIMIT`], which is also the limit of `None`: the
    /// compartment counts its waiters in 31 bits, so with no limit the
    /// 2,147,483,647th waiter is turned away ([`Error::QueueFull`]), like
    /// one over a limit, rather than let the count wrap. (On a 32-bit
    /// target that many waiters cannot exist, so without the feature
    /// below nothing is checked there.)
    ///
    /// A limit needs the `queue-limits` feature; without it, `Some` is
    /// refused with
    /// [`ConfigError::QueueLimitUnavailable`](crate::ConfigError::QueueLimitUnavailable).
    ///
    /// [`Error::QueueFull`]: crate::Error::QueueFull
    #[cfg_attr(feature = "serde", serde(default))]
    pub max_waiting: Option<usize>,
    /// Who gets a freed seat. The barging modes need the `barging`
    /// feature; without it they are refused with
    /// [`ConfigError::BargingUnavailable`](crate::ConfigError::BargingUnavailable).
    #[cfg_attr(feature = "serde", serde(default))]
    pub admission: Admission,
    /// Which end of the line a freed seat goes to, and which waiter a full
    /// queue turns away: oldest first (the default) or newest first with
    /// drop-oldest (feature `lifo`; without it, `Lifo` is refused with
    /// [`ConfigError::LifoUnavailable`](crate::ConfigError::LifoUnavailable)).
    #[cfg_attr(feature = "serde", serde(default))]
    pub queue_order: QueueOrder,
}

impl Config {
    /// A FIFO compartment with no queue limit.
    pub const fn new(name: &'static str, max_concurrent: usize) -> Self {
        Self {
            name,
            max_concurrent,
            max_waiting: None,
            admission: Admission::Fifo,
            queue_order: QueueOrder::Fifo,
        }
    }

    /// Turn callers away at once when `max_waiting` of them already wait.
    ///
    /// `0` means nobody waits: a wait that finds no free seat is turned
    /// away at once, like `try_acquire`, but with [`Error::QueueFull`]
    /// (the queue is what is full) rather than [`Error::Full`]; both count
    /// in [`State::rejected`].
    ///
    /// [`Error::QueueFull`]: crate::Error::QueueFull
    /// [`Error::Full`]: crate::Error::Full
    #[must_use]
    pub const fn max_waiting(mut self, max_waiting: usize) -> Self {
        self.max_waiting = Some(max_waiting);
        self
    }

    /// Choose who gets a freed seat.
    #[must_use]
    pub const fn admission(mut self, admission: Admission) -> Self {
        self.admission = admission;
        self
    }

    /// Sets the order of the line; see [`QueueOrder`].
    ///
    /// ```
    /// # use bulkhead_core::{Config, QueueOrder};
    /// let config = Config::new("api", 8).max_waiting(16).queue_order(QueueOrder::Lifo);
    /// assert_eq!(config.queue_order, QueueOrder::Lifo);
    /// ```
    #[must_use]
    pub const fn queue_order(mut self, queue_order: QueueOrder) -> Self {
        self.queue_order = queue_order;
        self
    }

    /// Checks the settings; the error says what to change.
    pub const fn validate(self) -> Result<Self, ConfigError> {
        match self.problem(self.name.len()) {
            None => Ok(self),
            Some(problem) => Err(problem.error(&self)),
        }
    }

    /// Checks the settings for a compartment called `name` (`self.name` is
    /// not used), as [`Bulkhead::with_name`](crate::Bulkhead::with_name)
    /// would; the error names `name`.
    ///
    /// ```
    /// use bulkhead_core::{Config, ConfigError, Name};
    ///
    /// let err = Config::new("", 0).check_named(&Name::from_static("tenant-7")).unwrap_err();
    /// assert_eq!(err, ConfigError::ZeroCapacity { name: "tenant-7".into() });
    /// ```
    ///
    /// # Errors
    /// As [`validate`](Self::validate).
    pub fn check_named(&self, name: &Name) -> Result<(), ConfigError> {
        match self.problem(name.len()) {
            None => Ok(()),
            Some(problem) => Err(problem.error(self).renamed(name.clone())),
        }
    }

    /// What is wrong with these settings for a compartment whose name is
    /// `name_len` bytes long, if anything. A `Copy` value rather than a
    /// [`ConfigError`], so that `const` constructors can branch on it: an
    /// error may own a shared [`Name`](crate::Name), and a `const fn`
    /// cannot drop one.
    pub(crate) const fn problem(&self, name_len: usize) -> Option<Problem> {
        if self.max_concurrent == 0 {
            return Some(Problem::ZeroCapacity);
        }
        if self.max_concurrent > MAX_CONCURRENT_LIMIT {
            return Some(Problem::CapacityOverflow);
        }
        if name_len > MAX_NAME_LEN {
            return Some(Problem::NameTooLong(name_len));
        }
        if !cfg!(feature = "queue-limits") && self.max_waiting.is_some() {
            return Some(Problem::QueueLimitUnavailable);
        }
        if let Some(requested) = self.max_waiting
            && requested > MAX_WAITING_LIMIT
        {
            return Some(Problem::QueueLimitOverflow(requested));
        }
        if !cfg!(feature = "lifo") && matches!(self.queue_order, QueueOrder::Lifo) {
            return Some(Problem::LifoUnavailable);
        }
        if !cfg!(feature = "barging") && !matches!(self.admission, Admission::Fifo) {
            return Some(Problem::BargingUnavailable(self.admission));
        }
        None
    }
}

/// The longest accepted compartment name, in bytes: `u32::MAX / 2`. A
/// compartment keeps the length in 31 bits; the 32nd tells a shared name
/// from a `&'static str`.
pub const MAX_NAME_LEN: usize = (u32::MAX >> 1) as usize;

/// What [`Config::problem`] found.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Problem {
    ZeroCapacity,
    CapacityOverflow,
    /// The name's length.
    NameTooLong(usize),
    /// The queue limit asked for.
    QueueLimitOverflow(usize),
    /// `QueueOrder::Lifo` without the `lifo` feature.
    LifoUnavailable,
    /// A barging admission (the one asked for) without the `barging`
    /// feature.
    BargingUnavailable(Admission),
    /// A queue limit without the `queue-limits` feature.
    QueueLimitUnavailable,
}

impl Problem {
    /// The error for `config`, naming `config.name`.
    pub(crate) const fn error(self, config: &Config) -> ConfigError {
        let name = Name::from_static(config.name);
        match self {
            Problem::ZeroCapacity => ConfigError::ZeroCapacity { name },
            Problem::CapacityOverflow => ConfigError::CapacityOverflow {
                name,
                requested: config.max_concurrent,
                limit: MAX_CONCURRENT_LIMIT,
            },
            Problem::NameTooLong(length) => {
                // A static name has nothing to drop; `forget` says so to
                // the `const` checker (with feature `alloc`, `Name` has drop
                // glue; without it the lint sees none).
                #[allow(clippy::forget_non_drop)]
                core::mem::forget(name);
                ConfigError::NameTooLong {
                    length,
                    limit: MAX_NAME_LEN,
                }
            }
            Problem::QueueLimitOverflow(requested) => ConfigError::QueueLimitOverflow {
                name,
                requested,
                limit: MAX_WAITING_LIMIT,
            },
            Problem::LifoUnavailable => ConfigError::LifoUnavailable { name },
            Problem::BargingUnavailable(admission) => {
                ConfigError::BargingUnavailable { name, admission }
            }
            Problem::QueueLimitUnavailable => ConfigError::QueueLimitUnavailable { name },
        }
    }
}

/// A snapshot of one compartment.
///
/// The fields are read one after another without a lock, so under load they
/// may come from slightly different instants; `active` is clamped so that
/// it never reads below zero.
///
/// New fields may be added in minor releases (`#[non_exhaustive]`).
///
/// ```
/// # use bulkhead_core::{Bulkhead, CsLock};
/// let cache: Bulkhead<CsLock> = Bulkhead::new("cache", 4).unwrap();
/// let seats = [cache.try_acquire().unwrap(), cache.try_acquire().unwrap(), cache.try_acquire().unwrap()];
/// let s = cache.state();
/// assert_eq!((s.name.as_str(), s.active, s.available()), ("cache", 3, 1));
/// assert_eq!(s.utilisation_percent(), 75.0);
/// # drop(seats);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct State {
    /// The compartment's name.
    pub name: Name,
    /// The current limit.
    pub max_concurrent: usize,
    /// Seats held (including seats handed to a waiter that has not run
    /// yet). After a shrink this may exceed `max_concurrent` until the
    /// holders leave.
    pub active: usize,
    /// Callers waiting for a seat.
    pub waiting: usize,
    /// Callers turned away because the compartment or its queue was full,
    /// as the lock counts them ([`RawLock::counts`](crate::RawLock::counts);
    /// every lock of this workspace counts, a lock that keeps no counts
    /// reports 0). Saturates instead of wrapping.
    pub rejected: usize,
    /// Callers whose wait budget ran out, as the lock counts them (as
    /// `rejected`). Saturates instead of wrapping.
    pub timed_out: usize,
    /// Whether `close` was called.
    pub closed: bool,
}

impl State {
    /// Seats free right now: `max_concurrent - active`, or 0.
    pub const fn available(&self) -> usize {
        self.max_concurrent.saturating_sub(self.active)
    }

    /// `active / max_concurrent` in percent. Above 100 after a shrink while
    /// the old holders are still inside; 100 for a paused (`max = 0`)
    /// compartment, which admits nobody.
    pub fn utilisation_percent(&self) -> f64 {
        if self.max_concurrent == 0 {
            return 100.0;
        }
        self.active as f64 * 100.0 / self.max_concurrent as f64
    }
}
