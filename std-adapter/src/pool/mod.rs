//! [`ThreadPoolBulkhead`]: a compartment that runs work on its own threads.

mod config;
mod deadline;
mod error;
mod task;

use std::collections::VecDeque;
use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::Instant;

use bulkhead_core::{Config, Error, MaxWait};

use crate::snapshot::{Inspect, Kind, Snapshot};
use crate::{Bulkhead, StdLock};

pub use config::{PoolConfig, Shutdown};
use deadline::Deadlines;
pub use error::{BuildError, PoolError};
pub use task::TaskHandle;
use task::{Completer, Expire, PoolSeat, Slot};

type Job = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    closing: bool,
}

struct Inner {
    /// Admission: `workers + queue` seats. A task holds one from
    /// submission until it returns, so queued and running tasks share one
    /// count with the same semantics as a semaphore compartment. Shared
    /// with every task's seat, which keeps it alive.
    compartment: Arc<Bulkhead>,
    queue: Mutex<Queue>,
    work: Condvar,
    /// Tasks admitted that no worker has started: a copy of the queue's
    /// length for lock-free snapshots.
    queued: AtomicUsize,
    workers: usize,
    queue_size: usize,
    /// Workers still running.
    live: Mutex<usize>,
    terminated: Condvar,
    deadlines: Option<Arc<Deadlines>>,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A compartment with its own named worker threads and a bounded queue:
/// the thread-pool bulkhead, the one pool of every crate (bulkhead-tokio
/// re-exports it).
///
/// Use it for blocking work (a synchronous driver, file or CPU-heavy
/// work) that must not share a thread pool with the rest of the program:
/// tokio's `spawn_blocking` pool is process-wide, so one slow dependency
/// can fill it and stall every other blocking call.
///
/// - **Settings.** One builder: [`builder`](Self::builder) (or a `const`
///   [`PoolConfig`]) with `max_workers`, `queue_capacity`,
///   `execution_timeout` and `stack_size`, then `build`.
/// - **Capacity.** `max_concurrent = max_workers + queue_capacity`. A task
///   holds a seat from submission until it returns; a submission beyond
///   that is rejected at once with [`Error::Full`] (wrapped in
///   [`PoolError::Rejected`]). Submissions never wait: a bounded queue
///   already absorbs bursts.
/// - **Results.** [`spawn`](Self::spawn) returns a [`TaskHandle`]:
///   [`join`](TaskHandle::join) it from a thread or `.await` it on any
///   runtime (`pool.spawn(f)?.await`); [`execute`](Self::execute) is
///   spawn-then-join for threads. One error
///   type, [`PoolError`], `Send + Sync`, so `?` converts it into `anyhow`
///   or a boxed error.
/// - **Execution timeout.** With [`PoolConfig::execution_timeout`], a task
///   that has not finished that long after its submission resolves to
///   [`PoolError::Timeout`], distinct from an admission rejection. **A
///   task still queued at its timeout is skipped**: no worker runs it, its
///   closure is dropped unrun and its seat given back. A running task
///   cannot be killed: it keeps its worker and its seat until it returns,
///   and its result is dropped. Make long work check a flag of its own if
///   it must stop early.
/// - **Panics.** A panic inside a task is caught on the worker (which
///   lives on), its seat is given back, and the handle resolves to
///   [`PoolError::Panicked`] with the panic's message.
/// - **State.** [`snapshot`](Self::snapshot) reports [`Kind::ThreadPool`],
///   `queue_size`, and as `waiting` the admitted tasks no worker has
///   started yet.
/// - **No weights.** A task takes one seat, never several: it runs on
///   one worker, so a weighted task would hold seats that no other task
///   could use while the workers they stand for sat idle. To give heavy
///   work more room, give it a pool of its own (fewer tasks per worker),
///   or take a weighted seat of a semaphore compartment inside the task
///   (`acquire_many_blocking`). Likewise its queue is its own and served
///   oldest first: submissions never wait in the compartment's line, so
///   a queue order does not apply.
/// - **Shutdown.** [`shutdown`](Self::shutdown) with [`Shutdown::Drain`]
///   runs the queued tasks; with [`Shutdown::Cancel`] they resolve to
///   [`PoolError::Cancelled`]. Dropping the pool drains without blocking
///   the dropping thread; no handle is ever left hanging.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use bulkhead_std::{Error, PoolError, ThreadPoolBulkhead};
///
/// let pool = ThreadPoolBulkhead::builder("pdf")
///     .max_workers(1)
///     .queue_capacity(1)
///     .execution_timeout(Duration::from_secs(30))
///     .build()?;
/// let (tx, rx) = std::sync::mpsc::channel::<()>();
/// let running = pool.spawn(move || rx.recv().ok())?; // takes the worker
/// let queued = pool.spawn(|| "rendered")?; // takes the queue seat
/// let full = pool.spawn(|| "no room").unwrap_err();
/// assert!(matches!(full, PoolError::Rejected(Error::Full { max_concurrent: 2, .. })));
/// tx.send(()).unwrap();
/// assert_eq!(running.join(), Ok(Some(())));
/// assert_eq!(queued.join(), Ok("rendered"));
/// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
/// ```
pub struct ThreadPoolBulkhead {
    inner: Arc<Inner>,
}

impl ThreadPoolBulkhead {
    /// Starts a pool: `config.workers` threads named `"{name}-{index}"`,
    /// plus a `"{name}-deadline"` thread if an execution timeout is set.
    ///
    /// # Errors
    /// [`BuildError::ZeroWorkers`], [`BuildError::Config`] (the total
    /// capacity is too large), [`BuildError::Spawn`].
    pub fn new(config: PoolConfig) -> Result<Self, BuildError> {
        let PoolConfig {
            name,
            max_workers: workers,
            queue_capacity: queue,
            execution_timeout: timeout,
            stack_size,
        } = config;
        if workers == 0 {
            return Err(BuildError::ZeroWorkers { name });
        }
        let seats = workers.saturating_add(queue);
        let compartment =
            Bulkhead::with_name(name.clone(), Config::new("", seats), StdLock::new())?;
        let deadlines = timeout.map(|t| Arc::new(Deadlines::new(t)));
        let pool = Self {
            inner: Arc::new(Inner {
                compartment: Arc::new(compartment),
                queue: Mutex::default(),
                work: Condvar::new(),
                queued: AtomicUsize::new(0),
                workers,
                queue_size: queue,
                live: Mutex::new(0),
                terminated: Condvar::new(),
                deadlines,
            }),
        };
        let spawn_error = |source| BuildError::Spawn {
            name: name.clone(),
            source,
        };
        if let Some(deadlines) = &pool.inner.deadlines {
            deadline::spawn(&name, deadlines).map_err(spawn_error)?;
        }
        for index in 0..workers {
            let inner = pool.inner.clone();
            *pool
                .inner
                .live
                .lock()
                .unwrap_or_else(PoisonError::into_inner) += 1;
            let mut builder = thread::Builder::new().name(format!("{name}-{index}"));
            if let Some(bytes) = stack_size {
                builder = builder.stack_size(bytes);
            }
            let spawned = builder.spawn(move || work(&inner));
            if let Err(source) = spawned {
                // The closure was dropped unrun: undo its count. Dropping
                // `pool` then shuts down the workers that did start.
                pool.worker_exited();
                return Err(spawn_error(source));
            }
        }
        Ok(pool)
    }

