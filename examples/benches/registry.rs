//! What an adaptive registry compartment adds to a call through the
//! registry: `Registry::acquire` plus giving the seat back, for a static
//! compartment and for an adaptive one (AIMD, app-limited, so the limit
//! holds: the common case), with a bare `try_acquire` on the compartment
//! as the floor and the clock read an adaptive seat makes twice, all in
//! one run. `cargo bench -p bulkhead-examples --bench
//! registry`.

use std::hint::black_box;

use bulkhead_std::registry::{DomainConfig, Registry};
use bulkhead_std::{Algorithm, LimitConfig, StdClock};
use criterion::{Criterion, criterion_group, criterion_main};

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
        b.iter(|| black_box(bulkhead_std::core::limit::Clock::now_nanos(&StdClock)))
    });
    let bare = registry.get("fixed").unwrap();
    group.bench_function("bare try_acquire + release", |b| {
        b.iter(|| black_box(bare.try_acquire().unwrap()))
    });
    for name in ["fixed", "adaptive"] {
        group.bench_function(format!("Registry::acquire + release, {name}"), |b| {
            b.iter(|| black_box(registry.acquire(black_box(name)).unwrap()))
        });
        let domain = registry.domain(name).unwrap();
        group.bench_function(format!("Domain::try_acquire + release, {name}"), |b| {
            b.iter(|| black_box(domain.try_acquire().unwrap()))
        });
    }
    group.finish();
}

criterion_group!(benches, registry_paths);
criterion_main!(benches);
