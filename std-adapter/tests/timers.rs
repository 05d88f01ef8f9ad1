//! Bounded async waits with async-std's and smol's timers. Needs the
//! features: `cargo test -p bulkhead-std --all-features`.
#![cfg(any(feature = "async-std", feature = "smol"))]

use std::sync::Arc;
use std::time::{Duration, Instant};

use bulkhead_std::prelude::*;
use bulkhead_std::{Bulkhead, Error};

const BUDGET: Duration = Duration::from_millis(30);

fn check_timeout(took: Duration, err: Error, b: &Bulkhead) {
    assert_eq!(
        err,
        Error::Timeout {
            name: "db".into(),
            budget: BUDGET
        }
    );
    assert!(took >= BUDGET, "gave up after {took:?}");
    assert!(took < BUDGET + Duration::from_secs(10), "took {took:?}");
    assert_eq!(b.state().waiting, 0);
}

#[cfg(feature = "async-std")]
#[test]
fn async_std_timer_bounds_the_wait_and_a_release_in_time_is_served() {
    let b = Arc::new(Bulkhead::new("db", 1).unwrap());
    let held = bulkhead_std::OwnedSeat::try_acquire(b.clone()).unwrap();
    async_std::task::block_on(async {
        let start = Instant::now();
        let err = b
            .run_timeout(BUDGET, async {}, bulkhead_std::sleep_async_std)
            .await
            .unwrap_err();
        check_timeout(start.elapsed(), err, &b);
        let releaser = async_std::task::spawn_blocking(move || drop(held));
        let ran = b
            .run_timeout(
                Duration::from_secs(60),
                async { 7 },
                bulkhead_std::sleep_async_std,
            )
            .await;
        assert_eq!(ran, Ok(7));
        releaser.await;
    });
}

#[cfg(feature = "smol")]
#[test]
fn smol_timer_bounds_the_wait_and_a_release_in_time_is_served() {
    let b = Arc::new(Bulkhead::new("db", 1).unwrap());
    let held = bulkhead_std::OwnedSeat::try_acquire(b.clone()).unwrap();
    async_io::block_on(async {
        let start = Instant::now();
        let err = b
            .run_timeout(BUDGET, async {}, bulkhead_std::sleep_smol)
            .await
            .unwrap_err();
        check_timeout(start.elapsed(), err, &b);
        let releaser = std::thread::spawn(move || drop(held));
        let ran = b
            .run_timeout(
                Duration::from_secs(60),
                async { 7 },
                bulkhead_std::sleep_smol,
            )
            .await;
        assert_eq!(ran, Ok(7));
        releaser.join().unwrap();
    });
}

#[cfg(feature = "smol")]
#[test]
fn the_wait_budget_convention_is_the_same_for_threads_and_tasks() {
    use bulkhead_std::MaxWait;
    let b = std::sync::Arc::new(bulkhead_std::Bulkhead::new("conv", 1).unwrap());
    let held = b.try_acquire().unwrap();
    // Fail fast: FailFast, a zero duration, and a hand-made zero UpTo.
    for wait in [
        MaxWait::FailFast,
        Duration::ZERO.into(),
        MaxWait::UpTo(Duration::ZERO),
    ] {
        assert!(matches!(
            b.acquire_blocking(wait),
            Err(bulkhead_std::Error::Full { .. })
        ));
        let verdict = async_io::block_on(b.run_timeout(wait, async {}, bulkhead_std::sleep_smol));
        assert!(matches!(verdict, Err(bulkhead_std::Error::Full { .. })));
    }
    // Forever waits for the seat, past any budget a test would pick.
    let b2 = b.clone();
    let waiter = std::thread::spawn(move || b2.acquire_blocking(MaxWait::Forever).map(drop));
    while b.state().waiting == 0 {
        std::thread::yield_now();
    }
    std::thread::sleep(Duration::from_millis(20));
    assert!(!waiter.is_finished());
    drop(held);
    assert_eq!(waiter.join().unwrap(), Ok(()));
    assert_eq!(b.state().timed_out, 0);
}
