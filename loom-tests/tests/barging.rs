//! Barging admission: owed wake-ups instead of reserved seats.
#![cfg(bulkhead_loom)]

use std::pin::pin;
use std::task::{Context, Poll, Waker};

use bulkhead_loom_tests::{Inside, acquire_async, acquire_blocking, assert_quiescent, barging};
use loom::thread;

/// Two quick releases with two waiters: both wake (REFERENCE §3 item 4).
#[test]
fn barging_two_quick_releases_wake_two_waiters() {
    loom::model(|| {
        let b = barging(2);
        let s1 = b.try_acquire().unwrap();
        let s2 = b.try_acquire().unwrap();
        let waiters: Vec<_> = (0..2)
            .map(|i| {
                let b = b.clone();
                thread::spawn(move || {
                    let seat = if i == 0 {
                        acquire_async(&b)
                    } else {
                        acquire_blocking(&b)
                    };
                    drop(seat.unwrap());
                })
            })
            .collect();
        drop(s1);
        drop(s2);
        for w in waiters {
            w.join().unwrap();
        }
        assert_quiescent(&b);
    });
}

/// A barger takes the freed seat; the woken waiter must not be stranded
/// (REFERENCE §3 item 5: barging without lost wake-ups).
#[test]
fn barging_arrival_does_not_strand_the_waiter() {
    loom::model(|| {
        let b = barging(1);
        let inside = Inside::new();
        let seat = inside.hold(1, b.try_acquire().unwrap());
        let waiter = {
            let (b, inside) = (b.clone(), inside.clone());
            thread::spawn(move || drop(inside.hold(1, acquire_async(&b).unwrap())))
        };
        let barger = {
            let (b, inside) = (b.clone(), inside.clone());
            thread::spawn(move || {
                if let Ok(seat) = b.try_acquire() {
                    drop(inside.hold(1, seat));
                }
            })
        };
        drop(seat);
        waiter.join().unwrap();
        barger.join().unwrap();
        assert_quiescent(&b);
    });
}

/// A notified waiter that is dropped passes its wake-up on.
#[test]
fn barging_dropped_notified_waiter_passes_on() {
    loom::model(|| {
        let b = barging(1);
        let seat = b.try_acquire().unwrap();
        let canceller = {
            let b = b.clone();
            thread::spawn(move || {
                let mut cx = Context::from_waker(Waker::noop());
                let mut fut = pin!(b.acquire());
                if let Poll::Ready(r) = fut.as_mut().poll(&mut cx) {
                    drop(r.unwrap());
                }
            })
        };
        let waiter = {
            let b = b.clone();
            thread::spawn(move || drop(acquire_blocking(&b).unwrap()))
        };
        drop(seat);
        canceller.join().unwrap();
        waiter.join().unwrap();
        assert_quiescent(&b);
    });
}
