//! [`Windowed`]: one update per round of samples instead of per sample.

use super::{CallOutcome, Limit, Sample};

/// Feeds the inner algorithm one aggregate sample per *window* instead of
/// every sample.
///
/// A window closes after `max(min_samples, limit)` samples: about one
/// round trip's worth of calls when the compartment is busy (each seat
/// gives back one sample per round trip), so the algorithm moves about
/// once per round trip, as TCP does, whatever the call rate. Updating on
/// every sample at thousands of calls per second lets the limit run far
/// ahead of the latency it causes, which arrives one round trip later;
/// see the simulation in the examples' `BENCHMARKS.md`.
///
/// The aggregate carries the window's mean round trip, its largest
/// in-flight count, and its worst outcome (a drop over a timeout over a
/// success), so one drop in a window still backs off. No clock is needed.
///
/// ```
/// use core::time::Duration;
/// use bulkhead_core::limit::{Aimd, AimdParams, CallOutcome, Limit, Sample, Windowed};
///
/// let aimd = Aimd::new(AimdParams { initial: 4, min: 1, ..AimdParams::DEFAULT })?;
/// let mut windowed = Windowed::new(aimd, 4);
/// let ok = Sample::new(Duration::from_millis(2), 4, CallOutcome::Success);
/// for _ in 0..3 {
///     assert_eq!(windowed.update(&ok), 4); // window still open
/// }
/// assert_eq!(windowed.update(&ok), 5); // the fourth sample closes it: + 1
/// # Ok::<(), bulkhead_core::limit::LimitError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Windowed<A> {
    inner: A,
    min_samples: u32,
    count: u32,
    rtt_sum: u64,
    max_in_flight: usize,
    worst: CallOutcome,
}

impl<A: Limit> Windowed<A> {
    /// Wraps `inner`; a window holds at least `min_samples` samples (0 is
    /// read as 1, which forwards every sample).
    pub const fn new(inner: A, min_samples: u32) -> Self {
        Self {
            inner,
            min_samples: if min_samples == 0 { 1 } else { min_samples },
            count: 0,
            rtt_sum: 0,
            max_in_flight: 0,
            worst: CallOutcome::Success,
        }
    }

    /// The wrapped algorithm.
    pub const fn inner(&self) -> &A {
        &self.inner
    }

    /// The smallest window, in samples.
    pub const fn min_samples(&self) -> u32 {
        self.min_samples
    }
}

const fn severity(outcome: CallOutcome) -> u8 {
    match outcome {
        CallOutcome::Success => 0,
        CallOutcome::Timeout => 1,
        CallOutcome::Dropped => 2,
    }
}

impl<A: Limit> Limit for Windowed<A> {
    fn limit(&self) -> usize {
        self.inner.limit()
    }

    fn update(&mut self, sample: &Sample) -> usize {
        self.count += 1;
        self.rtt_sum = self.rtt_sum.saturating_add(sample.rtt());
        self.max_in_flight = self.max_in_flight.max(sample.in_flight);
        if severity(sample.outcome) > severity(self.worst) {
            self.worst = sample.outcome;
        }
        let size = self.inner.limit().max(self.min_samples as usize);
        if (self.count as usize) < size {
            return self.inner.limit();
        }
        let aggregate = Sample::from_nanos(
            self.rtt_sum / self.count as u64,
            self.max_in_flight,
            self.worst,
        );
        self.count = 0;
        self.rtt_sum = 0;
        self.max_in_flight = 0;
        self.worst = CallOutcome::Success;
        self.inner.update(&aggregate)
    }

    /// `max(min_samples, limit)`: under a [`Controller`](super::Controller)
    /// the window is kept in the controller's atomics, and only the
    /// sampler that fills it takes the flag.
    fn window(&self) -> usize {
        self.inner.limit().max(self.min_samples as usize)
    }

    /// Forwards a window the controller aggregated to the inner algorithm
    /// as it is. Samples fed through [`update`](Limit::update) meanwhile
    /// stay in this type's own window.
    fn update_window(&mut self, aggregate: &Sample) -> usize {
        self.inner.update(aggregate)
    }
}
