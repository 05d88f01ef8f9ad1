//! A tower [`Layer`] and [`Service`] that admit each request through a
//! compartment, and one that admits it through a partition of a
//! partitioned compartment.

mod classify;
mod error;
mod future;
mod handle;
mod http;
mod partitioned;
mod route;
mod weight;

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::task::{Context, Poll};

use bulkhead_core::MaxWait;
use bulkhead_std::registry::Domain;
use tower_layer::Layer;
use tower_service::Service;

use crate::{AcquireWithinOwned, Bulkhead};
pub use classify::{ClassifyResponse, ErrIsDropped};
pub use error::{BoxErrors, ErrorRepr, ServiceError, TypedErrors};
pub use future::ResponseFuture;
pub use handle::LayerHandle;
pub use http::HttpRejection;
pub use partitioned::{PartitionedLayer, PartitionedService};
pub use route::{ByExtension, ByHeader, ByPath, ClassifyPartition, PartitionName};
pub use weight::{RequestWeight, WeightOne};

// The services' default error is bulkhead-std's `BoxError` (the crate
// root re-exports it with its documentation).
pub(crate) use bulkhead_std::BoxError;

/// Wraps a service in a [`BulkheadService`] that admits at most
/// `max_concurrent` requests at once through one compartment.
///
/// The one tower layer of the workspace, over any of the three kinds of
/// compartment ([`LayerHandle`]): a compartment (`Arc<Bulkhead>`), an
/// adaptive compartment (`Arc<Adaptive<..>>`), or a registry [`Domain`]
/// (adaptive when its configuration says so). Failing fast or waiting,
/// boxed or [typed](Self::typed_errors) errors, a per-request
/// [`weight`](Self::weight), and [`HttpRejection`] work the same over all
/// three.
///
/// The layer holds a handle (an `Arc`) to the compartment, so one
/// compartment can guard one route, several routes, or a whole server:
/// every service made from the layer (or from a clone of it, or from
/// another layer built from the same handle) shares the same seats.
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
///
/// # Errors: boxed or typed
///
/// The services' error is a [`BoxError`] (parameter `R` =
/// [`BoxErrors`], the default), which every tower stack accepts; boxing a
/// rejection allocates once. [`typed_errors`](Self::typed_errors) makes it
/// a [`ServiceError`] of the inner service's error (`R` =
/// [`TypedErrors`]): no allocation per request in either mode, rejections
/// included, and a rejection is matched rather than downcast.
///
/// # Feeding an adaptive limit
///
/// A layer over an adaptive compartment, or over an adaptive registry
/// domain, feeds its limit: each admitted request records one sample when
/// its response completes, classified by `K` (parameter [`ErrIsDropped`]
/// by default; [`classify`](Self::classify) replaces it). A rejected
/// request records nothing.
///
/// ```
/// use std::sync::Arc;
/// use bulkhead_tokio::{Bulkhead, BulkheadLayer, TokioClock};
/// use bulkhead_tokio::bulkhead_core::limit::{Adaptive, CallOutcome, Gradient2, Gradient2Params, Windowed};
///
/// let limit = Gradient2::new(Gradient2Params { min: 4, ..Gradient2Params::DEFAULT })?;
/// let upstream = Arc::new(Adaptive::new(Bulkhead::new("upstream", 20)?, Windowed::new(limit, 10), TokioClock::new()));
/// // 5xx counts as dropped; transport errors too.
/// let layer = BulkheadLayer::new(upstream).classify(|r: &Result<u16, std::io::Error>| match r {
///     Ok(status) if *status >= 500 => CallOutcome::Dropped,
///     Ok(_) => CallOutcome::Success,
///     Err(_) => CallOutcome::Dropped,
/// });
/// assert!(layer.is_adaptive());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct BulkheadLayer<
    H: LayerHandle = Arc<Bulkhead>,
    R = BoxErrors,
    K = ErrIsDropped,
    W = WeightOne,
> {
    gate: Gate<H, K, W>,
    errors: PhantomData<fn() -> R>,
}

