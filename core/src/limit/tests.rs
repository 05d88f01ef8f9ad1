//! Behaviour of each algorithm and of the controller, on synthetic samples.

use core::time::Duration;

use super::*;
use crate::sync::Ordering;
use crate::{Bulkhead, CsLock};
use std::string::ToString;

fn ok(rtt_ms: u64, in_flight: usize) -> Sample {
    Sample::new(
        Duration::from_millis(rtt_ms),
        in_flight,
        CallOutcome::Success,
    )
}

fn with(outcome: CallOutcome, rtt_ms: u64, in_flight: usize) -> Sample {
    Sample::new(Duration::from_millis(rtt_ms), in_flight, outcome)
}

/// How far a mean round trip that went through a [`Controller`] may be
/// from the exact one: nothing where `usize` has 64 bits; on narrower
/// targets the controller sums in 256 ns units (`controller.rs`), so a
/// sample rounds by up to half a unit and the mean truncates by up to one.
const RTT_TOLERANCE: u64 = if cfg!(target_pointer_width = "64") {
    0
} else {
    2 * 256
};

/// `got` is `want_nanos` to within [`RTT_TOLERANCE`].
#[track_caller]
fn assert_rtt(got: Option<u64>, want_nanos: u64, what: &str) {
    let got = got.expect("the controller's flag was free");
    // The tolerance is 0 where `usize` has 64 bits: an exact comparison.
    #[allow(clippy::absurd_extreme_comparisons)]
    let close = got.abs_diff(want_nanos) <= RTT_TOLERANCE;
    assert!(
        close,
        "{what}: {got} ns, expected {want_nanos} ns (± {RTT_TOLERANCE})"
    );
}

/// Feeds `n` copies of `sample`; returns the final limit.
fn feed(limit: &mut impl Limit, n: usize, sample: impl Fn(usize) -> Sample) -> usize {
    let mut last = limit.limit();
    for _ in 0..n {
        let s = sample(last);
        last = limit.update(&s);
    }
    last
}

// ---- AIMD -------------------------------------------------------------

fn aimd(initial: usize, min: usize, max: usize) -> Aimd {
    Aimd::new(AimdParams {
        initial,
        min,
        max,
        ..AimdParams::DEFAULT
    })
    .unwrap()
}

#[test]
fn aimd_grows_by_one_per_busy_success_up_to_max() {
    let mut l = aimd(10, 1, 15);
    assert_eq!(l.update(&ok(5, 10)), 11);
    assert_eq!(l.update(&ok(5, 11)), 12);
    assert_eq!(feed(&mut l, 100, |limit| ok(5, limit)), 15);
}

#[test]
fn aimd_backs_off_multiplicatively_on_drop_timeout_and_slow_calls() {
    let mut l = aimd(100, 1, 200);
    assert_eq!(l.update(&with(CallOutcome::Dropped, 5, 100)), 90);
    assert_eq!(l.update(&with(CallOutcome::Timeout, 5, 90)), 81);
    // A success slower than the 5 s timeout is a drop.
    assert_eq!(l.update(&with(CallOutcome::Success, 5_001, 81)), 72);
    // Exactly 0.9 × 10 = 9: the fixed-point fraction must not round it to 8.
    let mut ten = aimd(10, 1, 200);
    assert_eq!(ten.update(&with(CallOutcome::Dropped, 5, 10)), 9);
}

#[test]
fn aimd_holds_when_app_limited_and_respects_min() {
    let mut l = aimd(20, 20, 200);
    assert_eq!(l.update(&ok(5, 9)), 20, "2 x 9 < 20: no evidence");
    assert_eq!(l.update(&ok(5, 10)), 21, "2 x 10 >= 20");
    assert_eq!(feed(&mut l, 50, |_| with(CallOutcome::Dropped, 5, 1)), 20);
}

