//! [`Policy`] and [`Outcome`]: a bulkhead that reports rejections as
//! values, for composing with retry, circuit-breaker and timeout layers.

use std::ops::Deref;
use std::time::Duration;

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
/// policy. `P` is any [`Handle`] to a compartment (`&Bulkhead`,
/// `Arc<Bulkhead>`, `&'static Bulkhead`, for the std
/// [`Bulkhead`](crate::Bulkhead) or core's `Bulkhead<L>` with any lock),
/// or to an adaptive compartment (`&Adaptive`, `Arc<Adaptive>`, for std's
/// [`Adaptive`](crate::Adaptive) or core's `limit::Adaptive` with any lock
/// and clock): see [`PolicyCompartment`].
///
/// Recommended order, outside in: fallback → retry → circuit breaker →
/// rate limiter → **bulkhead** → timeout → call. The bulkhead sits outside
/// the timeout so that it caps concurrency before a call starts its
/// timeout window, and inside retry so that each attempt takes its own
/// seat.
///
/// # Over an adaptive compartment
///
/// The same [`Outcome`]s, and every admitted call is timed and classified
/// for the limit, as [`ExecuteAdaptive`] does:
///
/// - `Err` (through [`Classify`], which the work's result must implement)
///   or a panic counts as dropped;
/// - the work's own timeout counts as a timeout when the classifier of
///   [`execute_classified`](Self::execute_classified) or
///   [`run_timeout_classified`](Self::run_timeout_classified) says so (a
///   timeout around the work, inside the policy, returns an `Err` that
///   [`Classify`] alone would count as dropped);
/// - a rejection or an expired wait budget records nothing (the call never
///   reached the dependency).
///
/// ```
/// use bulkhead_std::{Adaptive, Bulkhead, MaxWait, Outcome, Policy, StdClock};
/// use bulkhead_std::bulkhead_core::limit::{Aimd, AimdParams, CallOutcome};
///
/// let aimd = Aimd::new(AimdParams { initial: 4, min: 1, ..AimdParams::DEFAULT })?;
/// let api: Adaptive<Aimd> = Adaptive::new(Bulkhead::new("api", 4)?, aimd, StdClock);
/// let policy = Policy::new(&api, MaxWait::from_millis(20));
/// let outcome = policy.execute(|| Err::<(), _>("503"));
/// assert_eq!(outcome, Outcome::Success(Err("503"))); // the work ran; its error is untouched
/// assert_eq!(api.limit(), 3); // and counted as dropped: floor(0.9 × 4)
/// let slow = policy.execute_classified(|| "late", |_| CallOutcome::Timeout);
/// assert_eq!(slow, Outcome::Success("late"));
/// assert_eq!(api.limit(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Over a plain compartment the work's result may be anything, and nothing
/// is recorded.
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
///     .run_timeout(tokio::time::timeout(Duration::from_millis(5), slow_call), tokio::time::sleep)
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
    /// A policy that waits at most `max_wait` for a seat in the
    /// compartment `bulkhead` leads to (see [`MaxWait`]; `MaxWait::up_to(d)`
    /// makes one from a duration in a `const`).
    pub const fn new(bulkhead: P, max_wait: MaxWait) -> Self {
        Self { bulkhead, max_wait }
    }

    /// The compartment whose seats the policy takes (for an adaptive
    /// compartment, the one inside it).
    pub fn bulkhead(&self) -> &Bulkhead<P::Lock> {
        self.bulkhead.bulkhead()
    }

    /// The wait budget.
    pub const fn max_wait(&self) -> MaxWait {
        self.max_wait
    }
}

impl<P: Deref> Policy<P> {
    /// What the handle leads to: the compartment, or the adaptive
    /// compartment (for its `limit()` and `controller()`).
    pub fn compartment(&self) -> &P::Target {
        &self.bulkhead
    }

    /// Runs `work` on this thread inside the compartment, as
    /// [`Execute::execute`]. A panic in `work` gives the seat back and
    /// continues unchanged. Over an adaptive compartment, also records the
    /// call's round trip and outcome ([`Classify`]), as
    /// [`ExecuteAdaptive::execute`].
    pub fn execute<T>(&self, work: impl FnOnce() -> T) -> Outcome<T>
    where
        P::Target: PolicyCompartment<T>,
    {
        Outcome::from_admission(admit::Admit::admit_execute(
            &*self.bulkhead,
            self.max_wait,
            work,
        ))
    }

    /// Runs `work` inside the compartment, waiting for a seat with the
    /// runtime timer `sleep`, as [`Run::run_timeout`]. Over an adaptive
    /// compartment, also records the call's round trip and outcome
    /// ([`Classify`]), as [`ExecuteAdaptive::run_timeout`].
    ///
    /// # Cancel safety
    /// As [`Run::run_timeout`]: dropping the future loses no seat (and,
    /// over an adaptive compartment, a future dropped while it holds the
    /// seat records a success).
    pub async fn run_timeout<F: Future, T: Future>(
        &self,
        work: F,
        sleep: impl FnOnce(Duration) -> T,
    ) -> Outcome<F::Output>
    where
        P::Target: PolicyCompartment<F::Output>,
    {
        Outcome::from_admission(
            admit::Admit::admit_run(&*self.bulkhead, self.max_wait, work, sleep).await,
        )
    }
}

