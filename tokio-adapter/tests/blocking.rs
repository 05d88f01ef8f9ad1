//! `acquire_blocking` and the event-loop detection it uses (bulkhead-std's
//! `event_loop`, re-exported): never block a thread that drives tokio
//! futures, but wait where blocking is allowed.

use std::sync::Arc;
use std::sync::mpsc;
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use bulkhead_tokio::MaxWait;
use bulkhead_tokio::prelude::*;
use bulkhead_tokio::{Bulkhead, Error, EventLoop, OwnedSeat, event_loop};
use tokio::runtime::{Builder, Runtime};
use tokio::task::coop;

const LONG: Duration = Duration::from_secs(60);

fn multi_thread() -> Runtime {
    Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn current_thread() -> Runtime {
    Builder::new_current_thread().enable_all().build().unwrap()
}

/// Counts the task's remaining coop budget by spending it, then restores
/// it; `None` for an unconstrained budget.
fn remaining_budget() -> Option<usize> {
    let mut cx = Context::from_waker(Waker::noop());
    let Poll::Ready(_restore) = coop::poll_proceed(&mut cx) else {
        return Some(0);
    };
    for n in 1..=1000 {
        if !coop::has_budget_remaining() {
            return Some(n);
        }
        if let Poll::Ready(unit) = coop::poll_proceed(&mut cx) {
            unit.made_progress();
        }
    }
    None
}

/// Whether `acquire_blocking` may wait here.
fn can_block() -> bool {
    match event_loop() {
        None => true,
        Some(EventLoop::Tokio) => false,
        Some(other) => panic!("unexpected event loop: {other}"),
    }
}

// === the detection rule in every tokio context ===

#[test]
fn plain_threads_may_block() {
    assert!(can_block());
    assert!(thread::spawn(can_block).join().unwrap());
}

#[test]
fn runtime_threads_may_not_block_on_either_flavour() {
    for rt in [multi_thread(), current_thread()] {
        // The future given to `block_on` (as in `#[tokio::main]`).
        assert!(!rt.block_on(async { can_block() }));
        // A spawned task, on a worker thread.
        assert!(!rt.block_on(async { tokio::spawn(async { can_block() }).await.unwrap() }));
    }
}

#[test]
fn blocking_sections_may_block() {
    for rt in [multi_thread(), current_thread()] {
        let in_pool = rt.block_on(async { tokio::task::spawn_blocking(can_block).await.unwrap() });
        assert!(in_pool, "spawn_blocking");
        // A thread that only entered the runtime's context.
        let _guard = rt.enter();
        assert!(tokio::runtime::Handle::try_current().is_ok());
        assert!(can_block(), "Handle::enter");
    }
    let rt = multi_thread();
    let in_place = rt.block_on(async {
        tokio::spawn(async { tokio::task::block_in_place(can_block) })
            .await
            .unwrap()
    });
    assert!(in_place, "block_in_place on a worker");
}

#[test]
fn unconstrained_futures_on_runtime_threads_are_detected() {
    // tokio lifts the coop budget there; the worker index still tells.
    let rt = current_thread();
    assert!(!rt.block_on(tokio::task::unconstrained(async { can_block() })));
    let rt = multi_thread();
    let in_task = rt.block_on(async {
        tokio::spawn(tokio::task::unconstrained(async { can_block() }))
            .await
            .unwrap()
    });
    assert!(!in_task);
}

#[test]
fn documented_limit_unconstrained_inside_a_multi_thread_block_on_is_missed() {
    let rt = multi_thread();
    let inside = rt.block_on(tokio::task::unconstrained(async { can_block() }));
    assert!(
        inside,
        "see `bulkhead_std::event_loop`'s Limits: update the docs if this changes"
    );
}

#[test]
fn the_probe_leaves_the_task_budget_as_it_found_it() {
    let rt = current_thread();
    rt.block_on(async {
        tokio::task::yield_now().await; // a fresh budget
        let before = remaining_budget().expect("a task's budget is constrained");
        assert!(before > 1);
        for _ in 0..1000 {
            assert!(!can_block());
        }
        assert_eq!(remaining_budget(), Some(before));
        assert!(coop::has_budget_remaining());
    });
}

// === acquire_blocking ===

#[test]
fn on_a_runtime_thread_acquire_blocking_gives_the_immediate_verdict() {
    let db = Arc::new(Bulkhead::new("db", 1).unwrap());
    let _held = db.try_acquire().unwrap();
    for rt in [multi_thread(), current_thread()] {
        let db = db.clone();
        rt.block_on(async move {
            let start = Instant::now();
            let verdict = db.acquire_blocking(LONG).map(drop);
            assert!(
                matches!(verdict, Err(Error::FullOnEventLoop { .. })),
                "{verdict:?}"
            );
            let db2 = db.clone();
            let in_task = tokio::spawn(async move { db2.acquire_blocking(LONG).map(drop) });
            assert!(matches!(
                in_task.await.unwrap(),
                Err(Error::FullOnEventLoop { .. })
            ));
            assert!(start.elapsed() < LONG / 2, "did not block");
        });
    }
    assert_eq!(db.state().rejected, 4);
}

#[test]
fn in_spawn_blocking_acquire_blocking_waits_for_the_seat() {
    let rt = multi_thread();
    let db = Arc::new(Bulkhead::new("db", 1).unwrap());
    rt.block_on(async {
        let held = OwnedSeat::try_acquire(db.clone()).unwrap();
        let db2 = db.clone();
        let waiter = tokio::task::spawn_blocking(move || db2.acquire_blocking(LONG).map(drop));
        while db.state().waiting < 1 {
            tokio::task::yield_now().await;
        }
        drop(held); // handed to the parked blocking thread
        waiter.await.unwrap().expect("waited for and got the seat");
    });
    let state = db.state();
    assert_eq!((state.active, state.rejected, state.timed_out), (0, 0, 0));
}

#[test]
fn plain_threads_wait_and_time_out() {
    let db = Arc::new(Bulkhead::new("db", 1).unwrap());
    let held = db.try_acquire().unwrap();
    let err = db.acquire_blocking(Duration::from_millis(20)).unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }));
    assert!(matches!(
        db.acquire_blocking(MaxWait::FailFast),
        Err(Error::Full { .. })
    ));

    let (started, waiting) = mpsc::channel();
    let db2 = db.clone();
    let waiter = thread::spawn(move || {
        started.send(()).unwrap();
        db2.acquire_blocking(LONG).map(drop)
    });
    waiting.recv().unwrap();
    while db.state().waiting < 1 {
        thread::yield_now();
    }
    drop(held);
    waiter.join().unwrap().unwrap();
}

#[test]
fn async_and_blocking_callers_share_one_seat_count() {
    let rt = multi_thread();
    let db = Arc::new(Bulkhead::new("db", 2).unwrap());
    rt.block_on(async {
        let a = db.acquire_within(MaxWait::FailFast).await.unwrap();
        let db2 = db.clone();
        let b = tokio::task::spawn_blocking(move || {
            let seat = db2.acquire_blocking(LONG).unwrap();
            std::mem::forget(seat); // keep it taken past the closure
        });
        b.await.unwrap();
        assert_eq!(db.state().active, 2);
        assert!(matches!(
            db.acquire_within(MaxWait::FailFast).await,
            Err(Error::Full { .. })
        ));
        drop(a);
    });
}
