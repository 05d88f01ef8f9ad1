//! Vegas' decision table at its boundaries, at `f = 1` and at limits of
//! 100 and more (`f ≥ 2`, where a step times `f` and a step over `f`
//! differ), and the probe's jitter range.

use super::*;

/// Default parameters but a `max` of 10 000, so that growth from 1000 is
/// not clamped.
fn vegas(initial: usize) -> Vegas {
    Vegas::new(VegasParams {
        initial,
        max: 10_000,
        ..VegasParams::DEFAULT
    })
    .unwrap()
}

/// A fresh Vegas at `limit` whose second sample sees exactly `queue` calls
/// queued: the baseline is `limit − queue` ms and the round trip `limit`
/// ms, so `limit × (1 − rtt_noload / rtt)` is `queue`. Returns the limit
/// after that sample.
fn decide(limit: usize, queue: usize, in_flight: usize) -> usize {
    let mut l = vegas(limit);
    let ms = |n: usize| Sample::from_nanos(n as u64 * 1_000_000, in_flight, CallOutcome::Success);
    assert_eq!(
        l.update(&ms(limit - queue)),
        limit,
        "the first sample sets the baseline only"
    );
    l.update(&ms(limit))
}

#[test]
fn vegas_decision_table_at_f_1() {
    // threshold, alpha, beta = 1, 3, 6; f = 1 below 100.
    let l = 20;
    assert_eq!(decide(l, 0, l), 26, "no queue: + beta × f");
    assert_eq!(decide(l, 1, l), 26, "queue = threshold × f: + beta × f");
    assert_eq!(
        decide(l, 2, l),
        21,
        "threshold × f < queue < alpha × f: + f"
    );
    assert_eq!(decide(l, 3, l), 20, "queue = alpha × f: holds");
    assert_eq!(decide(l, 6, l), 20, "queue = beta × f: holds");
    assert_eq!(decide(l, 7, l), 19, "queue > beta × f: − f");
}

#[test]
fn vegas_decision_table_at_f_2_and_3() {
    // f = floor(log10(limit)) = 2 from 100: the thresholds are 2, 6, 12
    // and the steps 12 (beta × f) and 2 (f).
    let l = 100;
    assert_eq!(decide(l, 2, l), 112, "queue = threshold × f: + beta × f");
    assert_eq!(decide(l, 3, l), 102, "above threshold × f: + f");
    assert_eq!(decide(l, 5, l), 102, "below alpha × f: + f");
    assert_eq!(decide(l, 6, l), 100, "queue = alpha × f: holds");
    assert_eq!(decide(l, 12, l), 100, "queue = beta × f: holds");
    assert_eq!(decide(l, 13, l), 98, "queue > beta × f: − f");
    // f = 3 from 1000: thresholds 3, 9, 18, steps 18 and 3.
    let l = 1000;
    assert_eq!(decide(l, 3, l), 1018, "queue = threshold × f: + beta × f");
    assert_eq!(decide(l, 4, l), 1003, "above threshold × f: + f");
    assert_eq!(decide(l, 8, l), 1003, "below alpha × f: + f");
    assert_eq!(decide(l, 9, l), 1000, "queue = alpha × f: holds");
    assert_eq!(decide(l, 18, l), 1000, "queue = beta × f: holds");
    assert_eq!(decide(l, 19, l), 997, "queue > beta × f: − f");
}

#[test]
fn vegas_drops_step_down_by_f() {
    for (limit, f) in [(20, 1), (99, 1), (100, 2), (999, 2), (1000, 3)] {
        let mut l = vegas(limit);
        l.update(&Sample::from_nanos(1_000_000, limit, CallOutcome::Success));
        let dropped = Sample::from_nanos(1_000_000, limit, CallOutcome::Dropped);
        assert_eq!(l.update(&dropped), limit - f, "a drop at {limit}: − {f}");
        let timeout = Sample::from_nanos(1_000_000, 1, CallOutcome::Timeout);
        let now = l.limit();
        let f2 = log10_step(now);
        assert_eq!(
            l.update(&timeout),
            now - f2,
            "a timeout at {now}, even idle: − {f2}"
        );
    }
}

#[test]
fn vegas_holds_while_less_than_half_the_seats_are_used() {
    let l = 20;
    // Without a queue a busy compartment grows by beta × f = 6 ...
    assert_eq!(decide(l, 0, 10), 26, "2 × 10 = 20: busy enough");
    // ... one with fewer than half its seats in use holds, queue or not.
    assert_eq!(decide(l, 0, 9), 20, "2 × 9 < 20: no evidence");
    assert_eq!(decide(l, 10, 9), 20, "a long queue, but idle: holds");
    assert_eq!(decide(l, 10, 10), 19, "a long queue, busy: − f");
    // At f = 2 too.
    assert_eq!(decide(100, 0, 49), 100);
    assert_eq!(decide(100, 0, 50), 112);
}

/// The probe is due after `jitter × probe_multiplier × limit` samples, with
/// the jitter in `[0.5, 1)`: every gap between probes lies in
/// `[P × L / 2, P × L)`, and the gaps spread over that range.
#[test]
#[cfg_attr(miri, ignore = "150 000 updates of plain arithmetic, no unsafe code")]
fn vegas_probe_jitter_lies_in_half_to_one() {
    let (p, limit) = (50u32, 20usize);
    let mut l = Vegas::new(VegasParams {
        initial: limit,
        probe_multiplier: p,
        ..VegasParams::DEFAULT
    })
    .unwrap();
    let span = p as usize * limit;
    // Each round trip a nanosecond longer than the last, with one seat in
    // use: the limit holds, the baseline never falls, and only a probe
    // (which finds nothing of ours queued) moves it, to the current rtt.
    let mut rtt = 10_000_000u64;
    let mut sample = || {
        rtt += 1;
        l.update(&Sample::from_nanos(rtt, 1, CallOutcome::Success));
        (l.rtt_noload_nanos(), l.limit())
    };
    let (mut baseline, _) = sample();
    let mut gaps = std::vec::Vec::new();
    let mut since = 0;
    while gaps.len() < 200 {
        let (now, limit_now) = sample();
        assert_eq!(limit_now, limit, "app-limited: the limit holds");
        since += 1;
        if now != baseline {
            gaps.push(since);
            since = 0;
            baseline = now;
        }
        assert!(since <= span, "no probe within {span} samples");
    }
    // The first gap counts from the first sample, one earlier.
    for (i, &gap) in gaps.iter().enumerate().skip(1) {
        assert!(
            (span / 2..span).contains(&gap),
            "gap {i}: {gap} samples, outside [{}, {span})",
            span / 2
        );
    }
    let (lo, hi) = (gaps.iter().min().unwrap(), gaps.iter().max().unwrap());
    assert!(
        *lo < span * 6 / 10 && *hi > span * 9 / 10,
        "the jitter does not spread: gaps {lo}..={hi} of [{}, {span})",
        span / 2
    );
}
