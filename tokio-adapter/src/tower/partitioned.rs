//! [`PartitionedLayer`]: the tower layer over a partitioned compartment,
//! each request admitted through the partition its classifier names.

// Built once, these return core's `UnknownPartition` as `Partitioned::id`
// does: it is large (the known names, inline, without allocating), but
// only at build time, never per request.
#![allow(clippy::result_large_err)]

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::task::{Context, Poll};

use bulkhead_core::limit::CallOutcome;
use bulkhead_core::partition::{
    MAX_PARTITIONS, PartitionId, PartitionSeat, Partitioned, UnknownPartition,
};
use bulkhead_core::{MaxWait, RawLock};
use bulkhead_std::StdLock;
use bulkhead_std::registry::{DomainPartition, Registry, RegistryError};
use tower_layer::Layer;
use tower_service::Service;

use super::handle::sealed::Hold;
use super::route::ClassifyPartition;
use super::{
    BoxErrors, ErrIsDropped, ErrorRepr, RequestWeight, ResponseFuture, TypedErrors, WeightOne,
};
use crate::AcquirePartitionWithin;

/// Wraps a service in a [`PartitionedService`] that admits each request
/// through one partition of a [`Partitioned`] compartment: the partition
/// its classifier (`C`) names.
///
/// One compartment's seats, shared by priority classes: each partition is
/// guaranteed its share, lends what it leaves idle, and gets its seats
/// back first as borrowers finish (see core's
/// [`partition`](bulkhead_core::partition) module for the rules). The
/// layer adds the request's side:
///
/// - **Classification.** A [`ClassifyPartition`] maps each request to a
///   partition: [`ByHeader`](super::ByHeader) (a header's value),
///   [`ByPath`](super::ByPath) (a path prefix),
///   [`ByExtension`](super::ByExtension) (an extension a layer in front
///   inserted), or any `Fn(&Req) -> PartitionId`. Names are resolved to
///   ids when the classifier and the layer are built (an unknown name is
///   an [`UnknownPartition`] then, listing the partitions there are), so
///   a request costs no allocation and no lookup by name.
/// - **Wait budgets, per partition.** Each partition starts with its own
///   [`PartitionConfig::max_wait`](bulkhead_core::partition::PartitionConfig::max_wait),
///   read when the layer is built, or fails fast if it has none;
///   [`max_wait`](Self::max_wait) sets another. Failing fast, a request
///   that finds no seat for its partition is turned away at once with
///   [`Error::PartitionFull`](crate::Error::PartitionFull) (`503` with
///   `Retry-After`, through [`HttpRejection`](super::HttpRejection));
///   with a budget, it waits in its partition's line, then gives up with
///   `Timeout` (counted in the partition's `timed_out`).
/// - **Weights** as with [`BulkheadLayer::weight`](super::BulkheadLayer::weight):
///   [`weight(f)`](Self::weight).
/// - **Errors** boxed (the default) or [typed](Self::typed_errors), and
///   the same response future as the [`BulkheadLayer`](super::BulkheadLayer)'s:
///   the seat is taken in `call`, never in `poll_ready`, and held until
///   the response future completes or is dropped.
///
/// ```
/// use std::{convert::Infallible, future::Ready, sync::Arc, task::{Context, Poll}, time::Duration};
/// use bulkhead_tokio::{ByHeader, Error, PartitionedLayer, ServiceError, StdLock};
/// use bulkhead_tokio::bulkhead_core::partition::{Amount, PartitionConfig, Partitioned};
/// use http::{HeaderName, Request};
/// use tower_layer::Layer;
/// use tower_service::Service;
///
/// #[derive(Clone)]
/// struct Ok200;
/// impl Service<Request<()>> for Ok200 {
///     type Response = u16;
///     type Error = Infallible;
///     type Future = Ready<Result<u16, Infallible>>;
///     fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
///         Poll::Ready(Ok(()))
///     }
///     fn call(&mut self, _: Request<()>) -> Self::Future {
///         std::future::ready(Ok(200))
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let db = Arc::new(Partitioned::<StdLock>::new("db", 32, &[
///     PartitionConfig::new("live", Amount::Seats(24)).priority(1),
///     PartitionConfig::new("batch", Amount::Seats(8)).borrow(Amount::Seats(0)),
/// ])?);
/// let by_tier = ByHeader::new(&db, HeaderName::from_static("x-tier"), "live")?
///     .route("bulk", "batch")?;
/// let layer = PartitionedLayer::new(db.clone(), by_tier)
///     .max_wait("live", Duration::from_millis(50))? // live waits, batch fails fast
///     .typed_errors();
/// let mut svc = layer.layer(Ok200);
///
/// let batch = db.id("batch")?;
/// let _flood: Vec<_> = (0..8).map(|_| db.try_acquire(batch).unwrap()).collect();
/// let bulk = Request::builder().header("x-tier", "bulk").body(())?;
/// let err = svc.call(bulk).await.unwrap_err();
/// assert!(matches!(err, ServiceError::Rejected(Error::PartitionFull { .. })));
/// assert_eq!(svc.call(Request::new(())).await?, 200); // live is untouched
/// # Ok(())
/// # }
/// ```
pub struct PartitionedLayer<C, L: RawLock + 'static = StdLock, R = BoxErrors, W = WeightOne> {
    gate: Gate<C, L, W>,
    errors: PhantomData<fn() -> R>,
}

impl<C, L: RawLock + 'static> PartitionedLayer<C, L> {
    /// A layer over `compartment`, classifying requests with `classify`.
    /// Each partition's wait budget is its configured
    /// [`max_wait`](bulkhead_core::partition::PartitionConfig::max_wait),
    /// read now, or fail fast.
    pub fn new(compartment: Arc<Partitioned<L>>, classify: C) -> Self {
        let mut budgets = [MaxWait::FailFast; MAX_PARTITIONS];
        for (id, _) in compartment.partitions() {
            let budget = compartment
                .partition_config(id)
                .ok()
                .and_then(|c| c.max_wait);
            if let (Some(slot), Some(budget)) = (budgets.get_mut(id.index()), budget) {
                *slot = budget;
            }
        }
        Self {
            gate: Gate {
                handle: compartment,
                classify,
                budgets,
                live: None,
                fixed: 0,
                weight: WeightOne,
            },
            errors: PhantomData,
        }
    }
}

impl<C> PartitionedLayer<C> {
    /// A layer over the registry's partitioned compartment `domain`,
    /// classifying requests with `classify` (built over the same
    /// compartment, [`Registry::get_partitioned`]), whose wait budgets
    /// are the registry's: each partition's `max_wait`, or else the
    /// compartment's, as
    /// [`Registry::partition`](bulkhead_std::registry::Registry::partition)'s
    /// handles wait. They are read at each request, so a live
    /// [`Registry::reconfigure`] reaches the layer;
    /// [`max_wait`](Self::max_wait) fixes one partition's budget for this
    /// layer instead.
    ///
    /// (A layer made with [`new`](Self::new) over the same compartment
    /// knows nothing of the registry: it reads only the partitions' own
    /// `max_wait`, once, and fails fast without one.)
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_tokio::MaxWait;
    /// use bulkhead_tokio::partition::{Amount, ByHeader, PartitionConfig, PartitionedLayer};
    /// use bulkhead_tokio::registry::{DomainConfig, Registry};
    /// use http::HeaderName;
    ///
    /// let registry = Registry::local();
    /// registry.get_or_create_partitioned(
    ///     "db",
    ///     DomainConfig::new(32).max_wait(MaxWait::from_millis(20)).partitions_from([
    ///         PartitionConfig::new("live", Amount::Seats(24)).priority(1),
    ///         PartitionConfig::new("batch", Amount::Seats(8)).max_wait(MaxWait::FailFast),
    ///     ]),
    /// )?;
    /// let db = registry.get_partitioned("db")?;
    /// let by_tier = ByHeader::new(&db, HeaderName::from_static("x-tier"), "live")?
    ///     .route("bulk", "batch")?;
    /// let layer = PartitionedLayer::from_registry(&registry, "db", by_tier)?;
    /// assert_eq!(layer.wait_budget(db.id("live")?), MaxWait::from_millis(20)); // the domain's
    /// assert_eq!(layer.wait_budget(db.id("batch")?), MaxWait::FailFast); // its own
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`RegistryError::NotFound`], or [`RegistryError::NotPartitioned`]
    /// for a compartment without partitions.
    pub fn from_registry(
        registry: &Registry,
        domain: &str,
        classify: C,
    ) -> Result<Self, RegistryError> {
        let (compartment, live) = loop {
            let compartment = registry.get_partitioned(domain)?;
            let live = compartment
                .partitions()
                .map(|(_, name)| registry.partition(domain, name.as_str()))
                .collect::<Result<Vec<_>, _>>()?;
            // Unless the entry was replaced in between (unregistered and
            // made again): then take the new one whole.
            if live
                .iter()
                .all(|p| Arc::ptr_eq(p.compartment(), &compartment))
            {
                break (compartment, live);
            }
        };
        let mut layer = Self::new(compartment, classify);
        layer.gate.live = Some(live.into());
        Ok(layer)
    }
}

