//! The tower layer over an adaptive compartment (`Arc<Adaptive<..>>`):
//! each admitted request records one sample, timed from admission on the
//! compartment's clock and classified by the layer's classifier, failing
//! fast or after a wait; a rejected request records nothing; a dropped
//! response future records a success. The same layer, the same errors.

use std::convert::Infallible;
use std::future::{Future, Ready, pending, ready};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bulkhead_tokio::bulkhead_core::limit::{
    Adaptive, Aimd, AimdParams, CallOutcome, Limit, Sample,
};
use bulkhead_tokio::{BoxError, Bulkhead, BulkheadLayer, Error, ServiceError, TokioClock};
use tower_layer::Layer;
use tower_service::Service;

/// Answers with the status it is asked for.
#[derive(Clone)]
struct Status;

impl Service<u16> for Status {
    type Response = u16;
    type Error = Infallible;
    type Future = Ready<Result<u16, Infallible>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, status: u16) -> Self::Future {
        ready(Ok(status))
    }
}

/// Answers after the time it is asked to take.
#[derive(Clone)]
struct Slow;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl Service<Duration> for Slow {
    type Response = ();
    type Error = Infallible;
    type Future = BoxFuture<Result<(), Infallible>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, work: Duration) -> Self::Future {
        Box::pin(async move {
            tokio::time::sleep(work).await;
            Ok(())
        })
    }
}

/// AIMD in [1, 8], unwindowed: every sample moves the limit.
fn upstream(seats: usize) -> Arc<Adaptive<bulkhead_tokio::StdLock, Aimd, TokioClock>> {
    let aimd = Aimd::new(AimdParams {
        initial: seats,
        min: 1,
        max: 8,
        ..AimdParams::DEFAULT
    })
    .unwrap();
    Arc::new(Adaptive::new(
        Bulkhead::new("upstream", seats).unwrap(),
        aimd,
        TokioClock::new(),
    ))
}

/// A limit that keeps every sample it is fed, at a fixed limit.
#[derive(Clone, Default)]
struct Recording(Arc<Mutex<Vec<Sample>>>);

impl Limit for Recording {
    fn limit(&self) -> usize {
        1
    }
    fn update(&mut self, sample: &Sample) -> usize {
        self.0.lock().unwrap().push(*sample);
        1
    }
}

fn five_hundreds_are_drops(r: &Result<u16, Infallible>) -> CallOutcome {
    match r {
        Ok(s) if *s >= 500 => CallOutcome::Dropped,
        _ => CallOutcome::Success,
    }
}

#[tokio::test(start_paused = true)]
async fn five_hundreds_back_off_and_rejections_record_nothing() {
    let adaptive = upstream(2);
    let layer = BulkheadLayer::new(Arc::clone(&adaptive)).classify(five_hundreds_are_drops);
    assert!(layer.is_adaptive());
    let mut svc = layer.clone().layer(Status);
    assert_eq!(svc.call(200).await.unwrap(), 200);
    assert_eq!(adaptive.limit(), 3, "a success with 1 of 2 in use: + 1");
    assert_eq!(svc.call(503).await.unwrap(), 503);
    assert_eq!(adaptive.limit(), 2, "503 is a drop: floor(0.9 x 3)");

    let _a = adaptive.try_acquire().unwrap();
    let _b = adaptive.try_acquire().unwrap();
    let changes = adaptive.controller().changes();
    let rejected: BoxError = svc.call(200).await.unwrap_err();
    assert!(matches!(
        rejected.downcast_ref::<Error>(),
        Some(Error::Full { .. })
    ));
    // Typed: the same rejection, matched, not boxed.
    let mut typed = layer.typed_errors().layer(Status);
    let rejected = typed.call(200).await.unwrap_err();
    assert!(matches!(
        rejected,
        ServiceError::Rejected(Error::Full { .. })
    ));
    assert_eq!(
        adaptive.controller().changes(),
        changes,
        "a rejection is no sample"
    );
}

