//! Adaptive limits: algorithms that move a compartment's `max_concurrent`
//! from the round-trip times and outcomes of the calls it admits.
//!
//! - [`Limit`] is the algorithm interface: feed it a [`Sample`], get the new
//!   limit back. [`Aimd`], [`Vegas`] and [`Gradient2`] implement it, and
//!   [`AnyLimit`] picks one of them at run time (from a configuration file,
//!   for instance).
//! - [`Controller`] feeds samples from many threads, tasks and interrupt
//!   handlers into one algorithm without ever waiting, and applies the
//!   result through [`Bulkhead::try_set_max_concurrent`](crate::Bulkhead::try_set_max_concurrent).
//! - [`Adaptive`] bundles a compartment, a controller and a [`Clock`], and
//!   hands out [`AdaptiveSeat`]s that time themselves.
//!
//! Core never reads a clock: samples carry durations, and [`Adaptive`] asks
//! the clock its adapter injected.
//!
//! # Integer arithmetic
//!
//! Everything is integer or fixed-point (16 fractional bits), so the
//! algorithms run unchanged on an FPU-less Cortex-M0. Ratios are
//! [`Fraction`]s; round-trip times are whole nanoseconds, saturated at
//! [`MAX_RTT`].

//!
//! # The feedback path
//!
//! Samples are added to an *open window* in the controller's atomics: a
//! relaxed saturating add to the round-trip sum (a compare-exchange loop:
//! a window has no bound on its samples, so a wrapping sum could make the
//! slowest window read as the fastest), a relaxed add to the sample count,
//! a relaxed load of the largest in-flight count (an RMW only when a sample beats
//! it), and a bit for a drop or timeout. That is all most samples do: no
//! flag, no division, no algorithm. The algorithm asks how many samples
//! a window holds ([`Limit::window`]: 1 for the plain algorithms,
//! `max(min_samples, limit)` for [`Windowed`]).
//!
//! The sampler whose add fills the window takes a *try-flag*, an atomic
//! byte taken with one compare-exchange, swaps the window's fields out,
//! feeds their aggregate (mean round trip, largest in-flight count, worst
//! outcome) to [`Limit::update_window`], and applies the new limit. A
//! sampler that finds the flag taken never waits: the window stays open
//! and full, with its sample in it, and the next sample closes it
//! (counted in [`Controller::skipped`]). So no sample is thrown away, and a
//! drop or timeout reaches the algorithm exactly once, with its window or
//! the next. An algorithm that takes every sample (a window of 1) tries the
//! flag first and, if no sample waits in the window, gets the sample as it
//! is.
//!
//! The new limit is applied with
//! [`Bulkhead::try_set_max_concurrent`](crate::Bulkhead::try_set_max_concurrent), which only *tries* the waiter-list
//! lock. If the lock is busy, the compartment keeps its old limit and the
//! next update retries: each update compares the algorithm's limit with
//! the compartment's, so a deferred change is never forgotten. Applying only
//! while holding the flag keeps changes in the order they were computed:
//! a slow sampler can never overwrite a newer limit with an older one.
//!
//! A deferred change cannot strand a waiter: a waiter exists only while
//! every seat is taken (the limit is at least 1), so some holder will give
//! its seat back, which hands the seat on as always and produces the next
//! sample.
//!
//! Nothing here takes a lock that can block, so recording is safe in
//! `Drop`, while unwinding, and in an interrupt handler: an interrupt that
//! samples while the code it interrupted holds the flag simply adds to
//! the window.

mod aimd;
mod controller;
mod gradient2;
mod vegas;
mod window;

use core::fmt;
use core::time::Duration;

pub use aimd::{Aimd, AimdParams};
pub use controller::{Adaptive, AdaptiveSeat, Clock, Controller, Recorded, Resize};
pub use gradient2::{Gradient2, Gradient2Params};
pub use vegas::{Vegas, VegasParams};
pub use window::Windowed;

/// The longest round-trip time a sample carries, about 18 minutes
/// (2^40 ns). Longer ones are saturated to it, which keeps every
/// fixed-point product in 64 bits.
pub const MAX_RTT: Duration = Duration::from_nanos(MAX_RTT_NANOS);
pub(crate) const MAX_RTT_NANOS: u64 = 1 << 40;

