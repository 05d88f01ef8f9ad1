//! Memory orderings that no other model depends on: each model here is the
//! one that fails when a particular ordering in core is weakened (the
//! "Memory orderings" table in docs/design.md names them). Every model has
//! at most three threads and is quick at bound 2.
//!
//! The data a model checks lives in a loom `UnsafeCell`: loom reports an
//! access that does not happen-after the previous write as a causality
//! violation, so a missing happens-before edge fails the model even when
//! the value read would have been right.
#![cfg(bulkhead_loom)]

use std::pin::pin;
use std::task::{Context, Poll, Waker};

use bulkhead_core::OwnedSeat;
use bulkhead_loom_tests::{LoomBulkhead, Watched, assert_quiescent, barging, fifo, queued};
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

/// Takes the only seat of `b` and returns a thread that writes `1` into
/// `data` under it, then gives the seat back.
fn writer_holding_the_seat(
    b: &Arc<LoomBulkhead>,
    data: &Arc<UnsafeCell<usize>>,
) -> thread::JoinHandle<()> {
    let seat = OwnedSeat::try_acquire(b.clone()).unwrap();
    let data = data.clone();
    thread::spawn(move || {
        // SAFETY: the seat excludes every other access.
        data.with_mut(|d| unsafe { *d = 1 });
        drop(seat);
    })
}

/// `close` happens-before an `is_closed` that returns `true`: the closer's
/// `Release` RMW on the word pairs with `is_closed`'s `Acquire` load, as a
/// shutdown flag would. Catches a `close` that does not release
/// (`Relaxed` or `Acquire`) and an `is_closed` that does not acquire.
#[test]
fn close_happens_before_an_is_closed_that_sees_it() {
    loom::model(|| {
        let b = fifo(1);
        let data = Arc::new(UnsafeCell::new(0usize));
        let observer = {
            let (b, data) = (b.clone(), data.clone());
            thread::spawn(move || {
                if b.is_closed() {
                    // SAFETY: the write happened before `close`, which
                    // happened before this check returned `true`.
                    data.with(|d| assert_eq!(unsafe { *d }, 1));
                }
            })
        };
        // SAFETY: the observer reads only after seeing the close.
        data.with_mut(|d| unsafe { *d = 1 });
        b.close();
        observer.join().unwrap();
    });
}

/// A snapshot that shows nobody inside happens-after every seat given back
/// before it: `state`'s `Acquire` load pairs with the releases' `Release`
/// RMWs (they head release sequences that every later change of the word
/// continues). So "wait until `active == 0`, then read what the holders
/// wrote" is sound. Catches a `Relaxed` load in `state`.
#[test]
fn a_snapshot_with_nobody_inside_sees_the_last_holders_work() {
    loom::model(|| {
        let b = fifo(1);
        let data = Arc::new(UnsafeCell::new(0usize));
        let holder = writer_holding_the_seat(&b, &data);
        if b.state().active == 0 {
            // SAFETY: the only write happened under the seat, which was
            // given back before this snapshot.
            data.with(|d| assert_eq!(unsafe { *d }, 1));
        }
        holder.join().unwrap();
        assert_quiescent(&b);
    });
}

/// A barging waiter's re-poll takes a seat that a release freed while the
/// re-poll held the lock. The release's try fails, so nothing but the
/// taking CAS relates the re-poll to the releaser: no notification was
/// made for this seat yet, and the re-poll was not caused by a wake-up
/// (the second poll comes unasked, as any executor may poll). The CAS must
/// acquire. Catches a `Relaxed` success ordering in the barging re-poll's
/// take.
#[test]
fn a_barging_re_poll_taking_a_seat_sees_the_releasers_work() {
    loom::model(|| {
        let b = barging(1);
        let data = Arc::new(UnsafeCell::new(0usize));
        let releaser = writer_holding_the_seat(&b, &data);
        {
            let mut cx = Context::from_waker(Waker::noop());
            let mut fut = pin!(b.acquire());
            for _ in 0..2 {
                if let Poll::Ready(result) = fut.as_mut().poll(&mut cx) {
                    let _seat = result.unwrap();
                    // SAFETY: the one write happened under the seat this
                    // waiter now holds.
                    data.with(|d| assert_eq!(unsafe { *d }, 1));
                    break;
                }
            }
            // Still waiting after two polls: dropping the future leaves the
            // line (and passes on a wake-up it may have been given).
        }
        releaser.join().unwrap();
        assert_quiescent(&b);
    });
}

