//! Rule 8 in core/src/engine.rs: a barging release skips the lock while
//! woken waiters that have not re-polled yet cover the free seats.
//!
//! Each model starts from the same place: the only seat was released while
//! the oldest waiter was queued, so that waiter is notified and covers the
//! free seat. A barger then takes that seat and gives it back, so its
//! release finds the seat covered and skips the lock, while the notified
//! waiter loses its race, leaves, is closed out, or the limit changes.
//! Whatever the interleaving, the younger waiter must get a seat (a lost
//! wake-up is a loom deadlock), and the compartment must end quiescent.
//! The last models depart from that start: two seats covered by two
//! notified waiters, and two seats held while one notified waiter covers
//! the second and the limit drops to one (a shrink with a debt).
//!
//! The skip rests on rule 1's pair of RMWs on the seat word, not on an
//! ordering of its own: the release loads the `notified` cell after its
//! RMW, and the section that settles a notified node stores the cell before
//! its re-check's RMW. The mutants these models were shown to catch are
//! listed in loom-tests/README.md.
#![cfg(bulkhead_loom)]

use std::pin::Pin;
use std::sync::Arc as StdArc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use bulkhead_core::{Acquire, LoomLock, OwnedSeat};
use bulkhead_loom_tests::{
    Inside, LoomBulkhead, acquire_async, acquire_blocking, assert_quiescent, barging, queued,
};
use loom::sync::Arc;
use loom::thread;

/// A thread that takes a free seat if there is one and gives it back at
/// once: the release that may find the seat covered.
fn barger(b: &Arc<LoomBulkhead>, inside: &Inside, limit: usize) -> thread::JoinHandle<()> {
    let (b, inside) = (b.clone(), inside.clone());
    thread::spawn(move || {
        if let Ok(seat) = b.try_acquire() {
            drop(inside.hold(limit, seat));
        }
    })
}

/// The oldest waiter, queued on the main thread and notified by the
/// release of the only seat, so that it covers that seat.
fn notified_oldest(b: &LoomBulkhead) -> Pin<Box<Acquire<'_, LoomLock>>> {
    let seat = b.try_acquire().unwrap();
    let oldest = queued(b);
    drop(seat);
    oldest
}

/// A notified waiter on its own thread loses the seat it was woken for to a
/// barger, whose release may find it still covered and skip the lock while
/// the waiter's re-poll loses and waits again. Either the re-poll's section
/// sees the seat (its re-check comes after the release's RMW), or the
/// release sees that the waiter no longer covers it.
fn a_covered_release_races_the_woken_waiter_that_lost(
    wait: for<'a> fn(
        &'a LoomBulkhead,
    ) -> Result<bulkhead_core::Seat<'a, LoomLock>, bulkhead_core::Error>,
) {
    loom::model(move || {
        let b = barging(1);
        let inside = Inside::new();
        let seat = inside.hold(1, b.try_acquire().unwrap());
        let waiter = {
            let (b, inside) = (b.clone(), inside.clone());
            thread::spawn(move || drop(inside.hold(1, wait(&b).unwrap())))
        };
        let barger = barger(&b, &inside, 1);
        drop(seat);
        waiter.join().unwrap();
        barger.join().unwrap();
        assert_quiescent(&b);
    });
}

#[test]
fn a_covered_release_races_the_woken_async_waiter_that_lost() {
    a_covered_release_races_the_woken_waiter_that_lost(acquire_async);
}

#[test]
fn a_covered_release_races_the_woken_blocking_waiter_that_lost() {
    a_covered_release_races_the_woken_waiter_that_lost(acquire_blocking);
}