    /// Settings for a pool called `name`, to finish with
    /// [`PoolConfig::build`]: one worker, no queue, no execution timeout.
    pub const fn builder(name: &'static str) -> PoolConfig {
        PoolConfig::new(name, 1)
    }

    /// The pool's name.
    pub fn name(&self) -> &str {
        self.inner.compartment.name()
    }

    /// Submits `task` without waiting: it runs on a worker as soon as one
    /// is free. The [`TaskHandle`] is joined from a thread
    /// ([`join`](TaskHandle::join)) or awaited from async code on any
    /// runtime (it is a `Future`): `pool.spawn(f)?.await`.
    ///
    /// ```
    /// use bulkhead_std::ThreadPoolBulkhead;
    ///
    /// async fn report(pool: &ThreadPoolBulkhead) -> anyhow_like::Result<Vec<u8>> {
    ///     Ok(pool.spawn(|| b"report".to_vec())?.await?) // `?` into any boxed error
    /// }
    /// # mod anyhow_like { pub type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>; }
    /// let pool = ThreadPoolBulkhead::builder("reports").build().unwrap();
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// assert_eq!(rt.block_on(report(&pool)).unwrap(), b"report");
    /// ```
    ///
    /// # Errors
    /// [`PoolError::Rejected`] with [`Error::Full`] when `workers + queue`
    /// tasks are already admitted, or with [`Error::Closed`] after
    /// [`shutdown`](Self::shutdown). The task is then dropped unrun.
    pub fn spawn<T, F>(&self, task: F) -> Result<TaskHandle<T>, PoolError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let inner = &self.inner;
        let seat = inner.compartment.try_acquire()?;
        let seat = PoolSeat::from_seat(seat, Arc::clone(&inner.compartment));
        let slot = Arc::new(Slot::new(self.inner.compartment.name_handle(), seat));
        let completer = Completer::new(slot.clone());
        let job: Job = Box::new(move || {
            let Some(seat) = completer.start() else {
                // Timed out or cancelled while queued: nobody will read a
                // result, and its seat is already back. Skip it; the
                // closure drops here, unrun.
                return;
            };
            let result = panic::catch_unwind(AssertUnwindSafe(task));
            // Seat first, so a caller woken by the result sees it free.
            drop(seat);
            completer.complete(result);
        });
        let mut queue = inner.lock();
        if queue.closing {
            drop(queue);
            drop(job);
            return Err(PoolError::Rejected(Error::Closed {
                name: self.inner.compartment.name_handle(),
            }));
        }
        queue.jobs.push_back(job);
        inner.queued.fetch_add(1, Ordering::Relaxed);
        drop(queue);
        if let Some(deadlines) = &inner.deadlines {
            let weak = Arc::downgrade(&slot);
            deadlines.watch(weak as std::sync::Weak<dyn Expire>);
        }
        inner.work.notify_one();
        Ok(TaskHandle::new(slot))
    }

