//! Weighted seats: a waiter for more than one seat, in FIFO, barging and
//! bounded-barging admission, racing releases, cancellation, `close`,
//! `split`/`merge` and the re-check that rule 10 in core/src/engine.rs
//! lets off (a word equal to the one at which the last drain stopped for
//! lack of seats for the next waiter owes nothing).
//!
//! FIFO keeps freed seats in the word, reserved for a head that asks for
//! more than are free: the head must still get them all once enough are
//! back (no lost wake-up), a waiter behind a head that leaves must get the
//! seats the head was waiting on (no lost seat), and the re-check must
//! neither drain forever over a stuck head (a hang, which loom reports as
//! its branch limit) nor skip a word a release changed (a lost wake-up,
//! a loom deadlock or a named assertion). [`WeightedInside`] counts seats,
//! not callers, so a grant of fewer seats than asked for fails it.
#![cfg(bulkhead_loom)]

use std::future::Future;
use std::pin::pin;
use std::sync::Arc as StdArc;
use std::task::{Context, Poll, Wake, Waker};

use bulkhead_core::{Admission, Config, Error, OwnedSeat, Seat};
use bulkhead_loom_tests::{
    Counting, LoomBulkhead, assert_quiescent, queued_many, with_config, woken_then_done,
};
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::sync::{Arc, Notify};
use loom::thread;

fn compartment(max: usize, admission: Admission) -> Arc<LoomBulkhead> {
    with_config(Config::new("loom", max).admission(admission))
}

/// Counts the *seats* held inside, independently of the compartment, and
/// checks the limit each time a holder enters: a holder granted fewer
/// seats than it asked for still counts its full weight here, so the sum
/// goes above the limit.
#[derive(Debug, Clone)]
struct WeightedInside(Arc<AtomicUsize>);

impl WeightedInside {
    fn new() -> Self {
        Self(Arc::new(AtomicUsize::new(0)))
    }

    /// Counts `weight` seats inside until the guard drops (before the seat
    /// is given back). The seat must say it holds `weight`.
    fn hold<S: Weighted>(&self, limit: usize, weight: usize, seat: S) -> WeightedHeld<S> {
        assert_eq!(seat.weight(), weight, "a seat of the wrong weight");
        let now = self.0.fetch_add(weight, SeqCst) + weight;
        assert!(now <= limit, "{now} seats held in a compartment of {limit}");
        WeightedHeld {
            inside: self.clone(),
            weight,
            seat: Some(seat),
        }
    }
}

trait Weighted {
    fn weight(&self) -> usize;
}

impl Weighted for Seat<'_, bulkhead_core::LoomLock> {
    fn weight(&self) -> usize {
        Seat::weight(self)
    }
}

impl Weighted for OwnedSeat<Arc<LoomBulkhead>> {
    fn weight(&self) -> usize {
        OwnedSeat::weight(self)
    }
}

struct WeightedHeld<S> {
    inside: WeightedInside,
    weight: usize,
    seat: Option<S>,
}

impl<S> Drop for WeightedHeld<S> {
    fn drop(&mut self) {
        self.inside.0.fetch_sub(self.weight, SeqCst);
        drop(self.seat.take());
    }
}

/// [`assert_quiescent`], and, if it is open, exactly `max` seats can be
/// taken again: a seat given back twice (or never) shows here even when no
/// caller was inside at the wrong moment.
fn assert_all_seats_back(b: &LoomBulkhead, max: usize) {
    assert_quiescent(b);
    if b.is_closed() {
        return;
    }
    let all = b
        .try_acquire_many(max)
        .unwrap_or_else(|e| panic!("a seat was lost: {e}"));
    assert!(
        b.try_acquire().is_err(),
        "more than {max} seats: {:?}",
        b.state()
    );
    drop(all);
}

/// Wakes a thread blocked in [`blocking`] (the waiter style of
/// `bulkhead-std`; see `Unparker` in loom-tests/src/lib.rs for why it is a
/// `Notify`).
struct Unparker(Notify);

impl Wake for Unparker {
    fn wake(self: StdArc<Self>) {
        self.0.notify();
    }
}

