//! Every wait that queued is in `bulkhead_wait_seconds`, once: also a wait
//! that was handed its seat within the very poll that queued it, forced
//! here by a lock that gives the only seat back, from another thread,
//! while the waiter's linking section still holds it.
#![cfg(feature = "metrics")]

use std::future::Future;
use std::pin::pin;
use std::sync::{Mutex, TryLockError};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::Duration;

use bulkhead_core::{Bulkhead, Config, MaxWait, RawLock};
use bulkhead_std::metrics as bm;
use bulkhead_std::{BlockingAcquire, Run};
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
fn handed_over(name: &'static str) -> &'static Bulkhead<AfterLock> {
    let b: &'static Bulkhead<AfterLock> = Box::leak(Box::new(
        Bulkhead::with_lock(Config::new(name, 1), AfterLock::default()).unwrap(),
    ));
    let held = b.try_acquire().unwrap();
    *b.raw_lock().after.lock().unwrap() = Some(Box::new(move || {
        thread::spawn(move || drop(held)).join().unwrap();
    }));
    b
}

/// Polls `wait` once; it must resolve to a seat.
fn first_poll<T>(wait: impl Future<Output = Result<T, bulkhead_core::Error>>) {
    let mut wait = pin!(wait);
    let Poll::Ready(Ok(done)) = wait.as_mut().poll(&mut Context::from_waker(Waker::noop())) else {
        panic!("the seat freed while the wait queued is handed over in its first poll")
    };
    drop(done);
}

/// How many waits `name` recorded in `bulkhead_wait_seconds`.
fn recorded_waits(
    snapshot: &[(
        metrics_util::CompositeKey,
        Option<metrics::Unit>,
        Option<metrics::SharedString>,
        DebugValue,
    )],
    name: &str,
) -> usize {
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
    metrics::with_local_recorder(&recorder, || {
        bm::describe(); // metrics in use: from now on waits are timed

        // A thread's blocking wait.
        let b = handed_over("blocking");
        let seat = b.acquire_blocking(Duration::from_secs(30)).unwrap();
        assert!(
            b.raw_lock().after.lock().unwrap().is_none(),
            "the seat was handed over"
        );
        drop(seat);

        // `Run`'s timer wait (async-std, smol, any runtime), bounded...
        let b = handed_over("timer");
        first_poll(b.run_timeout(Duration::from_secs(30), async {}, |_| {
            std::future::pending::<()>()
        }));
        // ...and unbounded.
        let b = handed_over("forever");
        first_poll(b.run_timeout(MaxWait::Forever, async {}, |_| std::future::pending::<()>()));

        // Control: a caller that did not queue records nothing.
        let b = Bulkhead::<bulkhead_std::StdLock>::new("free", 1).unwrap();
        drop(b.acquire_blocking(Duration::from_secs(30)).unwrap());
    });
    // Snapshots drain histograms: one snapshot for every check.
    let snapshot = snapshotter.snapshot().into_vec();
    let counts: Vec<_> = ["blocking", "timer", "forever", "free"]
        .into_iter()
        .map(|name| (name, recorded_waits(&snapshot, name)))
        .collect();
    // Each wait that queued, once; the caller that did not queue, never.
    assert_eq!(
        counts,
        [("blocking", 1), ("timer", 1), ("forever", 1), ("free", 0)]
    );
}
