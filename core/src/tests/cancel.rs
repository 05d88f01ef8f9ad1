//! Cancellation at every await point, timeouts, and hand-off races.

use std::string::ToString;
use std::task::Poll;
use std::time::Duration;

use super::{Task, boxed, fifo, ready_err};
use crate::Error;

#[test]
fn dropping_an_unpolled_future_does_nothing() {
    let b = fifo(1);
    drop(b.acquire());
    assert_eq!(b.state().active, 0);
    assert!(b.try_acquire().is_ok());
}

#[test]
fn a_cancelled_head_passes_its_turn_to_the_next_waiter() {
    // bug class 1 in docs/bug-classes.md (embassy #6964).
    let b = fifo(1);
    let held = b.try_acquire().unwrap();
    let (t1, t2) = (Task::new(), Task::new());
    let mut head = boxed(b.acquire());
    let mut next = boxed(b.acquire());
    assert!(t1.poll(head.as_mut()).is_pending());
    assert!(t2.poll(next.as_mut()).is_pending());
    drop(head);
    assert_eq!(b.state().waiting, 1);
    drop(held);
    assert_eq!(t2.wakes(), 1);
    assert!(matches!(t2.poll(next.as_mut()), Poll::Ready(Ok(_))));
}

#[test]
fn a_granted_but_unpolled_waiter_passes_its_seat_on_when_dropped() {
    // bug class 2 in docs/bug-classes.md: the seat was reserved for `head`, which is then
    // cancelled before it runs.
    let b = fifo(1);
    let held = b.try_acquire().unwrap();
    let (t1, t2) = (Task::new(), Task::new());
    let mut head = boxed(b.acquire());
    let mut next = boxed(b.acquire());
    assert!(t1.poll(head.as_mut()).is_pending());
    assert!(t2.poll(next.as_mut()).is_pending());
    drop(held); // granted to head
    assert_eq!((t1.wakes(), t2.wakes()), (1, 0));
    drop(head); // cancelled after the grant: the seat must go to `next`
    assert_eq!(t2.wakes(), 1);
    let Poll::Ready(Ok(seat)) = t2.poll(next.as_mut()) else {
        panic!("seat lost")
    };
    assert_eq!(b.state().active, 1);
    drop(seat);
    assert_eq!(b.state().active, 0);
}

#[test]
fn a_granted_waiter_dropped_with_nobody_behind_returns_the_seat() {
    let b = fifo(1);
    let held = b.try_acquire().unwrap();
    let t = Task::new();
    let mut w = boxed(b.acquire());
    assert!(t.poll(w.as_mut()).is_pending());
    drop(held);
    drop(w);
    let s = b.state();
    assert_eq!((s.active, s.waiting), (0, 0));
    assert!(b.try_acquire().is_ok());
}

#[test]
fn timing_out_while_waiting_leaves_the_line_and_counts() {
    let b = fifo(1);
    let held = b.try_acquire().unwrap();
    let t = Task::new();
    let mut w = boxed(b.acquire());
    assert!(t.poll(w.as_mut()).is_pending());
    let err = w.as_mut().time_out(Duration::from_millis(5)).unwrap_err();
    assert_eq!(
        err,
        Error::Timeout {
            name: "test".into(),
            budget: Duration::from_millis(5)
        }
    );
    assert!(err.to_string().contains("5ms"));
    let s = b.state();
    assert_eq!((s.waiting, s.timed_out, s.active), (0, 1, 1));
    drop(held);
    assert!(
        b.try_acquire().is_ok(),
        "no seat may be reserved for a timed-out waiter"
    );
}

#[test]
fn a_timeout_racing_a_hand_off_keeps_the_seat() {
    // The seat was handed over just before the timer fired: the caller gets
    // it, and it is counted once.
    let b = fifo(1);
    let held = b.try_acquire().unwrap();
    let t = Task::new();
    let mut w = boxed(b.acquire());
    assert!(t.poll(w.as_mut()).is_pending());
    drop(held);
    let seat = w
        .as_mut()
        .time_out(Duration::from_millis(1))
        .expect("the handed-over seat");
    let s = b.state();
    assert_eq!((s.active, s.timed_out), (1, 0));
    drop(seat);
    assert_eq!(b.state().active, 0);
}

#[test]
fn abandon_returns_a_handed_over_seat_or_nothing() {
    let b = fifo(1);
    let held = b.try_acquire().unwrap();
    let t = Task::new();
    let mut w = boxed(b.acquire());
    assert!(t.poll(w.as_mut()).is_pending());
    assert!(w.as_mut().abandon().is_none());
    assert_eq!(b.state().waiting, 0);
    let mut w2 = boxed(b.acquire());
    assert!(t.poll(w2.as_mut()).is_pending());
    drop(held);
    assert!(w2.as_mut().abandon().is_some());
}

/// A timer future that is ready after `n` polls.
struct Countdown(usize);
impl Future for Countdown {
    type Output = ();
    fn poll(mut self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>) -> Poll<()> {
        if self.0 == 0 {
            return Poll::Ready(());
        }
        self.0 -= 1;
        Poll::Pending
    }
}

#[test]
fn acquire_timeout_gives_up_when_the_timer_fires() {
    let b = fifo(1);
    let held = b.try_acquire().unwrap();
    let t = Task::new();
    let mut w = boxed(b.acquire_timeout(Duration::from_secs(2), |_| Countdown(1)));
    assert!(t.poll(w.as_mut()).is_pending());
    assert_eq!(b.state().waiting, 1);
    assert_eq!(
        ready_err(t.poll(w.as_mut())),
        Error::Timeout {
            name: "test".into(),
            budget: Duration::from_secs(2)
        }
    );
    assert_eq!(b.state().waiting, 0);
    drop(held);
}

#[test]
fn acquire_timeout_prefers_a_seat_that_arrived_with_the_timer() {
    let b = fifo(1);
    let held = b.try_acquire().unwrap();
    let t = Task::new();
    let mut w = boxed(b.acquire_timeout(Duration::from_secs(1), |_| Countdown(1)));
    assert!(t.poll(w.as_mut()).is_pending());
    drop(held); // seat and timer are both ready at the next poll
    assert!(matches!(t.poll(w.as_mut()), Poll::Ready(Ok(_))));
    assert_eq!(b.state().timed_out, 0);
}

#[test]
fn dropping_a_timeout_future_mid_wait_leaves_no_trace() {
    let b = fifo(1);
    let held = b.try_acquire().unwrap();
    let t = Task::new();
    let mut w = boxed(b.acquire_timeout(Duration::from_secs(1), |_| Countdown(5)));
    assert!(t.poll(w.as_mut()).is_pending());
    drop(w);
    drop(held);
    let s = b.state();
    assert_eq!((s.active, s.waiting, s.timed_out), (0, 0, 0));
}
