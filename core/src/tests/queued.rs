//! `has_queued`: whether a wait joined the line, including a wait that
//! queued and was handed its seat within that same poll.

use std::boxed::Box;
use std::sync::Mutex;
use std::task::Poll;

use super::{Task, TestLock, boxed, leak, ready_err};
use crate::{Admission, Bulkhead, Config, Error, OwnedSeat, RawLock};

type Hook = Box<dyn FnOnce() + Send>;

/// A `TestLock` that runs a hook once before it locks, and one once right
/// after a section's closure, with the lock still held. A seat given back
/// in the second finds the lock held, so its try fails and the section's
/// holder drains it after unlocking (rule 1's re-check), inside the
/// holder's own call.
#[derive(Default)]
struct AfterLock {
    inner: TestLock,
    before: Mutex<Option<Hook>>,
    after: Mutex<Option<Hook>>,
}

// SAFETY: delegates to `TestLock`; the hooks are the test's own code and
// only give seats back, which core supports from anywhere (a release whose
// try fails while the second hook runs inside the lock is the delegated
// release of rule 1).
unsafe impl RawLock for AfterLock {
    unsafe fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
        let before = self.before.lock().unwrap().take();
        if let Some(hook) = before {
            hook();
        }
        // SAFETY: forwarded from our own caller.
        unsafe {
            self.inner.with_lock(|| {
                let r = f();
                let after = self.after.lock().unwrap().take();
                if let Some(hook) = after {
                    hook();
                }
                r
            })
        }
    }
    unsafe fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        // SAFETY: forwarded from our own caller.
        unsafe { self.inner.try_with_lock(f) }
    }
    // This test reads no counts.
    fn counts(&self) -> crate::Counts {
        crate::Counts::NONE
    }
}

fn after_lock(config: Config) -> &'static Bulkhead<AfterLock> {
    leak(Bulkhead::with_lock(config, AfterLock::default()).unwrap())
}

/// The only seat is given back inside the section that links the wait:
/// the drain after that section hands it to the wait, whose first poll
/// returns the seat. It queued, though no poll returned `Pending`.
#[test]
fn a_wait_handed_its_seat_in_the_poll_that_queued_it_has_queued() {
    let b = after_lock(Config::new("handed", 1));
    let held = b.try_acquire().unwrap();
    *b.raw_lock().after.lock().unwrap() = Some(Box::new(move || drop(held)));
    let mut wait = boxed(b.acquire());
    assert!(!wait.has_queued(), "not polled yet");
    let Poll::Ready(Ok(seat)) = Task::new().poll(wait.as_mut()) else {
        panic!("the seat given back while the wait linked is handed to it in that poll")
    };
    assert!(wait.has_queued(), "it was linked before the seat came");
    assert_eq!(b.state().active, 1);
    drop(seat);
    assert_eq!(b.state().active, 0);
}

/// The same for the timed and the owned wait.
#[test]
fn timed_and_owned_waits_report_an_in_poll_hand_off() {
    let b = after_lock(Config::new("handed", 1));
    let held = b.try_acquire().unwrap();
    *b.raw_lock().after.lock().unwrap() = Some(Box::new(move || drop(held)));
    let mut wait = boxed(b.acquire_timeout(core::time::Duration::from_secs(1), |_| {
        core::future::pending::<()>()
    }));
    assert!(matches!(
        Task::new().poll(wait.as_mut()),
        Poll::Ready(Ok(_))
    ));
    assert!(wait.has_queued());

    let owned = std::sync::Arc::new(
        Bulkhead::with_lock(Config::new("owned", 1), AfterLock::default()).unwrap(),
    );
    let held = OwnedSeat::try_acquire(owned.clone()).unwrap();
    *owned.raw_lock().after.lock().unwrap() = Some(Box::new(move || drop(held)));
    let mut wait = boxed(OwnedSeat::acquire(owned.clone()));
    assert!(!wait.has_queued());
    let Poll::Ready(Ok(seat)) = Task::new().poll(wait.as_mut()) else {
        panic!("handed over in the first poll")
    };
    assert!(
        wait.has_queued(),
        "still known after the inner wait is gone"
    );
    drop(seat);
    assert_eq!(owned.state().active, 0);
}

/// The other outcomes: the fast path, a free seat taken under the lock,
/// a refusal, a wait that returned `Pending`, and one that left the line.
#[cfg(all(feature = "barging", feature = "queue-limits"))]
#[test]
fn only_a_linked_wait_has_queued() {
    for admission in [
        Admission::Fifo,
        Admission::Barging,
        Admission::BoundedBarging,
    ] {
        let b = after_lock(Config::new("q", 1).max_waiting(1).admission(admission));
        let t = Task::new();

        let mut fast = boxed(b.acquire());
        let Poll::Ready(Ok(seat)) = t.poll(fast.as_mut()) else {
            panic!("a free seat")
        };
        assert!(!fast.has_queued(), "{admission:?}: the fast path");

        // The fast path finds no seat; the seat is given back before the
        // slow path locks, and its section takes it without linking.
        *b.raw_lock().before.lock().unwrap() = Some(Box::new(move || drop(seat)));
        let mut under_lock = boxed(b.acquire());
        let Poll::Ready(Ok(seat)) = t.poll(under_lock.as_mut()) else {
            panic!("{admission:?}: the seat freed before the lock")
        };
        assert!(
            b.raw_lock().before.lock().unwrap().is_none(),
            "{admission:?}: the slow path ran"
        );
        assert!(
            !under_lock.has_queued(),
            "{admission:?}: a free seat under the lock"
        );
        drop(seat);

        let held = b.try_acquire().unwrap();
        let mut waiting = boxed(b.acquire());
        assert!(t.poll(waiting.as_mut()).is_pending());
        assert!(waiting.has_queued(), "{admission:?}: pending");
        let mut refused = boxed(b.acquire());
        assert_eq!(
            ready_err(t.poll(refused.as_mut())),
            Error::QueueFull {
                name: "q".into(),
                max_waiting: 1
            }
        );
        assert!(!refused.has_queued(), "{admission:?}: refused");
        assert!(waiting.as_mut().abandon().is_none());
        assert!(
            waiting.has_queued(),
            "{admission:?}: still, after leaving the line"
        );
        drop(held);
        assert_eq!(b.state().active, 0);
    }
}
