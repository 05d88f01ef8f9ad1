//! A blocking acquire on a thread that drives an event loop gives the
//! immediate verdict; on other threads it waits. Needs the runtime's
//! feature: `cargo test -p bulkhead-std --all-features`.
#![cfg(any(feature = "tokio", feature = "async-std"))]

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use bulkhead_std::prelude::*;
use bulkhead_std::{Bulkhead, Error, EventLoop, event_loop};

const LONG: Duration = Duration::from_secs(60);

/// Asserts an immediate `FullOnEventLoop` although the caller offered a
/// long budget.
fn assert_immediate(b: &Bulkhead, expected: EventLoop) {
    assert_eq!(event_loop(), Some(expected));
    let start = Instant::now();
    assert!(matches!(
        b.acquire_blocking(LONG),
        Err(Error::FullOnEventLoop { .. })
    ));
    assert!(b.execute(LONG, || ()).is_err());
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "blocked the event loop"
    );
}

/// Releases `seat` once someone waits, and checks that `waiter` got it.
fn assert_waits<S: Send + 'static>(
    b: &Bulkhead,
    seat: S,
    waiter: impl FnOnce() -> Result<(), Error> + Send,
) {
    let b2: &Bulkhead = b;
    thread::scope(|s| {
        let h = s.spawn(waiter);
        while b2.state().waiting < 1 {
            thread::yield_now();
        }
        drop(seat);
        h.join().unwrap().unwrap();
    });
}

#[cfg(feature = "tokio")]
mod tokio_rt {
    use super::*;

    #[test]
    fn on_a_multi_thread_worker_the_verdict_is_immediate() {
        let b = Arc::new(Bulkhead::new("db", 1).unwrap());
        let _held = bulkhead_std::OwnedSeat::try_acquire(b.clone()).unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        let b2 = b.clone();
        rt.block_on(rt.spawn(async move { assert_immediate(&b2, EventLoop::Tokio) }))
            .unwrap();
        assert!(b.last_rejection().is_some());
    }

    #[test]
    fn on_a_current_thread_runtime_the_verdict_is_immediate() {
        let b = Bulkhead::new("db", 1).unwrap();
        let _held = b.try_acquire().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async { assert_immediate(&b, EventLoop::Tokio) });
    }

    /// A weighted wait follows the same rule: one seat is free, two are
    /// asked for, and on the loop's thread the verdict is immediate; on a
    /// `spawn_blocking` thread the same call waits and gets both.
    #[test]
    fn a_weighted_blocking_acquire_never_blocks_the_loop() {
        let b = Arc::new(Bulkhead::new("db", 4).unwrap());
        let held = b.try_acquire_many_owned(3).unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        let start = Instant::now();
        rt.block_on(async {
            assert!(matches!(
                b.acquire_many_blocking(2, LONG),
                Err(Error::FullOnEventLoop {
                    max_concurrent: 4,
                    active: 3,
                    ..
                })
            ));
            assert!(matches!(
                b.acquire_many_blocking_owned(2, LONG),
                Err(Error::FullOnEventLoop { .. })
            ));
            assert!(matches!(
                b.execute_weighted(2, LONG, || ()),
                Err(Error::FullOnEventLoop { .. })
            ));
        });
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "blocked the loop"
        );
        let b2 = b.clone();
        let waiter =
            rt.spawn_blocking(move || b2.acquire_many_blocking(2, LONG).map(|s| s.weight()));
        while b.state().waiting < 1 {
            thread::yield_now();
        }
        drop(held);
        assert_eq!(rt.block_on(waiter).unwrap(), Ok(2));
    }

    #[test]
    fn a_spawn_blocking_thread_may_wait() {
        let b = Arc::new(Bulkhead::new("db", 1).unwrap());
        let held = bulkhead_std::OwnedSeat::try_acquire(b.clone()).unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        let b2 = b.clone();
        let waiter = rt.spawn_blocking(move || {
            assert_eq!(event_loop(), None);
            b2.acquire_blocking(LONG).map(drop)
        });
        assert_waits(&b, held, || rt.block_on(waiter).unwrap());
    }

    #[test]
    fn inside_a_multi_thread_block_on_the_verdict_is_immediate() {
        // No worker index here: the coop budget gives it away (as in the
        // body of a default `#[tokio::main]`).
        let b = Bulkhead::new("db", 1).unwrap();
        let _held = b.try_acquire().unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        rt.block_on(async {
            assert_eq!(tokio::runtime::worker_index(), None);
            assert_immediate(&b, EventLoop::Tokio);
        });
        rt.handle()
            .clone()
            .block_on(async { assert_immediate(&b, EventLoop::Tokio) });
    }

    #[test]
    fn an_unconstrained_future_on_a_runtime_thread_is_still_detected() {
        // The budget alone would miss it; the worker index does not.
        let b = Bulkhead::new("db", 1).unwrap();
        let _held = b.try_acquire().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(tokio::task::unconstrained(async {
            assert_immediate(&b, EventLoop::Tokio)
        }));
    }

    #[test]
    fn a_block_in_place_section_may_wait() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        let inside = rt.block_on(async {
            tokio::spawn(async { tokio::task::block_in_place(event_loop) })
                .await
                .unwrap()
        });
        // tokio leaves the runtime and lifts the budget there.
        assert_eq!(inside, None, "block_in_place");
    }

    #[test]
    fn a_thread_that_only_entered_a_runtime_may_wait() {
        for rt in [
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .build()
                .unwrap(),
            tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap(),
        ] {
            let _guard = rt.enter();
            assert!(tokio::runtime::Handle::try_current().is_ok());
            assert_eq!(event_loop(), None, "Handle::enter");
        }
    }

    /// Counts the task's remaining coop budget by spending it, then
    /// restores it; `None` for an unconstrained budget.
    fn remaining_budget() -> Option<usize> {
        use std::task::{Context, Poll, Waker};
        use tokio::task::coop;
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

    #[test]
    fn the_budget_probe_leaves_the_task_budget_as_it_found_it() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        // `block_on` on a multi-thread runtime: no worker index, so the
        // probe runs.
        rt.block_on(async {
            tokio::task::yield_now().await; // a fresh budget
            let before = remaining_budget().expect("a task's budget is constrained");
            assert!(before > 1);
            for _ in 0..1000 {
                assert_eq!(event_loop(), Some(EventLoop::Tokio));
            }
            assert_eq!(remaining_budget(), Some(before));
            assert!(tokio::task::coop::has_budget_remaining());
        });
    }
}

#[cfg(feature = "async-std")]
mod async_std_rt {
    use super::*;

    #[test]
    fn inside_an_async_std_task_the_verdict_is_immediate() {
        let b = Arc::new(Bulkhead::new("db", 1).unwrap());
        let _held = bulkhead_std::OwnedSeat::try_acquire(b.clone()).unwrap();
        async_std::task::block_on(async { assert_immediate(&b, EventLoop::AsyncStd) });
        let b2 = b.clone();
        async_std::task::block_on(async_std::task::spawn(async move {
            assert_immediate(&b2, EventLoop::AsyncStd)
        }));
    }

    #[test]
    fn an_async_std_spawn_blocking_closure_may_wait() {
        let b = Arc::new(Bulkhead::new("db", 1).unwrap());
        let held = bulkhead_std::OwnedSeat::try_acquire(b.clone()).unwrap();
        let b2 = b.clone();
        let waiter = async_std::task::spawn_blocking(move || {
            assert_eq!(event_loop(), None);
            b2.acquire_blocking(LONG).map(drop)
        });
        assert_waits(&b, held, || async_std::task::block_on(waiter));
    }
}