#[test]
fn aimd_rejects_bad_parameters() {
    let p = AimdParams::DEFAULT;
    assert_eq!(
        Aimd::new(AimdParams { min: 0, ..p }).unwrap_err(),
        LimitError::Bounds { min: 0, max: 200 }
    );
    assert_eq!(
        Aimd::new(AimdParams { initial: 300, ..p }).unwrap_err(),
        LimitError::Initial {
            initial: 300,
            min: 20,
            max: 200
        }
    );
    assert!(matches!(
        Aimd::new(AimdParams {
            backoff: Fraction::ONE,
            ..p
        }),
        Err(LimitError::Ratio {
            parameter: "backoff",
            ..
        })
    ));
    assert!(matches!(
        Aimd::new(AimdParams {
            backoff: Fraction::per_mille(400),
            ..p
        }),
        Err(LimitError::Ratio {
            parameter: "backoff",
            ..
        })
    ));
    assert_eq!(
        Aimd::new(AimdParams {
            timeout: Duration::ZERO,
            ..p
        })
        .unwrap_err(),
        LimitError::Zero {
            parameter: "timeout"
        }
    );
    assert!(
        Aimd::new(AimdParams {
            max: MAX_ADAPTIVE_LIMIT + 1,
            ..p
        })
        .is_err(),
        "above the largest countable limit"
    );
}

// ---- Vegas ------------------------------------------------------------

fn vegas(initial: usize, min: usize, max: usize) -> Vegas {
    Vegas::new(VegasParams {
        initial,
        min,
        max,
        ..VegasParams::DEFAULT
    })
    .unwrap()
}

#[test]
fn vegas_grows_fast_without_queueing() {
    let mut l = vegas(20, 1, 1000);
    assert_eq!(
        l.update(&ok(10, 20)),
        20,
        "first sample only sets rtt_noload"
    );
    assert_eq!(l.update(&ok(10, 20)), 26, "no queue: + 6 x log10 step");
    // The step grows with log10 of the limit: f = 2 from 100.
    let grown = feed(&mut l, 20, |limit| ok(10, limit));
    assert!(grown > 100, "grew to {grown}");
    let before = l.limit();
    let after = l.update(&ok(10, before));
    assert_eq!(after, before + 12, "f = 2: + 12");
}

#[test]
fn vegas_backs_off_when_latency_grows_and_on_drops() {
    let mut l = vegas(50, 1, 1000);
    l.update(&ok(10, 50));
    // rtt 4 x the no-load time: queue = ceil(50 x 0.75) = 38 > 6: - f.
    assert_eq!(l.update(&ok(40, 50)), 49);
    let settled = feed(&mut l, 40, |limit| ok(40, limit));
    assert!(settled < 20, "kept shrinking while queueing: {settled}");
    let before = l.limit();
    assert_eq!(
        l.update(&with(CallOutcome::Dropped, 10, before)),
        before - 1
    );
}

#[test]
fn vegas_settles_between_alpha_and_beta() {
    // A dependency whose rtt grows with the queue beyond 10 concurrent
    // calls: rtt = 10 ms x max(1, n / 10).
    // Starts at 10, so that the first sample measures the no-load time.
    let mut l = vegas(10, 1, 1000);
    let rtt = |n: usize| 10 * (n.max(10) as u64) / 10;
    let mut limits = [0usize; 100];
    for slot in limits.iter_mut() {
        let n = l.limit();
        *slot = l.update(&ok(rtt(n), n));
    }
    let tail = &limits[80..];
    let (lo, hi) = (tail.iter().min().unwrap(), tail.iter().max().unwrap());
    assert!(
        *lo >= 12 && *hi <= 17,
        "limit {lo}..={hi}, expected 10 + 3..=6 queued"
    );
}

#[test]
fn vegas_new_minimum_only_resets_baseline_and_probe_forgets_it() {
    let mut l = vegas(20, 1, 1000);
    l.update(&ok(10, 20));
    assert_eq!(
        l.update(&ok(5, 20)),
        20,
        "faster than no-load: baseline only"
    );
    assert_eq!(l.rtt_noload_nanos(), 5_000_000);
    // After enough samples, a probe resets the baseline to the current rtt,
    // so one lucky fast sample cannot pin the limit down forever.
    let mut probed = false;
    for _ in 0..2_000 {
        l.update(&ok(20, 1)); // app-limited: the limit holds
        if l.rtt_noload_nanos() == 20_000_000 {
            probed = true;
            break;
        }
    }
    assert!(probed, "the probe never re-measured the baseline");
}