impl<C, L: RawLock + 'static, R, W> PartitionedLayer<C, L, R, W> {
    /// How long a request of the partition called `partition` may wait
    /// for a seat: a [`Duration`](std::time::Duration) (zero fails fast),
    /// or a [`MaxWait`]. Replaces the partition's configured budget for
    /// this layer.
    ///
    /// # Errors
    /// [`UnknownPartition`] if the compartment has no partition called
    /// `partition`, listing those it has.
    pub fn max_wait(
        mut self,
        partition: &str,
        max_wait: impl Into<MaxWait>,
    ) -> Result<Self, UnknownPartition> {
        let id = self.gate.handle.id(partition)?;
        if let Some(slot) = self.gate.budgets.get_mut(id.index()) {
            *slot = max_wait.into();
            self.gate.fixed |= bit(id);
        }
        Ok(self)
    }

    /// How long a request of partition `id` may wait for a seat, now
    /// (`FailFast` for an id of another compartment, which is refused
    /// anyway).
    pub fn wait_budget(&self, id: PartitionId) -> MaxWait {
        self.gate.budget(id)
    }

    /// The same layer, whose requests each take as many seats as `weight`
    /// says: any `Fn(&Request) -> usize` (or a [`RequestWeight`]), as
    /// [`BulkheadLayer::weight`](super::BulkheadLayer::weight). A weight
    /// of 0 is [`Error::ZeroWeight`](crate::Error::ZeroWeight), one above
    /// what the request's partition may ever hold (its share plus its
    /// borrowing limit) is
    /// [`Error::WeightAboveLimit`](crate::Error::WeightAboveLimit): that
    /// request's error, never a panic.
    #[must_use]
    pub fn weight<W2>(self, weight: W2) -> PartitionedLayer<C, L, R, W2> {
        PartitionedLayer {
            gate: Gate {
                handle: self.gate.handle,
                classify: self.gate.classify,
                budgets: self.gate.budgets,
                live: self.gate.live,
                fixed: self.gate.fixed,
                weight,
            },
            errors: PhantomData,
        }
    }

    /// The same layer, whose services return a
    /// [`ServiceError`](super::ServiceError) of the inner service's error
    /// instead of a [`BoxError`](crate::BoxError): nothing is allocated
    /// per request, rejected ones included.
    #[must_use]
    pub fn typed_errors(self) -> PartitionedLayer<C, L, TypedErrors, W> {
        PartitionedLayer {
            gate: self.gate,
            errors: PhantomData,
        }
    }

    /// The compartment the layer admits through.
    pub fn handle(&self) -> &Arc<Partitioned<L>> {
        &self.gate.handle
    }

    /// The classifier.
    pub fn classifier(&self) -> &C {
        &self.gate.classify
    }
}

