//! [`Vegas`]: the delay-based limit of TCP Vegas.

use super::{
    Bounds, FRAC_BITS, Fraction, HALF_ULP, Limit, LimitError, ONE_Q16, Sample, log10_step,
};

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
    /// Grow by `beta × f` while at most `threshold × f` calls queue.
    /// Default 1.
    pub threshold: u32,
    /// Grow by `f` while fewer than `alpha × f` calls queue. Default 3.
    pub alpha: u32,
    /// Shrink by `f` while more than `beta × f` calls queue. Default 6.
    ///
    /// Vegas holds the limit while `alpha × f ..= beta × f` calls queue, so
    /// it settles about that many calls *above* the dependency's capacity
    /// (see the adaptive-limits guide). `threshold ≤ alpha ≤ beta`, and
    /// `beta ≥ 1`.
    pub beta: u32,
}

impl VegasParams {
    /// The defaults of the established implementations: initial 20, bounds
    /// 1 / 1000, smoothing 1, probe multiplier 30, queue thresholds 1 / 3 / 6.
    pub const DEFAULT: VegasParams = VegasParams {
        initial: 20,
        min: 1,
        max: 1000,
        smoothing: Fraction::ONE,
        probe_multiplier: 30,
        threshold: 1,
        alpha: 3,
        beta: 6,
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
/// `f = max(1, floor(log10(limit)))` and the defaults `threshold`,
/// `alpha`, `beta` = 1, 3, 6:
///
/// | condition | new limit |
/// |---|---|
/// | drop or timeout | `limit − f` |
/// | less than half the seats in use | unchanged |
/// | `queue ≤ threshold × f` | `limit + beta × f` |
/// | `queue < alpha × f` | `limit + f` |
/// | `queue > beta × f` | `limit − f` |
/// | otherwise | unchanged |
///
/// The result is clamped to `[min, max]` and smoothed:
/// `limit += smoothing × (new − limit)`. A sample faster than `rtt_noload`
/// only lowers `rtt_noload`.
///
/// # The probe
///
/// A baseline that only ever falls goes stale when the dependency gets
/// slower for good, and pins the limit down. So every
/// `jitter × probe_multiplier × limit` samples (jitter in `[0.5, 1)`, from
/// a small deterministic generator, not a clock) Vegas re-measures it. It
/// does so at low load: it lowers the limit to the calls its estimate says
/// are being served without queueing, `limit × rtt_noload / rtt`, less
/// `f`, so that our queue drains; ignores the samples of calls that
/// started with more seats in use than that; takes the round trip of the
/// first call that started with no more as the new baseline; and puts the
/// limit back. Re-measuring under load instead (resetting the baseline to
/// the current round trip) would take the queue's delay into the
/// baseline, and each probe would raise the limit a little more. If no
/// such call comes back within one round of the old limit's seats (a
/// dependency shared with other clients), the current round trip is
/// taken. A drop or timeout during the probe ends it with the old
/// baseline and backs off from the drained limit (the old limit is not put
/// back: no drop or timeout ever raises the limit).
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
    threshold: u64,
    alpha: u64,
    beta: u64,
    limit_q16: u64,
    /// 0 until the first sample.
    rtt_noload: u64,
    samples_since_probe: u64,
    /// Jitter for the next probe, in `[0.5, 1)` as Q16.
    probe_jitter_q16: u64,
    rng: u32,
    /// While a probe drains the queue: the limit to put back (Q16); 0
    /// otherwise.
    probe_restore_q16: u64,
    /// Samples ignored since the probe began.
    probe_ignored: u64,
}

impl Vegas {
    /// A Vegas limit with `params`.
    ///
    /// # Errors
    /// [`LimitError`] for bounds out of order, `initial` outside them,
    /// smoothing outside `(0, 1]`, a zero probe multiplier or `beta`, or
    /// queue thresholds out of order (`threshold ≤ alpha ≤ beta`).
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
        if params.beta == 0 {
            return Err(LimitError::Zero { parameter: "beta" });
        }
        if params.threshold > params.alpha {
            return Err(LimitError::Order {
                low_parameter: "threshold",
                low: params.threshold,
                high_parameter: "alpha",
                high: params.alpha,
            });
        }
        if params.alpha > params.beta {
            return Err(LimitError::Order {
                low_parameter: "alpha",
                low: params.alpha,
                high_parameter: "beta",
                high: params.beta,
            });
        }
        let mut vegas = Self {
            bounds,
            smoothing_q16: params.smoothing.q16(),
            probe_multiplier: params.probe_multiplier as u64,
            threshold: params.threshold as u64,
            alpha: params.alpha as u64,
            beta: params.beta as u64,
            limit_q16: (params.initial as u64) << FRAC_BITS,
            rtt_noload: 0,
            samples_since_probe: 0,
            probe_jitter_q16: 0,
            rng: 0x9E37_79B9,
            probe_restore_q16: 0,
            probe_ignored: 0,
        };
        vegas.next_jitter();
        Ok(vegas)
    }

