#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]
// The README and some rustdoc link to the registry, pools, scoped and
// partitioned compartments, which a build without those features leaves
// out; the full-feature doc build (docs.rs, CI) still checks every link.
#![cfg_attr(
    not(all(
        feature = "pool",
        feature = "scoped",
        feature = "registry",
        feature = "partitions"
    )),
    allow(rustdoc::broken_intra_doc_links)
)]

// Layers, bottom-up (docs/architecture.md): a module uses only its own
// layer and those below it.
//
// 1. Waiting: the lock, parking, event-loop detection, wait timing and
//    the series it records.
mod blocking;
mod box_error;
mod counts;
mod detect;
mod lock;
mod mutex;
mod park;
#[cfg(feature = "metrics")]
mod series;
mod wait_timer;
// 2. Compartment operations.
mod adaptive;
mod execute;
mod policy;
mod run;
mod snapshot;
// 2b. Partitioned compartments: core's types with the std lock.
#[cfg(feature = "partitions")]
pub mod partition;
// 3. Pools and scoped compartments.
#[cfg(feature = "pool")]
mod pool;
#[cfg(feature = "scoped")]
pub mod scoped;
// 4. The registry: configuration, environment, file, metrics publishing.
#[cfg(feature = "metrics")]
pub mod metrics;
#[cfg(feature = "registry")]
pub mod registry;

pub use adaptive::{Adaptive, Classify, ExecuteAdaptive, StdClock};
#[cfg(feature = "metrics")]
pub use adaptive::{adaptive_metrics, publish_adaptive};
pub use blocking::BlockingAcquire;
#[cfg(feature = "partitions")]
pub use blocking::BlockingAcquirePartition;
pub use box_error::BoxError;
/// The core crate, for its generic [`Bulkhead<L>`](bulkhead_core::Bulkhead)
/// and its `limit` module.
pub use bulkhead_core;
pub use bulkhead_core::{
    Acquire, AcquireTimeout, Admission, Config, ConfigError, Error, Handle, MAX_CONCURRENT_LIMIT,
    MAX_LOST_RACES, MAX_WAITING_LIMIT, MaxWait, OwnedSeat, QueueOrder, RawLock, State,
};
pub use detect::{EventLoop, event_loop};
pub use execute::Execute;
pub use lock::StdLock;
pub use policy::{Outcome, Policy, PolicyCompartment};
#[cfg(feature = "pool")]
pub use pool::{BuildError, PoolConfig, PoolError, Shutdown, TaskHandle, ThreadPoolBulkhead};
#[cfg(feature = "registry")]
pub use registry::limit_config::{Algorithm, DEFAULT_WINDOW, LimitConfig};
pub use run::Run;
#[cfg(feature = "async-std")]
pub use run::sleep_async_std;
#[cfg(feature = "smol")]
pub use run::sleep_smol;
pub use snapshot::{Inspect, Kind, Snapshot};
pub use wait_timer::WaitTimer;

/// A compartment for std programs: core's
/// [`Bulkhead`](bulkhead_core::Bulkhead) with a per-compartment
/// [`StdLock`], which also keeps the time of the last rejection.
///
/// This is the one compartment type of the workspace: registries,
/// bulkhead-tokio, its tower layer and this crate all take it, and core's
/// [`OwnedSeat`] and [`Handle`] work with `Arc<Bulkhead>`. Threads and
/// async tasks on any runtime share one line and one seat count.
///
/// Core's inherent methods do the seat work (`try_acquire`, `acquire`,
/// `acquire_timeout`, `set_max_concurrent`, `close`, `state`, …); this
/// crate adds extension traits, all in [`prelude`]:
///
/// - [`BlockingAcquire`]: `acquire_blocking` for threads, owned seats;
/// - [`Execute`]: `execute`, `execute_or_else`, `wrap`;
/// - [`Run`]: `try_run`, `run_timeout`, `run_timeout_or_else`, with
///   the caller's runtime timer (`tokio::time::sleep`, or this crate's
///   `sleep_smol`, `sleep_async_std`);
/// - [`Inspect`]: `snapshot` (a [`Snapshot`] with the last rejection
///   time) and `last_rejection`.
///
/// For one compartment shared by named partitions, each guaranteed a
/// share, see [`partition::Partitioned`] (feature `partitions`).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use bulkhead_std::prelude::*;
/// use bulkhead_std::{Bulkhead, Error};
///
/// static DATABASE: Bulkhead = Bulkhead::new_static("database", 2); // bad settings: a compile-time error
///
/// let a = DATABASE.try_acquire()?;
/// let b = DATABASE.acquire_blocking(Duration::from_millis(50))?;
/// assert!(matches!(DATABASE.try_acquire(), Err(Error::Full { active: 2, .. })));
/// assert!(DATABASE.last_rejection().is_some());
/// drop((a, b));
/// assert_eq!(DATABASE.state().active, 0);
/// # Ok::<(), Error>(())
/// ```
///
/// `new_static` (and `from_config_static` for a full [`Config`]) turn bad
/// settings into a compile-time error:
///
/// ```compile_fail
/// static NOBODY: bulkhead_std::Bulkhead = bulkhead_std::Bulkhead::new_static("nobody", 0);
/// # let _ = &NOBODY;
/// ```
pub type Bulkhead = bulkhead_core::Bulkhead<StdLock>;

/// A seat in a std [`Bulkhead`]. Dropping it gives the seat back, also
/// while a panic unwinds.
pub type Seat<'a> = bulkhead_core::Seat<'a, StdLock>;

/// The extension traits, to import with `use bulkhead_std::prelude::*;`.
///
/// No method name here is shared with bulkhead-tokio's `TokioAcquire`, so
/// both crates' preludes can be imported together.
pub mod prelude {
    #[cfg(feature = "partitions")]
    pub use crate::BlockingAcquirePartition;
    pub use crate::{BlockingAcquire, Execute, ExecuteAdaptive, Inspect, Run};
}

mod sealed {
    /// Only core's compartments get this crate's sealed extension traits.
    pub trait Sealed {}
    impl<L: bulkhead_core::RawLock> Sealed for bulkhead_core::Bulkhead<L> {}
    #[cfg(feature = "partitions")]
    impl<L: bulkhead_core::RawLock> Sealed for bulkhead_core::partition::Partitioned<L> {}
}
