//! The tower layer's weight function: each request takes as many seats as
//! `BulkheadLayer::weight` says, failing fast or waiting, over a
//! compartment, an adaptive compartment and a registry domain; a weight of
//! 0 or above the limit is that request's clear error (boxed or typed,
//! answered by `HttpRejection`), never a panic, and never reaches the
//! inner service; a heavy waiting request is not passed by lighter ones.

use std::future::{Future, Pending, pending};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bulkhead_tokio::bulkhead_core::limit::{Adaptive, CallOutcome, Limit, Sample};
use bulkhead_tokio::registry::{DomainConfig, Registry};
use bulkhead_tokio::{
    Algorithm, BoxError, Bulkhead, BulkheadLayer, Error, HttpRejection, LimitConfig, MaxWait,
    ServiceError, TokioClock, WeightOne,
};
use http::StatusCode;
use tokio::time::Instant;
use tower_layer::Layer;
use tower_service::Service;

/// A request that takes `seats` seats.
#[derive(Debug)]
struct Job {
    seats: usize,
}

fn job(seats: usize) -> Job {
    Job { seats }
}

fn seats(job: &Job) -> usize {
    job.seats
}

/// Never answers, so that an admitted request holds its seats until its
/// response future is dropped; counts its calls.
#[derive(Clone, Default)]
struct Hold {
    calls: Arc<AtomicUsize>,
}

impl Service<Job> for Hold {
    type Response = ();
    type Error = std::io::Error;
    type Future = Pending<Result<(), std::io::Error>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), std::io::Error>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, _: Job) -> Self::Future {
        self.calls.fetch_add(1, Ordering::SeqCst);
        pending()
    }
}

impl Hold {
    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

/// Answers with the number it is sent, at once.
#[derive(Clone)]
struct Echo;

impl Service<u16> for Echo {
    type Response = u16;
    type Error = std::convert::Infallible;
    type Future = std::future::Ready<Result<u16, std::convert::Infallible>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, n: u16) -> Self::Future {
        std::future::ready(Ok(n))
    }
}

fn compartment(seats: usize) -> Arc<Bulkhead> {
    Arc::new(Bulkhead::new("upstream", seats).unwrap())
}

fn poll_once<F: Future>(fut: Pin<&mut F>) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(Waker::noop()))
}

fn rejection(err: &BoxError) -> &Error {
    err.downcast_ref::<Error>().expect("a bulkhead rejection")
}

#[tokio::test(flavor = "current_thread")]
async fn each_request_takes_as_many_seats_as_its_weight() {
    let upstream = compartment(4);
    let inner = Hold::default();
    let mut svc = BulkheadLayer::new(upstream.clone())
        .weight(seats)
        .layer(inner.clone());
    let mut three = Box::pin(svc.call(job(3)));
    assert!(poll_once(three.as_mut()).is_pending());
    assert_eq!(upstream.state().active, 3, "one request, three seats");
    // Two more do not fit in the one seat left: `Full`, at once.
    let err = svc.call(job(2)).await.unwrap_err();
    assert!(
        matches!(rejection(&err), Error::Full { active: 3, .. }),
        "{err:?}"
    );
    let mut one = Box::pin(svc.call(job(1)));
    assert!(poll_once(one.as_mut()).is_pending());
    assert_eq!(upstream.state().active, 4);
    assert_eq!(inner.calls(), 2, "the rejected request never reached it");
    drop(three);
    assert_eq!(upstream.state().active, 1, "all three given back together");
    drop(one);
    assert_eq!(upstream.state().active, 0);
}

