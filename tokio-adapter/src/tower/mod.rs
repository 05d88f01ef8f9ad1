//! A tower [`Layer`] and [`Service`] that admit each request through a
//! compartment.

mod adaptive;
mod future;
mod http;

use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};

use bulkhead_core::{Bulkhead, MaxWait, OwnedSeat, RawLock};
use bulkhead_std::StdLock;
use tower_layer::Layer;
use tower_service::Service;

use crate::BulkheadExt;
pub use adaptive::{AdaptiveLayer, AdaptiveResponseFuture, AdaptiveService};
pub use future::ResponseFuture;
pub use http::HttpRejection;

/// The error of a [`BulkheadService`]: tower's usual boxed error.
///
/// A rejection by the compartment is a boxed [`Error`](crate::Error);
/// [`HttpRejection::find`] turns it into a `503` response with
/// `Retry-After` in one call (or find it with
/// `err.downcast_ref::<bulkhead_tokio::Error>()`). Errors of the inner service pass through
/// unchanged (boxed).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Wraps a service in a [`BulkheadService`] that admits at most
/// `max_concurrent` requests at once through one compartment.
///
/// The layer holds an `Arc` of the compartment, so one compartment can
/// guard one route, several routes, or a whole server: every service made
/// from the layer (or from a clone of it, or from another layer built from
/// the same `Arc`) shares the same seats.
///
/// # Fairness and readiness
///
/// The seat is taken in `call`, when a request is admitted, never in
/// `poll_ready`: an idle keep-alive connection whose service was polled
/// ready holds nothing. `poll_ready` only forwards the inner service's
/// readiness.
///
/// # Examples
///
/// ```
/// use std::{sync::Arc, time::Duration};
/// use bulkhead_tokio::{Bulkhead, BulkheadLayer};
///
/// let upstream = Arc::new(Bulkhead::new("upstream", 32).unwrap());
/// // Fail fast (the default) on one route ...
/// let search = BulkheadLayer::new(upstream.clone());
/// // ... and wait up to 50 ms on another, sharing the same 32 seats.
/// let checkout = BulkheadLayer::new(upstream).max_wait(Duration::from_millis(50));
/// # let _ = (search, checkout);
/// ```
pub struct BulkheadLayer<L: RawLock = StdLock> {
    bulkhead: Arc<Bulkhead<L>>,
    max_wait: MaxWait,
}

impl<L: RawLock> BulkheadLayer<L> {
    /// A fail-fast layer over `bulkhead`: a request that finds every seat
    /// taken is rejected at once with [`Error::Full`](crate::Error::Full).
    ///
    /// Takes any `Arc` of a compartment, so the layer can equally be built
    /// from a compartment kept in a registry.
    pub fn new(bulkhead: Arc<Bulkhead<L>>) -> Self {
        Self {
            bulkhead,
            max_wait: MaxWait::FailFast,
        }
    }

    /// How long a request may wait for a seat: a [`Duration`](std::time::Duration)
    /// (zero fails fast), or a [`MaxWait`].
    #[must_use]
    pub fn max_wait(mut self, max_wait: impl Into<MaxWait>) -> Self {
        self.max_wait = max_wait.into();
        self
    }

    /// The compartment.
    pub fn bulkhead(&self) -> &Arc<Bulkhead<L>> {
        &self.bulkhead
    }

    /// How long a request may wait for a seat.
    pub fn wait_budget(&self) -> MaxWait {
        self.max_wait
    }
}

impl BulkheadLayer {
    /// A layer over the registry's compartment `name`, with the wait
    /// budget configured for it (its `max_wait`: code < file <
    /// environment), so a service built only from the registry gets the
    /// configured budgets. The budget is read now: a later
    /// [`reconfigure`](bulkhead_std::registry::Registry::reconfigure) of
    /// `max_wait` applies to layers built after it (a change of
    /// `max_concurrent` applies at once, since the compartment is shared).
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::registry::{DomainConfig, Registry};
    /// use bulkhead_tokio::{BulkheadLayer, MaxWait};
    ///
    /// let registry = Registry::local();
    /// registry.get_or_create("checkout", DomainConfig::new(8).max_wait(MaxWait::from_millis(50)))?;
    /// let layer = BulkheadLayer::from_registry(&registry, "checkout")?;
    /// assert_eq!(layer.wait_budget(), MaxWait::UpTo(Duration::from_millis(50)));
    /// # Ok::<(), bulkhead_std::registry::RegistryError>(())
    /// ```
    ///
    /// # Errors
    /// [`RegistryError::NotFound`](bulkhead_std::registry::RegistryError::NotFound),
    /// or [`RegistryError::WrongKind`](bulkhead_std::registry::RegistryError::WrongKind)
    /// for a thread pool.
    pub fn from_registry(
        registry: &bulkhead_std::registry::Registry,
        name: &str,
    ) -> Result<Self, bulkhead_std::registry::RegistryError> {
        let (bulkhead, config) = registry.get_with_config(name)?;
        Ok(Self::new(bulkhead).max_wait(config.max_wait))
    }
}

impl<L: RawLock> Clone for BulkheadLayer<L> {
    fn clone(&self) -> Self {
        Self {
            bulkhead: Arc::clone(&self.bulkhead),
            max_wait: self.max_wait,
        }
    }
}

impl<L: RawLock> fmt::Debug for BulkheadLayer<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BulkheadLayer")
            .field("bulkhead", &self.bulkhead.name())
            .field("max_wait", &self.max_wait)
            .finish()
    }
}

impl<S, L: RawLock> Layer<S> for BulkheadLayer<L> {
    type Service = BulkheadService<S, L>;

