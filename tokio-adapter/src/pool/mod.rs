//! [`BlockingPool`], a compartment with its own worker threads.

mod error;
mod job;

use std::collections::VecDeque;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::Duration;

use bulkhead_core::{Config, Error, OwnedSeat, State};
use bulkhead_std::Bulkhead;
use tokio::sync::oneshot;

pub use error::{PoolBuildError, RunError};
pub use job::Job;

/// A compartment that runs blocking closures on its own named threads.
///
/// tokio's `spawn_blocking` pool is shared by the whole process (512
/// threads by default): one slow blocking dependency can fill it and stall
/// file I/O, DNS and every other blocking call. A `BlockingPool` gives one
/// dependency `max_workers` threads of its own and a queue of
/// `queue_capacity` jobs, and rejects the rest at once.
///
/// Admission is a compartment of `max_workers + queue_capacity` seats. A
/// job takes a seat when it is submitted and gives it back when its
/// closure returns, so the compartment's [`State`] counts running and
/// queued jobs together, and a full pool gives [`Error::Full`] at once
/// (a bounded queue already absorbs bursts, so the pool never waits).
///
/// # Cancel safety
/// [`run`](Self::run) and [`Job`] are cancel safe: dropping them before a
/// worker starts the job cancels it and frees its seat.
///
/// # Shutdown
/// Dropping the last clone of the pool stops it: queued jobs are dropped
/// (their [`Job`]s resolve to [`RunError::Shutdown`]), running jobs finish
/// on their threads and deliver their values, then the threads exit. The
/// drop never waits for them, so it is safe anywhere, also in async code.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use bulkhead_tokio::{BlockingPool, RunError};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let reports = BlockingPool::builder("reports")
///     .max_workers(4)
///     .queue_capacity(16)
///     .execution_timeout(Duration::from_secs(30))
///     .build()?;
///
/// let pdf = reports.run(|| render_pdf(7)).await?;
/// assert_eq!(pdf, b"report 7");
/// # fn render_pdf(id: u32) -> Vec<u8> { format!("report {id}").into_bytes() }
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct BlockingPool {
    inner: Arc<Inner>,
}

/// Lives as long as some clone of the pool; its drop stops the workers.
#[derive(Debug)]
struct Inner {
    shared: Arc<Shared>,
    bulkhead: Arc<Bulkhead>,
    max_workers: usize,
    queue_capacity: usize,
    execution_timeout: Option<Duration>,
}

/// What the workers share with the pool. Holding it does not keep the pool
/// alive.
#[derive(Debug, Default)]
struct Shared {
    queue: Mutex<Queue>,
    available: Condvar,
    running: AtomicUsize,
}

#[derive(Default)]
struct Queue {
    tasks: VecDeque<Task>,
    shut_down: bool,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("queued", &self.tasks.len())
            .field("shut_down", &self.shut_down)
            .finish()
    }
}

/// A job as the workers see it: run the closure, free the seat, send the
/// value. Dropped unrun, it frees the seat and drops the sender.
type Task = Box<dyn FnOnce() + Send + 'static>;

/// Settings for a [`BlockingPool`]. Made by [`BlockingPool::builder`].
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct Builder {
    name: &'static str,
    max_workers: usize,
    queue_capacity: usize,
    execution_timeout: Option<Duration>,
    stack_size: Option<usize>,
}

/// A snapshot of a [`BlockingPool`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoolState {
    /// The pool's compartment: `max_concurrent` is workers plus queue,
    /// `active` counts running and queued jobs.
    pub compartment: State,
    /// The number of worker threads.
    pub max_workers: usize,
    /// How many admitted jobs may wait for a worker.
    pub queue_capacity: usize,
    /// Jobs admitted that no worker has started yet.
    pub queued: usize,
    /// Jobs running on a worker now.
    pub running: usize,
}

impl Builder {
    /// The number of worker threads (default 1). At least 1.
    pub fn max_workers(mut self, max_workers: usize) -> Self {
        self.max_workers = max_workers;
        self
    }

    /// How many admitted jobs may wait for a free worker (default 0: a job
    /// is admitted only when a worker is free).
    pub fn queue_capacity(mut self, queue_capacity: usize) -> Self {
        self.queue_capacity = queue_capacity;
        self
    }

    /// How long a caller awaits a job's value, counted from admission,
    /// before it gets [`RunError::TimedOut`] (default: no limit).
    pub fn execution_timeout(mut self, limit: Duration) -> Self {
        self.execution_timeout = Some(limit);
        self
    }

