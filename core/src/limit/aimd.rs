//! [`Aimd`]: additive increase, multiplicative decrease.

use core::time::Duration;

use super::{Bounds, CallOutcome, FRAC_BITS, Fraction, Limit, LimitError, Sample, check_ratio};

/// [`Aimd`]'s parameters. Start from [`AimdParams::DEFAULT`] and override
/// fields with struct update syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AimdParams {
    /// The limit before the first sample. Default 20.
    pub initial: usize,
    /// The lowest limit. Default 20.
    pub min: usize,
    /// The highest limit. Default 200.
    pub max: usize,
    /// The factor applied on a drop, in `[0.5, 1)`. Default 0.9.
    pub backoff: Fraction,
    /// A successful call slower than this counts as a drop. Default 5 s.
    pub timeout: Duration,
}

impl AimdParams {
    /// The defaults of the established implementations: 20 / 20 / 200,
    /// backoff 0.9, timeout 5 s.
    pub const DEFAULT: AimdParams = AimdParams {
        initial: 20,
        min: 20,
        max: 200,
        backoff: Fraction::per_mille(900),
        timeout: Duration::from_secs(5),
    };
}

impl Default for AimdParams {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Additive increase, multiplicative decrease, as TCP Reno does it.
///
/// - A drop, a timeout, or a round trip slower than
///   [`timeout`](AimdParams::timeout): `limit = floor(backoff × limit)`.
/// - Otherwise, if the compartment is at least half used
///   (`2 × in_flight ≥ limit`): `limit + 1`. A compartment that is mostly
///   idle learns nothing about its dependency's capacity, so it holds.
/// - The result is clamped to `[min, max]`.
///
/// AIMD is blind to latency below the timeout: it finds the limit where
/// the dependency starts failing, not where it starts queueing. Use
/// [`Vegas`](super::Vegas) or [`Gradient2`](super::Gradient2) when latency
/// matters.
///
/// ```
/// use core::time::Duration;
/// use bulkhead_core::limit::{Aimd, AimdParams, CallOutcome, Limit, Sample};
///
/// let mut aimd = Aimd::new(AimdParams::DEFAULT)?;
/// let busy = Sample::new(Duration::from_millis(3), 20, CallOutcome::Success);
/// assert_eq!(aimd.update(&busy), 21);
/// let idle = Sample::new(Duration::from_millis(3), 2, CallOutcome::Success);
/// assert_eq!(aimd.update(&idle), 21); // app-limited: no evidence, no change
/// let slow = Sample::new(Duration::from_secs(6), 21, CallOutcome::Success);
/// assert_eq!(aimd.update(&slow), 20); // slower than the timeout: floor(0.9 × 21) = 18, clamped to min 20
/// # Ok::<(), bulkhead_core::limit::LimitError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Aimd {
    bounds: Bounds,
    backoff_q16: u64,
    timeout_nanos: u64,
    limit: usize,
}

impl Aimd {
    /// An AIMD limit with `params`.
    ///
    /// # Errors
    /// [`LimitError`] for bounds out of order, `initial` outside them, a
    /// backoff outside `[0.5, 1)`, or a zero timeout.
    pub const fn new(params: AimdParams) -> Result<Self, LimitError> {
        let bounds = match Bounds::new(params.initial, params.min, params.max) {
            Ok(b) => b,
            Err(e) => return Err(e),
        };
        // `[0.5, 1)`: 1 would never back off.
        let below_one = Fraction::from_q16(Fraction::ONE.to_q16() - 1);
        if let Err(e) = check_ratio("backoff", params.backoff, Fraction::new(1, 2), below_one) {
            return Err(e);
        }
        if params.timeout.is_zero() {
            return Err(LimitError::Zero {
                parameter: "timeout",
            });
        }
        let timeout = super::Sample::new(params.timeout, 0, CallOutcome::Success).rtt();
        Ok(Self {
            bounds,
            backoff_q16: params.backoff.q16(),
            timeout_nanos: timeout,
            limit: params.initial,
        })
    }
}

impl Limit for Aimd {
    fn limit(&self) -> usize {
        self.limit
    }

    fn update(&mut self, sample: &Sample) -> usize {
        let limit = self.limit;
        let next = if sample.outcome.is_overload() || sample.rtt() > self.timeout_nanos {
            // `+ limit` undoes the rounding-down of the 16-bit fraction
            // (at most 2^-16 per unit), so floor(0.9 × 10) is 9, not 8.
            ((limit as u64 * self.backoff_q16 + limit as u64) >> FRAC_BITS) as usize
        } else if sample.in_flight.saturating_mul(2) >= limit {
            limit + 1
        } else {
            limit
        };
        self.limit = next.clamp(self.bounds.min, self.bounds.max);
        self.limit
    }
}
