//! Bounded waits through embassy-time, on its std driver.

mod support;

use std::pin::pin;
use std::thread;

use bulkhead_embassy::raw::CriticalSectionRawMutex;
use bulkhead_embassy::{
    Bulkhead, Config, CsLock, EmbassyAcquire, EmbassyAcquireManyWithin, EmbassyAcquireWithin,
    Error, QueueOrder, acquire_many_until, acquire_many_within, acquire_until, acquire_within,
    new_static, to_core_duration,
};
use embassy_time::{Duration, Instant, TICK_HZ};
use support::{block_on, poll_once};

type Cs = CriticalSectionRawMutex;

fn compartment(max: usize) -> Bulkhead<Cs> {
    Bulkhead::new("test", max).unwrap()
}

// === fail fast ===

#[test]
fn zero_budget_fails_fast_and_counts_a_rejection() {
    let b = compartment(1);
    let _held = b.try_acquire().unwrap();
    let err = block_on(b.acquire_within(Duration::from_ticks(0))).unwrap_err();
    assert!(matches!(
        &err,
        Error::Full {
            name,
            max_concurrent: 1,
            active: 1
        } if name == "test"
    ));
    let s = b.state();
    assert_eq!((s.rejected, s.timed_out, s.waiting), (1, 0, 0));
}

#[test]
fn zero_budget_takes_a_free_seat() {
    let b = compartment(1);
    let seat = block_on(acquire_within(&b, Duration::from_ticks(0))).unwrap();
    assert_eq!(b.state().active, 1);
    drop(seat);
    assert_eq!(b.state().active, 0);
}

#[test]
fn past_deadline_fails_fast() {
    let b = compartment(1);
    let _held = b.try_acquire().unwrap();
    let err = block_on(acquire_until(&b, Instant::from_ticks(0))).unwrap_err();
    assert!(matches!(err, Error::Full { .. }));
    assert_eq!(b.state().rejected, 1);
}

// === bounded waits ===

#[test]
fn budget_runs_out_with_a_timeout_error() {
    let b = compartment(1);
    let _held = b.try_acquire().unwrap();
    let start = Instant::now();
    let err = block_on(b.acquire_within(Duration::from_millis(10))).unwrap_err();
    // Timers never fire early; how late they fire depends on the machine.
    assert!(start.elapsed() >= Duration::from_millis(10));
    assert_eq!(
        err,
        Error::Timeout {
            name: "test".into(),
            budget: core::time::Duration::from_millis(10)
        }
    );
    let s = b.state();
    assert_eq!((s.rejected, s.timed_out, s.waiting), (0, 1, 0));
}

#[test]
fn deadline_runs_out_with_a_timeout_error() {
    let b = compartment(1);
    let _held = b.try_acquire().unwrap();
    let deadline = Instant::now() + Duration::from_millis(5);
    let err = block_on(b.acquire_until(deadline)).unwrap_err();
    assert!(Instant::now() >= deadline);
    assert!(
        matches!(err, Error::Timeout { budget, .. } if budget <= core::time::Duration::from_millis(5))
    );
    assert_eq!(b.state().timed_out, 1);
}

#[test]
fn seat_freed_during_the_wait_is_handed_over() {
    let b = compartment(1);
    let held = b.try_acquire().unwrap();
    thread::scope(|s| {
        s.spawn(move || {
            thread::sleep(std::time::Duration::from_millis(10));
            drop(held);
        });
        let seat = block_on(b.acquire_within(Duration::from_secs(5))).unwrap();
        assert_eq!(b.state().active, 1);
        drop(seat);
    });
    let s = b.state();
    assert_eq!((s.active, s.rejected, s.timed_out), (0, 0, 0));
}

#[test]
fn endless_budget_waits_instead_of_overflowing() {
    // `Instant::now() + Duration::MAX` panics in embassy-time; ours must not.
    let b = compartment(1);
    drop(block_on(b.acquire_within(Duration::MAX)).unwrap());
    drop(block_on(b.acquire_until(Instant::MAX)).unwrap());

    let held = b.try_acquire().unwrap();
    thread::scope(|s| {
        s.spawn(move || {
            thread::sleep(std::time::Duration::from_millis(5));
            drop(held);
        });
        drop(block_on(b.acquire_within(Duration::MAX)).unwrap());
    });
    assert_eq!(b.state().timed_out, 0);
}

