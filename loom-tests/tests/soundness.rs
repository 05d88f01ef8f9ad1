//! Models of the soundness fixes: a waiting future whose lock
//! refuses (panics before running the closure) while a release races it,
//! and a poll cut short by a panic on `enqueue`'s rejection path, re-polled
//! while a release races it.
//!
//! Each model fails if its fix is removed: without the settle-on-unwind
//! guard in `Acquire::give_up`, the dropped future leaves its node linked
//! (`waiting` stays 1) or loses a seat granted to it at that moment; without
//! the re-run of a cut-short `enqueue`, the second poll stays `Pending`.
#![cfg(bulkhead_loom)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

use bulkhead_core::{Admission, Bulkhead, Config, Counts, Error, LoomLock, OwnedSeat, RawLock};
use loom::sync::Arc;
use loom::thread;

/// `LoomLock`, whose `with_lock` refuses (panics before running the
/// closure) once when armed, as embassy's `ThreadModeRawMutex` does off
/// thread mode. `try_with_lock`, the release's path, never refuses.
#[derive(Default)]
struct RefusingLock {
    inner: LoomLock,
    armed: AtomicBool,
}

// SAFETY: delegates to `LoomLock`, which keeps promises 1 to 3 (it unlocks
// through a drop guard, also while unwinding); the refusal comes before
// the closure, without the lock held (promise 4).
unsafe impl RawLock for RefusingLock {
    unsafe fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
        if self.armed.swap(false, Ordering::SeqCst) {
            panic!("RefusingLock: refused");
        }
        // SAFETY: forwarded from our own caller.
        unsafe { self.inner.with_lock(f) }
    }
    unsafe fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        // SAFETY: forwarded from our own caller.
        unsafe { self.inner.try_with_lock(f) }
    }
    // The counts are the lock's: kept by the inner lock's `AtomicCounts`.
    fn record_rejection(&self) {
        self.inner.record_rejection();
    }
    fn record_timeout(&self) {
        self.inner.record_timeout();
    }
    fn counts(&self) -> Counts {
        self.inner.counts()
    }
}

fn refusing(admission: Admission) -> Arc<Bulkhead<RefusingLock>> {
    Arc::new(
        Bulkhead::with_lock(
            Config::new("loom", 1).admission(admission),
            RefusingLock::default(),
        )
        .unwrap(),
    )
}

/// The main thread drops a queued waiter while its lock refuses once; a
/// release races the drop (it may grant the node before, between or after
/// the refusal and the retry). The node must end unlinked, and the seat
/// either with nobody or given back: quiescent.
fn dropped_waiter_with_a_refusing_lock_races_a_release(admission: Admission) {
    loom::model(move || {
        let b = refusing(admission);
        let seat = OwnedSeat::try_acquire(b.clone()).unwrap();
        let mut waiter = Box::pin(b.acquire());
        assert!(
            waiter
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop()))
                .is_pending()
        );
        b.raw_lock().armed.store(true, Ordering::SeqCst);
        let releaser = thread::spawn(move || drop(seat));
        // Refused unless the release granted the node first (FIFO), in
        // which case the drop needs no lock and passes the seat on.
        let _ = catch_unwind(AssertUnwindSafe(|| drop(waiter)));
        releaser.join().unwrap();
        b.raw_lock().armed.store(false, Ordering::SeqCst);
        let s = b.state();
        assert_eq!((s.active, s.waiting), (0, 0), "not quiescent: {s:?}");
        assert!(b.try_acquire().is_ok());
    });
}

#[test]
fn a_fifo_waiter_dropped_while_its_lock_refuses_races_a_release() {
    dropped_waiter_with_a_refusing_lock_races_a_release(Admission::Fifo);
}

#[test]
fn a_barging_waiter_dropped_while_its_lock_refuses_races_a_release() {
    dropped_waiter_with_a_refusing_lock_races_a_release(Admission::Barging);
}

/// A waker whose drop panics once armed (`data` is a `&'static AtomicBool`).
fn drop_panicking_waker(armed: &'static AtomicBool) -> Waker {
    fn clone(data: *const ()) -> RawWaker {
        RawWaker::new(data, &VTABLE)
    }
    fn noop(_: *const ()) {}
    fn drop(data: *const ()) {
        // SAFETY: `data` is the `&'static AtomicBool` the waker was made of.
        let armed = unsafe { &*data.cast::<AtomicBool>() };
        if armed.swap(false, Ordering::SeqCst) {
            panic!("waker panicked on drop");
        }
    }
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, noop, noop, drop);
    // SAFETY: the data pointer is `'static` and never freed; clone copies
    // it, wake does nothing, drop only reads the flag.
    unsafe { Waker::from_raw(RawWaker::new((armed as *const AtomicBool).cast(), &VTABLE)) }
}