impl<P, L, A, C> Policy<P>
where
    P: Deref<Target = Adaptive<L, A, C>>,
    L: RawLock,
    A: Limit,
    C: Clock,
{
    /// As [`execute`](Self::execute) over an adaptive compartment, with the
    /// outcome recorded for the limit decided by `classify`.
    pub fn execute_classified<T>(
        &self,
        work: impl FnOnce() -> T,
        classify: impl FnOnce(&T) -> CallOutcome,
    ) -> Outcome<T> {
        Outcome::from_admission(
            self.bulkhead
                .execute_classified(self.max_wait, work, classify),
        )
    }

    /// As [`run_timeout`](Self::run_timeout) over an adaptive compartment,
    /// with the outcome recorded for the limit decided by `classify` (for
    /// instance a tokio `Elapsed` as [`CallOutcome::Timeout`]).
    ///
    /// # Cancel safety
    /// As [`run_timeout`](Self::run_timeout).
    pub async fn run_timeout_classified<F, T>(
        &self,
        work: F,
        classify: impl FnOnce(&F::Output) -> CallOutcome,
        sleep: impl FnOnce(Duration) -> T,
    ) -> Outcome<F::Output>
    where
        F: Future,
        T: Future,
    {
        Outcome::from_admission(
            self.bulkhead
                .run_timeout_classified(self.max_wait, work, classify, sleep)
                .await,
        )
    }
}

/// What a [`Policy`] runs work whose result is `T` in: the compartment its
/// handle leads to.
///
/// - A compartment (std's [`Bulkhead`](crate::Bulkhead), core's
///   `Bulkhead<L>` with any lock) takes work of any result, and records
///   nothing.
/// - An adaptive compartment (std's [`Adaptive`](crate::Adaptive), core's
///   `limit::Adaptive<L, A, C>` with any lock and clock) takes work whose
///   result says how the call went ([`Classify`]: a `Result`, or `()`),
///   and records each admitted call's round trip and outcome; a result
///   that is no `Classify` goes through
///   [`Policy::execute_classified`] or [`Policy::run_timeout_classified`].
///
/// Sealed: these two are the only ones.
pub trait PolicyCompartment<T>: admit::Admit<T> {}

mod admit {
    use super::{Duration, Error, MaxWait};

    /// How a [`PolicyCompartment`](super::PolicyCompartment) runs work.
    /// Not nameable outside the crate, so nothing else implements it.
    pub trait Admit<T> {
        /// As `Execute::execute` (and `ExecuteAdaptive::execute`).
        fn admit_execute(&self, max_wait: MaxWait, work: impl FnOnce() -> T) -> Result<T, Error>;

        /// As `Run::run_timeout` (and `ExecuteAdaptive::run_timeout`).
        fn admit_run<F: Future<Output = T>, S: Future>(
            &self,
            max_wait: MaxWait,
            work: F,
            sleep: impl FnOnce(Duration) -> S,
        ) -> impl Future<Output = Result<T, Error>>;
    }
}

impl<L: RawLock, T> admit::Admit<T> for Bulkhead<L> {
    fn admit_execute(&self, max_wait: MaxWait, work: impl FnOnce() -> T) -> Result<T, Error> {
        Execute::execute(self, max_wait, work)
    }

    fn admit_run<F: Future<Output = T>, S: Future>(
        &self,
        max_wait: MaxWait,
        work: F,
        sleep: impl FnOnce(Duration) -> S,
    ) -> impl Future<Output = Result<T, Error>> {
        Run::run_timeout(self, max_wait, work, sleep)
    }
}

impl<L: RawLock, T> PolicyCompartment<T> for Bulkhead<L> {}

impl<L: RawLock, A: Limit, C: Clock, T: Classify> admit::Admit<T> for Adaptive<L, A, C> {
    fn admit_execute(&self, max_wait: MaxWait, work: impl FnOnce() -> T) -> Result<T, Error> {
        ExecuteAdaptive::execute(self, max_wait, work)
    }

    fn admit_run<F: Future<Output = T>, S: Future>(
        &self,
        max_wait: MaxWait,
        work: F,
        sleep: impl FnOnce(Duration) -> S,
    ) -> impl Future<Output = Result<T, Error>> {
        ExecuteAdaptive::run_timeout(self, max_wait, work, sleep)
    }
}

impl<L: RawLock, A: Limit, C: Clock, T: Classify> PolicyCompartment<T> for Adaptive<L, A, C> {}