#[test]
fn dropping_the_wait_leaves_the_line() {
    let b = compartment(1);
    let held = b.try_acquire().unwrap();
    {
        let mut wait = pin!(b.acquire_within(Duration::from_secs(5)));
        assert!(poll_once(wait.as_mut()).is_pending());
        assert_eq!(b.state().waiting, 1);
    }
    assert_eq!(b.state().waiting, 0);
    drop(held);
    assert!(b.try_acquire().is_ok());
}

#[test]
fn a_seat_handed_over_before_the_drop_goes_to_the_next_waiter() {
    let b = compartment(1);
    let held = b.try_acquire().unwrap();
    let mut first = Box::pin(b.acquire_within(Duration::from_secs(5)));
    let mut second = pin!(b.acquire_within(Duration::from_secs(5)));
    assert!(poll_once(first.as_mut()).is_pending());
    assert!(poll_once(second.as_mut()).is_pending());
    drop(held); // handed to `first`, which never looks at it
    drop(first);
    let std::task::Poll::Ready(Ok(_seat)) = poll_once(second.as_mut()) else {
        panic!("the seat was lost with the dropped waiter");
    };
    assert_eq!(b.state().active, 1);
}

#[test]
fn works_for_any_lock() {
    // Core's generic type, reachable without a second dependency.
    use bulkhead_embassy::bulkhead_core;
    let cs: bulkhead_core::Bulkhead<CsLock> = bulkhead_core::Bulkhead::new("cs", 1).unwrap();
    drop(block_on(cs.acquire_within(Duration::from_millis(1))).unwrap());
    let embassy: Bulkhead<Cs> = new_static("embassy", 1);
    drop(block_on(embassy.acquire_within(Duration::from_millis(1))).unwrap());
}

// === weighted waits ===

#[test]
fn weighted_zero_budget_fails_fast_like_try_acquire_many() {
    let b = compartment(3);
    let held = b.try_acquire_many(2).unwrap();
    let err = block_on(b.acquire_many_within(2, Duration::from_ticks(0))).unwrap_err();
    assert!(matches!(
        err,
        Error::Full {
            max_concurrent: 3,
            active: 2,
            ..
        }
    ));
    assert_eq!(b.state().rejected, 1);
    // A past deadline is a zero budget too.
    let err = block_on(b.acquire_many_until(2, Instant::from_ticks(0))).unwrap_err();
    assert!(matches!(err, Error::Full { .. }));
    assert_eq!(b.state().rejected, 2);
    drop(held);
    let seat = block_on(acquire_many_within(&b, 3, Duration::from_ticks(0))).unwrap();
    assert_eq!((seat.weight(), b.state().active), (3, 3));
}

#[test]
fn weighted_bad_weights_are_refused_with_and_without_a_budget() {
    let b = compartment(2);
    for budget in [Duration::from_ticks(0), Duration::from_secs(5)] {
        let err = block_on(b.acquire_many_within(0, budget)).unwrap_err();
        assert!(
            matches!(err, Error::ZeroWeight { .. }),
            "{budget:?}: {err:?}"
        );
        let err = block_on(b.acquire_many_within(3, budget)).unwrap_err();
        assert!(
            matches!(
                err,
                Error::WeightAboveLimit {
                    weight: 3,
                    max_concurrent: 2,
                    ..
                }
            ),
            "{budget:?}: {err:?}"
        );
    }
    // A weight above the limit is a rejection; a zero weight is not.
    let s = b.state();
    assert_eq!((s.rejected, s.timed_out, s.active, s.waiting), (2, 0, 0, 0));
}

