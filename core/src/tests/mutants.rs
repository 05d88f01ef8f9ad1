//! Behaviour that `cargo mutants` over core's logic found untested (see
//! docs/design.md, "Verification"): each test names what it pins down, and
//! would fail if that code were replaced by a constant or its comparison
//! flipped.

use std::format;
use std::sync::Arc;
use std::time::Duration;

use super::{Task, boxed, fifo};
use crate::limit::{Adaptive, Aimd, AimdParams, Controller};
use crate::{Bulkhead, CsLock, OwnedSeat};

/// Every `Debug` impl of core names its type and its compartment, and the
/// compartment's shows its state.
#[test]
fn debug_output_names_the_type_and_the_compartment() {
    let b = Arc::new(fifo(1));
    let shown = format!("{b:?}");
    assert!(
        shown.starts_with("Bulkhead")
            && shown.contains("Fifo")
            && shown.contains("\"test\"")
            && shown.contains("max_concurrent: 1"),
        "{shown}"
    );

    let seat = b.try_acquire().unwrap();
    let shown = format!("{seat:?}");
    assert!(
        shown.starts_with("Seat") && shown.contains("\"test\""),
        "{shown}"
    );

    let mut wait = boxed(b.acquire());
    let task = Task::new();
    assert!(task.poll(wait.as_mut()).is_pending());
    let shown = format!("{wait:?}");
    assert!(
        shown.starts_with("Acquire") && shown.contains("\"test\"") && shown.contains("Queued"),
        "{shown}"
    );
    drop(wait);

    let timed = b.acquire_timeout(core::time::Duration::from_millis(250), |_| {
        core::future::pending::<()>()
    });
    let shown = format!("{timed:?}");
    assert!(
        shown.starts_with("AcquireTimeout")
            && shown.contains("\"test\"")
            && shown.contains("250ms"),
        "{shown}"
    );
    drop(timed);

    let owned_wait = OwnedSeat::acquire(b.clone());
    let shown = format!("{owned_wait:?}");
    assert!(
        shown.starts_with("AcquireOwned") && shown.contains("\"test\""),
        "{shown}"
    );
    drop(owned_wait);
    drop(seat);

    let owned = OwnedSeat::try_acquire(b.clone()).unwrap();
    let shown = format!("{owned:?}");
    assert!(
        shown.starts_with("OwnedSeat") && shown.contains("\"test\""),
        "{shown}"
    );
    drop(owned);

    let aimd = || {
        Aimd::new(AimdParams {
            initial: 2,
            min: 1,
            ..AimdParams::DEFAULT
        })
        .unwrap()
    };
    let controller = Controller::new(aimd());
    let shown = format!("{controller:?}");
    assert!(
        shown.starts_with("Controller") && shown.contains("changes: 0"),
        "{shown}"
    );
    let adaptive = Adaptive::new(Bulkhead::<CsLock>::new("api", 2).unwrap(), aimd(), || 0u64);
    let shown = format!("{adaptive:?}");
    assert!(
        shown.starts_with("Adaptive") && shown.contains("\"api\"") && shown.contains("Controller"),
        "{shown}"
    );
    let seat = adaptive.try_acquire().unwrap();
    let shown = format!("{seat:?}");
    assert!(
        shown.starts_with("AdaptiveSeat")
            && shown.contains("\"api\"")
            && shown.contains("in_flight: 1"),
        "{shown}"
    );
}

/// `is_closed` is false on an open compartment, and true once closed.
#[test]
fn is_closed_tells_open_from_closed() {
    let b = fifo(2);
    assert!(!b.is_closed());
    let _seat = b.try_acquire().unwrap();
    assert!(!b.is_closed(), "a held seat does not close it");
    b.close();
    assert!(b.is_closed());
    assert!(matches!(
        b.try_acquire().map(drop),
        Err(crate::Error::Closed { .. })
    ));
}