    /// Submits `task` and blocks this thread until its verdict:
    /// [`spawn`](Self::spawn) then [`TaskHandle::join`].
    ///
    /// # Errors
    /// As [`spawn`](Self::spawn) and [`TaskHandle::join`].
    ///
    /// A task's panic is [`PoolError::Panicked`], not resumed here.
    pub fn execute<T, F>(&self, task: F) -> Result<T, PoolError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.spawn(task)?.join()
    }

    /// Stops admitting tasks (later submissions get [`Error::Closed`]) and
    /// lets the workers exit once the queue is empty. Returns at once;
    /// see [`await_termination`](Self::await_termination).
    ///
    /// - [`Shutdown::Drain`]: queued tasks still run.
    /// - [`Shutdown::Cancel`]: queued tasks are dropped unrun and their
    ///   handles resolve to [`PoolError::Cancelled`] before this returns.
    ///
    /// Running tasks always finish. Idempotent; a `Cancel` after a `Drain`
    /// cancels what is still queued.
    pub fn shutdown(&self, mode: Shutdown) {
        let inner = &self.inner;
        inner.compartment.close();
        let mut queue = inner.lock();
        queue.closing = true;
        let cancelled = match mode {
            Shutdown::Drain => VecDeque::new(),
            Shutdown::Cancel => {
                let jobs = std::mem::take(&mut queue.jobs);
                inner.queued.fetch_sub(jobs.len(), Ordering::Relaxed);
                jobs
            }
        };
        drop(queue);
        inner.work.notify_all();
        // Unlocked: each job's drop gives its seat back and settles its
        // handle as cancelled.
        drop(cancelled);
    }

    /// Waits at most `max_wait` (a [`MaxWait`], or a `Duration`;
    /// `MaxWait::FailFast` only checks) for every worker to
    /// exit after [`shutdown`](Self::shutdown). Returns whether they all
    /// did. Overrunning tasks keep their worker, so give a limit when
    /// tasks may hang.
    pub fn await_termination(&self, max_wait: impl Into<MaxWait>) -> bool {
        let max_wait = max_wait.into();
        let deadline = match max_wait.budget() {
            Some(budget) => Instant::now().checked_add(budget),
            None if max_wait.is_unbounded() => None,
            // Fail fast: a deadline that has passed checks once.
            None => Some(Instant::now()),
        };
        let mut live = self
            .inner
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        while *live > 0 {
            live = match deadline {
                None => self
                    .inner
                    .terminated
                    .wait(live)
                    .unwrap_or_else(PoisonError::into_inner),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return false;
                    }
                    self.inner
                        .terminated
                        .wait_timeout(live, deadline - now)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
        }
        true
    }

    /// A snapshot: kind [`Kind::ThreadPool`], `max_concurrent` = workers +
    /// queue, `active` = tasks queued or running, `waiting` = tasks queued
    /// and not started, `timed_out` = tasks that overran the execution
    /// timeout.
    pub fn snapshot(&self) -> Snapshot {
        let inner = &self.inner;
        let mut s = inner.compartment.snapshot();
        s.kind = Kind::ThreadPool;
        s.waiting = inner.queued.load(Ordering::Relaxed);
        s.queue_size = inner.queue_size;
        s.timed_out = inner.deadlines.as_ref().map_or(0, |d| d.timed_out());
        s
    }

    /// Tasks queued or running, from the compartment's seat word and the
    /// queue's count alone (a [`snapshot`](Self::snapshot) also sums the
    /// compartment's counts). For the registry's eviction rule.
    #[cfg(feature = "registry")]
    pub(crate) fn is_busy(&self) -> bool {
        self.inner.compartment.active() > 0 || self.inner.queued.load(Ordering::Relaxed) > 0
    }

    /// The number of worker threads.
    pub fn workers(&self) -> usize {
        self.inner.workers
    }

    fn worker_exited(&self) {
        self.inner.worker_exited();
    }
}

