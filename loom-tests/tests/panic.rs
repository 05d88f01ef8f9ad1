//! A waker that panics while a batch is being woken (bug class 7 in docs/bug-classes.md).
//!
//! Whichever thread hands a seat over runs the waker, so the panic can
//! surface in any of them: every thread here catches it, and retries what
//! it was doing if the panic cut it short.
#![cfg(bulkhead_loom)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::sync::Arc as StdArc;
use std::task::{Context, Poll, Wake, Waker};

use bulkhead_core::OwnedSeat;
use bulkhead_loom_tests::{LoomBulkhead, acquire_async, assert_quiescent, barging, fifo};
use loom::thread;

struct Panicking;
impl Wake for Panicking {
    fn wake(self: StdArc<Self>) {
        panic!("this waker panics");
    }
}

/// Runs `f` until it completes without a foreign panic cutting it short.
fn retry_through_panics<R>(mut f: impl FnMut() -> R) -> R {
    loop {
        if let Ok(r) = catch_unwind(AssertUnwindSafe(&mut f)) {
            return r;
        }
    }
}

fn acquire_and_release(b: &LoomBulkhead) {
    retry_through_panics(|| drop(acquire_async(b).unwrap()));
}

/// Two waiters are granted by one reconfiguration; the first one's waker
/// panics. The second must still be woken, and the compartment must stay
/// usable, while a release races the whole thing.
#[test]
fn a_panicking_waker_does_not_strand_the_queue() {
    loom::model(|| {
        let b = fifo(1);
        let seat = OwnedSeat::try_acquire(b.clone()).unwrap();
        let bad = Waker::from(StdArc::new(Panicking));
        let mut first = Box::pin(b.acquire());
        assert!(
            first
                .as_mut()
                .poll(&mut Context::from_waker(&bad))
                .is_pending()
        );
        let waiter = {
            let b = b.clone();
            thread::spawn(move || acquire_and_release(&b))
        };
        let releaser = thread::spawn(move || {
            let _ = catch_unwind(AssertUnwindSafe(|| drop(seat)));
        });
        let _ = catch_unwind(AssertUnwindSafe(|| b.set_max_concurrent(3).unwrap()));
        releaser.join().unwrap();
        waiter.join().unwrap();
        match first.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(r) => drop(r.unwrap()),
            Poll::Pending => panic!("the first waiter was never granted"),
        }
        drop(first);
        assert_quiescent(&b);
    });
}

/// A waiter with a panicking waker, and a release that wakes it: the
/// panic must neither leak the seat nor leave the list locked.
#[test]
fn a_panicking_wake_leaks_nothing() {
    loom::model(|| {
        let b = fifo(1);
        let seat = b.try_acquire().unwrap();
        let t = {
            let b = b.clone();
            thread::spawn(move || {
                let bad = Waker::from(StdArc::new(Panicking));
                let _ = catch_unwind(AssertUnwindSafe(|| {
                    let mut fut = pin!(b.acquire());
                    if let Poll::Ready(r) = fut.as_mut().poll(&mut Context::from_waker(&bad)) {
                        drop(r.unwrap());
                    }
                }));
            })
        };
        let _ = catch_unwind(AssertUnwindSafe(|| drop(seat)));
        t.join().unwrap();
        assert_quiescent(&b);
    });
}

/// Barging: a grow and a release owe two wake-ups while two waiters wait,
/// and the older one's waker panics. The other must still be woken (the
/// batch goes on waking after the panic), and the one whose waker panicked
/// is left notified, so its next poll competes for a seat.
#[test]
fn barging_a_panicking_waker_does_not_strand_the_next_waiter() {
    loom::model(|| {
        let b = barging(1);
        let seat = OwnedSeat::try_acquire(b.clone()).unwrap();
        let bad = Waker::from(StdArc::new(Panicking));
        let mut first = Box::pin(b.acquire());
        assert!(
            first
                .as_mut()
                .poll(&mut Context::from_waker(&bad))
                .is_pending()
        );
        let waiter = {
            let b = b.clone();
            thread::spawn(move || acquire_and_release(&b))
        };
        let releaser = thread::spawn(move || {
            let _ = catch_unwind(AssertUnwindSafe(|| drop(seat)));
        });
        let _ = catch_unwind(AssertUnwindSafe(|| b.set_max_concurrent(2).unwrap()));
        releaser.join().unwrap();
        waiter.join().unwrap();
        match first.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(r) => drop(r.unwrap()),
            Poll::Pending => panic!("two free seats, yet the first waiter was refused"),
        }
        drop(first);
        assert_quiescent(&b);
    });
}
