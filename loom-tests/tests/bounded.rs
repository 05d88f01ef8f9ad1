//! `BoundedBarging`: barging, with a FIFO hand-off to a waiter that has
//! lost `MAX_LOST_RACES` races (loom builds hand off after one lost race,
//! so that a single barger reaches it).
//!
//! The hand-off clears the word's `BARGING` bit and sets it again when it
//! is over; each model races one of those transitions against what can
//! happen at the same moment: a barger, a release, the starving waiter
//! leaving (drop, timeout), `close`, a grow. A lost wake-up is a loom
//! deadlock; `Inside` checks the limit; every model ends quiescent.
#![cfg(bulkhead_loom)]

use std::pin::Pin;
use std::sync::Arc as StdArc;
use std::task::{Context, Wake, Waker};

use bulkhead_core::{AcquireOwned, Admission, Config, OwnedSeat};
use bulkhead_loom_tests::{Inside, LoomBulkhead, acquire_async, assert_quiescent, with_config};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::thread;

type Waiter = Pin<Box<AcquireOwned<Arc<LoomBulkhead>>>>;

fn bounded(max: usize) -> Arc<LoomBulkhead> {
    with_config(Config::new("loom", max).admission(Admission::BoundedBarging))
}

/// An owned `acquire` polled once on the calling thread: it queues.
fn queued(b: &Arc<LoomBulkhead>) -> Waiter {
    let mut w = Box::pin(OwnedSeat::acquire(b.clone()));
    let poll = w.as_mut().poll(&mut Context::from_waker(Waker::noop()));
    assert!(poll.is_pending(), "expected to queue: {:?}", b.state());
    w
}

/// A waker that only counts its wake-ups, for a waiter queued on the main
/// thread: after the racing threads are joined, a waiter that was neither
/// granted a seat nor notified of one, while a seat is free, is the lost
/// wake-up (with a parked thread it would be a loom deadlock).
struct Counting(AtomicUsize);

