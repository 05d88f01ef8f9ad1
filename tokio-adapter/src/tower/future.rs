//! [`ResponseFuture`], which holds the seat while the inner call runs
//! and, for an adaptive registry domain, feeds its limit when it ends.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bulkhead_core::{Bulkhead, Error, OwnedSeat, RawLock};
use bulkhead_std::StdLock;
use bulkhead_std::registry::{Domain, RegistrySeat};
use pin_project_lite::pin_project;
use tower_service::Service;

use super::{BoxErrors, ClassifyResponse, ErrIsDropped, ErrorRepr};
use crate::AcquireWithinOwned;

type ArcSeat<L> = OwnedSeat<Arc<Bulkhead<L>>>;

pin_project! {
    /// The response future of a [`BulkheadService`](super::BulkheadService).
    ///
    /// Allocation-free in both modes: a request that must wait holds a
    /// named owned wait ([`AcquireWithinOwned`]) and the ready inner
    /// service with its request, and calls the service once it is handed a
    /// seat. A rejection is made into the service's error (`R`, see
    /// [`ErrorRepr`]) only when it is returned: boxed by default, or a
    /// [`ServiceError`](super::ServiceError), which allocates nothing.
    ///
    /// # Feeding an adaptive limit
    /// Built from an adaptive registry domain
    /// ([`BulkheadLayer::from_registry`](super::BulkheadLayer::from_registry)),
    /// its seat is a timed [`RegistrySeat`]: when the inner future
    /// completes it records one sample (the round trip from admission, the
    /// in-flight count at admission, and the outcome `K` gives the
    /// response) before the seat is freed. Dropped before that (the client
    /// hung up), the seat records a success, the default of every adaptive
    /// seat. A rejected request records nothing.
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
    pub struct ResponseFuture<S, Req, L = StdLock, R = BoxErrors, K = ErrIsDropped>
    where
        S: Service<Req>,
        L: RawLock,
        L: 'static,
    {
        #[pin]
        phase: Phase<S, Req, L, K>,
        errors: PhantomData<fn() -> R>,
    }
}

pin_project! {
    #[project = PhaseProj]
    enum Phase<S, Req, L, K>
    where
        S: Service<Req>,
        L: RawLock,
        L: 'static,
    {
        Waiting {
            #[pin]
            admit: AcquireWithinOwned<L>,
            // The ready service and the request, called once admitted,
            // and the classifier of its response.
            call: Option<(S, Req, K)>,
            // The adaptive registry domain whose limit the seat feeds.
            feedback: Option<Domain>,
        },
        Running {
            #[pin]
            future: S::Future,
            // Taken (given back, after its sample if timed) as soon as
            // `future` completes.
            seat: Option<RegistrySeat<L>>,
            classify: K,
        },
        Rejected { error: Option<Error> },
    }
}

impl<S: Service<Req>, Req, L: RawLock + 'static, R, K> ResponseFuture<S, Req, L, R, K> {
    pub(super) fn running(future: S::Future, seat: RegistrySeat<L>, classify: K) -> Self {
        Self::from_phase(Phase::Running {
            future,
            seat: Some(seat),
            classify,
        })
    }

    pub(super) fn waiting(
        admit: AcquireWithinOwned<L>,
        service: S,
        request: Req,
        feedback: Option<Domain>,
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

    fn from_phase(phase: Phase<S, Req, L, K>) -> Self {
        Self {
            phase,
            errors: PhantomData,
        }
    }
}

/// The seat of an admitted request: timed if `feedback` is the adaptive
/// domain it was taken from, plain otherwise (a static domain's layer, or
/// one built from a bare compartment, pays nothing for the feedback).
pub(super) fn admitted<L: RawLock>(seat: ArcSeat<L>, feedback: Option<&Domain>) -> RegistrySeat<L> {
    match feedback {
        Some(domain) => domain.track(seat).unwrap_or_else(RegistrySeat::from),
        None => RegistrySeat::from(seat),
    }
}

impl<S, Req, T, E, L, R, K> Future for ResponseFuture<S, Req, L, R, K>
where
    S: Service<Req, Response = T, Error = E>,
    R: ErrorRepr<E>,
    L: RawLock + 'static,
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
                        let seat = admitted(seat, feedback.as_ref());
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
                        if seat.is_timed() {
                            let _ = seat.record(classify.classify(&output));
                        }
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

impl<S: Service<Req>, Req, L: RawLock + 'static, R, K> fmt::Debug
    for ResponseFuture<S, Req, L, R, K>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let phase = match &self.phase {
            Phase::Waiting { .. } => "waiting for a seat",
            Phase::Running {
                seat: Some(seat), ..
            } if seat.is_timed() => "running with a timed seat",
            Phase::Running { seat: Some(_), .. } => "running with a seat",
            Phase::Running { seat: None, .. } => "done",
            Phase::Rejected { .. } => "rejected",
        };
        f.debug_struct("ResponseFuture")
            .field("phase", &phase)
            .finish()
    }
}
