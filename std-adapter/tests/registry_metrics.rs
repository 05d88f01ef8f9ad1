//! Metrics recorded for registered compartments, checked with
//! metrics-util's debugging recorder.
#![cfg(feature = "metrics")]

use std::sync::Arc;
use std::time::Duration;

use bulkhead_std::metrics::{self as bm, MetricsUpdater};
use bulkhead_std::registry::{DomainConfig, Registry};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};

#[test]
fn helpers_and_publication_record_every_series() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    ::metrics::with_local_recorder(&recorder, || {
        let registry = Registry::local();
        registry
            .get_or_create("m", DomainConfig::new(1).max_wait(Duration::from_millis(5)))
            .unwrap();
        registry.execute("m", || ()).unwrap();
        let seat = registry.acquire("m").unwrap();
        assert!(registry.execute("m", || ()).is_err()); // times out
        bm::publish_registry(&registry);
        drop(seat);
    });
    // Snapshots drain counters and histograms: check them in one snapshot.
    let all = snapshotter.snapshot().into_vec();
    let find = |metric: &str| {
        all.iter()
            .find(|(k, ..)| k.key().name() == metric && k.key().labels().any(|l| l.value() == "m"))
            .map(|(.., v)| v)
    };
    assert_eq!(find(bm::ACTIVE), Some(&DebugValue::Gauge(1.0.into())));
    assert_eq!(find(bm::ADMITTED), Some(&DebugValue::Counter(2)));
    assert_eq!(find(bm::TIMED_OUT), Some(&DebugValue::Counter(1)));
    assert_eq!(find(bm::REJECTED), Some(&DebugValue::Counter(0)));
    assert_eq!(find(bm::WAITING), Some(&DebugValue::Gauge(0.0.into())));
    assert_eq!(
        find(bm::MAX_CONCURRENT),
        Some(&DebugValue::Gauge(1.0.into()))
    );
    match find(bm::WAIT_SECONDS) {
        Some(DebugValue::Histogram(samples)) => assert_eq!(samples.len(), 2),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_updater_starts_publishes_and_stops_promptly() {
    let registry = Arc::new(Registry::local());
    let updater = MetricsUpdater::start(&registry, Duration::from_secs(3600)).unwrap();
    let started = std::time::Instant::now();
    updater.stop();
    assert!(started.elapsed() < Duration::from_secs(5));
    // Dropping the registry ends an updater that is not stopped.
    let updater = MetricsUpdater::start(&registry, Duration::from_millis(1)).unwrap();
    drop(registry);
    drop(updater);
}
