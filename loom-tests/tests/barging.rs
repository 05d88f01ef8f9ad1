//! Barging admission: woken waiters compete for free seats instead of reserved ones.
#![cfg(bulkhead_loom)]

use bulkhead_core::OwnedSeat;
use bulkhead_loom_tests::{
    Inside, acquire_async, acquire_blocking, assert_quiescent, barging, granted, leaver_and_waiter,
    poll_once_then_drop, queued, two_quick_releases,
};
use loom::thread;

/// Two quick releases with two waiters: both wake (bug class 4 in docs/bug-classes.md).
#[test]
fn barging_two_quick_releases_wake_two_waiters() {
    loom::model(|| two_quick_releases(barging(2)));
}

/// A barger takes the freed seat; the woken waiter must not be stranded
/// (bug class 5 in docs/bug-classes.md: barging without lost wake-ups).
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
    loom::model(|| leaver_and_waiter(barging(1), poll_once_then_drop, acquire_blocking));
}

/// Barging: one grow owes more wake-ups than a batch holds (loom builds
/// use a batch of 2), while a release races the re-drain. The wake-ups
/// that did not fit are put back and handed out by `finish`'s re-drain, so
/// the third waiter is woken too (bug class 4 in docs/bug-classes.md).
#[test]
fn barging_more_wake_ups_than_a_batch_while_a_release_races_the_re_drain() {
    loom::model(|| {
        let b = barging(1);
        let seat = OwnedSeat::try_acquire(b.clone()).unwrap();
        let first = queued(&b);
        let second = queued(&b);
        let third = {
            let b = b.clone();
            thread::spawn(move || drop(acquire_async(&b).unwrap()))
        };
        let releaser = thread::spawn(move || drop(seat));
        b.set_max_concurrent(4).unwrap();
        releaser.join().unwrap();
        third.join().unwrap();
        drop(granted(first));
        drop(granted(second));
        assert_quiescent(&b);
    });
}
