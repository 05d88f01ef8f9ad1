//! Shutting a scoped compartment down: close, wait for the holders
//! within a bound, close the resource; and what it reports.

use std::future::Future;
use std::pin::pin;
use std::time::{Duration, Instant};

use super::Scoped;
use super::enter::{Either, race};
use super::slot::Finished;
use bulkhead_core::Name;

impl<R: Send + Sync + 'static> Scoped<R> {
    /// Shuts the compartment down from a thread: closes it (new entries
    /// get [`Error::Closed`](crate::Error::Closed), waiters are turned away), waits at most
    /// `bound` for the holders to finish, then closes the resource with
    /// its close hook (or drops it). Idempotent.
    ///
    /// If holders remain when `bound` expires, the resource is **not**
    /// closed under them: the report says
    /// [`CloseOutcome::Deferred`], and the last holder closes it.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{CloseOutcome, Opener, Scoped};
    ///
    /// let db = Scoped::new(Config::new("db", 1), "db", Opener::blocking(|_| Ok::<_, std::io::Error>(())))?;
    /// let inside = db.enter_blocking()?;
    /// let report = db.shutdown_blocking(Duration::from_millis(10));
    /// assert_eq!(report.outcome, CloseOutcome::Deferred { holders: 1 });
    /// drop(inside); // the last holder closes it
    /// assert_eq!(db.shutdown_blocking(Duration::ZERO).outcome, CloseOutcome::AlreadyClosed);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shutdown_blocking(&self, bound: Duration) -> ShutdownReport {
        let started = Instant::now();
        self.bulkhead.close();
        let (mut version, mut holders) = self.slot.begin_close();
        let deadline = started.checked_add(bound);
        while holders > 0 && self.slot.wait_blocking(version, deadline) {
            (version, holders) = self.slot.holders();
        }
        let outcome = match self.finish_close() {
            Ok(resource) => {
                self.slot.closer.close_blocking(&self.name, resource);
                CloseOutcome::Closed
            }
            Err(outcome) => outcome,
        };
        self.report(outcome, started)
    }

    /// As [`shutdown_blocking`](Self::shutdown_blocking), from async code:
    /// waits for the holders with the runtime timer `sleep` and awaits an
    /// async close hook.
    ///
    /// # Cancel safety
    /// Dropping the future after the compartment was closed leaves it
    /// closed with its resource open; a later shutdown call finishes the
    /// job. Dropping it while an async close hook runs drops that hook's
    /// future.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{CloseOutcome, Opener, Scoped};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let db = Scoped::new(Config::new("db", 1), "db", Opener::blocking(|_| Ok::<_, std::io::Error>(())))?;
    /// assert_eq!(db.shutdown_timeout(Duration::from_secs(1), tokio::time::sleep).await.outcome, CloseOutcome::NeverOpened);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn shutdown_timeout<T: Future>(
        &self,
        bound: Duration,
        sleep: impl FnOnce(Duration) -> T,
    ) -> ShutdownReport {
        let started = Instant::now();
        self.bulkhead.close();
        let (mut version, mut holders) = self.slot.begin_close();
        if holders > 0 {
            let mut timer = pin!(sleep(bound));
            while holders > 0 {
                if let Either::Second = race(self.slot.changed(version), timer.as_mut()).await {
                    break;
                }
                (version, holders) = self.slot.holders();
            }
        }
        let outcome = match self.finish_close() {
            Ok(resource) => {
                self.slot.closer.close_async(resource).await;
                CloseOutcome::Closed
            }
            Err(outcome) => outcome,
        };
        self.report(outcome, started)
    }

    /// Ends a shutdown: the resource to close now, or what happened
    /// instead.
    fn finish_close(&self) -> Result<R, CloseOutcome> {
        Err(match self.slot.finish_close() {
            Finished::Close(resource) => return Ok(resource),
            Finished::NeverOpened => CloseOutcome::NeverOpened,
            Finished::Deferred { holders } => {
                tracing::warn!(
                    compartment = self.config.name,
                    resource = self.slot.resource,
                    holders,
                    "bulkhead: shutdown bound expired with holders inside; the last holder \
                     closes the resource"
                );
                CloseOutcome::Deferred { holders }
            }
            Finished::AlreadyClosed => CloseOutcome::AlreadyClosed,
        })
    }

    fn report(&self, outcome: CloseOutcome, started: Instant) -> ShutdownReport {
        ShutdownReport {
            compartment: self.name.clone(),
            resource: self.slot.resource,
            outcome,
            took: started.elapsed(),
        }
    }
}

/// What a shutdown did.
///
/// ```
/// use std::time::Duration;
/// use bulkhead_std::Config;
/// use bulkhead_std::scoped::{CloseOutcome, Opener, Scoped};
///
/// let db = Scoped::new(Config::new("db", 1), "db-pool", Opener::blocking(|_| Ok::<_, std::io::Error>(())))?;
/// db.execute(|_| ())?;
/// let report = db.shutdown_blocking(Duration::from_secs(1));
/// assert_eq!((report.compartment.as_str(), report.resource, report.outcome), ("db", "db-pool", CloseOutcome::Closed));
/// assert!(report.took < Duration::from_secs(1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShutdownReport {
    /// The compartment.
    pub compartment: Name,
    /// Its resource.
    pub resource: &'static str,
    /// What happened to the resource.
    pub outcome: CloseOutcome,
    /// How long the shutdown took (waiting and closing).
    pub took: Duration,
}

/// What a shutdown did with the resource. Examples of each are at
/// [`Scoped::shutdown_blocking`] (`Deferred`, `AlreadyClosed`),
/// [`Scoped::shutdown_timeout`] (`NeverOpened`) and [`ShutdownReport`]
/// (`Closed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CloseOutcome {
    /// Closed after every holder finished.
    Closed,
    /// It was never opened (or every opening failed): nothing to close.
    NeverOpened,
    /// The bound expired with `holders` entries still inside (or handles
    /// still out): it was not closed under them; the last one closes it.
    Deferred {
        /// Entries still holding a seat when the bound expired.
        holders: usize,
    },
    /// An earlier shutdown already closed it.
    AlreadyClosed,
}