/// A ratio parameter accepts both ends of its documented range and
/// refuses the value just outside each.
#[test]
fn ratio_parameters_accept_both_ends_of_their_range() {
    use crate::limit::Fraction;
    let below = |f: Fraction| Fraction::from_q16(f.to_q16() - 1);
    let above = |f: Fraction| Fraction::from_q16(f.to_q16() + 1);
    let aimd = |backoff| {
        Aimd::new(AimdParams {
            backoff,
            ..AimdParams::DEFAULT
        })
    };
    // backoff: [0.5, 1).
    let half = Fraction::new(1, 2);
    assert!(aimd(half).is_ok(), "0.5 is allowed");
    assert!(aimd(below(half)).is_err(), "below 0.5 is not");
    assert!(
        aimd(below(Fraction::ONE)).is_ok(),
        "just below 1 is allowed"
    );
    assert!(aimd(Fraction::ONE).is_err(), "1 would never back off");
    // Gradient2: rtt_tolerance in [1, 16], smoothing in (0, 1].
    use crate::limit::{Gradient2, Gradient2Params};
    let gradient2 = |rtt_tolerance, smoothing| {
        Gradient2::new(Gradient2Params {
            rtt_tolerance,
            smoothing,
            ..Gradient2Params::DEFAULT
        })
    };
    let sixteen = Fraction::new(16, 1);
    let smooth = Gradient2Params::DEFAULT.smoothing;
    let tolerance = Gradient2Params::DEFAULT.rtt_tolerance;
    assert!(gradient2(Fraction::ONE, smooth).is_ok(), "tolerance 1");
    assert!(gradient2(below(Fraction::ONE), smooth).is_err());
    assert!(gradient2(sixteen, smooth).is_ok(), "tolerance 16");
    assert!(gradient2(above(sixteen), smooth).is_err());
    assert!(gradient2(tolerance, Fraction::ONE).is_ok(), "smoothing 1");
    assert!(gradient2(tolerance, above(Fraction::ONE)).is_err());
    assert!(
        gradient2(tolerance, Fraction::from_q16(1)).is_ok(),
        "the least smoothing"
    );
    assert!(
        gradient2(tolerance, Fraction::from_q16(0)).is_err(),
        "smoothing 0"
    );
}

/// `Limit` through `&mut T` forwards every method to `T`.
#[test]
fn a_limit_behind_a_mutable_reference_forwards_every_method() {
    use crate::limit::{CallOutcome, Limit, Sample};
    let params = AimdParams {
        initial: 4,
        min: 1,
        max: 10,
        ..AimdParams::DEFAULT
    };
    let busy = Sample::from_nanos(1_000_000, 4, CallOutcome::Success);
    let mut direct = Aimd::new(params).unwrap();
    let mut inner = Aimd::new(params).unwrap();
    assert_eq!(direct.window(), 1, "the default window: every sample");
    {
        let mut by_ref: &mut Aimd = &mut inner;
        assert_eq!(Limit::limit(&by_ref), 4);
        assert_eq!(Limit::window(&by_ref), direct.window());
        assert_eq!(Limit::update(&mut by_ref, &busy), direct.update(&busy));
        assert_eq!(
            Limit::update_window(&mut by_ref, &busy),
            direct.update_window(&busy)
        );
        assert_eq!(Limit::limit(&by_ref), 6, "two increases went through");
    }
    assert_eq!(inner.limit(), direct.limit());
}

/// `MAX_CONCURRENT_LIMIT` is the documented figure for the target: the
/// 32-bit field of the compartment less its top bit on 64-bit targets, and a quarter of the
/// word's count field (two bits of headroom) on 32-bit ones.
#[test]
fn the_concurrency_limit_is_the_documented_figure() {
    let expected = if cfg!(target_pointer_width = "64") {
        2_147_483_647
    } else {
        67_108_863
    };
    assert_eq!(crate::MAX_CONCURRENT_LIMIT, expected);
}

/// A `Duration` converts to the budget it is: zero fails fast.
#[test]
fn a_duration_converts_to_its_wait_budget() {
    use crate::MaxWait;
    use core::time::Duration;
    let budget = Duration::from_millis(250);
    assert_eq!(MaxWait::from(budget), MaxWait::UpTo(budget));
    assert_eq!(MaxWait::from(Duration::ZERO), MaxWait::FailFast);
}

