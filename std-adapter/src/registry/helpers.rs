//! Registry-aware calls: take a seat by name with the compartment's wait
//! budget, from a thread or from async code, log rejections, and publish
//! metrics after a rejection (feature `metrics`).

use std::sync::Arc;
use std::time::Duration;

use bulkhead_core::limit::CallOutcome;
use bulkhead_core::{Error, OwnedSeat};

use super::{DomainConfig, Registry, RegistryError, RegistrySeat};
use crate::Bulkhead;
use crate::adaptive::Classify;
use crate::blocking::BlockingAcquire;

impl Registry {
    /// The semaphore compartment `name` and the settings it runs with,
    /// from one lookup, so the two agree even if the name is replaced
    /// concurrently. Adapters that take a seat with the configured budget
    /// (bulkhead-tokio's tower layer) start here.
    ///
    /// ```
    /// use bulkhead_std::MaxWait;
    /// use bulkhead_std::registry::Registry;
    ///
    /// let registry = Registry::local();
    /// let (db, config) = registry.get_with_config("database")?;
    /// assert_eq!((db.name(), config.max_concurrent, config.max_wait), ("database", 10, MaxWait::FailFast));
    /// # Ok::<(), bulkhead_std::registry::RegistryError>(())
    /// ```
    ///
    /// # Errors
    /// [`RegistryError::NotFound`], or [`RegistryError::WrongKind`] for a
    /// thread pool.
    pub fn get_with_config(
        &self,
        name: &str,
    ) -> Result<(Arc<Bulkhead>, DomainConfig), RegistryError> {
        let (compartment, config) = self.lookup(name)?;
        Ok((compartment.semaphore()?, config))
    }

    /// Takes a seat in compartment `name` from a thread, blocking it for
    /// at most the compartment's configured `max_wait` (fail fast by
    /// default). The seat owns an
    /// `Arc` of the compartment, so it may move to another thread.
    ///
    /// This is a blocking call. On a thread that drives an event loop (a
    /// tokio worker, `block_on`) it gives the immediate verdict, as every
    /// blocking acquire does (see [`event_loop`](crate::event_loop)), and
    /// a full compartment answers [`Error::FullOnEventLoop`] saying so
    /// (logged once per compartment as a `tracing` warning): from
    /// async code use [`acquire_timeout`](Self::acquire_timeout), or
    /// bulkhead-tokio's `RegistryExt::acquire_within`, which honour the
    /// budget; to never wait, [`try_acquire`](Self::try_acquire).
    ///
    /// A rejection is logged at `debug` level (`tracing`). With feature
    /// `metrics`, the wait is recorded in `bulkhead_wait_seconds` and a
    /// rejection publishes the compartment's counters (see the `metrics`
    /// module); admissions are counted by the compartment itself.
    ///
    /// In an adaptive compartment the seat times itself and feeds the
    /// limit when it is given back ([`RegistrySeat`]).
    ///
    /// ```
    /// use bulkhead_std::registry::{Registry, RegistryError};
    ///
    /// let registry = Registry::local();
    /// let seat = registry.acquire_blocking("database")?;
    /// assert_eq!(registry.get("database")?.state().active, 1);
    /// drop(seat);
    /// # Ok::<(), RegistryError>(())
    /// ```
    ///
    /// # Errors
    /// [`RegistryError::NotFound`] (never masked), [`RegistryError::WrongKind`]
    /// for a thread pool, or [`RegistryError::Rejected`] with the
    /// compartment's [`Error`].
    pub fn acquire_blocking(&self, name: &str) -> Result<RegistrySeat, RegistryError> {
        self.acquire_many_blocking(name, 1)
    }

    /// As [`acquire_blocking`](Self::acquire_blocking), for `weight` seats
    /// at once (as [`BlockingAcquire::acquire_many_blocking`]): one seat
    /// of that weight, or none, within the compartment's configured
    /// `max_wait`. In FIFO order a heavy waiter is never passed by lighter
    /// callers behind it. In an adaptive compartment the seat records one
    /// sample whatever its weight ([`RegistrySeat`]).
    ///
    /// ```
    /// use bulkhead_std::{Error, MaxWait};
    /// use bulkhead_std::registry::{DomainConfig, Registry, RegistryError};
    ///
    /// let registry = Registry::local();
    /// registry.get_or_create("import", DomainConfig::new(4).max_wait(MaxWait::from_millis(10)))?;
    /// let batch = registry.acquire_many_blocking("import", 3)?;
    /// assert_eq!(batch.weight(), 3);
    /// let err = registry.acquire_many_blocking("import", 2).unwrap_err(); // one seat free: waits 10 ms
    /// assert!(matches!(err.rejection(), Some(Error::Timeout { .. })));
    /// let err = registry.acquire_many_blocking("import", 5).unwrap_err(); // never fits
    /// assert!(matches!(err.rejection(), Some(Error::WeightAboveLimit { .. })));
    /// # Ok::<(), RegistryError>(())
    /// ```
    ///
    /// # Errors
    /// As [`acquire_blocking`](Self::acquire_blocking), and
    /// [`RegistryError::Rejected`] with [`Error::ZeroWeight`] or
    /// [`Error::WeightAboveLimit`].
    pub fn acquire_many_blocking(
        &self,
        name: &str,
        weight: usize,
    ) -> Result<RegistrySeat, RegistryError> {
        let domain = self.domain(name)?;
        match domain
            .bulkhead
            .acquire_many_blocking_owned(weight, domain.config.max_wait)
        {
            Ok(seat) => Ok(domain.start(seat)),
            Err(error) => Err(rejected(&domain.bulkhead, error)),
        }
    }

