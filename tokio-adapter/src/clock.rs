//! [`TokioClock`]: core's adaptive-limit clock from tokio's clock.

use std::sync::OnceLock;

use bulkhead_core::limit::Clock;

/// Core's [`Clock`] from tokio's clock, so that adaptive limits follow
/// tokio's paused test clock too.
///
/// [`AdaptiveExt::acquire_within`](crate::AdaptiveExt::acquire_within)
/// waits on tokio's clock and hands out a seat that times itself; a seat
/// taken by any other wait is timed with
/// [`Adaptive::track`](bulkhead_core::limit::Adaptive::track):
///
/// ```
/// use std::time::Duration;
/// use bulkhead_tokio::{Bulkhead, BulkheadExt, TokioClock};
/// use bulkhead_tokio::bulkhead_core::limit::{Adaptive, Aimd, AimdParams, CallOutcome};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// let aimd = Aimd::new(AimdParams { initial: 1, min: 1, ..AimdParams::DEFAULT }).unwrap();
/// let api = Adaptive::new(Bulkhead::new("api", 1).unwrap(), aimd, TokioClock);
/// let seat = api.bulkhead().acquire_within(Duration::from_millis(10)).await.unwrap();
/// let seat = api.track(seat).unwrap();
/// tokio::time::sleep(Duration::from_millis(3)).await; // the call
/// seat.record(CallOutcome::Success);
/// assert_eq!(api.limit(), 2);
/// # });
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioClock;

impl Clock for TokioClock {
    fn now_nanos(&self) -> u64 {
        static EPOCH: OnceLock<tokio::time::Instant> = OnceLock::new();
        let epoch = *EPOCH.get_or_init(tokio::time::Instant::now);
        u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}
