//! The tower layer: admission in `call`, fail fast or a bounded wait, seats
//! held by the response future and released when it is dropped.

use std::convert::Infallible;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bulkhead_tokio::{BoxError, Bulkhead, BulkheadLayer, BulkheadService, Error};
use tokio::time::{Instant, sleep};
use tower_layer::Layer;
use tower_service::Service;

const MS: Duration = Duration::from_millis(1);

/// Answers after sleeping for the requested time; counts its calls.
#[derive(Clone, Default)]
struct Upstream {
    calls: Arc<AtomicUsize>,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl Service<Duration> for Upstream {
    type Response = &'static str;
    type Error = Infallible;
    type Future = BoxFuture<Result<&'static str, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, work: Duration) -> Self::Future {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            sleep(work).await;
            Ok("ok")
        })
    }
}

fn compartment(seats: usize) -> Arc<Bulkhead> {
    Arc::new(Bulkhead::new("upstream", seats).unwrap())
}

async fn ready<S: Service<Duration>>(svc: &mut S) {
    poll_fn(|cx| svc.poll_ready(cx)).await.ok().unwrap();
}

fn rejection(err: &BoxError) -> &Error {
    err.downcast_ref::<Error>().expect("a bulkhead rejection")
}

fn poll_once<F: Future + Unpin>(fut: &mut F) -> Poll<F::Output> {
    Pin::new(fut).poll(&mut Context::from_waker(Waker::noop()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejects_at_once_when_full_without_calling_the_inner_service() {
    let upstream = Upstream::default();
    let bulkhead = compartment(2);
    let mut svc = BulkheadLayer::new(bulkhead.clone()).layer(upstream.clone());
    let mut held = Vec::new();
    for _ in 0..2 {
        ready(&mut svc).await;
        let mut fut = Box::pin(svc.call(Duration::from_secs(3600)));
        assert!(poll_once(&mut fut).is_pending());
        held.push(fut);
    }
    ready(&mut svc).await;
    let err = svc.call(MS).await.unwrap_err();
    assert!(matches!(
        rejection(&err),
        Error::Full {
            name,
            active: 2,
            ..
        } if name == "upstream"
    ));
    assert_eq!(
        upstream.calls.load(Ordering::SeqCst),
        2,
        "a rejected request never reached it"
    );
    assert_eq!(bulkhead.state().rejected, 1);
    drop(held);
    assert_eq!(bulkhead.state().active, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_clients_that_only_poll_readiness_hold_no_seat() {
    let bulkhead = compartment(1);
    let layer = BulkheadLayer::new(bulkhead.clone());
    let mut idle: Vec<_> = (0..10).map(|_| layer.layer(Upstream::default())).collect();
    for svc in &mut idle {
        ready(svc).await; // keep-alive connections, ready and idle
    }
    assert_eq!(bulkhead.state().active, 0);
    // A real request on another connection still gets the only seat.
    let mut busy = layer.layer(Upstream::default());
    ready(&mut busy).await;
    assert_eq!(busy.call(MS).await.unwrap(), "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_response_future_releases_its_seat() {
    let bulkhead = compartment(1);
    let mut svc = BulkheadService::new(Upstream::default(), bulkhead.clone());
    // Dropped while running.
    ready(&mut svc).await;
    let mut fut = Box::pin(svc.call(Duration::from_secs(3600)));
    assert!(poll_once(&mut fut).is_pending());
    assert_eq!(bulkhead.state().active, 1);
    drop(fut);
    assert_eq!(bulkhead.state().active, 0);
    // Dropped before it was ever polled.
    ready(&mut svc).await;
    let fut = svc.call(MS);
    assert_eq!(bulkhead.state().active, 1, "taken in call");
    drop(fut);
    assert_eq!(bulkhead.state().active, 0);
    // Completed: released as soon as the response is ready.
    ready(&mut svc).await;
    svc.call(MS).await.unwrap();
    assert_eq!(bulkhead.state().active, 0);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_bounded_wait_is_admitted_when_a_seat_frees() {
    let upstream = Upstream::default();
    let bulkhead = compartment(1);
    let mut svc = BulkheadLayer::new(bulkhead.clone())
        .max_wait(100 * MS)
        .layer(upstream.clone());
    ready(&mut svc).await;
    let mut first = Box::pin(svc.call(30 * MS));
    assert_eq!(
        (
            bulkhead.state().active,
            upstream.calls.load(Ordering::SeqCst)
        ),
        (1, 1),
        "a free seat is taken in `call`, and the inner service called, as failing fast"
    );
    assert!(poll_once(&mut first).is_pending());
    let first = tokio::spawn(first);

    let start = Instant::now();
    ready(&mut svc).await;
    let second = svc.call(MS);
    assert_eq!(
        upstream.calls.load(Ordering::SeqCst),
        1,
        "not called before it has a seat"
    );
    assert_eq!(second.await.unwrap(), "ok");
    assert_eq!(
        start.elapsed(),
        31 * MS,
        "admitted at 30 ms, then 1 ms of work"
    );
    first.await.unwrap().unwrap();
    let state = bulkhead.state();
    assert_eq!((state.active, state.rejected, state.timed_out), (0, 0, 0));
}

/// With a budget, `call` takes a free seat at once; a request that finds
/// none is not a rejection (nothing counted) and waits, and in FIFO
/// admission a later request never takes the seat a waiting one is owed.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_waiting_layer_takes_a_free_seat_in_call_and_never_passes_a_waiter() {
    let upstream = Upstream::default();
    let calls = || upstream.calls.load(Ordering::SeqCst);
    let bulkhead = compartment(1);
    let mut svc = BulkheadLayer::new(bulkhead.clone())
        .max_wait(100 * MS)
        .layer(upstream.clone());
    ready(&mut svc).await;
    let first = svc.call(Duration::from_secs(3600));
    assert_eq!(
        (bulkhead.state().active, calls()),
        (1, 1),
        "taken in `call`"
    );

    ready(&mut svc).await;
    let mut second = Box::pin(svc.call(MS));
    let state = bulkhead.state();
    assert_eq!(
        (state.rejected, state.waiting, calls()),
        (0, 0, 1),
        "no free seat: not counted, and the line is joined at the first poll"
    );
    assert!(poll_once(&mut second).is_pending());
    assert_eq!(bulkhead.state().waiting, 1);

    drop(first); // the seat goes to the waiting request
    ready(&mut svc).await;
    let mut third = Box::pin(svc.call(MS));
    assert_eq!(calls(), 1, "a new request does not pass the waiting one");
    assert!(poll_once(&mut third).is_pending());
    assert_eq!(second.await.unwrap(), "ok");
    assert_eq!(third.await.unwrap(), "ok");
    let state = bulkhead.state();
    assert_eq!(
        (calls(), state.active, state.rejected, state.timed_out),
        (3, 0, 0, 0)
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_bounded_wait_times_out_with_a_typed_error() {
    let bulkhead = compartment(1);
    let mut svc = BulkheadLayer::new(bulkhead.clone())
        .max_wait(100 * MS)
        .layer(Upstream::default());
    ready(&mut svc).await;
    let _first = tokio::spawn(svc.call(Duration::from_secs(3600)));
    tokio::task::yield_now().await;
    let start = Instant::now();
    ready(&mut svc).await;
    let err = svc.call(MS).await.unwrap_err();
    assert_eq!(
        rejection(&err),
        &Error::Timeout {
            name: "upstream".into(),
            budget: 100 * MS
        }
    );
    assert_eq!(start.elapsed(), 100 * MS);
    assert_eq!(bulkhead.state().waiting, 0);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_waiting_response_future_dropped_in_select_leaves_no_seat_behind() {
    let bulkhead = compartment(1);
    let mut svc = BulkheadLayer::new(bulkhead.clone())
        .max_wait(Duration::from_secs(60))
        .layer(Upstream::default());
    ready(&mut svc).await;
    let mut first = Box::pin(svc.call(20 * MS));
    assert!(poll_once(&mut first).is_pending()); // holds the seat
    ready(&mut svc).await;
    let waiting = svc.call(MS);
    let first = tokio::spawn(first);
    tokio::select! {
        _ = waiting => unreachable!(),
        _ = sleep(10 * MS) => {} // the client gave up
    }
    first.await.unwrap().unwrap();
    let state = bulkhead.state();
    assert_eq!((state.active, state.waiting), (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_built_from_one_arc_share_its_seats() {
    let shared = compartment(1);
    let mut search = BulkheadLayer::new(shared.clone()).layer(Upstream::default());
    let mut checkout = BulkheadLayer::new(shared.clone()).layer(Upstream::default());
    ready(&mut search).await;
    let mut held = Box::pin(search.call(Duration::from_secs(3600)));
    assert!(poll_once(&mut held).is_pending());
    ready(&mut checkout).await;
    let err = checkout.call(MS).await.unwrap_err();
    assert!(
        matches!(rejection(&err), Error::Full { .. }),
        "the other route sees the same seat"
    );
    drop(held);
    ready(&mut checkout).await;
    checkout.call(MS).await.unwrap();
}

#[test]
fn the_response_future_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let mut svc = BulkheadLayer::new(compartment(1))
        .max_wait(MS)
        .layer(Upstream::default());
    let fut = svc.call(MS);
    assert_send(&fut);
}

// === HTTP mapping ===

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_rejection_maps_to_503_with_retry_after_in_one_call() {
    use bulkhead_tokio::HttpRejection;
    let upstream = compartment(1);
    let mut svc = BulkheadLayer::new(upstream.clone()).layer(Upstream::default());
    let _busy = upstream.try_acquire().unwrap();
    ready(&mut svc).await;
    let err = svc.call(MS).await.unwrap_err();
    let response = HttpRejection::find(&err)
        .expect("a rejection")
        .response::<()>();
    assert_eq!(response.status(), http::StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(response.headers()[http::header::RETRY_AFTER], "1");
    // Closed: 503 without Retry-After, since retrying cannot help.
    upstream.close();
    ready(&mut svc).await;
    let err = svc.call(MS).await.unwrap_err();
    let response = HttpRejection::find(&err).unwrap().response::<String>();
    assert_eq!(response.status(), 503);
    assert!(!response.headers().contains_key(http::header::RETRY_AFTER));
    // Other errors are not the bulkhead's: `None`.
    let other: BoxError = "the upstream broke".into();
    assert_eq!(HttpRejection::find(&other), None);
    // A rejection wrapped in a registry error is found through the chain.
    let wrapped: BoxError = Box::new(bulkhead_std::registry::RegistryError::Rejected(
        Error::QueueFull {
            name: "q".into(),
            max_waiting: 1,
        },
    ));
    let found = HttpRejection::find(&wrapped).unwrap();
    assert_eq!(found.retry_after, Some(HttpRejection::DEFAULT_RETRY_AFTER));
    assert_eq!(
        found
            .with_retry_after(Duration::from_millis(2500))
            .retry_after_header()
            .unwrap(),
        "3"
    );
}

// === Typed errors ===

/// Fails its calls with an I/O error, and its readiness when `ready_fails`.
#[derive(Clone, Default)]
struct Failing {
    ready_fails: bool,
}

impl Service<Duration> for Failing {
    type Response = ();
    type Error = std::io::Error;
    type Future = std::future::Ready<Result<(), std::io::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), std::io::Error>> {
        Poll::Ready(match self.ready_fails {
            true => Err(std::io::Error::other("not ready")),
            false => Ok(()),
        })
    }

    fn call(&mut self, _: Duration) -> Self::Future {
        std::future::ready(Err(std::io::Error::other("upstream reset")))
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn typed_errors_tell_a_rejection_from_the_inner_services_error() {
    use bulkhead_tokio::ServiceError;
    let bulkhead = compartment(1);
    let layer = BulkheadLayer::new(bulkhead.clone()).typed_errors();
    let mut svc = layer.layer(Failing::default());
    // The inner service's error, unboxed, from its response future ...
    ready(&mut svc).await;
    let err = svc.call(MS).await.unwrap_err();
    assert_eq!(
        err.inner().map(ToString::to_string).as_deref(),
        Some("upstream reset")
    );
    assert!(err.rejection().is_none());
    // ... and from its readiness.
    let mut not_ready = layer.layer(Failing { ready_fails: true });
    let err = poll_fn(|cx| not_ready.poll_ready(cx)).await.unwrap_err();
    assert!(matches!(&err, ServiceError::Inner(e) if e.to_string() == "not ready"));
    // A rejection, failing fast: the inner service is not called.
    let held = bulkhead.try_acquire().unwrap();
    let mut counted = BulkheadLayer::new(bulkhead.clone())
        .typed_errors()
        .layer(Upstream::default());
    ready(&mut counted).await;
    let err = counted.call(MS).await.unwrap_err();
    assert!(matches!(
        &err,
        ServiceError::Rejected(Error::Full {
            name,
            active: 1,
            ..
        }) if name == "upstream"
    ));
    assert_eq!(counted.get_ref().calls.load(Ordering::SeqCst), 0);
    // A rejection after a bounded wait.
    let mut waiting = BulkheadService::new(Upstream::default(), bulkhead.clone())
        .max_wait(50 * MS)
        .typed_errors();
    ready(&mut waiting).await;
    let err = waiting.call(MS).await.unwrap_err();
    assert_eq!(
        err,
        ServiceError::Rejected(Error::Timeout {
            name: "upstream".into(),
            budget: 50 * MS
        })
    );
    drop(held);
    ready(&mut waiting).await;
    assert_eq!(waiting.call(MS).await.unwrap(), "ok");
    let state = bulkhead.state();
    assert_eq!((state.active, state.rejected, state.timed_out), (0, 1, 1));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn typed_errors_convert_to_box_errors_and_503_like_the_default() {
    use bulkhead_tokio::{HttpRejection, ServiceError};
    let bulkhead = compartment(1);
    let _busy = bulkhead.try_acquire().unwrap();
    let mut svc = BulkheadLayer::new(bulkhead.clone())
        .typed_errors()
        .layer(Failing::default());
    ready(&mut svc).await;
    let err = svc.call(MS).await.unwrap_err();
    let answer = HttpRejection::from_service_error(&err).expect("a rejection");
    assert_eq!(
        answer.response::<()>().headers()[http::header::RETRY_AFTER],
        "1"
    );
    // `?` boxes it (the inner error is a std error): found through `source()`.
    let message = err.to_string();
    let boxed: BoxError = err.into();
    assert_eq!(HttpRejection::find(&boxed), Some(answer));
    assert_eq!(boxed.to_string(), message);
    assert!(message.contains("`upstream`"), "{message}");
    // `into_box_error` gives the default service's error exactly.
    ready(&mut svc).await;
    let legacy = svc.call(MS).await.unwrap_err().into_box_error();
    assert!(matches!(rejection(&legacy), Error::Full { .. }));
    // The inner error is not a rejection: `None`, as for `find`.
    let inner = ServiceError::<std::io::Error>::Inner(std::io::Error::other("reset"));
    assert_eq!(HttpRejection::from_service_error(&inner), None);
    let inner_boxed = inner.into_box_error();
    assert!(
        inner_boxed.downcast_ref::<std::io::Error>().is_some(),
        "passed through unwrapped"
    );
    // An inner error that is already a `BoxError` passes through as it is.
    let original: BoxError = "the upstream broke".into();
    let ptr = &*original as *const (dyn std::error::Error + Send + Sync) as *const ();
    let again = ServiceError::Inner(original).into_box_error();
    assert_eq!(
        &*again as *const (dyn std::error::Error + Send + Sync) as *const (),
        ptr
    );
}