    /// The stack size of each worker thread (default: std's).
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// Starts the workers, named `{name}-0`, `{name}-1`, ...
    ///
    /// # Errors
    /// [`PoolBuildError::Config`] for 0 workers or too many seats,
    /// [`PoolBuildError::Spawn`] if a thread cannot be started (the threads
    /// already started then exit).
    pub fn build(self) -> Result<BlockingPool, PoolBuildError> {
        if self.max_workers == 0 {
            return Err(PoolBuildError::Config(
                bulkhead_core::ConfigError::ZeroCapacity { name: self.name },
            ));
        }
        let seats = self.max_workers.saturating_add(self.queue_capacity);
        let bulkhead =
            Bulkhead::from_config(Config::new(self.name, seats)).map_err(PoolBuildError::Config)?;
        let inner = Inner {
            shared: Arc::default(),
            bulkhead: Arc::new(bulkhead),
            max_workers: self.max_workers,
            queue_capacity: self.queue_capacity,
            execution_timeout: self.execution_timeout,
        };
        for i in 0..self.max_workers {
            let mut thread = thread::Builder::new().name(format!("{}-{i}", self.name));
            if let Some(bytes) = self.stack_size {
                thread = thread.stack_size(bytes);
            }
            let shared = Arc::clone(&inner.shared);
            // On error `inner` drops here and stops the workers started so far.
            thread
                .spawn(move || work(&shared))
                .map_err(PoolBuildError::Spawn)?;
        }
        Ok(BlockingPool {
            inner: Arc::new(inner),
        })
    }
}

impl BlockingPool {
    /// Settings for a pool called `name`: one worker, no queue, no
    /// execution timeout.
    pub fn builder(name: &'static str) -> Builder {
        Builder {
            name,
            max_workers: 1,
            queue_capacity: 0,
            execution_timeout: None,
            stack_size: None,
        }
    }

    /// Submits `f` if a worker or a queue slot is free, and returns its
    /// [`Job`] to await; gives the immediate verdict otherwise.
    ///
    /// Needs no runtime: a [`Job`] can be made anywhere and awaited in a
    /// tokio runtime.
    ///
    /// # Errors
    /// [`Error::Full`] when `max_workers` jobs run and `queue_capacity`
    /// wait (counted in [`State::rejected`]), [`Error::Closed`] after
    /// [`close`](Self::close).
    ///
    /// # Examples
    /// ```
    /// use bulkhead_tokio::{BlockingPool, Error};
    /// use std::sync::mpsc;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let pool = BlockingPool::builder("disk").max_workers(1).build().unwrap();
    /// let (release, gate) = mpsc::channel::<()>();
    /// let busy = pool.spawn(move || gate.recv().unwrap()).unwrap();
    /// assert!(matches!(pool.spawn(|| ()), Err(Error::Full { .. }))); // no queue
    /// release.send(()).unwrap();
    /// busy.await.unwrap();
    /// # }
    /// ```
    pub fn spawn<F, R>(&self, f: F) -> Result<Job<R>, Error>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        let inner = &*self.inner;
        let seat = OwnedSeat::try_acquire(Arc::clone(&inner.bulkhead))?;
        let (tx, rx) = oneshot::channel();
        let task: Task = Box::new(move || {
            if tx.is_closed() {
                return; // the caller gave up before the job started
            }
            let value = panic::catch_unwind(AssertUnwindSafe(f));
            // Free the seat before the caller can see the value, so that a
            // caller that submits again at once finds it free.
            drop(seat);
            let _ = tx.send(value);
        });
        inner.shared.lock().tasks.push_back(task);
        inner.shared.available.notify_one();
        Ok(Job::new(rx, inner.execution_timeout, inner.bulkhead.name()))
    }

    /// Runs `f` on one of the pool's threads and awaits its value:
    /// [`spawn`](Self::spawn), then the [`Job`].
    ///
    /// # Cancel safety
    /// Cancel safe; see [`Job`].
    ///
    /// # Errors
    /// [`RunError::Rejected`] when the pool is full, and the other
    /// [`RunError`]s.
    pub async fn run<F, R>(&self, f: F) -> Result<R, RunError>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        self.spawn(f).map_err(RunError::Rejected)?.await
    }

    /// The pool's compartment. Seats taken from it directly count against
    /// the pool's capacity, which can serve to reserve capacity.
    pub fn bulkhead(&self) -> &Arc<Bulkhead> {
        &self.inner.bulkhead
    }

    /// Refuses new jobs from now on ([`Error::Closed`]); queued and
    /// running jobs still complete.
    pub fn close(&self) {
        self.inner.bulkhead.close();
    }

    /// A snapshot of the pool.
    pub fn state(&self) -> PoolState {
        let inner = &*self.inner;
        PoolState {
            compartment: inner.bulkhead.state(),
            max_workers: inner.max_workers,
            queue_capacity: inner.queue_capacity,
            queued: inner.shared.lock().tasks.len(),
            running: inner.shared.running.load(Ordering::Relaxed),
        }
    }
}

impl Shared {
    /// The queue; poisoning is ignored, as no code panics while holding it.
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let dropped = {
            let mut queue = self.shared.lock();
            queue.shut_down = true;
            std::mem::take(&mut queue.tasks)
        };
        self.shared.available.notify_all();
        // Outside the lock: this drops the callers' closures, frees their
        // seats and wakes their `Job`s with `Shutdown`.
        drop(dropped);
    }
}

/// A worker thread: runs tasks until the pool shuts down.
fn work(shared: &Shared) {
    loop {
        let task = {
            let mut queue = shared.lock();
            loop {
                if let Some(task) = queue.tasks.pop_front() {
                    break task;
                }
                if queue.shut_down {
                    return;
                }
                queue = shared
                    .available
                    .wait(queue)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        };
        shared.running.fetch_add(1, Ordering::Relaxed);
        task(); // catches the closure's panic itself
        shared.running.fetch_sub(1, Ordering::Relaxed);
    }
}