/// `MaxWait`'s setting strings, read and written, in the unit tests (which
/// miri and every mutant run see; the doctests show a few of these).
#[test]
fn wait_budgets_parse_and_print_as_settings() {
    use crate::MaxWait;
    use core::time::Duration;
    let ok = |text: &str, want: MaxWait| {
        assert_eq!(text.parse::<MaxWait>(), Ok(want), "{text:?}");
    };
    for text in [
        "0",
        "fail_fast",
        "Fail-Fast",
        "FAILFAST",
        " 0 ",
        "0ms",
        "0.0s",
    ] {
        ok(text, MaxWait::FailFast);
    }
    ok("forever", MaxWait::Forever);
    ok(" Forever ", MaxWait::Forever);
    ok("250ms", MaxWait::from_millis(250));
    ok("250 ms", MaxWait::from_millis(250));
    ok(" 1.5S ", MaxWait::from_millis(1500));
    ok(".5s", MaxWait::from_millis(500));
    ok("2.s", MaxWait::from_millis(2000));
    ok("90us", MaxWait::up_to(Duration::from_micros(90)));
    ok("90µs", MaxWait::up_to(Duration::from_micros(90)));
    ok("7ns", MaxWait::up_to(Duration::from_nanos(7)));
    ok("1m", MaxWait::up_to(Duration::from_secs(60)));
    ok("1h", MaxWait::up_to(Duration::from_secs(3600)));
    ok("1.000000001s", MaxWait::up_to(Duration::new(1, 1)));
    ok("1.25h", MaxWait::up_to(Duration::from_secs(4500)));
    // Seconds above 2^32 keep their sub-second part.
    ok(
        "5000000000.5s",
        MaxWait::up_to(Duration::new(5_000_000_000, 500_000_000)),
    );
    for text in [
        "",
        "250",
        "2 parsecs",
        "ms",
        ".s",
        "1..5s",
        "1.5.0s",
        "-1s",
        "1e3ms",
        "1.0000000001s",
        "99999999999999999999999999999999999999999h",
    ] {
        assert!(text.parse::<MaxWait>().is_err(), "{text:?} is not a budget");
    }

    let setting = |w: MaxWait| format!("{}", w.as_setting());
    assert_eq!(setting(MaxWait::FailFast), "fail_fast");
    assert_eq!(setting(MaxWait::up_to(Duration::ZERO)), "fail_fast");
    assert_eq!(setting(MaxWait::Forever), "forever");
    assert_eq!(setting(MaxWait::from_millis(2000)), "2s");
    assert_eq!(setting(MaxWait::from_millis(2500)), "2500ms");
    assert_eq!(
        setting(MaxWait::up_to(Duration::from_micros(1500))),
        "1500us"
    );
    assert_eq!(
        setting(MaxWait::up_to(Duration::from_nanos(1500))),
        "1500ns"
    );
    for w in [
        MaxWait::from_millis(2500),
        MaxWait::up_to(Duration::new(3, 7)),
        MaxWait::Forever,
        MaxWait::FailFast,
    ] {
        assert_eq!(setting(w).parse(), Ok(w), "{w:?} reads back");
    }

    assert_eq!(format!("{}", MaxWait::from_millis(50)), "up to 50ms");
    assert_eq!(format!("{}", MaxWait::Forever), "forever");
    assert_eq!(format!("{}", MaxWait::FailFast), "fail fast");
    assert_eq!(format!("{}", MaxWait::UpTo(Duration::ZERO)), "fail fast");
    let budget = Duration::from_millis(3);
    assert_eq!(MaxWait::UpTo(budget).budget(), Some(budget));
    assert_eq!(MaxWait::UpTo(Duration::ZERO).budget(), None);
    assert_eq!(MaxWait::Forever.budget(), None);
    assert!(MaxWait::FailFast.is_fail_fast() && MaxWait::UpTo(Duration::ZERO).is_fail_fast());
    assert!(!MaxWait::UpTo(budget).is_fail_fast() && !MaxWait::Forever.is_fail_fast());
    assert!(MaxWait::Forever.is_unbounded() && !MaxWait::UpTo(budget).is_unbounded());
    assert!(!MaxWait::FailFast.is_unbounded());
    assert!(format!("{}", crate::ParseMaxWaitError).contains("not a wait budget"));
}

/// AIMD: a round trip equal to the timeout is a success; one nanosecond
/// more counts as a drop.
#[test]
fn aimd_backs_off_only_for_a_round_trip_slower_than_the_timeout() {
    use crate::limit::{CallOutcome, Limit, Sample};
    use core::time::Duration;
    let mut aimd = Aimd::new(AimdParams {
        initial: 10,
        min: 1,
        max: 100,
        timeout: Duration::from_millis(5),
        ..AimdParams::DEFAULT
    })
    .unwrap();
    let at = Sample::from_nanos(5_000_000, 10, CallOutcome::Success);
    assert_eq!(aimd.update(&at), 11, "at the timeout: + 1");
    let over = Sample::from_nanos(5_000_001, 11, CallOutcome::Success);
    assert_eq!(aimd.update(&over), 9, "slower: floor(0.9 x 11)");
}