#[test]
fn vegas_probe_drains_the_queue_before_re_measuring_the_baseline() {
    let mut l = vegas(30, 1, 1000);
    l.update(&ok(10, 30)); // baseline 10 ms
    // 12 ms with every seat in use: queue = ceil(30 x 2 / 12) = 5, inside
    // 3..=6, so the limit holds until the probe is due.
    let mut probed = false;
    for _ in 0..2_000 {
        l.update(&ok(12, 30));
        if l.probing() {
            probed = true;
            break;
        }
        assert_eq!(l.limit(), 30);
    }
    assert!(probed, "the probe never started");
    // Served without queueing: floor(30 x 10 / 12) = 25, less f = 1.
    assert_eq!(
        l.limit(),
        24,
        "the probe lowers the limit to drain the queue"
    );
    // A call that started with more seats in use than that is ignored:
    // it waited behind our queue.
    assert_eq!(l.update(&ok(12, 30)), 24);
    assert!(l.probing());
    assert_eq!(l.rtt_noload_nanos(), 10_000_000);
    // The first call that started with the queue drained measures the
    // baseline, and the limit comes back.
    assert_eq!(l.update(&ok(11, 24)), 30);
    assert!(!l.probing());
    assert_eq!(l.rtt_noload_nanos(), 11_000_000, "re-measured at low load");
}

#[test]
fn vegas_probe_gives_up_after_a_round_of_seats_and_ends_on_a_drop() {
    let mut l = vegas(30, 1, 1000);
    l.update(&ok(10, 30));
    let start_probe = |l: &mut Vegas, rtt_ms: u64| {
        for _ in 0..2_000 {
            l.update(&ok(rtt_ms, 30));
            if l.probing() {
                return;
            }
        }
        panic!("the probe never started");
    };
    start_probe(&mut l, 12);
    // Nothing ever starts drained (a dependency shared with others): after
    // one round of the old limit's seats, the current round trip is taken.
    for _ in 0..30 {
        assert_eq!(l.update(&ok(12, 30)), 24);
    }
    assert_eq!(l.update(&ok(12, 30)), 30);
    assert!(!l.probing());
    assert_eq!(l.rtt_noload_nanos(), 12_000_000);
    // A drop during a probe ends it, keeps the baseline, and backs off
    // from the drained limit, never back up to the old one. (15 ms against
    // 12: queue = 6, the limit holds at 30.)
    start_probe(&mut l, 15);
    assert_eq!(l.limit(), 23);
    assert_eq!(l.update(&with(CallOutcome::Dropped, 12, 30)), 22);
    assert!(!l.probing());
    assert_eq!(l.rtt_noload_nanos(), 12_000_000);
}

#[test]
fn vegas_queue_thresholds_set_where_it_settles() {
    // As `vegas_settles_between_alpha_and_beta`, with a queue allowance of
    // one call: the limit settles one or two above the knee at 10.
    let mut l = Vegas::new(VegasParams {
        initial: 10,
        threshold: 1,
        alpha: 1,
        beta: 1,
        ..VegasParams::DEFAULT
    })
    .unwrap();
    let rtt = |n: usize| 10 * (n.max(10) as u64) / 10;
    let mut limits = [0usize; 100];
    for slot in limits.iter_mut() {
        let n = l.limit();
        *slot = l.update(&ok(rtt(n), n));
    }
    let tail = &limits[80..];
    let (lo, hi) = (tail.iter().min().unwrap(), tail.iter().max().unwrap());
    assert!(
        *lo >= 10 && *hi <= 12,
        "limit {lo}..={hi}, expected 10 + 0..=2"
    );
}

