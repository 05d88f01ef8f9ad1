//! Running a closure inside a compartment on this thread: `execute`,
//! `execute_or_else`, `wrap`.

use bulkhead_core::{Bulkhead, Error, MaxWait, RawLock};

use crate::blocking::BlockingAcquire;

/// Runs closures inside any [`Bulkhead<L>`](bulkhead_core::Bulkhead) on the
/// calling thread, taking the seat as
/// [`BlockingAcquire::acquire_blocking`] does.
///
/// Sealed: implemented for core's compartment only, so methods can be added
/// without breaking anyone.
pub trait Execute<L: RawLock>: crate::sealed::Sealed {
    /// Runs `work` on this thread while holding a seat, waiting at most
    /// `max_wait` for one (a [`MaxWait`], or a `Duration`; zero fails
    /// fast).
    ///
    /// `max_wait` bounds only the wait for a seat, not the work. The seat
    /// is given back when `work` returns, and also when it panics: the
    /// panic then continues unchanged. `work`'s own result, for example a
    /// `Result` with a business error, is returned untouched inside `Ok`.
    ///
    /// Admission is that of [`BlockingAcquire::acquire_blocking`], so on a
    /// thread that drives an event loop the verdict is immediate.
    ///
    /// # Errors
    /// [`Error::Full`], [`Error::Timeout`], [`Error::QueueFull`] or
    /// [`Error::Closed`]; `work` has then not run.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::{Bulkhead, Execute};
    ///
    /// let db = Bulkhead::new("database", 4)?;
    /// let rows: Result<u32, &str> = db.execute(Duration::from_millis(100), || Ok(42))?;
    /// assert_eq!(rows, Ok(42));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn execute<T>(
        &self,
        max_wait: impl Into<MaxWait>,
        work: impl FnOnce() -> T,
    ) -> Result<T, Error>;

    /// As [`execute`](Self::execute), holding `weight` seats at once,
    /// taken as [`BlockingAcquire::acquire_many_blocking`] takes them: for
    /// work that counts as `weight` callers (a batch that uses four
    /// connections).
    ///
    /// # Errors
    /// As [`BlockingAcquire::acquire_many_blocking`] (including
    /// [`Error::ZeroWeight`] and [`Error::WeightAboveLimit`]); `work` has
    /// then not run.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::{Bulkhead, Execute};
    ///
    /// let db = Bulkhead::new("database", 4)?;
    /// let held = db.execute_weighted(3, Duration::from_millis(100), || db.state().active)?;
    /// assert_eq!(held, 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn execute_weighted<T>(
        &self,
        weight: usize,
        max_wait: impl Into<MaxWait>,
        work: impl FnOnce() -> T,
    ) -> Result<T, Error>;

    /// As [`execute`](Self::execute), but runs `fallback` with the
    /// rejection when the compartment is full, its queue is full or the
    /// wait timed out.
    ///
    /// The fallback never masks a closed compartment: [`Error::Closed`] is
    /// returned as the only error, since a closed compartment is a wiring
    /// problem rather than load.
    ///
    /// # Errors
    /// [`Error::Closed`] only.
    ///
    /// # Examples
    /// ```
    /// use bulkhead_std::MaxWait;
    /// use bulkhead_std::{Bulkhead, Execute};
    ///
    /// let reports = Bulkhead::new("reports", 1)?;
    /// let _busy = reports.try_acquire()?;
    /// let page = reports.execute_or_else(MaxWait::FailFast, || "fresh report", |_full| "cached report")?;
    /// assert_eq!(page, "cached report");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn execute_or_else<T>(
        &self,
        max_wait: impl Into<MaxWait>,
        work: impl FnOnce() -> T,
        fallback: impl FnOnce(Error) -> T,
    ) -> Result<T, Error>;

    /// Turns `f` into a bulkheaded function: each call runs
    /// [`execute`](Self::execute)`(max_wait, || f(arg))`. The Rust
    /// counterpart of a `@bulkhead` decorator; pass a tuple for several
    /// arguments.
    ///
    /// The wrapper borrows the compartment; with a `static` compartment it
    /// is `'static`. For an `Arc<Bulkhead>`, move a clone into a closure
    /// that calls `execute`.
    ///
    /// # Examples
    /// ```
    /// use bulkhead_std::MaxWait;
    /// use bulkhead_std::{Bulkhead, Execute};
    ///
    /// static CACHE: Bulkhead = Bulkhead::new_static("cache", 8);
    /// let get = CACHE.wrap(MaxWait::FailFast, |key: &str| key.len());
    /// assert_eq!(get("user:1"), Ok(6));
    /// ```
    fn wrap<'a, A, T>(
        &'a self,
        max_wait: impl Into<MaxWait>,
        f: impl Fn(A) -> T + 'a,
    ) -> impl Fn(A) -> Result<T, Error> + 'a;
}

impl<L: RawLock> Execute<L> for Bulkhead<L> {
    fn execute<T>(
        &self,
        max_wait: impl Into<MaxWait>,
        work: impl FnOnce() -> T,
    ) -> Result<T, Error> {
        let _seat = self.acquire_blocking(max_wait)?;
        Ok(work())
    }

    fn execute_weighted<T>(
        &self,
        weight: usize,
        max_wait: impl Into<MaxWait>,
        work: impl FnOnce() -> T,
    ) -> Result<T, Error> {
        let _seat = self.acquire_many_blocking(weight, max_wait)?;
        Ok(work())
    }

    fn execute_or_else<T>(
        &self,
        max_wait: impl Into<MaxWait>,
        work: impl FnOnce() -> T,
        fallback: impl FnOnce(Error) -> T,
    ) -> Result<T, Error> {
        match self.execute(max_wait, work) {
            Err(e @ Error::Closed { .. }) => Err(e),
            Err(e) => Ok(fallback(e)),
            ok => ok,
        }
    }

    fn wrap<'a, A, T>(
        &'a self,
        max_wait: impl Into<MaxWait>,
        f: impl Fn(A) -> T + 'a,
    ) -> impl Fn(A) -> Result<T, Error> + 'a {
        let max_wait = max_wait.into();
        move |arg| self.execute(max_wait, || f(arg))
    }
}