/// The barging form of the delegated release: a release lands while a
/// waiter holds the lock to link itself. The seat is uncovered (nobody is
/// notified yet), so the release tries the lock and fails; the holder must
/// see the seat after it unlocks, or the release's try must see the
/// unlock. Both are RMWs on the seat word, as in FIFO mode: the holder's
/// re-check `Release`, the release's add `Acquire` (rule 1 in
/// core/src/engine.rs). Catches either side weakened.
///
/// The waiter is a [`Watched`] one on the main thread, so that a lost
/// wake-up fails with this model's name and the rule it breaks (a
/// blocking waiter would make it a loom deadlock, which aborts the binary
/// with no model named: `add_seats` weakened to `Relaxed` or `Release`,
/// and the re-check to `Relaxed`, are caught here).
#[test]
fn barging_release_while_the_lock_is_held_is_delegated() {
    loom::model(|| {
        let b = barging(1);
        let seat = OwnedSeat::try_acquire(b.clone()).unwrap();
        let releaser = thread::spawn(move || drop(seat));
        // Queues (its section may hold the lock as the release tries it),
        // or finds the seat already free.
        let mut waiter = Watched::new(&b);
        let first = waiter.poll();
        releaser.join().unwrap();
        let seat = match first {
            Poll::Ready(seat) => seat.unwrap(),
            Poll::Pending => waiter.woken_then_granted(
                "barging_release_while_the_lock_is_held_is_delegated",
                "rule 1: the release's try failed and the holder's re-check missed its seat",
            ),
        };
        drop(seat);
        assert_quiescent(&b);
    });
}

/// A barging wake-up handed on by a third thread carries its seat: the
/// release's try fails because a second waiter holds the lock to link
/// itself; that waiter's drain (or its re-check's) sees the seat and
/// notifies the older waiter, which re-polls. The re-poll's load of the
/// word must not miss the seat the drain saw (E4 in docs/design.md: read-
/// read coherence through the lock), or it gives up and waits again, and
/// the second waiter sleeps next to the free seat (its assertion). Once
/// caught a release whose wake-up count did not release; kept for the
/// shape (a notification made by a third thread).
#[test]
fn a_barging_wake_up_handed_on_by_a_third_thread_carries_its_seat() {
    loom::model(|| {
        let b = barging(1);
        let seat = OwnedSeat::try_acquire(b.clone()).unwrap();
        let mut older = queued(&b);
        let releaser = thread::spawn(move || drop(seat));
        // The second waiter queues on its own thread and is checked on
        // this one (a `Watched` waiter: a lost wake-up fails naming this
        // model instead of aborting the binary).
        let younger = {
            let b = b.clone();
            thread::spawn(move || {
                let mut w = Watched::new(&b);
                let first = w.poll();
                (w, first)
            })
        };
        // Re-poll once: take the seat if it is free by now, else leave.
        if let Poll::Ready(result) = older.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            drop(result.unwrap());
        }
        drop(older);
        releaser.join().unwrap();
        let (younger, first) = younger.join().unwrap();
        let seat = match first {
            Poll::Ready(seat) => seat.unwrap(),
            Poll::Pending => younger.woken_then_granted(
                "a_barging_wake_up_handed_on_by_a_third_thread_carries_its_seat",
                "the second waiter sleeps next to the free seat",
            ),
        };
        drop(seat);
        assert_quiescent(&b);
    });
}
