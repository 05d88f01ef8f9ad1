//! [`Vegas`]: the delay-based limit of TCP Vegas.

use super::{Bounds, FRAC_BITS, Fraction, Limit, LimitError, ONE_Q16, Sample, log10_step};

/// [`Vegas`]' parameters. Start from [`VegasParams::DEFAULT`] and override
/// fields with struct update syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VegasParams {
    /// The limit before the first sample. Default 20.
    pub initial: usize,
    /// The lowest limit. Default 1.
    pub min: usize,
    /// The highest limit. Default 1000.
    pub max: usize,
    /// How far each update moves towards its target, in `(0, 1]`.
    /// Default 1 (no smoothing).
    pub smoothing: Fraction,
    /// The no-load round-trip time is re-measured after about
    /// `probe_multiplier × limit` samples (jittered by a factor in
    /// `[0.5, 1)`), so that a stale minimum cannot pin the limit down.
    /// Default 30.
    pub probe_multiplier: u32,
}

impl VegasParams {
    /// The defaults of the established implementations: initial 20, bounds
    /// 1 / 1000, smoothing 1, probe multiplier 30.
    pub const DEFAULT: VegasParams = VegasParams {
        initial: 20,
        min: 1,
        max: 1000,
        smoothing: Fraction::ONE,
        probe_multiplier: 30,
    };
}

impl Default for VegasParams {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The delay-based limit of TCP Vegas.
///
/// Vegas keeps `rtt_noload`, the lowest round-trip time seen, and
/// estimates how many calls are queueing at the dependency:
/// `queue = ceil(limit × (1 − rtt_noload / rtt))`. With
/// `f = max(1, floor(log10(limit)))`:
///
/// | condition | new limit |
/// |---|---|
/// | drop or timeout | `limit − f` |
/// | less than half the seats in use | unchanged |
/// | `queue ≤ f` | `limit + 6f` |
/// | `queue < 3f` | `limit + f` |
/// | `queue > 6f` | `limit − f` |
/// | otherwise | unchanged |
///
/// The result is clamped to `[min, max]` and smoothed:
/// `limit += smoothing × (new − limit)`. A sample faster than `rtt_noload`
/// only lowers `rtt_noload`; a periodic probe resets it to the current
/// round-trip time. The probe's jitter comes from a small deterministic
/// generator, not from a clock.
///
/// ```
/// use core::time::Duration;
/// use bulkhead_core::limit::{CallOutcome, Limit, Sample, Vegas, VegasParams};
///
/// let mut vegas = Vegas::new(VegasParams::DEFAULT)?;
/// let ms = |n| Sample::new(Duration::from_millis(n), 20, CallOutcome::Success);
/// assert_eq!(vegas.update(&ms(10)), 20); // first sample: sets rtt_noload only
/// assert_eq!(vegas.update(&ms(10)), 26); // no queue: + 6f, f = 1
/// assert_eq!(vegas.update(&ms(40)), 25); // queue = ceil(26 × 0.75) = 20 > 6f: − f
/// # Ok::<(), bulkhead_core::limit::LimitError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Vegas {
    bounds: Bounds,
    smoothing_q16: u64,
    probe_multiplier: u64,
    limit_q16: u64,
    /// 0 until the first sample.
    rtt_noload: u64,
    samples_since_probe: u64,
    /// Jitter for the next probe, in `[0.5, 1)` as Q16.
    probe_jitter_q16: u64,
    rng: u32,
}

impl Vegas {
    /// A Vegas limit with `params`.
    ///
    /// # Errors
    /// [`LimitError`] for bounds out of order, `initial` outside them,
    /// smoothing outside `(0, 1]`, or a zero probe multiplier.
    pub const fn new(params: VegasParams) -> Result<Self, LimitError> {
        let bounds = match Bounds::new(params.initial, params.min, params.max) {
            Ok(b) => b,
            Err(e) => return Err(e),
        };
        if let Err(e) = super::check_smoothing(params.smoothing) {
            return Err(e);
        }
        if params.probe_multiplier == 0 {
            return Err(LimitError::Zero {
                parameter: "probe_multiplier",
            });
        }
        let mut vegas = Self {
            bounds,
            smoothing_q16: params.smoothing.q16(),
            probe_multiplier: params.probe_multiplier as u64,
            limit_q16: (params.initial as u64) << FRAC_BITS,
            rtt_noload: 0,
            samples_since_probe: 0,
            probe_jitter_q16: 0,
            rng: 0x9E37_79B9,
        };
        vegas.next_jitter();
        Ok(vegas)
    }

    /// The lowest round-trip time seen since the last probe, in
    /// nanoseconds; 0 before the first sample.
    pub const fn rtt_noload_nanos(&self) -> u64 {
        self.rtt_noload
    }

    /// Draws the next probe's jitter in `[0.5, 1)` (xorshift32).
    const fn next_jitter(&mut self) {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.rng = x;
        self.probe_jitter_q16 = ONE_Q16 / 2 + (x as u64 & (ONE_Q16 / 2 - 1));
    }

    fn probe_due(&self) -> bool {
        let limit = super::whole(self.limit_q16) as u64;
        let threshold = self
            .probe_jitter_q16
            .saturating_mul(self.probe_multiplier)
            .saturating_mul(limit)
            >> FRAC_BITS;
        self.samples_since_probe >= threshold
    }
}

impl Limit for Vegas {
    fn limit(&self) -> usize {
        super::whole(self.limit_q16)
    }

    fn update(&mut self, sample: &Sample) -> usize {
        let rtt = sample.rtt();
        self.samples_since_probe += 1;
        if self.probe_due() {
            self.next_jitter();
            self.samples_since_probe = 0;
            self.rtt_noload = rtt;
            return self.limit();
        }
        if self.rtt_noload == 0 || rtt < self.rtt_noload {
            self.rtt_noload = rtt;
            return self.limit();
        }

        let limit = self.limit();
        let step = (log10_step(limit) as u64) << FRAC_BITS;
        let target = if sample.outcome.is_overload() {
            self.limit_q16.saturating_sub(step)
        } else if sample.in_flight.saturating_mul(2) < limit {
            return limit;
        } else {
            // queue = ceil(limit × (rtt − rtt_noload) / rtt); the ratio is
            // Q16, so the product is Q32.
            let share_q16 = ((rtt - self.rtt_noload) << FRAC_BITS) / rtt;
            let queue = (self.limit_q16 * share_q16).div_ceil(1 << (2 * FRAC_BITS));
            let f = step >> FRAC_BITS;
            if queue <= f {
                self.limit_q16 + 6 * step
            } else if queue < 3 * f {
                self.limit_q16 + step
            } else if queue > 6 * f {
                self.limit_q16.saturating_sub(step)
            } else {
                return limit;
            }
        };
        let target = self.bounds.clamp_q16(target);
        self.limit_q16 = super::smooth(self.limit_q16, target, self.smoothing_q16);
        self.limit()
    }
}
