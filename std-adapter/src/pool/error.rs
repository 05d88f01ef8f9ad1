//! Why a thread-pool task produced no result, and why a pool could not be
//! built.

use std::fmt;
use std::io;
use std::time::Duration;

use bulkhead_core::{ConfigError, Error};

/// Why a [`ThreadPoolBulkhead`](crate::ThreadPoolBulkhead) task produced no
/// result.
///
/// A panic inside the task is not an error value: it is resumed on the
/// thread that joins or awaits the [`TaskHandle`](crate::TaskHandle),
/// unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PoolError {
    /// Admission failed at submission: [`Error::Full`] (every worker busy
    /// and the queue full) or [`Error::Closed`] (the pool was shut down).
    /// The task never ran.
    Rejected(Error),
    /// The task did not finish within the pool's execution timeout,
    /// counted from its submission. The task may still be running: a
    /// thread cannot be killed, so it keeps its worker and its seat until
    /// it returns, and its result is then dropped.
    Timeout {
        /// The pool.
        name: &'static str,
        /// The pool's execution timeout.
        timeout: Duration,
    },
    /// The task was queued but never started: the pool was shut down with
    /// [`Shutdown::Cancel`](crate::Shutdown::Cancel), or its workers were
    /// lost.
    Cancelled {
        /// The pool.
        name: &'static str,
    },
}

impl PoolError {
    /// The pool that gave this error.
    pub const fn name(&self) -> &'static str {
        match self {
            PoolError::Rejected(e) => e.name(),
            PoolError::Timeout { name, .. } | PoolError::Cancelled { name } => name,
        }
    }
}

impl From<Error> for PoolError {
    fn from(e: Error) -> Self {
        PoolError::Rejected(e)
    }
}

impl fmt::Display for PoolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PoolError::Rejected(e) => write!(f, "thread pool: {e}"),
            PoolError::Timeout { name, timeout } => write!(
                f,
                "thread pool `{name}`: the task did not finish within the execution timeout of \
                 {timeout:?}; it keeps its worker until it returns and its result is dropped; \
                 make the work faster, or raise the timeout"
            ),
            PoolError::Cancelled { name } => write!(
                f,
                "thread pool `{name}` was shut down before the task started, so it never ran; \
                 shut down with Shutdown::Drain to run queued tasks, or resubmit elsewhere"
            ),
        }
    }
}

impl std::error::Error for PoolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PoolError::Rejected(e) => Some(e),
            _ => None,
        }
    }
}

/// Why a [`ThreadPoolBulkhead`](crate::ThreadPoolBulkhead) could not be
/// built.
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// `workers + queue` is not a valid compartment size.
    Config(ConfigError),
    /// A pool needs at least one worker thread.
    ZeroWorkers {
        /// The pool.
        name: &'static str,
    },
    /// The operating system refused to start a worker thread.
    Spawn {
        /// The pool.
        name: &'static str,
        /// The error from `std::thread::Builder::spawn`.
        source: io::Error,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Config(e) => write!(f, "thread pool: {e}"),
            BuildError::ZeroWorkers { name } => write!(
                f,
                "thread pool `{name}`: workers = 0 would never run a task; give it at least 1 worker"
            ),
            BuildError::Spawn { name, source } => write!(
                f,
                "thread pool `{name}`: could not start a worker thread ({source}); \
                 lower the worker count or raise the process's thread limit"
            ),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::Config(e) => Some(e),
            BuildError::Spawn { source, .. } => Some(source),
            BuildError::ZeroWorkers { .. } => None,
        }
    }
}

impl From<ConfigError> for BuildError {
    fn from(e: ConfigError) -> Self {
        BuildError::Config(e)
    }
}