    /// The lowest round-trip time seen since the last probe, in
    /// nanoseconds; 0 before the first sample.
    pub const fn rtt_noload_nanos(&self) -> u64 {
        self.rtt_noload
    }

    /// Whether a probe is draining the queue to re-measure the baseline.
    pub const fn probing(&self) -> bool {
        self.probe_restore_q16 != 0
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

    /// Starts a probe: lowers the limit so that our queue drains.
    fn start_probe(&mut self, sample: &Sample, rtt: u64) {
        self.next_jitter();
        self.samples_since_probe = 0;
        let limit = self.limit();
        // Calls served without queueing, by the current estimate:
        // limit × rtt_noload / rtt, with the ratio (at most 1) in Q16.
        let share_q16 = (self.rtt_noload << FRAC_BITS) / rtt;
        // Rounded to nearest: the Q16 ratio is rounded down.
        let served = ((limit as u64 * share_q16 + HALF_ULP) >> FRAC_BITS) as usize;
        let drain = served
            .saturating_sub(log10_step(limit))
            .max(self.bounds.min);
        if drain >= limit || sample.in_flight <= drain {
            // Nothing to drain, or this call already started with no
            // queue of ours: its round trip is the no-load one.
            self.rtt_noload = rtt;
            return;
        }
        self.probe_restore_q16 = self.limit_q16;
        self.probe_ignored = 0;
        self.limit_q16 = (drain as u64) << FRAC_BITS;
    }

    /// One sample during a probe; `true` if it ended the probe and should
    /// also be judged as a normal sample (a drop or timeout).
    fn probe_step(&mut self, sample: &Sample, rtt: u64) -> bool {
        let drain = self.limit();
        let restore = self.probe_restore_q16;
        if sample.outcome.is_overload() {
            // The probe ends at the drained limit, which the drop then
            // lowers: putting the old limit back first would raise it on
            // a drop.
            self.probe_restore_q16 = 0;
            return true;
        }
        self.probe_ignored += 1;
        // A call that started with at most `drain` seats in use had fewer
        // of our calls ahead of it than the dependency serves at once.
        if sample.in_flight <= drain || self.probe_ignored > super::whole(restore) as u64 {
            self.rtt_noload = rtt;
            self.limit_q16 = restore;
            self.probe_restore_q16 = 0;
        }
        false
    }
}

impl Limit for Vegas {
    fn limit(&self) -> usize {
        super::whole(self.limit_q16)
    }

    fn update(&mut self, sample: &Sample) -> usize {
        let rtt = sample.rtt();
        if self.probing() && !self.probe_step(sample, rtt) {
            return self.limit();
        }
        self.samples_since_probe += 1;
        if self.rtt_noload == 0 || rtt < self.rtt_noload {
            self.rtt_noload = rtt;
            return self.limit();
        }
        if !sample.outcome.is_overload() && self.probe_due() {
            self.start_probe(sample, rtt);
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
            if queue <= self.threshold * f {
                self.limit_q16 + self.beta * step
            } else if queue < self.alpha * f {
                self.limit_q16 + step
            } else if queue > self.beta * f {
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