#[test]
fn vegas_rejects_queue_thresholds_out_of_order() {
    let p = VegasParams::DEFAULT;
    assert_eq!(
        Vegas::new(VegasParams { threshold: 4, ..p }).unwrap_err(),
        LimitError::Order {
            low_parameter: "threshold",
            low: 4,
            high_parameter: "alpha",
            high: 3
        }
    );
    let err = Vegas::new(VegasParams { alpha: 7, ..p }).unwrap_err();
    assert!(err.to_string().contains("choose alpha <= beta"), "{err}");
    assert_eq!(
        Vegas::new(VegasParams {
            threshold: 0,
            alpha: 0,
            beta: 0,
            ..p
        })
        .unwrap_err(),
        LimitError::Zero { parameter: "beta" }
    );
}

#[test]
fn vegas_smoothing_moves_part_way() {
    let mut l = Vegas::new(VegasParams {
        initial: 20,
        smoothing: Fraction::per_mille(500),
        ..VegasParams::DEFAULT
    })
    .unwrap();
    l.update(&ok(10, 20));
    assert_eq!(l.update(&ok(10, 20)), 23, "half of + 6");
}

#[test]
fn vegas_respects_bounds() {
    let mut l = vegas(5, 3, 30);
    assert_eq!(feed(&mut l, 50, |limit| ok(10, limit)), 30);
    assert_eq!(
        feed(&mut l, 100, |limit| with(CallOutcome::Dropped, 10, limit)),
        3
    );
}

// ---- Gradient2 ----------------------------------------------------------

fn gradient2(initial: usize, min: usize, max: usize) -> Gradient2 {
    Gradient2::new(Gradient2Params {
        initial,
        min,
        max,
        ..Gradient2Params::DEFAULT
    })
    .unwrap()
}

#[test]
fn gradient2_grows_by_smoothed_queue_while_latency_is_steady() {
    let mut l = gradient2(20, 4, 200);
    // g = 1: + 0.2 x 4 = + 0.8 per sample.
    assert_eq!(feed(&mut l, 10, |limit| ok(10, limit)), 28);
    assert_eq!(feed(&mut l, 1_000, |limit| ok(10, limit)), 200);
}

#[test]
fn gradient2_shrinks_when_latency_exceeds_tolerance() {
    let mut l = gradient2(100, 4, 200);
    feed(&mut l, 50, |_| ok(10, 100)); // long average 10 ms
    let high = l.limit();
    // 3 x the long average, beyond the 1.5 tolerance: g = 0.5.
    let low = feed(&mut l, 20, |limit| ok(30, limit));
    assert!(low < high / 2, "from {high} to {low}");
    // Within tolerance (1.2 x): grows again.
    let mut l = gradient2(50, 4, 200);
    feed(&mut l, 20, |_| ok(10, 50));
    let before = l.limit();
    assert!(feed(&mut l, 5, |limit| ok(12, limit)) > before);
}

#[test]
fn gradient2_backs_off_on_drops_and_timeouts_with_fast_errors_kept_out_of_the_average() {
    let mut l = gradient2(100, 4, 200);
    feed(&mut l, 20, |_| ok(10, 100));
    let long = l.long_rtt_nanos();
    let before = l.limit();
    // A fast error (1 ms) must not look like spare capacity.
    let after = l.update(&with(CallOutcome::Dropped, 1, before));
    assert!(after < before, "{before} -> {after}");
    assert_eq!(
        l.long_rtt_nanos(),
        long,
        "error rtts stay out of the average"
    );
    let after2 = l.update(&with(CallOutcome::Timeout, 10, after));
    assert!(after2 < after);
}

#[test]
fn gradient2_holds_when_app_limited_and_recovers_long_average() {
    let mut l = gradient2(40, 4, 200);
    assert_eq!(l.update(&ok(10, 19)), 40, "19 < 40 / 2");
    // Heavy load inflates the long average; when it goes, the average
    // decays by 5 % per sample while more than twice the current rtt.
    feed(&mut l, 100, |_| ok(100, 1));
    let inflated = l.long_rtt_nanos();
    feed(&mut l, 30, |_| ok(10, 1));
    assert!(
        l.long_rtt_nanos() < inflated / 3,
        "{} vs {inflated}",
        l.long_rtt_nanos()
    );
}

