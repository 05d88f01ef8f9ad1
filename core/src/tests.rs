//! Unit tests of the engine. They run under miri too (`.ci/run`), so they
//! use no real time and keep thread counts small.
//!
//! A test that needs a feature is compiled only with it; the test modules'
//! shared imports then go partly unused in builds without it.
#![cfg_attr(
    not(all(feature = "barging", feature = "queue-limits")),
    allow(unused_imports, dead_code)
)]

use std::boxed::Box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, TryLockError};
use std::task::{Context, Poll, Wake, Waker};
use std::vec::Vec;

use crate::{Bulkhead, Config, RawLock};

#[cfg(feature = "barging")]
mod barging;
#[cfg(feature = "barging")]
mod bounded;
mod cancel;
mod drain;
mod fifo;
#[cfg(feature = "weights")]
mod if_free;
mod layout;
mod lifecycle;
mod list;
mod max_wait;
mod max_wait_edges;
mod memory;
#[cfg(all(
    feature = "weights",
    feature = "lifo",
    feature = "barging",
    feature = "queue-limits"
))]
mod model;
mod mutants;
#[cfg(feature = "alloc")]
mod names;
#[cfg(feature = "lifo")]
mod order;
mod owned;
mod queued;
pub(crate) mod review;
#[cfg(all(
    feature = "weights",
    feature = "lifo",
    feature = "barging",
    feature = "queue-limits"
))]
mod review_w;
mod soundness;
#[path = "../tests/watchdog/mod.rs"]
mod watchdog;
#[cfg(feature = "weights")]
mod weighted;
#[cfg(all(feature = "weights", feature = "barging"))]
mod weighted_barging;

/// Runs the test `name` alone in a child process (this test binary), with
/// the variable `child_var` set so that the test runs its scenario, and
/// checks that the child aborted (SIGABRT on Unix) rather than exiting or
/// panicking normally. Returns the child's stderr for further checks.
pub(crate) fn run_aborting_child(name: &str, child_var: &str) -> std::string::String {
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--test-threads=1", "--nocapture"])
        .env(child_var, "1")
        .output()
        .unwrap();
    let stderr = std::string::String::from_utf8_lossy(&child.stderr).into_owned();
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            child.status.signal(),
            Some(6),
            "the child did not abort (SIGABRT): {:?}\n{stderr}",
            child.status
        );
    }
    assert!(!child.status.success(), "the child survived:\n{stderr}");
    stderr
}

/// A std mutex as the waiter-list lock, as `bulkhead-std` provides it,
/// with the compartment's counts in an `AtomicCounts`.
#[derive(Default)]
pub(crate) struct TestLock(Mutex<()>, crate::AtomicCounts);

// SAFETY: std's mutex excludes, orders with acquire/release, fails `try_lock`
// only when held, and unlocks when its guard drops during unwinding.
unsafe impl RawLock for TestLock {
    unsafe fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
        let _guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f()
    }

    unsafe fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        let _guard = match self.0.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        Some(f())
    }

    fn record_rejection(&self) {
        self.1.record_rejection();
    }

    fn record_timeout(&self) {
        self.1.record_timeout();
    }

    fn counts(&self) -> crate::Counts {
        self.1.get()
    }
}

pub(crate) type TestBulkhead = Bulkhead<TestLock>;

pub(crate) fn fifo(max: usize) -> TestBulkhead {
    Bulkhead::with_lock(Config::new("test", max), TestLock::default()).unwrap()
}

pub(crate) fn with_config(config: Config) -> TestBulkhead {
    Bulkhead::with_lock(config, TestLock::default()).unwrap()
}

/// A waker that counts its wake-ups.
#[derive(Default)]
pub(crate) struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A task stand-in: a waker plus how often it was woken.
pub(crate) struct Task {
    counter: Arc<CountingWaker>,
    waker: Waker,
}

impl Task {
    pub(crate) fn new() -> Self {
        let counter = Arc::new(CountingWaker::default());
        Self {
            waker: Waker::from(counter.clone()),
            counter,
        }
    }

    pub(crate) fn wakes(&self) -> usize {
        self.counter.0.load(Ordering::SeqCst)
    }

    pub(crate) fn poll<F: Future>(&self, fut: std::pin::Pin<&mut F>) -> Poll<F::Output> {
        fut.poll(&mut Context::from_waker(&self.waker))
    }
}

/// Boxes and pins a future so that tests can hold several and drop them in
/// any order.
pub(crate) fn boxed<F: Future>(f: F) -> std::pin::Pin<Box<F>> {
    Box::pin(f)
}

/// The error of a ready, failed poll.
pub(crate) fn ready_err<T>(p: Poll<Result<T, crate::Error>>) -> crate::Error {
    match p {
        Poll::Ready(Err(e)) => e,
        Poll::Ready(Ok(_)) => panic!("expected an error, got a seat"),
        Poll::Pending => panic!("expected an error, got Pending"),
    }
}

/// Leaks `value` on purpose and keeps it reachable from a static, so that
/// miri's leak check (which ignores memory reachable from statics) does not
/// report the leaks these tests make deliberately.
pub(crate) fn leak<T: Send + 'static>(value: T) -> &'static mut T {
    use std::sync::Mutex;
    static KEPT: Mutex<Vec<Kept>> = Mutex::new(Vec::new());
    let leaked = Box::leak(Box::new(value));
    KEPT.lock().unwrap().push(Kept {
        _anchor: (&raw mut *leaked).cast(),
    });
    leaked
}

/// Never dereferenced; it only keeps a leaked allocation reachable.
struct Kept {
    _anchor: *mut (),
}
// SAFETY: the pointer is never dereferenced, so sending it is harmless.
unsafe impl Send for Kept {}
