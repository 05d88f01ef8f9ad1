//! Core's adaptive-limit [`Clock`] from embassy-time.

use bulkhead_core::limit::Clock;
use embassy_time::Instant;

/// Core's [`Clock`] from embassy-time's `Instant`, for adaptive
/// compartments in firmware: nanoseconds since boot, at the resolution of
/// the embassy-time tick.
///
/// ```
/// use bulkhead_embassy::{Bulkhead, EmbassyClock, raw::CriticalSectionRawMutex};
/// use bulkhead_embassy::limit::{Adaptive, Aimd, AimdParams};
///
/// static SENSOR: Adaptive<bulkhead_embassy::EmbassyLock<CriticalSectionRawMutex>, Aimd, EmbassyClock> =
///     Adaptive::new(
///         bulkhead_embassy::new_static("sensor", 4),
///         match Aimd::new(AimdParams { initial: 4, min: 1, max: 8, ..AimdParams::DEFAULT }) {
///             Ok(aimd) => aimd,
///             Err(_) => panic!("bad AIMD parameters"),
///         },
///         EmbassyClock,
///     );
/// let seat = SENSOR.try_acquire().unwrap();
/// drop(seat); // records a success, timed with embassy-time
/// # let _: &Bulkhead<CriticalSectionRawMutex> = SENSOR.bulkhead();
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct EmbassyClock;

impl Clock for EmbassyClock {
    #[inline]
    fn now_nanos(&self) -> u64 {
        Instant::now().as_micros().saturating_mul(1000)
    }
}