impl<H: LayerHandle> BulkheadLayer<H> {
    /// A layer over `compartment`, any [`LayerHandle`]: an
    /// `Arc<Bulkhead>`, an `Arc` of an adaptive compartment, or a registry
    /// [`Domain`].
    ///
    /// It fails fast, rejecting a request that finds every seat taken at
    /// once with [`Error::Full`](crate::Error::Full); over a registry
    /// domain it starts with the domain's configured `max_wait` instead.
    /// [`max_wait`](Self::max_wait) sets another budget.
    ///
    /// An `Arc` of a compartment kept in a registry
    /// ([`Registry::get`](bulkhead_std::registry::Registry::get)) records
    /// no samples even if its domain is adaptive: build the layer from the
    /// [`Domain`] ([`from_registry`](BulkheadLayer::from_registry)) to feed
    /// its limit.
    pub fn new(compartment: H) -> Self {
        Self {
            gate: Gate {
                max_wait: compartment.default_max_wait(),
                handle: compartment,
                classify: ErrIsDropped,
                weight: WeightOne,
            },
            errors: PhantomData,
        }
    }
}

impl<H: LayerHandle, R, K, W> BulkheadLayer<H, R, K, W> {
    /// The same layer, whose services return a [`ServiceError`] of the
    /// inner service's error instead of a [`BoxError`]: nothing is
    /// allocated per request, rejected ones included.
    ///
    /// ```
    /// use std::{convert::Infallible, future::Ready, sync::Arc, task::{Context, Poll}};
    /// use bulkhead_tokio::{Bulkhead, BulkheadLayer, Error, HttpRejection, ServiceError};
    /// use tower_layer::Layer;
    /// use tower_service::Service;
    ///
    /// #[derive(Clone)]
    /// struct Hello;
    /// impl Service<()> for Hello {
    ///     type Response = &'static str;
    ///     type Error = Infallible;
    ///     type Future = Ready<Result<&'static str, Infallible>>;
    ///     fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
    ///         Poll::Ready(Ok(()))
    ///     }
    ///     fn call(&mut self, (): ()) -> Self::Future {
    ///         std::future::ready(Ok("hello"))
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let greeter = Arc::new(Bulkhead::new("greeter", 1).unwrap());
    /// let mut svc = BulkheadLayer::new(greeter.clone()).typed_errors().layer(Hello);
    /// let _busy = greeter.try_acquire().unwrap();
    /// let err: ServiceError<Infallible> = svc.call(()).await.unwrap_err();
    /// assert!(matches!(err, ServiceError::Rejected(Error::Full { .. })));
    /// let response = HttpRejection::from_service_error(&err).unwrap().response::<()>();
    /// assert_eq!(response.status(), 503);
    /// # }
    /// ```
    #[must_use]
    pub fn typed_errors(self) -> BulkheadLayer<H, TypedErrors, K, W> {
        BulkheadLayer {
            gate: self.gate,
            errors: PhantomData,
        }
    }

