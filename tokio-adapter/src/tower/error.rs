//! How a [`BulkheadService`](super::BulkheadService) reports its errors:
//! boxed (tower's usual [`BoxError`], the default) or typed
//! ([`ServiceError`], which never allocates).

use std::fmt;

use bulkhead_core::Error;

use super::BoxError;

/// The error of a [`BulkheadService`](super::BulkheadService) built with
/// [`typed_errors`](super::BulkheadLayer::typed_errors): the compartment's
/// rejection, or the inner service's own error, unboxed.
///
/// Nothing is allocated to make one, so a rejected request costs no heap
/// allocation (a [`BoxError`] holding our [`Error`] does: it is not
/// zero-sized).
///
/// - `match` it to answer a rejection differently from a failure of the
///   service, or use [`rejection`](Self::rejection) and
///   [`HttpRejection::from_service_error`](super::HttpRejection::from_service_error)
///   (`503` with `Retry-After`).
/// - With an inner error that implements [`std::error::Error`] (and
///   `Send + Sync`), it is an error too, so `?` converts it into a
///   [`BoxError`] or `anyhow::Error`; [`HttpRejection::find`](super::HttpRejection::find)
///   finds the rejection in such a box through [`source`](std::error::Error::source).
/// - [`into_box_error`](Self::into_box_error) gives exactly the error the
///   default, boxed service would have returned (the inner error as it
///   converts into a `BoxError`, a rejection boxed on its own). It is the
///   way to a `BoxError` when the inner error is already one, which is not
///   itself a [`std::error::Error`].
///
/// Display and `source` follow the workspace's other errors with a
/// `Rejected` variant: the message names the compartment, and `source`
/// returns the rejection (so a walk of the chain finds it); `Inner` is
/// transparent: the inner error's message, and its source. No text is
/// shown twice when a report prints the whole chain.
///
/// ```
/// use bulkhead_tokio::{BoxError, Error, ServiceError};
///
/// let err: ServiceError<std::io::Error> = Error::Closed { name: "db".into() }.into();
/// assert!(matches!(err.rejection(), Some(Error::Closed { .. })));
/// assert!(err.to_string().contains("`db`"));
/// let boxed: BoxError = err.into(); // `?` works too
/// assert!(bulkhead_tokio::HttpRejection::find(&boxed).is_some());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServiceError<E> {
    /// The compartment turned the request away (`Full`, `QueueFull`,
    /// `Timeout` or `Closed`, or, for a layer with a
    /// [`weight`](super::BulkheadLayer::weight) function, `ZeroWeight` or
    /// `WeightAboveLimit`); the inner service was not called.
    Rejected(Error),
    /// The inner service failed (in `poll_ready` or in its response future).
    Inner(E),
}

impl<E> ServiceError<E> {
    /// The compartment's rejection, if this is one.
    pub fn rejection(&self) -> Option<&Error> {
        match self {
            ServiceError::Rejected(e) => Some(e),
            ServiceError::Inner(_) => None,
        }
    }

    /// The inner service's error, if this is one.
    pub fn inner(&self) -> Option<&E> {
        match self {
            ServiceError::Rejected(_) => None,
            ServiceError::Inner(e) => Some(e),
        }
    }

    /// The error the default, boxed service returns for the same failure:
    /// a rejection boxed as our [`Error`] (found with
    /// `downcast_ref::<Error>()`), the inner error converted with
    /// `Into<BoxError>` (unchanged if it already is one). Allocates for a
    /// rejection, as boxing any non-zero-sized error does.
    pub fn into_box_error(self) -> BoxError
    where
        E: Into<BoxError>,
    {
        match self {
            ServiceError::Rejected(e) => Box::new(e),
            ServiceError::Inner(e) => e.into(),
        }
    }
}

impl<E> From<Error> for ServiceError<E> {
    fn from(e: Error) -> Self {
        ServiceError::Rejected(e)
    }
}

impl<E: fmt::Display> fmt::Display for ServiceError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // The reason and its advice are the source's message.
            ServiceError::Rejected(e) => {
                write!(f, "request turned away by bulkhead `{}`", e.name())
            }
            ServiceError::Inner(e) => e.fmt(f),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for ServiceError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServiceError::Rejected(e) => Some(e),
            ServiceError::Inner(e) => e.source(),
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// How a [`BulkheadService`](super::BulkheadService) represents its error
/// for an inner service whose error is `E`: [`BoxErrors`] (the default) or
/// [`TypedErrors`]. Sealed: these two are the only ones.
pub trait ErrorRepr<E>: sealed::Sealed {
    /// The service's error type.
    type Error;
    /// The error for a request the compartment turned away.
    fn rejected(error: Error) -> Self::Error;
    /// The error for a failure of the inner service.
    fn inner(error: E) -> Self::Error;
}

/// The default [`ErrorRepr`]: the service's error is tower's usual
/// [`BoxError`]. A rejection is our [`Error`] in a box (one allocation per
/// rejected request); the inner service's error passes through
/// `Into<BoxError>` unchanged.
#[derive(Debug, Clone, Copy)]
pub enum BoxErrors {}

/// The allocation-free [`ErrorRepr`], chosen with
/// [`typed_errors`](super::BulkheadLayer::typed_errors): the service's
/// error is a [`ServiceError`] of the inner service's error.
#[derive(Debug, Clone, Copy)]
pub enum TypedErrors {}

impl sealed::Sealed for BoxErrors {}
impl sealed::Sealed for TypedErrors {}

impl<E: Into<BoxError>> ErrorRepr<E> for BoxErrors {
    type Error = BoxError;
    fn rejected(error: Error) -> BoxError {
        Box::new(error)
    }
    fn inner(error: E) -> BoxError {
        error.into()
    }
}

impl<E> ErrorRepr<E> for TypedErrors {
    type Error = ServiceError<E>;
    fn rejected(error: Error) -> ServiceError<E> {
        ServiceError::Rejected(error)
    }
    fn inner(error: E) -> ServiceError<E> {
        ServiceError::Inner(error)
    }
}
