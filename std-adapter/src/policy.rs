//! [`Policy`] and [`Outcome`]: a bulkhead that reports rejections as
//! values, for composing with retry, circuit-breaker and timeout layers.

use std::time::Duration;

use std::ops::Deref;

use bulkhead_core::limit::{Adaptive, CallOutcome, Clock, Limit};
use bulkhead_core::{Bulkhead, Error, Handle, MaxWait, RawLock};

use crate::adaptive::{Classify, ExecuteAdaptive};
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
/// For an adaptive compartment, [`AdaptivePolicy`] also times and
/// classifies each call for the limit.
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
        self.bulkhead.bulkhead()
    }

    /// Runs `work` on this thread inside the compartment, as
    /// [`Execute::execute`]. A panic in `work` gives the seat back and
    /// continues unchanged.
    pub fn execute<T>(&self, work: impl FnOnce() -> T) -> Outcome<T> {
        Outcome::from_admission(self.bulkhead().execute(self.max_wait, work))
    }

    /// Runs `work` inside the compartment, waiting for a seat with the
    /// runtime timer `sleep`, as [`Run::run_timeout`].
    pub async fn run<F: Future, T: Future>(
        &self,
        sleep: impl FnOnce(Duration) -> T,
        work: F,
    ) -> Outcome<F::Output> {
        Outcome::from_admission(
            self.bulkhead()
                .run_timeout(self.max_wait, work, sleep)
                .await,
        )
    }
}

/// A [`Policy`] over an adaptive compartment ([`Adaptive`], such as an
/// [`AdaptiveBulkhead`](crate::AdaptiveBulkhead)): the same
/// [`Outcome`]s, and every admitted call is timed and classified for the
/// limit, as [`ExecuteAdaptive`] does:
///
/// - `Err` (through [`Classify`]) or a panic counts as dropped;
/// - the work's own timeout counts as a timeout when the classifier of
///   [`execute_classified`](Self::execute_classified) or
///   [`run_classified`](Self::run_classified) says so (a timeout around
///   the work, inside the policy, returns an `Err` that [`Classify`] alone
///   would count as dropped);
/// - a rejection or an expired wait budget records nothing (the call never
///   reached the dependency).
///
/// `P` is any pointer to the compartment: `&Adaptive`, `Arc<Adaptive>`.
///
/// ```
/// use std::time::Duration;
/// use bulkhead_std::{AdaptivePolicy, AdaptiveBulkhead, Bulkhead, MaxWait, Outcome, StdClock};
/// use bulkhead_std::bulkhead_core::limit::{Aimd, AimdParams, CallOutcome};
///
/// let aimd = Aimd::new(AimdParams { initial: 4, min: 1, ..AimdParams::DEFAULT })?;
/// let api: AdaptiveBulkhead<Aimd> = AdaptiveBulkhead::new(Bulkhead::new("api", 4)?, aimd, StdClock);
/// let policy = AdaptivePolicy::new(&api, MaxWait::from_millis(20));
/// let outcome = policy.execute(|| Err::<(), _>("503"));
/// assert_eq!(outcome, Outcome::Success(Err("503"))); // the work ran; its error is untouched
/// assert_eq!(api.limit(), 3); // and counted as dropped: floor(0.9 × 4)
/// let slow = policy.execute_classified(|| "late", |_| CallOutcome::Timeout);
/// assert_eq!(slow, Outcome::Success("late"));
/// assert_eq!(api.limit(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct AdaptivePolicy<P> {
    adaptive: P,
    max_wait: MaxWait,
}

impl<P, L, A, C> AdaptivePolicy<P>
where
    P: Deref<Target = Adaptive<L, A, C>>,
    L: RawLock,
    A: Limit,
    C: Clock,
{
    /// A policy that waits at most `max_wait` for a seat in `adaptive`.
    pub const fn new(adaptive: P, max_wait: MaxWait) -> Self {
        Self { adaptive, max_wait }
    }

    /// The adaptive compartment.
    pub fn adaptive(&self) -> &Adaptive<L, A, C> {
        &self.adaptive
    }

    /// Runs `work` on this thread inside the compartment and records its
    /// round trip and outcome ([`Classify`]), as
    /// [`ExecuteAdaptive::execute`].
    pub fn execute<T: Classify>(&self, work: impl FnOnce() -> T) -> Outcome<T> {
        Outcome::from_admission(self.adaptive.execute(self.max_wait, work))
    }

    /// As [`execute`](Self::execute), with the outcome decided by
    /// `classify`.
    pub fn execute_classified<T>(
        &self,
        work: impl FnOnce() -> T,
        classify: impl FnOnce(&T) -> CallOutcome,
    ) -> Outcome<T> {
        Outcome::from_admission(
            self.adaptive
                .execute_classified(self.max_wait, work, classify),
        )
    }

    /// Runs `work` inside the compartment, waiting for a seat with the
    /// runtime timer `sleep`, and records its round trip and outcome
    /// ([`Classify`]), as [`ExecuteAdaptive::run`].
    pub async fn run<F, T>(&self, sleep: impl FnOnce(Duration) -> T, work: F) -> Outcome<F::Output>
    where
        F: Future,
        F::Output: Classify,
        T: Future,
    {
        Outcome::from_admission(
            ExecuteAdaptive::run(&*self.adaptive, self.max_wait, sleep, work).await,
        )
    }

    /// As [`run`](Self::run), with the outcome decided by `classify`
    /// (for instance a tokio `Elapsed` as [`CallOutcome::Timeout`]).
    pub async fn run_classified<F, T>(
        &self,
        sleep: impl FnOnce(Duration) -> T,
        work: F,
        classify: impl FnOnce(&F::Output) -> CallOutcome,
    ) -> Outcome<F::Output>
    where
        F: Future,
        T: Future,
    {
        Outcome::from_admission(
            self.adaptive
                .run_classified(self.max_wait, sleep, work, classify)
                .await,
        )
    }
}
