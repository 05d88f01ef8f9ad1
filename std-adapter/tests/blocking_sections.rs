//! How many lock sections a blocking wait costs, counted by a lock that
//! counts its sections.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, TryLockError};
use std::thread;
use std::time::Duration;

use bulkhead_core::{Admission, Bulkhead, Config, RawLock};
use bulkhead_std::BlockingAcquire;

/// A std mutex that counts the sections run under it.
#[derive(Default)]
struct CountingLock {
    mutex: Mutex<()>,
    sections: AtomicUsize,
}

// SAFETY: std's mutex gives mutual exclusion with acquire/release ordering;
// `try_lock` fails only while another thread holds this same mutex (one per
// compartment), never spuriously; its guard unlocks on drop, also while
// unwinding; nothing can panic after `f` returns. The counter is a relaxed
// atomic that neither panics nor locks.
unsafe impl RawLock for CountingLock {
    unsafe fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
        let _guard = self.mutex.lock().unwrap_or_else(|p| p.into_inner());
        self.sections.fetch_add(1, Ordering::Relaxed);
        f()
    }

    unsafe fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        let _guard = match self.mutex.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        self.sections.fetch_add(1, Ordering::Relaxed);
        Some(f())
    }
    // This test reads no counts.
    fn counts(&self) -> bulkhead_core::Counts {
        bulkhead_core::Counts::NONE
    }
}

fn sections(b: &Bulkhead<CountingLock>) -> usize {
    b.raw_lock().sections.load(Ordering::Relaxed)
}

/// A thread that must wait queues and registers its waker in one lock
/// section, then parks: no second section to swap a placeholder waker for
/// its own. Its hand-off is read without the lock.
#[test]
fn a_queued_thread_takes_the_lock_once_to_wait() {
    for admission in [
        Admission::Fifo,
        Admission::Barging,
        Admission::BoundedBarging,
    ] {
        let b = Bulkhead::with_lock(
            Config::new("sections", 1).admission(admission),
            CountingLock::default(),
        )
        .unwrap();
        let held = b.try_acquire().unwrap();
        assert_eq!(sections(&b), 0, "the fast path takes no lock");
        thread::scope(|s| {
            let waiter = s.spawn(|| {
                let seat = b.acquire_blocking(Duration::from_secs(30)).unwrap();
                drop(seat);
            });
            while b.state().waiting == 0 {
                thread::yield_now();
            }
            // Give a second, registering section the time to happen.
            thread::sleep(Duration::from_millis(50));
            assert_eq!(sections(&b), 1, "{admission:?}: lock sections to queue");
            drop(held);
            waiter.join().unwrap();
        });
        assert_eq!(b.state().active, 0);
    }
}
