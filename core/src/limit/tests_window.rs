//! Windows: the controller's open window at its extremes, `Windowed`'s own
//! window fed directly, and what `AdaptiveSeat::ignore` records.

use core::time::Duration;

use super::*;
use crate::{Bulkhead, CsLock};
use std::vec::Vec;

fn aimd(initial: usize, min: usize, max: usize) -> Aimd {
    Aimd::new(AimdParams {
        initial,
        min,
        max,
        ..AimdParams::DEFAULT
    })
    .unwrap()
}

fn with(outcome: CallOutcome, rtt_ms: u64, in_flight: usize) -> Sample {
    Sample::new(Duration::from_millis(rtt_ms), in_flight, outcome)
}

/// A `Limit` that keeps every sample it is fed, at a fixed limit.
#[derive(Debug, Clone, Default)]
struct Recorder {
    limit: usize,
    fed: Vec<Sample>,
}

impl Recorder {
    fn new(limit: usize) -> Self {
        Self {
            limit,
            fed: Vec::new(),
        }
    }
}

impl Limit for Recorder {
    fn limit(&self) -> usize {
        self.limit
    }
    fn update(&mut self, sample: &Sample) -> usize {
        self.fed.push(*sample);
        self.limit
    }
}

/// 2^24 samples of `MAX_RTT` add up to exactly 2^64 ns: the open window's
/// sum must saturate there, not wrap to 0 and read as a 1 ns mean. 64-bit
/// only: a 32-bit sum saturates after the first such sample (at 2^32
/// units of 256 ns), and its mean reads far below the true one, as the
/// adaptive-limits guide says.
#[cfg(target_pointer_width = "64")]
#[test]
#[cfg_attr(miri, ignore = "2^24 samples: seconds natively, days under miri")]
fn controller_window_sum_saturates_instead_of_wrapping() {
    const N: u32 = 1 << 24;
    let b: Bulkhead<CsLock> = Bulkhead::new("db", 100).unwrap();
    let c = Controller::new(Windowed::new(aimd(100, 1, 200), N));
    let slowest = Sample::from_nanos(MAX_RTT_NANOS, 100, CallOutcome::Success);
    // The first sample learns the window size; the N-th closes it.
    assert_eq!(c.record(&b, &slowest), Recorded::Unchanged { limit: 100 });
    for _ in 2..N {
        c.record(&b, &slowest);
    }
    assert_eq!(
        c.record(&b, &slowest),
        Recorded::Changed { old: 100, new: 90 },
        "a window of 2^24 samples of MAX_RTT is slower than AIMD's timeout"
    );
}

/// The same window through a `Recorder`: the aggregate's mean round trip
/// is the saturated sum over the count, within a nanosecond of `MAX_RTT`.
#[cfg(target_pointer_width = "64")]
#[test]
#[cfg_attr(miri, ignore = "2^24 samples: seconds natively, days under miri")]
fn controller_saturated_window_reads_as_the_slowest_round_trip() {
    const N: u32 = 1 << 24;
    let b: Bulkhead<CsLock> = Bulkhead::new("db", 3).unwrap();
    let c = Controller::new(Windowed::new(Recorder::new(3), N));
    let slowest = Sample::from_nanos(MAX_RTT_NANOS, 3, CallOutcome::Success);
    for _ in 0..N {
        c.record(&b, &slowest);
    }
    let fed = c.try_inspect(|w| w.inner().fed.clone()).unwrap();
    assert_eq!(fed.len(), 1, "one window closed");
    // (2^64 - 1) / 2^24 = 2^40 - 1 (the sum saturated one below 2^64).
    assert_eq!(fed[0].rtt_nanos, MAX_RTT_NANOS - 1);
    assert_eq!(fed[0].in_flight, 3);
}

/// The open window's units: whole nanoseconds on 64-bit targets; on
/// narrower ones 256 ns units, each round trip rounded to nearest, and a
/// sum that saturates at 2^32 units.
#[test]
fn controller_window_mean_is_in_the_targets_units() {
    let mean_of = |rtts: [u64; 2]| {
        let b: Bulkhead<CsLock> = Bulkhead::new("db", 3).unwrap();
        let c = Controller::new(Windowed::new(Recorder::new(1), 2));
        for rtt in rtts {
            c.record(&b, &Sample::from_nanos(rtt, 3, CallOutcome::Success));
        }
        let fed = c.try_inspect(|w| w.inner().fed.clone()).unwrap();
        assert_eq!(fed.len(), 1);
        fed[0].rtt_nanos
    };
    if cfg!(target_pointer_width = "64") {
        assert_eq!(mean_of([1_000, 1_101]), 1_050);
        assert_eq!(mean_of([MAX_RTT_NANOS; 2]), MAX_RTT_NANOS);
    } else {
        // 1000 ns is 3.9 units and 1101 ns 4.3: 4 each, rounded.
        assert_eq!(mean_of([1_000, 1_101]), 1_024);
        // Each 2^32 units, clamped to 2^32 - 1; the sum saturates there.
        assert_eq!(mean_of([MAX_RTT_NANOS; 2]), ((1 << 32) - 1) / 2 * 256);
    }
}

