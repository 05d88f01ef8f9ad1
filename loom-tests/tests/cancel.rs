//! Cancellation and timeouts racing hand-offs.
#![cfg(bulkhead_loom)]

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
/// (bug class 1 in docs/bug-classes.md, embassy #6964).
#[test]
fn barging_timeout_passes_the_wake_up_on() {
    loom::model(|| leaver_and_waiter(barging(1), time_out_early, acquire_async));
}
