//! Why entering a scoped compartment failed.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bulkhead_core::{Error, Name};

pub use crate::box_error::BoxError;

/// A compartment's resource failed to open.
///
/// Names the compartment and the resource, and keeps the initialiser's own
/// error as its [`source`](std::error::Error::source). Every caller that
/// waited on the same attempt gets a clone of it; the next entry after
/// that retries (failures are never cached).
///
/// ```
/// use bulkhead_std::Config;
/// use bulkhead_std::scoped::{Opener, ScopeError, Scoped};
///
/// let reports: Scoped<String> = Scoped::new(
///     Config::new("reports", 2),
///     "reports-db",
///     Opener::blocking(|_| Err(std::io::Error::other("connection refused"))),
/// )?;
/// let Err(ScopeError::Open(err)) = reports.enter_blocking() else { panic!() };
/// assert_eq!((err.compartment().as_str(), err.resource()), ("reports", "reports-db"));
/// // The initialiser's error is the source, not repeated in the message.
/// use std::error::Error as _;
/// assert_eq!(err.source().unwrap().to_string(), "connection refused");
/// assert!(!err.to_string().contains("connection refused"));
/// assert_eq!(reports.state().active, 0); // the seat was given back
/// # Ok::<(), bulkhead_std::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct OpenError {
    pub(crate) compartment: Name,
    pub(crate) resource: &'static str,
    pub(crate) source: Arc<dyn std::error::Error + Send + Sync + 'static>,
}

impl OpenError {
    /// The compartment whose resource failed to open (example at
    /// [`OpenError`]).
    pub fn compartment(&self) -> &Name {
        &self.compartment
    }

    /// The resource's name, as given to [`Scoped::new`](super::Scoped::new)
    /// (example at [`OpenError`]).
    pub fn resource(&self) -> &'static str {
        self.resource
    }
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "bulkhead `{}`: its resource `{}` failed to open (the seat was given back \
             and the next entry tries again)",
            self.compartment, self.resource
        )
    }
}

impl std::error::Error for OpenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}

/// Why entering a [`Scoped`](super::Scoped) compartment failed. The seat,
/// if one was taken, has been given back.
///
/// ```
/// use bulkhead_std::{Config, Error};
/// use bulkhead_std::scoped::{Opener, ScopeError, Scoped};
///
/// let cache = Scoped::new(Config::new("cache", 1), "cache-client", Opener::blocking(|_| Ok::<_, std::io::Error>(7)))?;
/// let inside = cache.enter_blocking()?;
/// let Err(err) = cache.enter_blocking() else { panic!() };
/// assert!(matches!(err, ScopeError::Rejected(Error::Full { .. })));
/// assert_eq!(err.compartment(), "cache");
/// # drop(inside);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ScopeError {
    /// The compartment turned the caller away (full, queue full, timed out
    /// waiting for a seat, or closed).
    Rejected(Error),
    /// The resource failed to open.
    Open(OpenError),
    /// The caller had a seat, but another entry was still opening the
    /// resource when the caller's wait budget ran out (fail-fast callers
    /// see this at once during the first opening).
    OpenTimeout {
        /// The compartment.
        compartment: Name,
        /// The resource being opened.
        resource: &'static str,
        /// The caller's whole wait budget (seat and opening together).
        budget: Duration,
    },
    /// A blocking entry on a thread that drives an event loop found the
    /// resource unopened, and its initialiser is async: driving it there
    /// could block the loop it needs. Nothing was opened; the seat was
    /// given back.
    NeedsAsyncEntry {
        /// The compartment.
        compartment: Name,
        /// The resource.
        resource: &'static str,
    },
}

impl ScopeError {
    /// The compartment that turned the caller away (example at
    /// [`ScopeError`]).
    pub fn compartment(&self) -> &Name {
        match self {
            ScopeError::Rejected(e) => e.name(),
            ScopeError::Open(e) => &e.compartment,
            ScopeError::OpenTimeout { compartment, .. }
            | ScopeError::NeedsAsyncEntry { compartment, .. } => compartment,
        }
    }

    /// Whether retrying later may succeed: false only once the compartment
    /// is closed.
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{Opener, Scoped};
    ///
    /// let db = Scoped::new(Config::new("db", 1), "db", Opener::blocking(|_| Err::<(), _>("down")))?;
    /// assert!(db.enter_blocking().unwrap_err().is_transient()); // a failed opening: retry later
    /// db.shutdown_blocking(Duration::ZERO);
    /// assert!(!db.enter_blocking().unwrap_err().is_transient()); // closed for good
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_transient(&self) -> bool {
        match self {
            ScopeError::Rejected(e) => e.is_transient(),
            ScopeError::Open(_)
            | ScopeError::OpenTimeout { .. }
            | ScopeError::NeedsAsyncEntry { .. } => true,
        }
    }
}

impl fmt::Display for ScopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // The reason and its advice are the source's message.
            ScopeError::Rejected(e) => {
                write!(f, "no seat in scoped compartment `{}`", e.name())
            }
            ScopeError::Open(e) => e.fmt(f),
            ScopeError::OpenTimeout {
                compartment,
                resource,
                budget,
            } => write!(
                f,
                "bulkhead `{compartment}`: its resource `{resource}` was still being opened by \
                 another entry when the wait budget of {budget:?} ran out; give the compartment \
                 a wait budget that covers the opening, or enter it once at start-up"
            ),
            ScopeError::NeedsAsyncEntry {
                compartment,
                resource,
            } => write!(
                f,
                "bulkhead `{compartment}`: its resource `{resource}` has an async initialiser, \
                 which a blocking entry cannot drive on a thread that runs an event loop; \
                 enter from async code (enter_timeout, or bulkhead-tokio's ScopedExt::enter_within) \
                 or from a spawn_blocking thread"
            ),
        }
    }
}

/// Either the message shows an inner error or `source()` returns it,
/// never both: `Rejected` returns the compartment's [`Error`] (so that a
/// walk of the chain finds it), `Open` shows the [`OpenError`] and returns
/// the initialiser's error.
impl std::error::Error for ScopeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ScopeError::Rejected(e) => Some(e),
            ScopeError::Open(e) => std::error::Error::source(e),
            ScopeError::OpenTimeout { .. } | ScopeError::NeedsAsyncEntry { .. } => None,
        }
    }
}

impl From<Error> for ScopeError {
    fn from(e: Error) -> Self {
        ScopeError::Rejected(e)
    }
}

impl From<OpenError> for ScopeError {
    fn from(e: OpenError) -> Self {
        ScopeError::Open(e)
    }
}
