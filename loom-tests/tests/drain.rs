//! The drains of a `BoundedBarging` compartment in a hand-off, and what
//! counts as a lost race (loom builds: a batch of 2, and a hand-off after
//! one lost race).
//!
//! - A grow during a hand-off with notified waiters behind the starving
//!   head: the FIFO drain counts nodes, not wakers (a notified node has no
//!   waker), so it stops after a batch and relies on the re-check to go
//!   on, also when a racing release holds the lock. Every section stays
//!   within rule 7's bound and every waiter is granted.
//! - A take that fails because a shrink left a debt is no lost race: it
//!   must not start a hand-off, which would hand the next free seat to the
//!   waiter instead of letting it compete.
#![cfg(bulkhead_loom)]

use std::pin::Pin;
use std::sync::Arc as StdArc;
use std::task::{Context, Poll, Wake, Waker};

use bulkhead_core::{AcquireOwned, Admission, Config, OwnedSeat};
use bulkhead_loom_tests::{LoomBulkhead, assert_quiescent, with_config};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::thread;

type Waiter = Pin<Box<AcquireOwned<Arc<LoomBulkhead>>>>;
type Seat = OwnedSeat<Arc<LoomBulkhead>>;

/// Rule 7's bound in loom builds: a batch of 2 nodes, plus the one the
/// operation around the drain touches, plus one look at an empty front.
const SECTION_BOUND: usize = 2 + 2;

fn bounded(max: usize) -> Arc<LoomBulkhead> {
    with_config(Config::new("loom", max).admission(Admission::BoundedBarging))
}

/// A waker that counts its wake-ups.
struct Counting(AtomicUsize);

impl Wake for Counting {
    fn wake(self: StdArc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// A waiter polled on the main thread, with a counting waker.
struct Polled {
    fut: Waiter,
    wakes: StdArc<Counting>,
}

impl Polled {
    /// An owned `acquire`, polled once: it queues.
    fn queue(b: &Arc<LoomBulkhead>) -> Self {
        let mut w = Self {
            fut: Box::pin(OwnedSeat::acquire(b.clone())),
            wakes: StdArc::new(Counting(AtomicUsize::new(0))),
        };
        assert!(w.poll().is_pending(), "expected to queue: {:?}", b.state());
        w
    }

    fn poll(&mut self) -> Poll<Result<Seat, bulkhead_core::Error>> {
        let waker = Waker::from(self.wakes.clone());
        self.fut.as_mut().poll(&mut Context::from_waker(&waker))
    }

    fn wakes(&self) -> usize {
        self.wakes.0.load(SeqCst)
    }
}

/// Item 1 of the review: a grow during a hand-off with three notified
/// waiters (their wakers taken) behind the starving head, racing a release
/// that tries the lock. Before the fix, the grow's FIFO drain granted all
/// four in one section (5 nodes, with the look at the empty front),
/// because it stopped only on a full batch of wakers. Now each drain stops
/// after 2 nodes; the rest is drained by the re-checks, the grow's or, if
/// the release held the lock then, the release's. Every waiter must be
/// granted (a drain cut short with nobody re-checking strands them), and
/// no section may exceed the bound.
#[test]
fn bounded_a_grow_during_a_hand_off_with_notified_waiters_stays_bounded() {
    loom::model(|| {
        let b = bounded(1);
        let first = OwnedSeat::try_acquire(b.clone()).unwrap();
        let mut waiters: Vec<Polled> = (0..4).map(|_| Polled::queue(&b)).collect();
        // Sequential setup: a grow notifies all four, bargers take the new
        // seats, and the head's re-poll loses: its one race in loom builds,
        // so the hand-off begins with three notified waiters behind it.
        b.set_max_concurrent(5).unwrap();
        assert!(waiters.iter().all(|w| w.wakes() == 1));
        let mut bargers: Vec<Seat> = (0..4)
            .map(|_| OwnedSeat::try_acquire(b.clone()).unwrap())
            .collect();
        assert!(waiters[0].poll().is_pending());
        assert!(b.try_acquire().is_err(), "the hand-off admits FIFO-style");
        b.loom_max_section_visits();
        let grow = {
            let b = b.clone();
            thread::spawn(move || {
                b.set_max_concurrent(8).unwrap();
            })
        };
        let barger = bargers.pop().unwrap();
        let release = thread::spawn(move || drop(barger));
        grow.join().unwrap();
        release.join().unwrap();
        let visits = b.loom_max_section_visits();
        assert!(
            (1..=SECTION_BOUND).contains(&visits),
            "a section reached {visits} nodes (bound {SECTION_BOUND})"
        );
        // Three new seats and one freed: each waiter was granted one.
        let mut seats = Vec::new();
        for (i, w) in waiters.iter_mut().enumerate() {
            match w.poll() {
                Poll::Ready(Ok(seat)) => seats.push(seat),
                other => panic!("waiter {i} was not granted: {:?}", other.is_ready()),
            }
        }
        drop((seats, bargers, first));
        assert_quiescent(&b);
    });
}

/// A waiter woken by a release re-polls while a shrink leaves a debt
/// (`set_max_concurrent(0)` with one seat free and one held). Its failed
/// take counts as a lost race (rule 9: the word cannot tell a shrink's
/// take from a rival's), and with loom's bound of one lost race it may
/// start a hand-off. In every interleaving no seat and no wake-up is lost:
/// growing back frees a seat that the waiter is handed or notified of, a
/// newcomer gets it only if the compartment still barges, and everything
/// ends quiescent.
#[test]
fn bounded_a_take_refused_by_a_shrink_loses_no_seat_or_wake_up() {
    loom::model(|| {
        let b = bounded(2);
        let first = OwnedSeat::try_acquire(b.clone()).unwrap();
        let second = OwnedSeat::try_acquire(b.clone()).unwrap();
        let mut w = Polled::queue(&b);
        let shrink = {
            let b = b.clone();
            thread::spawn(move || {
                drop(first);
                b.set_max_concurrent(0).unwrap();
            })
        };
        // A re-poll racing the release and the shrink: it may find the
        // node still waiting, take the freed seat, or find the debt.
        let early = w.poll();
        shrink.join().unwrap();
        if let Poll::Ready(seat) = early {
            drop(seat.unwrap());
            drop(second);
            assert_quiescent(&b);
            return;
        }
        // Growing back frees one seat (the debt is paid): barging, the
        // waiter is notified and a newcomer may take the seat; in a
        // hand-off the seat is the waiter's and the newcomer is refused.
        b.set_max_concurrent(2).unwrap();
        let newcomer = OwnedSeat::try_acquire(b.clone()).ok();
        assert!(w.wakes() >= 1, "the waiter was woken for the seat");
        drop(newcomer);
        let Poll::Ready(Ok(seat)) = w.poll() else {
            panic!("the waiter finds the seat given back")
        };
        drop((seat, second));
        assert_quiescent(&b);
    });
}
