//! Blocking waits on real threads. Timing-dependent checks use generous
//! budgets and only assert orderings that the API guarantees.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use bulkhead_std::MaxWait;
use bulkhead_std::prelude::*;
use bulkhead_std::{Bulkhead, Config, Error};

#[test]
fn no_budget_fails_fast_and_counts_the_rejection() {
    let b = Bulkhead::new("db", 1).unwrap();
    let seat = b.acquire_blocking(MaxWait::FailFast).unwrap();
    let start = Instant::now();
    assert!(matches!(
        b.acquire_blocking(MaxWait::FailFast),
        Err(Error::Full {
            name,
            max_concurrent: 1,
            active: 1
        }) if name == "db"
    ));
    assert!(matches!(
        b.acquire_blocking(Duration::ZERO),
        Err(Error::Full { .. })
    ));
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "fail fast must not wait"
    );
    assert_eq!(b.state().rejected, 2);
    drop(seat);
}

#[test]
fn a_bounded_wait_times_out_and_leaves_the_line() {
    let b = Bulkhead::new("db", 1).unwrap();
    let seat = b.acquire_blocking(MaxWait::FailFast).unwrap();
    let start = Instant::now();
    let err = b.acquire_blocking(Duration::from_millis(30)).unwrap_err();
    assert_eq!(
        err,
        Error::Timeout {
            name: "db".into(),
            budget: Duration::from_millis(30)
        }
    );
    assert!(
        start.elapsed() >= Duration::from_millis(30),
        "gave up before the budget"
    );
    let s = b.state();
    assert_eq!((s.waiting, s.timed_out), (0, 1));
    drop(seat);
    assert!(b.acquire_blocking(MaxWait::FailFast).is_ok());
}

#[test]
fn a_bounded_wait_gets_the_seat_when_it_is_released_in_time() {
    let b = Arc::new(Bulkhead::new("db", 1).unwrap());
    let seat = bulkhead_std::OwnedSeat::try_acquire(b.clone()).unwrap();
    let releaser = thread::spawn(move || {
        thread::sleep(Duration::from_millis(20));
        drop(seat);
    });
    let got = b
        .acquire_blocking(Duration::from_secs(30))
        .expect("released well within the budget");
    drop(got);
    releaser.join().unwrap();
    assert_eq!(b.state().timed_out, 0);
}

#[test]
fn a_budget_too_large_for_the_clock_still_waits() {
    let b = Arc::new(Bulkhead::new("db", 1).unwrap());
    let seat = bulkhead_std::OwnedSeat::try_acquire(b.clone()).unwrap();
    let releaser = thread::spawn(move || {
        thread::sleep(Duration::from_millis(10));
        drop(seat);
    });
    assert!(b.acquire_blocking(Duration::MAX).is_ok());
    releaser.join().unwrap();
}

#[test]
fn parked_threads_are_served_in_arrival_order() {
    let b = Arc::new(Bulkhead::new("fifo", 1).unwrap());
    let first = bulkhead_std::OwnedSeat::try_acquire(b.clone()).unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut handles = Vec::new();
    for i in 0..4 {
        let (b2, order) = (b.clone(), order.clone());
        handles.push(thread::spawn(move || {
            let _seat = b2.acquire_blocking(Duration::from_secs(30)).unwrap();
            order.lock().unwrap().push(i);
        }));
        // Wait until thread `i` is queued before starting the next one.
        while b.state().waiting < i + 1 {
            thread::yield_now();
        }
    }
    drop(first);
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3]);
}

#[test]
fn threads_never_exceed_the_limit_and_every_seat_returns() {
    let b = Arc::new(Bulkhead::from_config(Config::new("pool", 3)).unwrap());
    let inside = Arc::new(AtomicUsize::new(0));
    let start = Arc::new(Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let (b, inside, start) = (b.clone(), inside.clone(), start.clone());
            thread::spawn(move || {
                start.wait();
                for _ in 0..200 {
                    let seat = b.acquire_blocking(Duration::from_secs(30)).unwrap();
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    assert!(now <= 3, "{now} inside a 3-seat compartment");
                    inside.fetch_sub(1, Ordering::SeqCst);
                    drop(seat);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let s = b.state();
    assert_eq!((s.active, s.waiting, s.timed_out), (0, 0, 0));
}

#[test]
fn a_panic_inside_the_work_gives_the_seat_back() {
    let b = Bulkhead::new("db", 1).unwrap();
    let r = std::panic::catch_unwind(|| {
        let _seat = b.acquire_blocking(MaxWait::FailFast).unwrap();
        panic!("the work failed");
    });
    assert!(r.is_err());
    assert_eq!(b.state().active, 0);
}