/// Polls `fut` from a plain thread, blocking between polls; with
/// `re_poll_at_once`, it polls a second time right after the first, without
/// waiting for a wake-up (as after a spurious wake-up), so that its re-poll
/// races whatever hands it its seats.
fn blocking<F: Future>(fut: F, re_poll_at_once: bool) -> F::Output {
    let unparker = StdArc::new(Unparker(Notify::new()));
    let waker = Waker::from(unparker.clone());
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(fut);
    let mut re_poll = re_poll_at_once;
    loop {
        match fut.as_mut().poll(&mut cx) {
            Poll::Ready(out) => return out,
            Poll::Pending if re_poll => re_poll = false,
            Poll::Pending => unparker.0.wait(),
        }
    }
}

/// How the head waiter of [`a_head_waiting_for_two_seats_gets_them_when_one_is_released`] waits.
#[derive(Clone, Copy)]
enum Style {
    Async,
    Blocking,
    RePolling,
}

/// A head waiter for 2 seats finds 1 free (kept for it in FIFO) and
/// queues, while the other seat is released: the release's try may fail
/// against the head's own enqueue section, whose drain stopped at the head
/// for lack of a second seat (rule 10). The re-check must see that the
/// word changed and hand the head both seats: a re-check that trusted any
/// stuck word would lose the wake-up (a loom deadlock), and one that
/// ignored the stuck word would drain forever over the head (loom's branch
/// limit). Both waiter styles, and a blocking waiter that re-polls at once
/// (its re-poll section is then the one that stops stuck), in FIFO and in
/// barging admission.
#[test]
fn a_head_waiting_for_two_seats_gets_them_when_one_is_released() {
    for admission in [Admission::Fifo, Admission::Barging] {
        for style in [Style::Async, Style::Blocking, Style::RePolling] {
            loom::model(move || {
                let b = compartment(2, admission);
                let inside = WeightedInside::new();
                let held = OwnedSeat::try_acquire(b.clone()).unwrap();
                let head = {
                    let (b, inside) = (b.clone(), inside.clone());
                    thread::spawn(move || {
                        let seat = match style {
                            Style::Async => loom::future::block_on(b.acquire_many(2)),
                            Style::Blocking => blocking(b.acquire_many(2), false),
                            Style::RePolling => blocking(b.acquire_many(2), true),
                        };
                        drop(inside.hold(2, 2, seat.unwrap()));
                    })
                };
                drop(held);
                head.join().unwrap();
                assert_all_seats_back(&b, 2);
            });
        }
    }
}

/// Rule 10 with the stuck section on another thread. A head for 2 seats
/// waits with 1 free; a waiter for 1 queues behind it, and its enqueue
/// section's drain stops at the head (stuck) while a holder gives back one
/// of its two seats (split off) and its try fails against that section.
/// The word the re-check reads differs from the stuck one by that seat, so
/// the re-check drains and grants the head both seats; the waiter behind
/// gets a seat once the head gives them back. A re-check that
/// skipped on any stuck word would leave the head queued next to two free
/// seats (a loom deadlock); one that ignored it would drain forever.
#[test]
fn a_release_whose_try_fails_against_a_stuck_section_is_handed_on() {
    loom::model(|| {
        let b = compartment(3, Admission::Fifo);
        let inside = WeightedInside::new();
        let a = OwnedSeat::try_acquire(b.clone()).unwrap();
        let mut c = OwnedSeat::try_acquire_many(b.clone(), 2).unwrap();
        // One seat free, not enough for the head: it stays in the word.
        drop(a);
        let (head, _) = queued_many(&b, 2);
        let head = {
            let inside = inside.clone();
            thread::spawn(move || drop(inside.hold(3, 2, loom::future::block_on(head).unwrap())))
        };
        // The waiter behind queues on its own thread and returns: it need
        // not park to be the section that races the release.
        let behind = {
            let b = b.clone();
            thread::spawn(move || {
                let count = StdArc::new(Counting(AtomicUsize::new(0)));
                let waker = Waker::from(count.clone());
                let mut w = Box::pin(OwnedSeat::acquire_many(b.clone(), 1));
                match w.as_mut().poll(&mut Context::from_waker(&waker)) {
                    // The head came and went before it arrived.
                    Poll::Ready(seat) => Ok(seat.unwrap()),
                    Poll::Pending => Err((w, count)),
                }
            })
        };
        // Give back one of the two seats: the head's second one. No later
        // release may hand it on instead.
        drop(c.split(1).unwrap());
        head.join().unwrap();
        // The head has come and gone: its seats went to the waiter behind.
        let seat = match behind.join().unwrap() {
            Ok(seat) => seat,
            Err((w, woken)) => woken_then_done(w, &woken, "the waiter behind the head").unwrap(),
        };
        drop(inside.hold(3, 1, seat));
        drop(c);
        assert_all_seats_back(&b, 3);
    });
}

