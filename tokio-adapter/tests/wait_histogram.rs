//! Every tokio wait that queued is in `bulkhead_wait_seconds`, once: also
//! a wait that was handed its seat within the very poll that queued it,
//! forced here by a lock that gives the only seat back, from another
//! thread, while the waiter's linking section still holds it.

use std::sync::{Arc, Mutex, TryLockError};
use std::thread;
use std::time::Duration;

use bulkhead_std::metrics as bm;
use bulkhead_tokio::TokioAcquire;
use bulkhead_tokio::bulkhead_core::{Bulkhead, Config, OwnedSeat, RawLock};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};

type Hook = Box<dyn FnOnce() + Send>;

/// A std mutex that runs a hook once right after a section's closure,
/// with the mutex still held.
#[derive(Default)]
struct AfterLock {
    mutex: Mutex<()>,
    after: Mutex<Option<Hook>>,
}

// SAFETY: std's mutex excludes, orders with acquire/release, fails
// `try_lock` only while held, and unlocks when its guard drops, also while
// unwinding. The hook is this test's own code and only gives a seat back
// on another thread, whose try finds the mutex held (core's delegated
// release).
unsafe impl RawLock for AfterLock {
    unsafe fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
        let _guard = self.mutex.lock().unwrap_or_else(|p| p.into_inner());
        let r = f();
        let after = self.after.lock().unwrap().take();
        if let Some(hook) = after {
            hook();
        }
        r
    }

    unsafe fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        let _guard = match self.mutex.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        Some(f())
    }
    // This test reads no counts.
    fn counts(&self) -> bulkhead_core::Counts {
        bulkhead_core::Counts::NONE
    }
}

/// A full compartment `name` whose only seat is given back, on another
/// thread, inside the next lock section: the section of the wait that
/// queues next, which is then handed the seat before its poll returns.
fn handed_over(name: &'static str) -> Arc<Bulkhead<AfterLock>> {
    let b = Arc::new(Bulkhead::with_lock(Config::new(name, 1), AfterLock::default()).unwrap());
    let held = OwnedSeat::try_acquire(Arc::clone(&b)).unwrap();
    *b.raw_lock().after.lock().unwrap() = Some(Box::new(move || {
        thread::spawn(move || drop(held)).join().unwrap();
    }));
    b
}

fn handed(b: &Bulkhead<AfterLock>) -> bool {
    b.raw_lock().after.lock().unwrap().is_none()
}

type Snapshot = Vec<(
    metrics_util::CompositeKey,
    Option<metrics::Unit>,
    Option<metrics::SharedString>,
    DebugValue,
)>;

/// How many waits `name` recorded in `bulkhead_wait_seconds`.
fn recorded_waits(snapshot: &Snapshot, name: &str) -> usize {
    snapshot
        .iter()
        .filter(|(k, ..)| {
            k.key().name() == bm::WAIT_SECONDS && k.key().labels().any(|l| l.value() == name)
        })
        .map(|(.., v)| match v {
            DebugValue::Histogram(samples) => samples.len(),
            other => panic!("{other:?}"),
        })
        .sum()
}

#[test]
fn a_wait_handed_its_seat_in_the_poll_that_queued_it_is_recorded_once() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorder, || {
        bm::describe(); // metrics in use: from now on waits are timed
        runtime.block_on(async {
            let b = handed_over("within");
            drop(b.acquire_within(Duration::from_secs(30)).await.unwrap());
            assert!(handed(&b), "acquire_within: the seat was handed over");

            let b = handed_over("owned");
            drop(
                Arc::clone(&b)
                    .acquire_within_owned(Duration::from_secs(30))
                    .await
                    .unwrap(),
            );
            assert!(handed(&b), "acquire_within_owned: the seat was handed over");

            // Control: no queue, no entry.
            let free = bulkhead_tokio::Bulkhead::new("free", 1).unwrap();
            drop(free.acquire_within(Duration::from_secs(30)).await.unwrap());
        });
    });
    // Snapshots drain histograms: one snapshot for every check.
    let snapshot = snapshotter.snapshot().into_vec();
    let counts: Vec<_> = ["within", "owned", "free"]
        .into_iter()
        .map(|name| (name, recorded_waits(&snapshot, name)))
        .collect();
    // Each wait that queued, once; the caller that did not queue, never.
    assert_eq!(counts, [("within", 1), ("owned", 1), ("free", 0)]);
}

#[test]
fn a_partition_wait_that_queued_is_recorded_under_its_compartment() {
    use bulkhead_tokio::TokioAcquirePartition;
    use bulkhead_tokio::bulkhead_core::partition::{Amount, PartitionConfig, Partitioned};

    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorder, || {
        bm::describe();
        runtime.block_on(async {
            let p = Arc::new(
                Partitioned::<bulkhead_tokio::StdLock>::new(
                    "partitioned",
                    1,
                    &[PartitionConfig::new("only", Amount::Seats(1))],
                )
                .unwrap(),
            );
            let only = p.id("only").unwrap();
            // Not queued: no entry.
            let held = p
                .acquire_within(only, Duration::from_secs(1))
                .await
                .unwrap();
            // Queued, then timed out: no entry (`timed_out` counts it).
            assert!(
                p.acquire_within(only, Duration::from_millis(5))
                    .await
                    .is_err()
            );
            // Queued, then handed the seat: one entry.
            let waiter =
                tokio::spawn(Arc::clone(&p).acquire_within_owned(only, Duration::from_secs(1)));
            while p.partition_state(only).unwrap().waiting == 0 {
                tokio::task::yield_now().await;
            }
            drop(held);
            drop(waiter.await.unwrap().unwrap());
        });
    });
    let snapshot = snapshotter.snapshot().into_vec();
    assert_eq!(recorded_waits(&snapshot, "partitioned"), 1);
}
