#![no_std]
#![doc = include_str!("../README.md")]
#![warn(clippy::std_instead_of_core, clippy::alloc_instead_of_core)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(test)]
extern crate std;

mod acquire;
mod bulkhead;
mod config;
mod engine;
mod error;
mod list;
mod lock;
mod seat;
#[cfg(bulkhead_shuttle)]
mod shuttle_lock;
mod sync;
mod word;

#[cfg(test)]
#[allow(clippy::std_instead_of_core)]
mod tests;

pub use acquire::{Acquire, AcquireTimeout};
pub use bulkhead::Bulkhead;
pub use config::{Admission, Config, State};
pub use error::{ConfigError, Error};
#[cfg(feature = "critical-section")]
pub use lock::CsLock;
#[cfg(bulkhead_loom)]
pub use lock::LoomLock;
pub use lock::{ConstInit, RawLock};
pub use seat::{Handle, OwnedSeat, Seat};
#[cfg(bulkhead_shuttle)]
pub use shuttle_lock::ShuttleLock;
pub use word::MAX_CONCURRENT_LIMIT;
