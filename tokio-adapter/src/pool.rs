//! The former `BlockingPool` names, kept for one release: the workspace
//! has one thread pool, bulkhead-std's [`ThreadPoolBulkhead`], which this
//! crate re-exports. Its [`TaskHandle`] is a `Future` that needs no runtime
//! of its own, so tokio code awaits it directly.

use bulkhead_std::{BuildError, PoolConfig, PoolError, TaskHandle, ThreadPoolBulkhead};

/// Deprecated: the one pool is [`ThreadPoolBulkhead`].
#[deprecated(
    since = "0.1.0",
    note = "use `ThreadPoolBulkhead` (one pool for every crate); `spawn` is `submit`, `close` is `shutdown(Shutdown::Drain)`"
)]
pub type BlockingPool = ThreadPoolBulkhead;

/// Deprecated: the one builder is [`PoolConfig`] (from
/// [`ThreadPoolBulkhead::builder`]).
#[deprecated(
    since = "0.1.0",
    note = "use `PoolConfig`, from `ThreadPoolBulkhead::builder`"
)]
pub type Builder = PoolConfig;

/// Deprecated: the one handle is [`TaskHandle`].
#[deprecated(since = "0.1.0", note = "use `TaskHandle`, joinable and a `Future`")]
pub type Job<R> = TaskHandle<R>;

/// Deprecated: the one error is [`PoolError`] (`TimedOut` is `Timeout`,
/// `Shutdown` is `Cancelled`, `Panicked` carries the message).
#[deprecated(since = "0.1.0", note = "use `PoolError`, which is `Send + Sync`")]
pub type RunError = PoolError;

/// Deprecated: the one build error is [`BuildError`].
#[deprecated(since = "0.1.0", note = "use `BuildError`")]
pub type PoolBuildError = BuildError;