#[test]
fn gradient2_smoothing_and_bounds() {
    let mut l = Gradient2::new(Gradient2Params {
        initial: 20,
        min: 10,
        max: 30,
        smoothing: Fraction::ONE,
        ..Gradient2Params::DEFAULT
    })
    .unwrap();
    assert_eq!(l.update(&ok(10, 20)), 24, "smoothing 1: the whole + 4");
    assert_eq!(feed(&mut l, 20, |limit| ok(10, limit)), 30);
    assert_eq!(
        feed(&mut l, 20, |limit| with(CallOutcome::Dropped, 10, limit)),
        10
    );
    assert!(matches!(
        Gradient2::new(Gradient2Params {
            rtt_tolerance: Fraction::per_mille(900),
            ..Gradient2Params::DEFAULT
        }),
        Err(LimitError::Ratio {
            parameter: "rtt_tolerance",
            ..
        })
    ));
    assert_eq!(
        Gradient2::new(Gradient2Params {
            long_window: 0,
            ..Gradient2Params::DEFAULT
        })
        .unwrap_err(),
        LimitError::Zero {
            parameter: "long_window"
        }
    );
}

// ---- shared pieces --------------------------------------------------------

#[test]
fn samples_saturate_and_never_carry_zero() {
    assert_eq!(
        Sample::new(Duration::from_secs(1 << 30), 1, CallOutcome::Success).rtt_nanos,
        1 << 40
    );
    assert_eq!(Sample::from_nanos(0, 1, CallOutcome::Success).rtt_nanos, 1);
    let hand_made = Sample {
        rtt_nanos: 0,
        in_flight: 1,
        outcome: CallOutcome::Success,
    };
    assert_eq!(hand_made.rtt(), 1);
    assert_eq!(log10_step(9), 1);
    assert_eq!(log10_step(10), 1);
    assert_eq!(log10_step(100), 2);
    assert_eq!(log10_step(12_345), 4);
    assert_eq!(Fraction::per_mille(900).to_string(), "0.900");
    assert_eq!(Fraction::new(3, 2).to_string(), "1.500");
}

#[test]
fn any_limit_dispatches() {
    let mut any = AnyLimit::from(aimd(10, 1, 20));
    assert_eq!(any.algorithm(), "aimd");
    assert_eq!(any.update(&ok(1, 10)), 11);
    assert_eq!(AnyLimit::from(vegas(5, 1, 9)).limit(), 5);
    assert_eq!(
        AnyLimit::from(gradient2(30, 4, 99)).algorithm(),
        "gradient2"
    );
}

// ---- controller -----------------------------------------------------------

#[test]
fn controller_applies_changes_and_counts_them() {
    let b: Bulkhead<CsLock> = Bulkhead::new("db", 10).unwrap();
    let c = Controller::new(aimd(10, 1, 20));
    assert_eq!(
        c.record(&b, &ok(1, 10)),
        Recorded::Changed { old: 10, new: 11 }
    );
    assert_eq!(c.record(&b, &ok(1, 1)), Recorded::Unchanged { limit: 11 });
    assert_eq!(b.state().max_concurrent, 11);
    assert_eq!(c.changes(), 1);
    assert_eq!(c.try_inspect(|a| a.limit()), Some(11));
}

