//! A blocking acquire on a thread that drives an event loop gives the
//! immediate verdict; on other threads it waits. Needs the runtime's
//! feature: `cargo test -p bulkhead-std --all-features`.
#![cfg(any(feature = "tokio", feature = "async-std"))]

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use bulkhead_std::{BlockingAcquire, Bulkhead, Error, EventLoop, event_loop};

const LONG: Option<Duration> = Some(Duration::from_secs(60));

/// Asserts an immediate `Full` although the caller offered a long budget.
fn assert_immediate(b: &Bulkhead, expected: EventLoop) {
    assert_eq!(event_loop(), Some(expected));
    let start = Instant::now();
    assert!(matches!(b.acquire_blocking(LONG), Err(Error::Full { .. })));
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
        let _held = b.try_acquire_owned().unwrap();
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

    #[test]
    fn a_spawn_blocking_thread_may_wait() {
        let b = Arc::new(Bulkhead::new("db", 1).unwrap());
        let held = b.try_acquire_owned().unwrap();
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
}

#[cfg(feature = "async-std")]
mod async_std_rt {
    use super::*;

    #[test]
    fn inside_an_async_std_task_the_verdict_is_immediate() {
        let b = Arc::new(Bulkhead::new("db", 1).unwrap());
        let _held = b.try_acquire_owned().unwrap();
        async_std::task::block_on(async { assert_immediate(&b, EventLoop::AsyncStd) });
        let b2 = b.clone();
        async_std::task::block_on(async_std::task::spawn(async move {
            assert_immediate(&b2, EventLoop::AsyncStd)
        }));
    }

    #[test]
    fn an_async_std_spawn_blocking_closure_may_wait() {
        let b = Arc::new(Bulkhead::new("db", 1).unwrap());
        let held = b.try_acquire_owned().unwrap();
        let b2 = b.clone();
        let waiter = async_std::task::spawn_blocking(move || {
            assert_eq!(event_loop(), None);
            b2.acquire_blocking(LONG).map(drop)
        });
        assert_waits(&b, held, || async_std::task::block_on(waiter));
    }
}