impl<C: Clone, L: RawLock + 'static, R, W: Clone> Clone for PartitionedLayer<C, L, R, W> {
    fn clone(&self) -> Self {
        Self {
            gate: self.gate.clone(),
            errors: PhantomData,
        }
    }
}

impl<C, L: RawLock + 'static, R, W> fmt::Debug for PartitionedLayer<C, L, R, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PartitionedLayer")
            .field("bulkhead", &self.gate.handle.name())
            .field("max_wait", &self.gate.budgets_debug())
            .field("classifier", &std::any::type_name::<C>())
            .field("errors", &std::any::type_name::<R>())
            .field("weight", &std::any::type_name::<W>())
            .finish()
    }
}

impl<S, C: Clone, L: RawLock + 'static, R, W: Clone> Layer<S> for PartitionedLayer<C, L, R, W> {
    type Service = PartitionedService<S, C, L, R, W>;

    fn layer(&self, inner: S) -> Self::Service {
        PartitionedService {
            inner,
            gate: self.gate.clone(),
            errors: PhantomData,
        }
    }
}

/// Partition `id`'s bit in [`Gate::fixed`] (none past the 8 a `u8` holds,
/// which no compartment has).
fn bit(id: PartitionId) -> u8 {
    u32::try_from(id.index())
        .ok()
        .and_then(|i| 1u8.checked_shl(i))
        .unwrap_or(0)
}