#[test]
fn controller_keeps_a_missed_drop_for_the_next_winner() {
    let b: Bulkhead<CsLock> = Bulkhead::new("db", 10).unwrap();
    let c = Controller::new(aimd(10, 1, 20));
    // Hold the flag as a concurrent sampler would.
    assert_eq!(c.busy.swap(1, Ordering::Acquire), 0);
    assert_eq!(
        c.record(&b, &with(CallOutcome::Dropped, 1, 10)),
        Recorded::Skipped
    );
    assert_eq!(c.record(&b, &ok(1, 10)), Recorded::Skipped);
    assert_eq!(c.skipped(), 2);
    assert_eq!(
        b.state().max_concurrent,
        10,
        "a skipped sample changes nothing"
    );
    c.busy.store(0, Ordering::Release);
    // The next winner replays the drop (10 -> 9) before its own app-limited
    // success (holds).
    assert_eq!(
        c.record(&b, &ok(1, 1)),
        Recorded::Changed { old: 10, new: 9 }
    );
    assert_eq!(c.missed.load(Ordering::Relaxed), 0);
}

#[test]
fn controller_windows_samples_and_only_the_sampler_that_fills_the_window_updates() {
    let b: Bulkhead<CsLock> = Bulkhead::new("db", 4).unwrap();
    let c = Controller::new(Windowed::new(aimd(4, 1, 20), 4));
    // The first sample learns the window size, max(min_samples, limit) =
    // 4, and opens the first window; the fourth fills it.
    assert_eq!(c.record(&b, &ok(1, 4)), Recorded::Unchanged { limit: 4 });
    for _ in 0..2 {
        assert_eq!(c.record(&b, &ok(1, 4)), Recorded::Added);
    }
    assert_eq!(
        c.record(&b, &ok(1, 4)),
        Recorded::Changed { old: 4, new: 5 }
    );
    // Now a window is 5 samples.
    for _ in 0..4 {
        assert_eq!(c.record(&b, &ok(1, 5)), Recorded::Added);
    }
    assert_eq!(
        c.record(&b, &ok(1, 5)),
        Recorded::Changed { old: 5, new: 6 }
    );
    // One drop anywhere in a window backs the whole window off, and the
    // aggregate carries the window's largest in-flight count: 6 seats,
    // floor(0.9 x 6) = 5.
    assert_eq!(c.record(&b, &ok(1, 1)), Recorded::Added);
    assert_eq!(
        c.record(&b, &with(CallOutcome::Dropped, 1, 6)),
        Recorded::Added
    );
    for _ in 0..3 {
        assert_eq!(c.record(&b, &ok(1, 1)), Recorded::Added);
    }
    assert_eq!(
        c.record(&b, &ok(1, 1)),
        Recorded::Changed { old: 6, new: 5 }
    );
    assert_eq!(c.missed.load(Ordering::Relaxed), 0);
    assert_eq!(c.changes(), 3);
    assert_eq!(c.skipped(), 0);
}

#[test]
fn controller_window_whose_filler_lost_the_flag_is_closed_by_the_next_sample() {
    let b: Bulkhead<CsLock> = Bulkhead::new("db", 4).unwrap();
    let c = Controller::new(Windowed::new(aimd(4, 1, 20), 4));
    assert_eq!(c.record(&b, &ok(1, 4)), Recorded::Unchanged { limit: 4 });
    for _ in 0..2 {
        assert_eq!(c.record(&b, &ok(1, 4)), Recorded::Added);
    }
    // Another sampler holds the flag as this one fills the window.
    assert_eq!(c.busy.swap(1, Ordering::Acquire), 0);
    assert_eq!(c.record(&b, &ok(1, 4)), Recorded::Skipped);
    assert_eq!(c.skipped(), 1);
    assert_eq!(b.state().max_concurrent, 4);
    c.busy.store(0, Ordering::Release);
    // The window stayed open and full: the next sample closes it, with
    // every sample in it.
    assert_eq!(
        c.record(&b, &ok(1, 4)),
        Recorded::Changed { old: 4, new: 5 }
    );
    for _ in 0..4 {
        assert_eq!(c.record(&b, &ok(1, 5)), Recorded::Added);
    }
    assert_eq!(
        c.record(&b, &ok(1, 5)),
        Recorded::Changed { old: 5, new: 6 }
    );
}

