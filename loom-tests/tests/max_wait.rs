//! `acquire_timeout` under each `MaxWait`, racing a release (borrowed and
//! owned), through the real `AcquireTimeout` poll.
#![cfg(bulkhead_loom)]

use std::future::ready;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bulkhead_core::{Error, MaxWait, OwnedSeat};
use bulkhead_loom_tests::{
    LoomBulkhead, acquire_async, assert_quiescent, barging, fifo, leaver_and_waiter,
};
use loom::thread;

/// One poll of `acquire_timeout(max_wait)` with a timer that has already
/// run out: a seat, or the budget's refusal.
fn once(b: &LoomBulkhead, max_wait: MaxWait) -> Result<(), Error> {
    let mut cx = Context::from_waker(Waker::noop());
    let fut = pin!(b.acquire_timeout(max_wait, |_| ready(())));
    match fut.poll(&mut cx) {
        Poll::Ready(r) => r.map(drop),
        Poll::Pending => panic!("a timer that has run out left the wait pending"),
    }
}

fn owned_once(b: &loom::sync::Arc<LoomBulkhead>, max_wait: MaxWait) -> Result<(), Error> {
    let mut cx = Context::from_waker(Waker::noop());
    let fut = pin!(OwnedSeat::acquire_timeout(b.clone(), max_wait, |_| ready(
        ()
    )));
    match fut.poll(&mut cx) {
        Poll::Ready(r) => r.map(drop),
        Poll::Pending => panic!("a timer that has run out left the wait pending"),
    }
}

fn race(b: loom::sync::Arc<LoomBulkhead>, max_wait: MaxWait, owned: bool) {
    let seat = b.try_acquire().unwrap();
    let t = {
        let b = b.clone();
        thread::spawn(move || {
            if owned {
                owned_once(&b, max_wait)
            } else {
                once(&b, max_wait)
            }
        })
    };
    drop(seat);
    let r = t.join().unwrap();
    let s = b.state();
    match (max_wait, &r) {
        (_, Ok(())) => assert_eq!((s.rejected, s.timed_out), (0, 0), "{s:?}"),
        (MaxWait::FailFast, Err(Error::Full { .. })) => {
            assert_eq!((s.rejected, s.timed_out), (1, 0), "{s:?}")
        }
        (MaxWait::UpTo(_), Err(Error::Timeout { .. })) => {
            assert_eq!((s.rejected, s.timed_out), (0, 1), "{s:?}")
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_quiescent(&b);
}

#[test]
fn up_to_with_a_spent_timer_racing_a_release() {
    for owned in [false, true] {
        loom::model(move || race(fifo(1), MaxWait::UpTo(Duration::from_millis(1)), owned));
        loom::model(move || race(barging(1), MaxWait::UpTo(Duration::from_millis(1)), owned));
    }
}

#[test]
fn fail_fast_racing_a_release() {
    for owned in [false, true] {
        loom::model(move || race(fifo(1), MaxWait::FailFast, owned));
        loom::model(move || race(barging(1), MaxWait::FailFast, owned));
    }
}

fn up_to_leaver(b: &LoomBulkhead) {
    let _ = once(b, MaxWait::UpTo(Duration::from_millis(1)));
}

#[test]
fn up_to_timeout_passes_the_seat_or_wake_up_on() {
    loom::model(|| leaver_and_waiter(fifo(1), up_to_leaver, acquire_async));
    loom::model(|| leaver_and_waiter(barging(1), up_to_leaver, acquire_async));
}
