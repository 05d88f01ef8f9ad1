//! Cancellation and timeouts racing hand-offs.
#![cfg(bulkhead_loom)]

use std::pin::pin;
use std::task::{Context, Poll, Waker};

use bulkhead_core::OwnedSeat;
use bulkhead_loom_tests::{
    acquire_async, acquire_then_time_out, assert_quiescent, barging, fifo, leaver_and_waiter,
    poll_once_then_drop, time_out_early,
};
use loom::thread;

/// The head waiter is cancelled while another waits behind it; the one
/// behind must still get the seat (bug class 1 in docs/bug-classes.md).
#[test]
fn head_cancelled_while_others_wait() {
    loom::model(|| leaver_and_waiter(fifo(1), poll_once_then_drop, acquire_async));
}

/// A timeout races a hand-off: the seat is either taken by the timing-out
/// waiter or never handed to it; never lost, never counted twice
/// (bug class 2 in docs/bug-classes.md).
#[test]
fn timeout_racing_a_hand_off() {
    loom::model(|| {
        let b = fifo(1);
        let seat = b.try_acquire().unwrap();
        let t = {
            let b = b.clone();
            thread::spawn(move || acquire_then_time_out(&b).is_ok())
        };
        drop(seat);
        let got_seat = t.join().unwrap();
        let s = b.state();
        assert_eq!(
            s.timed_out,
            usize::from(!got_seat),
            "exactly one outcome: {s:?}"
        );
        assert_quiescent(&b);
    });
}

/// The same race with a second waiter behind: a seat handed to the
/// timing-out waiter and then returned must reach the second one.
#[test]
fn timeout_racing_a_hand_off_with_a_waiter_behind() {
    loom::model(|| leaver_and_waiter(fifo(1), time_out_early, acquire_async));
}

/// Barging: a woken waiter that times out passes its wake-up on
/// (bug class 1 in docs/bug-classes.md; embassy-sync had it:
/// <https://github.com/embassy-rs/embassy/pull/6964>).
#[test]
fn barging_timeout_passes_the_wake_up_on() {
    loom::model(|| leaver_and_waiter(barging(1), time_out_early, acquire_async));
}

/// `Acquire::abandon` races `close` and a release. Whether the waiter was
/// granted the seat, closed out, or still queued when it gave up, the one
/// decision under the lock must leave nothing behind: a granted seat comes
/// back from `abandon` and is released, and a node that `close` already
/// unlinked is not unlinked again (bug class 2 in docs/bug-classes.md).
#[test]
fn abandon_racing_close_and_a_release() {
    loom::model(|| {
        let b = fifo(1);
        let seat = OwnedSeat::try_acquire(b.clone()).unwrap();
        let leaver = {
            let b = b.clone();
            thread::spawn(move || {
                let mut fut = pin!(b.acquire());
                match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
                    Poll::Ready(result) => drop(result),
                    Poll::Pending => drop(fut.abandon()),
                }
            })
        };
        let releaser = thread::spawn(move || drop(seat));
        b.close();
        releaser.join().unwrap();
        leaver.join().unwrap();
        assert_quiescent(&b);
    });
}
