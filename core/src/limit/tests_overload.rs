//! No algorithm raises its limit on a drop or a timeout, from any state.
//!
//! `every_limit_*` below runs [`check_overload_never_raises`] on every
//! [`Limit`] core ships, plain, windowed and through a [`Controller`]. If
//! you add a `Limit` to core, add it there too (and to `AnyLimit`, whose
//! exhaustive match in [`any_limit_strategy`] stops compiling until the
//! new variant has a strategy).

use core::fmt::Debug;
use core::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::{Bulkhead, CsLock};

fn dropped(rtt_ms: u64, in_flight: usize) -> Sample {
    Sample::new(
        Duration::from_millis(rtt_ms),
        in_flight,
        CallOutcome::Dropped,
    )
}

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
fn gradient2_never_grows_on_drops_below_twice_its_queue() {
    // With the default queue of 4, a limit below 8 used to grow on every
    // drop: the overload target was 0.5 × limit + 4.
    let mut l = gradient2(5, 1, 200);
    let mut limits = std::vec![l.limit()];
    for _ in 0..20 {
        let limit = l.limit();
        limits.push(l.update(&dropped(10, limit)));
    }
    assert!(
        limits.windows(2).all(|w| w[1] <= w[0]),
        "Gradient2 grew on drops: {limits:?}"
    );
    assert_eq!(*limits.last().unwrap(), 1, "drops push it to min");
    // A timeout too, and from a limit just below 2 × queue.
    let mut l = gradient2(7, 4, 200);
    assert!(
        l.update(&Sample {
            outcome: CallOutcome::Timeout,
            ..dropped(10, 7)
        }) <= 7
    );
}

#[cfg(target_pointer_width = "64")]
#[test]
fn gradient2_backs_off_on_a_drop_with_a_huge_in_flight_count() {
    // `Sample`'s fields are public: an in-flight count of 2^47 or more
    // must not wrap the "less than half the seats in use" check to 0.
    for in_flight in [1usize << 47, (1 << 48) + 3, usize::MAX] {
        let mut l = gradient2(20, 1, 200);
        let after = l.update(&dropped(10, in_flight));
        assert!(
            after < 20,
            "in_flight {in_flight}: a drop was ignored, limit {after}"
        );
    }
}

// ---- the property ---------------------------------------------------------

/// How one step of a random run is made from the algorithm's current
/// limit: `in_flight` is drawn relative to it, so that runs spend time both
/// at full load and idle.
#[derive(Debug, Clone, Copy)]
struct Step {
    rtt_nanos: u64,
    /// 0..=3: a multiple of the limit in quarters (0, 1/4, .., 3/4);
    /// 4..=7: the limit plus 0..=3; 8: an arbitrary count.
    in_flight_kind: u8,
    in_flight_raw: usize,
    outcome: CallOutcome,
}

impl Step {
    fn sample(self, limit: usize) -> Sample {
        let in_flight = match self.in_flight_kind {
            k @ 0..=3 => limit * k as usize / 4,
            k @ 4..=7 => limit + (k - 4) as usize,
            _ => self.in_flight_raw,
        };
        // Built by hand: the fields are public, so 0 and values above
        // `MAX_RTT` reach `update` too.
        Sample {
            rtt_nanos: self.rtt_nanos,
            in_flight,
            outcome: self.outcome,
        }
    }
}

fn step_strategy() -> impl Strategy<Value = Step> {
    let rtt = prop_oneof![
        // Round trips around a few milliseconds, where the algorithms'
        // decisions change.
        6 => (1u64..=40).prop_map(|ms| ms * 1_000_000),
        2 => 1u64..=100_000_000,
        1 => Just(0u64),
        1 => Just(MAX_RTT_NANOS),
        1 => any::<u64>(),
    ];
    let outcome = prop_oneof![
        3 => Just(CallOutcome::Success),
        1 => Just(CallOutcome::Dropped),
        1 => Just(CallOutcome::Timeout),
    ];
    (rtt, 0u8..=8, any::<usize>(), outcome).prop_map(
        |(rtt_nanos, in_flight_kind, in_flight_raw, outcome)| Step {
            rtt_nanos,
            in_flight_kind,
            in_flight_raw,
            outcome,
        },
    )
}

/// Bounds: small ones most of the time (where a queue allowance or a step
/// is large against the limit), sometimes up to [`MAX_ADAPTIVE_LIMIT`].
fn bounds_strategy() -> impl Strategy<Value = (usize, usize, usize)> {
    let max = prop_oneof![
        4 => 1usize..=40,
        2 => 1usize..=2_000,
        1 => 1usize..=MAX_ADAPTIVE_LIMIT,
    ];
    max.prop_flat_map(|max| (1..=max).prop_flat_map(move |min| (min..=max, Just(min), Just(max))))
}

fn fraction(low: u32, high: u32) -> impl Strategy<Value = Fraction> {
    (low..=high).prop_map(Fraction::from_q16)
}

fn aimd_strategy() -> impl Strategy<Value = Aimd> {
    (
        bounds_strategy(),
        fraction(1 << 15, (1 << 16) - 1),
        1u64..=10_000,
    )
        .prop_map(|((initial, min, max), backoff, timeout_ms)| {
            Aimd::new(AimdParams {
                initial,
                min,
                max,
                backoff,
                timeout: Duration::from_millis(timeout_ms),
            })
            .unwrap()
        })
}