#[test]
fn weighted_wait_times_out_and_passes_on_the_seats_kept_for_it() {
    let b = compartment(2);
    let first = b.try_acquire().unwrap();
    let second = b.try_acquire().unwrap();
    let start = Instant::now();
    let mut heavy = pin!(b.acquire_many_within(2, Duration::from_millis(20)));
    assert!(poll_once(heavy.as_mut()).is_pending());
    let mut light = pin!(b.acquire_within(Duration::from_secs(5)));
    assert!(poll_once(light.as_mut()).is_pending());
    drop(first); // one free, kept for the heavy waiter at the head
    assert!(poll_once(light.as_mut()).is_pending());
    assert!(matches!(b.try_acquire(), Err(Error::Full { .. })));
    assert_eq!((b.state().active, b.state().waiting), (1, 2));

    let err = block_on(heavy).unwrap_err();
    assert!(start.elapsed() >= Duration::from_millis(20));
    assert_eq!(
        err,
        Error::Timeout {
            name: "test".into(),
            budget: core::time::Duration::from_millis(20)
        }
    );
    // The kept seat went to the next waiter when the heavy one left.
    let std::task::Poll::Ready(Ok(seat)) = poll_once(light.as_mut()) else {
        panic!("the seat kept for the heavy waiter was not passed on");
    };
    assert_eq!(seat.weight(), 1);
    let s = b.state();
    assert_eq!((s.active, s.waiting, s.timed_out, s.rejected), (2, 0, 1, 1));
    drop((seat, second));
}

#[test]
fn weighted_deadline_runs_out_with_a_timeout_error() {
    let b = compartment(2);
    let _held = b.try_acquire().unwrap();
    let deadline = Instant::now() + Duration::from_millis(5);
    let err = block_on(acquire_many_until(&b, 2, deadline)).unwrap_err();
    assert!(Instant::now() >= deadline);
    assert!(
        matches!(err, Error::Timeout { budget, .. } if budget <= core::time::Duration::from_millis(5))
    );
    assert_eq!(b.state().timed_out, 1);
}

#[test]
fn weighted_seats_freed_during_the_wait_are_handed_over_together() {
    let b = compartment(3);
    let mut held = b.try_acquire_many(3).unwrap();
    let part = held.split(1).unwrap();
    thread::scope(|s| {
        s.spawn(move || {
            thread::sleep(std::time::Duration::from_millis(5));
            drop(part); // one free: not enough
            thread::sleep(std::time::Duration::from_millis(5));
            drop(held); // three free
        });
        let seat = block_on(b.acquire_many_until(3, Instant::now() + Duration::from_secs(5)));
        assert_eq!(seat.unwrap().weight(), 3);
    });
    let s = b.state();
    assert_eq!((s.active, s.rejected, s.timed_out), (0, 0, 0));
}

#[test]
fn weighted_endless_budget_waits_instead_of_overflowing() {
    let b = compartment(2);
    drop(block_on(b.acquire_many_within(2, Duration::MAX)).unwrap());
    drop(block_on(b.acquire_many_until(2, Instant::MAX)).unwrap());
    assert_eq!(b.state().active, 0);
}

#[test]
fn dropping_a_weighted_wait_leaves_the_line_and_passes_kept_seats_on() {
    let b = compartment(2);
    let first = b.try_acquire().unwrap();
    let _second = b.try_acquire().unwrap();
    let mut light = pin!(b.acquire_within(Duration::from_secs(5)));
    {
        let mut heavy = pin!(b.acquire_many_within(2, Duration::from_secs(5)));
        assert!(poll_once(heavy.as_mut()).is_pending());
        assert!(poll_once(light.as_mut()).is_pending());
        drop(first); // kept for `heavy`
        assert!(poll_once(light.as_mut()).is_pending());
        assert_eq!(b.state().waiting, 2);
    }
    assert!(matches!(
        poll_once(light.as_mut()),
        std::task::Poll::Ready(Ok(_))
    ));
    assert_eq!(b.state().waiting, 0);
}

