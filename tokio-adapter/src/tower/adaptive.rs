//! [`AdaptiveLayer`]: a tower layer over an adaptive compartment that
//! classifies each response with a user-supplied classifier.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bulkhead_core::limit::{Adaptive, CallOutcome, Clock, Limit, Sample};
use bulkhead_core::{Error, OwnedSeat, RawLock};
use bulkhead_std::StdLock;
use pin_project_lite::pin_project;
use tower_layer::Layer;
use tower_service::Service;

use super::{BoxErrors, ErrorRepr, TypedErrors};
use crate::TokioClock;

/// A seat that records one sample when it is given back; dropped without
/// an outcome (the response future was cancelled), it records a success.
struct Timed<L: RawLock, A: Limit, C: Clock> {
    seat: Option<OwnedSeat<Arc<Adaptive<L, A, C>>>>,
    started: u64,
    in_flight: usize,
}

impl<L: RawLock, A: Limit, C: Clock> Timed<L, A, C> {
    fn finish(&mut self, outcome: CallOutcome) {
        if let Some(seat) = self.seat.take() {
            let adaptive = seat.handle();
            let rtt = adaptive.clock().now_nanos().saturating_sub(self.started);
            adaptive.record(&Sample::from_nanos(rtt, self.in_flight, outcome));
            drop(seat);
        }
    }
}

impl<L: RawLock, A: Limit, C: Clock> Drop for Timed<L, A, C> {
    fn drop(&mut self) {
        self.finish(CallOutcome::Success);
    }
}

/// Admits each request through an adaptive compartment, fail fast, and
/// feeds the limit every response's round trip and the outcome `classify`
/// gives it. A rejected request records nothing.
///
/// ```
/// use std::sync::Arc;
/// use bulkhead_tokio::{AdaptiveLayer, Bulkhead, TokioClock};
/// use bulkhead_tokio::bulkhead_core::limit::{Adaptive, CallOutcome, Gradient2, Gradient2Params, Windowed};
///
/// let limit = Gradient2::new(Gradient2Params { min: 4, ..Gradient2Params::DEFAULT })?;
/// let upstream = Arc::new(Adaptive::new(Bulkhead::new("upstream", 20)?, Windowed::new(limit, 10), TokioClock::new()));
/// // 5xx counts as dropped; transport errors too.
/// let layer = AdaptiveLayer::new(upstream, |r: &Result<u16, std::io::Error>| match r {
///     Ok(status) if *status >= 500 => CallOutcome::Dropped,
///     Ok(_) => CallOutcome::Success,
///     Err(_) => CallOutcome::Dropped,
/// });
/// # let _ = layer;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Its services' error is a [`BoxError`](super::BoxError) by default (one
/// allocation per rejection), or a [`ServiceError`](super::ServiceError)
/// with [`typed_errors`](Self::typed_errors) (none), as for
/// [`BulkheadLayer`](super::BulkheadLayer).
pub struct AdaptiveLayer<A, K, C = TokioClock, L: RawLock = StdLock, R = BoxErrors> {
    adaptive: Arc<Adaptive<L, A, C>>,
    classify: K,
    errors: PhantomData<fn() -> R>,
}

impl<A: Limit, K, C: Clock, L: RawLock> AdaptiveLayer<A, K, C, L> {
    /// A layer over `adaptive` that classifies responses with `classify`.
    pub fn new(adaptive: Arc<Adaptive<L, A, C>>, classify: K) -> Self {
        Self {
            adaptive,
            classify,
            errors: PhantomData,
        }
    }
}

impl<A, K, C, L: RawLock, R> AdaptiveLayer<A, K, C, L, R> {
    /// The same layer, whose services return a
    /// [`ServiceError`](super::ServiceError) of the inner service's error
    /// instead of a [`BoxError`](super::BoxError): a rejection allocates
    /// nothing (see [`BulkheadLayer::typed_errors`](super::BulkheadLayer::typed_errors)).
    #[must_use]
    pub fn typed_errors(self) -> AdaptiveLayer<A, K, C, L, TypedErrors> {
        AdaptiveLayer {
            adaptive: self.adaptive,
            classify: self.classify,
            errors: PhantomData,
        }
    }
}

impl<A, K: Clone, C, L: RawLock, R> Clone for AdaptiveLayer<A, K, C, L, R> {
    fn clone(&self) -> Self {
        Self {
            adaptive: Arc::clone(&self.adaptive),
            classify: self.classify.clone(),
            errors: PhantomData,
        }
    }
}

impl<A, K, C, L: RawLock, R> fmt::Debug for AdaptiveLayer<A, K, C, L, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdaptiveLayer").finish_non_exhaustive()
    }
}

impl<S, A, K: Clone, C, L: RawLock, R> Layer<S> for AdaptiveLayer<A, K, C, L, R> {
    type Service = AdaptiveService<S, A, K, C, L, R>;
    fn layer(&self, inner: S) -> Self::Service {
        AdaptiveService {
            inner,
            adaptive: Arc::clone(&self.adaptive),
            classify: self.classify.clone(),
            errors: PhantomData,
        }
    }
}

/// The service of an [`AdaptiveLayer`].
pub struct AdaptiveService<S, A, K, C = TokioClock, L: RawLock = StdLock, R = BoxErrors> {
    inner: S,
    adaptive: Arc<Adaptive<L, A, C>>,
    classify: K,
    errors: PhantomData<fn() -> R>,
}