    /// The same layer, whose responses `classify` turns into the outcome
    /// fed to an adaptive limit, instead of [`ErrIsDropped`]: any
    /// `Fn(&Result<Response, Error>) -> CallOutcome` (or a
    /// [`ClassifyResponse`]). It is called once per admitted request over
    /// an adaptive compartment or registry domain, and never for a layer
    /// with a fixed limit, which records nothing.
    ///
    /// ```
    /// use bulkhead_tokio::registry::{DomainConfig, Registry};
    /// use bulkhead_tokio::{Algorithm, LimitConfig};
    /// use bulkhead_tokio::BulkheadLayer;
    /// use bulkhead_tokio::bulkhead_core::limit::CallOutcome;
    ///
    /// let registry = Registry::local();
    /// registry.get_or_create("search", DomainConfig::new(16).limit(LimitConfig::new(Algorithm::Aimd)))?;
    /// // A 5xx counts as dropped, as does a transport error.
    /// let layer = BulkheadLayer::from_registry(&registry, "search")?.classify(
    ///     |r: &Result<u16, std::io::Error>| match r {
    ///         Ok(status) if *status >= 500 => CallOutcome::Dropped,
    ///         Ok(_) => CallOutcome::Success,
    ///         Err(_) => CallOutcome::Dropped,
    ///     },
    /// );
    /// # let _ = layer;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn classify<K2>(self, classify: K2) -> BulkheadLayer<H, R, K2, W> {
        BulkheadLayer {
            gate: Gate {
                handle: self.gate.handle,
                max_wait: self.gate.max_wait,
                classify,
                weight: self.gate.weight,
            },
            errors: PhantomData,
        }
    }

    /// The same layer, whose requests each take as many seats as
    /// `weight` says: any `Fn(&Request) -> usize` (or a
    /// [`RequestWeight`]), called once per request in `call`. Without it
    /// every request takes one seat ([`WeightOne`]), at no cost.
    ///
    /// A request of weight `n` counts as `n` requests of weight 1 against
    /// the compartment's limit, taken together or not at all, and holds
    /// them until its response completes: a bulk endpoint that fans out to
    /// 10 backend calls can weigh 10, so that it cannot crowd out the
    /// single calls by arriving as one request.
    ///
    /// - **Fairness.** Waiting requests are served in the compartment's
    ///   order ([`QueueOrder`](crate::QueueOrder)): oldest first by
    ///   default, and a heavy request at the head of the line is never
    ///   passed by lighter ones behind it (freed seats are kept for it).
    /// - **Bad weights** are that request's error, never a panic, and the
    ///   inner service is not called: a weight of 0 is
    ///   [`Error::ZeroWeight`](crate::Error::ZeroWeight) (a bug in the
    ///   weight function; [`HttpRejection`] answers it with `500`), and a
    ///   weight above the compartment's current limit is
    ///   [`Error::WeightAboveLimit`](crate::Error::WeightAboveLimit) at
    ///   once, whatever the wait budget (it could never be admitted; a
    ///   `503` with `Retry-After`, since a raised or adaptive limit may
    ///   admit it later). Both come as the layer's error like any
    ///   rejection: boxed, or in [`ServiceError::Rejected`]. (A limit of
    ///   0 is a pause, not a refusal: requests then wait within their
    ///   budget, or fail fast with `Full`.)
    /// - **Adaptive limits** take one sample per request, whatever its
    ///   weight.
    ///
    /// Over every [`LayerHandle`]: a compartment, an adaptive compartment
    /// or a registry domain. Allocation-free, as without a weight.
    ///
    /// ```
    /// use std::{convert::Infallible, future::Ready, sync::Arc, task::{Context, Poll}};
    /// use bulkhead_tokio::{Bulkhead, BulkheadLayer, Error, ServiceError};
    /// use tower_layer::Layer;
    /// use tower_service::Service;
    ///
    /// /// A request for `rows` rows.
    /// struct Export { rows: usize }
    ///
    /// #[derive(Clone)]
    /// struct Exporter;
    /// impl Service<Export> for Exporter {
    ///     type Response = usize;
    ///     type Error = Infallible;
    ///     type Future = Ready<Result<usize, Infallible>>;
    ///     fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
    ///         Poll::Ready(Ok(()))
    ///     }
    ///     fn call(&mut self, export: Export) -> Self::Future {
    ///         std::future::ready(Ok(export.rows))
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let db = Arc::new(Bulkhead::new("db", 8).unwrap());
    /// // One seat per started thousand rows.
    /// let layer = BulkheadLayer::new(db.clone())
    ///     .weight(|export: &Export| export.rows.div_ceil(1000))
    ///     .typed_errors();
    /// let mut svc = layer.layer(Exporter);
    ///
    /// let _busy = db.try_acquire_many(6).unwrap(); // 2 seats left
    /// assert_eq!(svc.call(Export { rows: 1500 }).await.unwrap(), 1500); // weight 2
    /// let err = svc.call(Export { rows: 2500 }).await.unwrap_err(); // weight 3
    /// assert!(matches!(err, ServiceError::Rejected(Error::Full { .. })));
    /// let err = svc.call(Export { rows: 9000 }).await.unwrap_err(); // weight 9 > 8
    /// assert!(matches!(err, ServiceError::Rejected(Error::WeightAboveLimit { weight: 9, .. })));
    /// let err = svc.call(Export { rows: 0 }).await.unwrap_err(); // weight 0
    /// assert!(matches!(err, ServiceError::Rejected(Error::ZeroWeight { .. })));
    /// # }
    /// ```
    #[must_use]
    pub fn weight<W2>(self, weight: W2) -> BulkheadLayer<H, R, K, W2> {
        BulkheadLayer {
            gate: Gate {
                handle: self.gate.handle,
                max_wait: self.gate.max_wait,
                classify: self.gate.classify,
                weight,
            },
            errors: PhantomData,
        }
    }

    /// Whether its requests feed an adaptive limit (a layer over an
    /// adaptive compartment, or over an adaptive registry domain).
    pub fn is_adaptive(&self) -> bool {
        self.gate.handle.is_adaptive()
    }

    /// How long a request may wait for a seat: a [`Duration`](std::time::Duration)
    /// (zero fails fast), or a [`MaxWait`]. A request that finds a seat
    /// free takes it in `call`; one that must wait starts its budget at
    /// the response future's first poll, so a future polled late still
    /// gets the whole budget.
    #[must_use]
    pub fn max_wait(mut self, max_wait: impl Into<MaxWait>) -> Self {
        self.gate.max_wait = max_wait.into();
        self
    }

    /// The handle the layer was built from.
    pub fn handle(&self) -> &H {
        &self.gate.handle
    }

    /// How long a request may wait for a seat.
    pub fn wait_budget(&self) -> MaxWait {
        self.gate.max_wait
    }
}