    /// Takes a seat in compartment `name` if one is free right now, never
    /// waiting, whatever the compartment's configured `max_wait`.
    ///
    /// The seat owns an `Arc` of the compartment, so it outlives the
    /// lookup and may move to another thread or task (a seat kept from
    /// `registry.get("x")?.try_acquire()` would borrow the temporary `Arc`
    /// and not compile, and would record no sample). In an
    /// adaptive compartment it times itself and feeds the limit when it is
    /// given back ([`RegistrySeat`]), as every registry verb's seat does.
    /// Logging and metrics as [`acquire_blocking`](Self::acquire_blocking).
    ///
    /// ```
    /// use bulkhead_std::Error;
    /// use bulkhead_std::registry::{DomainConfig, Registry, RegistryError};
    ///
    /// let registry = Registry::local();
    /// registry.get_or_create("search", DomainConfig::new(1))?;
    /// let seat = registry.try_acquire("search")?;
    /// let full = registry.try_acquire("search").unwrap_err();
    /// assert!(matches!(full.rejection(), Some(Error::Full { .. })));
    /// drop(seat);
    /// assert!(registry.try_acquire("search").is_ok());
    /// # Ok::<(), RegistryError>(())
    /// ```
    ///
    /// # Errors
    /// [`RegistryError::NotFound`], [`RegistryError::WrongKind`] for a
    /// thread pool, or [`RegistryError::Rejected`] with [`Error::Full`] or
    /// [`Error::Closed`].
    pub fn try_acquire(&self, name: &str) -> Result<RegistrySeat, RegistryError> {
        self.try_acquire_many(name, 1)
    }

    /// As [`try_acquire`](Self::try_acquire), for `weight` seats at once
    /// ([`Domain::try_acquire_many`](super::Domain::try_acquire_many)).
    ///
    /// ```
    /// use bulkhead_std::Error;
    /// use bulkhead_std::registry::{Registry, RegistryError};
    ///
    /// let registry = Registry::local();
    /// let seat = registry.try_acquire_many("database", 10)?; // all ten
    /// assert!(matches!(registry.try_acquire("database").unwrap_err().rejection(), Some(Error::Full { .. })));
    /// drop(seat);
    /// let zero = registry.try_acquire_many("database", 0).unwrap_err();
    /// assert!(matches!(zero.rejection(), Some(Error::ZeroWeight { .. })));
    /// # Ok::<(), RegistryError>(())
    /// ```
    ///
    /// # Errors
    /// As [`try_acquire`](Self::try_acquire), and
    /// [`RegistryError::Rejected`] with [`Error::ZeroWeight`] or
    /// [`Error::WeightAboveLimit`].
    pub fn try_acquire_many(
        &self,
        name: &str,
        weight: usize,
    ) -> Result<RegistrySeat, RegistryError> {
        let domain = self.domain(name)?;
        domain
            .try_acquire_many(weight)
            .map_err(|error| rejected(&domain.bulkhead, error))
    }

    /// Runs `work` on this thread inside compartment `name`, as
    /// [`acquire_blocking`](Self::acquire_blocking) takes the seat. The seat is given back
    /// when `work` returns or panics.
    ///
    /// In an adaptive compartment the call is timed and its result
    /// classified ([`Classify`]): `Err` or a panic counts as dropped,
    /// anything else as a success. For the work's own timeout, a business
    /// error that says nothing about load, or a result of another type,
    /// use [`execute_classified`](Self::execute_classified).
    ///
    /// ```
    /// use bulkhead_std::registry::Registry;
    ///
    /// let registry = Registry::local();
    /// assert_eq!(registry.execute("cache", || Ok::<_, std::io::Error>(6 * 7))?.unwrap(), 42);
    /// # Ok::<(), bulkhead_std::registry::RegistryError>(())
    /// ```
    ///
    /// # Errors
    /// As [`acquire_blocking`](Self::acquire_blocking); `work` has then not run.
    pub fn execute<T: Classify>(
        &self,
        name: &str,
        work: impl FnOnce() -> T,
    ) -> Result<T, RegistryError> {
        self.execute_classified(name, work, T::outcome)
    }