#[tokio::test(start_paused = true)]
async fn the_default_classifier_counts_an_err_as_dropped() {
    #[derive(Clone)]
    struct Failing;
    impl Service<()> for Failing {
        type Response = ();
        type Error = &'static str;
        type Future = Ready<Result<(), &'static str>>;
        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), &'static str>> {
            Poll::Ready(Ok(()))
        }
        fn call(&mut self, (): ()) -> Self::Future {
            ready(Err("reset"))
        }
    }
    let adaptive = upstream(4);
    let mut svc = BulkheadLayer::new(Arc::clone(&adaptive)).layer(Failing);
    let err = svc.call(()).await.unwrap_err();
    // The inner service's error, not a rejection: no 503 for it.
    assert!(bulkhead_tokio::HttpRejection::find(&err).is_none());
    assert_eq!(adaptive.limit(), 3, "floor(0.9 x 4)");
}

/// Waiting for a seat: the request queues, is admitted when the holder
/// gives its seat back, and its sample's round trip counts from admission
/// (the call's 5 ms), not from the call to `call` (the 20 ms wait).
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_waiting_request_is_timed_from_admission() {
    let samples = Recording::default();
    let adaptive = Arc::new(Adaptive::new(
        Bulkhead::new("upstream", 1).unwrap(),
        samples.clone(),
        TokioClock::new(),
    ));
    let mut svc = BulkheadLayer::new(Arc::clone(&adaptive))
        .max_wait(Duration::from_secs(1))
        .typed_errors()
        .layer(Slow);
    let holder = adaptive.try_acquire().unwrap();
    let mut response = std::pin::pin!(svc.call(Duration::from_millis(5)));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(response.as_mut().poll(&mut cx).is_pending());
    assert_eq!(adaptive.bulkhead().state().waiting, 1, "queued");
    tokio::time::sleep(Duration::from_millis(20)).await;
    holder.ignore();
    response.await.unwrap();
    let samples = samples.0.lock().unwrap();
    assert_eq!(samples.len(), 1, "one sample, the admitted request's");
    assert_eq!(samples[0].outcome, CallOutcome::Success);
    assert_eq!(samples[0].in_flight, 1);
    let rtt = Duration::from_nanos(samples[0].rtt_nanos);
    assert!(
        rtt >= Duration::from_millis(5) && rtt < Duration::from_millis(20),
        "timed from admission: {rtt:?}"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_bounded_wait_that_times_out_records_nothing() {
    let adaptive = upstream(1);
    let mut svc = BulkheadLayer::new(Arc::clone(&adaptive))
        .max_wait(Duration::from_millis(10))
        .typed_errors()
        .layer(Status);
    let _held = adaptive.try_acquire().unwrap();
    let err = svc.call(200).await.unwrap_err();
    assert!(matches!(err, ServiceError::Rejected(Error::Timeout { .. })));
    assert_eq!(adaptive.controller().changes(), 0);
    assert_eq!(adaptive.bulkhead().state().waiting, 0);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_dropped_response_future_gives_its_seat_back_as_a_success() {
    #[derive(Clone)]
    struct Hangs;
    impl Service<()> for Hangs {
        type Response = ();
        type Error = Infallible;
        type Future = std::future::Pending<Result<(), Infallible>>;
        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }
        fn call(&mut self, (): ()) -> Self::Future {
            pending()
        }
    }
    let adaptive = upstream(2);
    let _other = adaptive.try_acquire().unwrap();
    let mut svc = BulkheadLayer::new(Arc::clone(&adaptive)).layer(Hangs);
    let response = svc.call(());
    assert_eq!(adaptive.bulkhead().state().active, 2);
    drop(response);
    assert_eq!(adaptive.bulkhead().state().active, 1, "the seat came back");
    assert_eq!(adaptive.limit(), 3, "a success with 2 of 2 in use: + 1");
}

#[test]
fn the_response_future_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let mut svc = BulkheadLayer::new(upstream(1))
        .max_wait(Duration::from_millis(1))
        .layer(Slow);
    let fut = svc.call(Duration::from_millis(1));
    assert_send(&fut);
}
