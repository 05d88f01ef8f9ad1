#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod blocking;
mod bulkhead;
mod detect;
mod execute;
mod lock;
mod owned;
mod policy;
mod pool;
mod run;
mod snapshot;
mod timer;

pub use blocking::BlockingAcquire;
pub use bulkhead::{Bulkhead, CoreBulkhead, Seat};
pub use bulkhead_core as core;
pub use bulkhead_core::{
    Acquire, AcquireTimeout, Admission, Config, ConfigError, Error, MAX_CONCURRENT_LIMIT, RawLock,
    State,
};
pub use detect::{EventLoop, event_loop};
pub use lock::StdLock;
pub use owned::OwnedSeat;
pub use policy::{Outcome, Policy};
pub use pool::{BuildError, PoolConfig, PoolError, Shutdown, TaskHandle, ThreadPoolBulkhead};
pub use snapshot::{Kind, Snapshot};