impl Inner {
    fn worker_exited(&self) {
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        *live -= 1;
        if *live == 0 {
            if let Some(deadlines) = &self.deadlines {
                deadlines.stop();
            }
            self.terminated.notify_all();
        }
    }
}

/// A worker's body: run jobs until the queue is closed and empty.
fn work(inner: &Inner) {
    /// Counts the worker out even if something unwinds past the loop.
    struct Exit<'a>(&'a Inner);
    impl Drop for Exit<'_> {
        fn drop(&mut self) {
            self.0.worker_exited();
        }
    }
    let _exit = Exit(inner);
    loop {
        let mut queue = inner.lock();
        let job = loop {
            if let Some(job) = queue.jobs.pop_front() {
                inner.queued.fetch_sub(1, Ordering::Relaxed);
                break job;
            }
            if queue.closing {
                return;
            }
            queue = inner
                .work
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
        };
        drop(queue);
        // The task's own panic is caught inside the job; this only guards
        // the worker against a panicking drop of a discarded result.
        let _ = panic::catch_unwind(AssertUnwindSafe(job));
    }
}

impl Drop for ThreadPoolBulkhead {
    /// Drains: queued tasks still run and every handle resolves. Does not
    /// wait for the workers.
    fn drop(&mut self) {
        self.shutdown(Shutdown::Drain);
    }
}

impl fmt::Debug for ThreadPoolBulkhead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPoolBulkhead")
            .field("workers", &self.inner.workers)
            .field("snapshot", &self.snapshot())
            .finish()
    }
}
