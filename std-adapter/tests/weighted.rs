//! Weighted seats from threads and async code: `acquire_many_blocking`
//! and its owned form, `execute_weighted`, `run_timeout_weighted`, and
//! the adaptive forms, which record one sample per call.

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use bulkhead_std::bulkhead_core::limit::{Aimd, AimdParams, CallOutcome};
use bulkhead_std::prelude::*;
use bulkhead_std::{Adaptive, Bulkhead, Error, MaxWait, StdClock};

const LONG: Duration = Duration::from_secs(60);

/// Spins until `n` callers wait in `b`.
fn until_waiting(b: &Bulkhead, n: usize) {
    while b.state().waiting < n {
        thread::yield_now();
    }
}

/// FIFO: a heavy waiter at the head of the line is passed by nobody. With
/// one seat free, a caller for one seat that comes later queues behind
/// the caller for four, and is admitted only after it.
#[test]
fn a_heavy_blocking_waiter_is_passed_by_nobody() {
    let b = Arc::new(Bulkhead::new("db", 4).unwrap());
    let held = b.try_acquire_many(3).unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    thread::scope(|s| {
        let heavy = s.spawn(|| {
            let seat = b.acquire_many_blocking(4, LONG).unwrap();
            order.lock().unwrap().push(("heavy", seat.weight()));
            // Held a moment, so that a light caller admitted early would
            // have been recorded first.
            thread::sleep(Duration::from_millis(20));
        });
        until_waiting(&b, 1);
        // One seat is free, but it is kept for the head of the line.
        assert!(matches!(b.try_acquire(), Err(Error::Full { .. })));
        assert!(matches!(
            b.acquire_many_blocking(1, MaxWait::FailFast),
            Err(Error::Full { .. })
        ));
        let light = s.spawn(|| {
            let seat = b.acquire_many_blocking(1, LONG).unwrap();
            order.lock().unwrap().push(("light", seat.weight()));
        });
        until_waiting(&b, 2);
        assert_eq!(b.state().active, 3, "the light caller took the free seat");
        drop(held);
        heavy.join().unwrap();
        light.join().unwrap();
    });
    assert_eq!(*order.lock().unwrap(), [("heavy", 4), ("light", 1)]);
    assert_eq!(b.state().active, 0);
}

#[test]
fn a_weighted_wait_times_out_and_gives_every_seat_back() {
    let b = Bulkhead::new("db", 4).unwrap();
    let held = b.try_acquire_many(2).unwrap();
    let err = b
        .acquire_many_blocking(3, Duration::from_millis(10))
        .unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    let s = b.state();
    assert_eq!((s.active, s.waiting, s.timed_out), (2, 0, 1));
    drop(held);
    let seat = b.acquire_many_blocking(4, MaxWait::FailFast).unwrap();
    assert_eq!((seat.weight(), b.state().active), (4, 4));
    drop(seat);
    assert_eq!(b.state().active, 0);
}

#[test]
fn weight_above_the_limit_or_zero_is_refused_at_once_whatever_the_budget() {
    let b = Arc::new(Bulkhead::new("db", 4).unwrap());
    let start = Instant::now();
    let err = b.acquire_many_blocking(5, LONG).unwrap_err();
    assert!(
        matches!(
            err,
            Error::WeightAboveLimit {
                weight: 5,
                max_concurrent: 4,
                ..
            }
        ),
        "{err}"
    );
    assert!(matches!(
        b.acquire_many_blocking_owned(5, LONG),
        Err(Error::WeightAboveLimit { .. })
    ));
    assert!(matches!(
        b.try_acquire_many_owned(5),
        Err(Error::WeightAboveLimit { .. })
    ));
    assert!(matches!(
        b.acquire_many_blocking(0, LONG),
        Err(Error::ZeroWeight { .. })
    ));
    assert!(matches!(
        b.execute_weighted(0, LONG, || ()),
        Err(Error::ZeroWeight { .. })
    ));
    assert!(start.elapsed() < Duration::from_secs(30), "it waited");
    // Three weight refusals counted; zero weights are not rejections.
    assert_eq!(b.state().rejected, 3);
}

