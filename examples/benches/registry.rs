//! What an adaptive registry compartment adds to a call through the
//! registry: `Registry::acquire_blocking` plus giving the seat back, for a static
//! compartment and for an adaptive one (AIMD, app-limited, so the limit
//! holds: the common case), with a bare `try_acquire` on the compartment
//! as the floor and the clock read an adaptive seat makes twice, all in
//! one run; and a request through the tower layer built from each
//! (`BulkheadLayer::from_registry`, failing fast, a ready inner service,
//! polled by hand), with a layer over the bare compartment
//! (`BulkheadLayer::new`) as the peer. `cargo bench -p bulkhead-examples
//! --bench registry`.

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use bulkhead_std::registry::{DomainConfig, Registry};
use bulkhead_std::{Algorithm, LimitConfig, StdClock};
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, criterion_group, criterion_main};

fn registry_paths(c: &mut Criterion) {
    let registry = Registry::local();
    registry
        .get_or_create("fixed", DomainConfig::new(20))
        .unwrap();
    let limit = LimitConfig {
        min: Some(1),
        ..LimitConfig::new(Algorithm::Aimd)
    };
    registry
        .get_or_create("adaptive", DomainConfig::new(20).limit(limit))
        .unwrap();
    let mut group = c.benchmark_group("registry call");
    // An adaptive seat reads the clock twice (taken, given back).
    group.bench_function("StdClock::now_nanos", |b| {
        b.iter(|| {
            black_box(bulkhead_std::bulkhead_core::limit::Clock::now_nanos(
                &StdClock,
            ))
        })
    });
    let bare = registry.get("fixed").unwrap();
    group.bench_function("bare try_acquire + release", |b| {
        b.iter(|| black_box(bare.try_acquire().unwrap()))
    });
    for name in ["fixed", "adaptive"] {
        group.bench_function(
            format!("Registry::acquire_blocking + release, {name}"),
            |b| b.iter(|| black_box(registry.acquire_blocking(black_box(name)).unwrap())),
        );
        let domain = registry.domain(name).unwrap();
        group.bench_function(format!("Domain::try_acquire + release, {name}"), |b| {
            b.iter(|| black_box(domain.try_acquire().unwrap()))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("registry tower request");
    bench_layer(
        &mut group,
        "BulkheadLayer::new (bare compartment)",
        bulkhead_tokio::BulkheadLayer::new(registry.get("fixed").unwrap()),
    );
    for name in ["fixed", "adaptive"] {
        let layer = bulkhead_tokio::BulkheadLayer::from_registry(&registry, name).unwrap();
        assert_eq!(layer.is_adaptive(), name == "adaptive");
        bench_layer(&mut group, &format!("from_registry, {name}"), layer);
    }
    group.finish();
}

/// One request through `layer` over a ready inner service, polled by hand.
fn bench_layer<H: bulkhead_tokio::LayerHandle>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    label: &str,
    layer: bulkhead_tokio::BulkheadLayer<H>,
) {
    let echo = tower::service_fn(|n: u32| std::future::ready(Ok::<_, std::convert::Infallible>(n)));
    let mut cx = Context::from_waker(Waker::noop());
    let mut svc = tower::Layer::layer(&layer, echo);
    group.bench_function(label, |b| {
        b.iter(|| {
            let response = pin!(tower::Service::call(&mut svc, black_box(1)));
            match response.poll(&mut cx) {
                Poll::Ready(r) => black_box(r.unwrap()),
                Poll::Pending => unreachable!("a ready inner service"),
            }
        })
    });
}

criterion_group!(benches, registry_paths);
criterion_main!(benches);