    /// As [`execute`](Self::execute), with the outcome an adaptive
    /// compartment records decided by `classify` (any result type; for
    /// instance `io::ErrorKind::TimedOut` as a timeout). A panic in `work`
    /// still counts as dropped.
    ///
    /// ```
    /// use bulkhead_std::registry::Registry;
    /// use bulkhead_std::bulkhead_core::limit::CallOutcome;
    ///
    /// let registry = Registry::local();
    /// let n = registry.execute_classified("cache", || 6 * 7, |_| CallOutcome::Success)?;
    /// assert_eq!(n, 42);
    /// # Ok::<(), bulkhead_std::registry::RegistryError>(())
    /// ```
    ///
    /// # Errors
    /// As [`acquire_blocking`](Self::acquire_blocking); `work` has then not run.
    pub fn execute_classified<T>(
        &self,
        name: &str,
        work: impl FnOnce() -> T,
        classify: impl FnOnce(&T) -> CallOutcome,
    ) -> Result<T, RegistryError> {
        let seat = self.acquire_blocking(name)?;
        let value = work();
        finish(seat, classify(&value));
        Ok(value)
    }

    /// As [`execute`](Self::execute), holding `weight` seats at once,
    /// taken as [`acquire_many_blocking`](Self::acquire_many_blocking)
    /// takes them. An adaptive compartment records one sample for the
    /// call, whatever its weight.
    ///
    /// ```
    /// use bulkhead_std::registry::Registry;
    ///
    /// let registry = Registry::local();
    /// let db = registry.get("database")?;
    /// let held = registry.execute_weighted("database", 4, || Ok::<_, ()>(db.state().active))?;
    /// assert_eq!(held, Ok(4));
    /// # Ok::<(), bulkhead_std::registry::RegistryError>(())
    /// ```
    ///
    /// # Errors
    /// As [`acquire_many_blocking`](Self::acquire_many_blocking); `work`
    /// has then not run.
    pub fn execute_weighted<T: Classify>(
        &self,
        name: &str,
        weight: usize,
        work: impl FnOnce() -> T,
    ) -> Result<T, RegistryError> {
        let seat = self.acquire_many_blocking(name, weight)?;
        let value = work();
        finish(seat, value.outcome());
        Ok(value)
    }

    /// Takes a seat in compartment `name` from async code on any runtime,
    /// waiting at most the compartment's configured `max_wait` with the
    /// runtime's timer: `sleep` turns the budget into a future that
    /// completes when it has elapsed (`tokio::time::sleep`,
    /// `async_io::Timer::after`, `async_std::task::sleep`, …). It is not
    /// called when the budget is to fail fast.
    ///
    /// The future does nothing until it is polled: the lookup, the budget
    /// and the seat are all taken at the first poll. The seat owns an
    /// `Arc` of the compartment, so it can move into a spawned task.
    /// Logging, metrics and adaptive timing as [`acquire_blocking`](Self::acquire_blocking).
    ///
    /// # Cancel safety
    /// Dropping the future at any point loses nothing: a waiting task
    /// leaves the line, and a seat already handed to it goes to the next
    /// waiter.
    ///
    /// # Errors
    /// As [`acquire_blocking`](Self::acquire_blocking).
    ///
    /// ```
    /// use bulkhead_std::registry::{DomainConfig, Registry, RegistryError};
    /// use bulkhead_std::{Error, MaxWait};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let registry = Registry::local();
    /// registry.get_or_create("search", DomainConfig::new(1).max_wait(MaxWait::from_millis(20)))?;
    /// let sleep = tokio::time::sleep; // or async_io::Timer::after, async_std::task::sleep, ...
    /// let seat = registry.acquire_timeout("search", sleep).await?;
    /// // Full: this caller waits its 20 ms budget, then times out.
    /// let err = registry.acquire_timeout("search", sleep).await.unwrap_err();
    /// assert!(matches!(err, RegistryError::Rejected(Error::Timeout { .. })));
    /// drop(seat);
    /// # Ok::<(), RegistryError>(())
    /// # }).unwrap();
    /// ```
    pub async fn acquire_timeout<T: Future>(
        &self,
        name: &str,
        sleep: impl FnOnce(Duration) -> T,
    ) -> Result<RegistrySeat, RegistryError> {
        self.acquire_many_timeout(name, 1, sleep).await
    }

