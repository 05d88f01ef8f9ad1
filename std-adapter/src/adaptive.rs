//! Adaptive compartments for std programs: a clock from
//! `std::time::Instant`, and `execute`/`run_timeout` that time and
//! classify each call themselves.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use bulkhead_core::limit::{
    Adaptive as CoreAdaptive, AdaptiveSeat, AnyLimit, CallOutcome, Clock, Limit, Windowed,
};
use bulkhead_core::{Error, MaxWait, RawLock};

use crate::blocking::BlockingAcquire;
use crate::lock::StdLock;

/// Core's [`Clock`] from `std::time::Instant`: nanoseconds since the first
/// use in this process.
#[derive(Debug, Clone, Copy, Default)]
pub struct StdClock;

impl Clock for StdClock {
    #[inline]
    fn now_nanos(&self) -> u64 {
        static EPOCH: OnceLock<Instant> = OnceLock::new();
        let epoch = *EPOCH.get_or_init(Instant::now);
        u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// std's adaptive compartment, as [`Bulkhead`](crate::Bulkhead) is std's
/// compartment: core's [`limit::Adaptive`](bulkhead_core::limit::Adaptive)
/// with the std lock and [`StdClock`]. The default algorithm is any of the
/// three, chosen at run time, fed one aggregate sample per round of calls.
///
/// Run work in it with [`ExecuteAdaptive`] (threads, or any runtime's
/// timer), through a [`Policy`](crate::Policy) over a handle to it
/// (outcomes as values), or, on tokio, with bulkhead-tokio's
/// `acquire_within` and its tower layer.
///
/// ```
/// use std::time::Duration;
/// use bulkhead_std::{Adaptive, Bulkhead, ExecuteAdaptive, StdClock};
/// use bulkhead_std::bulkhead_core::limit::{Gradient2, Gradient2Params, Windowed};
///
/// let limit = Gradient2::new(Gradient2Params { initial: 8, min: 2, max: 64, ..Gradient2Params::DEFAULT })?;
/// let db: Adaptive =
///     Adaptive::new(Bulkhead::new("database", 8)?, Windowed::new(limit.into(), 10), StdClock);
/// let rows = db.execute(Duration::from_millis(50), || Ok::<_, std::io::Error>(3))?;
/// assert_eq!(rows.unwrap(), 3);
/// assert!(db.limit() >= 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type Adaptive<A = Windowed<AnyLimit>> = CoreAdaptive<StdLock, A, StdClock>;

/// How a call's own result tells the adaptive limit how the call went.
///
/// `Err` is a [`CallOutcome::Dropped`]; anything else a success. For a
/// timeout of the work itself, or a business error that says nothing about
/// load, classify with a closure:
/// [`execute_classified`](ExecuteAdaptive::execute_classified).
pub trait Classify {
    /// The outcome this result stands for.
    fn outcome(&self) -> CallOutcome;
}

impl<T, E> Classify for Result<T, E> {
    fn outcome(&self) -> CallOutcome {
        match self {
            Ok(_) => CallOutcome::Success,
            Err(_) => CallOutcome::Dropped,
        }
    }
}

impl Classify for () {
    fn outcome(&self) -> CallOutcome {
        CallOutcome::Success
    }
}

/// Running work in an adaptive compartment: each call is timed from seat
/// to release and its outcome fed to the limit, with no code from the
/// caller.
///
/// - `Err` (via [`Classify`]) or a panic counts as dropped;
/// - a classifier may say [`CallOutcome::Timeout`] for the work's own
///   timeout;
/// - a seat that is given back without an outcome counts as a success.
///
/// Turned-away callers record nothing: they never reached the dependency.
///
/// # Weighted calls
///
/// [`execute_weighted`](Self::execute_weighted) and
/// [`run_timeout_weighted`](Self::run_timeout_weighted) hold several seats
/// for one call. Such a call still records **one** sample, whatever its
/// weight: the limit learns from round trips, and one call has one. The
/// sample's `in_flight` counts seats, not calls (the compartment's
/// `active` when the call was admitted, its own weight included), so a
/// heavy call weighs on the algorithms' view of the load as much as it
/// weighs on the compartment.
pub trait ExecuteAdaptive {
    /// As [`Execute::execute`](crate::Execute::execute), and records the
    /// call's round trip and outcome.
    ///
    /// # Errors
    /// As [`Execute::execute`](crate::Execute::execute).
    fn execute<T: Classify>(
        &self,
        max_wait: impl Into<MaxWait>,
        work: impl FnOnce() -> T,
    ) -> Result<T, Error>;

    /// As [`execute`](Self::execute), with the outcome decided by
    /// `classify` (for instance `io::ErrorKind::TimedOut` as a timeout).
    ///
    /// ```
    /// use std::{io, time::Duration};
    /// use bulkhead_std::{Adaptive, Bulkhead, ExecuteAdaptive, MaxWait, StdClock};
    /// use bulkhead_std::bulkhead_core::limit::{Aimd, AimdParams, CallOutcome};
    ///
    /// let aimd = Aimd::new(AimdParams { initial: 4, min: 1, ..AimdParams::DEFAULT })?;
    /// // Not windowed, so that one call moves the limit.
    /// let api: Adaptive<Aimd> = Adaptive::new(Bulkhead::new("api", 4)?, aimd, StdClock);
    /// let classify = |r: &io::Result<()>| match r {
    ///     Err(e) if e.kind() == io::ErrorKind::TimedOut => CallOutcome::Timeout,
    ///     Err(_) => CallOutcome::Dropped,
    ///     Ok(()) => CallOutcome::Success,
    /// };
    /// let r = api.execute_classified(MaxWait::FailFast, || Err(io::ErrorKind::TimedOut.into()), classify)?;
    /// assert!(r.is_err());
    /// assert_eq!(api.limit(), 3); // floor(0.9 × 4)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Execute::execute`](crate::Execute::execute).
    fn execute_classified<T>(
        &self,
        max_wait: impl Into<MaxWait>,
        work: impl FnOnce() -> T,
        classify: impl FnOnce(&T) -> CallOutcome,
    ) -> Result<T, Error>;

    /// As [`execute`](Self::execute), holding `weight` seats at once (as
    /// [`BlockingAcquire::acquire_many_blocking`] takes them); records one
    /// sample whatever the weight, with `in_flight` in seats (see
    /// [Weighted calls](Self#weighted-calls)).
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::{Adaptive, Bulkhead, ExecuteAdaptive, StdClock};
    /// use bulkhead_std::bulkhead_core::limit::{Aimd, AimdParams};
    ///
    /// let aimd = Aimd::new(AimdParams { initial: 4, min: 1, ..AimdParams::DEFAULT })?;
    /// let api: Adaptive<Aimd> = Adaptive::new(Bulkhead::new("api", 4)?, aimd, StdClock);
    /// let held = api.execute_weighted(3, Duration::from_millis(10), || Ok::<_, ()>(api.bulkhead().state().active))?;
    /// assert_eq!(held, Ok(3));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Execute::execute_weighted`](crate::Execute::execute_weighted).
    fn execute_weighted<T: Classify>(
        &self,
        weight: usize,
        max_wait: impl Into<MaxWait>,
        work: impl FnOnce() -> T,
    ) -> Result<T, Error>;

    /// As [`Run::run_timeout`](crate::Run::run_timeout), and records
    /// the call's round trip and outcome ([`Classify`]). A task dropped
    /// while it holds the seat records a success.
    ///
    /// # Cancel safety
    /// As [`Run::run_timeout`](crate::Run::run_timeout).
    ///
    /// # Errors
    /// As [`Run::run_timeout`](crate::Run::run_timeout).
    fn run_timeout<F, T>(
        &self,
        max_wait: impl Into<MaxWait>,
        work: F,
        sleep: impl FnOnce(Duration) -> T,
    ) -> impl Future<Output = Result<F::Output, Error>>
    where
        F: Future,
        F::Output: Classify,
        T: Future;

    /// As [`run_timeout`](Self::run_timeout), holding `weight` seats at
    /// once (as [`Run::run_timeout_weighted`](crate::Run::run_timeout_weighted));
    /// records one sample whatever the weight, with `in_flight` in seats
    /// (see [Weighted calls](Self#weighted-calls)).
    ///
    /// # Cancel safety
    /// As [`Run::run_timeout`](crate::Run::run_timeout).
    ///
    /// # Errors
    /// As [`Run::run_timeout_weighted`](crate::Run::run_timeout_weighted).
    fn run_timeout_weighted<F, T>(
        &self,
        weight: usize,
        max_wait: impl Into<MaxWait>,
        work: F,
        sleep: impl FnOnce(Duration) -> T,
    ) -> impl Future<Output = Result<F::Output, Error>>
    where
        F: Future,
        F::Output: Classify,
        T: Future;

    /// As [`run_timeout`](Self::run_timeout), with the outcome decided by
    /// `classify` (for instance a tokio `Elapsed` from a timeout around the
    /// work as a [`CallOutcome::Timeout`]).
    ///
    /// # Cancel safety
    /// As [`Run::run_timeout`](crate::Run::run_timeout).
    ///
    /// # Errors
    /// As [`Run::run_timeout`](crate::Run::run_timeout).
    fn run_timeout_classified<F, T>(
        &self,
        max_wait: impl Into<MaxWait>,
        work: F,
        classify: impl FnOnce(&F::Output) -> CallOutcome,
        sleep: impl FnOnce(Duration) -> T,
    ) -> impl Future<Output = Result<F::Output, Error>>
    where
        F: Future,
        T: Future;
}

impl<L: RawLock, A: Limit, C: Clock> ExecuteAdaptive for CoreAdaptive<L, A, C> {
    fn execute<T: Classify>(
        &self,
        max_wait: impl Into<MaxWait>,
        work: impl FnOnce() -> T,
    ) -> Result<T, Error> {
        self.execute_classified(max_wait, work, T::outcome)
    }

    fn execute_classified<T>(
        &self,
        max_wait: impl Into<MaxWait>,
        work: impl FnOnce() -> T,
        classify: impl FnOnce(&T) -> CallOutcome,
    ) -> Result<T, Error> {
        execute_many(self, 1, max_wait.into(), work, classify)
    }

    fn execute_weighted<T: Classify>(
        &self,
        weight: usize,
        max_wait: impl Into<MaxWait>,
        work: impl FnOnce() -> T,
    ) -> Result<T, Error> {
        execute_many(self, weight, max_wait.into(), work, T::outcome)
    }

    async fn run_timeout<F, T>(
        &self,
        max_wait: impl Into<MaxWait>,
        work: F,
        sleep: impl FnOnce(Duration) -> T,
    ) -> Result<F::Output, Error>
    where
        F: Future,
        F::Output: Classify,
        T: Future,
    {
        self.run_timeout_classified(max_wait, work, F::Output::outcome, sleep)
            .await
    }

    async fn run_timeout_classified<F, T>(
        &self,
        max_wait: impl Into<MaxWait>,
        work: F,
        classify: impl FnOnce(&F::Output) -> CallOutcome,
        sleep: impl FnOnce(Duration) -> T,
    ) -> Result<F::Output, Error>
    where
        F: Future,
        T: Future,
    {
        run_many(self, 1, max_wait.into(), work, classify, sleep).await
    }

    async fn run_timeout_weighted<F, T>(
        &self,
        weight: usize,
        max_wait: impl Into<MaxWait>,
        work: F,
        sleep: impl FnOnce(Duration) -> T,
    ) -> Result<F::Output, Error>
    where
        F: Future,
        F::Output: Classify,
        T: Future,
    {
        run_many(
            self,
            weight,
            max_wait.into(),
            work,
            F::Output::outcome,
            sleep,
        )
        .await
    }
}

/// The body of every blocking adaptive call: `weight` seats, one sample.
fn execute_many<L: RawLock, A: Limit, C: Clock, T>(
    adaptive: &CoreAdaptive<L, A, C>,
    weight: usize,
    max_wait: MaxWait,
    work: impl FnOnce() -> T,
    classify: impl FnOnce(&T) -> CallOutcome,
) -> Result<T, Error> {
    let seat = adaptive
        .bulkhead()
        .acquire_many_blocking(weight, max_wait)?;
    let seat = OnPanic(Some(track(adaptive, seat)));
    let value = work();
    seat.finish(classify(&value));
    Ok(value)
}

/// The body of every async adaptive call: `weight` seats, one sample.
async fn run_many<L: RawLock, A: Limit, C: Clock, F: Future, T: Future>(
    adaptive: &CoreAdaptive<L, A, C>,
    weight: usize,
    max_wait: MaxWait,
    work: F,
    classify: impl FnOnce(&F::Output) -> CallOutcome,
    sleep: impl FnOnce(Duration) -> T,
) -> Result<F::Output, Error> {
    let bulkhead = adaptive.bulkhead();
    let seat = crate::run::acquire_many_timeout(bulkhead, weight, max_wait, sleep).await?;
    let seat = OnPanic(Some(track(adaptive, seat)));
    let value = work.await;
    seat.finish(classify(&value));
    Ok(value)
}

fn track<'a, L: RawLock, A: Limit, C: Clock>(
    adaptive: &'a CoreAdaptive<L, A, C>,
    seat: bulkhead_core::Seat<'a, L>,
) -> AdaptiveSeat<'a, L, A, C> {
    match adaptive.track(seat) {
        Ok(seat) => seat,
        // The seat came from `adaptive.bulkhead()` just above.
        Err(_) => unreachable!("a seat of this compartment"),
    }
}