/// The notified waiter gives up (`leave`) while the barger's release may
/// skip on its account: its section stops counting it, and the younger
/// waiter must be woken for the seat.
fn a_covered_release_races_the_woken_waiter_leaving(leave: fn(Pin<Box<Acquire<'_, LoomLock>>>)) {
    loom::model(move || {
        let b = barging(1);
        let inside = Inside::new();
        let oldest = notified_oldest(&b);
        let younger = {
            let (b, inside) = (b.clone(), inside.clone());
            thread::spawn(move || drop(inside.hold(1, acquire_blocking(&b).unwrap())))
        };
        let barger = barger(&b, &inside, 1);
        leave(oldest);
        younger.join().unwrap();
        barger.join().unwrap();
        assert_quiescent(&b);
    });
}

#[test]
fn a_covered_release_races_the_woken_waiter_being_dropped() {
    a_covered_release_races_the_woken_waiter_leaving(|oldest| drop(oldest));
}

#[test]
fn a_covered_release_races_the_woken_waiter_timing_out() {
    a_covered_release_races_the_woken_waiter_leaving(|mut oldest| {
        // Never granted without a re-poll (barging), so it times out.
        assert!(oldest.as_mut().time_out(Duration::from_millis(1)).is_err());
    });
}

/// The barger's release may skip while the compartment closes and the
/// notified waiter re-polls: every waiter still linked gets its `Closed`
/// verdict (or took the seat first), and nothing spins.
#[test]
fn a_covered_release_races_close() {
    loom::model(|| {
        let b = barging(1);
        let inside = Inside::new();
        let seat = b.try_acquire().unwrap();
        let mut oldest = queued(&b);
        let younger = queued(&b);
        drop(seat); // notifies the oldest only
        let barger = barger(&b, &inside, 1);
        let closer = {
            let b = b.clone();
            thread::spawn(move || b.close())
        };
        let mut cx = Context::from_waker(Waker::noop());
        let mut pending = vec![younger];
        match oldest.as_mut().poll(&mut cx) {
            Poll::Ready(Ok(seat)) => drop(inside.hold(1, seat)),
            Poll::Ready(Err(e)) => assert!(matches!(e, bulkhead_core::Error::Closed { .. })),
            Poll::Pending => pending.push(oldest),
        }
        barger.join().unwrap();
        closer.join().unwrap();
        for mut w in pending {
            match w.as_mut().poll(&mut cx) {
                Poll::Ready(Ok(seat)) => drop(inside.hold(1, seat)),
                Poll::Ready(Err(e)) => assert!(matches!(e, bulkhead_core::Error::Closed { .. })),
                Poll::Pending => panic!("a waiter still waits after close: {:?}", b.state()),
            }
        }
        assert_quiescent(&b);
    });
}

/// The barger's release may skip while the limit changes (`resize`) and
/// the notified waiter re-polls once, then gives up if it found no seat.
/// The younger waiter, on its own thread, must get a seat.
fn a_covered_release_races_a_resize(resize: fn(&LoomBulkhead)) {
    loom::model(move || {
        let b = barging(1);
        let inside = Inside::new();
        let mut oldest = notified_oldest(&b);
        let younger = {
            let (b, inside) = (b.clone(), inside.clone());
            thread::spawn(move || drop(inside.hold(2, acquire_blocking(&b).unwrap())))
        };
        let barger = barger(&b, &inside, 2);
        resize(&b);
        match oldest
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
        {
            Poll::Ready(result) => drop(inside.hold(2, result.unwrap())),
            Poll::Pending => drop(oldest),
        }
        younger.join().unwrap();
        barger.join().unwrap();
        assert_quiescent(&b);
    });
}

#[test]
fn a_covered_release_races_a_grow() {
    a_covered_release_races_a_resize(|b| {
        b.set_max_concurrent(2).unwrap();
    });
}

#[test]
fn a_covered_release_races_a_try_grow() {
    a_covered_release_races_a_resize(|b| {
        // `None` (the lock was busy) leaves the limit at 1.
        let _ = b.try_set_max_concurrent(2).unwrap();
    });
}

/// Counts its wake-ups.
#[derive(Default)]
struct Wakes(AtomicUsize);
impl Wake for Wakes {
    fn wake(self: StdArc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Two seats covered by two notified waiters, and a third waiter, all on
/// the main thread. A barger's release races the oldest leaving: once both
/// are done, two seats are free and one notified waiter is left, so the
/// third must have been woken: a leaver that went on counting as notified
/// would strand it.
#[test]
fn a_release_covered_by_two_woken_waiters_races_one_leaving() {
    loom::model(|| {
        let b = barging(2);
        let inside = Inside::new();
        let (s1, s2) = (b.try_acquire().unwrap(), b.try_acquire().unwrap());
        let first = queued(&b);
        let second = queued(&b);
        let wakes = StdArc::new(Wakes::default());
        let waker = Waker::from(wakes.clone());
        let mut third = Box::pin(b.acquire());
        assert!(
            third
                .as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
        );
        drop((s1, s2)); // the first two are notified: both seats covered
        let barger = barger(&b, &inside, 2);
        drop(first);
        barger.join().unwrap();
        assert_eq!(
            wakes.0.load(Ordering::SeqCst),
            1,
            "two free seats, one notified waiter, and the third never woken"
        );
        match third.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(result) => drop(inside.hold(2, result.unwrap())),
            Poll::Pending => panic!("the woken waiter found no seat"),
        }
        drop((second, third));
        assert_quiescent(&b);
    });
}

/// Polls `fut` with `waker` again for as long as a wake-up arrived since
/// the last poll, as a blocking waiter does; returns the seat, or `None`
/// once it is pending with no wake-up outstanding. `seen` is the count of
/// wake-ups already answered. Loom bounds the loop: a waiter woken again
/// by every re-poll it loses (a spin) exceeds loom's branch limit.
fn poll_while_woken<'a>(
    fut: &mut Pin<Box<Acquire<'a, LoomLock>>>,
    waker: &Waker,
    wakes: &Wakes,
    seen: &mut usize,
) -> Option<bulkhead_core::Seat<'a, LoomLock>> {
    loop {
        if let Poll::Ready(result) = fut.as_mut().poll(&mut Context::from_waker(waker)) {
            return Some(result.unwrap());
        }
        let now = wakes.0.load(Ordering::SeqCst);
        if now == *seen {
            return None;
        }
        *seen = now;
    }
}

