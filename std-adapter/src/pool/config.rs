//! [`PoolConfig`], the one builder of a thread pool, and [`Shutdown`].

use std::time::Duration;

use bulkhead_core::Name;

use super::{BuildError, ThreadPoolBulkhead};

/// The settings of a [`ThreadPoolBulkhead`], and its builder: start from
/// [`ThreadPoolBulkhead::builder`] (or [`PoolConfig::new`] in a `const`),
/// set what differs from the defaults, then [`build`](Self::build).
///
/// Every setter is `const`, so a pool's settings can be a constant.
///
/// ```
/// use std::time::Duration;
/// use bulkhead_std::{PoolConfig, ThreadPoolBulkhead};
///
/// const REPORTS: PoolConfig = PoolConfig::new("reports", 4)
///     .queue_capacity(16)
///     .execution_timeout(Duration::from_secs(30));
/// assert_eq!(REPORTS.max_workers + REPORTS.queue_capacity, 20); // max_concurrent
///
/// let pdf = ThreadPoolBulkhead::builder("pdf").max_workers(2).queue_capacity(8).build()?;
/// assert_eq!(pdf.workers(), 2);
/// # Ok::<(), bulkhead_std::BuildError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a pool's settings do nothing until `build` is called"]
pub struct PoolConfig {
    /// The pool's name; workers are called `"{name}-{index}"`.
    pub name: Name,
    /// Worker threads: how many tasks run at once. At least 1.
    pub max_workers: usize,
    /// Queue seats: how many admitted tasks may wait for a worker.
    pub queue_capacity: usize,
    /// Execution timeout, from submission to result; `None` for none.
    pub execution_timeout: Option<Duration>,
    /// The stack size of each worker thread; `None` for std's default.
    pub stack_size: Option<usize>,
}

impl PoolConfig {
    /// `max_workers` threads, no queue, no execution timeout.
    pub const fn new(name: &'static str, max_workers: usize) -> Self {
        Self::named(Name::from_static(name), max_workers)
    }

    /// As [`new`](Self::new), for a name made at run time (a shared
    /// [`Name`]).
    pub const fn named(name: Name, max_workers: usize) -> Self {
        Self {
            name,
            max_workers,
            queue_capacity: 0,
            execution_timeout: None,
            stack_size: None,
        }
    }

    /// The number of worker threads (at least 1).
    pub const fn max_workers(mut self, max_workers: usize) -> Self {
        self.max_workers = max_workers;
        self
    }

    /// Lets up to `queue_capacity` admitted tasks wait for a worker
    /// (default 0: a task is admitted only when a worker is free).
    pub const fn queue_capacity(mut self, queue_capacity: usize) -> Self {
        self.queue_capacity = queue_capacity;
        self
    }

    /// Resolves a task's handle to
    /// [`PoolError::Timeout`](crate::PoolError::Timeout) if it has not
    /// finished `limit` after its submission. A task still queued then is
    /// skipped: no worker runs it, and its closure is dropped unrun.
    pub const fn execution_timeout(mut self, limit: Duration) -> Self {
        self.execution_timeout = Some(limit);
        self
    }

    /// The stack size of each worker thread, in bytes.
    pub const fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// Starts the pool: [`ThreadPoolBulkhead::new`].
    ///
    /// # Errors
    /// As [`ThreadPoolBulkhead::new`].
    pub fn build(self) -> Result<ThreadPoolBulkhead, BuildError> {
        ThreadPoolBulkhead::new(self)
    }
}

/// How [`ThreadPoolBulkhead::shutdown`](crate::ThreadPoolBulkhead::shutdown)
/// treats queued tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shutdown {
    /// Run every queued task, then stop.
    Drain,
    /// Drop queued tasks unrun; their handles resolve to
    /// [`PoolError::Cancelled`](crate::PoolError::Cancelled).
    Cancel,
}
