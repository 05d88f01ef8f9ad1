//! [`TokioAcquireAdaptive`]: tokio waits on an adaptive compartment that
//! hand out seats which time themselves.

use std::future::Future;

use bulkhead_core::limit::{Adaptive, AdaptiveSeat, Clock, Limit};
use bulkhead_core::{Error, MaxWait, RawLock};

use crate::TokioAcquire;

/// Waits for a seat of an adaptive compartment ([`Adaptive`]) on tokio's
/// clock, and starts timing it: the seat records one sample when it is
/// given back ([`AdaptiveSeat::record`] with the outcome, or a success when
/// dropped). The wait itself is [`TokioAcquire::acquire_within`] on the
/// compartment, so its fairness, cancel safety and metrics are the same.
///
/// The adaptive member of this crate's tokio waits: the same method name,
/// `acquire_within`, as on a plain compartment, on a receiver of its own
/// (its own trait because the seat is another type, an
/// [`AdaptiveSeat`]). Sealed: implemented for core's [`Adaptive`] only
/// (std's `Adaptive<A>` among them).
///
/// ```
/// use std::time::Duration;
/// use bulkhead_tokio::{TokioAcquireAdaptive, Bulkhead, TokioClock};
/// use bulkhead_tokio::bulkhead_core::limit::{Adaptive, Aimd, AimdParams, CallOutcome};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// let aimd = Aimd::new(AimdParams { initial: 2, min: 1, ..AimdParams::DEFAULT }).unwrap();
/// let api = Adaptive::new(Bulkhead::new("api", 2).unwrap(), aimd, TokioClock::new());
/// let seat = api.acquire_within(Duration::from_millis(10)).await.unwrap();
/// tokio::time::sleep(Duration::from_millis(3)).await; // the call
/// seat.record(CallOutcome::Dropped); // floor(0.9 × 2)
/// assert_eq!(api.limit(), 1);
/// # });
/// ```
pub trait TokioAcquireAdaptive<L: RawLock, A: Limit, C: Clock>: sealed::Sealed {
    /// Takes a seat, waiting at most `max_wait` on tokio's clock, as
    /// [`TokioAcquire::acquire_within`], and starts timing it.
    ///
    /// # Cancel safety
    /// As [`TokioAcquire::acquire_within`]: dropping the future leaves the
    /// line; nothing is recorded for a caller that never got a seat.
    ///
    /// # Errors
    /// As [`TokioAcquire::acquire_within`]; a rejection records no sample.
    fn acquire_within<'a>(
        &'a self,
        max_wait: impl Into<MaxWait>,
    ) -> impl Future<Output = Result<AdaptiveSeat<'a, L, A, C>, Error>> + 'a
    where
        L: 'a,
        A: 'a,
        C: 'a;

    /// Takes `weight` seats at once, waiting at most `max_wait` on tokio's
    /// clock, as [`TokioAcquire::acquire_many_within`], and starts timing
    /// them.
    ///
    /// The seat records **one** sample when given back, whatever its
    /// weight: a call is one round trip to the dependency. The sample's
    /// in-flight count is the compartment's seats in use at admission
    /// (this seat's weight included), since the limit counts seats.
    ///
    /// # Cancel safety
    /// As [`acquire_within`](Self::acquire_within).
    ///
    /// # Errors
    /// As [`TokioAcquire::acquire_many_within`] (among them
    /// [`Error::ZeroWeight`], and [`Error::WeightAboveLimit`] when the
    /// adaptive limit is, or falls, below `weight`); a rejection records
    /// no sample.
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_tokio::{TokioAcquireAdaptive, Bulkhead, TokioClock};
    /// use bulkhead_tokio::bulkhead_core::limit::{Adaptive, Aimd, AimdParams, CallOutcome};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
    /// let aimd = Aimd::new(AimdParams { initial: 4, min: 1, ..AimdParams::DEFAULT }).unwrap();
    /// let api = Adaptive::new(Bulkhead::new("api", 4).unwrap(), aimd, TokioClock::new());
    /// let batch = api.acquire_many_within(3, Duration::from_millis(10)).await.unwrap();
    /// assert_eq!(batch.in_flight(), 3);
    /// batch.record(CallOutcome::Dropped); // one sample: floor(0.9 × 4)
    /// assert_eq!(api.limit(), 3);
    /// # });
    /// ```
    fn acquire_many_within<'a>(
        &'a self,
        weight: usize,
        max_wait: impl Into<MaxWait>,
    ) -> impl Future<Output = Result<AdaptiveSeat<'a, L, A, C>, Error>> + 'a
    where
        L: 'a,
        A: 'a,
        C: 'a;
}

mod sealed {
    /// Only core's adaptive compartment gets these methods.
    pub trait Sealed {}
    impl<L: bulkhead_core::RawLock, A, C> Sealed for bulkhead_core::limit::Adaptive<L, A, C> {}
}

impl<L: RawLock, A: Limit, C: Clock> TokioAcquireAdaptive<L, A, C> for Adaptive<L, A, C> {
    fn acquire_within<'a>(
        &'a self,
        max_wait: impl Into<MaxWait>,
    ) -> impl Future<Output = Result<AdaptiveSeat<'a, L, A, C>, Error>> + 'a
    where
        L: 'a,
        A: 'a,
        C: 'a,
    {
        self.acquire_many_within(1, max_wait)
    }

    fn acquire_many_within<'a>(
        &'a self,
        weight: usize,
        max_wait: impl Into<MaxWait>,
    ) -> impl Future<Output = Result<AdaptiveSeat<'a, L, A, C>, Error>> + 'a
    where
        L: 'a,
        A: 'a,
        C: 'a,
    {
        let wait = self.bulkhead().acquire_many_within(weight, max_wait);
        async move {
            let seat = wait.await?;
            match self.track(seat) {
                Ok(seat) => Ok(seat),
                // The seat came from `self.bulkhead()` just above.
                Err(_) => unreachable!("a seat of this compartment"),
            }
        }
    }
}
