//! A tower layer built from an adaptive registry domain feeds its limit:
//! one sample per admitted request, classified by default (`Err` dropped,
//! `Ok` success, a cancelled response a success) or by the user's
//! classifier; a static domain's layer records nothing.

use std::future::{Future, Pending, Ready, pending, ready};
use std::task::{Context, Poll, Waker};

use bulkhead_std::registry::{DomainConfig, Registry};
use bulkhead_std::{Algorithm, LimitConfig};
use bulkhead_tokio::bulkhead_core::limit::CallOutcome;
use bulkhead_tokio::{BulkheadLayer, Error, MaxWait, ServiceError};
use tower_layer::Layer;
use tower_service::Service;

/// AIMD within [2, 40]; a window is `limit` samples long.
const AIMD: LimitConfig = LimitConfig {
    min: Some(2),
    max: Some(40),
    window: Some(1),
    ..LimitConfig::new(Algorithm::Aimd)
};

/// Answers each request with the result it carries (a status, or a
/// transport error).
#[derive(Clone)]
struct Echo;

type Reply = Result<u16, &'static str>;

impl Service<Reply> for Echo {
    type Response = u16;
    type Error = &'static str;
    type Future = Ready<Reply>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), &'static str>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, reply: Reply) -> Self::Future {
        ready(reply)
    }
}

/// Never answers: its response futures can only be dropped.
#[derive(Clone)]
struct Hang;

impl Service<()> for Hang {
    type Response = ();
    type Error = &'static str;
    type Future = Pending<Result<(), &'static str>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), &'static str>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, (): ()) -> Self::Future {
        pending()
    }
}

fn limit(registry: &Registry, name: &str) -> usize {
    registry.get(name).unwrap().state().max_concurrent
}

fn changes(registry: &Registry, name: &str) -> usize {
    registry
        .domain(name)
        .unwrap()
        .controller()
        .unwrap()
        .changes()
}

/// Sends one window (`limit` requests), all admitted before any completes
/// (fail fast: the seat is taken in `call`), so the compartment is fully
/// used, then awaits them.
async fn loaded_window<S>(registry: &Registry, name: &str, svc: &mut S, reply: Reply)
where
    S: Service<Reply>,
    S::Error: std::fmt::Debug,
{
    let futures: Vec<_> = (0..limit(registry, name))
        .map(|_| svc.call(reply))
        .collect();
    for future in futures {
        let _ = future.await;
    }
}

#[tokio::test(flavor = "current_thread")]
async fn errors_lower_the_limit_and_loaded_successes_raise_it() {
    let registry = Registry::local();
    registry
        .get_or_create("api", DomainConfig::new(10).limit(AIMD))
        .unwrap();
    let layer = BulkheadLayer::from_registry(&registry, "api").unwrap();
    assert!(layer.is_adaptive());
    let mut svc = layer.layer(Echo);

    // A failing dependency: each window of `Err`s is one back-off.
    for expected in [9, 8, 7] {
        for _ in 0..limit(&registry, "api") {
            assert!(svc.call(Err("reset")).await.is_err());
        }
        assert_eq!(limit(&registry, "api"), expected);
    }
    assert_eq!(changes(&registry, "api"), 3);

    // Healthy and fully used: the limit grows one per window.
    for expected in [8, 9] {
        loaded_window(&registry, "api", &mut svc, Ok(200)).await;
        assert_eq!(limit(&registry, "api"), expected);
    }
    assert_eq!(changes(&registry, "api"), 5);
    let state = registry.get("api").unwrap().state();
    assert_eq!(state.active, 0, "every seat came back");
}

#[tokio::test(flavor = "current_thread")]
async fn a_classifier_decides_what_counts_as_dropped() {
    let registry = Registry::local();
    let config = DomainConfig::new(10).limit(AIMD);
    registry.get_or_create("default", config).unwrap();
    registry.get_or_create("classified", config).unwrap();

    // By default a 503 is an `Ok`: a success, so a loaded window grows.
    let mut plain = BulkheadLayer::from_registry(&registry, "default")
        .unwrap()
        .layer(Echo);
    loaded_window(&registry, "default", &mut plain, Ok(503)).await;
    assert_eq!(limit(&registry, "default"), 11);

    // With "5xx counts as dropped", the same responses back off.
    let five_hundreds = |r: &Reply| match r {
        Ok(status) if *status >= 500 => CallOutcome::Dropped,
        Ok(_) => CallOutcome::Success,
        Err(_) => CallOutcome::Dropped,
    };
    let mut classified = BulkheadLayer::from_registry(&registry, "classified")
        .unwrap()
        .classify(five_hundreds)
        .layer(Echo);
    loaded_window(&registry, "classified", &mut classified, Ok(503)).await;
    assert_eq!(limit(&registry, "classified"), 9);
    loaded_window(&registry, "classified", &mut classified, Ok(200)).await;
    assert_eq!(limit(&registry, "classified"), 10);
}

