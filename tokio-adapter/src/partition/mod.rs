//! Partitions that lend and borrow, for tokio programs: everything a tokio
//! user needs, from one path, as [`bulkhead_std::partition`] is for
//! threads.
//!
//! - the compartment and its settings: [`Partitioned`] (core's with the
//!   std lock), [`PartitionConfig`], [`Amount`], [`PartitionId`],
//!   [`PartitionSeat`], [`PartitionState`], [`UnknownPartition`];
//! - tokio waits: [`TokioAcquirePartition`] (`acquire_within(id, budget)`
//!   on a `Partitioned`) and [`DomainPartitionExt`] (`acquire_within()` on
//!   a registry partition, with its configured budget), both resolving
//!   through [`AcquirePartitionWithin`];
//! - the registry's handle of one partition, [`DomainPartition`], and its
//!   seat, [`DomainPartitionSeat`];
//! - with feature `tower`, the layer: `PartitionedLayer` (also
//!   `PartitionedLayer::from_registry`) and its classifiers.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use bulkhead_tokio::Error;
//! use bulkhead_tokio::partition::{Amount, PartitionConfig, Partitioned, TokioAcquirePartition};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let db = Arc::new(Partitioned::new("db", 4, &[
//!     PartitionConfig::new("live", Amount::Seats(3)).priority(1),
//!     PartitionConfig::new("batch", Amount::Seats(1)).borrow(Amount::Seats(0)),
//! ])?);
//! let batch = db.id("batch")?;
//! let seat = db.clone().acquire_within_owned(batch, Duration::from_millis(10)).await?;
//! let err = db.acquire_within(batch, Duration::from_millis(10)).await.unwrap_err();
//! assert!(matches!(err, Error::Timeout { .. }));
//! drop(seat);
//! # Ok(())
//! # }
//! ```

mod domain;
mod wait;

pub use bulkhead_std::partition::*;
pub use bulkhead_std::registry::{DomainPartition, DomainPartitionSeat};
pub use domain::DomainPartitionExt;
pub use wait::{AcquirePartitionWithin, TokioAcquirePartition};

#[cfg(feature = "tower")]
pub use crate::tower::{
    ByExtension, ByHeader, ByPath, ClassifyPartition, PartitionName, PartitionedLayer,
    PartitionedService,
};
