//! Bounded async waits, owned seats, cancellation and isolation.
//!
//! tokio can pause its clock only on a current-thread runtime, so the tests
//! that measure time run there with `start_paused` and assert exact
//! durations. The tests about threads (owned seats moving between workers,
//! aborts, isolation) run on the multi-thread runtime and assert nothing
//! about wall-clock time: "not delayed" means "ready on the first poll".

use std::future::{Future, ready};
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use bulkhead_tokio::MaxWait;
use bulkhead_tokio::{Bulkhead, Error, OwnedSeat, TokioAcquire};
use tokio::time::{Instant, sleep};

const MS: Duration = Duration::from_millis(1);

fn compartment(name: &'static str, seats: usize) -> Arc<Bulkhead> {
    Arc::new(Bulkhead::new(name, seats).unwrap())
}

fn assert_send_static<T: Send + 'static>(_: &T) {}

// === fail fast and bounded waits ===

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn no_budget_fails_fast() {
    let db = compartment("db", 1);
    let _seat = db.acquire_within(MaxWait::FailFast).await.unwrap();
    let start = Instant::now();
    for budget in [
        MaxWait::FailFast,
        MaxWait::UpTo(Duration::ZERO),
        Duration::ZERO.into(),
    ] {
        let err = db.acquire_within(budget).await.unwrap_err();
        assert!(
            matches!(&err, Error::Full { name, .. } if name == "db"),
            "{err:?}"
        );
    }
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(db.state().rejected, 3);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn bounded_wait_times_out_after_exactly_its_budget() {
    let db = compartment("db", 1);
    let _seat = db.try_acquire().unwrap();
    let start = Instant::now();
    let err = db.acquire_within(50 * MS).await.unwrap_err();
    assert_eq!(
        err,
        Error::Timeout {
            name: "db".into(),
            budget: 50 * MS
        }
    );
    assert_eq!(start.elapsed(), 50 * MS);
    let state = db.state();
    assert_eq!((state.timed_out, state.waiting, state.active), (1, 0, 1));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn bounded_wait_is_admitted_when_a_seat_frees() {
    let db = compartment("db", 1);
    let held = OwnedSeat::try_acquire(db.clone()).unwrap();
    tokio::spawn(async move {
        sleep(30 * MS).await;
        drop(held);
    });
    let start = Instant::now();
    let seat = db.acquire_within(100 * MS).await.unwrap();
    assert_eq!(start.elapsed(), 30 * MS);
    assert_eq!(db.state().active, 1);
    drop(seat);
    assert_eq!(db.state().active, 0);
}

// === owned seats ===

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owned_seats_travel_into_spawned_tasks() {
    let api = compartment("api", 2);
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let fut = api.clone().acquire_within_owned(Duration::from_secs(1));
        assert_send_static(&fut);
        let seat = fut.await;
        tasks.push(tokio::spawn(async move {
            let _seat = seat;
            tokio::task::yield_now().await;
        }));
        // Spawned tasks hold at most two seats at once.
        assert!(api.state().active <= 2);
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(api.state().active, 0);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn owned_wait_times_out_and_fails_fast() {
    let api = compartment("api", 1);
    let _held = api.try_acquire().unwrap();
    let err = api
        .clone()
        .acquire_within_owned(MaxWait::FailFast)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Full { .. }));
    let err = api.clone().acquire_within_owned(5 * MS).await.unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }));
    assert_eq!(
        Arc::strong_count(&api),
        1,
        "a finished owned wait keeps no handle"
    );
}

