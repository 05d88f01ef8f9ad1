//! [`Bulkhead`]: core's compartment with a [`StdLock`] and a rejection clock.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bulkhead_core::{Config, ConfigError, Error};

use crate::lock::StdLock;
use crate::owned::OwnedSeat;
use crate::snapshot::{Kind, Snapshot, Stamp};

/// Core's compartment type with std's lock, as [`Bulkhead`] wraps it.
pub type CoreBulkhead = bulkhead_core::Bulkhead<StdLock>;

/// A seat in a std [`Bulkhead`]. Dropping it gives the seat back, also
/// while a panic unwinds.
pub type Seat<'a> = bulkhead_core::Seat<'a, StdLock>;

/// A compartment for std programs: at most `max_concurrent` callers inside
/// at once, shared by threads and async tasks on any runtime.
///
/// It is core's [`Bulkhead`](bulkhead_core::Bulkhead) with a per-compartment
/// [`StdLock`], plus the wall-clock time of its last rejection, which
/// [`state`](Self::state) reports. It dereferences to the core compartment
/// for everything else ([`set_max_concurrent`](CoreBulkhead::set_max_concurrent),
/// [`close`](CoreBulkhead::close), [`name`](CoreBulkhead::name), …).
///
/// Take seats through this type's own methods (or [`BlockingAcquire`],
/// [`execute`](Self::execute), [`Policy`](crate::Policy)): they record the
/// rejection time. A rejection made directly through [`core`](Self::core)
/// is counted but not timed.
///
/// # Fairness
///
/// As core: FIFO hand-off by default, barging on request
/// ([`Admission`](bulkhead_core::Admission)). Threads and tasks share one line.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use bulkhead_std::{BlockingAcquire, Bulkhead, Error};
///
/// static DATABASE: Bulkhead = match Bulkhead::new("database", 2) {
///     Ok(b) => b,
///     Err(_) => panic!("bad settings"),
/// };
///
/// let a = DATABASE.try_acquire()?;
/// let b = DATABASE.acquire_blocking(Some(Duration::from_millis(50)))?;
/// assert!(matches!(DATABASE.try_acquire(), Err(Error::Full { active: 2, .. })));
/// drop((a, b));
/// assert_eq!(DATABASE.state().active, 0);
/// # Ok::<(), Error>(())
/// ```
///
/// [`BlockingAcquire`]: crate::BlockingAcquire
pub struct Bulkhead {
    core: CoreBulkhead,
    last_rejection: Stamp,
}

impl Bulkhead {
    /// A FIFO compartment called `name` with `max_concurrent` seats.
    ///
    /// # Errors
    /// As [`bulkhead_core::Bulkhead::new`]: 0 seats, or more than
    /// [`MAX_CONCURRENT_LIMIT`](bulkhead_core::MAX_CONCURRENT_LIMIT).
    pub const fn new(name: &'static str, max_concurrent: usize) -> Result<Self, ConfigError> {
        Self::from_config(Config::new(name, max_concurrent))
    }

    /// A compartment built from `config`.
    ///
    /// ```
    /// use bulkhead_std::{Admission, Bulkhead, Config};
    /// let b = Bulkhead::from_config(Config::new("api", 4).max_waiting(16).admission(Admission::Barging))?;
    /// assert_eq!(b.state().max_concurrent, 4);
    /// # Ok::<(), bulkhead_std::ConfigError>(())
    /// ```
    ///
    /// # Errors
    /// As [`Config::validate`].
    pub const fn from_config(config: Config) -> Result<Self, ConfigError> {
        match CoreBulkhead::from_config(config) {
            Ok(core) => Ok(Self::from_core(core)),
            Err(e) => Err(e),
        }
    }

    /// Wraps an existing core compartment.
    pub const fn from_core(core: CoreBulkhead) -> Self {
        Self {
            core,
            last_rejection: Stamp::new(),
        }
    }

    /// The core compartment. Seats taken through it count normally, but
    /// its rejections are not timed.
    pub fn core(&self) -> &CoreBulkhead {
        &self.core
    }

    /// Takes a seat if one is free right now, without waiting.
    ///
    /// # Errors
    /// [`Error::Full`] (counted and timed) or [`Error::Closed`].
    pub fn try_acquire(&self) -> Result<Seat<'_>, Error> {
        self.core.try_acquire().map_err(|e| self.note(e))
    }

    /// As [`try_acquire`](Self::try_acquire), but the seat keeps a clone of
    /// the `Arc`, so it can move into a spawned thread or task.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use bulkhead_std::Bulkhead;
    ///
    /// let db = Arc::new(Bulkhead::new("db", 1)?);
    /// let seat = db.try_acquire_owned()?;
    /// std::thread::spawn(move || drop(seat)).join().unwrap();
    /// assert_eq!(db.state().active, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`try_acquire`](Self::try_acquire).
    pub fn try_acquire_owned(self: &Arc<Self>) -> Result<OwnedSeat, Error> {
        OwnedSeat::try_acquire(self)
    }

    /// Waits for a seat with no time limit; see
    /// [`bulkhead_core::Bulkhead::acquire`]. Prefer a bounded wait:
    /// [`acquire_within`](Self::acquire_within).
    ///
    /// # Cancel safety
    /// Dropping the future at any point loses nothing.
    ///
    /// # Errors
    /// [`Error::QueueFull`] (timed) or [`Error::Closed`].
    pub async fn acquire(&self) -> Result<Seat<'_>, Error> {
        self.core.acquire().await.map_err(|e| self.note(e))
    }

    /// Waits for a seat until `timer` completes; see
    /// [`bulkhead_core::Bulkhead::acquire_timeout`]. `budget` is only
    /// reported in the error.
    ///
    /// # Cancel safety
    /// Dropping the future at any point loses nothing.
    ///
    /// # Errors
    /// [`Error::Timeout`] or [`Error::QueueFull`] (both timed), or
    /// [`Error::Closed`].
    pub async fn acquire_timeout<T: Future>(
        &self,
        budget: Duration,
        timer: T,
    ) -> Result<Seat<'_>, Error> {
        self.core
            .acquire_timeout(budget, timer)
            .await
            .map_err(|e| self.note(e))
    }

    /// A snapshot of the compartment, with the time of its last rejection.
    pub fn state(&self) -> Snapshot {
        Snapshot::new(self.core.state(), Kind::Semaphore, self.last_rejection())
    }

    /// When a caller was last turned away (`Full`, `QueueFull` or
    /// `Timeout`), if ever.
    pub fn last_rejection(&self) -> Option<SystemTime> {
        self.last_rejection.get()
    }

    /// Records the time of a rejection and passes the error on.
    pub(crate) fn note(&self, e: Error) -> Error {
        if matches!(
            e,
            Error::Full { .. } | Error::QueueFull { .. } | Error::Timeout { .. }
        ) {
            self.last_rejection.record();
        }
        e
    }
}

impl Deref for Bulkhead {
    type Target = CoreBulkhead;

    fn deref(&self) -> &CoreBulkhead {
        &self.core
    }
}

impl From<CoreBulkhead> for Bulkhead {
    fn from(core: CoreBulkhead) -> Self {
        Self::from_core(core)
    }
}

impl fmt::Debug for Bulkhead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bulkhead")
            .field("admission", &self.core.admission())
            .field("state", &self.state())
            .finish()
    }
}
