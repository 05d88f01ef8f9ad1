//! [`Gradient2`]: the ratio of long-term to short-term round-trip time.

use super::{
    Bounds, FRAC_BITS, Fraction, HALF_ULP, Limit, LimitError, ONE_Q16, Sample, check_ratio,
};

/// [`Gradient2`]'s parameters. Start from [`Gradient2Params::DEFAULT`] and
/// override fields with struct update syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gradient2Params {
    /// The limit before the first sample. Default 20.
    pub initial: usize,
    /// The lowest limit. Default 20.
    pub min: usize,
    /// The highest limit. Default 200.
    pub max: usize,
    /// How much slower than the long-term average a round trip may be
    /// before the limit shrinks, in `[1, 16]`. Default 1.5.
    pub rtt_tolerance: Fraction,
    /// How far each update moves towards its target, in `(0, 1]`.
    /// Default 0.2.
    pub smoothing: Fraction,
    /// Calls allowed to queue at the dependency, added to every target:
    /// the probe that lets the limit grow. Default 4.
    pub queue_size: usize,
    /// The long-term average's window, in samples (its weight is
    /// `2 / (long_window + 1)`). Default 600.
    pub long_window: u32,
}

impl Gradient2Params {
    /// The defaults of the established implementation: 20 / 20 / 200,
    /// tolerance 1.5, smoothing 0.2, queue 4, window 600.
    pub const DEFAULT: Gradient2Params = Gradient2Params {
        initial: 20,
        min: 20,
        max: 200,
        rtt_tolerance: Fraction::new(3, 2),
        smoothing: Fraction::per_mille(200),
        queue_size: 4,
        long_window: 600,
    };
}

impl Default for Gradient2Params {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Samples averaged plainly before the long-term average switches to its
/// exponential weight, so that the first samples count fully.
const WARMUP: u32 = 10;

/// The limit as the gradient between long-term and current round-trip
/// time.
///
/// `long` is an exponential average of successful round trips (weight
/// `2 / (long_window + 1)`, a plain mean over the first 10). Per sample:
///
/// 1. If `long` is more than twice the current round trip, the load that
///    inflated it has gone: `long ×= 0.95`, so it recovers quickly.
/// 2. If fewer than half the seats are in use, the limit holds (no
///    evidence about capacity).
/// 3. `gradient = clamp(rtt_tolerance × long / rtt, 0.5, 1)`; a drop or a
///    timeout counts as the lowest gradient, 0.5.
/// 4. `limit += smoothing × (gradient × limit + queue_size − limit)`,
///    clamped to `[min, max]`. A drop or a timeout gets no `queue_size`
///    (the target is `0.5 × limit`), so it never raises the limit, also
///    below `2 × queue_size`.
///
/// Unlike the established implementation, drops and timeouts lower the
/// limit (there they are ignored, so a dependency that fails fast, or
/// always times out, never pushes the limit down), and their round-trip
/// times stay out of `long` (a fast failure would look like spare
/// capacity).
///
/// ```
/// use core::time::Duration;
/// use bulkhead_core::limit::{CallOutcome, Gradient2, Gradient2Params, Limit, Sample};
///
/// let mut g2 = Gradient2::new(Gradient2Params { min: 4, ..Gradient2Params::DEFAULT })?;
/// let ms = |n| Sample::new(Duration::from_millis(n), 20, CallOutcome::Success);
/// assert_eq!(g2.update(&ms(10)), 20); // 20 + 0.2 × 4 = 20.8
/// assert_eq!(g2.update(&ms(10)), 21); // 21.6
/// let usual = (0..20).map(|_| g2.update(&ms(10))).last().unwrap();
/// assert_eq!(usual, 37); // + 0.8 per sample while latency is steady
/// let slow = (0..20).map(|_| g2.update(&ms(100))).last().unwrap();
/// assert!(slow < 20, "ten times slower than usual: shrinks, got {slow}");
/// # Ok::<(), bulkhead_core::limit::LimitError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Gradient2 {
    bounds: Bounds,
    tolerance_q16: u64,
    smoothing_q16: u64,
    queue_q16: u64,
    long_window: u64,
    limit_q16: u64,
    /// Long-term average round trip, in nanoseconds × 2^16.
    long_q16: u64,
    warmup: u32,
}

