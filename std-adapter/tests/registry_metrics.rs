//! Metrics recorded for registered compartments, checked with
//! metrics-util's debugging recorder.
#![cfg(feature = "metrics")]

use std::sync::Arc;
use std::time::Duration;

use bulkhead_std::MaxWait;
use bulkhead_std::metrics::{self as bm, MetricsUpdater};
use bulkhead_std::registry::{DomainConfig, Registry};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};

#[test]
fn every_path_is_counted_and_queued_waits_are_timed() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    ::metrics::with_local_recorder(&recorder, || {
        bm::describe(); // metrics in use: from now on waits are timed
        let registry = Registry::local();
        let m = registry
            .get_or_create("m", DomainConfig::new(1).max_wait(MaxWait::from_millis(5)))
            .unwrap();
        registry.execute("m", || ()).unwrap(); // helper, no wait
        drop(m.try_acquire().unwrap()); // a bare try_acquire on the registry's compartment
        // A thread that queues: the seat is freed by another thread while
        // this one waits (through `Run`'s timer wait with a 1 s budget).
        let held = bulkhead_std::OwnedSeat::try_acquire(m.clone()).unwrap();
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            drop(held);
        });
        let seat =
            bulkhead_std::BlockingAcquire::acquire_blocking(&*m, Duration::from_secs(1)).unwrap();
        releaser.join().unwrap();
        assert!(registry.execute("m", || ()).is_err()); // times out after 5 ms
        assert!(m.try_acquire().is_err()); // a bare rejection
        bm::publish_registry(&registry);
        drop(seat);
    });
    // Snapshots drain counters and histograms: check them in one snapshot.
    let all = snapshotter.snapshot().into_vec();
    let find = |metric: &str| {
        all.iter()
            .find(|(k, ..)| k.key().name() == metric && k.key().labels().any(|l| l.value() == "m"))
            .map(|(_, unit, description, v)| (*unit, description.is_some(), v))
    };
    use metrics::Unit;
    let check = |metric: &str, expected: DebugValue| {
        assert_eq!(
            find(metric),
            Some((Some(Unit::Count), true, &expected)),
            "{metric}"
        );
    };
    check(bm::ACTIVE, DebugValue::Gauge(1.0.into()));
    check(bm::ADMITTED, DebugValue::Counter(4));
    check(bm::TIMED_OUT, DebugValue::Counter(1));
    check(bm::REJECTED, DebugValue::Counter(1));
    check(bm::WAITING, DebugValue::Gauge(0.0.into()));
    check(bm::MAX_CONCURRENT, DebugValue::Gauge(1.0.into()));
    match find(bm::WAIT_SECONDS) {
        // Only the wait that queued; it lasted about the releaser's 20 ms.
        Some((Some(Unit::Seconds), true, DebugValue::Histogram(samples))) => {
            assert_eq!(samples.len(), 1, "{samples:?}");
            assert!(samples[0].into_inner() >= 0.015, "{samples:?}");
        }
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