#[test]
fn controller_window_mean_is_the_mean_round_trip() {
    // Gradient2's long average starts as the plain mean of what it is fed:
    // the first window, 2, 4, 6 and 8 ms, feeds it 5 ms.
    let b: Bulkhead<CsLock> = Bulkhead::new("db", 4).unwrap();
    let c = Controller::new(Windowed::new(gradient2(4, 1, 50), 4));
    for ms in [2, 4, 6, 8] {
        c.record(&b, &ok(ms, 4));
    }
    assert_rtt(
        c.try_inspect(|w| w.inner().long_rtt_nanos()),
        5_000_000,
        "the first window's mean",
    );
    // The next window, 11 ms four times: (5 + 11) / 2 = 8 ms.
    assert_eq!(c.try_inspect(|w| w.limit()), Some(4), "a window of 4 next");
    for _ in 0..4 {
        c.record(&b, &ok(11, 4));
    }
    assert_rtt(
        c.try_inspect(|w| w.inner().long_rtt_nanos()),
        8_000_000,
        "the long average after the second window",
    );
}

#[test]
fn controller_gives_the_flag_back_when_the_algorithm_panics() {
    struct Panicky(bool);
    impl Limit for Panicky {
        fn limit(&self) -> usize {
            3
        }
        fn update(&mut self, _: &Sample) -> usize {
            if self.0 {
                self.0 = false;
                panic!("algorithm bug");
            }
            4
        }
    }
    let b: Bulkhead<CsLock> = Bulkhead::new("db", 3).unwrap();
    let c = Controller::new(Panicky(true));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| c.record(&b, &ok(1, 3))));
    assert!(r.is_err());
    assert_eq!(
        c.record(&b, &ok(1, 3)),
        Recorded::Changed { old: 3, new: 4 }
    );
}

#[test]
fn adaptive_seats_time_themselves_and_default_to_success() {
    use std::sync::atomic::AtomicU64;
    static NOW: AtomicU64 = AtomicU64::new(0);
    let clock = || NOW.load(std::sync::atomic::Ordering::Relaxed);
    let g = gradient2(4, 1, 50);
    let a = Adaptive::new(Bulkhead::<CsLock>::new("api", 4).unwrap(), g, clock);
    let seats: std::vec::Vec<_> = (0..4).map(|_| a.try_acquire().unwrap()).collect();
    assert_eq!(seats[3].in_flight(), 4);
    NOW.store(10_000_000, std::sync::atomic::Ordering::Relaxed);
    drop(seats); // four successes of 10 ms with the compartment full
    assert!(a.limit() > 4, "limit {}", a.limit());
    assert_rtt(
        a.controller().try_inspect(|g| g.long_rtt_nanos()),
        10_000_000,
        "the seats measured 10 ms",
    );
    // `ignore` records nothing.
    let before = a.controller().changes();
    let seat = a.try_acquire().unwrap();
    seat.ignore();
    assert_eq!(a.controller().changes(), before);
    assert_eq!(a.bulkhead().state().active, 0);
    // A seat of another compartment is handed back untouched.
    let other: Bulkhead<CsLock> = Bulkhead::new("other", 1).unwrap();
    let foreign = other.try_acquire().unwrap();
    assert!(a.track(foreign).is_err());
}

#[test]
fn shrinking_below_the_seats_held_never_takes_them_back() {
    let clock = || 0u64;
    let a = Adaptive::new(
        Bulkhead::<CsLock>::new("db", 10).unwrap(),
        aimd(10, 1, 20),
        clock,
    );
    let seats: std::vec::Vec<_> = (0..10).map(|_| a.try_acquire().unwrap()).collect();
    let mut seats = seats.into_iter();
    // Five drops in a row while all ten seats are held.
    for _ in 0..5 {
        seats.next().unwrap().record(CallOutcome::Dropped);
    }
    let limit = a.limit();
    assert_eq!(limit, 5, "10 -> 9 -> 8 -> 7 -> 6 -> 5");
    assert_eq!(a.bulkhead().state().active, 5);
    assert!(a.try_acquire().is_err(), "5 of 5 held");
    drop(seats);
    assert_eq!(a.bulkhead().state().active, 0);
    assert!(a.try_acquire().is_ok());
}
