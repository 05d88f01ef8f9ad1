//! [`ResponseFuture`], which holds the seat while the inner call runs
//! and, for an adaptive compartment, feeds its limit when it ends.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bulkhead_core::Error;
use pin_project_lite::pin_project;
use tower_service::Service;

use super::handle::sealed::Hold;
use super::{BoxErrors, ClassifyResponse, ErrIsDropped, ErrorRepr};
use crate::Bulkhead;

pin_project! {
    /// The response future of a [`BulkheadService`](super::BulkheadService)
    /// and of a [`PartitionedService`](super::PartitionedService) (`H` =
    /// `Arc<Partitioned<L>>`).
    ///
    /// Allocation-free in both modes: a request that must wait holds a
    /// named owned wait ([`AcquireWithinOwned`](crate::AcquireWithinOwned), or
    /// [`AcquirePartitionWithin`](crate::AcquirePartitionWithin)) and the ready inner
    /// service with its request, and calls the service once it is handed a
    /// seat. A rejection is made into the service's error (`R`, see
    /// [`ErrorRepr`]) only when it is returned: boxed by default, or a
    /// [`ServiceError`](super::ServiceError), which allocates nothing.
    ///
    /// # Feeding an adaptive limit
    /// Over an adaptive compartment, or an adaptive registry domain (see
    /// [`LayerHandle`](super::LayerHandle)), its seat is timed: when the inner future completes
    /// it records one sample (the round trip from admission, the in-flight
    /// count at admission, and the outcome `K` gives the response) before
    /// the seat is freed. Dropped before that (the client hung up), the
    /// seat records a success, the default of every adaptive seat. A
    /// rejected request records nothing.
    ///
    /// # Cancel safety
    /// Dropping it gives its seat back, or leaves the line if it still
    /// waited for one (the request is then dropped uncalled); the inner
    /// future, if any, is dropped with it.
    ///
    /// # Memory ordering
    /// The inner service's future runs while holding a seat: everything the
    /// seat's previous holder did before giving it back happens-before the
    /// inner call. The precise orderings are in
    /// [`Bulkhead`](bulkhead_core::Bulkhead#memory-ordering).
    #[must_use = "futures do nothing unless polled"]
    pub struct ResponseFuture<S, Req, H = Arc<Bulkhead>, R = BoxErrors, K = ErrIsDropped>
    where
        S: Service<Req>,
        H: Hold,
    {
        #[pin]
        phase: Phase<S, Req, H, K>,
        errors: PhantomData<fn() -> R>,
    }
}

pin_project! {
    #[project = PhaseProj]
    enum Phase<S, Req, H, K>
    where
        S: Service<Req>,
        H: Hold,
    {
        Waiting {
            #[pin]
            admit: H::Wait,
            // The ready service and the request, called once admitted,
            // and the classifier of its response.
            call: Option<(S, Req, K)>,
            // What starts the seat's timing, if it is timed.
            feedback: H::Feedback,
        },
        Running {
            #[pin]
            future: S::Future,
            // Taken (given back, after its sample if timed) as soon as
            // `future` completes.
            seat: Option<H::Seat>,
            classify: K,
        },
        Rejected { error: Option<Error> },
    }
}

impl<S: Service<Req>, Req, H: Hold, R, K> ResponseFuture<S, Req, H, R, K> {
    pub(super) fn running(future: S::Future, seat: H::Seat, classify: K) -> Self {
        Self::from_phase(Phase::Running {
            future,
            seat: Some(seat),
            classify,
        })
    }

    pub(super) fn waiting(
        admit: H::Wait,
        service: S,
        request: Req,
        feedback: H::Feedback,
        classify: K,
    ) -> Self {
        Self::from_phase(Phase::Waiting {
            admit,
            call: Some((service, request, classify)),
            feedback,
        })
    }

    pub(super) fn rejected(error: Error) -> Self {
        Self::from_phase(Phase::Rejected { error: Some(error) })
    }

    fn from_phase(phase: Phase<S, Req, H, K>) -> Self {
        Self {
            phase,
            errors: PhantomData,
        }
    }
}

impl<S, Req, T, E, H, R, K> Future for ResponseFuture<S, Req, H, R, K>
where
    S: Service<Req, Response = T, Error = E>,
    R: ErrorRepr<E>,
    H: Hold,
    K: ClassifyResponse<T, E>,
{
    type Output = Result<T, R::Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            match self.as_mut().project().phase.project() {
                PhaseProj::Waiting {
                    admit,
                    call,
                    feedback,
                } => match ready!(admit.poll(cx)) {
                    Ok(seat) => {
                        let (mut service, request, classify) = call
                            .take()
                            .expect("`ResponseFuture` polled after it completed");
                        // Timed from admission, not from the first poll:
                        // the wait is not part of the dependency's round trip.
                        let seat = H::start_later(feedback, seat);
                        let future = service.call(request);
                        self.as_mut().project().phase.set(Phase::Running {
                            future,
                            seat: Some(seat),
                            classify,
                        });
                    }
                    Err(error) => {
                        call.take();
                        return Poll::Ready(Err(R::rejected(error)));
                    }
                },
                PhaseProj::Running {
                    future,
                    seat,
                    classify,
                } => {
                    let output = ready!(future.poll(cx));
                    if let Some(seat) = seat.take() {
                        // The classifier runs only for a timed seat.
                        H::finish(seat, || classify.classify(&output));
                    }
                    return Poll::Ready(output.map_err(R::inner));
                }
                PhaseProj::Rejected { error } => {
                    let error = error
                        .take()
                        .expect("`ResponseFuture` polled after it completed");
                    return Poll::Ready(Err(R::rejected(error)));
                }
            }
        }
    }
}

impl<S: Service<Req>, Req, H: Hold, R, K> fmt::Debug for ResponseFuture<S, Req, H, R, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let phase = match &self.phase {
            Phase::Waiting { .. } => "waiting for a seat",
            Phase::Running {
                seat: Some(seat), ..
            } if H::is_timed(seat) => "running with a timed seat",
            Phase::Running { seat: Some(_), .. } => "running with a seat",
            Phase::Running { seat: None, .. } => "done",
            Phase::Rejected { .. } => "rejected",
        };
        f.debug_struct("ResponseFuture")
            .field("phase", &phase)
            .finish()
    }
}
