//! [`DomainPartitionExt`]: tokio waits on a registry partition, with the
//! budget its settings give.

use std::sync::Arc;

use bulkhead_std::registry::DomainPartition;

use super::wait::AcquirePartitionWithin;
use bulkhead_std::partition::Partitioned;

/// Takes a seat of a registry partition ([`DomainPartition`], from
/// [`Registry::partition`](bulkhead_std::registry::Registry::partition))
/// from a tokio task, waiting at most its configured budget on tokio's
/// clock: the partition's `max_wait`, or else its compartment's
/// ([`DomainPartition::wait_budget`]), as configured when the wait
/// starts (a live reconfiguration reaches a kept handle).
///
/// `DomainPartition::acquire_blocking` is a *blocking* call: on a tokio
/// worker it gives the immediate verdict, whatever the budget. These
/// methods wait asynchronously instead, in the partition's line, and
/// record the wait for the metrics histogram like every other path.
///
/// Sealed: implemented for [`DomainPartition`] only.
///
/// ```
/// use bulkhead_tokio::{Error, MaxWait};
/// use bulkhead_tokio::partition::{Amount, DomainPartitionExt, PartitionConfig};
/// use bulkhead_tokio::registry::{DomainConfig, Registry};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let registry = Registry::local();
/// registry.get_or_create_partitioned(
///     "db",
///     DomainConfig::new(4).max_wait(MaxWait::from_millis(20)).partitions_from([
///         PartitionConfig::new("live", Amount::Seats(3)),
///         PartitionConfig::new("batch", Amount::Seats(1)).borrow(Amount::Seats(0)),
///     ]),
/// )?;
/// let batch = registry.partition("db", "batch")?;
/// let seat = batch.acquire_within().await?;
/// let start = tokio::time::Instant::now();
/// // Batch may not borrow: the next call waits the domain's 20 ms.
/// let err = batch.acquire_within().await.unwrap_err();
/// assert!(matches!(err, Error::Timeout { .. }));
/// assert_eq!(start.elapsed(), std::time::Duration::from_millis(20));
/// drop(seat);
/// # Ok(())
/// # }
/// ```
pub trait DomainPartitionExt: sealed::Sealed {
    /// Takes a seat of the partition, waiting at most its budget on
    /// tokio's clock. The seat owns an `Arc` of the compartment, so it can
    /// move into a spawned task.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future leaves the line, and a seat that
    /// had already been handed over is given back (to the next waiter).
    ///
    /// # Panics
    /// When polled with a budget outside a tokio runtime with the time
    /// driver enabled, as any [`tokio::time::sleep`].
    ///
    /// # Errors
    /// As [`TokioAcquirePartition::acquire_within`](super::wait::TokioAcquirePartition::acquire_within):
    /// `PartitionFull` (failing fast), `Timeout`, `QueueFull`, `Closed`.
    fn acquire_within(&self) -> AcquirePartitionWithin<Arc<Partitioned>>;

    /// Takes `weight` seats of the partition together, as
    /// [`acquire_within`](Self::acquire_within) takes one.
    ///
    /// # Cancel safety
    /// As [`acquire_within`](Self::acquire_within).
    ///
    /// # Errors
    /// As [`acquire_within`](Self::acquire_within), and, at the first
    /// poll, `ZeroWeight` or `WeightAboveLimit`.
    fn acquire_many_within(&self, weight: usize) -> AcquirePartitionWithin<Arc<Partitioned>>;
}

mod sealed {
    /// Only the registry's partition handle gets these methods.
    pub trait Sealed {}
    impl Sealed for bulkhead_std::registry::DomainPartition {}
}

impl DomainPartitionExt for DomainPartition {
    fn acquire_within(&self) -> AcquirePartitionWithin<Arc<Partitioned>> {
        self.acquire_many_within(1)
    }

    fn acquire_many_within(&self, weight: usize) -> AcquirePartitionWithin<Arc<Partitioned>> {
        AcquirePartitionWithin::new(
            Arc::clone(self.compartment()),
            self.id(),
            weight,
            self.wait_budget(),
        )
    }
}
