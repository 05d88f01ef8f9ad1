//! [`Policy`] and [`Outcome`]: a bulkhead that reports rejections as
//! values, for composing with retry, circuit-breaker and timeout layers.

use std::time::Duration;

use bulkhead_core::{Bulkhead, Error, Handle, MaxWait};

use crate::execute::Execute;
use crate::run::Run;

/// The outcome of running work through a [`Policy`].
///
/// The work's own result, business errors included, is carried untouched
/// in `Success`; only the compartment's verdicts become `Rejected` or
/// `TimedOut`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum Outcome<T> {
    /// The work ran; this is its result.
    Success(T),
    /// The compartment turned the caller away: [`Error::Full`],
    /// [`Error::QueueFull`] or [`Error::Closed`]. The work did not run.
    Rejected(Error),
    /// No seat became free within the wait budget ([`Error::Timeout`]).
    /// The work did not run.
    TimedOut(Error),
}

impl<T> Outcome<T> {
    fn from_admission(result: Result<T, Error>) -> Self {
        match result {
            Ok(value) => Outcome::Success(value),
            Err(e @ Error::Timeout { .. }) => Outcome::TimedOut(e),
            Err(e) => Outcome::Rejected(e),
        }
    }

    /// Whether the work ran.
    pub const fn is_success(&self) -> bool {
        matches!(self, Outcome::Success(_))
    }

    /// Back to a `Result`: the value, or the compartment's error.
    ///
    /// # Errors
    /// The rejection or timeout.
    pub fn into_result(self) -> Result<T, Error> {
        match self {
            Outcome::Success(value) => Ok(value),
            Outcome::Rejected(e) | Outcome::TimedOut(e) => Err(e),
        }
    }
}

/// A compartment plus a wait budget, applied to work as a composable
/// policy. `P` is any [`Handle`] to a compartment: `&Bulkhead`,
/// `Arc<Bulkhead>`, `&'static Bulkhead`, for the std
/// [`Bulkhead`](crate::Bulkhead) or core's `Bulkhead<L>` with any lock.
///
/// Recommended order, outside in: fallback → retry → circuit breaker →
/// rate limiter → **bulkhead** → timeout → call. The bulkhead sits outside
/// the timeout so that it caps concurrency before a call starts its
/// timeout window, and inside retry so that each attempt takes its own
/// seat.
///
/// # Examples
///
/// A retry loop around the bulkhead: only `Rejected`/`TimedOut` are
/// retried; the business error passes through untouched and is not.
///
/// ```
/// use bulkhead_std::MaxWait;
/// use std::time::Duration;
/// use bulkhead_std::{Bulkhead, Outcome, Policy};
///
/// #[derive(Debug, PartialEq)]
/// struct NotFound;
///
/// fn retry<T>(attempts: u32, mut call: impl FnMut() -> Outcome<T>) -> Outcome<T> {
///     let mut outcome = call();
///     for _ in 1..attempts {
///         match outcome {
///             Outcome::Rejected(_) | Outcome::TimedOut(_) => {
///                 std::thread::sleep(Duration::from_millis(1)); // back off
///                 outcome = call();
///             }
///             done => return done,
///         }
///     }
///     outcome
/// }
///
/// let db = Bulkhead::new("database", 1)?;
/// let policy = Policy::new(&db, MaxWait::from_millis(20));
/// let found = retry(3, || policy.execute(|| Err::<u32, _>(NotFound)));
/// assert_eq!(found, Outcome::Success(Err(NotFound))); // ran once, error untouched
///
/// let hog = db.try_acquire()?;
/// let busy = retry(2, || policy.execute(|| Ok::<u32, NotFound>(1)));
/// assert!(matches!(busy, Outcome::TimedOut(_)));
/// drop(hog);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Async, with a timeout *inside* the bulkhead (tokio's here): the budget
/// bounds the wait for a seat, the inner timeout bounds the work.
///
/// ```
/// use bulkhead_std::MaxWait;
/// use std::time::Duration;
/// use bulkhead_std::{Bulkhead, Outcome, Policy};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let api = Bulkhead::new("external_api", 4).unwrap();
/// let policy = Policy::new(&api, MaxWait::from_millis(50));
/// let slow_call = tokio::time::sleep(Duration::from_secs(60));
/// let outcome = policy
///     .run(tokio::time::sleep, tokio::time::timeout(Duration::from_millis(5), slow_call))
///     .await;
/// // Admitted; the work itself timed out, which is the work's own result.
/// assert!(matches!(outcome, Outcome::Success(Err(_elapsed))));
/// assert_eq!(api.state().active, 0);
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct Policy<P> {
    bulkhead: P,
    max_wait: MaxWait,
}

impl<P: Handle> Policy<P> {
    /// A policy that waits at most `max_wait` for a seat in `bulkhead`
    /// (see [`MaxWait`]; `MaxWait::up_to(d)` makes one from a duration in
    /// a `const`).
    pub const fn new(bulkhead: P, max_wait: MaxWait) -> Self {
        Self { bulkhead, max_wait }
    }

    /// The compartment.
    pub fn bulkhead(&self) -> &Bulkhead<P::Lock> {
        &self.bulkhead
    }

    /// Runs `work` on this thread inside the compartment, as
    /// [`Execute::execute`]. A panic in `work` gives the seat back and
    /// continues unchanged.
    pub fn execute<T>(&self, work: impl FnOnce() -> T) -> Outcome<T> {
        Outcome::from_admission(self.bulkhead.execute(self.max_wait, work))
    }

    /// Runs `work` inside the compartment, waiting for a seat with the
    /// runtime timer `sleep`, as [`Run::run_with_timer`].
    pub async fn run<F: Future, T: Future>(
        &self,
        sleep: impl FnOnce(Duration) -> T,
        work: F,
    ) -> Outcome<F::Output> {
        Outcome::from_admission(
            self.bulkhead
                .run_with_timer(self.max_wait, sleep, work)
                .await,
        )
    }
}
