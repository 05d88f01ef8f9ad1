//! [`HttpRejection`]: how to answer an HTTP request that a compartment
//! turned away, in one call.

use std::time::Duration;

use bulkhead_core::Error;
use http::{HeaderValue, Response, StatusCode, header::RETRY_AFTER};

use super::{BoxError, ServiceError};

/// The HTTP answer to a bulkhead rejection: `503 Service Unavailable`,
/// with `Retry-After` when retrying may succeed, or `500` for a weight of
/// zero or a partition of another compartment (bugs of the server's).
///
/// | rejection | status | `Retry-After` |
/// |---|---|---|
/// | [`Error::Full`], [`Error::PartitionFull`], [`Error::FullOnEventLoop`], [`Error::QueueFull`], [`Error::Timeout`] | 503 | yes (default 1 s) |
/// | [`Error::WeightAboveLimit`] | 503 | yes: a raised (or adaptive) limit may admit it later |
/// | [`Error::Closed`] | 503 | no: the compartment admits nobody any more |
/// | [`Error::ZeroWeight`] | 500 | no: the server's weight function is wrong, and retrying cannot help |
/// | [`Error::ForeignPartition`] | 500 | no: the server's classifier names a partition of another compartment |
///
/// 503 rather than 429 (the client did nothing wrong: this server is
/// shedding load) or 504 (no upstream timed out; the caller's wait for a
/// seat did). A weight above the limit is the server's estimate of the
/// request's cost, not the client's fault either; a service that would
/// rather tell the client to send less (`413`) matches the error itself.
///
/// ```
/// use std::time::Duration;
/// use bulkhead_tokio::{BoxError, Error, HttpRejection};
/// use http::StatusCode;
///
/// let err: BoxError = Box::new(Error::Full { name: "db".into(), max_concurrent: 8, active: 8 });
/// // In a tower/hyper/axum error handler: one call, `None` for other errors.
/// let response = HttpRejection::find(&err).unwrap().response::<String>();
/// assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
/// assert_eq!(response.headers()["retry-after"], "1");
///
/// let closed = HttpRejection::from_error(&Error::Closed { name: "db".into() });
/// assert_eq!(closed.retry_after, None);
/// let slow = HttpRejection::from_error(&Error::Timeout { name: "db".into(), budget: Duration::from_millis(50) })
///     .with_retry_after(Duration::from_secs(5));
/// assert_eq!(slow.response::<()>().headers()["retry-after"], "5");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpRejection {
    /// The status to answer with: 503, or 500 for
    /// [`Error::ZeroWeight`] and [`Error::ForeignPartition`].
    pub status: StatusCode,
    /// How long the client should wait before retrying, sent as
    /// `Retry-After` in whole seconds (at least 1); `None` when retrying
    /// cannot help.
    pub retry_after: Option<Duration>,
}