/// Records a drop if the work panics; otherwise `finish` records its
/// outcome.
struct OnPanic<'a, L: RawLock, A: Limit, C: Clock>(Option<AdaptiveSeat<'a, L, A, C>>);

impl<L: RawLock, A: Limit, C: Clock> OnPanic<'_, L, A, C> {
    fn finish(mut self, outcome: CallOutcome) {
        if let Some(seat) = self.0.take() {
            seat.record(outcome);
        }
    }
}

impl<L: RawLock, A: Limit, C: Clock> Drop for OnPanic<'_, L, A, C> {
    fn drop(&mut self) {
        if let Some(seat) = self.0.take() {
            let outcome = if std::thread::panicking() {
                CallOutcome::Dropped
            } else {
                // A future dropped while it held the seat: the default.
                CallOutcome::Success
            };
            seat.record(outcome);
        }
    }
}

/// The adaptive limit's series, published by [`publish_adaptive`].
#[cfg(feature = "metrics")]
pub mod adaptive_metrics {
    /// Gauge: the compartment's current (adaptive) limit. The same series
    /// the registry publishes for every compartment, so a registered
    /// adaptive compartment shows one limit, not two.
    pub const LIMIT: &str = crate::series::MAX_CONCURRENT;
    /// Counter: how many times a sample changed the limit.
    pub const LIMIT_CHANGES: &str = crate::series::LIMIT_CHANGES;
    /// Counter: samples that filled or found a full window while another
    /// sampler was updating the limit (they stay in the window for the
    /// next update; see `Controller::skipped`).
    pub const SAMPLES_SKIPPED: &str = "bulkhead_limit_samples_skipped_total";
}

