//! [`PoolConfig`] and [`Shutdown`].

use std::time::Duration;

/// The settings of a [`ThreadPoolBulkhead`](crate::ThreadPoolBulkhead).
///
/// ```
/// use std::time::Duration;
/// use bulkhead_std::PoolConfig;
///
/// const REPORTS: PoolConfig = PoolConfig::new("reports", 4)
///     .queue(16)
///     .timeout(Duration::from_secs(30));
/// assert_eq!(REPORTS.workers + REPORTS.queue, 20); // max_concurrent
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolConfig {
    /// The pool's name; workers are called `"{name}-{index}"`.
    pub name: &'static str,
    /// Worker threads: how many tasks run at once. At least 1.
    pub workers: usize,
    /// Queue seats: how many admitted tasks may wait for a worker.
    pub queue: usize,
    /// Execution timeout, from submission to result; `None` for none.
    pub timeout: Option<Duration>,
}

impl PoolConfig {
    /// `workers` threads, no queue, no execution timeout.
    pub const fn new(name: &'static str, workers: usize) -> Self {
        Self {
            name,
            workers,
            queue: 0,
            timeout: None,
        }
    }

    /// Lets up to `queue` admitted tasks wait for a worker.
    #[must_use]
    pub const fn queue(mut self, queue: usize) -> Self {
        self.queue = queue;
        self
    }

    /// Resolves a task's handle to
    /// [`PoolError::Timeout`](crate::PoolError::Timeout) if it has not
    /// finished `timeout` after its submission.
    #[must_use]
    pub const fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
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