impl BulkheadLayer<Domain> {
    /// A layer over the registry's compartment `name`
    /// ([`Registry::domain`](bulkhead_std::registry::Registry::domain),
    /// then [`new`](BulkheadLayer::new)), with the wait budget configured
    /// for it (its `max_wait`: code < file < environment), so a service
    /// built only from the registry gets the configured budgets. The budget is read now: a later
    /// [`reconfigure`](bulkhead_std::registry::Registry::reconfigure) of
    /// `max_wait` applies to layers built after it (a change of
    /// `max_concurrent` applies at once, since the compartment is shared).
    ///
    /// # Adaptive domains
    ///
    /// If the domain has a `limit`, every request the layer's services
    /// admit feeds it, with no further code: when its response future
    /// completes it records one sample, the round trip from admission
    /// (the wait for a seat is not counted), the in-flight count at
    /// admission, and an outcome:
    ///
    /// - an `Err` of the inner service is [`CallOutcome::Dropped`](bulkhead_core::limit::CallOutcome::Dropped),
    ///   an `Ok` a success ([`ErrIsDropped`], the default);
    /// - a response future dropped before it completes (a client that hung
    ///   up) is a success: the default of every adaptive seat given back
    ///   without an outcome, since the dependency showed no sign of
    ///   overload (a panic while it runs is a drop);
    /// - a rejected request records nothing.
    ///
    /// [`classify`](Self::classify) replaces the default, for example to
    /// count a `5xx` as dropped. A domain with a fixed limit records
    /// nothing, and its requests take the same path as a layer over an
    /// `Arc<Bulkhead>`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_tokio::registry::{DomainConfig, Registry};
    /// use bulkhead_tokio::{BulkheadLayer, MaxWait};
    ///
    /// let registry = Registry::local();
    /// registry.get_or_create("checkout", DomainConfig::new(8).max_wait(MaxWait::from_millis(50)))?;
    /// let layer = BulkheadLayer::from_registry(&registry, "checkout")?;
    /// assert_eq!(layer.wait_budget(), MaxWait::UpTo(Duration::from_millis(50)));
    /// # Ok::<(), bulkhead_tokio::registry::RegistryError>(())
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
        Ok(Self::new(registry.domain(name)?))
    }
}

impl<H: LayerHandle, R, K: Clone, W: Clone> Clone for BulkheadLayer<H, R, K, W> {
    fn clone(&self) -> Self {
        Self {
            gate: self.gate.clone(),
            errors: PhantomData,
        }
    }
}

impl<H: LayerHandle, R, K, W> fmt::Debug for BulkheadLayer<H, R, K, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BulkheadLayer")
            .field("bulkhead", &self.gate.handle.bulkhead().name())
            .field("max_wait", &self.gate.max_wait)
            .field("adaptive", &self.gate.handle.is_adaptive())
            .field("errors", &std::any::type_name::<R>())
            .field("weight", &std::any::type_name::<W>())
            .finish()
    }
}

impl<S, H: LayerHandle, R, K: Clone, W: Clone> Layer<S> for BulkheadLayer<H, R, K, W> {
    type Service = BulkheadService<S, H, R, K, W>;