/// Publishes `adaptive`'s limit (gauge) and its limit changes and skipped
/// samples (counters, absolute), labelled with the compartment's name.
/// Call it from the same place that publishes the registry, or on a timer.
#[cfg(feature = "metrics")]
pub fn publish_adaptive<L: RawLock, A: Limit, C: Clock>(adaptive: &CoreAdaptive<L, A, C>) {
    use adaptive_metrics::{LIMIT, LIMIT_CHANGES, SAMPLES_SKIPPED};
    let name = crate::series::label_value(&adaptive.bulkhead().name_handle());
    metrics::describe_counter!(
        LIMIT_CHANGES,
        metrics::Unit::Count,
        "Times a sample changed the adaptive limit."
    );
    metrics::describe_counter!(
        SAMPLES_SKIPPED,
        metrics::Unit::Count,
        "Adaptive-limit samples that found their window being processed; kept for the next update."
    );
    metrics::gauge!(LIMIT, "name" => name.clone()).set(adaptive.limit() as f64);
    metrics::counter!(LIMIT_CHANGES, "name" => name.clone())
        .absolute(adaptive.controller().changes() as u64);
    metrics::counter!(SAMPLES_SKIPPED, "name" => name)
        .absolute(adaptive.controller().skipped() as u64);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Bulkhead;
    use bulkhead_core::limit::{Aimd, AimdParams};

    fn aimd_db(limit: usize) -> Adaptive<Aimd> {
        let aimd = Aimd::new(AimdParams {
            initial: limit,
            min: 1,
            max: 100,
            ..AimdParams::DEFAULT
        })
        .unwrap();
        // Not windowed, so that every call moves the limit.
        Adaptive::new(Bulkhead::new("db", limit).unwrap(), aimd, StdClock)
    }

    #[test]
    fn err_and_panic_back_off_ok_grows() {
        let db = aimd_db(10);
        // A success with the compartment at least half full grows by one:
        // hold 5 seats so that in-flight is 6.
        let held: Vec<_> = (0..5)
            .map(|_| db.bulkhead().try_acquire().unwrap())
            .collect();
        assert_eq!(
            db.execute(MaxWait::FailFast, || Ok::<_, ()>(1)).unwrap(),
            Ok(1)
        );
        assert_eq!(db.limit(), 11);
        drop(held);
        assert!(
            db.execute(MaxWait::FailFast, || Err::<(), _>("boom"))
                .unwrap()
                .is_err()
        );
        assert_eq!(db.limit(), 9, "floor(0.9 x 11)");
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = db.execute(MaxWait::FailFast, || -> Result<(), ()> {
                panic!("work panicked")
            });
        }));
        assert!(panicked.is_err());
        assert_eq!(db.limit(), 8, "a panic is a drop: floor(0.9 x 9)");
        assert_eq!(db.bulkhead().state().active, 0, "the seat came back");
    }

    #[test]
    fn classifier_marks_timeouts_and_rejections_record_nothing() {
        let db = aimd_db(2);
        let r = db.execute_classified(MaxWait::FailFast, || "slow", |_| CallOutcome::Timeout);
        assert_eq!(r, Ok("slow"));
        assert_eq!(db.limit(), 1);
        let _hog = db.bulkhead().try_acquire().unwrap();
        let changes = db.controller().changes();
        assert!(db.execute(MaxWait::FailFast, || ()).is_err(), "full");
        assert_eq!(
            db.controller().changes(),
            changes,
            "a rejection is no sample"
        );
    }

    #[test]
    fn run_timeout_times_async_work() {
        let db = aimd_db(1);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let r = rt.block_on(db.run_timeout(
            MaxWait::FailFast,
            async {
                tokio::time::sleep(Duration::from_millis(2)).await;
                Err::<(), _>("dependency said 503")
            },
            tokio::time::sleep,
        ));
        assert!(r.unwrap().is_err());
        assert_eq!(db.limit(), 1, "min 1");
        let r = rt.block_on(db.run_timeout(
            MaxWait::FailFast,
            async { Ok::<_, ()>(5) },
            tokio::time::sleep,
        ));
        assert_eq!(r.unwrap(), Ok(5));
        assert_eq!(db.limit(), 2, "success with 1 of 1 in use: + 1");
    }

    #[cfg(feature = "metrics")]
    #[test]
    fn publishes_the_limit_and_its_changes() {
        use metrics_util::debugging::{DebugValue, DebuggingRecorder};
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        metrics::with_local_recorder(&recorder, || {
            let db = aimd_db(10);
            for _ in 0..3 {
                let _ = db.execute(MaxWait::FailFast, || Err::<(), _>("503"));
            }
            publish_adaptive(&db);
        });
        let all = snapshotter.snapshot().into_vec();
        let value = |metric: &str| {
            all.iter()
                .find(|(k, ..)| k.key().name() == metric)
                .map(|(.., v)| v)
        };
        // 10 -> 9 -> 8 -> 7
        assert_eq!(
            value(adaptive_metrics::LIMIT),
            Some(&DebugValue::Gauge(7.0.into()))
        );
        assert_eq!(
            value(adaptive_metrics::LIMIT_CHANGES),
            Some(&DebugValue::Counter(3))
        );
        assert_eq!(
            value(adaptive_metrics::SAMPLES_SKIPPED),
            Some(&DebugValue::Counter(0))
        );
    }
}