/// Every limit an algorithm may return fits every target's compartment:
/// 2^26 − 1 is `MAX_CONCURRENT_LIMIT` on 32-bit targets.
#[test]
fn the_largest_adaptive_limit_fits_every_compartment() {
    // (`MAX_ADAPTIVE_LIMIT <= MAX_CONCURRENT_LIMIT` is a const assertion
    // beside the constant.) An algorithm at its largest limit: the controller applies it.
    let b: Bulkhead<CsLock> = Bulkhead::new("db", 1).unwrap();
    let top = MAX_ADAPTIVE_LIMIT;
    let c = Controller::new(aimd(top, 1, top));
    assert_eq!(
        c.record(&b, &with(CallOutcome::Success, 1, top)),
        Recorded::Changed { old: 1, new: top }
    );
    assert_eq!(b.engine().max_concurrent(), top);
}

// ---- Windowed fed directly ----------------------------------------------

#[test]
fn windowed_update_keeps_a_drop_or_timeout_anywhere_in_its_window() {
    let mut w = Windowed::new(Recorder::new(1), 4);
    let ok = with(CallOutcome::Success, 2, 1);
    let timeout = with(CallOutcome::Timeout, 4, 3);
    let dropped = with(CallOutcome::Dropped, 6, 2);
    let windows: [[Sample; 4]; 5] = [
        [ok, ok, ok, ok],
        [ok, timeout, ok, ok],
        [dropped, ok, ok, ok],
        [ok, dropped, timeout, ok],
        [timeout, ok, dropped, ok],
    ];
    for window in &windows {
        for s in window {
            w.update(s);
        }
    }
    let fed = &w.inner().fed;
    let outcomes: Vec<_> = fed.iter().map(|s| s.outcome).collect();
    assert_eq!(
        outcomes,
        [
            CallOutcome::Success,
            CallOutcome::Timeout,
            CallOutcome::Dropped,
            CallOutcome::Dropped,
            CallOutcome::Dropped,
        ],
        "worst outcome per window: a drop over a timeout over a success"
    );
    // Means and largest in-flight counts, and each window starts afresh.
    let rtts: Vec<_> = fed.iter().map(|s| s.rtt_nanos / 1_000).collect();
    assert_eq!(rtts, [2_000, 2_500, 3_000, 3_500, 3_500]);
    let in_flight: Vec<_> = fed.iter().map(|s| s.in_flight).collect();
    assert_eq!(in_flight, [1, 3, 2, 3, 3]);
}

#[test]
fn windowed_update_backs_aimd_off_on_one_drop_or_timeout() {
    for bad in [CallOutcome::Dropped, CallOutcome::Timeout] {
        let mut w = Windowed::new(aimd(10, 1, 20), 4);
        // A window is max(4, limit) = 10 samples; the bad one comes first.
        assert_eq!(w.update(&with(bad, 1, 10)), 10);
        for _ in 0..8 {
            assert_eq!(w.update(&with(CallOutcome::Success, 1, 10)), 10);
        }
        assert_eq!(
            w.update(&with(CallOutcome::Success, 1, 10)),
            9,
            "one {bad:?} in the window backs off"
        );
        // The next window holds successes only: it grows again.
        for _ in 0..8 {
            assert_eq!(w.update(&with(CallOutcome::Success, 1, 9)), 9);
        }
        assert_eq!(w.update(&with(CallOutcome::Success, 1, 9)), 10);
    }
}

// ---- AdaptiveSeat::ignore -------------------------------------------------

#[test]
fn an_ignored_seat_records_no_sample_and_a_dropped_one_records_a_success() {
    let a = Adaptive::new(
        Bulkhead::<CsLock>::new("api", 2).unwrap(),
        Recorder::new(2),
        || 0u64,
    );
    let fed = || a.controller().try_inspect(|r| r.fed.clone()).unwrap();
    let seat = a.try_acquire().unwrap();
    assert_eq!(a.bulkhead().state().active, 1);
    seat.ignore();
    assert_eq!(a.bulkhead().state().active, 0, "the seat came back");
    assert!(fed().is_empty(), "ignore recorded {:?}", fed());
    // Against that: a seat dropped without an outcome records a success.
    drop(a.try_acquire().unwrap());
    assert_eq!(fed().len(), 1);
    assert_eq!(fed()[0].outcome, CallOutcome::Success);
    assert_eq!(a.bulkhead().state().active, 0);
}