/// The controller's window mean: exact nanoseconds with a 64-bit `usize`;
/// on 32-bit targets each round trip rounds to the nearest 256 ns unit
/// (half a unit up), so two 200 ns calls average 256 ns and two 100 ns
/// calls 0 (read as the 1 ns floor).
#[test]
fn the_window_mean_rounds_each_round_trip_to_the_nearest_unit() {
    use crate::limit::{CallOutcome, Limit, Sample};
    struct Spy(std::vec::Vec<u64>);
    impl Limit for Spy {
        fn limit(&self) -> usize {
            2
        }
        fn update(&mut self, sample: &Sample) -> usize {
            self.0.push(sample.rtt());
            2
        }
        fn window(&self) -> usize {
            2
        }
    }
    let b = fifo(2);
    let c = Controller::new(Spy(std::vec::Vec::new()));
    for nanos in [200, 200, 100, 100] {
        c.record(&b, &Sample::from_nanos(nanos, 1, CallOutcome::Success));
    }
    let expected = if cfg!(target_pointer_width = "64") {
        [200, 100]
    } else {
        [256, 1]
    };
    assert_eq!(c.try_inspect(|s| s.0.clone()).unwrap(), expected);
}

/// Gradient2's long-term average: a plain mean over the first ten
/// samples, then an exponential average of weight `2 / (long_window + 1)`.
#[test]
fn gradient2_long_average_weighs_each_sample_by_its_window() {
    use crate::limit::{CallOutcome, Gradient2, Gradient2Params, Limit, Sample};
    let mut g = Gradient2::new(Gradient2Params {
        long_window: 9,
        ..Gradient2Params::DEFAULT
    })
    .unwrap();
    let ms = |n: u64| Sample::from_nanos(n * 1_000_000, 0, CallOutcome::Success);
    for n in [5, 15, 5, 15, 5, 15, 5, 15, 5, 15] {
        g.update(&ms(n));
    }
    assert_eq!(g.long_rtt_nanos(), 10_000_000, "the mean of the first ten");
    g.update(&ms(20));
    assert_eq!(
        g.long_rtt_nanos(),
        12_000_000,
        "10 ms + 2 / (9 + 1) x (20 ms - 10 ms)"
    );
    // Recovery cuts 5 % only from an average above twice the round trip.
    g.update(&ms(6));
    assert_eq!(g.long_rtt_nanos(), 10_800_000, "12 - 0.2 x 6: 10.8 < 2 x 6");
    g.update(&ms(4));
    assert_eq!(
        g.long_rtt_nanos(),
        8_968_000,
        "10.8 - 0.2 x 6.8 = 9.44 > 2 x 4: less 5 %"
    );
}

/// Gradient2 holds only while less than half the seats are used: at
/// exactly half (`2 x in_flight == limit`) it updates.
#[test]
fn gradient2_updates_at_exactly_half_the_seats_in_use() {
    use crate::limit::{CallOutcome, Gradient2, Gradient2Params, Limit, Sample};
    let run = |in_flight| {
        let mut g = Gradient2::new(Gradient2Params {
            initial: 20,
            min: 4,
            max: 200,
            ..Gradient2Params::DEFAULT
        })
        .unwrap();
        let steady = |in_flight| Sample::from_nanos(10_000_000, in_flight, CallOutcome::Success);
        g.update(&steady(in_flight));
        g.update(&steady(100));
        g.limit()
    };
    // Steady latency: + 0.2 x 4 = + 0.8 per update that is not held.
    assert_eq!(run(9), 20, "9 of 20 held: 20.8, whole seats 20");
    assert_eq!(run(10), 21, "10 of 20 updated: 21.6, whole seats 21");
}

/// A lock that counts how often core takes or tries it.
#[derive(Default)]
struct CountingLock {
    inner: super::TestLock,
    calls: std::sync::atomic::AtomicUsize,
}

// SAFETY: every call is passed on to `TestLock`, which keeps the promises.
unsafe impl crate::RawLock for CountingLock {
    unsafe fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
        self.calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: as for `TestLock`; the caller's contract is passed on.
        unsafe { self.inner.with_lock(f) }
    }

    unsafe fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        self.calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { self.inner.try_with_lock(f) }
    }
    // This test reads no counts.
    fn counts(&self) -> crate::Counts {
        crate::Counts::NONE
    }
}

