//! [`Snapshot`]: core's [`State`] plus what std knows (a clock, a kind),
//! and [`Inspect`], which takes one of a std compartment.

use std::time::SystemTime;

use bulkhead_core::{Name, State};

use crate::lock::StdLock;

/// What kind of compartment a [`Snapshot`] describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// A [`Bulkhead`](crate::Bulkhead): callers run their work on their own
    /// thread or task while holding a seat.
    Semaphore,
    /// A [`ThreadPoolBulkhead`](crate::ThreadPoolBulkhead): work runs on the
    /// compartment's own worker threads.
    ThreadPool,
    /// A [`Partitioned`](crate::partition::Partitioned) compartment: a
    /// semaphore whose seats named partitions share. The snapshot's
    /// figures are the whole compartment's (summed over its partitions);
    /// `partition_state(id)` has each partition's.
    Partitioned,
}

/// A snapshot of one compartment, with the time of its last rejection.
///
/// The fields are read one after another without a lock, so under load they
/// may come from slightly different instants.
///
/// ```
/// use bulkhead_std::{Bulkhead, Inspect, Kind};
///
/// let b = Bulkhead::new("cache", 1).unwrap();
/// assert_eq!(b.snapshot().last_rejection, None);
/// let _seat = b.try_acquire().unwrap();
/// assert!(b.try_acquire().is_err());
/// let s = b.snapshot();
/// assert_eq!((s.kind, s.active, s.admitted, s.rejected), (Kind::Semaphore, 1, 1, 1));
/// assert!(s.last_rejection.is_some());
/// assert_eq!(s.utilisation_percent(), 100.0);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Snapshot {
    /// The compartment's name.
    pub name: Name,
    /// Semaphore or thread pool.
    pub kind: Kind,
    /// The current limit. For a thread pool: workers + queue.
    pub max_concurrent: usize,
    /// Seats held. For a thread pool: tasks running or queued.
    pub active: usize,
    /// For a semaphore: callers waiting for a seat. For a thread pool:
    /// admitted tasks that no worker has started yet.
    pub waiting: usize,
    /// The queue seats included in `max_concurrent`; 0 for a semaphore.
    pub queue_size: usize,
    /// Callers admitted so far, through any API (counted by [`StdLock`]).
    /// For a thread pool: tasks accepted.
    pub admitted: u64,
    /// Callers turned away because the compartment or its queue was full.
    pub rejected: usize,
    /// For a semaphore: waits whose budget ran out. For a thread pool:
    /// tasks that did not finish within the execution timeout.
    pub timed_out: usize,
    /// Whether the compartment was closed (or the pool shut down).
    pub closed: bool,
    /// When a caller was last turned away: a `Full` or `QueueFull`
    /// rejection or an expired wait budget (`Timeout`), through any API
    /// (recorded by [`StdLock`]). `None` if that never happened.
    pub last_rejection: Option<SystemTime>,
}

impl Snapshot {
    pub(crate) fn new(state: State, kind: Kind, lock: &StdLock) -> Self {
        Self {
            name: state.name,
            kind,
            max_concurrent: state.max_concurrent,
            active: state.active,
            waiting: state.waiting,
            queue_size: 0,
            admitted: lock.admitted(),
            rejected: state.rejected,
            timed_out: state.timed_out,
            closed: state.closed,
            last_rejection: lock.last_rejection(),
        }
    }

    /// Seats free right now: `max_concurrent - active`, or 0.
    pub const fn available(&self) -> usize {
        self.max_concurrent.saturating_sub(self.active)
    }

    /// `active / max_concurrent` in percent; 100 for a paused compartment.
    pub fn utilisation_percent(&self) -> f64 {
        if self.max_concurrent == 0 {
            return 100.0;
        }
        self.active as f64 * 100.0 / self.max_concurrent as f64
    }
}

/// Snapshots of a std [`Bulkhead`](crate::Bulkhead) (core's compartment
/// with a [`StdLock`]), or of a std
/// [`Partitioned`](crate::partition::Partitioned) compartment, with the
/// time of its last rejection.
///
/// Core's own [`state`](bulkhead_core::Bulkhead::state) still returns the
/// lock-agnostic [`State`]; `snapshot` adds what only std knows.
///
/// Sealed: implemented for `Bulkhead<StdLock>` and
/// `Partitioned<StdLock>` only.
///
/// ```
/// use bulkhead_std::{Bulkhead, Inspect, Kind};
///
/// let db = Bulkhead::new("database", 1)?;
/// let _seat = db.try_acquire()?;
/// assert!(db.try_acquire().is_err());
/// let s = db.snapshot();
/// assert_eq!((s.kind, s.queue_size, s.rejected), (Kind::Semaphore, 0, 1));
/// assert_eq!(s.last_rejection, db.last_rejection());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Inspect: crate::sealed::Sealed {
    /// A snapshot of the compartment: core's [`State`], kind
    /// [`Kind::Semaphore`] (or [`Kind::Partitioned`], with the whole
    /// compartment's figures), and the time of the last rejection.
    fn snapshot(&self) -> Snapshot;

    /// When a caller was last turned away (`Full`, `QueueFull` or
    /// `Timeout`), if ever; see [`StdLock::last_rejection`].
    fn last_rejection(&self) -> Option<SystemTime>;
}

impl Inspect for bulkhead_core::Bulkhead<StdLock> {
    fn snapshot(&self) -> Snapshot {
        Snapshot::new(self.state(), Kind::Semaphore, self.raw_lock())
    }

    fn last_rejection(&self) -> Option<SystemTime> {
        self.raw_lock().last_rejection()
    }
}

/// The whole compartment: `active`, `waiting`, `rejected` and `timed_out`
/// summed over its partitions; `admitted` and `last_rejection` from the
/// lock, which every partition shares.
///
/// ```
/// use bulkhead_std::{Error, Inspect, Kind};
/// use bulkhead_std::partition::{Amount, PartitionConfig, Partitioned};
///
/// let db = Partitioned::new("db", 2, &[
///     PartitionConfig::new("live", Amount::Seats(1)).lendable(Amount::Seats(0)),
///     PartitionConfig::new("batch", Amount::Seats(1)),
/// ])?;
/// let batch = db.id("batch")?;
/// let _seat = db.try_acquire(batch)?;
/// // Live's reserved seat is free, but not for batch.
/// assert!(matches!(db.try_acquire(batch), Err(Error::PartitionFull { .. })));
/// let s = db.snapshot();
/// assert_eq!((s.kind, s.max_concurrent, s.active, s.admitted, s.rejected), (Kind::Partitioned, 2, 1, 1, 1));
/// assert!(s.last_rejection.is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "partitions")]
impl Inspect for bulkhead_core::partition::Partitioned<StdLock> {
    fn snapshot(&self) -> Snapshot {
        Snapshot::new(self.state(), Kind::Partitioned, self.raw_lock())
    }

    fn last_rejection(&self) -> Option<SystemTime> {
        self.raw_lock().last_rejection()
    }
}