impl Wake for Counting {
    fn wake(self: StdArc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// An owned `acquire` polled once with a [`Counting`] waker: it queues.
fn queued_counting(b: &Arc<LoomBulkhead>) -> (Waiter, StdArc<Counting>) {
    let count = StdArc::new(Counting(AtomicUsize::new(0)));
    let waker = Waker::from(count.clone());
    let mut w = Box::pin(OwnedSeat::acquire(b.clone()));
    let poll = w.as_mut().poll(&mut Context::from_waker(&waker));
    assert!(poll.is_pending(), "expected to queue: {:?}", b.state());
    (w, count)
}

/// After the races: the waiter queued by [`queued_counting`] was woken
/// (granted a seat, notified of one, or closed out), and its wait ends.
fn woken_then_done(w: Waiter, count: &Counting) -> Option<OwnedSeat<Arc<LoomBulkhead>>> {
    assert!(
        count.0.load(SeqCst) > 0,
        "the waiter behind the hand-off was never woken"
    );
    loom::future::block_on(w).ok()
}

/// No race yet: on the main thread, a waiter queues, is woken by a
/// release, and a barger takes the seat before it runs; its poll loses,
/// and (one lost race being the loom bound) it asks for the hand-off.
/// Returns the starving waiter and the barger's seat.
fn starving(b: &Arc<LoomBulkhead>) -> (Waiter, OwnedSeat<Arc<LoomBulkhead>>) {
    let held = OwnedSeat::try_acquire(b.clone()).unwrap();
    let mut x = queued(b);
    drop(held);
    let barger = OwnedSeat::try_acquire(b.clone()).expect("barging lets the arrival in");
    let poll = x.as_mut().poll(&mut Context::from_waker(Waker::noop()));
    assert!(poll.is_pending(), "the woken waiter lost the race");
    (x, barger)
}

/// Waits for `w` on a loom thread (parks until woken) and holds its seat.
fn wait_and_hold(w: Waiter, inside: Inside, limit: usize) -> thread::JoinHandle<()> {
    thread::spawn(move || drop(inside.hold(limit, loom::future::block_on(w).unwrap())))
}

/// The hand-off racing a barger, all on threads: the waiter is woken, a
/// barger may take the seat first (twice), the waiter's lost race turns
/// the next release into a hand-off. The waiter must get a seat: a
/// hand-off that left `BARGING` set would leave it `Notified` at the head,
/// where no drain wakes it again.
#[test]
fn bounded_hand_off_racing_a_barger() {
    loom::model(|| {
        let b = bounded(1);
        let inside = Inside::new();
        let seat = inside.hold(1, b.try_acquire().unwrap());
        let waiter = {
            let (b, inside) = (b.clone(), inside.clone());
            thread::spawn(move || drop(inside.hold(1, acquire_async(&b).unwrap())))
        };
        let barger = {
            let (b, inside) = (b.clone(), inside.clone());
            thread::spawn(move || {
                for _ in 0..2 {
                    if let Ok(seat) = b.try_acquire() {
                        drop(inside.hold(1, seat));
                    }
                }
            })
        };
        drop(seat);
        waiter.join().unwrap();
        barger.join().unwrap();
        assert_quiescent(&b);
    });
}

/// The end of a hand-off racing a release. The release hands the seat to
/// the starving waiter, whose owner may give it back while the drain goes
/// on to the next waiter, finds no seat, and ends the hand-off. The end
/// must not set `BARGING` over a seat freed by a release that read the
/// FIFO word (it owes no wake-up), or the next waiter sleeps next to it.
#[test]
fn bounded_end_of_hand_off_racing_a_release() {
    loom::model(|| {
        let b = bounded(1);
        let inside = Inside::new();
        let (x, barger) = starving(&b);
        let (w2, woken) = queued_counting(&b);
        let x = wait_and_hold(x, inside.clone(), 1);
        drop(barger);
        x.join().unwrap();
        drop(woken_then_done(w2, &woken).expect("a seat"));
        assert_quiescent(&b);
    });
}

/// The starving waiter leaves (dropped, or its budget runs out) while the
/// seat is released: the hand-off ends, and the waiter behind it is still
/// woken and gets a seat.
#[test]
fn bounded_starving_waiter_leaves_racing_a_release() {
    for time_out in [false, true] {
        loom::model(move || {
            let b = bounded(1);
            let (mut x, barger) = starving(&b);
            let (w2, woken) = queued_counting(&b);
            let leaver = thread::spawn(move || {
                if time_out {
                    if let Ok(seat) = x.as_mut().time_out(core::time::Duration::from_millis(1)) {
                        drop(seat);
                    }
                } else {
                    drop(x);
                }
            });
            drop(barger);
            leaver.join().unwrap();
            drop(woken_then_done(w2, &woken).expect("a seat"));
            assert_quiescent(&b);
        });
    }
}

/// `close` during a hand-off, racing the release and the starving
/// waiter: both waiters get a verdict (a seat, or `Closed`), and nothing
/// is left behind.
#[test]
fn bounded_close_during_a_hand_off() {
    loom::model(|| {
        let b = bounded(1);
        let (x, barger) = starving(&b);
        let (w2, woken) = queued_counting(&b);
        let x = thread::spawn(move || drop(loom::future::block_on(x)));
        let releaser = thread::spawn(move || drop(barger));
        b.close();
        releaser.join().unwrap();
        x.join().unwrap();
        drop(woken_then_done(w2, &woken));
        assert_quiescent(&b);
    });
}

/// A grow during a hand-off, racing the release: the starving waiter and
/// the next one both get a seat; the limit holds.
#[test]
fn bounded_grow_during_a_hand_off() {
    loom::model(|| {
        let b = bounded(1);
        let inside = Inside::new();
        let (x, barger) = starving(&b);
        let (w2, woken) = queued_counting(&b);
        let x = wait_and_hold(x, inside.clone(), 2);
        let releaser = thread::spawn(move || drop(barger));
        b.set_max_concurrent(2).unwrap();
        releaser.join().unwrap();
        x.join().unwrap();
        drop(woken_then_done(w2, &woken).expect("a seat"));
        assert_quiescent(&b);
    });
}

/// A skipping release racing the end of a hand-off (rules 8 and 9). Two
/// seats, three waiters: the first two are notified, bargers take both
/// seats, and the first one's lost race starts a hand-off while the second
/// is still notified (it covers a seat). A release hands the starving
/// waiter a seat, and that section ends the hand-off (the next head has
/// lost no race); the starving waiter's own release races that end. Once
/// barging resumes, a release skips the lock only while notified waiters
/// really cover the free seats: the `notified` cell must be exact (the
/// granted starving waiter and, in the second variant, the second waiter,
/// which re-polls during the hand-off and is requeued, are settled, and
/// the hand-off's drain publishes the cell). A release that skips wrongly
/// leaves a seat free next to a waiting waiter nobody wakes.
#[test]
fn bounded_a_skipping_release_races_the_end_of_a_hand_off() {
    for second_re_polls_in_the_hand_off in [false, true] {
        loom::model(move || {
            let b = bounded(2);
            let inside = Inside::new();
            let held = [
                OwnedSeat::try_acquire(b.clone()).unwrap(),
                OwnedSeat::try_acquire(b.clone()).unwrap(),
            ];
            let mut x = queued(&b);
            let (mut w2, w2_woken) = queued_counting(&b);
            let (w3, w3_woken) = queued_counting(&b);
            drop(held);
            let bargers = [
                OwnedSeat::try_acquire(b.clone()).expect("barging lets the arrival in"),
                OwnedSeat::try_acquire(b.clone()).expect("barging lets the arrival in"),
            ];
            let poll = x.as_mut().poll(&mut Context::from_waker(Waker::noop()));
            assert!(poll.is_pending(), "the woken waiter lost the race");
            assert_eq!(w2_woken.0.load(SeqCst), 1, "the second waiter is notified");
            if second_re_polls_in_the_hand_off {
                // No seat is free and the compartment hands off: it waits
                // in line again and no longer covers a seat.
                let waker = Waker::from(w2_woken.clone());
                let poll = w2.as_mut().poll(&mut Context::from_waker(&waker));
                assert!(poll.is_pending(), "nobody barges in a hand-off");
            }
            let woken_before = w2_woken.0.load(SeqCst);
            let [first, second] = bargers;
            let x = wait_and_hold(x, inside.clone(), 2);
            drop(first);
            x.join().unwrap();
            if second_re_polls_in_the_hand_off {
                // Two seats are free (the bargers' first, the starving
                // waiter's) or one was handed to the second waiter; either
                // way it was woken again, or no release may have skipped.
                assert!(
                    w2_woken.0.load(SeqCst) > woken_before,
                    "a release skipped the lock on a stale notified count"
                );
            }
            drop(inside.hold(2, woken_then_done(w2, &w2_woken).expect("a seat")));
            drop(second);
            drop(woken_then_done(w3, &w3_woken).expect("a seat"));
            assert_quiescent(&b);
        });
    }
}