/// With nobody waiting, taking and giving back a seat never touches the
/// lock, in either admission mode; with a waiter, the release does.
#[cfg(feature = "barging")]
#[test]
fn a_release_with_no_waiter_never_touches_the_lock() {
    use crate::{Admission, Config};
    for admission in [
        Admission::Fifo,
        Admission::Barging,
        Admission::BoundedBarging,
    ] {
        let b = Bulkhead::with_lock(
            Config::new("test", 2).admission(admission),
            CountingLock::default(),
        )
        .unwrap();
        let calls = || {
            b.raw_lock()
                .calls
                .load(std::sync::atomic::Ordering::Relaxed)
        };
        for _ in 0..3 {
            let one = b.try_acquire().unwrap();
            let two = b.try_acquire().unwrap();
            drop(one);
            drop(two);
        }
        assert_eq!(calls(), 0, "{admission:?}: no waiter, no lock");

        let seat = b.try_acquire().unwrap();
        let _other = b.try_acquire().unwrap();
        let task = Task::new();
        let mut wait = boxed(b.acquire());
        assert!(task.poll(wait.as_mut()).is_pending());
        let before = calls();
        drop(seat);
        assert!(
            calls() > before,
            "{admission:?}: a release with a waiter hands on"
        );
    }
}

/// Gradient2 rounds `gradient x limit` to the nearest 2^-16 of a seat
/// before adding the queue allowance. Built so that the exact target is
/// 1/256 of a seat below 5, where `limit()` rounds up: a gradient of
/// 255/256 (a long average of 255 us against a 256 us round trip) on a
/// limit of 1, plus a queue of 4, with full smoothing.
#[test]
fn gradient2_rounds_its_target_to_nearest() {
    use crate::limit::{CallOutcome, Fraction, Gradient2, Gradient2Params, Limit, Sample};
    let mut g = Gradient2::new(Gradient2Params {
        initial: 1,
        min: 1,
        max: 200,
        rtt_tolerance: Fraction::ONE,
        smoothing: Fraction::ONE,
        queue_size: 4,
        ..Gradient2Params::DEFAULT
    })
    .unwrap();
    // Idle (held): only the long average learns, 254 us.
    assert_eq!(
        g.update(&Sample::from_nanos(254_000, 0, CallOutcome::Success)),
        1
    );
    // The mean of 254 and 256 is 255 us: gradient 65536 x 255 / 256.
    assert_eq!(
        g.update(&Sample::from_nanos(256_000, 1, CallOutcome::Success)),
        5
    );
}

/// Rounding to nearest in Gradient2's update is half a unit up: with the
/// exact target 257 / 2^16 of a seat below 5 (a gradient of 65279 / 65536,
/// a long average of 261,116 ns against 262,144 ns), the limit stays 4.
/// Rounding a whole unit up, in the target or in the smoothing, reaches 5.
#[test]
fn gradient2_rounds_half_a_unit_up_not_more() {
    use crate::limit::{CallOutcome, Fraction, Gradient2, Gradient2Params, Limit, Sample};
    let mut g = Gradient2::new(Gradient2Params {
        initial: 1,
        min: 1,
        max: 200,
        rtt_tolerance: Fraction::ONE,
        smoothing: Fraction::ONE,
        queue_size: 4,
        ..Gradient2Params::DEFAULT
    })
    .unwrap();
    assert_eq!(
        g.update(&Sample::from_nanos(260_088, 0, CallOutcome::Success)),
        1
    );
    assert_eq!(
        g.update(&Sample::from_nanos(262_144, 1, CallOutcome::Success)),
        4
    );
}

/// `Windowed` reports the smallest window it was given, 0 read as 1.
#[test]
fn windowed_reports_its_smallest_window() {
    use crate::limit::Windowed;
    let aimd = || Aimd::new(AimdParams::DEFAULT).unwrap();
    assert_eq!(Windowed::new(aimd(), 4).min_samples(), 4);
    assert_eq!(Windowed::new(aimd(), 0).min_samples(), 1);
}

/// In debug builds a node that is dropped while still linked is reported
/// (the check that also lets miri and loom see a drainer's late touch).
/// The list is never used after the node is gone.
#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "a linked node is dropped")]
fn a_node_dropped_while_linked_is_reported() {
    use crate::list::{List, Node};
    let node = std::boxed::Box::pin(Node::new(crate::weight::Weight::ONE));
    let mut list = List::new();
    // SAFETY: the node is pinned and valid while linked; the test drops it
    // linked on purpose and never touches `list` again.
    unsafe {
        list.push_back(
            core::ptr::NonNull::from(&*node),
            std::task::Waker::noop().clone(),
        )
    };
    drop(node);
}

