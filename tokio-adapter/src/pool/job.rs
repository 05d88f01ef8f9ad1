//! [`Job`], the awaitable result of a pool job.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::thread;
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::sync::oneshot;
use tokio::time::{Instant, Sleep};

use super::error::RunError;

pin_project! {
    /// The result of a job submitted to a [`BlockingPool`](crate::BlockingPool).
    /// Returned by [`BlockingPool::spawn`](crate::BlockingPool::spawn); await
    /// it for the closure's value.
    ///
    /// It owns nothing of the pool: the pool may be dropped while jobs are
    /// pending. A job that had not started then resolves to
    /// [`RunError::Shutdown`]; one that had started finishes and delivers its
    /// value. Awaiting a job never hangs on a dropped pool.
    ///
    /// # Cancel safety
    /// Dropping it before a worker starts the job cancels the job: the worker
    /// skips it and its seat is freed. Dropping it later lets the closure run
    /// to completion (a thread cannot be interrupted) and drops its value.
    ///
    /// # Memory ordering
    /// Everything the closure did happens-before this future resolves to
    /// its value (the value travels through a channel). The job's seat is
    /// ordered as every seat (see [`Bulkhead`](bulkhead_core::Bulkhead#memory-ordering)):
    /// the work of the job that held it before happens-before this job's
    /// closure. A [`RunError::TimedOut`](crate::RunError::TimedOut) promises
    /// nothing about the closure, which may still be running.
    ///
    /// # Testing with a paused clock
    /// tokio's paused clock (`start_paused`, `time::pause`) jumps to the
    /// next timer whenever the runtime is idle, and a runtime awaiting a pool
    /// thread is idle. Under a paused clock, a job with an execution timeout
    /// therefore times out at once unless its value is already there; test
    /// execution timeouts with jobs that block until told to finish.
    ///
    /// # Examples
    /// ```
    /// use bulkhead_tokio::BlockingPool;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let pool = BlockingPool::builder("reports").max_workers(1).build().unwrap();
    /// let job = pool.spawn(|| 6 * 7).unwrap();
    /// assert_eq!(job.await.unwrap(), 42);
    /// # }
    /// ```
    #[must_use = "dropping a job before it starts cancels it"]
    pub struct Job<R> {
        result: oneshot::Receiver<thread::Result<R>>,
        #[pin]
        timer: Option<Sleep>,
        deadline: Option<(Instant, Duration)>,
        name: &'static str,
    }
}

impl<R> Job<R> {
    pub(super) fn new(
        result: oneshot::Receiver<thread::Result<R>>,
        limit: Option<Duration>,
        name: &'static str,
    ) -> Self {
        // The timer is made on first poll, so a job can be spawned outside
        // a runtime; the deadline is fixed now, at admission.
        let deadline = limit.map(|limit| (Instant::now() + limit, limit));
        Self {
            result,
            timer: None,
            deadline,
            name,
        }
    }
}

impl<R> Future for Job<R> {
    type Output = Result<R, RunError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let name = *this.name;
        if let Poll::Ready(outcome) = Pin::new(&mut *this.result).poll(cx) {
            return Poll::Ready(match outcome {
                Ok(Ok(value)) => Ok(value),
                Ok(Err(payload)) => Err(RunError::Panicked { name, payload }),
                // The sender was dropped unsent: the pool dropped the job.
                Err(_) => Err(RunError::Shutdown { name }),
            });
        }
        let Some((deadline, limit)) = *this.deadline else {
            return Poll::Pending;
        };
        if this.timer.is_none() {
            this.timer.set(Some(tokio::time::sleep_until(deadline)));
        }
        match this.timer.as_pin_mut().map(|timer| timer.poll(cx)) {
            Some(Poll::Ready(())) => Poll::Ready(Err(RunError::TimedOut { name, limit })),
            _ => Poll::Pending,
        }
    }
}

impl<R> std::fmt::Debug for Job<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("pool", &self.name)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}
