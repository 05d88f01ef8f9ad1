//! Waiting time per acquire, for group d: a cheap clock and a fixed-size
//! histogram that each benchmark thread fills without allocating or
//! sharing anything, merged after the window.
//!
//! The clock is the CPU's time-stamp counter on x86-64 (about 13 ns a read
//! on the benchmark VM, against about 36 ns for `Instant::now`), scaled to
//! nanoseconds once against `Instant`; other targets use `Instant`. Two
//! reads per operation are the whole cost; every contender pays it alike.

use std::time::{Duration, Instant};

/// A point in time, in clock ticks.
#[derive(Debug, Clone, Copy)]
pub struct Tick(u64);

/// Reads the clock.
#[inline(always)]
pub fn now() -> Tick {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` has no preconditions; every x86-64 CPU has it.
        Tick(unsafe { core::arch::x86_64::_rdtsc() })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        use std::sync::OnceLock;
        static EPOCH: OnceLock<Instant> = OnceLock::new();
        Tick(EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64)
    }
}

impl Tick {
    /// Ticks from `earlier` to `self`; 0 if the clock went backwards (a
    /// thread that moved to a core whose counter lags).
    #[inline(always)]
    pub fn since(self, earlier: Tick) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

/// Nanoseconds per tick, measured once against `Instant` over 20 ms.
pub fn ns_per_tick() -> f64 {
    use std::sync::OnceLock;
    static SCALE: OnceLock<f64> = OnceLock::new();
    *SCALE.get_or_init(|| {
        let (t0, i0) = (now(), Instant::now());
        std::thread::sleep(Duration::from_millis(20));
        let (t1, i1) = (now(), Instant::now());
        (i1 - i0).as_nanos() as f64 / t1.since(t0).max(1) as f64
    })
}

/// Sub-buckets per power of two: 16, so a bucket is within 1/16 (6 %) of
/// any value in it.
const SUB_BITS: u32 = 4;
const SUB: usize = 1 << SUB_BITS;
const BUCKETS: usize = (64 - SUB_BITS as usize + 1) * SUB;

/// A log-linear histogram of durations in ticks: exact below 16 ticks,
/// within 6 % above. Fixed size (8 KiB), so recording never allocates.
#[derive(Clone)]
pub struct WaitHistogram {
    counts: Box<[u64; BUCKETS]>,
    max: u64,
    total: u64,
}

impl std::fmt::Debug for WaitHistogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitHistogram")
            .field("total", &self.total)
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

impl Default for WaitHistogram {
    fn default() -> Self {
        Self::new()
    }
}

/// The bucket of `v`.
fn bucket(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let exp = 63 - v.leading_zeros(); // >= SUB_BITS
    let sub = ((v >> (exp - SUB_BITS)) as usize) & (SUB - 1);
    (exp - SUB_BITS + 1) as usize * SUB + sub
}

/// The smallest value in bucket `i`.
fn bucket_floor(i: usize) -> u64 {
    if i < SUB {
        return i as u64;
    }
    let exp = (i / SUB) as u32 + SUB_BITS - 1;
    let sub = (i % SUB) as u64;
    (1 << exp) | (sub << (exp - SUB_BITS))
}

impl WaitHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Self {
            counts: Box::new([0; BUCKETS]),
            max: 0,
            total: 0,
        }
    }

    /// Records one wait of `ticks`.
    #[inline(always)]
    pub fn record(&mut self, ticks: u64) {
        self.counts[bucket(ticks)] += 1;
        self.max = self.max.max(ticks);
        self.total += 1;
    }

    /// Adds `other`'s waits to this one.
    pub fn merge(&mut self, other: &WaitHistogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        self.max = self.max.max(other.max);
        self.total += other.total;
    }

    /// Waits recorded.
    pub fn len(&self) -> u64 {
        self.total
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The `q` quantile (0.5 for the median), as the floor of its bucket.
    pub fn quantile(&self, q: f64) -> Duration {
        to_duration(self.quantile_ticks(q))
    }

    fn quantile_ticks(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((self.total as f64 * q).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return bucket_floor(i).min(self.max);
            }
        }
        self.max
    }

    /// The longest wait (exact).
    pub fn max(&self) -> Duration {
        to_duration(self.max)
    }

    /// p50, p99, p99.9 and max, in µs, for a table cell:
    /// `0.12 / 3.4 / 41.0 / 560`.
    pub fn summary_us(&self) -> String {
        let us = |d: Duration| d.as_nanos() as f64 / 1e3;
        format!(
            "{} / {} / {} / {}",
            fmt_us(us(self.quantile(0.5))),
            fmt_us(us(self.quantile(0.99))),
            fmt_us(us(self.quantile(0.999))),
            fmt_us(us(self.max()))
        )
    }
}

fn to_duration(ticks: u64) -> Duration {
    Duration::from_nanos((ticks as f64 * ns_per_tick()) as u64)
}

/// Three significant digits, no exponent.
fn fmt_us(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotonic_and_tight() {
        let mut last = 0;
        for v in (0..100_000u64).chain([u64::MAX / 3, u64::MAX]) {
            let b = bucket(v);
            assert!(b >= last, "bucket order at {v}");
            last = b;
            let floor = bucket_floor(b);
            assert!(floor <= v, "floor {floor} above {v}");
            assert!(v - floor <= v / SUB as u64, "bucket of {v} too wide");
        }
        assert!(bucket(u64::MAX) < BUCKETS);
    }

    #[test]
    fn quantiles_of_a_known_distribution() {
        let mut h = WaitHistogram::new();
        for v in 1..=1000 {
            h.record(v);
        }
        let p50 = h.quantile_ticks(0.5);
        let p99 = h.quantile_ticks(0.99);
        assert!((470..=500).contains(&p50), "p50 {p50}");
        assert!((930..=990).contains(&p99), "p99 {p99}");
        assert_eq!(h.quantile_ticks(1.0), 1000.min(bucket_floor(bucket(1000))));
        let mut g = WaitHistogram::new();
        g.record(5000);
        g.merge(&h);
        assert_eq!((g.len(), g.max), (1001, 5000));
    }
}