    fn layer(&self, inner: S) -> Self::Service {
        BulkheadService {
            inner,
            gate: self.gate.clone(),
            errors: PhantomData,
        }
    }
}

/// What a [`BulkheadLayer`] and each of its services admit requests with.
struct Gate<H, K, W> {
    // Over an adaptive compartment (or registry domain), its requests'
    // seats are timed and record a sample classified by `classify`.
    handle: H,
    max_wait: MaxWait,
    classify: K,
    // The seats each request takes (`WeightOne`, zero-sized, by default).
    weight: W,
}

impl<H: Clone, K: Clone, W: Clone> Clone for Gate<H, K, W> {
    fn clone(&self) -> Self {
        Self {
            handle: self.handle.clone(),
            max_wait: self.max_wait,
            classify: self.classify.clone(),
            weight: self.weight.clone(),
        }
    }
}

/// A service that calls its inner service only inside a compartment seat.
/// Made by [`BulkheadLayer`].
///
/// - **Admission.** `call` takes a free seat, if there is one, and calls
///   the inner service at once, in both modes. Failing fast (the default),
///   a request that finds no free seat is rejected at once. With a
///   `max_wait`, it waits instead: its response future joins the
///   compartment's line at its first poll (in first-poll order) and calls
///   the inner service when it is handed a seat; finding no free seat in
///   `call` is not a rejection and is not counted. In FIFO admission a
///   seat is free for `call` only when nobody waits, so a new request
///   never passes a waiting one. Waiting needs a tokio runtime with the
///   time driver.
/// - **Weight.** Each request takes one seat, or as many as the layer's
///   [`weight`](BulkheadLayer::weight) function says.
/// - **Rejection** is an [`Error`](crate::Error) (`Full`, `Timeout`,
///   `QueueFull` or `Closed`; `ZeroWeight` or `WeightAboveLimit` for a
///   weight that no seat count could admit), boxed in the [`BoxError`] by
///   default, or [`ServiceError::Rejected`] with
///   [`typed_errors`](Self::typed_errors); the inner service is not
///   called.
/// - **The seat is held until the response future completes**, and is
///   given back if that future is dropped first (a client that hangs up).
///   A streaming response body is not covered: the seat is released when
///   the response head is ready.
///
/// # Cancel safety
///
/// Dropping the response future at any point gives back its seat, or
/// leaves the line if it was still waiting for one. A response future
/// whose request found a free seat holds it from `call` on, in both
/// modes, so a future that is made and dropped unpolled takes a seat and
/// gives it back, and one that is kept unpolled holds it.
///
/// # Memory ordering
/// As for every seat (see [`ResponseFuture`](future::ResponseFuture)):
/// the previous holder's work happens-before the inner call.
///
/// # Allocation
///
/// Neither mode allocates per admitted request, with or without a
/// [`weight`](BulkheadLayer::weight) function: the response future holds
/// a named owned wait ([`AcquireWithinOwned`], built on core's
/// `AcquireOwned`) and the ready service with its request, with no boxing.
/// A rejected request allocates once by default (its [`BoxError`]), and
/// nothing with [`typed_errors`](Self::typed_errors) (tested by
/// `examples/tests/zero_alloc.rs`). A layer over an adaptive compartment
/// or registry domain allocates nothing more: its timed seat holds `Arc`
/// clones (of the compartment, and of a domain's controller), and
/// recording a sample allocates nothing.
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
///
/// # Feeding an adaptive limit
/// Over an adaptive compartment or registry domain, it records one sample
/// per admitted request; see [`BulkheadLayer::from_registry`] ("Adaptive
/// domains").
pub struct BulkheadService<
    S,
    H: LayerHandle = Arc<Bulkhead>,
    R = BoxErrors,
    K = ErrIsDropped,
    W = WeightOne,
> {
    inner: S,
    gate: Gate<H, K, W>,
    errors: PhantomData<fn() -> R>,
}

impl<S, H: LayerHandle> BulkheadService<S, H> {
    /// Wraps `inner`; see [`BulkheadLayer::new`].
    pub fn new(inner: S, compartment: H) -> Self {
        BulkheadLayer::new(compartment).layer(inner)
    }
}

