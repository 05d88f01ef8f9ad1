//! [`ResponseFuture`], which holds the seat while the inner call runs.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bulkhead_core::{Bulkhead, Error, OwnedSeat, RawLock};
use bulkhead_std::StdLock;
use pin_project_lite::pin_project;
use tower_service::Service;

use super::{BoxErrors, ErrorRepr};
use crate::AcquireOwnedWithin;

type ArcSeat<L> = OwnedSeat<Arc<Bulkhead<L>>>;

pin_project! {
    /// The response future of a [`BulkheadService`](super::BulkheadService).
    ///
    /// Allocation-free in both modes: a request that must wait holds a
    /// named owned wait ([`AcquireOwnedWithin`]) and the ready inner
    /// service with its request, and calls the service once it is handed a
    /// seat. A rejection is made into the service's error (`R`, see
    /// [`ErrorRepr`]) only when it is returned: boxed by default, or a
    /// [`ServiceError`](super::ServiceError), which allocates nothing.
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
    pub struct ResponseFuture<S, Req, L = StdLock, R = BoxErrors>
    where
        S: Service<Req>,
        L: RawLock,
        L: 'static,
    {
        #[pin]
        phase: Phase<S, Req, L>,
        errors: PhantomData<fn() -> R>,
    }
}

pin_project! {
    #[project = PhaseProj]
    enum Phase<S, Req, L>
    where
        S: Service<Req>,
        L: RawLock,
        L: 'static,
    {
        Waiting {
            #[pin]
            admit: AcquireOwnedWithin<L>,
            // The ready service and the request, called once admitted.
            call: Option<(S, Req)>,
        },
        Running {
            #[pin]
            future: S::Future,
            // Taken (given back) as soon as `future` completes.
            seat: Option<ArcSeat<L>>,
        },
        Rejected { error: Option<Error> },
    }
}

impl<S: Service<Req>, Req, L: RawLock + 'static, R> ResponseFuture<S, Req, L, R> {
    pub(super) fn running(future: S::Future, seat: ArcSeat<L>) -> Self {
        Self::from_phase(Phase::Running {
            future,
            seat: Some(seat),
        })
    }

    pub(super) fn waiting(admit: AcquireOwnedWithin<L>, service: S, request: Req) -> Self {
        Self::from_phase(Phase::Waiting {
            admit,
            call: Some((service, request)),
        })
    }

    pub(super) fn rejected(error: Error) -> Self {
        Self::from_phase(Phase::Rejected { error: Some(error) })
    }

    fn from_phase(phase: Phase<S, Req, L>) -> Self {
        Self {
            phase,
            errors: PhantomData,
        }
    }
}

impl<S, Req, T, E, L, R> Future for ResponseFuture<S, Req, L, R>
where
    S: Service<Req, Response = T, Error = E>,
    R: ErrorRepr<E>,
    L: RawLock + 'static,
{
    type Output = Result<T, R::Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            match self.as_mut().project().phase.project() {
                PhaseProj::Waiting { admit, call } => match ready!(admit.poll(cx)) {
                    Ok(seat) => {
                        let (mut service, request) = call
                            .take()
                            .expect("`ResponseFuture` polled after it completed");
                        let future = service.call(request);
                        self.as_mut().project().phase.set(Phase::Running {
                            future,
                            seat: Some(seat),
                        });
                    }
                    Err(error) => {
                        call.take();
                        return Poll::Ready(Err(R::rejected(error)));
                    }
                },
                PhaseProj::Running { future, seat } => {
                    let output = ready!(future.poll(cx));
                    drop(seat.take());
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

impl<S: Service<Req>, Req, L: RawLock + 'static, R> fmt::Debug for ResponseFuture<S, Req, L, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let phase = match &self.phase {
            Phase::Waiting { .. } => "waiting for a seat",
            Phase::Running { seat: Some(_), .. } => "running with a seat",
            Phase::Running { seat: None, .. } => "done",
            Phase::Rejected { .. } => "rejected",
        };
        f.debug_struct("ResponseFuture")
            .field("phase", &phase)
            .finish()
    }
}