/// The largest bound an adaptive limit accepts: 2^26 − 1, the largest
/// `max_concurrent` on 32-bit targets
/// ([`MAX_CONCURRENT_LIMIT`](crate::MAX_CONCURRENT_LIMIT) there), on every
/// target, so that every limit an algorithm returns can be applied
/// everywhere.
pub const MAX_ADAPTIVE_LIMIT: usize = (1 << 26) - 1;
// Checked where it matters, in every build for every target.
const _: () = assert!(MAX_ADAPTIVE_LIMIT <= crate::MAX_CONCURRENT_LIMIT);

/// Fixed-point scale: 16 fractional bits.
pub(crate) const FRAC_BITS: u32 = 16;
pub(crate) const ONE_Q16: u64 = 1 << FRAC_BITS;
/// Added before a Q16 product is shifted back, to round to nearest rather
/// than down: 0.2 × 4 must add up to 0.8, not 0.79999.
pub(crate) const HALF_ULP: u64 = 1 << (FRAC_BITS - 1);

/// The whole limit in a Q16 limit: rounded down after adding 1/256, so
/// that a fraction such as 0.2, which 16 bits cannot hold exactly, never
/// turns an exact integer (20 + 10 × 0.2 × 4 = 28) into the one below.
pub(crate) const fn whole(limit_q16: u64) -> usize {
    ((limit_q16 + (ONE_Q16 >> 8)) >> FRAC_BITS) as usize
}

/// How a call that held a seat ended, as the dependency's health sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallOutcome {
    /// The dependency served the call (business errors included, if the
    /// caller says so).
    Success,
    /// The dependency refused or failed the call in a way that signals
    /// overload: an error, a panic, a 5xx, a rejection.
    Dropped,
    /// The call exceeded its own time budget.
    Timeout,
}

impl CallOutcome {
    /// Whether this outcome tells the algorithm to back off.
    pub const fn is_overload(self) -> bool {
        !matches!(self, CallOutcome::Success)
    }
}

/// One observation of one call.
///
/// ```
/// use core::time::Duration;
/// use bulkhead_core::limit::{CallOutcome, Sample};
///
/// let s = Sample::new(Duration::from_millis(12), 7, CallOutcome::Success);
/// assert_eq!(s.rtt_nanos, 12_000_000);
/// assert_eq!(s.in_flight, 7);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// Round-trip time, from getting the seat to giving it back, in
    /// nanoseconds, at most [`MAX_RTT`]. Zero is read as one nanosecond.
    pub rtt_nanos: u64,
    /// Seats held when the call started, counting the call itself.
    pub in_flight: usize,
    /// How the call ended.
    pub outcome: CallOutcome,
}

impl Sample {
    /// A sample of a call that took `rtt`; longer than [`MAX_RTT`] is
    /// saturated.
    pub const fn new(rtt: Duration, in_flight: usize, outcome: CallOutcome) -> Self {
        let secs = rtt.as_secs();
        // Saturate before multiplying: 2^40 ns is about 1100 s.
        let nanos = if secs >= MAX_RTT_NANOS / 1_000_000_000 {
            MAX_RTT_NANOS
        } else {
            secs * 1_000_000_000 + rtt.subsec_nanos() as u64
        };
        Self::from_nanos(nanos, in_flight, outcome)
    }

    /// A sample of a call that took `rtt_nanos` nanoseconds.
    pub const fn from_nanos(rtt_nanos: u64, in_flight: usize, outcome: CallOutcome) -> Self {
        let rtt_nanos = if rtt_nanos == 0 {
            1
        } else if rtt_nanos > MAX_RTT_NANOS {
            MAX_RTT_NANOS
        } else {
            rtt_nanos
        };
        Self {
            rtt_nanos,
            in_flight,
            outcome,
        }
    }

    /// The round-trip time, clamped to `1..=MAX_RTT` nanoseconds even if
    /// the public field was set by hand.
    pub(crate) const fn rtt(&self) -> u64 {
        if self.rtt_nanos == 0 {
            1
        } else if self.rtt_nanos > MAX_RTT_NANOS {
            MAX_RTT_NANOS
        } else {
            self.rtt_nanos
        }
    }
}