#[tokio::test(flavor = "current_thread")]
async fn a_cancelled_response_counts_as_a_success_and_a_rejection_as_nothing() {
    let registry = Registry::local();
    registry
        .get_or_create("api", DomainConfig::new(4).limit(AIMD))
        .unwrap();
    let layer = BulkheadLayer::from_registry(&registry, "api")
        .unwrap()
        .typed_errors();
    let mut svc = layer.layer(Hang);

    // Fill every seat with a request that never answers.
    let hung: Vec<_> = (0..4).map(|_| svc.call(())).collect();
    assert_eq!(registry.get("api").unwrap().state().active, 4);

    // Rejected (typed, not boxed): no sample.
    let rejected = svc.call(()).await.unwrap_err();
    assert!(matches!(
        rejected,
        ServiceError::Rejected(Error::Full { .. })
    ));
    assert_eq!(changes(&registry, "api"), 0);

    // The clients hang up: four successes at full load, one window, +1.
    drop(hung);
    assert_eq!(registry.get("api").unwrap().state().active, 0);
    assert_eq!(limit(&registry, "api"), 5);
    assert_eq!(changes(&registry, "api"), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn a_request_that_waited_for_its_seat_feeds_the_limit() {
    let registry = Registry::local();
    let config = DomainConfig::new(4)
        .max_wait(MaxWait::from_millis(5_000))
        .limit(AIMD);
    registry.get_or_create("api", config).unwrap();
    let mut svc = BulkheadLayer::from_registry(&registry, "api")
        .unwrap()
        .layer(Echo);
    let bulkhead = registry.get("api").unwrap();

    // Every seat is held, so all four requests queue at their first poll.
    let held: Vec<_> = (0..4).map(|_| bulkhead.try_acquire().unwrap()).collect();
    let mut waiting: Vec<_> = (0..4).map(|_| Box::pin(svc.call(Err("reset")))).collect();
    let mut cx = Context::from_waker(Waker::noop());
    for request in &mut waiting {
        assert!(request.as_mut().poll(&mut cx).is_pending());
    }
    assert_eq!(bulkhead.state().waiting, 4);
    assert_eq!(changes(&registry, "api"), 0);

    // Handed their seats, all fail: one window of drops, one back-off.
    drop(held);
    for request in waiting {
        assert!(request.await.is_err());
    }
    assert_eq!(limit(&registry, "api"), 3);
    assert_eq!(changes(&registry, "api"), 1);
    assert_eq!(bulkhead.state().active, 0);
}

#[tokio::test(flavor = "current_thread")]
async fn a_static_domains_layer_records_nothing() {
    let registry = Registry::local();
    registry
        .get_or_create("fixed", DomainConfig::new(3))
        .unwrap();
    let layer = BulkheadLayer::from_registry(&registry, "fixed").unwrap();
    assert!(!layer.is_adaptive());
    let mut svc = layer
        .classify(|_: &Reply| -> CallOutcome { panic!("never called for a fixed limit") })
        .layer(Echo);
    for _ in 0..10 {
        assert!(svc.call(Err("reset")).await.is_err());
    }
    loaded_window(&registry, "fixed", &mut svc, Ok(200)).await;
    assert_eq!(limit(&registry, "fixed"), 3);
    assert!(registry.domain("fixed").unwrap().controller().is_none());
    assert_eq!(registry.get("fixed").unwrap().state().active, 0);
}

/// `from_registry` is `new` over the registry's `Domain`: the same budget,
/// the same feedback.
#[tokio::test(flavor = "current_thread")]
async fn a_layer_over_a_domain_is_the_layer_from_the_registry() {
    let registry = Registry::local();
    registry
        .get_or_create(
            "api",
            DomainConfig::new(4)
                .max_wait(MaxWait::from_millis(30))
                .limit(AIMD),
        )
        .unwrap();
    let from_registry = BulkheadLayer::from_registry(&registry, "api").unwrap();
    let over_domain = BulkheadLayer::new(registry.domain("api").unwrap());
    assert_eq!(from_registry.wait_budget(), MaxWait::from_millis(30));
    assert_eq!(over_domain.wait_budget(), from_registry.wait_budget());
    assert!(over_domain.is_adaptive() && from_registry.is_adaptive());
    let mut svc = over_domain.layer(Echo);
    for _ in 0..limit(&registry, "api") {
        assert!(svc.call(Err("reset")).await.is_err());
    }
    assert_eq!(limit(&registry, "api"), 3, "a window of `Err`s backs off");
    // An `Arc` of the same compartment is a plain compartment: no samples.
    let plain = BulkheadLayer::new(registry.get("api").unwrap());
    assert!(!plain.is_adaptive());
    assert_eq!(plain.wait_budget(), MaxWait::FailFast);
    let mut plain = plain.layer(Echo);
    for _ in 0..10 {
        assert!(plain.call(Err("reset")).await.is_err());
    }
    assert_eq!(changes(&registry, "api"), 1);
}