impl<S: Clone, A, K: Clone, C, L: RawLock, R> Clone for AdaptiveService<S, A, K, C, L, R> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            adaptive: Arc::clone(&self.adaptive),
            classify: self.classify.clone(),
            errors: PhantomData,
        }
    }
}

impl<S, A, K, C, L: RawLock, R> fmt::Debug for AdaptiveService<S, A, K, C, L, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdaptiveService").finish_non_exhaustive()
    }
}

impl<S, Req, A, K, C, L, R> Service<Req> for AdaptiveService<S, A, K, C, L, R>
where
    S: Service<Req>,
    R: ErrorRepr<S::Error>,
    A: Limit,
    K: Fn(&Result<S::Response, S::Error>) -> CallOutcome + Clone,
    C: Clock,
    L: RawLock,
{
    type Response = S::Response;
    type Error = R::Error;
    type Future = AdaptiveResponseFuture<S::Future, A, K, C, L, R>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), R::Error>> {
        // Readiness only: the seat is taken in `call`.
        self.inner.poll_ready(cx).map_err(R::inner)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        // The `Arc` is cloned only for an admitted request.
        let state = match self.adaptive.bulkhead().try_acquire() {
            Ok(seat) => {
                let seat = OwnedSeat::from_seat(seat, Arc::clone(&self.adaptive));
                State::Running {
                    future: self.inner.call(request),
                    timed: Timed {
                        in_flight: self.adaptive.bulkhead().state().active,
                        started: self.adaptive.clock().now_nanos(),
                        seat: Some(seat),
                    },
                    classify: self.classify.clone(),
                }
            }
            Err(error) => State::Rejected { error: Some(error) },
        };
        AdaptiveResponseFuture {
            state,
            errors: PhantomData,
        }
    }
}

pin_project! {
    /// The response future of an [`AdaptiveService`].
    ///
    /// # Cancel safety
    /// Dropping it gives its seat back and records a success (the default
    /// for a seat given back without an outcome).
    #[must_use = "futures do nothing unless polled"]
    pub struct AdaptiveResponseFuture<F, A: Limit, K, C: Clock, L: RawLock, R = BoxErrors> {
        #[pin]
        state: State<F, A, K, C, L>,
        errors: PhantomData<fn() -> R>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F, A: Limit, K, C: Clock, L: RawLock> {
        Running { #[pin] future: F, timed: Timed<L, A, C>, classify: K },
        Rejected { error: Option<Error> },
    }
}

impl<F, T, E, A, K, C, L, R> Future for AdaptiveResponseFuture<F, A, K, C, L, R>
where
    F: Future<Output = Result<T, E>>,
    R: ErrorRepr<E>,
    A: Limit,
    K: Fn(&Result<T, E>) -> CallOutcome,
    C: Clock,
    L: RawLock,
{
    type Output = Result<T, R::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Running {
                future,
                timed,
                classify,
            } => {
                let output = ready!(future.poll(cx));
                timed.finish(classify(&output));
                Poll::Ready(output.map_err(R::inner))
            }
            StateProj::Rejected { error } => {
                let error = error
                    .take()
                    .expect("`AdaptiveResponseFuture` polled after it completed");
                Poll::Ready(Err(R::rejected(error)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bulkhead_core::limit::{Aimd, AimdParams};
    use std::convert::Infallible;
    use std::future::{Ready, ready};

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

    #[tokio::test(start_paused = true)]
    async fn five_hundreds_back_off_and_rejections_record_nothing() {
        let aimd = Aimd::new(AimdParams {
            initial: 2,
            min: 1,
            max: 8,
            ..AimdParams::DEFAULT
        })
        .unwrap();
        let adaptive = Arc::new(Adaptive::new(
            bulkhead_core::Bulkhead::<StdLock>::new("upstream", 2).unwrap(),
            aimd,
            TokioClock::new(),
        ));
        let classify = |r: &Result<u16, Infallible>| match r {
            Ok(s) if *s >= 500 => CallOutcome::Dropped,
            _ => CallOutcome::Success,
        };
        let mut svc = AdaptiveLayer::new(Arc::clone(&adaptive), classify).layer(Status);
        assert_eq!(svc.call(200).await.unwrap(), 200);
        assert_eq!(adaptive.limit(), 3, "a success with 1 of 2 in use: + 1");
        assert_eq!(svc.call(503).await.unwrap(), 503);
        assert_eq!(adaptive.limit(), 2, "503 is a drop: floor(0.9 x 3)");
        let _a = adaptive.try_acquire().unwrap();
        let _b = adaptive.try_acquire().unwrap();
        let changes = adaptive.controller().changes();
        let rejected = svc.call(200).await.unwrap_err();
        assert!(rejected.downcast_ref::<Error>().is_some());
        assert_eq!(adaptive.controller().changes(), changes);
        // Typed: the same rejection, matched, not boxed.
        let mut typed = AdaptiveLayer::new(Arc::clone(&adaptive), classify)
            .typed_errors()
            .layer(Status);
        let rejected = typed.call(200).await.unwrap_err();
        assert!(matches!(
            rejected,
            crate::ServiceError::Rejected(Error::Full { .. })
        ));
        assert_eq!(adaptive.controller().changes(), changes);
    }
}