/// An adaptive limit algorithm: takes samples, returns the new limit.
///
/// Implementations are plain state machines with no interior mutability
/// and no clock; [`Controller`] serialises the calls. The returned limit
/// must stay within the algorithm's own bounds, and at least 1, so that a
/// compartment always admits someone whose release can produce the next
/// sample; and a drop or a timeout must never raise it. [`Aimd`],
/// [`Vegas`], [`Gradient2`], [`AnyLimit`] and [`Windowed`] keep both
/// rules from every state.
///
/// ```
/// use core::time::Duration;
/// use bulkhead_core::limit::{Aimd, AimdParams, CallOutcome, Limit, Sample};
///
/// let mut aimd = Aimd::new(AimdParams { initial: 10, min: 1, max: 100, ..AimdParams::DEFAULT })?;
/// let ok = Sample::new(Duration::from_millis(5), 10, CallOutcome::Success);
/// assert_eq!(aimd.update(&ok), 11); // additive increase
/// let dropped = Sample { outcome: CallOutcome::Dropped, ..ok };
/// assert_eq!(aimd.update(&dropped), 9); // multiplicative decrease: floor(0.9 × 11)
/// # Ok::<(), bulkhead_core::limit::LimitError>(())
/// ```
pub trait Limit {
    /// The current limit.
    fn limit(&self) -> usize;

    /// Feeds one sample; returns the new limit.
    fn update(&mut self, sample: &Sample) -> usize;

    /// How many samples [`Controller`] adds up, without taking its flag,
    /// before it feeds their aggregate to
    /// [`update_window`](Self::update_window). The default, 1, feeds every
    /// sample; [`Windowed`] asks for about a round trip's worth.
    fn window(&self) -> usize {
        1
    }

    /// Feeds the aggregate of a window of samples: their mean round trip,
    /// their largest in-flight count and their worst outcome (a drop over a
    /// timeout over a success). The default feeds it as one sample.
    fn update_window(&mut self, aggregate: &Sample) -> usize {
        self.update(aggregate)
    }
}

impl<T: Limit + ?Sized> Limit for &mut T {
    fn limit(&self) -> usize {
        (**self).limit()
    }
    fn update(&mut self, sample: &Sample) -> usize {
        (**self).update(sample)
    }
    fn window(&self) -> usize {
        (**self).window()
    }
    fn update_window(&mut self, aggregate: &Sample) -> usize {
        (**self).update_window(aggregate)
    }
}

/// A ratio in `[0, 65536)` with 16 fractional bits: `0.9` is
/// `Fraction::per_mille(900)`. Integer-only, for FPU-less targets.
///
/// ```
/// use bulkhead_core::limit::Fraction;
/// assert_eq!(Fraction::per_mille(500), Fraction::new(1, 2));
/// assert_eq!(Fraction::new(3, 2).to_q16(), 98_304);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Fraction(u32);

impl Fraction {
    /// Exactly 1.
    pub const ONE: Fraction = Fraction(1 << FRAC_BITS);

    /// `numer / denom`, rounded down to a multiple of 2^-16. A zero
    /// denominator or a ratio of 65536 or more saturates to the largest
    /// fraction; bounds are checked where the fraction is used.
    pub const fn new(numer: u32, denom: u32) -> Self {
        if denom == 0 {
            return Fraction(u32::MAX);
        }
        let q = ((numer as u64) << FRAC_BITS) / denom as u64;
        Fraction(if q > u32::MAX as u64 {
            u32::MAX
        } else {
            q as u32
        })
    }

    /// `n / 1000`.
    pub const fn per_mille(n: u32) -> Self {
        Self::new(n, 1000)
    }

    /// The raw value, in units of 2^-16.
    pub const fn to_q16(self) -> u32 {
        self.0
    }

    /// From a raw value in units of 2^-16.
    pub const fn from_q16(q16: u32) -> Self {
        Fraction(q16)
    }

    pub(crate) const fn q16(self) -> u64 {
        self.0 as u64
    }
}