impl Gradient2 {
    /// A Gradient2 limit with `params`.
    ///
    /// # Errors
    /// [`LimitError`] for bounds out of order, `initial` outside them, a
    /// tolerance outside `[1, 16]`, smoothing outside `(0, 1]`, or a zero
    /// window.
    pub const fn new(params: Gradient2Params) -> Result<Self, LimitError> {
        let bounds = match Bounds::new(params.initial, params.min, params.max) {
            Ok(b) => b,
            Err(e) => return Err(e),
        };
        if let Err(e) = check_ratio(
            "rtt_tolerance",
            params.rtt_tolerance,
            Fraction::ONE,
            Fraction::new(16, 1),
        ) {
            return Err(e);
        }
        if let Err(e) = super::check_smoothing(params.smoothing) {
            return Err(e);
        }
        if params.long_window == 0 {
            return Err(LimitError::Zero {
                parameter: "long_window",
            });
        }
        if params.queue_size > super::MAX_ADAPTIVE_LIMIT {
            return Err(LimitError::Bounds {
                min: params.queue_size,
                max: super::MAX_ADAPTIVE_LIMIT,
            });
        }
        Ok(Self {
            bounds,
            tolerance_q16: params.rtt_tolerance.q16(),
            smoothing_q16: params.smoothing.q16(),
            queue_q16: (params.queue_size as u64) << FRAC_BITS,
            long_window: params.long_window as u64,
            limit_q16: (params.initial as u64) << FRAC_BITS,
            long_q16: 0,
            warmup: 0,
        })
    }

    /// The long-term average round trip, in nanoseconds; 0 before the
    /// first successful sample.
    pub const fn long_rtt_nanos(&self) -> u64 {
        self.long_q16 >> FRAC_BITS
    }

    /// Folds a successful round trip into the long-term average.
    fn track_long(&mut self, rtt: u64) {
        let rtt_q16 = (rtt << FRAC_BITS) as i64;
        let long = self.long_q16 as i64;
        let delta = if self.warmup < WARMUP {
            // A plain running mean: the n-th sample weighs 1/n.
            self.warmup += 1;
            (rtt_q16 - long) / self.warmup as i64
        } else {
            (rtt_q16 - long) * 2 / (self.long_window as i64 + 1)
        };
        self.long_q16 = (long + delta) as u64;
        // Recovery after load: a long average more than twice the current
        // round trip belongs to load that has gone.
        if self.long_q16 > 2 * (rtt << FRAC_BITS) {
            self.long_q16 -= self.long_q16 / 20;
        }
    }
}

impl Limit for Gradient2 {
    fn limit(&self) -> usize {
        super::whole(self.limit_q16)
    }

    fn update(&mut self, sample: &Sample) -> usize {
        let rtt = sample.rtt();
        let overload = sample.outcome.is_overload();
        if !overload {
            self.track_long(rtt);
        }
        // Hold while less than half the seats are used: 2 × in_flight < limit.
        // Saturating: `Sample`'s fields are public, and a shift would drop
        // the high bits of a count of 2^47 or more and read it as 0.
        let in_flight_q16 = (sample.in_flight as u64).saturating_mul(2 << FRAC_BITS);
        if in_flight_q16 < self.limit_q16 {
            return self.limit();
        }
        let half = ONE_Q16 / 2;
        let gradient = if overload || self.long_q16 == 0 {
            half
        } else {
            ((self.tolerance_q16 * (self.long_q16 >> FRAC_BITS)) / rtt).clamp(half, ONE_Q16)
        };
        // The queue allowance is the probe that lets the limit grow; a drop
        // or a timeout gets none, so that it never raises the limit (with
        // it, `0.5 × limit + queue_size` is above any limit below twice the
        // queue).
        let queue = if overload { 0 } else { self.queue_q16 };
        let target = ((gradient * self.limit_q16 + HALF_ULP) >> FRAC_BITS) + queue;
        let smoothed = super::smooth(self.limit_q16, target, self.smoothing_q16);
        self.limit_q16 = self.bounds.clamp_q16(smoothed);
        self.limit()
    }
}