#[tokio::test(flavor = "current_thread")]
async fn without_a_weight_function_every_request_takes_one_seat() {
    let upstream = compartment(4);
    let layer = BulkheadLayer::new(upstream.clone());
    // The default weight, spelled out: the same layer type.
    let _: &BulkheadLayer<Arc<Bulkhead>, _, _, WeightOne> = &layer;
    let mut svc = layer.layer(Hold::default());
    let held: Vec<_> = (0..4)
        .map(|n| {
            let mut fut = Box::pin(svc.call(job(n + 2)));
            assert!(poll_once(fut.as_mut()).is_pending());
            fut
        })
        .collect();
    assert_eq!(
        upstream.state().active,
        4,
        "the request's own count is ignored"
    );
    drop(held);
    assert_eq!(upstream.state().active, 0);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_zero_weight_is_that_requests_clear_error_boxed_or_typed() {
    let upstream = compartment(4);
    let inner = Hold::default();
    for max_wait in [MaxWait::FailFast, Duration::from_secs(60).into()] {
        let layer = BulkheadLayer::new(upstream.clone())
            .weight(seats)
            .max_wait(max_wait);
        let start = Instant::now();

        let mut boxed = layer.clone().layer(inner.clone());
        let err = boxed.call(job(0)).await.unwrap_err();
        assert_eq!(
            rejection(&err),
            &Error::ZeroWeight {
                name: "upstream".into()
            },
            "{max_wait:?}"
        );
        assert!(err.to_string().contains("weight 0"), "{err}");
        let answer = HttpRejection::find(&err).unwrap();
        assert_eq!(answer.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(answer.retry_after, None, "retrying cannot help");

        let mut typed = layer.typed_errors().layer(inner.clone());
        let err = typed.call(job(0)).await.unwrap_err();
        assert!(
            matches!(err, ServiceError::Rejected(Error::ZeroWeight { .. })),
            "{err:?}"
        );
        let answer = HttpRejection::from_service_error(&err).unwrap();
        assert_eq!(answer.status, StatusCode::INTERNAL_SERVER_ERROR);

        // The next request, well weighed, goes through.
        let mut next = Box::pin(typed.call(job(1)));
        assert!(poll_once(next.as_mut()).is_pending());
        assert_eq!(upstream.state().active, 1);
        drop(next);
        assert_eq!(
            start.elapsed(),
            Duration::ZERO,
            "{max_wait:?}: nothing waited"
        );
    }
    assert_eq!(
        inner.calls(),
        2,
        "no zero-weight request reached the service"
    );
    assert_eq!(
        upstream.state().rejected,
        0,
        "a bad weight is not a rejection for load"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_weight_above_the_limit_is_refused_at_once_whatever_the_budget() {
    let upstream = compartment(4);
    let inner = Hold::default();
    let mut expected_rejections = 0;
    for max_wait in [
        MaxWait::FailFast,
        Duration::from_secs(60).into(),
        MaxWait::Forever,
    ] {
        let layer = BulkheadLayer::new(upstream.clone())
            .weight(seats)
            .max_wait(max_wait);
        let start = Instant::now();
        let err = layer
            .clone()
            .layer(inner.clone())
            .call(job(5))
            .await
            .unwrap_err();
        assert_eq!(
            rejection(&err),
            &Error::WeightAboveLimit {
                name: "upstream".into(),
                weight: 5,
                max_concurrent: 4
            },
            "{max_wait:?}"
        );
        let answer = HttpRejection::find(&err).unwrap();
        assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(answer.retry_after.is_some(), "a raised limit may admit it");
        let err = layer
            .typed_errors()
            .layer(inner.clone())
            .call(job(usize::MAX))
            .await
            .unwrap_err();
        assert!(
            matches!(err, ServiceError::Rejected(Error::WeightAboveLimit { .. })),
            "{err:?}"
        );
        expected_rejections += 2;
        assert_eq!(
            start.elapsed(),
            Duration::ZERO,
            "{max_wait:?}: refused without waiting"
        );
    }
    assert_eq!(inner.calls(), 0);
    let state = upstream.state();
    assert_eq!(
        (state.rejected, state.active, state.waiting),
        (expected_rejections, 0, 0)
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_heavy_waiting_request_is_not_passed_by_lighter_ones() {
    let upstream = compartment(4);
    let inner = Hold::default();
    let mut svc = BulkheadLayer::new(upstream.clone())
        .weight(seats)
        .max_wait(Duration::from_secs(60))
        .layer(inner.clone());
    let mut held = upstream.try_acquire_many(4).unwrap();
    let mut heavy = Box::pin(svc.call(job(3)));
    assert!(poll_once(heavy.as_mut()).is_pending());
    let mut light: Vec<_> = (0..2).map(|_| Box::pin(svc.call(job(1)))).collect();
    for l in &mut light {
        assert!(poll_once(l.as_mut()).is_pending());
    }
    assert_eq!(upstream.state().waiting, 3);

    drop(held.split(2).unwrap()); // enough for both light requests
    for l in &mut light {
        assert!(poll_once(l.as_mut()).is_pending(), "passed the heavy head");
    }
    assert!(poll_once(heavy.as_mut()).is_pending());
    assert_eq!(inner.calls(), 0);

    drop(held.split(1).unwrap());
    assert!(
        poll_once(heavy.as_mut()).is_pending(),
        "admitted, then running"
    );
    assert_eq!(
        inner.calls(),
        1,
        "the heavy request reached the service first"
    );
    assert_eq!(upstream.state().waiting, 2);
    drop(held);
    for l in &mut light {
        assert!(poll_once(l.as_mut()).is_pending());
    }
    assert_eq!(inner.calls(), 2, "one light request in the last seat");
    drop(heavy);
    for l in &mut light {
        assert!(poll_once(l.as_mut()).is_pending());
    }
    assert_eq!(inner.calls(), 3);
    assert_eq!(upstream.state().active, 2);
    drop(light);
    assert_eq!(upstream.state().active, 0);
}

/// A fixed limit of 8 that keeps every sample it is fed.
#[derive(Clone, Default)]
struct Recording(Arc<Mutex<Vec<Sample>>>);

impl Limit for Recording {
    fn limit(&self) -> usize {
        8
    }
    fn update(&mut self, sample: &Sample) -> usize {
        self.0.lock().unwrap().push(*sample);
        8
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn over_an_adaptive_compartment_a_weighted_request_records_one_sample() {
    let samples = Recording::default();
    let upstream = Arc::new(Adaptive::new(
        Bulkhead::new("upstream", 8).unwrap(),
        samples.clone(),
        TokioClock::new(),
    ));
    let classified = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&classified);
    for max_wait in [MaxWait::FailFast, Duration::from_secs(1).into()] {
        let counter = Arc::clone(&counter);
        let mut svc = BulkheadLayer::new(Arc::clone(&upstream))
            .weight(|n: &u16| usize::from(*n))
            .classify(move |_: &Result<u16, std::convert::Infallible>| {
                counter.fetch_add(1, Ordering::SeqCst);
                CallOutcome::Success
            })
            .max_wait(max_wait)
            .layer(Echo);
        let _other = upstream.bulkhead().try_acquire().unwrap();
        assert_eq!(svc.call(5).await.unwrap(), 5);
        // Refused: records nothing.
        assert!(svc.call(0).await.is_err());
        assert!(svc.call(9).await.is_err());
    }
    assert_eq!(classified.load(Ordering::SeqCst), 2);
    let samples = samples.0.lock().unwrap();
    assert_eq!(
        samples.len(),
        2,
        "one sample per request, whatever its weight"
    );
    assert!(
        samples.iter().all(|s| s.in_flight == 6),
        "in flight counts seats: its five and the other one: {samples:?}"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn over_a_registry_domain_the_weight_applies_and_feeds_its_limit_once() {
    let registry = Registry::local();
    // Pinned at 8 seats; each sample still goes through the controller.
    let pinned = LimitConfig {
        min: Some(8),
        max: Some(8),
        ..LimitConfig::new(Algorithm::Aimd)
    };
    registry
        .get_or_create(
            "search",
            DomainConfig::new(8)
                .limit(pinned)
                .max_wait(MaxWait::from_millis(50)),
        )
        .unwrap();
    // The classifier runs once per sample recorded (only for a timed seat).
    let classified = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&classified);
    let mut svc = BulkheadLayer::from_registry(&registry, "search")
        .unwrap()
        .weight(|n: &u16| usize::from(*n))
        .classify(move |_: &Result<u16, std::convert::Infallible>| {
            counter.fetch_add(1, Ordering::SeqCst);
            CallOutcome::Success
        })
        .layer(Echo);
    let domain = registry.domain("search").unwrap();
    assert_eq!(domain.state().max_concurrent, 8);
    let held = domain.bulkhead().try_acquire_many(4).unwrap();
    let start = Instant::now();
    // Six seats do not fit next to the four held: waits the domain's
    // 50 ms, then times out, recording nothing.
    let err = svc.call(6).await.unwrap_err();
    assert!(matches!(rejection(&err), Error::Timeout { .. }), "{err:?}");
    assert_eq!(start.elapsed(), Duration::from_millis(50));
    assert_eq!(classified.load(Ordering::SeqCst), 0);
    drop(held);
    assert_eq!(svc.call(6).await.unwrap(), 6);
    assert_eq!(
        classified.load(Ordering::SeqCst),
        1,
        "one sample for a request of six seats"
    );
    let err = svc.call(0).await.unwrap_err();
    assert!(
        matches!(rejection(&err), Error::ZeroWeight { .. }),
        "{err:?}"
    );
    assert_eq!(classified.load(Ordering::SeqCst), 1);
    assert_eq!(domain.state().active, 0);
}