impl fmt::Display for Fraction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Three decimals, without floating point.
        let milli = (self.q16() * 1000 + ONE_Q16 / 2) >> FRAC_BITS;
        write!(f, "{}.{:03}", milli / 1000, milli % 1000)
    }
}

/// Why an algorithm's parameters were refused.
///
/// ```
/// use bulkhead_core::limit::{Aimd, AimdParams, LimitError};
/// let err = Aimd::new(AimdParams { min: 50, max: 10, ..AimdParams::DEFAULT }).unwrap_err();
/// assert_eq!(err, LimitError::Bounds { min: 50, max: 10 });
/// assert!(err.to_string().contains("min = 50"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LimitError {
    /// `min` is 0, above `max`, or `max` is above [`MAX_ADAPTIVE_LIMIT`].
    Bounds {
        /// The lower bound asked for.
        min: usize,
        /// The upper bound asked for.
        max: usize,
    },
    /// `initial` lies outside `[min, max]`.
    Initial {
        /// The starting limit asked for.
        initial: usize,
        /// The lower bound.
        min: usize,
        /// The upper bound.
        max: usize,
    },
    /// A ratio parameter lies outside its range.
    Ratio {
        /// The parameter's name, as in the params struct.
        parameter: &'static str,
        /// The value asked for.
        value: Fraction,
        /// Its smallest accepted value.
        low: Fraction,
        /// Its largest accepted value.
        high: Fraction,
    },
    /// Two parameters that must be in order are not: `low ≤ high` is
    /// required.
    Order {
        /// The parameter that must be the smaller, as in the params struct.
        low_parameter: &'static str,
        /// Its value.
        low: u32,
        /// The parameter that must be the larger.
        high_parameter: &'static str,
        /// Its value.
        high: u32,
    },
    /// A count or duration parameter is zero.
    Zero {
        /// The parameter's name, as in the params struct.
        parameter: &'static str,
    },
}

impl fmt::Display for LimitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            LimitError::Bounds { min, max } => write!(
                f,
                "adaptive limit bounds min = {min}, max = {max} are invalid; \
                 choose 1 <= min <= max <= {MAX_ADAPTIVE_LIMIT}"
            ),
            LimitError::Initial { initial, min, max } => write!(
                f,
                "adaptive limit initial = {initial} lies outside [min = {min}, max = {max}]; \
                 choose a starting limit within the bounds"
            ),
            LimitError::Ratio {
                parameter,
                value,
                low,
                high,
            } => write!(
                f,
                "adaptive limit parameter {parameter} = {value} is out of range; \
                 choose a value in [{low}, {high}]"
            ),
            LimitError::Order {
                low_parameter,
                low,
                high_parameter,
                high,
            } => write!(
                f,
                "adaptive limit parameters {low_parameter} = {low} and {high_parameter} = {high} \
                 are out of order; choose {low_parameter} <= {high_parameter}"
            ),
            LimitError::Zero { parameter } => write!(
                f,
                "adaptive limit parameter {parameter} is 0; give it a positive value"
            ),
        }
    }
}

impl core::error::Error for LimitError {}

/// The limit bounds every algorithm shares, validated once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bounds {
    pub(crate) min: usize,
    pub(crate) max: usize,
}

impl Bounds {
    pub(crate) const fn new(initial: usize, min: usize, max: usize) -> Result<Self, LimitError> {
        if min == 0 || min > max || max > MAX_ADAPTIVE_LIMIT {
            return Err(LimitError::Bounds { min, max });
        }
        if initial < min || initial > max {
            return Err(LimitError::Initial { initial, min, max });
        }
        Ok(Self { min, max })
    }

    /// Clamps a Q16 limit into the bounds.
    pub(crate) const fn clamp_q16(self, limit_q16: u64) -> u64 {
        let lo = (self.min as u64) << FRAC_BITS;
        let hi = (self.max as u64) << FRAC_BITS;
        if limit_q16 < lo {
            lo
        } else if limit_q16 > hi {
            hi
        } else {
            limit_q16
        }
    }
}

/// Checks that `value` lies in `[low, high]`.
pub(crate) const fn check_ratio(
    parameter: &'static str,
    value: Fraction,
    low: Fraction,
    high: Fraction,
) -> Result<(), LimitError> {
    if value.0 < low.0 || value.0 > high.0 {
        Err(LimitError::Ratio {
            parameter,
            value,
            low,
            high,
        })
    } else {
        Ok(())
    }
}

