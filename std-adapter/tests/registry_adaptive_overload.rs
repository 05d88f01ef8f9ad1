//! An adaptive registry compartment never grows while its calls fail,
//! whatever the algorithm: the guide's own example limit
//! (`gradient2`, `min = 4`) included.

use bulkhead_std::bulkhead_core::limit::CallOutcome;
use bulkhead_std::registry::{DomainConfig, Registry};
use bulkhead_std::{Algorithm, LimitConfig};

fn limit(registry: &Registry, name: &str) -> usize {
    registry.get(name).unwrap().state().max_concurrent
}

/// Every seat taken, then every call given back as `outcome`: failures at
/// full load.
fn failing_round_at_full_load(registry: &Registry, name: &str, outcome: CallOutcome) {
    let n = limit(registry, name);
    let seats: Vec<_> = (0..n)
        .map(|_| registry.acquire_blocking(name).unwrap())
        .collect();
    for seat in seats {
        seat.record(outcome);
    }
}

#[test]
fn a_domain_whose_every_call_fails_at_full_load_never_grows() {
    for algorithm in Algorithm::ALL {
        for outcome in [CallOutcome::Dropped, CallOutcome::Timeout] {
            let registry = Registry::local();
            let config = LimitConfig {
                min: Some(4),
                max: Some(200),
                ..LimitConfig::new(algorithm)
            };
            registry
                .get_or_create("search", DomainConfig::new(5).limit(config))
                .unwrap();
            let mut limits = vec![limit(&registry, "search")];
            for _ in 0..20 {
                failing_round_at_full_load(&registry, "search", outcome);
                limits.push(limit(&registry, "search"));
            }
            assert!(
                limits.windows(2).all(|w| w[1] <= w[0]),
                "{} with every call {outcome:?}: {limits:?}",
                algorithm.name()
            );
            assert_eq!(registry.get("search").unwrap().state().active, 0);
        }
    }
}
