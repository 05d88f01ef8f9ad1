//! `acquire_timeout` under each `MaxWait`, borrowed and owned: which
//! budgets ask the caller's timer for a sleep, and the verdicts they give.

use std::cell::Cell;
use std::future::{Pending, Ready, pending, ready};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use std::vec::Vec;

use super::{Task, TestBulkhead, boxed, fifo, ready_err};
use crate::{Error, MaxWait, OwnedSeat};

/// A sleep function that records the durations it is asked for and
/// returns a timer that never completes.
fn never(asked: &Cell<Vec<Duration>>) -> impl FnOnce(Duration) -> Pending<()> + '_ {
    move |d| {
        let mut v = asked.take();
        v.push(d);
        asked.set(v);
        pending()
    }
}

/// The refusal of a full one-seat test compartment.
fn full(b: &TestBulkhead) -> Error {
    Error::Full {
        name: b.name_handle(),
        max_concurrent: 1,
        active: 1,
    }
}

#[test]
fn fail_fast_takes_a_free_seat_at_the_first_poll_without_a_timer() {
    let b = fifo(1);
    let asked = Cell::new(Vec::new());
    let t = Task::new();
    let mut w = boxed(b.acquire_timeout(MaxWait::FailFast, never(&asked)));
    assert!(matches!(t.poll(w.as_mut()), Poll::Ready(Ok(_))));
    assert_eq!(
        b.state().active,
        0,
        "the seat was given back with the poll's result"
    );
    assert!(asked.take().is_empty(), "fail fast asked for a timer");
}

#[test]
fn fail_fast_and_a_zero_budget_are_refused_at_once_when_full() {
    for max_wait in [MaxWait::FailFast, MaxWait::UpTo(Duration::ZERO)] {
        let b = fifo(1);
        let held = b.try_acquire().unwrap();
        let asked = Cell::new(Vec::new());
        let t = Task::new();
        let mut w = boxed(b.acquire_timeout(max_wait, never(&asked)));
        assert_eq!(ready_err(t.poll(w.as_mut())), full(&b), "{max_wait:?}");
        let s = b.state();
        assert_eq!(
            (s.rejected, s.timed_out, s.waiting),
            (1, 0, 0),
            "{max_wait:?}"
        );
        assert!(asked.take().is_empty(), "{max_wait:?} asked for a timer");
        assert!(!w.has_queued(), "{max_wait:?} joined the line");
        drop(held);
    }
}

#[test]
fn fail_fast_on_a_closed_compartment_is_closed() {
    let b = fifo(1);
    b.close();
    let t = Task::new();
    let asked = Cell::new(Vec::new());
    let mut w = boxed(b.acquire_timeout(MaxWait::FailFast, never(&asked)));
    assert_eq!(
        ready_err(t.poll(w.as_mut())),
        Error::Closed {
            name: "test".into()
        }
    );
    assert_eq!(b.state().rejected, 0);
}

#[test]
fn up_to_asks_for_one_sleep_of_the_budget_and_times_out_when_it_ends() {
    let b = fifo(1);
    let held = b.try_acquire().unwrap();
    let asked = Cell::new(Vec::new());
    let budget = Duration::from_millis(40);
    let t = Task::new();
    let mut w = boxed(b.acquire_timeout(MaxWait::UpTo(budget), |d| {
        asked.set(Vec::from([d]));
        ready(())
    }));
    assert_eq!(asked.take(), [budget]);
    assert_eq!(
        ready_err(t.poll(w.as_mut())),
        Error::Timeout {
            name: "test".into(),
            budget
        }
    );
    let s = b.state();
    assert_eq!((s.timed_out, s.rejected, s.waiting), (1, 0, 0));
    assert!(w.has_queued(), "the wait queued before its timer ran out");
    drop(held);
}

#[test]
fn a_plain_duration_is_a_budget() {
    let b = fifo(1);
    let held = b.try_acquire().unwrap();
    let t = Task::new();
    let mut w = boxed(b.acquire_timeout(Duration::from_millis(3), |_| ready(())));
    assert!(matches!(
        ready_err(t.poll(w.as_mut())),
        Error::Timeout { budget, .. } if budget == Duration::from_millis(3)
    ));
    drop(held);
}

#[test]
fn forever_waits_without_a_timer_until_a_seat_is_handed_over() {
    let b = fifo(1);
    let held = b.try_acquire().unwrap();
    let asked = Cell::new(Vec::new());
    let t = Task::new();
    let mut w = boxed(b.acquire_timeout(MaxWait::Forever, never(&asked)));
    for _ in 0..3 {
        assert!(t.poll(w.as_mut()).is_pending());
    }
    assert_eq!(b.state().waiting, 1);
    drop(held);
    assert!(matches!(t.poll(w.as_mut()), Poll::Ready(Ok(_))));
    assert!(asked.take().is_empty(), "forever asked for a timer");
    assert_eq!(b.state().timed_out, 0);
}

#[test]
#[should_panic(expected = "polled after it completed")]
fn a_fail_fast_wait_polled_again_panics() {
    let b = fifo(1);
    let t = Task::new();
    let mut w = boxed(b.acquire_timeout(MaxWait::FailFast, |_| ready(())));
    let _seat = t.poll(w.as_mut());
    let _ = t.poll(w.as_mut());
}

#[test]
fn the_owned_wait_takes_every_budget() {
    let b = Arc::new(fifo(1));
    let t = Task::new();
    let no_timer = |_: Duration| -> Ready<()> { panic!("asked for a timer") };

    let mut w = boxed(OwnedSeat::acquire_timeout(
        b.clone(),
        MaxWait::FailFast,
        no_timer,
    ));
    let Poll::Ready(Ok(held)) = t.poll(w.as_mut()) else {
        panic!("fail fast with a free seat")
    };
    assert!(Arc::ptr_eq(held.handle(), &b));

    let mut w = boxed(OwnedSeat::acquire_timeout(
        b.clone(),
        Duration::ZERO,
        no_timer,
    ));
    assert_eq!(ready_err(t.poll(w.as_mut())), full(&b));

    let budget = Duration::from_millis(7);
    let mut w = boxed(OwnedSeat::acquire_timeout(b.clone(), budget, |_| ready(())));
    assert_eq!(
        ready_err(t.poll(w.as_mut())),
        Error::Timeout {
            name: "test".into(),
            budget
        }
    );
    assert!(w.has_queued());

    let mut w = boxed(OwnedSeat::acquire_timeout(
        b.clone(),
        MaxWait::Forever,
        no_timer,
    ));
    assert!(t.poll(w.as_mut()).is_pending());
    drop(held);
    let Poll::Ready(Ok(seat)) = t.poll(w.as_mut()) else {
        panic!("forever: the seat handed over")
    };
    let s = b.state();
    assert_eq!((s.active, s.rejected, s.timed_out), (1, 1, 1));
    drop(seat);
    assert_eq!(Arc::strong_count(&b), 1, "every handle was given back");
}
