//! Registry-aware calls: take a seat by name with the compartment's wait
//! budget, log rejections, and record metrics (feature `metrics`).

use std::sync::Arc;
use std::time::Instant;

use bulkhead_core::OwnedSeat;

use super::{Registry, RegistryError};
use crate::Bulkhead;
use crate::blocking::BlockingAcquire;

impl Registry {
    /// Takes a seat in compartment `name`, waiting at most its configured
    /// `max_wait` (`None`: fail fast). The seat owns an `Arc` of the
    /// compartment, so it may move to another thread.
    ///
    /// A rejection is logged at `debug` level (`tracing`). With feature
    /// `metrics`, an admission counts `bulkhead_admitted_total` and records
    /// its wait in `bulkhead_wait_seconds`; a rejection updates
    /// `bulkhead_rejected_total` / `bulkhead_timed_out_total` (see
    /// the `metrics` module).
    ///
    /// ```
    /// use bulkhead_std::registry::{Registry, RegistryError};
    /// use bulkhead_std::Error;
    ///
    /// let registry = Registry::local();
    /// let seat = registry.acquire("database")?;
    /// assert_eq!(registry.get("database")?.state().active, 1);
    /// drop(seat);
    /// # Ok::<(), RegistryError>(())
    /// ```
    ///
    /// # Errors
    /// [`RegistryError::NotFound`] (never masked), or
    /// [`RegistryError::Rejected`] with the compartment's [`Error`](crate::Error).
    pub fn acquire(&self, name: &str) -> Result<OwnedSeat<Arc<Bulkhead>>, RegistryError> {
        // One lookup: the compartment and its wait budget agree even if
        // the name is replaced concurrently.
        let (compartment, config) = self.lookup(name)?;
        let bulkhead = match compartment {
            super::Registered::Semaphore(b) => b,
            super::Registered::Pool(p) => {
                return Err(RegistryError::WrongKind {
                    name: p.name(),
                    is_pool: true,
                });
            }
        };
        let max_wait = config.max_wait;
        let started = Instant::now();
        match bulkhead.acquire_blocking_owned(max_wait) {
            Ok(seat) => {
                #[cfg(feature = "metrics")]
                crate::metrics::admitted(seat.handle().name(), started.elapsed());
                let _ = started;
                Ok(seat)
            }
            Err(error) => {
                tracing::debug!(compartment = bulkhead.name(), %error, "bulkhead: caller rejected");
                #[cfg(feature = "metrics")]
                crate::metrics::publish(&bulkhead.state());
                Err(error.into())
            }
        }
    }

    /// Runs `work` on this thread inside compartment `name`, as
    /// [`acquire`](Self::acquire) takes the seat. The seat is given back
    /// when `work` returns or panics.
    ///
    /// ```
    /// use bulkhead_std::registry::Registry;
    ///
    /// let registry = Registry::local();
    /// assert_eq!(registry.execute("cache", || 6 * 7)?, 42);
    /// # Ok::<(), bulkhead_std::registry::RegistryError>(())
    /// ```
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire); `work` has then not run.
    pub fn execute<T>(&self, name: &str, work: impl FnOnce() -> T) -> Result<T, RegistryError> {
        let _seat = self.acquire(name)?;
        Ok(work())
    }
}
