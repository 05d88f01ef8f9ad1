//! Bounded waits through embassy-time, on its std driver.

mod support;

use std::pin::pin;
use std::thread;

use bulkhead_embassy::raw::CriticalSectionRawMutex;
use bulkhead_embassy::{
    Bulkhead, CsLock, EmbassyAcquire, EmbassyAcquireWithin, Error, acquire_until, acquire_within,
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
    send::<bulkhead_embassy::Seat<'static, Cs>>();
}