/// A partial grant racing a cancel. A head for 2 seats waits with 1 free
/// (kept for it) and a waiter for 1 behind it; the head is dropped or
/// times out while the other seat is released. The seats the head was
/// waiting on go to the waiter behind (no lost seat: the section that
/// unlinks the head drains), and the count ends at 0 whichever comes
/// first.
#[test]
fn a_heavy_head_leaving_hands_its_reserved_seats_on() {
    for time_out in [false, true] {
        loom::model(move || {
            let b = compartment(2, Admission::Fifo);
            let a = OwnedSeat::try_acquire(b.clone()).unwrap();
            let c = OwnedSeat::try_acquire(b.clone()).unwrap();
            drop(a);
            let (mut head, _) = queued_many(&b, 2);
            let (behind, behind_woken) = queued_many(&b, 1);
            let leaver = thread::spawn(move || {
                if time_out {
                    // Granted in time, or timed out: either way nothing
                    // stays held.
                    drop(head.as_mut().time_out(core::time::Duration::from_millis(1)));
                } else {
                    drop(head);
                }
            });
            drop(c);
            leaver.join().unwrap();
            // Every thread that could hand it a seat is joined, and both
            // seats are free or held by it.
            drop(
                woken_then_done(behind, &behind_woken, "the waiter behind the heavy head").unwrap(),
            );
            assert_all_seats_back(&b, 2);
        });
    }
}

/// The same partial grant racing `close`: the head for 2 waits with 1
/// seat free and a waiter for 1 behind it; the other seat is released
/// while the compartment closes. Each waiter gets a verdict (the head its
/// 2 seats, or `Closed`; the one behind a seat or `Closed`), nobody is
/// left waiting, and every seat comes back.
#[test]
fn a_partial_grant_racing_close() {
    loom::model(|| {
        let b = compartment(2, Admission::Fifo);
        let inside = WeightedInside::new();
        let a = OwnedSeat::try_acquire(b.clone()).unwrap();
        let c = OwnedSeat::try_acquire(b.clone()).unwrap();
        drop(a);
        let (head, head_woken) = queued_many(&b, 2);
        let (behind, behind_woken) = queued_many(&b, 1);
        let releaser = thread::spawn(move || drop(c));
        b.close();
        releaser.join().unwrap();
        match woken_then_done(head, &head_woken, "the head waiting for 2") {
            Ok(seat) => drop(inside.hold(2, 2, seat)),
            Err(Error::Closed { .. }) => {}
            Err(e) => panic!("the head: {e}"),
        }
        match woken_then_done(behind, &behind_woken, "the waiter behind") {
            Ok(seat) => panic!(
                "the waiter behind got {} seat(s) in a closed compartment",
                seat.weight()
            ),
            Err(Error::Closed { .. }) => {}
            Err(e) => panic!("the waiter behind: {e}"),
        }
        assert_all_seats_back(&b, 2);
    });
}

