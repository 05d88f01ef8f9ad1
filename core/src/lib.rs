#![no_std]
#![doc = include_str!("../README.md")]
#![warn(clippy::std_instead_of_core, clippy::alloc_instead_of_core)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(any(test, feature = "std"))]
extern crate std;

mod acquire;
mod admission;
mod bulkhead;
mod config;
mod counts;
mod engine;
mod error;
pub mod limit;
mod list;
mod lock;
mod max_wait;
mod name;
mod owned;
#[cfg(feature = "partitions")]
#[cfg_attr(docsrs, doc(cfg(feature = "partitions")))]
pub mod partition;
mod queue_order;
mod seat;
#[cfg(bulkhead_shuttle)]
mod shuttle_lock;
mod status;
mod sync;
mod weight;
mod word;

#[cfg(test)]
#[allow(clippy::std_instead_of_core)]
mod tests;

pub use acquire::{Acquire, AcquireTimeout};
pub use admission::{Admission, MAX_LOST_RACES};
pub use bulkhead::Bulkhead;
pub use config::{Config, MAX_NAME_LEN, MAX_WAITING_LIMIT, State};
pub use counts::{AtomicCounts, Counts};
pub use error::{ConfigError, Error};
#[cfg(feature = "weights")]
pub use error::{MergeError, SplitError};
#[cfg(feature = "critical-section")]
pub use lock::CsLock;
#[cfg(bulkhead_loom)]
pub use lock::LoomLock;
pub use lock::{ConstInit, RawLock};
pub use max_wait::{MaxWait, ParseMaxWaitError};
pub use name::Name;
pub use owned::{AcquireOwned, AcquireOwnedTimeout, AsBulkhead, Handle, OwnedSeat};
pub use queue_order::QueueOrder;
pub use seat::Seat;
#[cfg(bulkhead_shuttle)]
pub use shuttle_lock::ShuttleLock;
pub use word::MAX_CONCURRENT_LIMIT;