/// What a [`PartitionedLayer`] and each of its services admit with.
struct Gate<C, L: RawLock, W> {
    handle: Arc<Partitioned<L>>,
    classify: C,
    // By partition index; `FailFast` past the compartment's partitions.
    budgets: [MaxWait; MAX_PARTITIONS],
    // Built from a registry: its handles, whose budgets follow a live
    // reconfiguration (one atomic load a request), except for the
    // partitions whose bit is set in `fixed` (the layer's `max_wait`).
    live: Option<Arc<[DomainPartition]>>,
    fixed: u8,
    weight: W,
}

impl<C, L: RawLock, W> Gate<C, L, W> {
    fn budget(&self, id: PartitionId) -> MaxWait {
        let followed = self
            .live
            .as_deref()
            .filter(|_| self.fixed & bit(id) == 0)
            .and_then(|live| live.iter().find(|p| p.id() == id));
        if let Some(partition) = followed {
            return partition.wait_budget();
        }
        self.budgets
            .get(id.index())
            .copied()
            .unwrap_or(MaxWait::FailFast)
    }

    /// Each partition's name and budget.
    fn budgets_debug(&self) -> Vec<(&str, MaxWait)> {
        self.handle
            .partitions()
            .map(|(id, name)| (name.as_str(), self.budget(id)))
            .collect()
    }
}

impl<C: Clone, L: RawLock, W: Clone> Clone for Gate<C, L, W> {
    fn clone(&self) -> Self {
        Self {
            handle: Arc::clone(&self.handle),
            classify: self.classify.clone(),
            budgets: self.budgets,
            live: self.live.clone(),
            fixed: self.fixed,
            weight: self.weight.clone(),
        }
    }
}

/// The response future's side of a partitioned compartment: a waiting
/// request holds an [`AcquirePartitionWithin`], an admitted one a
/// [`PartitionSeat`]; nothing is timed (no adaptive limit).
impl<L: RawLock + 'static> Hold for Arc<Partitioned<L>> {
    type Wait = AcquirePartitionWithin<Self>;
    type Waited = PartitionSeat<Self>;
    type Feedback = ();
    type Seat = PartitionSeat<Self>;

    fn start_later((): &(), seat: PartitionSeat<Self>) -> Self::Seat {
        seat
    }
    fn finish(seat: Self::Seat, _: impl FnOnce() -> CallOutcome) {
        drop(seat);
    }
    fn is_timed(_: &Self::Seat) -> bool {
        false
    }
}

