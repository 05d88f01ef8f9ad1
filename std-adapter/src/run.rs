//! Waiting for a seat, and running a future inside a compartment, from
//! async code on any runtime.

use std::time::Duration;

use bulkhead_core::Error;

use crate::bulkhead::{Bulkhead, Seat};

impl Bulkhead {
    /// Takes a seat from async code, waiting at most `max_wait` with the
    /// caller's runtime timer: `sleep` turns the budget into a future that
    /// completes when it has elapsed (`tokio::time::sleep`,
    /// `async_std::task::sleep`, `async_io::Timer::after`, …).
    ///
    /// `None` (or zero) gives the immediate verdict without calling
    /// `sleep`. The task waits in the same FIFO line as blocking threads,
    /// without blocking its runtime. Whether it got a seat or timed out is
    /// decided in one step, so a seat handed over as the timer fires is
    /// kept, never lost.
    ///
    /// # Cancel safety
    /// Dropping the future at any point loses nothing.
    ///
    /// # Errors
    /// [`Error::Full`] (no budget), [`Error::Timeout`],
    /// [`Error::QueueFull`] or [`Error::Closed`].
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::Bulkhead;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let api = Bulkhead::new("external_api", 1).unwrap();
    /// let seat = api.acquire_within(Some(Duration::from_secs(1)), tokio::time::sleep).await;
    /// assert!(seat.is_ok());
    /// # });
    /// ```
    pub async fn acquire_within<T: Future>(
        &self,
        max_wait: Option<Duration>,
        sleep: impl FnOnce(Duration) -> T,
    ) -> Result<Seat<'_>, Error> {
        match max_wait {
            Some(budget) if !budget.is_zero() => self.acquire_timeout(budget, sleep(budget)).await,
            _ => self.try_acquire(),
        }
    }

    /// Runs `work` while holding a seat, failing fast when the compartment
    /// is full. `work`'s output, business errors included, is returned
    /// untouched inside `Ok`; if `work` panics, the seat is given back as
    /// the panic unwinds.
    ///
    /// # Errors
    /// [`Error::Full`] or [`Error::Closed`]; `work` has then not been
    /// polled.
    ///
    /// # Examples
    /// ```
    /// use bulkhead_std::Bulkhead;
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let cache = Bulkhead::new("cache", 2).unwrap();
    /// assert_eq!(cache.run(async { 7 }).await, Ok(7));
    /// # });
    /// ```
    pub async fn run<F: Future>(&self, work: F) -> Result<F::Output, Error> {
        let _seat = self.try_acquire()?;
        Ok(work.await)
    }

    /// As [`run`](Self::run), but waits at most `max_wait` for a seat with
    /// the runtime timer `sleep`, as [`acquire_within`](Self::acquire_within).
    /// The budget bounds only the wait, not `work`: compose with the
    /// runtime's own timeout (inside the bulkhead) to bound the work.
    ///
    /// # Errors
    /// As [`acquire_within`](Self::acquire_within).
    pub async fn run_within<F: Future, T: Future>(
        &self,
        max_wait: Option<Duration>,
        sleep: impl FnOnce(Duration) -> T,
        work: F,
    ) -> Result<F::Output, Error> {
        let _seat = self.acquire_within(max_wait, sleep).await?;
        Ok(work.await)
    }

    /// As [`run_within`](Self::run_within), but runs `fallback` with the
    /// rejection when the compartment is full, its queue is full or the
    /// wait timed out. Never masks [`Error::Closed`].
    ///
    /// # Errors
    /// [`Error::Closed`] only.
    pub async fn run_or_else<F: Future, T: Future>(
        &self,
        max_wait: Option<Duration>,
        sleep: impl FnOnce(Duration) -> T,
        work: F,
        fallback: impl FnOnce(Error) -> F::Output,
    ) -> Result<F::Output, Error> {
        match self.run_within(max_wait, sleep, work).await {
            Err(e @ Error::Closed { .. }) => Err(e),
            Err(e) => Ok(fallback(e)),
            ok => ok,
        }
    }
}
