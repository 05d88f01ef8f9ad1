#![doc = include_str!("../README.md")]

mod blocking;
mod lock;

pub use blocking::BlockingAcquire;
pub use bulkhead_core as core;
pub use bulkhead_core::{
    Acquire, AcquireTimeout, Admission, Config, ConfigError, Error, Handle, MAX_CONCURRENT_LIMIT,
    OwnedSeat, RawLock, State,
};
pub use lock::StdLock;

/// A compartment whose waiter list is guarded by its own [`StdLock`].
pub type Bulkhead = bulkhead_core::Bulkhead<StdLock>;

/// A seat in a std [`Bulkhead`].
pub type Seat<'a> = bulkhead_core::Seat<'a, StdLock>;
