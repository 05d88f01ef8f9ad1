#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod adaptive;
mod clock;
pub mod partition;
pub mod registry;
pub mod scoped;
#[cfg(feature = "tower")]
mod tower;
mod wait;

/// The core crate, for its generic [`Bulkhead<L>`](bulkhead_core::Bulkhead).
pub use bulkhead_core;
pub use bulkhead_core::{
    Acquire, AcquireTimeout, Admission, Config, ConfigError, Error, Handle, MAX_CONCURRENT_LIMIT,
    MAX_LOST_RACES, MAX_WAITING_LIMIT, MaxWait, MergeError, OwnedSeat, QueueOrder, RawLock,
    SplitError, State,
};
/// The std crate, for everything this one does not re-export by name
/// (`Policy`, `Adaptive`, …).
pub use bulkhead_std;
/// Metrics for registered compartments (feature `metrics`): bulkhead-std's
/// module, through the `metrics` facade.
#[cfg(feature = "metrics")]
pub use bulkhead_std::metrics;
/// bulkhead-std's adaptive compartment (core's `Adaptive` over the std
/// lock and clock; [`TokioAcquireAdaptive`] waits on it with tokio's
/// clock), its thread and timer entry points, and rejections as values
/// over either kind of compartment.
pub use bulkhead_std::{Adaptive, ExecuteAdaptive, Outcome, Policy, PolicyCompartment, StdClock};
/// Adaptive limits: the algorithm and its settings (a registry domain's
/// `limit`), and how a call's result reports the way it went.
pub use bulkhead_std::{Algorithm, Classify, LimitConfig};
/// bulkhead-std's compartment (core's `Bulkhead<StdLock>`, the one type
/// every crate shares), its lock and seat, its blocking acquire and its
/// event-loop detection.
pub use bulkhead_std::{BlockingAcquire, Bulkhead, EventLoop, Seat, StdLock, event_loop};
/// What a snapshot of a compartment says, and the trait that takes it.
pub use bulkhead_std::{Inspect, Kind, Snapshot};

pub use adaptive::TokioAcquireAdaptive;
/// The workspace's one boxed error (from bulkhead-std), and the error of
/// the tower services (feature `tower`) by default: tower's usual boxed
/// error. A rejection by the compartment is a boxed [`Error`]; the tower
/// module's `HttpRejection::find` turns it into a `503` response with
/// `Retry-After` in one call (or find it with
/// `err.downcast_ref::<bulkhead_tokio::Error>()`). Errors of the inner
/// service pass through unchanged (boxed). Boxing a rejection allocates; a
/// layer built with `typed_errors` returns a `ServiceError` instead, which
/// does not.
pub use bulkhead_std::BoxError;
/// The one thread pool of the workspace (from bulkhead-std): a compartment
/// with its own worker threads, for blocking work that must not share
/// tokio's `spawn_blocking` pool. Its [`TaskHandle`] is a `Future`:
/// `pool.spawn(f)?.await` awaits a closure's value.
pub use bulkhead_std::{
    BuildError, PoolConfig, PoolError, Shutdown, TaskHandle, ThreadPoolBulkhead,
};
pub use clock::TokioClock;
pub use partition::{AcquirePartitionWithin, DomainPartitionExt, TokioAcquirePartition};
pub use registry::RegistryExt;
pub use scoped::{ScopedExt, spawn_in_scope};
#[cfg(feature = "tower")]
pub use tower::{
    BoxErrors, BulkheadLayer, BulkheadService, ByExtension, ByHeader, ByPath, ClassifyPartition,
    ClassifyResponse, ErrIsDropped, ErrorRepr, HttpRejection, LayerHandle, PartitionName,
    PartitionedLayer, PartitionedService, RequestWeight, ResponseFuture, ServiceError, TypedErrors,
    WeightOne,
};
pub use wait::{AcquireWithin, AcquireWithinOwned, TokioAcquire};

/// The extension traits of this crate and of bulkhead-std, to import with
/// `use bulkhead_tokio::prelude::*;`.
///
/// [`TokioAcquire`] shares no method name with bulkhead-std's traits
/// (`BlockingAcquire`, `Execute`, `Run`, `Inspect`), so every call stays
/// unambiguous; importing `bulkhead_std::prelude::*` as well is harmless.
pub mod prelude {
    pub use crate::{
        DomainPartitionExt, RegistryExt, ScopedExt, TokioAcquire, TokioAcquireAdaptive,
        TokioAcquirePartition,
    };
    pub use bulkhead_std::prelude::*;
}
