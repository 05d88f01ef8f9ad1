//! Partitions that lend and borrow, for std programs: core's
//! [`partition`](bulkhead_core::partition) module with a [`StdLock`]
//! (feature `partitions`, on by default).
//!
//! A [`Partitioned`] compartment is one compartment whose seats are shared
//! by up to [`MAX_PARTITIONS`] named partitions: each is guaranteed a
//! share, lends the idle part of it to the others, and may borrow beyond
//! it up to a limit; a seat a borrower frees goes to a lender that needs
//! it before any borrower. Core's documentation has the rules.
//!
//! Core's inherent methods do the seat work (`try_acquire(id)`,
//! `acquire(id)`, `acquire_timeout(id, …)`, `reconfigure`, `close`,
//! `partition_state`, …); this crate adds, in its
//! [`prelude`](crate::prelude):
//!
//! - [`BlockingAcquirePartition`](crate::BlockingAcquirePartition):
//!   `acquire_blocking(id, max_wait)` for threads, weighted and owned
//!   forms;
//! - [`Inspect`](crate::Inspect): `snapshot` (compartment-wide figures,
//!   [`Kind::Partitioned`](crate::Kind::Partitioned)) and
//!   `last_rejection`.
//!
//! A seat is core's [`PartitionSeat`], over the handle it was taken
//! through: `PartitionSeat<&Partitioned>` borrows the compartment,
//! `PartitionSeat<Arc<Partitioned>>` can move to another thread.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use bulkhead_std::prelude::*;
//! use bulkhead_std::partition::{Amount, PartitionConfig, Partitioned};
//!
//! let db = Partitioned::new("db", 4, &[
//!     PartitionConfig::new("live", Amount::Seats(3)).priority(1),
//!     PartitionConfig::new("batch", Amount::Seats(1)),
//! ])?;
//! let (live, batch) = (db.id("live")?, db.id("batch")?);
//!
//! // Batch borrows live's idle seats...
//! let night: Vec<_> = (0..4).map(|_| db.acquire_blocking(batch, Duration::ZERO)).collect::<Result<_, _>>()?;
//! // ...and live waits for the first one batch gives back.
//! std::thread::scope(|s| {
//!     let waiter = s.spawn(|| db.acquire_blocking(live, Duration::from_secs(5)).map(|seat| seat.partition()));
//!     while db.partition_state(live).unwrap().waiting == 0 {
//!         std::thread::yield_now();
//!     }
//!     drop(night);
//!     assert_eq!(waiter.join().unwrap().unwrap(), live);
//! });
//! assert_eq!(db.state().active, 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use bulkhead_core::partition::{
    AcquirePartition, AcquirePartitionTimeout, Amount, MAX_PARTITIONS, PartitionConfig,
    PartitionHandle, PartitionId, PartitionSeat, PartitionState, UnknownPartition,
};

use crate::lock::StdLock;

/// A partitioned compartment for std programs: core's
/// [`Partitioned`](bulkhead_core::partition::Partitioned) with a
/// per-compartment [`StdLock`], which also counts admissions and keeps
/// the time of the last rejection (for [`Inspect`](crate::Inspect)).
///
/// ```
/// use bulkhead_std::partition::{Amount, PartitionConfig, Partitioned};
/// use bulkhead_std::{ConfigError, Error};
///
/// let db = Partitioned::new("db", 10, &[
///     PartitionConfig::new("live", Amount::Percent(70)),
///     PartitionConfig::new("batch", Amount::Percent(30)).borrow(Amount::Seats(0)),
/// ])?;
/// let batch = db.id("batch")?;
/// let held: Vec<_> = (0..3).map(|_| db.try_acquire(batch).unwrap()).collect();
/// // Batch may not borrow: its share is all it gets.
/// assert!(matches!(db.try_acquire(batch), Err(Error::PartitionFull { share: 3, .. })));
/// # drop(held);
///
/// // Bad settings are refused with the reason and the fix.
/// let err = Partitioned::new("db", 10, &[]).unwrap_err();
/// assert!(matches!(err, ConfigError::NoPartitions { .. }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type Partitioned = bulkhead_core::partition::Partitioned<StdLock>;
