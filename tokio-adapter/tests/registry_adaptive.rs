//! The registry's async paths feed an adaptive compartment's limit with
//! no code from the caller: `acquire_within` seats time themselves,
//! `run_within` classifies the work's output, and a waiting task's seat is
//! timed too.

use std::time::Duration;

use bulkhead_std::registry::{DomainConfig, Registry};
use bulkhead_std::{Algorithm, LimitConfig};
use bulkhead_tokio::{MaxWait, RegistryExt};

/// AIMD within [2, 40]; a window is `limit` samples long.
const AIMD: LimitConfig = LimitConfig {
    min: Some(2),
    max: Some(40),
    window: Some(1),
    ..LimitConfig::new(Algorithm::Aimd)
};

fn limit(registry: &Registry, name: &str) -> usize {
    registry.get(name).unwrap().state().max_concurrent
}

#[tokio::test(flavor = "current_thread")]
async fn async_lookups_feed_the_limit() {
    let registry = Registry::local();
    let config = DomainConfig::new(10)
        .max_wait(MaxWait::from_millis(500))
        .limit(AIMD);
    registry.get_or_create("api", config).unwrap();

    // A failing dependency: run_within's `Err` counts as dropped.
    for expected in [9, 8, 7] {
        for _ in 0..limit(&registry, "api") {
            let r = registry
                .run_within("api", async { Err::<(), _>("503") })
                .await
                .unwrap();
            assert!(r.is_err());
        }
        assert_eq!(limit(&registry, "api"), expected);
    }

    // Healthy and fully used: acquire_within seats dropped without an
    // outcome count as successes, and the limit grows.
    for expected in [8, 9] {
        let mut seats = Vec::new();
        for _ in 0..limit(&registry, "api") {
            seats.push(registry.acquire_within("api").await.unwrap());
        }
        assert!(seats.iter().all(|s| s.is_timed()));
        drop(seats);
        assert_eq!(limit(&registry, "api"), expected);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_waited_for_its_seat_is_timed_and_a_cancelled_one_records_a_success() {
    let registry = std::sync::Arc::new(Registry::local());
    let config = DomainConfig::new(2)
        .max_wait(MaxWait::from_millis(2_000))
        .limit(LimitConfig {
            min: Some(1),
            ..AIMD
        });
    registry.get_or_create("api", config).unwrap();

    let a = registry.acquire_within("api").await.unwrap();
    let b = registry.acquire_within("api").await.unwrap();
    // Full: this task queues, and is handed `a`'s seat.
    let r = std::sync::Arc::clone(&registry);
    let waiter = tokio::spawn(async move {
        let seat = r.acquire_within("api").await.unwrap();
        assert!(seat.is_timed());
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    drop(a); // sample 1 of a 2-sample window
    waiter.await.unwrap(); // sample 2, with 2 of 2 in use: + 1
    assert_eq!(limit(&registry, "api"), 3);

    drop(b); // sample 1 of 3
    // Admitted, then cancelled while it holds the seat: sample 2 of 3, a
    // success by default.
    let never = std::future::pending::<Result<(), ()>>();
    let cancelled =
        tokio::time::timeout(Duration::from_millis(5), registry.run_within("api", never));
    assert!(cancelled.await.is_err());
    let _ = registry.acquire_within("api").await.unwrap(); // sample 3 of 3
    assert_eq!(
        limit(&registry, "api"),
        4,
        "the window closed: the cancelled call counted"
    );
    assert_eq!(registry.get("api").unwrap().state().active, 0);
}