impl HttpRejection {
    /// The `Retry-After` of a transient rejection unless set otherwise.
    pub const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);

    /// The answer to `error`.
    ///
    /// ```
    /// use bulkhead_tokio::{Error, HttpRejection};
    /// use http::StatusCode;
    ///
    /// let too_heavy = Error::WeightAboveLimit { name: "db".into(), weight: 9, max_concurrent: 8 };
    /// assert_eq!(HttpRejection::from_error(&too_heavy).status, StatusCode::SERVICE_UNAVAILABLE);
    /// let weightless = HttpRejection::from_error(&Error::ZeroWeight { name: "db".into() });
    /// assert_eq!(weightless.status, StatusCode::INTERNAL_SERVER_ERROR);
    /// assert_eq!(weightless.retry_after, None);
    /// // A partition without a seat for the caller: load shedding, like `Full`.
    /// let full = Error::PartitionFull {
    ///     name: "db".into(), partition: "batch".into(), active: 8, share: 8, may_hold: 8,
    /// };
    /// let answer = HttpRejection::from_error(&full);
    /// assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
    /// assert_eq!(answer.response::<()>().headers()["retry-after"], "1");
    /// ```
    pub fn from_error(error: &Error) -> Self {
        let status = match error {
            // Not load shedding: a bug in the server's weight function,
            // or in its partition classifier.
            Error::ZeroWeight { .. } | Error::ForeignPartition { .. } => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
            _ => StatusCode::SERVICE_UNAVAILABLE,
        };
        Self {
            status,
            retry_after: error.is_transient().then_some(Self::DEFAULT_RETRY_AFTER),
        }
    }

    /// The answer to a service error, if it is (or was caused by) a bulkhead
    /// rejection: the error itself, or any error in its `source()` chain,
    /// so it also finds a rejection wrapped by another layer or in a
    /// [`RegistryError::Rejected`](bulkhead_std::registry::RegistryError::Rejected),
    /// a thread pool's [`PoolError::Rejected`](bulkhead_std::PoolError::Rejected),
    /// or an [`io::Error`](std::io::Error) (a handler that used `?` into
    /// `io::Result`: the wrapped error is reached through
    /// [`get_ref`](std::io::Error::get_ref), since an `io::Error`'s
    /// `source()` skips it). `None` for every other error, which is the
    /// caller's to answer.
    ///
    /// ```
    /// use bulkhead_tokio::{BoxError, Error, HttpRejection};
    ///
    /// fn handler() -> std::io::Result<()> {
    ///     Err(Error::Full { name: "db".into(), max_concurrent: 8, active: 8 })?; // into io::Error
    ///     Ok(())
    /// }
    /// let err: BoxError = handler().unwrap_err().into();
    /// assert_eq!(HttpRejection::find(&err).unwrap().status, 503);
    /// ```
    pub fn find(error: &BoxError) -> Option<Self> {
        let mut current: Option<&(dyn std::error::Error + 'static)> = Some(&**error);
        while let Some(e) = current {
            if let Some(rejection) = e.downcast_ref::<Error>() {
                return Some(Self::from_error(rejection));
            }
            // A pool states its rejection in its own words, without the
            // core error as its source; the accessor has it.
            if let Some(rejection) = e
                .downcast_ref::<bulkhead_std::PoolError>()
                .and_then(bulkhead_std::PoolError::rejection)
            {
                return Some(Self::from_error(rejection));
            }
            current = match e.downcast_ref::<std::io::Error>() {
                // `io::Error::source` returns the wrapped error's source,
                // skipping the wrapped error itself.
                Some(io) => match io.get_ref() {
                    Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
                    None => e.source(),
                },
                None => e.source(),
            };
        }
        None
    }

    /// The answer to a [`ServiceError`] of a service built with
    /// [`typed_errors`](super::BulkheadLayer::typed_errors), if it is a
    /// rejection; `None` for the inner service's errors, which are the
    /// caller's to answer. No downcast and no allocation.
    ///
    /// ```
    /// use bulkhead_tokio::{Error, HttpRejection, ServiceError};
    /// use http::StatusCode;
    ///
    /// let rejected = ServiceError::<std::io::Error>::Rejected(Error::Full { name: "db".into(), max_concurrent: 8, active: 8 });
    /// let answer = HttpRejection::from_service_error(&rejected).unwrap();
    /// assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
    /// assert_eq!(answer.response::<()>().headers()["retry-after"], "1");
    /// let failed = ServiceError::Inner(std::io::Error::other("upstream reset"));
    /// assert_eq!(HttpRejection::from_service_error(&failed), None);
    /// ```
    pub fn from_service_error<E>(error: &ServiceError<E>) -> Option<Self> {
        error.rejection().map(Self::from_error)
    }

    /// Sends `Retry-After: retry_after` (rounded up to whole seconds) for a
    /// transient rejection; a `Closed` one keeps none.
    #[must_use]
    pub fn with_retry_after(mut self, retry_after: Duration) -> Self {
        if self.retry_after.is_some() {
            self.retry_after = Some(retry_after);
        }
        self
    }

    /// The `Retry-After` header value, in whole seconds (at least 1).
    pub fn retry_after_header(&self) -> Option<HeaderValue> {
        let d = self.retry_after?;
        let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
        Some(HeaderValue::from(secs.max(1)))
    }

    /// A response with this status, `Retry-After` where it applies, and an
    /// empty (`Default`) body.
    pub fn response<B: Default>(&self) -> Response<B> {
        let mut response = Response::new(B::default());
        *response.status_mut() = self.status;
        if let Some(value) = self.retry_after_header() {
            response.headers_mut().insert(RETRY_AFTER, value);
        }
        response
    }
}
