//! The waiter-list lock for shuttle's randomized schedule tests.
//!
//! Only exists under `--cfg bulkhead_shuttle` (see `shuttle-tests/`), so
//! that users' own shuttle tests can drive code that uses a compartment.

use crate::counts::{AtomicCounts, Counts};
use crate::lock::RawLock;

/// A waiter-list lock made of shuttle's scheduler-controlled mutex.
///
/// Every lock and try-lock is a point where shuttle may switch threads, so
/// the randomized scheduler explores lock contention, including a release
/// whose try fails because another thread holds the lock.
///
/// It keeps the compartment's counts in an [`AtomicCounts`].
#[derive(Debug, Default)]
pub struct ShuttleLock(shuttle::sync::Mutex<()>, AtomicCounts);

impl ShuttleLock {
    /// A new, unlocked shuttle mutex.
    pub fn new() -> Self {
        Self(shuttle::sync::Mutex::new(()), AtomicCounts::new())
    }
}

// SAFETY: shuttle's mutex gives mutual exclusion between shuttle threads
// (its scheduler runs one at a time and orders them through the mutex),
// its `try_lock` fails with `WouldBlock` only while another thread holds
// it, and its guard unlocks on drop, also when unwinding. Its lock and
// try-lock panic only before `f` runs (outside a shuttle test, or on a
// deadlock shuttle detects), never after. A poisoned mutex is still locked
// by us, so poisoning is ignored. Each `ShuttleLock` value is its own mutex
// and serves one compartment.
unsafe impl RawLock for ShuttleLock {
    unsafe fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
        let _guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f()
    }

    unsafe fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        let _guard = match self.0.try_lock() {
            Ok(guard) => guard,
            Err(shuttle::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(shuttle::sync::TryLockError::WouldBlock) => return None,
        };
        Some(f())
    }

    fn record_rejection(&self) {
        self.1.record_rejection();
    }

    fn record_timeout(&self) {
        self.1.record_timeout();
    }

    fn counts(&self) -> Counts {
        self.1.get()
    }
}
