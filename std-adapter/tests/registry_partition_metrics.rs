//! Per-partition metrics of a partitioned registry compartment, checked
//! with metrics-util's debugging recorder.
#![cfg(feature = "metrics")]

use bulkhead_std::MaxWait;
use bulkhead_std::bulkhead_core::partition::{Amount, PartitionConfig};
use bulkhead_std::metrics as bm;
use bulkhead_std::registry::{DomainConfig, Registry};
use metrics::Unit;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};

static PARTS: [PartitionConfig; 2] = [
    PartitionConfig::new("live", Amount::Seats(6)).priority(1),
    PartitionConfig::new("batch", Amount::Seats(2)).borrow(Amount::Seats(3)),
];
const DB: DomainConfig = DomainConfig::new(8)
    .max_wait(MaxWait::from_millis(2))
    .partitions(&PARTS);

#[test]
fn each_partition_publishes_its_gauges_and_counters() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    ::metrics::with_local_recorder(&recorder, || {
        let registry = Registry::local();
        registry.get_or_create_partitioned("pdb", DB).unwrap();
        let live = registry.partition("pdb", "live").unwrap();
        let batch = registry.partition("pdb", "batch").unwrap();
        // Batch holds its 2 and borrows 3 of live's idle seats.
        let night: Vec<_> = (0..5).map(|_| batch.try_acquire().unwrap()).collect();
        assert!(batch.try_acquire().is_err()); // rejected: its borrowing limit
        assert!(batch.acquire_blocking().is_err()); // the 2 ms budget runs out
        let day = live.try_acquire().unwrap();
        bm::publish_registry(&registry);
        drop((night, day));
    });
    let all = snapshotter.snapshot().into_vec();
    let find = |metric: &str, partition: &str| {
        all.iter()
            .find(|(k, ..)| {
                let labels: Vec<_> = k
                    .key()
                    .labels()
                    .map(|l| (l.key().to_owned(), l.value().to_owned()))
                    .collect();
                k.key().name() == metric
                    && labels.contains(&("name".into(), "pdb".into()))
                    && labels.contains(&("partition".into(), partition.into()))
            })
            .map(|(_, unit, description, v)| (*unit, description.is_some(), v))
    };
    let check = |metric: &str, partition: &str, expected: DebugValue| {
        assert_eq!(
            find(metric, partition),
            Some((Some(Unit::Count), true, &expected)),
            "{metric} {partition}"
        );
    };
    let gauge = |v: f64| DebugValue::Gauge(v.into());
    check(bm::PARTITION_ACTIVE, "batch", gauge(5.0));
    check(bm::PARTITION_BORROWED, "batch", gauge(3.0));
    check(bm::PARTITION_SHARE, "batch", gauge(2.0));
    check(bm::PARTITION_WAITING, "batch", gauge(0.0));
    check(bm::PARTITION_REJECTED, "batch", DebugValue::Counter(1));
    check(bm::PARTITION_TIMED_OUT, "batch", DebugValue::Counter(1));
    check(bm::PARTITION_ACTIVE, "live", gauge(1.0));
    check(bm::PARTITION_LENT, "live", gauge(3.0));
    check(bm::PARTITION_SHARE, "live", gauge(6.0));
    check(bm::PARTITION_REJECTED, "live", DebugValue::Counter(0));
    // The compartment's own series sum its partitions.
    let active = all
        .iter()
        .find(|(k, ..)| {
            k.key().name() == bm::ACTIVE && k.key().labels().any(|l| l.value() == "pdb")
        })
        .map(|(.., v)| v);
    assert_eq!(active, Some(&gauge(6.0)));
}