/// Checks a smoothing factor: in `(0, 1]`.
pub(crate) const fn check_smoothing(value: Fraction) -> Result<(), LimitError> {
    check_ratio("smoothing", value, Fraction::from_q16(1), Fraction::ONE)
}

/// Moves a Q16 limit part of the way to `target`:
/// `limit + smoothing × (target − limit)`, rounded to nearest.
pub(crate) const fn smooth(limit_q16: u64, target_q16: u64, smoothing_q16: u64) -> u64 {
    if target_q16 >= limit_q16 {
        limit_q16 + (((target_q16 - limit_q16) * smoothing_q16 + HALF_ULP) >> FRAC_BITS)
    } else {
        limit_q16 - (((limit_q16 - target_q16) * smoothing_q16 + HALF_ULP) >> FRAC_BITS)
    }
}

/// `max(1, floor(log10(n)))`, the step size Vegas and Gradient2's queue
/// allowance scale with.
pub(crate) const fn log10_step(n: usize) -> usize {
    let mut n = n / 10;
    let mut f = 0;
    while n > 0 {
        n /= 10;
        f += 1;
    }
    if f == 0 { 1 } else { f }
}

/// One of the three algorithms, chosen at run time, for configuration
/// files and registries. No allocation, no dynamic dispatch.
///
/// ```
/// use bulkhead_core::limit::{AnyLimit, Gradient2, Gradient2Params, Limit};
/// let limit = AnyLimit::from(Gradient2::new(Gradient2Params { min: 4, max: 200, ..Gradient2Params::DEFAULT })?);
/// assert_eq!(limit.limit(), 20);
/// assert_eq!(limit.algorithm(), "gradient2");
/// # Ok::<(), bulkhead_core::limit::LimitError>(())
/// ```
#[derive(Debug, Clone)]
pub enum AnyLimit {
    /// Additive increase, multiplicative decrease.
    Aimd(Aimd),
    /// Delay-based, from TCP Vegas.
    Vegas(Vegas),
    /// Gradient of long-term over short-term round-trip time.
    Gradient2(Gradient2),
}

impl AnyLimit {
    /// The algorithm's name as configuration files spell it: `"aimd"`,
    /// `"vegas"` or `"gradient2"`.
    pub const fn algorithm(&self) -> &'static str {
        match self {
            AnyLimit::Aimd(_) => "aimd",
            AnyLimit::Vegas(_) => "vegas",
            AnyLimit::Gradient2(_) => "gradient2",
        }
    }
}

impl Limit for AnyLimit {
    fn limit(&self) -> usize {
        match self {
            AnyLimit::Aimd(l) => l.limit(),
            AnyLimit::Vegas(l) => l.limit(),
            AnyLimit::Gradient2(l) => l.limit(),
        }
    }

    fn update(&mut self, sample: &Sample) -> usize {
        match self {
            AnyLimit::Aimd(l) => l.update(sample),
            AnyLimit::Vegas(l) => l.update(sample),
            AnyLimit::Gradient2(l) => l.update(sample),
        }
    }
}

impl From<Aimd> for AnyLimit {
    fn from(l: Aimd) -> Self {
        AnyLimit::Aimd(l)
    }
}
impl From<Vegas> for AnyLimit {
    fn from(l: Vegas) -> Self {
        AnyLimit::Vegas(l)
    }
}
impl From<Gradient2> for AnyLimit {
    fn from(l: Gradient2) -> Self {
        AnyLimit::Gradient2(l)
    }
}

#[cfg(test)]
#[allow(clippy::std_instead_of_core)]
mod tests;
#[cfg(test)]
#[allow(clippy::std_instead_of_core)]
mod tests_mutants;
#[cfg(test)]
#[allow(clippy::std_instead_of_core)]
mod tests_overload;
#[cfg(test)]
#[allow(clippy::std_instead_of_core)]
mod tests_vegas;
#[cfg(test)]
#[allow(clippy::std_instead_of_core)]
mod tests_window;
