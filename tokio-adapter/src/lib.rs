#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod pool;
mod runtime;
#[cfg(feature = "tower")]
mod tower;
mod wait;

/// The core crate, for its generic [`Bulkhead<L>`](bulkhead_core::Bulkhead).
pub use bulkhead_core;
pub use bulkhead_core::{
    Acquire, AcquireTimeout, Admission, Config, ConfigError, Error, Handle, MAX_CONCURRENT_LIMIT,
    OwnedSeat, RawLock, State,
};
/// bulkhead-std's lock, its alias and its (always waiting) blocking acquire.
pub use bulkhead_std::{BlockingAcquire, Bulkhead, StdLock};

pub use pool::{BlockingPool, Builder, Job, PoolBuildError, PoolState, RunError};
pub use runtime::can_block;
#[cfg(feature = "tower")]
pub use tower::{BoxError, BulkheadLayer, BulkheadService, ResponseFuture};
pub use wait::{AcquireWithin, BulkheadExt};

/// A seat in a std [`Bulkhead`], borrowing it.
pub type Seat<'a> = bulkhead_core::Seat<'a, StdLock>;

/// A seat that owns an `Arc` of its std [`Bulkhead`], for spawned tasks.
pub type ArcSeat = OwnedSeat<std::sync::Arc<Bulkhead>>;
