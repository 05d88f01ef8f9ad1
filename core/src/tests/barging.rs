//! Barging admission: wake the oldest waiter, let anyone take the seat.

use std::task::Poll;
use std::vec::Vec;

use super::{Task, boxed, with_config};
use crate::{Admission, Config, Error};

fn barging(max: usize) -> super::TestBulkhead {
    with_config(Config::new("barge", max).admission(Admission::Barging))
}

#[test]
fn an_arrival_may_take_a_freed_seat_before_the_woken_waiter() {
    let b = barging(1);
    let held = b.try_acquire().unwrap();
    let t = Task::new();
    let mut w = boxed(b.acquire());
    assert!(t.poll(w.as_mut()).is_pending());
    drop(held);
    assert_eq!(t.wakes(), 1, "the waiter is woken");
    let barger = b.try_acquire().expect("barging lets an arrival in");
    // The woken waiter loses, stays in line, and is woken again later.
    assert!(t.poll(w.as_mut()).is_pending());
    assert_eq!(b.state().waiting, 1);
    drop(barger);
    assert_eq!(t.wakes(), 2);
    assert!(matches!(t.poll(w.as_mut()), Poll::Ready(Ok(_))));
    assert_eq!(b.state().waiting, 0);
}

#[test]
fn two_quick_releases_wake_two_waiters() {
    // bug class 4 in docs/bug-classes.md (async-lock #18).
    let b = barging(2);
    let s1 = b.try_acquire().unwrap();
    let s2 = b.try_acquire().unwrap();
    let (t1, t2, t3) = (Task::new(), Task::new(), Task::new());
    let mut w1 = boxed(b.acquire());
    let mut w2 = boxed(b.acquire());
    let mut w3 = boxed(b.acquire());
    assert!(t1.poll(w1.as_mut()).is_pending());
    assert!(t2.poll(w2.as_mut()).is_pending());
    assert!(t3.poll(w3.as_mut()).is_pending());
    drop(s1);
    drop(s2);
    assert_eq!(
        (t1.wakes(), t2.wakes(), t3.wakes()),
        (1, 1, 0),
        "one wake per seat, oldest first, no herd"
    );
    let Poll::Ready(Ok(a)) = t1.poll(w1.as_mut()) else {
        panic!()
    };
    let Poll::Ready(Ok(c)) = t2.poll(w2.as_mut()) else {
        panic!()
    };
    assert!(t3.poll(w3.as_mut()).is_pending());
    drop(a);
    assert_eq!(t3.wakes(), 1);
    assert!(matches!(t3.poll(w3.as_mut()), Poll::Ready(Ok(_))));
    drop(c);
}

#[test]
fn a_dropped_notified_waiter_passes_its_wake_up_on() {
    // bug class 1 in docs/bug-classes.md in barging mode (embassy #6964).
    let b = barging(1);
    let held = b.try_acquire().unwrap();
    let (t1, t2) = (Task::new(), Task::new());
    let mut w1 = boxed(b.acquire());
    let mut w2 = boxed(b.acquire());
    assert!(t1.poll(w1.as_mut()).is_pending());
    assert!(t2.poll(w2.as_mut()).is_pending());
    drop(held);
    assert_eq!((t1.wakes(), t2.wakes()), (1, 0));
    drop(w1); // woken but never ran: the wake-up must not die with it
    assert_eq!(t2.wakes(), 1);
    assert!(matches!(t2.poll(w2.as_mut()), Poll::Ready(Ok(_))));
}

#[test]
fn a_timed_out_notified_waiter_passes_its_wake_up_on() {
    let b = barging(1);
    let held = b.try_acquire().unwrap();
    let (t1, t2) = (Task::new(), Task::new());
    let mut w1 = boxed(b.acquire());
    let mut w2 = boxed(b.acquire());
    assert!(t1.poll(w1.as_mut()).is_pending());
    assert!(t2.poll(w2.as_mut()).is_pending());
    drop(held);
    // In barging mode no seat is reserved, so the timeout wins.
    assert!(matches!(
        w1.as_mut().time_out(core::time::Duration::ZERO),
        Err(Error::Timeout { .. })
    ));
    assert_eq!(t2.wakes(), 1);
    assert!(matches!(t2.poll(w2.as_mut()), Poll::Ready(Ok(_))));
}

#[test]
fn barging_try_acquire_ignores_waiters_when_a_seat_is_free() {
    let b = barging(2);
    let s1 = b.try_acquire().unwrap();
    let s2 = b.try_acquire().unwrap();
    let t = Task::new();
    let mut w = boxed(b.acquire());
    assert!(t.poll(w.as_mut()).is_pending());
    b.set_max_concurrent(3).unwrap();
    assert_eq!(t.wakes(), 1);
    let s3 = b.try_acquire().expect("a free seat is free for anyone");
    assert!(t.poll(w.as_mut()).is_pending());
    drop((s1, s2, s3));
    assert!(matches!(t.poll(w.as_mut()), Poll::Ready(Ok(_))));
}

