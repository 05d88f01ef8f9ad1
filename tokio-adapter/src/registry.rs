//! The per-domain registry: bulkhead-std's
//! [`registry`](bulkhead_std::registry) module, re-exported whole, and
//! [`RegistryExt`], its lookups for tokio tasks, with each compartment's
//! configured wait budget measured on tokio's clock.

use std::future::Future;
use std::time::Duration;

use bulkhead_std::Classify;
// Everything of bulkhead-std's registry, so that `bulkhead_tokio::registry`
// is the one path a tokio user needs (a private import of one of these
// names would hide its public re-export).
pub use bulkhead_std::registry::*;
use bulkhead_std::scoped::ShutdownReport;

/// Takes seats by compartment name from tokio tasks, honouring each
/// compartment's configured `max_wait` (code < file < environment, see
/// [`RegistryBuilder`]).
///
/// bulkhead-std's [`Registry::acquire_blocking`] is a *blocking* call: on a tokio
/// worker it gives the immediate verdict, whatever the budget, because
/// blocking there could stall the task that holds the seat. These methods
/// wait asynchronously instead, on [`tokio::time`], in the same line as
/// threads and other tasks. Admissions, rejections and timeouts are counted
/// by the compartment itself and the wait is recorded for the metrics
/// histogram, so the registry's metrics see them like any other path.
///
/// In an adaptive compartment (a `limit` in its settings) the seats time
/// themselves on the std clock and feed the limit when they are given
/// back: [`acquire_within`](Self::acquire_within)'s seat records a success
/// when dropped (or [`RegistrySeat::record`] says otherwise), and
/// [`run_within`](Self::run_within) classifies `work`'s output
/// ([`Classify`]: `Err` counts as dropped).
///
/// For a tower service, `BulkheadLayer::from_registry` (feature `tower`)
/// takes the same budget.
///
/// Sealed: implemented for [`Registry`] only.
///
/// # Examples
/// ```
/// use bulkhead_tokio::MaxWait;
/// use std::time::Duration;
/// use bulkhead_tokio::registry::{DomainConfig, Registry, RegistryError};
/// use bulkhead_tokio::{Error, RegistryExt};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), RegistryError> {
/// let registry = Registry::local();
/// registry.get_or_create("search", DomainConfig::new(1).max_wait(MaxWait::from_millis(20)))?;
/// let seat = registry.acquire_within("search").await?;
/// // Full: this task waits its configured 20 ms, then times out.
/// let err = registry.acquire_within("search").await.unwrap_err();
/// assert!(matches!(err, RegistryError::Rejected(Error::Timeout { .. })));
/// drop(seat);
/// assert_eq!(registry.run_within("search", async { Ok::<_, ()>(7) }).await?, Ok(7));
/// # Ok(())
/// # }
/// ```
///
/// The budget from a settings file (feature `config-file`):
///
/// ```
/// # #[cfg(feature = "config-file")]
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
/// use std::time::Duration;
/// use bulkhead_tokio::Error;
/// use bulkhead_tokio::registry::{Registry, RegistryError, RegistryExt};
///
/// let registry = Registry::builder()
///     .toml_str(r#"
///         [domains.database]
///         max_concurrent = 1
///         max_wait = "50ms"
///     "#) // or .toml_file("bulkhead.toml"); BULKHEAD_* variables still win
///     .build()?;
/// let seat = registry.acquire_within("database").await?;
/// let start = tokio::time::Instant::now();
/// // Full: waits the file's 50 ms on tokio's clock, then times out.
/// let err = registry.acquire_within("database").await.unwrap_err();
/// assert!(matches!(err, RegistryError::Rejected(Error::Timeout { .. })));
/// assert_eq!(start.elapsed(), Duration::from_millis(50));
/// drop(seat);
/// # Ok(())
/// # }
/// # #[cfg(not(feature = "config-file"))]
/// # fn main() {}
/// ```
pub trait RegistryExt: sealed::Sealed {
    /// Takes a seat in compartment `name`, waiting at most its configured
    /// `max_wait` on tokio's clock (fail fast by default). The seat owns an
    /// `Arc` of the compartment, so it can move into a spawned task.
    ///
    /// The future does nothing until it is polled: the lookup, the budget
    /// and the seat are taken at the first poll.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future leaves the line, and a seat that
    /// had already been handed over goes to the next waiter.
    ///
    /// # Panics
    /// When polled with a budget outside a tokio runtime with the time
    /// driver enabled, as any [`tokio::time::sleep`].
    ///
    /// # Errors
    /// As [`Registry::acquire_blocking`]: [`RegistryError::NotFound`],
    /// [`RegistryError::WrongKind`], or [`RegistryError::Rejected`] with
    /// `Full`, `Timeout`, `QueueFull` or `Closed`.
    fn acquire_within<'a>(
        &'a self,
        name: &'a str,
    ) -> impl Future<Output = Result<RegistrySeat, RegistryError>> + Send + 'a;

    /// Runs `work` inside compartment `name`, as
    /// [`acquire_within`](Self::acquire_within) takes the seat. The budget
    /// bounds only the wait, not `work`. An adaptive compartment records
    /// `work`'s output as [`Registry::run_timeout`] does.
    ///
    /// # Cancel safety
    /// Dropping the future loses no seat: before admission it leaves the
    /// line; after admission `work` is dropped unfinished and the seat is
    /// given back.
    ///
    /// # Errors
    /// As [`acquire_within`](Self::acquire_within); `work` has then not been
    /// polled.
    fn run_within<'a, F>(
        &'a self,
        name: &'a str,
        work: F,
    ) -> impl Future<Output = Result<F::Output, RegistryError>> + Send + 'a
    where
        F: Future + Send + 'a,
        F::Output: Classify;

    /// Takes `weight` seats at once in compartment `name`, as
    /// [`acquire_within`](Self::acquire_within) takes one: the registry's
    /// [`Registry::acquire_many_timeout`] on tokio's clock.
    ///
    /// # Cancel safety
    /// As [`acquire_within`](Self::acquire_within).
    ///
    /// # Errors
    /// As [`acquire_within`](Self::acquire_within), and
    /// [`RegistryError::Rejected`] with `ZeroWeight` or `WeightAboveLimit`.
    ///
    /// ```
    /// use bulkhead_tokio::registry::{DomainConfig, Registry};
    /// use bulkhead_tokio::prelude::*;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let registry = Registry::local();
    /// registry.get_or_create("db", DomainConfig::new(8))?;
    /// let import = registry.acquire_many_within("db", 4).await?;
    /// assert_eq!(import.weight(), 4);
    /// # Ok(())
    /// # }
    /// ```
    fn acquire_many_within<'a>(
        &'a self,
        name: &'a str,
        weight: usize,
    ) -> impl Future<Output = Result<RegistrySeat, RegistryError>> + Send + 'a;

    /// Runs `work` inside compartment `name` under `weight` seats, as
    /// [`run_within`](Self::run_within) does under one: the registry's
    /// [`Registry::run_timeout_weighted`] on tokio's clock. An adaptive
    /// compartment records one sample, whatever the weight.
    ///
    /// # Cancel safety
    /// As [`run_within`](Self::run_within).
    ///
    /// # Errors
    /// As [`acquire_many_within`](Self::acquire_many_within); `work` has then
    /// not been polled.
    fn run_within_weighted<'a, F>(
        &'a self,
        name: &'a str,
        weight: usize,
        work: F,
    ) -> impl Future<Output = Result<F::Output, RegistryError>> + Send + 'a
    where
        F: Future + Send + 'a,
        F::Output: Classify;

    /// Takes a seat of partition `partition` of the partitioned
    /// compartment `domain`, waiting at most the partition's budget on
    /// tokio's clock (its `max_wait`, or else the compartment's): a
    /// lookup with [`Registry::partition`], then
    /// [`DomainPartitionExt::acquire_within`](crate::DomainPartitionExt::acquire_within).
    /// To take many seats of one partition, look it up once and keep the
    /// [`DomainPartition`].
    ///
    /// # Cancel safety
    /// As [`acquire_within`](Self::acquire_within).
    ///
    /// # Errors
    /// [`RegistryError::NotFound`], [`RegistryError::NotPartitioned`],
    /// [`RegistryError::UnknownPartition`] (naming the partitions there
    /// are), or [`RegistryError::Rejected`] with `PartitionFull`,
    /// `Timeout`, `QueueFull` or `Closed`.
    ///
    /// ```
    /// use bulkhead_tokio::MaxWait;
    /// use bulkhead_tokio::partition::{Amount, PartitionConfig};
    /// use bulkhead_tokio::registry::{DomainConfig, Registry};
    /// use bulkhead_tokio::prelude::*;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let registry = Registry::local();
    /// registry.get_or_create_partitioned("db", DomainConfig::new(4).partitions_from([
    ///     PartitionConfig::new("live", Amount::Seats(3)).max_wait(MaxWait::from_millis(50)),
    ///     PartitionConfig::new("batch", Amount::Seats(1)),
    /// ]))?;
    /// let seat = registry.acquire_partition_within("db", "live").await?;
    /// assert_eq!(seat.weight(), 1);
    /// let err = registry.acquire_partition_within("db", "lvie").await.unwrap_err();
    /// assert!(err.to_string().contains("did you mean `live`?"));
    /// # Ok(())
    /// # }
    /// ```
    fn acquire_partition_within<'a>(
        &'a self,
        domain: &'a str,
        partition: &'a str,
    ) -> impl Future<Output = Result<DomainPartitionSeat, RegistryError>> + Send + 'a;

    /// Shuts the registry's compartments down from a tokio task, as
    /// [`Registry::shutdown_timeout`] with `tokio::time::sleep`: every
    /// compartment stops admitting at once, then the scoped compartments
    /// close in reverse order of opening, each after its holders finish
    /// (within what is left of `bound`), awaiting async close hooks.
    ///
    /// # Cancel safety
    /// Dropping the future leaves every compartment closed and the scoped
    /// compartments not yet reached with their resources open; call it
    /// again to finish.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_tokio::registry::{DomainConfig, Registry};
    /// use bulkhead_tokio::scoped::{Opener, Scoped};
    /// use bulkhead_tokio::prelude::*;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let registry = Registry::local();
    /// for name in ["first", "second"] {
    ///     registry.create_scoped(name, DomainConfig::new(1), |c| {
    ///         Scoped::new(c, "pool", Opener::blocking(|_| Ok::<_, std::io::Error>(())))
    ///     })?;
    /// }
    /// registry.get_scoped::<()>("first")?.run_within(async {}).await?;
    /// registry.get_scoped::<()>("second")?.run_within(async {}).await?;
    /// let order: Vec<_> = registry.shutdown_within(Duration::from_secs(1)).await
    ///     .iter().map(|r| r.compartment.clone()).collect();
    /// assert_eq!(order, ["second", "first"]);
    /// # Ok(())
    /// # }
    /// ```
    fn shutdown_within(
        &self,
        bound: Duration,
    ) -> impl Future<Output = Vec<ShutdownReport>> + Send + '_;
}