/// Gradient2's recovery needs an average strictly above twice the round
/// trip: at exactly twice it keeps the average.
#[test]
fn gradient2_recovery_starts_above_twice_the_round_trip() {
    use crate::limit::{CallOutcome, Gradient2, Gradient2Params, Limit, Sample};
    let mut g = Gradient2::new(Gradient2Params {
        long_window: 9,
        ..Gradient2Params::DEFAULT
    })
    .unwrap();
    let ms = |n: u64| Sample::from_nanos(n * 1_000_000, 0, CallOutcome::Success);
    for _ in 0..10 {
        g.update(&ms(9));
    }
    g.update(&ms(4));
    assert_eq!(
        g.long_rtt_nanos(),
        8_000_000,
        "9 - 0.2 x 5 = 8 = 2 x 4: no cut"
    );
}

/// Smoothing down rounds half a unit up too: from 3 seats towards an
/// exact target 257 / 2^16 of a seat below 2 (a gradient of 43605 / 65536:
/// a long average of 174,420 ns against 262,144 ns), the limit is 1.
#[test]
fn gradient2_smooths_down_to_nearest() {
    use crate::limit::{CallOutcome, Fraction, Gradient2, Gradient2Params, Limit, Sample};
    let mut g = Gradient2::new(Gradient2Params {
        initial: 3,
        min: 1,
        max: 200,
        rtt_tolerance: Fraction::ONE,
        smoothing: Fraction::ONE,
        queue_size: 0,
        ..Gradient2Params::DEFAULT
    })
    .unwrap();
    assert_eq!(
        g.update(&Sample::from_nanos(86_696, 0, CallOutcome::Success)),
        3
    );
    assert_eq!(
        g.update(&Sample::from_nanos(262_144, 2, CallOutcome::Success)),
        1
    );
}

/// With a window of one sample, each sample reaches the algorithm as it
/// is, its round trip exact on every target (no 256 ns units on 32-bit
/// ones, as a window's sum has).
#[test]
fn a_window_of_one_feeds_each_sample_as_it_is() {
    use crate::limit::{CallOutcome, Limit, Sample};
    struct Spy(std::vec::Vec<u64>);
    impl Limit for Spy {
        fn limit(&self) -> usize {
            2
        }
        fn update(&mut self, sample: &Sample) -> usize {
            self.0.push(sample.rtt());
            2
        }
    }
    let b = fifo(2);
    let c = Controller::new(Spy(std::vec::Vec::new()));
    for nanos in [200, 300, 1_000_001] {
        c.record(&b, &Sample::from_nanos(nanos, 1, CallOutcome::Success));
    }
    // The first sample learns the window size through the window (256 ns
    // units on 32-bit targets); the others go as they are.
    assert_eq!(
        c.try_inspect(|s| s.0.clone()).unwrap(),
        [
            if cfg!(target_pointer_width = "64") {
                200
            } else {
                256
            },
            300,
            1_000_001
        ]
    );
}

/// `CsLock` keeps the compartment's counts (core keeps none): a rejection
/// and a timed-out wait on a `Bulkhead<CsLock>` read back in its state.
#[test]
fn a_critical_section_compartment_counts_its_rejections_and_time_outs() {
    let b: Bulkhead<CsLock> = Bulkhead::new("cs", 1).unwrap();
    assert_eq!((b.state().rejected, b.state().timed_out), (0, 0));
    let held = b.try_acquire().unwrap();
    assert!(b.try_acquire().is_err());
    let mut wait = boxed(b.acquire());
    let task = Task::new();
    assert!(task.poll(wait.as_mut()).is_pending());
    assert!(wait.as_mut().time_out(Duration::from_millis(5)).is_err());
    let s = b.state();
    assert_eq!((s.rejected, s.timed_out), (1, 1));
    drop(held);
}

/// A lock that keeps no warning flag (the trait's default) never claims
/// the event-loop warning: adapters log it only when their lock says so.
#[test]
fn a_lock_without_a_warning_flag_never_claims_the_warning() {
    let lock = super::TestLock::default();
    assert!(!crate::RawLock::claim_event_loop_warning(&lock));
    assert!(!crate::RawLock::claim_event_loop_warning(&lock));
}