    /// As [`acquire_timeout`](Self::acquire_timeout), for `weight` seats
    /// at once: one seat of that weight, or none, within the
    /// compartment's configured `max_wait` on the runtime's timer.
    ///
    /// # Cancel safety
    /// As [`acquire_timeout`](Self::acquire_timeout).
    ///
    /// # Errors
    /// As [`acquire_many_blocking`](Self::acquire_many_blocking).
    ///
    /// ```
    /// use bulkhead_std::registry::{Registry, RegistryError};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let registry = Registry::local();
    /// let seat = registry.acquire_many_timeout("cache", 5, tokio::time::sleep).await?;
    /// assert_eq!((seat.weight(), registry.get("cache")?.state().active), (5, 5));
    /// # Ok::<(), RegistryError>(())
    /// # }).unwrap();
    /// ```
    pub async fn acquire_many_timeout<T: Future>(
        &self,
        name: &str,
        weight: usize,
        sleep: impl FnOnce(Duration) -> T,
    ) -> Result<RegistrySeat, RegistryError> {
        let domain = self.domain(name)?;
        let bulkhead = &domain.bulkhead;
        let max_wait = domain.config.max_wait;
        match crate::run::acquire_many_timeout(bulkhead, weight, max_wait, sleep).await {
            Ok(seat) => Ok(domain.start(OwnedSeat::from_seat(seat, Arc::clone(bulkhead)))),
            Err(error) => Err(rejected(bulkhead, error)),
        }
    }

    /// Runs `work` inside compartment `name`, as
    /// [`acquire_timeout`](Self::acquire_timeout) takes the seat.
    /// The budget bounds only the wait, not `work`. An adaptive compartment
    /// records `work`'s output as [`execute`](Self::execute) does; a task
    /// dropped while it holds the seat records a success.
    ///
    /// # Cancel safety
    /// Dropping the future loses no seat: before admission it leaves the
    /// line; after admission `work` is dropped unfinished and the seat is
    /// given back.
    ///
    /// # Errors
    /// As [`acquire_blocking`](Self::acquire_blocking); `work` has then not been polled.
    ///
    /// ```
    /// use bulkhead_std::registry::Registry;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let registry = Registry::local();
    /// let n = registry.run_timeout("cache", async { Ok::<_, ()>(6 * 7) }, tokio::time::sleep).await?;
    /// assert_eq!(n, Ok(42));
    /// # Ok::<(), bulkhead_std::registry::RegistryError>(())
    /// # }).unwrap();
    /// ```
    pub async fn run_timeout<F, T: Future>(
        &self,
        name: &str,
        work: F,
        sleep: impl FnOnce(Duration) -> T,
    ) -> Result<F::Output, RegistryError>
    where
        F: Future,
        F::Output: Classify,
    {
        let seat = self.acquire_timeout(name, sleep).await?;
        let value = work.await;
        finish(seat, value.outcome());
        Ok(value)
    }

    /// As [`run_timeout`](Self::run_timeout), holding `weight` seats at
    /// once, taken as [`acquire_many_timeout`](Self::acquire_many_timeout)
    /// takes them. An adaptive compartment records one sample for the
    /// call, whatever its weight.
    ///
    /// # Cancel safety
    /// As [`run_timeout`](Self::run_timeout).
    ///
    /// # Errors
    /// As [`acquire_many_blocking`](Self::acquire_many_blocking); `work`
    /// has then not been polled.
    ///
    /// ```
    /// use bulkhead_std::registry::Registry;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let registry = Registry::local();
    /// let db = registry.get("database")?;
    /// let held = registry.run_timeout_weighted("database", 4, async { Ok::<_, ()>(db.state().active) }, tokio::time::sleep).await?;
    /// assert_eq!(held, Ok(4));
    /// # Ok::<(), bulkhead_std::registry::RegistryError>(())
    /// # }).unwrap();
    /// ```
    pub async fn run_timeout_weighted<F, T: Future>(
        &self,
        name: &str,
        weight: usize,
        work: F,
        sleep: impl FnOnce(Duration) -> T,
    ) -> Result<F::Output, RegistryError>
    where
        F: Future,
        F::Output: Classify,
    {
        let seat = self.acquire_many_timeout(name, weight, sleep).await?;
        let value = work.await;
        finish(seat, value.outcome());
        Ok(value)
    }
}

/// Gives `seat` back with `outcome` (only an adaptive compartment records
/// it). A panic in the work never gets here: the seat is then dropped
/// while unwinding, which records a drop.
fn finish(seat: RegistrySeat, outcome: CallOutcome) {
    let _ = seat.record(outcome);
}

/// Logs a rejection, publishes the compartment's counters (feature
/// `metrics`) and wraps the error.
fn rejected(bulkhead: &Bulkhead, error: Error) -> RegistryError {
    tracing::debug!(compartment = bulkhead.name(), %error, "bulkhead: caller rejected");
    #[cfg(feature = "metrics")]
    crate::metrics::publish(&crate::snapshot::Inspect::snapshot(bulkhead));
    RegistryError::Rejected(error)
}