// === cancellation ===

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn select_cancellation_of_a_waiter_leaves_no_seat_behind() {
    let db = compartment("db", 1);
    let held = db.try_acquire().unwrap();
    for _ in 0..3 {
        tokio::select! {
            _ = db.acquire_within(Duration::from_secs(5)) => panic!("no seat was free"),
            _ = sleep(10 * MS) => {}
        }
        assert_eq!(db.state().waiting, 0, "the cancelled waiter left the line");
    }
    drop(held);
    let state = db.state();
    assert_eq!((state.active, state.waiting), (0, 0));
    drop(
        db.try_acquire()
            .expect("the freed seat is not owed to a cancelled waiter"),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn select_cancellation_after_hand_off_passes_the_seat_on() {
    let db = compartment("db", 1);
    let held = db.try_acquire().unwrap();
    // Boxed, so that `drop(waiter)` really drops the future.
    let mut waiter = Box::pin(db.acquire_within(Duration::from_secs(5)));
    let mut next = pin!(db.acquire_within(Duration::from_secs(5)));
    // Both join the line.
    tokio::select! { biased; _ = &mut waiter => unreachable!(), _ = ready(()) => {} }
    tokio::select! { biased; _ = &mut next => unreachable!(), _ = ready(()) => {} }
    assert_eq!(db.state().waiting, 2);
    // FIFO: the release hands the seat to `waiter`, which has not run yet ...
    drop(held);
    // ... and is cancelled by a `select!` that picks another branch.
    tokio::select! { biased; _ = ready(()) => {}, _ = &mut waiter => unreachable!() }
    drop(waiter);
    // The seat went on to the next in line, not into a leak.
    let seat = next.await.expect("the handed-over seat is passed on");
    assert_eq!(db.state().active, 1);
    drop(seat);
    assert_eq!(db.state().active, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborted_owned_waits_leave_no_seat_behind() {
    let db = compartment("db", 2);
    let held: Vec<_> = (0..2)
        .map(|_| OwnedSeat::try_acquire(db.clone()).unwrap())
        .collect();
    let waiters: Vec<_> = (0..8)
        .map(|_| tokio::spawn(db.clone().acquire_within_owned(Duration::from_secs(10))))
        .collect();
    while db.state().waiting < 8 {
        tokio::task::yield_now().await;
    }
    drop(held); // hands both seats to the two oldest waiters
    for waiter in &waiters {
        waiter.abort();
    }
    for waiter in waiters {
        if let Ok(seat) = waiter.await {
            drop(seat); // a waiter that finished before the abort
        }
    }
    let state = db.state();
    assert_eq!((state.active, state.waiting), (0, 0));
    assert_eq!(Arc::strong_count(&db), 1);
}

// === isolation ===

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saturated_compartment_does_not_delay_another() {
    let slow = compartment("slow_upstream", 2);
    let fast = compartment("cache", 2);
    // Saturate `slow`: two holders for an hour, and a line of waiters.
    let mut load = Vec::new();
    for _ in 0..2 {
        let seat = OwnedSeat::try_acquire(slow.clone()).unwrap();
        load.push(tokio::spawn(async move {
            let _seat = seat;
            std::future::pending::<()>().await;
        }));
    }
    for _ in 0..16 {
        let slow = slow.clone();
        load.push(tokio::spawn(async move {
            let _ = slow.acquire_within(Duration::from_secs(3600)).await;
        }));
    }
    while slow.state().waiting < 16 {
        tokio::task::yield_now().await;
    }
    assert!(matches!(
        slow.acquire_within(MaxWait::FailFast).await,
        Err(Error::Full { .. })
    ));

    // Every call through `fast`, with or without a budget, is admitted on
    // its first poll: it never waits behind `slow`'s line. (Outside the
    // coop budget, which would make the 129th poll yield on purpose.)
    tokio::task::coop::unconstrained(async {
        for budget in [
            MaxWait::FailFast,
            Duration::from_secs(1).into(),
            MaxWait::Forever,
        ] {
            for _ in 0..100 {
                let seat = first_poll(fast.acquire_within(budget)).expect("admitted at once");
                drop(seat.unwrap());
            }
        }
    })
    .await;
    let state = fast.state();
    assert_eq!((state.rejected, state.timed_out, state.waiting), (0, 0, 0));
    for task in &load {
        task.abort();
    }
    for task in load {
        let _ = task.await;
    }
    let state = slow.state();
    assert_eq!((state.active, state.waiting), (0, 0));
}

/// Polls once inside the current task; `None` if it was not ready.
fn first_poll<F: Future>(fut: F) -> Option<F::Output> {
    let mut fut = pin!(fut);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match fut.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(out) => Some(out),
        std::task::Poll::Pending => None,
    }
}

#[test]
fn wait_futures_are_send() {
    let db = Bulkhead::new("db", 1).unwrap();
    fn assert_send<T: Send + Future>(_: T) {}
    assert_send(db.acquire_within(MS));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bounded_wait_across_worker_threads_is_admitted_when_a_seat_frees() {
    let db = compartment("db", 1);
    let held = OwnedSeat::try_acquire(db.clone()).unwrap();
    let (go, release) = tokio::sync::oneshot::channel::<()>();
    let holder = tokio::spawn(async move {
        release.await.unwrap();
        drop(held);
    });
    let waiter = tokio::spawn(db.clone().acquire_within_owned(Duration::from_secs(3600)));
    while db.state().waiting < 1 {
        tokio::task::yield_now().await;
    }
    go.send(()).unwrap();
    let seat = waiter.await.unwrap().expect("handed the freed seat");
    holder.await.unwrap();
    assert_eq!(db.state().active, 1);
    drop(seat);
    assert_eq!(db.state().active, 0);
}

// === futures do nothing until polled ===

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_future_made_early_decides_at_its_first_poll() {
    let db = compartment("db", 1);
    // Made while the seat is free: it holds nothing until polled.
    let early = db.acquire_within(MaxWait::FailFast);
    assert_eq!(db.state().active, 0);
    // Made while the compartment is full: no stale `Full` once it frees up.
    let held = db.try_acquire().unwrap();
    let stale = db.acquire_within(Duration::ZERO);
    assert_eq!(db.state().rejected, 0);
    drop(held);
    let seat = stale
        .await
        .expect("decided at the first poll, when the seat was free");
    assert!(matches!(early.await, Err(Error::Full { .. })));
    drop(seat);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn forever_waits_past_any_budget_until_a_seat_frees_up() {
    let db = compartment("db", 1);
    let held = db.try_acquire().unwrap();
    let db2 = db.clone();
    let waiter = tokio::spawn(async move { db2.acquire_within(MaxWait::Forever).await.map(drop) });
    tokio::time::sleep(Duration::from_secs(24 * 3600)).await;
    assert!(!waiter.is_finished());
    assert_eq!(db.state().waiting, 1);
    drop(held);
    assert_eq!(waiter.await.unwrap(), Ok(()));
    assert_eq!(db.state().timed_out, 0);
}

// === tokio's cooperative budget ===

#[tokio::test(flavor = "current_thread")]
async fn a_task_looping_on_acquire_and_release_yields_like_with_tokios_semaphore() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let db = compartment("db", 1);
    for owned in [false, true] {
        let other_ran = Arc::new(AtomicBool::new(false));
        let flag = other_ran.clone();
        tokio::spawn(async move { flag.store(true, Ordering::SeqCst) });
        let mut yielded_after = None;
        // No other await point: only the coop budget can make this yield.
        for i in 0..1000 {
            if owned {
                drop(
                    db.clone()
                        .acquire_within_owned(MaxWait::FailFast)
                        .await
                        .unwrap(),
                );
            } else {
                drop(db.acquire_within(Duration::from_secs(1)).await.unwrap());
            }
            if other_ran.load(Ordering::SeqCst) {
                yielded_after = Some(i);
                break;
            }
        }
        let i = yielded_after.expect("the loop never yielded to the other task");
        assert!(i >= 100, "yielded only when the budget ran out, after {i}");
    }
}
