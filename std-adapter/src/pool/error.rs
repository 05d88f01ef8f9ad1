//! Why a thread-pool task produced no result, and why a pool could not be
//! built.

use std::fmt;
use std::io;
use std::time::Duration;

use bulkhead_core::{ConfigError, Error, Name};

/// Why a [`ThreadPoolBulkhead`](crate::ThreadPoolBulkhead) task produced no
/// result.
///
/// `Send + Sync + 'static`, so `?` turns it into an `anyhow::Error` or a
/// `Box<dyn Error + Send + Sync>`. A task's panic is therefore not carried
/// as its payload (`Box<dyn Any + Send>` is not `Sync`) but as its message,
/// in [`PoolError::Panicked`].
///
/// Map [`Rejected`](PoolError::Rejected) to "busy, retry later" (an HTTP
/// 503), [`Timeout`](PoolError::Timeout) to a gateway timeout.
///
/// ```
/// # use std::time::Duration;
/// use bulkhead_std::{Error, PoolError};
///
/// let full = PoolError::Rejected(Error::Full { name: "reports".into(), max_concurrent: 6, active: 6 });
/// assert!(full.rejection().is_some());
/// let slow = PoolError::Timeout { name: "reports".into(), timeout: Duration::from_secs(2) };
/// assert!(slow.to_string().contains("within the execution timeout of 2s"));
/// let boxed: Box<dyn std::error::Error + Send + Sync> = slow.into(); // `?` works too
/// # let _ = boxed;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PoolError {
    /// Admission failed at submission: [`Error::Full`] (every worker busy
    /// and the queue full) or [`Error::Closed`] (the pool was shut down).
    /// The task never ran.
    Rejected(Error),
    /// The task did not finish within the pool's execution timeout,
    /// counted from its submission. A task still queued then is skipped
    /// (its closure is dropped unrun and its seat given back). A running
    /// task cannot be stopped (a thread cannot be killed): it keeps its
    /// worker and its seat until it returns, and its result is dropped.
    Timeout {
        /// The pool.
        name: Name,
        /// The pool's execution timeout.
        timeout: Duration,
    },
    /// The task panicked. The worker survives it and the seat was given
    /// back. The payload is kept as its message, so that the error is
    /// `Sync`.
    Panicked {
        /// The pool.
        name: Name,
        /// The panic message (`"a non-string payload"` if the payload was
        /// neither a `&str` nor a `String`).
        message: String,
    },
    /// The task was queued but never started: the pool was shut down with
    /// [`Shutdown::Cancel`](crate::Shutdown::Cancel), the caller cancelled
    /// it ([`TaskHandle::cancel`](crate::TaskHandle::cancel)), or its
    /// workers were lost.
    Cancelled {
        /// The pool.
        name: Name,
    },
}

impl PoolError {
    /// The pool that gave this error.
    pub fn name(&self) -> &Name {
        match self {
            PoolError::Rejected(e) => e.name(),
            PoolError::Timeout { name, .. }
            | PoolError::Panicked { name, .. }
            | PoolError::Cancelled { name } => name,
        }
    }

    /// The admission error, if the task was never admitted.
    pub const fn rejection(&self) -> Option<&Error> {
        match self {
            PoolError::Rejected(e) => Some(e),
            _ => None,
        }
    }
}

/// The message of a panic payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a non-string payload".to_owned()
    }
}

/// An I/O error with the kind that fits: a rejection as core's conversion
/// (`WouldBlock`, `ResourceBusy`, `NotConnected`), `Timeout` as
/// `TimedOut`, `Panicked` as `Other`, `Cancelled` as `Interrupted`. The
/// `PoolError` stays inside (`get_ref()` downcasts to it).
///
/// ```
/// use std::io::ErrorKind;
/// use bulkhead_std::PoolError;
///
/// let io: std::io::Error = PoolError::Cancelled { name: "pdf".into() }.into();
/// assert_eq!(io.kind(), ErrorKind::Interrupted);
/// ```
impl From<PoolError> for io::Error {
    fn from(error: PoolError) -> Self {
        let kind = match &error {
            PoolError::Rejected(e) => io::Error::from(e.clone()).kind(),
            PoolError::Timeout { .. } => io::ErrorKind::TimedOut,
            PoolError::Panicked { .. } => io::ErrorKind::Other,
            PoolError::Cancelled { .. } => io::ErrorKind::Interrupted,
        };
        io::Error::new(kind, error)
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
            PoolError::Rejected(Error::Closed { name }) => write!(
                f,
                "thread pool `{name}` is shut down and accepts no more tasks; build a new pool"
            ),
            PoolError::Rejected(e) => write!(
                f,
                "thread pool `{}` refused the task: every worker is busy and the queue is \
                 full, and a submission never waits for room; retry later, or raise \
                 max_workers or queue_capacity",
                e.name()
            ),
            PoolError::Timeout { name, timeout } => write!(
                f,
                "thread pool `{name}`: the task did not finish within the execution timeout of \
                 {timeout:?}; it keeps its worker until it returns and its result is dropped; \
                 make the work faster, or raise the timeout"
            ),
            PoolError::Panicked { name, message } => write!(
                f,
                "thread pool `{name}`: the task panicked: {message}; the worker survived and \
                 the seat was given back"
            ),
            PoolError::Cancelled { name } => write!(
                f,
                "thread pool `{name}`: the task was cancelled before it started, so it never ran \
                 (a Shutdown::Cancel, a cancelled handle or a dropped `run` future); shut down \
                 with Shutdown::Drain to run queued tasks, or resubmit"
            ),
        }
    }
}

/// No source: a rejection is stated in the pool's own terms (the core
/// [`Error`]'s advice, a wait budget, does not apply to a submission), and
/// the core error is [`rejection`](PoolError::rejection)'s.
impl std::error::Error for PoolError {}

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
        name: Name,
    },
    /// The operating system refused to start a worker thread.
    Spawn {
        /// The pool.
        name: Name,
        /// The error from `std::thread::Builder::spawn`.
        source: io::Error,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Config(e) => write!(f, "thread pool: {e}"),
            // The OS's reason is the source.
            BuildError::ZeroWorkers { name } => write!(
                f,
                "thread pool `{name}`: workers = 0 would never run a task; give it at least 1 worker"
            ),
            BuildError::Spawn { name, .. } => write!(
                f,
                "thread pool `{name}`: could not start a worker thread; lower the worker \
                 count or raise the process's thread limit"
            ),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // Shown in the message.
            BuildError::Config(e) => std::error::Error::source(e),
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