mod sealed {
    /// Only the registry gets these methods.
    pub trait Sealed {}
    impl Sealed for bulkhead_std::registry::Registry {}
}

impl RegistryExt for Registry {
    fn acquire_within<'a>(
        &'a self,
        name: &'a str,
    ) -> impl Future<Output = Result<RegistrySeat, RegistryError>> + Send + 'a {
        self.acquire_timeout(name, tokio::time::sleep)
    }

    fn run_within<'a, F>(
        &'a self,
        name: &'a str,
        work: F,
    ) -> impl Future<Output = Result<F::Output, RegistryError>> + Send + 'a
    where
        F: Future + Send + 'a,
        F::Output: Classify,
    {
        self.run_timeout(name, work, tokio::time::sleep)
    }

    fn acquire_many_within<'a>(
        &'a self,
        name: &'a str,
        weight: usize,
    ) -> impl Future<Output = Result<RegistrySeat, RegistryError>> + Send + 'a {
        self.acquire_many_timeout(name, weight, tokio::time::sleep)
    }

    fn run_within_weighted<'a, F>(
        &'a self,
        name: &'a str,
        weight: usize,
        work: F,
    ) -> impl Future<Output = Result<F::Output, RegistryError>> + Send + 'a
    where
        F: Future + Send + 'a,
        F::Output: Classify,
    {
        self.run_timeout_weighted(name, weight, work, tokio::time::sleep)
    }

    async fn acquire_partition_within<'a>(
        &'a self,
        domain: &'a str,
        partition: &'a str,
    ) -> Result<DomainPartitionSeat, RegistryError> {
        let handle = self.partition(domain, partition)?;
        Ok(crate::DomainPartitionExt::acquire_within(&handle).await?)
    }

    fn shutdown_within(
        &self,
        bound: Duration,
    ) -> impl Future<Output = Vec<ShutdownReport>> + Send + '_ {
        self.shutdown_timeout(bound, tokio::time::sleep)
    }
}