#[test]
fn a_limit_shrinking_below_a_waiting_weight_refuses_it_before_its_budget() {
    let b = compartment(3);
    let held = b.try_acquire_many(3).unwrap();
    let mut heavy = pin!(b.acquire_many_within(3, Duration::from_secs(5)));
    assert!(poll_once(heavy.as_mut()).is_pending());
    b.set_max_concurrent(2).unwrap();
    drop(held); // the drain reaches the heavy waiter: it can never fit now
    let std::task::Poll::Ready(Err(err)) = poll_once(heavy.as_mut()) else {
        panic!("a waiter heavier than the new limit kept waiting");
    };
    assert!(matches!(
        err,
        Error::WeightAboveLimit {
            weight: 3,
            max_concurrent: 2,
            ..
        }
    ));
    let s = b.state();
    assert_eq!((s.rejected, s.timed_out, s.waiting, s.active), (1, 0, 0, 0));
}

#[test]
fn debug_names_the_future_and_its_weight() {
    let b = compartment(1);
    let many = format!("{:?}", b.acquire_many_within(2, Duration::from_ticks(0)));
    assert!(many.starts_with("EmbassyAcquireManyWithin"), "{many}");
    assert!(many.contains("weight: 2"), "{many}");
    let one = format!("{:?}", b.acquire_within(Duration::from_ticks(0)));
    assert!(one.starts_with("EmbassyAcquireWithin"), "{one}");
    assert!(one.contains("weight: 1"), "{one}");
}

#[test]
#[should_panic(expected = "`EmbassyAcquireManyWithin` polled after it completed")]
fn polling_a_finished_weighted_wait_panics() {
    let b = compartment(1);
    let mut wait = pin!(b.acquire_many_within(1, Duration::from_ticks(0)));
    assert!(poll_once(wait.as_mut()).is_ready());
    let _ = poll_once(wait.as_mut());
}

// === queue order in a static ===

static NEWEST_FIRST: Bulkhead<Cs> =
    Bulkhead::from_config_static(Config::new("lifo", 1).queue_order(QueueOrder::Lifo));

#[test]
fn a_static_built_from_a_const_config_keeps_its_queue_order() {
    assert_eq!(NEWEST_FIRST.queue_order(), QueueOrder::Lifo);
    let held = NEWEST_FIRST.try_acquire().unwrap();
    let mut old = pin!(NEWEST_FIRST.acquire_within(Duration::from_secs(5)));
    let mut new = pin!(NEWEST_FIRST.acquire_within(Duration::from_secs(5)));
    assert!(poll_once(old.as_mut()).is_pending());
    assert!(poll_once(new.as_mut()).is_pending());
    drop(held);
    let std::task::Poll::Ready(Ok(seat)) = poll_once(new.as_mut()) else {
        panic!("the newest waiter was not served first");
    };
    assert!(poll_once(old.as_mut()).is_pending());
    drop(seat);
    assert!(matches!(
        poll_once(old.as_mut()),
        std::task::Poll::Ready(Ok(_))
    ));
}

// === duration conversion ===

#[test]
fn durations_convert_exactly_and_never_overflow() {
    let cases = [0, 1, 999, 1_000, 1_500_000, u64::MAX / 2, u64::MAX];
    for ticks in cases {
        let d = to_core_duration(Duration::from_ticks(ticks));
        assert_eq!(d.as_secs(), ticks / TICK_HZ, "{ticks} ticks");
        let nanos = u128::from(ticks % TICK_HZ) * 1_000_000_000 / u128::from(TICK_HZ);
        assert_eq!(u128::from(d.subsec_nanos()), nanos, "{ticks} ticks");
    }
    assert_eq!(
        to_core_duration(Duration::from_millis(1500)),
        core::time::Duration::from_millis(1500)
    );
}

// === auto traits ===

#[test]
fn futures_and_seats_are_send_with_a_shared_lock() {
    fn send<T: Send>() {}
    fn sync<T: Sync>() {}
    send::<Bulkhead<Cs>>();
    sync::<Bulkhead<Cs>>();
    send::<EmbassyAcquireWithin<'static, bulkhead_embassy::EmbassyLock<Cs>>>();
    send::<EmbassyAcquireManyWithin<'static, bulkhead_embassy::EmbassyLock<Cs>>>();
    send::<bulkhead_embassy::Seat<'static, Cs>>();
}
