//! Heap allocations per request through the tower layer (`BulkheadLayer`),
//! fail fast and with a wait budget, counted on the current thread by the
//! examples' counting allocator (`bulkhead_examples::alloc_count`).
//!
//! Each test drives its service on a current-thread tokio runtime built on
//! the test's own thread, so every allocation a request causes (the layer,
//! the runtime, timers, wakers) happens on that thread and is counted, and
//! tests running in parallel on other threads are not. Each path is warmed
//! up first, then counted over `ROUNDS` requests.

use std::convert::Infallible;
use std::future::{Ready, poll_fn, ready};
use std::sync::{Arc, Barrier};
use std::task::{Context, Poll};
use std::time::Duration;

use bulkhead_examples::alloc_count::{self, CountingAlloc};
use bulkhead_tokio::{Bulkhead, BulkheadLayer};
use tower::Layer;
use tower_service::Service;

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

fn allocs() -> u64 {
    alloc_count::thread_allocs()
}

const ROUNDS: u64 = 50;

/// A service that answers at once and allocates nothing.
#[derive(Clone, Copy)]
struct Echo;

impl Service<u32> for Echo {
    type Response = u32;
    type Error = Infallible;
    type Future = Ready<Result<u32, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: u32) -> Self::Future {
        ready(Ok(request))
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

/// Allocations per request of `request`, after one warm-up round.
fn per_request(rt: &tokio::runtime::Runtime, mut request: impl AsyncFnMut()) -> f64 {
    rt.block_on(async {
        request().await;
        let before = allocs();
        for _ in 0..ROUNDS {
            request().await;
        }
        (allocs() - before) as f64 / ROUNDS as f64
    })
}

#[test]
fn the_counter_sees_an_allocation_on_this_thread_only() {
    let barrier = Arc::new(Barrier::new(2));
    let other = {
        let barrier = Arc::clone(&barrier);
        std::thread::spawn(move || {
            barrier.wait();
            drop(std::hint::black_box(Box::new(1u64)));
            barrier.wait();
        })
    };
    let before = allocs();
    barrier.wait(); // the other thread allocates between the two waits
    barrier.wait();
    let after_other_thread = allocs();
    drop(std::hint::black_box(Box::new(2u64)));
    assert_eq!(after_other_thread, before, "another thread's allocation");
    assert_eq!(allocs(), after_other_thread + 1, "this thread's allocation");
    other.join().unwrap();
}

#[test]
fn fail_fast_admission_allocates_nothing() {
    let rt = runtime();
    let compartment = Arc::new(Bulkhead::new("tower-fail-fast", 2).unwrap());
    let mut svc = BulkheadLayer::new(compartment.clone()).layer(Echo);
    let n = per_request(&rt, async || {
        poll_fn(|cx| svc.poll_ready(cx)).await.unwrap();
        assert_eq!(svc.call(7).await.unwrap(), 7);
    });
    assert_eq!(n, 0.0, "allocations per admitted request");
    assert_eq!(compartment.state().active, 0);
}

#[test]
#[ignore = "the rejection is a `BoxError`: boxing `Error` allocates once per rejected request"]
fn fail_fast_rejection_allocates_nothing() {
    let rt = runtime();
    let compartment = Arc::new(Bulkhead::new("tower-reject", 1).unwrap());
    let _held = compartment.try_acquire().unwrap();
    let mut svc = BulkheadLayer::new(compartment.clone()).layer(Echo);
    let n = per_request(&rt, async || {
        poll_fn(|cx| svc.poll_ready(cx)).await.unwrap();
        assert!(svc.call(7).await.is_err());
    });
    assert_eq!(n, 0.0, "allocations per rejected request");
}

#[test]
#[ignore = "a service with a wait budget boxes each request's wait-then-call future, until core's owned acquire future replaces the box"]
fn waiting_admission_allocates_nothing() {
    let rt = runtime();
    let compartment = Arc::new(Bulkhead::new("tower-wait", 1).unwrap());
    let mut svc = BulkheadLayer::new(compartment.clone())
        .max_wait(Some(Duration::from_secs(5)))
        .layer(Echo);
    // A free seat: admitted at once.
    let free = per_request(&rt, async || {
        poll_fn(|cx| svc.poll_ready(cx)).await.unwrap();
        assert_eq!(svc.call(1).await.unwrap(), 1);
    });
    // Every seat taken: the request queues in `call`, and the seat is
    // handed to it when the holder gives it back.
    let queued = per_request(&rt, async || {
        let held = compartment.try_acquire().unwrap();
        poll_fn(|cx| svc.poll_ready(cx)).await.unwrap();
        let response = svc.call(2);
        assert_eq!(compartment.state().waiting, 1, "the request waits");
        drop(held);
        assert_eq!(response.await.unwrap(), 2);
    });
    assert_eq!((free, queued), (0.0, 0.0), "allocations per request");
}