fn vegas_strategy() -> impl Strategy<Value = Vegas> {
    (
        bounds_strategy(),
        fraction(1, 1 << 16),
        1u32..=60,
        (0u32..=8, 0u32..=8, 1u32..=12),
    )
        .prop_map(
            |((initial, min, max), smoothing, probe_multiplier, (a, b, c))| {
                // Sorted, so that threshold <= alpha <= beta.
                let mut t = [a, b, c];
                t.sort_unstable();
                Vegas::new(VegasParams {
                    initial,
                    min,
                    max,
                    smoothing,
                    probe_multiplier,
                    threshold: t[0],
                    alpha: t[1],
                    beta: t[2].max(1),
                })
                .unwrap()
            },
        )
}

fn gradient2_strategy() -> impl Strategy<Value = Gradient2> {
    (
        bounds_strategy(),
        fraction(1 << 16, 16 << 16),
        fraction(1, 1 << 16),
        prop_oneof![3 => 0usize..=16, 1 => 0usize..=MAX_ADAPTIVE_LIMIT],
        1u32..=1_000,
    )
        .prop_map(
            |((initial, min, max), rtt_tolerance, smoothing, queue_size, long_window)| {
                Gradient2::new(Gradient2Params {
                    initial,
                    min,
                    max,
                    rtt_tolerance,
                    smoothing,
                    queue_size,
                    long_window,
                })
                .unwrap()
            },
        )
}

fn any_limit_strategy() -> impl Strategy<Value = AnyLimit> {
    // Exhaustive on purpose: a new variant stops this compiling until it
    // has a strategy below.
    let _every_variant_has_a_strategy = |l: &AnyLimit| match l {
        AnyLimit::Aimd(_) | AnyLimit::Vegas(_) | AnyLimit::Gradient2(_) => (),
    };
    prop_oneof![
        aimd_strategy().prop_map(AnyLimit::from),
        vegas_strategy().prop_map(AnyLimit::from),
        gradient2_strategy().prop_map(AnyLimit::from),
    ]
}

/// The property, for any `Limit`: along a random run of samples from the
/// algorithm's starting state, every drop or timeout leaves the limit at
/// or below where it was, and every limit stays at least 1. It is checked
/// twice, on the algorithm fed directly and on a copy behind a
/// [`Controller`] (where the compartment's limit is what must not rise).
fn check_overload_never_raises<L>(algorithm: impl Strategy<Value = L>)
where
    L: Limit + Clone + Debug + Send,
{
    let mut runner = proptest::test_runner::TestRunner::new(proptest_config());
    let strategy = (
        algorithm,
        proptest::collection::vec(step_strategy(), 1..200),
    );
    runner
        .run(&strategy, |(algorithm, steps)| {
            let mut direct = algorithm.clone();
            let bulkhead: Bulkhead<CsLock> = Bulkhead::new("prop", algorithm.limit()).unwrap();
            let controller = Controller::new(algorithm);
            for (i, step) in steps.iter().enumerate() {
                let before = direct.limit();
                let sample = step.sample(before);
                let after = direct.update(&sample);
                prop_assert!(after >= 1, "step {}: limit {} below 1", i, after);
                prop_assert_eq!(
                    after,
                    direct.limit(),
                    "step {}: update and limit() disagree",
                    i
                );
                if sample.outcome.is_overload() {
                    prop_assert!(
                        after <= before,
                        "step {}: {:?} raised the limit {} -> {}",
                        i,
                        sample,
                        before,
                        after
                    );
                }
                let before = bulkhead.engine().max_concurrent();
                let sample = step.sample(before);
                controller.record(&bulkhead, &sample);
                let after = bulkhead.engine().max_concurrent();
                prop_assert!(after >= 1);
                if sample.outcome.is_overload() {
                    prop_assert!(
                        after <= before,
                        "step {} through the controller: {:?} raised the limit {} -> {}",
                        i,
                        sample,
                        before,
                        after
                    );
                }
            }
            Ok(())
        })
        .unwrap();
}

/// 256 cases per algorithm and wrapper; `PROPTEST_CASES` overrides it.
fn proptest_config() -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = 256;
    }
    // The runner is driven by hand, outside `proptest!`, so it has no
    // source file to persist failures next to; a failure prints its case.
    config.failure_persistence = None;
    config
}

fn windowed<L: Limit + Debug>(
    inner: impl Strategy<Value = L>,
) -> impl Strategy<Value = Windowed<L>> {
    (inner, 0u32..=12).prop_map(|(inner, min_samples)| Windowed::new(inner, min_samples))
}

#[test]
#[cfg_attr(miri, ignore = "proptest: minutes under miri")]
fn every_limit_aimd_never_raises_on_overload() {
    check_overload_never_raises(aimd_strategy());
    check_overload_never_raises(windowed(aimd_strategy()));
}

#[test]
#[cfg_attr(miri, ignore = "proptest: minutes under miri")]
fn every_limit_vegas_never_raises_on_overload() {
    check_overload_never_raises(vegas_strategy());
    check_overload_never_raises(windowed(vegas_strategy()));
}

#[test]
#[cfg_attr(miri, ignore = "proptest: minutes under miri")]
fn every_limit_gradient2_never_raises_on_overload() {
    check_overload_never_raises(gradient2_strategy());
    check_overload_never_raises(windowed(gradient2_strategy()));
}

#[test]
#[cfg_attr(miri, ignore = "proptest: minutes under miri")]
fn every_limit_any_limit_never_raises_on_overload() {
    check_overload_never_raises(any_limit_strategy());
    check_overload_never_raises(windowed(any_limit_strategy()));
}