/// The limit shrinks below a waiter's weight while it waits: it is
/// refused rather than left waiting for seats that can never come.
#[test]
fn a_waiter_heavier_than_a_shrunk_limit_is_refused() {
    let b = Bulkhead::new("db", 4).unwrap();
    let held = b.try_acquire_many(2).unwrap();
    thread::scope(|s| {
        let waiter = s.spawn(|| b.acquire_many_blocking(3, LONG).map(|seat| seat.weight()));
        until_waiting(&b, 1);
        b.set_max_concurrent(2).unwrap();
        drop(held);
        let err = waiter.join().unwrap().unwrap_err();
        assert!(
            matches!(
                err,
                Error::WeightAboveLimit {
                    weight: 3,
                    max_concurrent: 2,
                    ..
                }
            ),
            "{err}"
        );
    });
    assert_eq!(b.state().active, 0);
}

#[test]
fn an_owned_weighted_seat_moves_to_another_thread_and_splits() {
    let b = Arc::new(Bulkhead::new("db", 4).unwrap());
    let mut seat = b.acquire_many_blocking_owned(3, LONG).unwrap();
    let one = seat.split(1).unwrap();
    assert_eq!((seat.weight(), one.weight(), b.state().active), (2, 1, 3));
    drop(one);
    assert_eq!(b.state().active, 2);
    thread::spawn(move || drop(seat)).join().unwrap();
    assert_eq!(b.state().active, 0);
    let seat = b.try_acquire_many_owned(4).unwrap();
    assert!(matches!(
        b.try_acquire_many_owned(1),
        Err(Error::Full { .. })
    ));
    drop(seat);
}

#[test]
fn execute_weighted_holds_the_weight_while_the_work_runs() {
    let b = Bulkhead::new("db", 4).unwrap();
    assert_eq!(b.execute_weighted(3, LONG, || b.state().active), Ok(3));
    assert_eq!(b.state().active, 0);
    let _held = b.try_acquire_many(2).unwrap();
    assert!(matches!(
        b.execute_weighted(3, MaxWait::FailFast, || unreachable!()),
        Err(Error::Full { .. })
    ));
}

#[test]
fn run_timeout_weighted_waits_for_the_whole_weight() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let b = Bulkhead::new("gpu", 4).unwrap();
        let held = b.try_acquire_many(2).unwrap();
        let timed_out = b
            .run_timeout_weighted(3, Duration::from_millis(5), async {}, tokio::time::sleep)
            .await;
        assert!(matches!(timed_out, Err(Error::Timeout { .. })));
        drop(held);
        let active = b
            .run_timeout_weighted(4, LONG, async { b.state().active }, tokio::time::sleep)
            .await;
        assert_eq!(active, Ok(4));
        assert_eq!(b.state().active, 0);
    });
}

/// An adaptive call records one sample whatever its weight: with AIMD
/// (not windowed), one drop moves the limit once, from 8 to 7, not once
/// per seat.
#[test]
fn an_adaptive_weighted_call_records_one_sample() {
    let aimd = Aimd::new(AimdParams {
        initial: 8,
        min: 1,
        ..AimdParams::DEFAULT
    })
    .unwrap();
    let api: Adaptive<Aimd> = Adaptive::new(Bulkhead::new("api", 8).unwrap(), aimd, StdClock);
    let r = api
        .execute_weighted(4, MaxWait::FailFast, || {
            assert_eq!(api.bulkhead().state().active, 4);
            Err::<(), _>("503")
        })
        .unwrap();
    assert!(r.is_err());
    assert_eq!(api.limit(), 7); // floor(0.9 × 8): one drop
    assert_eq!(api.controller().changes(), 1);
    let classified = api.execute_classified(MaxWait::FailFast, || (), |()| CallOutcome::Success);
    assert_eq!(classified, Ok(()));
    assert!(matches!(
        api.execute_weighted(8, MaxWait::FailFast, || ()),
        Err(Error::WeightAboveLimit { .. })
    ));
}
