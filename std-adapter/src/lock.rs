//! The waiter-list lock for std targets.

use std::sync::{Mutex, TryLockError};

use bulkhead_core::{ConstInit, RawLock};

/// A small mutex per compartment, so that two compartments never contend on
/// one lock (unlike a process-wide critical section).
///
/// The lock is only taken by callers that must wait, by releases that find
/// waiters, and by reconfiguration; the seat count itself is lock-free.
/// Poisoning is ignored: core never panics while holding the lock, and a
/// panicking waker runs after it is released.
#[derive(Debug, Default)]
pub struct StdLock(Mutex<()>);

impl StdLock {
    /// A new, unlocked lock.
    pub const fn new() -> Self {
        Self(Mutex::new(()))
    }
}

impl ConstInit for StdLock {
    const INIT: Self = Self::new();
}

// SAFETY: std's mutex gives mutual exclusion with acquire/release ordering;
// `try_lock` fails only while another thread holds it (`WouldBlock`), never
// spuriously; its guard unlocks on drop, also while unwinding. Core never
// re-enters the lock, so std's "re-entry may deadlock" is never triggered.
unsafe impl RawLock for StdLock {
    #[inline]
    fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
        let _guard = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        f()
    }

    #[inline]
    fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        let _guard = match self.0.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        Some(f())
    }
}