    fn layer(&self, inner: S) -> Self::Service {
        BulkheadService {
            inner,
            bulkhead: Arc::clone(&self.bulkhead),
            max_wait: self.max_wait,
        }
    }
}

/// A service that calls its inner service only inside a compartment seat.
/// Made by [`BulkheadLayer`].
///
/// - **Admission.** Failing fast (the default), `call` takes a free seat
///   and calls the inner service at once, or rejects the request at once.
///   With a `max_wait`, the response future takes the seat at its first
///   poll (the fast path if one is free, else it joins the compartment's
///   line, in first-poll order) and calls the inner service when it is
///   handed a seat. Waiting needs a tokio runtime with the time driver.
/// - **Rejection** is a boxed [`Error`](crate::Error) (`Full`, `Timeout`,
///   `QueueFull` or `Closed`) in the [`BoxError`]; the inner service is
///   not called.
/// - **The seat is held until the response future completes**, and is
///   given back if that future is dropped first (a client that hangs up).
///   A streaming response body is not covered: the seat is released when
///   the response head is ready.
///
/// # Cancel safety
///
/// Dropping the response future at any point gives back its seat, or
/// leaves the line if it was still waiting for one.
///
/// # Memory ordering
/// As for every seat (see [`ResponseFuture`](future::ResponseFuture)):
/// the previous holder's work happens-before the inner call.
///
/// # Allocation
///
/// Neither mode allocates per request: the response future holds a named
/// owned wait ([`AcquireOwnedWithin`](crate::AcquireOwnedWithin), built
/// on core's `AcquireOwned`) and the ready service with its request, with
/// no boxing (tested by `examples/tests/zero_alloc.rs`).
///
/// # Waiting and readiness
///
/// A request that must wait is called on the instance of the inner service
/// that `poll_ready` made ready; the service keeps a clone for the next
/// request (tower's usual pattern, hence `S: Clone`).
///
/// # Examples
///
/// ```
/// use std::{convert::Infallible, future::Ready, sync::Arc, task::{Context, Poll}};
/// use bulkhead_tokio::{BoxError, Bulkhead, BulkheadLayer, Error};
/// use tower_layer::Layer;
/// use tower_service::Service;
///
/// #[derive(Clone)]
/// struct Hello;
/// impl Service<&'static str> for Hello {
///     type Response = String;
///     type Error = Infallible;
///     type Future = Ready<Result<String, Infallible>>;
///     fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
///         Poll::Ready(Ok(()))
///     }
///     fn call(&mut self, name: &'static str) -> Self::Future {
///         std::future::ready(Ok(format!("hello, {name}")))
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let greeter = Arc::new(Bulkhead::new("greeter", 1).unwrap());
/// let mut svc = BulkheadLayer::new(greeter.clone()).layer(Hello);
/// std::future::poll_fn(|cx| svc.poll_ready(cx)).await.unwrap();
/// assert_eq!(svc.call("bob").await.unwrap(), "hello, bob");
///
/// let _busy = greeter.try_acquire().unwrap(); // someone else holds the only seat
/// let err: BoxError = svc.call("eve").await.unwrap_err();
/// assert!(matches!(err.downcast_ref::<Error>(), Some(Error::Full { .. }))); // -> 503
/// # }
/// ```
pub struct BulkheadService<S, L: RawLock = StdLock> {
    inner: S,
    bulkhead: Arc<Bulkhead<L>>,
    max_wait: MaxWait,
}

impl<S, L: RawLock> BulkheadService<S, L> {
    /// Wraps `inner`, failing fast; see [`BulkheadLayer::new`].
    pub fn new(inner: S, bulkhead: Arc<Bulkhead<L>>) -> Self {
        BulkheadLayer::new(bulkhead).layer(inner)
    }

    /// How long a request may wait for a seat: a [`Duration`](std::time::Duration)
    /// (zero fails fast), or a [`MaxWait`].
    #[must_use]
    pub fn max_wait(mut self, max_wait: impl Into<MaxWait>) -> Self {
        self.max_wait = max_wait.into();
        self
    }

    /// The compartment.
    pub fn bulkhead(&self) -> &Arc<Bulkhead<L>> {
        &self.bulkhead
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Unwraps the inner service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: Clone, L: RawLock> Clone for BulkheadService<S, L> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            bulkhead: Arc::clone(&self.bulkhead),
            max_wait: self.max_wait,
        }
    }
}

impl<S, L: RawLock> fmt::Debug for BulkheadService<S, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BulkheadService")
            .field("bulkhead", &self.bulkhead.name())
            .field("max_wait", &self.max_wait)
            .finish_non_exhaustive()
    }
}

impl<S, Req, L> Service<Req> for BulkheadService<S, L>
where
    S: Service<Req> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    Req: Send + 'static,
    L: RawLock + Send + Sync + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S, Req, L>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // Readiness only: no seat is taken here (bug class 12 in docs/bug-classes.md).
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        if self.max_wait.is_fail_fast() {
            return match OwnedSeat::try_acquire(Arc::clone(&self.bulkhead)) {
                Ok(seat) => ResponseFuture::running(self.inner.call(request), seat),
                Err(error) => ResponseFuture::rejected(error),
            };
        }
        // The ready instance goes with the request; a clone stays.
        let fresh = self.inner.clone();
        let ready = std::mem::replace(&mut self.inner, fresh);
        let admit = Arc::clone(&self.bulkhead).acquire_owned(self.max_wait);
        // The wait starts at the response future's first poll (a queued
        // wait is pinned in it and cannot move), so nothing is allocated.
        ResponseFuture::waiting(admit, ready, request)
    }
}