/// The seat of a waiter that must have been woken since it last answered
/// a wake-up (`seen`) and must find a seat now.
fn woken_seat<'a>(
    fut: &mut Pin<Box<Acquire<'a, LoomLock>>>,
    waker: &Waker,
    wakes: &Wakes,
    seen: &mut usize,
    b: &LoomBulkhead,
) -> bulkhead_core::Seat<'a, LoomLock> {
    let now = wakes.0.load(Ordering::SeqCst);
    assert!(
        now > *seen,
        "a free seat and its waiter never woken: {:?}",
        b.state()
    );
    *seen = now;
    poll_while_woken(fut, waker, wakes, seen).expect("the woken waiter found no seat")
}

/// Review finding F4: a covered release racing a shrink with a debt. Two
/// seats, both held (the second by a barger that took the seat the waiter
/// was notified for), and one notified waiter. The limit drops to 1 (a
/// debt of one seat) while the barger releases and the waiter re-polls.
/// Whether the release skips because the waiter covers its seat, or pays
/// the debt and wakes nobody, the waiter must get the seat once the last
/// holder leaves (no lost wake-up), no more than the limit may be inside,
/// and the compartment ends quiescent at the new limit.
fn a_covered_release_races_a_shrink_with_a_debt(shrink: fn(&LoomBulkhead)) {
    loom::model(move || {
        let b = barging(2);
        let inside = Inside::new();
        let first = inside.hold(2, b.try_acquire().unwrap());
        let second = b.try_acquire().unwrap();
        let mut waiter = queued(&b);
        drop(second); // notifies the waiter: it covers the free seat
        let barger = {
            // Barging: the newcomer takes the covered seat.
            let held = inside.hold(2, OwnedSeat::try_acquire(b.clone()).unwrap());
            thread::spawn(move || drop(held))
        };
        let shrinker = {
            let b = b.clone();
            thread::spawn(move || shrink(&b))
        };
        let wakes = StdArc::new(Wakes::default());
        let waker = Waker::from(wakes.clone());
        let mut seen = 0;
        // The re-poll races the release and the shrink; before both are
        // done at most the old limit can be inside.
        let mut seat = poll_while_woken(&mut waiter, &waker, &wakes, &mut seen)
            .map(|seat| inside.hold(2, seat));
        barger.join().unwrap();
        shrinker.join().unwrap();
        let limit = b.state().max_concurrent;
        if seat.is_none() && limit == 2 {
            // No shrink (the try found the lock busy): the barger's seat is
            // free, so its release, or the re-poll's section, woke the
            // waiter for it.
            seat = Some(inside.hold(2, woken_seat(&mut waiter, &waker, &wakes, &mut seen, &b)));
        }
        drop(first);
        if seat.is_none() {
            // The last holder has left: one seat is free under either
            // limit, and the waiter must have been woken for it.
            seat = Some(inside.hold(
                limit,
                woken_seat(&mut waiter, &waker, &wakes, &mut seen, &b),
            ));
        }
        drop(seat);
        drop(waiter);
        assert_eq!(b.state().max_concurrent, limit);
        assert_quiescent(&b);
    });
}

#[test]
fn a_covered_release_races_a_shrink_with_a_debt_set() {
    a_covered_release_races_a_shrink_with_a_debt(|b| {
        assert_eq!(b.set_max_concurrent(1), Ok(2));
    });
}

#[test]
fn a_covered_release_races_a_shrink_with_a_debt_try_set() {
    a_covered_release_races_a_shrink_with_a_debt(|b| {
        // `None` (the lock was busy) leaves the limit at 2.
        assert!(matches!(b.try_set_max_concurrent(1), Ok(Some(2) | None)));
    });
}
