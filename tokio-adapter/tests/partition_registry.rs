//! Registry partitions from tokio: `DomainPartitionExt`, the registry's
//! `acquire_partition_within`, and `PartitionedLayer::from_registry`, each
//! waiting the registry's budget (the partition's `max_wait`, or else the
//! compartment's) and following a live reconfiguration of it; all through
//! `bulkhead_tokio::partition` alone.

use std::time::Duration;

use bulkhead_tokio::partition::{Amount, DomainPartitionExt, PartitionConfig};
use bulkhead_tokio::registry::{DomainConfig, Registry, RegistryError, RegistryExt};
use bulkhead_tokio::{Error, MaxWait};
use tokio::time::Instant;

/// `db`: 4 seats, the domain waits 20 ms; `live` (3) has no budget of its
/// own, `batch` (1, may not borrow) waits 100 ms.
fn registry() -> Registry {
    let registry = Registry::local();
    registry
        .get_or_create_partitioned("db", config(20))
        .unwrap();
    registry
}

fn config(domain_ms: u64) -> DomainConfig {
    DomainConfig::new(4)
        .max_wait(MaxWait::from_millis(domain_ms))
        .partitions_from([
            PartitionConfig::new("live", Amount::Seats(3)).borrow(Amount::Seats(0)),
            PartitionConfig::new("batch", Amount::Seats(1))
                .borrow(Amount::Seats(0))
                .max_wait(MaxWait::from_millis(100)),
        ])
}

#[tokio::test(start_paused = true)]
async fn a_domain_partition_waits_its_budget_on_tokio_and_follows_a_reconfigure() {
    let registry = registry();
    let live = registry.partition("db", "live").unwrap();
    let batch = registry.partition("db", "batch").unwrap();
    let held: Vec<_> = (0..3).map(|_| live.try_acquire().unwrap()).collect();
    let start = Instant::now();
    let err = live.acquire_within().await.unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    assert_eq!(start.elapsed(), Duration::from_millis(20)); // the domain's

    let _batch = batch.acquire_many_within(1).await.unwrap();
    let start = Instant::now();
    let err = batch.acquire_within().await.unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    assert_eq!(start.elapsed(), Duration::from_millis(100)); // its own

    // The same handle, after the domain's budget changed live.
    registry.reconfigure("db", config(70)).unwrap();
    let start = Instant::now();
    assert!(live.acquire_within().await.is_err());
    assert_eq!(start.elapsed(), Duration::from_millis(70));

    // A seat freed while waiting is handed over.
    let waiter = tokio::spawn({
        let live = live.clone();
        async move { live.acquire_within().await.map(|seat| seat.weight()) }
    });
    tokio::task::yield_now().await;
    drop(held);
    assert_eq!(waiter.await.unwrap().unwrap(), 1);
}

#[tokio::test(start_paused = true)]
async fn the_registry_takes_a_partition_seat_by_names() {
    let registry = registry();
    let seat = registry
        .acquire_partition_within("db", "batch")
        .await
        .unwrap();
    assert_eq!(seat.weight(), 1);
    let start = Instant::now();
    let err = registry
        .acquire_partition_within("db", "batch")
        .await
        .unwrap_err();
    assert!(
        matches!(err, RegistryError::Rejected(Error::Timeout { .. })),
        "{err}"
    );
    assert_eq!(start.elapsed(), Duration::from_millis(100));
    let err = registry
        .acquire_partition_within("db", "bacth")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("did you mean `batch`?"), "{err}");
    let err = registry
        .acquire_partition_within("database", "live")
        .await
        .unwrap_err();
    assert!(matches!(err, RegistryError::NotPartitioned { .. }), "{err}");
}

#[cfg(feature = "tower")]
mod tower {
    use std::convert::Infallible;
    use std::future::{Ready, ready};
    use std::task::{Context, Poll};

    use bulkhead_tokio::ServiceError;
    use bulkhead_tokio::partition::{PartitionId, PartitionedLayer};
    use http::Request;
    use tower_layer::Layer;
    use tower_service::Service;

    use super::*;

    #[derive(Clone)]
    struct Ok200;

    impl Service<Request<()>> for Ok200 {
        type Response = u16;
        type Error = Infallible;
        type Future = Ready<Result<u16, Infallible>>;
        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }
        fn call(&mut self, _: Request<()>) -> Self::Future {
            ready(Ok(200))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_layer_from_the_registry_waits_the_registry_budgets_and_follows_them() {
        let registry = registry();
        let db = registry.get_partitioned("db").unwrap();
        let (live, batch) = (db.id("live").unwrap(), db.id("batch").unwrap());
        let to_live = move |_: &Request<()>| -> PartitionId { live };
        let layer = PartitionedLayer::from_registry(&registry, "db", to_live)
            .unwrap()
            .typed_errors();
        assert_eq!(layer.wait_budget(live), MaxWait::from_millis(20));
        assert_eq!(layer.wait_budget(batch), MaxWait::from_millis(100));
        // Over the same compartment, `new` knows no domain budget.
        let plain = PartitionedLayer::new(db.clone(), to_live);
        assert_eq!(plain.wait_budget(live), MaxWait::FailFast);

        let mut svc = layer.layer(Ok200);
        let _held: Vec<_> = (0..3).map(|_| db.try_acquire(live).unwrap()).collect();
        let start = Instant::now();
        let err = svc.call(Request::new(())).await.unwrap_err();
        assert!(
            matches!(err, ServiceError::Rejected(Error::Timeout { .. })),
            "{err}"
        );
        assert_eq!(start.elapsed(), Duration::from_millis(20));

        // A live change of the domain's budget reaches the built service;
        // a budget set on the layer stays.
        registry.reconfigure("db", config(70)).unwrap();
        assert_eq!(layer.wait_budget(live), MaxWait::from_millis(70));
        let start = Instant::now();
        assert!(svc.call(Request::new(())).await.is_err());
        assert_eq!(start.elapsed(), Duration::from_millis(70));
        let fixed = layer.max_wait("live", Duration::from_millis(5)).unwrap();
        registry.reconfigure("db", config(90)).unwrap();
        assert_eq!(fixed.wait_budget(live), MaxWait::from_millis(5));
        assert_eq!(fixed.wait_budget(batch), MaxWait::from_millis(100));
    }

    #[test]
    fn a_layer_from_the_registry_needs_a_partitioned_domain() {
        let registry = Registry::local();
        let err = PartitionedLayer::from_registry(
            &registry,
            "database",
            |_: &Request<()>| unreachable!(),
        )
        .unwrap_err();
        assert!(matches!(err, RegistryError::NotPartitioned { .. }), "{err}");
    }
}
