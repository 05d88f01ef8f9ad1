//! [`RegisteredPool`]: a thread-pool compartment whose pool can be rebuilt
//! with another number of workers.

use std::sync::{Arc, PoisonError, RwLock};

use bulkhead_core::Name;

use crate::pool::{BuildError, PoolConfig, PoolError, Shutdown, TaskHandle, ThreadPoolBulkhead};
use crate::snapshot::Snapshot;

/// A registered thread-pool compartment: a [`ThreadPoolBulkhead`] behind a
/// swappable pointer, so that
/// [`Registry::reconfigure`](super::Registry::reconfigure) can change its
/// number of workers.
///
/// # Rebuilding without losing work
///
/// A rebuild starts a new pool with the new settings, points every later
/// submission at it, and shuts the old pool down with
/// [`Shutdown::Drain`]: tasks already queued there still run on its
/// workers, and every [`TaskHandle`] resolves as before. While the old
/// pool drains, the two together may run up to old + new capacity; the new
/// limit holds once the old queue is empty.
///
/// ```
/// use bulkhead_std::registry::{DomainConfig, Registry};
///
/// let registry = Registry::local();
/// let pdf = registry.get_or_create_pool("pdf", DomainConfig::new(4).max_workers(2))?;
/// assert_eq!(pdf.execute(|| 6 * 7)?, 42);
/// registry.reconfigure("pdf", DomainConfig::new(6).max_workers(3))?;
/// assert_eq!(pdf.workers(), 3);
/// assert_eq!(pdf.snapshot().max_concurrent, 6);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RegisteredPool {
    name: Name,
    current: RwLock<Arc<ThreadPoolBulkhead>>,
}

impl RegisteredPool {
    pub(crate) fn new(config: PoolConfig) -> Result<Self, BuildError> {
        Ok(Self {
            name: config.name.clone(),
            current: RwLock::new(Arc::new(ThreadPoolBulkhead::new(config)?)),
        })
    }

    fn pool(&self) -> Arc<ThreadPoolBulkhead> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The compartment's name.
    pub fn name(&self) -> &Name {
        &self.name
    }

    /// Submits `task` to the current pool; see
    /// [`ThreadPoolBulkhead::spawn`].
    ///
    /// # Errors
    /// As [`ThreadPoolBulkhead::spawn`].
    pub fn spawn<T, F>(&self, task: F) -> Result<TaskHandle<T>, PoolError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.pool().spawn(task)
    }

    /// Submits `task` and waits for its result; see
    /// [`ThreadPoolBulkhead::execute`].
    ///
    /// # Errors
    /// As [`ThreadPoolBulkhead::execute`].
    pub fn execute<T, F>(&self, task: F) -> Result<T, PoolError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.pool().execute(task)
    }

    /// The current pool's snapshot (an old pool still draining is not
    /// included).
    pub fn snapshot(&self) -> Snapshot {
        self.pool().snapshot()
    }

    /// The current pool's number of workers.
    pub fn workers(&self) -> usize {
        self.pool().workers()
    }

    /// Starts a pool with `config`, makes it current and drains the old one.
    pub(crate) fn rebuild(&self, config: PoolConfig) -> Result<(), BuildError> {
        let fresh = Arc::new(ThreadPoolBulkhead::new(config)?);
        let old = std::mem::replace(
            &mut *self.current.write().unwrap_or_else(PoisonError::into_inner),
            fresh,
        );
        old.shutdown(Shutdown::Drain);
        Ok(())
    }

    /// Live seats or queued tasks in the current pool.
    pub(crate) fn is_busy(&self) -> bool {
        self.pool().is_busy()
    }
}

impl std::fmt::Debug for RegisteredPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredPool")
            .field("name", &self.name)
            .field("snapshot", &self.snapshot())
            .finish()
    }
}
