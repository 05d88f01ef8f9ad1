//! [`ResponseFuture`], which holds the seat while the inner call runs.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bulkhead_core::{Bulkhead, Error, OwnedSeat, RawLock};
use bulkhead_std::StdLock;
use pin_project_lite::pin_project;

use super::BoxError;

type ArcSeat<L> = OwnedSeat<Arc<Bulkhead<L>>>;

/// A wait for a seat followed by the inner call, boxed because it owns the
/// `Arc` it borrows while waiting.
pub(super) type Admit<F, L> =
    Pin<Box<dyn Future<Output = Result<(ArcSeat<L>, F), Error>> + Send + 'static>>;

pin_project! {
    /// The response future of a [`BulkheadService`](super::BulkheadService).
    ///
    /// # Cancel safety
    /// Dropping it gives its seat back, or leaves the line if it still
    /// waited for one; the inner future, if any, is dropped with it.
    ///
    /// # Memory ordering
    /// The inner service's future runs while holding a seat: everything the
    /// seat's previous holder did before giving it back happens-before the
    /// inner call. The precise orderings are in
    /// [`Bulkhead`](bulkhead_core::Bulkhead#memory-ordering).
    #[must_use = "futures do nothing unless polled"]
    pub struct ResponseFuture<F, L: RawLock = StdLock> {
        #[pin]
        phase: Phase<F, L>,
    }
}

pin_project! {
    #[project = PhaseProj]
    enum Phase<F, L: RawLock> {
        Waiting { admit: Admit<F, L> },
        Running {
            #[pin]
            future: F,
            // Taken (given back) as soon as `future` completes.
            seat: Option<ArcSeat<L>>,
        },
        Rejected { error: Option<Error> },
    }
}

impl<F, L: RawLock> ResponseFuture<F, L> {
    pub(super) fn running(future: F, seat: ArcSeat<L>) -> Self {
        Self {
            phase: Phase::Running {
                future,
                seat: Some(seat),
            },
        }
    }

    pub(super) fn waiting(admit: Admit<F, L>) -> Self {
        Self {
            phase: Phase::Waiting { admit },
        }
    }

    pub(super) fn rejected(error: Error) -> Self {
        Self {
            phase: Phase::Rejected { error: Some(error) },
        }
    }
}

impl<F, T, E, L> Future for ResponseFuture<F, L>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
    L: RawLock,
{
    type Output = Result<T, BoxError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            match self.as_mut().project().phase.project() {
                PhaseProj::Waiting { admit } => match ready!(admit.as_mut().poll(cx)) {
                    Ok((seat, future)) => self.as_mut().project().phase.set(Phase::Running {
                        future,
                        seat: Some(seat),
                    }),
                    Err(error) => return Poll::Ready(Err(error.into())),
                },
                PhaseProj::Running { future, seat } => {
                    let output = ready!(future.poll(cx));
                    drop(seat.take());
                    return Poll::Ready(output.map_err(Into::into));
                }
                PhaseProj::Rejected { error } => {
                    let error = error
                        .take()
                        .expect("`ResponseFuture` polled after it completed");
                    return Poll::Ready(Err(error.into()));
                }
            }
        }
    }
}

impl<F, L: RawLock> fmt::Debug for ResponseFuture<F, L> {
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