/// A poll on a compartment with no queue (`max_waiting(0)`) whose stale
/// waker panics when `enqueue` drops it, racing the release of the only
/// seat: `enqueue` either takes the seat or reports `QueueFull`, and the
/// panic cuts the poll short either way. The next poll must finish (a seat,
/// or `QueueFull` counted once), never stay `Pending`.
#[test]
fn a_poll_cut_short_by_a_panic_is_finished_by_the_next_one_while_a_release_races() {
    loom::model(|| {
        // Leaked per execution: the waker's data must be `'static`.
        let armed: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(true)));
        let b = Arc::new(
            Bulkhead::with_lock(
                Config::new("loom", 1).max_waiting(0),
                RefusingLock::default(),
            )
            .unwrap(),
        );
        let seat = OwnedSeat::try_acquire(b.clone()).unwrap();
        let releaser = thread::spawn(move || drop(seat));
        let waker = drop_panicking_waker(armed);
        let mut waiter = Box::pin(b.acquire());
        let first = catch_unwind(AssertUnwindSafe(|| {
            waiter.as_mut().poll(&mut Context::from_waker(&waker))
        }));
        let outcome = match first {
            Ok(Poll::Ready(r)) => r.map(drop),
            Ok(Poll::Pending) => unreachable!("no queue: never Pending"),
            Err(_) => match waiter
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop()))
            {
                Poll::Ready(r) => r.map(drop),
                Poll::Pending => panic!("re-polled after a panic: stuck in Pending"),
            },
        };
        match outcome {
            Ok(()) => assert_eq!(b.state().rejected, 0),
            Err(Error::QueueFull { .. }) => assert_eq!(b.state().rejected, 1),
            Err(e) => panic!("{e:?}"),
        }
        drop(waiter);
        // If the fast path won, the waker was never cloned or dropped.
        armed.store(false, Ordering::SeqCst);
        drop(waker);
        releaser.join().unwrap();
        let s = b.state();
        assert_eq!((s.active, s.waiting), (0, 0), "not quiescent: {s:?}");
    });
}

/// Counts its wake-ups.
#[derive(Default)]
struct Wakes(std::sync::atomic::AtomicUsize);
impl std::task::Wake for Wakes {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Barging, the partitioned list: two waiters are woken, both lose their
/// races to the main thread, which took both seats back, so both go back to
/// waiting (the first to lose moves behind the other, the second stays at
/// the boundary). Then two releases race, one on another thread: each must
/// wake a different waiter. A boundary left pointing at the wrong node
/// wakes one twice and strands the other.
#[test]
fn two_woken_barging_waiters_that_lose_are_each_woken_again() {
    loom::model(|| {
        let b = bulkhead_loom_tests::barging(2);
        let s1 = b.try_acquire().unwrap();
        let s2 = b.try_acquire().unwrap();
        let wakes = [
            std::sync::Arc::new(Wakes::default()),
            std::sync::Arc::new(Wakes::default()),
        ];
        let wakers = wakes.clone().map(Waker::from);
        let mut waiters = [Box::pin(b.acquire()), Box::pin(b.acquire())];
        for (w, waker) in waiters.iter_mut().zip(&wakers) {
            assert!(
                w.as_mut()
                    .poll(&mut Context::from_waker(waker))
                    .is_pending()
            );
        }
        drop((s1, s2)); // both woken
        let s1 = b.try_acquire().unwrap(); // barge in
        let s2 = OwnedSeat::try_acquire(b.clone()).unwrap();
        for (w, waker) in waiters.iter_mut().zip(&wakers) {
            assert!(
                w.as_mut()
                    .poll(&mut Context::from_waker(waker))
                    .is_pending()
            );
        }
        let before = wakes.each_ref().map(|w| w.0.load(Ordering::SeqCst));
        assert_eq!(before, [1, 1]);
        let releaser = thread::spawn(move || drop(s2));
        drop(s1);
        releaser.join().unwrap();
        let after = wakes.each_ref().map(|w| w.0.load(Ordering::SeqCst));
        assert_eq!(after, [2, 2], "each loser woken once more");
        for w in &mut waiters {
            let Poll::Ready(Ok(seat)) = w.as_mut().poll(&mut Context::from_waker(Waker::noop()))
            else {
                panic!("a woken waiter found no seat")
            };
            drop(seat);
        }
        drop(waiters);
        bulkhead_loom_tests::assert_quiescent(&b);
    });
}

/// Rule 8 with a lock that refuses: the notified oldest waiter, which
/// covers the free seat, is dropped while its lock refuses once, racing a
/// barger whose release may skip the lock on its account. The retry while
/// unwinding unlinks it and stops counting it, so the younger waiter (on
/// the main thread, never polled again) must have been woken for the seat.
#[test]
fn a_covered_release_races_a_notified_waiter_dropped_while_its_lock_refuses() {
    loom::model(|| {
        let b = refusing(Admission::Barging);
        let seat = b.try_acquire().unwrap();
        let mut oldest = Box::pin(b.acquire());
        let noop = &mut Context::from_waker(Waker::noop());
        assert!(oldest.as_mut().poll(noop).is_pending());
        let wakes = std::sync::Arc::new(Wakes::default());
        let waker = Waker::from(wakes.clone());
        let mut younger = Box::pin(b.acquire());
        assert!(
            younger
                .as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
        );
        drop(seat); // notifies the oldest, which now covers the seat
        b.raw_lock().armed.store(true, Ordering::SeqCst);
        let barger = {
            let b = b.clone();
            thread::spawn(move || drop(b.try_acquire()))
        };
        let _ = catch_unwind(AssertUnwindSafe(|| drop(oldest)));
        barger.join().unwrap();
        b.raw_lock().armed.store(false, Ordering::SeqCst);
        let s = b.state();
        assert_eq!((s.active, s.waiting), (0, 1), "{s:?}");
        assert_eq!(
            wakes.0.load(Ordering::SeqCst),
            1,
            "a free seat, and the waiter left in line was never woken"
        );
        let Poll::Ready(Ok(seat)) = younger.as_mut().poll(noop) else {
            panic!("the woken waiter found no seat")
        };
        drop(seat);
        drop(younger);
        let s = b.state();
        assert_eq!((s.active, s.waiting), (0, 0), "not quiescent: {s:?}");
    });
}