/// A service that calls its inner service only inside a seat of the
/// request's partition. Made by [`PartitionedLayer`]; see there for
/// classification, budgets, weights and errors.
///
/// - **Admission.** Failing fast, `call` takes a seat of the request's
///   partition and calls the inner service at once, or turns the request
///   away at once. With a budget, the response future joins the
///   partition's line at its first poll and calls the inner service when
///   it is handed a seat (waiting needs a tokio runtime with the time
///   driver).
/// - **The seat is held until the response future completes**, and given
///   back if it is dropped first.
///
/// # Allocation
/// None per admitted request, in either mode: the classifier matches
/// without allocating, the response future holds a named wait
/// ([`AcquirePartitionWithin`]) and the ready service with its request. A
/// rejected request allocates its [`BoxError`](crate::BoxError) by
/// default, nothing with [`typed_errors`](PartitionedLayer::typed_errors).
///
/// # Cancel safety
/// Dropping the response future at any point gives back its seat, or
/// leaves its partition's line.
pub struct PartitionedService<S, C, L: RawLock + 'static = StdLock, R = BoxErrors, W = WeightOne> {
    inner: S,
    gate: Gate<C, L, W>,
    errors: PhantomData<fn() -> R>,
}

impl<S, C, L: RawLock + 'static, R, W> PartitionedService<S, C, L, R, W> {
    /// The compartment the service admits through.
    pub fn handle(&self) -> &Arc<Partitioned<L>> {
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

impl<S: Clone, C: Clone, L: RawLock + 'static, R, W: Clone> Clone
    for PartitionedService<S, C, L, R, W>
{
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            gate: self.gate.clone(),
            errors: PhantomData,
        }
    }
}

impl<S, C, L: RawLock + 'static, R, W> fmt::Debug for PartitionedService<S, C, L, R, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PartitionedService")
            .field("bulkhead", &self.gate.handle.name())
            .field("max_wait", &self.gate.budgets_debug())
            .finish_non_exhaustive()
    }
}

impl<S, Req, C, L, R, W> Service<Req> for PartitionedService<S, C, L, R, W>
where
    S: Service<Req> + Clone + Send + 'static,
    S::Future: Send + 'static,
    R: ErrorRepr<S::Error>,
    C: ClassifyPartition<Req>,
    W: RequestWeight<Req>,
    Req: Send + 'static,
    L: RawLock + 'static,
{
    type Response = S::Response;
    type Error = R::Error;
    type Future = ResponseFuture<S, Req, Arc<Partitioned<L>>, R, ErrIsDropped>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), R::Error>> {
        // Readiness only: no seat is taken here (bug class 12 in docs/bug-classes.md).
        self.inner.poll_ready(cx).map_err(R::inner)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        let id = self.gate.classify.partition(&request);
        // A bad weight, or an id of another compartment, is refused by
        // the compartment, as this request's error.
        let weight = self.gate.weight.weight(&request);
        let max_wait = self.gate.budget(id);
        let handle = Arc::clone(&self.gate.handle);
        if max_wait.is_fail_fast() {
            return match PartitionSeat::try_acquire_many(handle, id, weight) {
                Ok(seat) => ResponseFuture::running(self.inner.call(request), seat, ErrIsDropped),
                Err(error) => ResponseFuture::rejected(error),
            };
        }
        // The ready instance goes with the request; a clone stays.
        let fresh = self.inner.clone();
        let ready = std::mem::replace(&mut self.inner, fresh);
        let admit = AcquirePartitionWithin::new(handle, id, weight, max_wait);
        ResponseFuture::waiting(admit, ready, request, (), ErrIsDropped)
    }
}
