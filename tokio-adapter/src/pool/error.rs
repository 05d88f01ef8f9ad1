//! Why a pool job did not produce its value, and why a pool was not built.

use std::any::Any;
use std::fmt;
use std::time::Duration;

use bulkhead_core::{ConfigError, Error};

/// Why a [`BlockingPool`](crate::BlockingPool) job did not return its value.
///
/// Map [`Rejected`](RunError::Rejected) to "busy, retry later" (an HTTP
/// 503), [`TimedOut`](RunError::TimedOut) to a gateway timeout.
///
/// ```
/// # use std::time::Duration;
/// use bulkhead_tokio::{Error, RunError};
///
/// let full = RunError::Rejected(Error::Full { name: "reports", max_concurrent: 6, active: 6 });
/// assert!(full.rejection().is_some());
/// let slow = RunError::TimedOut { name: "reports", limit: Duration::from_secs(2) };
/// assert!(slow.to_string().contains("did not finish within 2s"));
/// ```
#[non_exhaustive]
pub enum RunError {
    /// Not admitted: every worker was busy and the queue was full
    /// ([`Error::Full`]), or the pool's compartment was closed.
    Rejected(Error),
    /// Admitted, but the result did not arrive within the pool's execution
    /// timeout, counted from admission (queueing included). The closure
    /// keeps running on its worker (a thread cannot be cancelled) and keeps
    /// its seat until it returns; its result is then dropped.
    TimedOut {
        /// The pool's compartment.
        name: &'static str,
        /// The execution timeout.
        limit: Duration,
    },
    /// The closure panicked. The worker thread survives it.
    Panicked {
        /// The pool's compartment.
        name: &'static str,
        /// The panic payload, for [`std::panic::resume_unwind`].
        payload: Box<dyn Any + Send + 'static>,
    },
    /// The pool was dropped before a worker started the job.
    Shutdown {
        /// The pool's compartment.
        name: &'static str,
    },
}

impl RunError {
    /// The admission error, if the job was never admitted.
    pub fn rejection(&self) -> Option<&Error> {
        match self {
            RunError::Rejected(e) => Some(e),
            _ => None,
        }
    }

    /// The pool's compartment.
    pub fn name(&self) -> &'static str {
        match self {
            RunError::Rejected(e) => e.name(),
            RunError::TimedOut { name, .. }
            | RunError::Panicked { name, .. }
            | RunError::Shutdown { name } => name,
        }
    }
}

/// The panic message, when the payload is a string.
fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "a non-string payload"
    }
}

impl fmt::Debug for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Rejected(e) => f.debug_tuple("Rejected").field(e).finish(),
            RunError::TimedOut { name, limit } => f
                .debug_struct("TimedOut")
                .field("name", name)
                .field("limit", limit)
                .finish(),
            RunError::Panicked { name, payload } => f
                .debug_struct("Panicked")
                .field("name", name)
                .field("message", &panic_message(&**payload))
                .finish(),
            RunError::Shutdown { name } => f.debug_struct("Shutdown").field("name", name).finish(),
        }
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Rejected(e) => e.fmt(f),
            RunError::TimedOut { name, limit } => write!(
                f,
                "blocking pool `{name}`: the job did not finish within {limit:?}; \
                 it keeps its worker until it returns, so raise the limit or make the work faster"
            ),
            RunError::Panicked { name, payload } => write!(
                f,
                "blocking pool `{name}`: the job panicked: {}",
                panic_message(&**payload)
            ),
            RunError::Shutdown { name } => write!(
                f,
                "blocking pool `{name}` was dropped before the job started; keep the pool alive \
                 while jobs are queued"
            ),
        }
    }
}

impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RunError::Rejected(e) => Some(e),
            _ => None,
        }
    }
}

/// Why [`Builder::build`](crate::Builder::build) failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum PoolBuildError {
    /// The sizes make no compartment: no workers, or more seats than
    /// [`MAX_CONCURRENT_LIMIT`](crate::MAX_CONCURRENT_LIMIT).
    Config(ConfigError),
    /// The operating system refused a worker thread.
    Spawn(std::io::Error),
}

impl fmt::Display for PoolBuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PoolBuildError::Config(e) => e.fmt(f),
            PoolBuildError::Spawn(e) => write!(f, "could not start a blocking pool worker: {e}"),
        }
    }
}

impl std::error::Error for PoolBuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PoolBuildError::Config(e) => Some(e),
            PoolBuildError::Spawn(e) => Some(e),
        }
    }
}
