//! Execute, wrap, fallback, policy outcomes, rejection timestamps, and the
//! seat coming back on panic.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use bulkhead_std::MaxWait;
use bulkhead_std::prelude::*;
use bulkhead_std::{Bulkhead, Error, Outcome, Policy};

#[derive(Debug, PartialEq)]
struct Business(&'static str);

fn current_thread_rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

#[test]
fn execute_runs_the_work_and_passes_its_error_through() {
    let b = Bulkhead::new("db", 1).unwrap();
    let r: Result<Result<u8, Business>, Error> =
        b.execute(MaxWait::FailFast, || Err(Business("no row")));
    assert_eq!(r, Ok(Err(Business("no row"))));
    assert_eq!(b.state().active, 0);
}

#[test]
fn execute_rejects_without_running_the_work() {
    let b = Bulkhead::new("db", 1).unwrap();
    let _held = b.try_acquire().unwrap();
    let r = b.execute(MaxWait::FailFast, || unreachable!("must not run"));
    assert!(matches!(r, Err::<(), _>(Error::Full { .. })));
}

#[test]
fn a_panic_in_execute_releases_the_seat_and_propagates_unchanged() {
    let b = Bulkhead::new("db", 1).unwrap();
    let payload = catch_unwind(AssertUnwindSafe(|| {
        b.execute(MaxWait::FailFast, || {
            std::panic::panic_any(Business("boom"))
        })
    }))
    .unwrap_err();
    assert_eq!(payload.downcast_ref::<Business>(), Some(&Business("boom")));
    assert_eq!(b.state().active, 0);
}

#[test]
fn a_panic_in_run_releases_the_seat() {
    let b = Bulkhead::new("db", 1).unwrap();
    let rt = current_thread_rt();
    let r = catch_unwind(AssertUnwindSafe(|| {
        rt.block_on(b.try_run(async { panic!("async boom") }))
    }));
    assert!(r.is_err());
    assert_eq!(b.state().active, 0);
}

#[test]
fn wrap_bulkheads_every_call() {
    let b = Bulkhead::new("cache", 1).unwrap();
    let double = b.wrap(MaxWait::FailFast, |x: u32| x * 2);
    assert_eq!(double(21), Ok(42));
    let held = b.try_acquire().unwrap();
    assert!(matches!(double(1), Err(Error::Full { .. })));
    drop(held);
    assert_eq!(double(2), Ok(4));
}

#[test]
fn fallback_runs_on_full_and_on_timeout_but_not_when_closed() {
    let b = Bulkhead::new("reports", 1).unwrap();
    let held = b.try_acquire().unwrap();
    let full = b.execute_or_else(
        MaxWait::FailFast,
        || "fresh",
        |e| {
            assert!(matches!(e, Error::Full { .. }));
            "fallback"
        },
    );
    assert_eq!(full, Ok("fallback"));
    let late = b.execute_or_else(
        Duration::from_millis(5),
        || "fresh",
        |e| {
            assert!(matches!(e, Error::Timeout { .. }));
            "fallback"
        },
    );
    assert_eq!(late, Ok("fallback"));
    b.close();
    let closed = b.execute_or_else(MaxWait::FailFast, || "fresh", |_| "fallback");
    assert_eq!(
        closed,
        Err(Error::Closed {
            name: "reports".into()
        })
    );
    drop(held);
}

#[test]
fn async_fallback_runs_on_timeout() {
    let b = Bulkhead::new("api", 1).unwrap();
    let _held = b.try_acquire().unwrap();
    let rt = current_thread_rt();
    let r = rt.block_on(b.run_timeout_or_else(
        Duration::from_millis(5),
        async { "fresh" },
        |e| {
            assert!(matches!(e, Error::Timeout { .. }));
            "fallback"
        },
        tokio::time::sleep,
    ));
    assert_eq!(r, Ok("fallback"));
}

#[test]
fn policy_outcomes() {
    let b = Bulkhead::new("db", 1).unwrap();
    let fail_fast = Policy::new(&b, MaxWait::FailFast);
    let patient = Policy::new(&b, MaxWait::up_to(Duration::from_millis(5)));
    assert_eq!(fail_fast.execute(|| 7), Outcome::Success(7));
    assert_eq!(
        fail_fast.execute(|| Err::<(), _>(Business("bad input"))),
        Outcome::Success(Err(Business("bad input")))
    );
    let held = b.try_acquire().unwrap();
    assert!(matches!(
        fail_fast.execute(|| 7),
        Outcome::Rejected(Error::Full { .. })
    ));
    assert!(matches!(
        patient.execute(|| 7),
        Outcome::TimedOut(Error::Timeout { .. })
    ));
    let rt = current_thread_rt();
    let async_outcome = rt.block_on(patient.run_timeout(async { 7 }, tokio::time::sleep));
    assert!(matches!(async_outcome, Outcome::TimedOut(_)));
    drop(held);
    let ok = rt.block_on(patient.run_timeout(async { 7 }, tokio::time::sleep));
    assert_eq!(ok.into_result(), Ok(7));
    b.close();
    assert!(matches!(
        fail_fast.execute(|| 7),
        Outcome::Rejected(Error::Closed { .. })
    ));
}

#[test]
fn a_bounded_wait_times_out_after_at_least_the_budget() {
    const BUDGET: Duration = Duration::from_millis(50);
    let b = Arc::new(Bulkhead::new("db", 1).unwrap());
    let _held = bulkhead_std::OwnedSeat::try_acquire(b.clone()).unwrap();
    // Blocking, and async with tokio's timer; several at once so that a
    // loaded machine only makes them later, never earlier.
    let rt = current_thread_rt();
    let threads: Vec<_> = (0..3)
        .map(|_| {
            let b = b.clone();
            thread::spawn(move || {
                let start = Instant::now();
                let err = b.acquire_blocking(BUDGET).unwrap_err();
                (err, start.elapsed())
            })
        })
        .collect();
    let start = Instant::now();
    let err = rt
        .block_on(async { b.acquire_timeout(BUDGET, tokio::time::sleep).await })
        .unwrap_err();
    let mut results = vec![(err, start.elapsed())];
    results.extend(threads.into_iter().map(|t| t.join().unwrap()));
    for (err, took) in results {
        assert_eq!(
            err,
            Error::Timeout {
                name: "db".into(),
                budget: BUDGET
            }
        );
        assert!(took >= BUDGET, "gave up after {took:?}, before the budget");
        assert!(took < BUDGET + Duration::from_secs(10), "took {took:?}");
    }
    let s = b.state();
    assert_eq!((s.timed_out, s.waiting, s.active), (4, 0, 1));
}

#[test]
fn the_snapshot_carries_the_time_of_the_last_rejection() {
    let b = Bulkhead::new("db", 1).unwrap();
    assert_eq!(b.snapshot().last_rejection, None);
    let held = b.try_acquire().unwrap();
    let before = SystemTime::now();
    assert!(b.try_acquire().is_err());
    let after = SystemTime::now();
    let at = b
        .snapshot()
        .last_rejection
        .expect("a rejection was recorded");
    assert!(
        before <= at && at <= after,
        "{at:?} not in [{before:?}, {after:?}]"
    );
    // A timeout counts as a rejection too, and is later.
    assert!(b.acquire_blocking(Duration::from_millis(2)).is_err());
    assert!(b.snapshot().last_rejection.unwrap() >= at);
    // So does a full queue, turned away by core's own async acquire.
    b.set_max_waiting(Some(0)).unwrap();
    let before_queue_full = SystemTime::now();
    let rt = current_thread_rt();
    assert!(matches!(
        rt.block_on(b.acquire()),
        Err(Error::QueueFull { .. })
    ));
    assert!(b.last_rejection().unwrap() >= before_queue_full);
    // Closed is not a rejection by load.
    let last = b.last_rejection();
    b.close();
    assert!(b.try_acquire().is_err());
    assert_eq!(b.last_rejection(), last);
    drop(held);
}