#[test]
fn close_wakes_barging_waiters_including_notified_ones() {
    let b = barging(1);
    let held = b.try_acquire().unwrap();
    let tasks: Vec<Task> = (0..3).map(|_| Task::new()).collect();
    let mut futs: Vec<_> = (0..3).map(|_| boxed(b.acquire())).collect();
    for (t, f) in tasks.iter().zip(futs.iter_mut()) {
        assert!(t.poll(f.as_mut()).is_pending());
    }
    let barger = {
        drop(held); // notifies the first
        b.try_acquire().unwrap()
    };
    b.close();
    for (t, f) in tasks.iter().zip(futs.iter_mut()) {
        assert!(t.wakes() >= 1);
        assert!(matches!(
            t.poll(f.as_mut()),
            Poll::Ready(Err(Error::Closed { .. }))
        ));
    }
    drop(barger);
    let s = b.state();
    assert_eq!((s.active, s.waiting), (0, 0));
}

/// `TestLock`, counting the sections run under it.
#[derive(Default)]
struct CountingLock {
    inner: super::TestLock,
    sections: core::sync::atomic::AtomicUsize,
}

// SAFETY: delegates to `TestLock`; counting is a relaxed atomic add that
// neither panics nor locks.
unsafe impl crate::RawLock for CountingLock {
    unsafe fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
        // SAFETY: forwarded from our own caller.
        unsafe {
            self.inner.with_lock(|| {
                self.sections
                    .fetch_add(1, core::sync::atomic::Ordering::Relaxed);
                f()
            })
        }
    }

    unsafe fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        // SAFETY: forwarded from our own caller.
        unsafe {
            self.inner.try_with_lock(|| {
                self.sections
                    .fetch_add(1, core::sync::atomic::Ordering::Relaxed);
                f()
            })
        }
    }
    // This test reads no counts.
    fn counts(&self) -> crate::Counts {
        crate::Counts::NONE
    }
}

/// Rule 8 in `engine.rs`: a release whose free seats are covered by woken
/// waiters that have not re-polled yet takes no lock and wakes nobody; a
/// release that frees one seat more than they cover wakes the next waiter.
/// A woken waiter that loses its race stops covering a seat, so the next
/// release wakes someone again.
#[test]
fn a_release_covered_by_woken_waiters_takes_no_lock() {
    let b = crate::Bulkhead::with_lock(
        Config::new("covered", 2).admission(Admission::Barging),
        CountingLock::default(),
    )
    .unwrap();
    let sections = || {
        b.raw_lock()
            .sections
            .load(core::sync::atomic::Ordering::Relaxed)
    };
    let s1 = b.try_acquire().unwrap();
    let s2 = b.try_acquire().unwrap();
    let (t1, t2, t3) = (Task::new(), Task::new(), Task::new());
    let mut w1 = boxed(b.acquire());
    let mut w2 = boxed(b.acquire());
    let mut w3 = boxed(b.acquire());
    for (t, w) in [(&t1, &mut w1), (&t2, &mut w2), (&t3, &mut w3)] {
        assert!(t.poll(w.as_mut()).is_pending());
    }
    let queued = sections();
    drop(s1);
    assert_eq!((t1.wakes(), t2.wakes(), sections()), (1, 0, queued + 1));
    // An arrival takes the seat the first waiter was woken for and gives it
    // back before that waiter runs: still covered.
    drop(b.try_acquire().unwrap());
    assert_eq!(sections(), queued + 1, "a covered release takes no lock");
    assert_eq!(t2.wakes(), 0, "and wakes nobody");
    // Two free seats, one woken waiter: the next one is woken.
    drop(s2);
    assert_eq!((t2.wakes(), t3.wakes(), sections()), (1, 0, queued + 2));
    // Both woken waiters lose to arrivals and wait again: the seats are no
    // longer covered, so each release wakes one of them.
    let (a1, a2) = (b.try_acquire().unwrap(), b.try_acquire().unwrap());
    assert!(t1.poll(w1.as_mut()).is_pending());
    assert!(t2.poll(w2.as_mut()).is_pending());
    drop(a1);
    drop(a2);
    assert_eq!((t1.wakes(), t2.wakes(), t3.wakes()), (2, 2, 0));
    for (t, w) in [(&t1, &mut w1), (&t2, &mut w2)] {
        let Poll::Ready(Ok(seat)) = t.poll(w.as_mut()) else {
            panic!("a woken waiter found no seat")
        };
        drop(seat); // the third waiter is woken for the first seat
    }
    assert_eq!(t3.wakes(), 1);
    assert!(matches!(t3.poll(w3.as_mut()), Poll::Ready(Ok(_))));
    assert_eq!(b.state().waiting, 0);
}