impl<S, H: LayerHandle, R, K, W> BulkheadService<S, H, R, K, W> {
    /// The same service, returning a [`ServiceError`] of the inner
    /// service's error instead of a [`BoxError`]; see
    /// [`BulkheadLayer::typed_errors`].
    #[must_use]
    pub fn typed_errors(self) -> BulkheadService<S, H, TypedErrors, K, W> {
        BulkheadService {
            inner: self.inner,
            gate: self.gate,
            errors: PhantomData,
        }
    }

    /// How long a request may wait for a seat: a [`Duration`](std::time::Duration)
    /// (zero fails fast), or a [`MaxWait`]. A request that finds a seat
    /// free takes it in `call`; one that must wait starts its budget at
    /// the response future's first poll, so a future polled late still
    /// gets the whole budget.
    #[must_use]
    pub fn max_wait(mut self, max_wait: impl Into<MaxWait>) -> Self {
        self.gate.max_wait = max_wait.into();
        self
    }

    /// The handle the service was built from.
    pub fn handle(&self) -> &H {
        &self.gate.handle
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

impl<S: Clone, H: LayerHandle, R, K: Clone, W: Clone> Clone for BulkheadService<S, H, R, K, W> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            gate: self.gate.clone(),
            errors: PhantomData,
        }
    }
}

impl<S, H: LayerHandle, R, K, W> fmt::Debug for BulkheadService<S, H, R, K, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BulkheadService")
            .field("bulkhead", &self.gate.handle.bulkhead().name())
            .field("max_wait", &self.gate.max_wait)
            .field("adaptive", &self.gate.handle.is_adaptive())
            .finish_non_exhaustive()
    }
}

impl<S, Req, H, R, K, W> Service<Req> for BulkheadService<S, H, R, K, W>
where
    S: Service<Req> + Clone + Send + 'static,
    S::Future: Send + 'static,
    R: ErrorRepr<S::Error>,
    K: ClassifyResponse<S::Response, S::Error> + Clone,
    W: RequestWeight<Req>,
    Req: Send + 'static,
    H: LayerHandle,
{
    type Response = S::Response;
    type Error = R::Error;
    type Future = ResponseFuture<S, Req, H, R, K>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), R::Error>> {
        // Readiness only: no seat is taken here (bug class 12 in docs/bug-classes.md).
        self.inner.poll_ready(cx).map_err(R::inner)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        // A constant 1 by default (`WeightOne`), which makes the calls
        // below exactly the one-seat `try_acquire` and `acquire`. A bad
        // weight is refused by the compartment, as this request's error.
        let weight = self.gate.weight.weight(&request);
        let bulkhead = self.gate.handle.bulkhead();
        // The handle is cloned only for an admitted request: a rejection
        // touches no reference count (two locked RMWs fewer).
        let seat = if self.gate.max_wait.is_fail_fast() {
            match bulkhead.try_acquire_many(weight) {
                Ok(seat) => seat,
                Err(error) => return ResponseFuture::rejected(error),
            }
        } else {
            // A free seat is taken now, as failing fast takes it; a miss
            // is no rejection (nothing is counted), only the reason to
            // wait, and the wait gives the verdict.
            match bulkhead.acquire_many_if_free(weight) {
                Some(seat) => seat,
                None => return wait(&mut self.inner, &self.gate, request, weight),
            }
        };
        let seat = self.gate.handle.start(seat);
        ResponseFuture::running(self.inner.call(request), seat, self.gate.classify.clone())
    }
}

/// The response future of a request that found no free seat and has a
/// wait budget: it waits for its seat, then calls `inner`'s ready
/// instance, which goes with the request (a clone stays).
fn wait<S, Req, H, R, K: Clone, W>(
    inner: &mut S,
    gate: &Gate<H, K, W>,
    request: Req,
    weight: usize,
) -> ResponseFuture<S, Req, H, R, K>
where
    S: Service<Req> + Clone,
    H: LayerHandle,
{
    let fresh = inner.clone();
    let ready = std::mem::replace(inner, fresh);
    let admit = AcquireWithinOwned::new(gate.handle.owner(), weight, gate.max_wait);
    // The wait starts at the response future's first poll (a queued wait
    // is pinned in it and cannot move), so nothing is allocated.
    ResponseFuture::waiting(
        admit,
        ready,
        request,
        gate.handle.feedback(),
        gate.classify.clone(),
    )
}