/// `split` and `merge` racing a release while a waiter for 2 waits. Four
/// seats: a holder of 2 splits its seat and gives it back in two parts; the
/// main thread merges two single seats and gives them back as one. The
/// waiter for 3 gets its seats once 3 are free, whichever parts come back
/// first; every seat comes back exactly once (a split that kept the
/// original weight would free too many, a merge that lost a weight too
/// few).
#[test]
fn split_and_merge_racing_a_waiter_for_three() {
    loom::model(|| {
        let b = compartment(4, Admission::Fifo);
        let inside = WeightedInside::new();
        let two = OwnedSeat::try_acquire_many(b.clone(), 2).unwrap();
        let mut one = b.try_acquire().unwrap();
        let other = b.try_acquire().unwrap();
        let waiter = {
            let (b, inside) = (b.clone(), inside.clone());
            thread::spawn(move || {
                drop(inside.hold(4, 3, loom::future::block_on(b.acquire_many(3)).unwrap()));
            })
        };
        let splitter = thread::spawn(move || {
            let mut two = two;
            let part = two.split(1).unwrap();
            assert_eq!((two.weight(), part.weight()), (1, 1));
            drop(part);
            drop(two);
        });
        one.merge(other).unwrap();
        assert_eq!(one.weight(), 2);
        drop(one);
        splitter.join().unwrap();
        waiter.join().unwrap();
        assert_all_seats_back(&b, 4);
    });
}

/// `BoundedBarging` with a weighted starving waiter. A waiter for 2 is
/// woken when both seats come back, a barger takes one first, and its lost
/// race (the loom bound is 1) starts a hand-off: the next seats are kept
/// for it, FIFO-style. The barger's release races the starving waiter's
/// wait and a newcomer's tries: the starving waiter must get both seats,
/// and the newcomer may not take the one kept for it (the seat count
/// checks both).
#[test]
fn bounded_barging_hands_off_to_a_weighted_starving_waiter() {
    loom::model(|| {
        let b = compartment(2, Admission::BoundedBarging);
        let inside = WeightedInside::new();
        let held = OwnedSeat::try_acquire_many(b.clone(), 2).unwrap();
        let (mut x, x_woken) = queued_many(&b, 2);
        drop(held);
        assert!(x_woken.0.load(SeqCst) > 0, "the waiter for 2 is notified");
        let barger = OwnedSeat::try_acquire(b.clone()).expect("barging lets the arrival in");
        let waker = Waker::from(x_woken.clone());
        let poll = x.as_mut().poll(&mut Context::from_waker(&waker));
        assert!(poll.is_pending(), "the woken waiter lost the race");
        // Set once the starving waiter holds its seats, before it gives
        // them back: a newcomer may only take a seat after that.
        let served = Arc::new(AtomicUsize::new(0));
        let starving = {
            let (inside, served) = (inside.clone(), served.clone());
            thread::spawn(move || {
                let seat = inside.hold(2, 2, loom::future::block_on(x).unwrap());
                served.store(1, SeqCst);
                drop(seat);
            })
        };
        let releaser = thread::spawn(move || drop(barger));
        for _ in 0..2 {
            if let Ok(seat) = b.try_acquire() {
                assert_eq!(
                    served.load(SeqCst),
                    1,
                    "a newcomer took a seat kept for the starving waiter for 2"
                );
                drop(inside.hold(2, 1, seat));
            }
        }
        releaser.join().unwrap();
        starving.join().unwrap();
        assert_all_seats_back(&b, 2);
    });
}

/// Barging: a woken waiter covers as many free seats as it asks for (rule
/// 8's count is in seats). A waiter for 2 waits while both seats are held,
/// and a waiter for 1 arrives; the seats come back, the waiter for 2 is
/// woken and competes with the waiter for 1 for them. Both get their seats
/// in turn, and nobody spins: a count of woken waiters that added 1 for the
/// heavy waiter and took 2 off when it settled would wrap, and a drain that
/// woke a waiter the free seats cannot serve would wake it again at every
/// lost race (both reach loom's branch limit).
#[test]
fn barging_a_woken_heavy_waiter_covers_its_weight() {
    loom::model(|| {
        let b = compartment(2, Admission::Barging);
        let inside = WeightedInside::new();
        let held = OwnedSeat::try_acquire_many(b.clone(), 2).unwrap();
        let (heavy, _) = queued_many(&b, 2);
        let light = {
            let (b, inside) = (b.clone(), inside.clone());
            thread::spawn(move || {
                drop(inside.hold(2, 1, loom::future::block_on(b.acquire_many(1)).unwrap()));
            })
        };
        drop(held);
        drop(inside.hold(2, 2, loom::future::block_on(heavy).unwrap()));
        light.join().unwrap();
        assert_all_seats_back(&b, 2);
    });
}
