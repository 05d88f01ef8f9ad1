//! The fast path, FIFO hand-off and the queue limit.

use std::task::Poll;
use std::vec::Vec;

use super::{Task, boxed, fifo, ready_err, with_config};
use crate::{Config, Error};

#[test]
fn try_acquire_takes_and_gives_back() {
    let b = fifo(2);
    let s1 = b.try_acquire().unwrap();
    let s2 = b.try_acquire().unwrap();
    assert_eq!(b.state().active, 2);
    assert_eq!(
        b.try_acquire().unwrap_err(),
        Error::Full {
            name: "test".into(),
            max_concurrent: 2,
            active: 2
        }
    );
    assert_eq!(b.state().rejected, 1);
    drop(s1);
    assert_eq!(b.state().active, 1);
    drop(s2);
    let s = b.state();
    assert_eq!(
        (s.active, s.waiting, s.rejected, s.available()),
        (0, 0, 1, 2)
    );
}

#[test]
fn acquire_is_ready_at_once_when_a_seat_is_free() {
    let b = fifo(1);
    let t = Task::new();
    let mut f = boxed(b.acquire());
    let Poll::Ready(Ok(seat)) = t.poll(f.as_mut()) else {
        panic!("expected a seat")
    };
    assert_eq!(b.state().active, 1);
    assert_eq!(b.state().waiting, 0);
    drop(seat);
    assert_eq!(b.state().active, 0);
}

#[test]
fn release_hands_the_seat_to_the_oldest_waiter_in_order() {
    let b = fifo(1);
    let held = b.try_acquire().unwrap();
    let tasks: Vec<Task> = (0..3).map(|_| Task::new()).collect();
    let mut futs: Vec<_> = (0..3).map(|_| boxed(b.acquire())).collect();
    for (t, f) in tasks.iter().zip(futs.iter_mut()) {
        assert!(t.poll(f.as_mut()).is_pending());
    }
    assert_eq!(b.state().waiting, 3);

    drop(held);
    // Only the oldest waiter was woken, and its seat is reserved.
    assert_eq!(tasks.iter().map(Task::wakes).collect::<Vec<_>>(), [1, 0, 0]);
    assert_eq!(b.state().active, 1);
    assert!(
        b.try_acquire().is_err(),
        "an arrival must not jump the queue"
    );

    let mut order = Vec::new();
    for round in 0..3 {
        for (i, (t, f)) in tasks.iter().zip(futs.iter_mut()).enumerate() {
            if t.wakes() > round && !order.contains(&i) {
                let Poll::Ready(Ok(seat)) = t.poll(f.as_mut()) else {
                    panic!("woken without a seat")
                };
                order.push(i);
                drop(seat);
            }
        }
    }
    assert_eq!(order, [0, 1, 2]);
    let s = b.state();
    assert_eq!((s.active, s.waiting), (0, 0));
    assert!(
        b.try_acquire().is_ok(),
        "WAITERS must be clear once the queue is empty"
    );
}

#[test]
fn an_arrival_waits_behind_earlier_waiters_even_if_a_seat_is_free() {
    let b = fifo(2);
    let s1 = b.try_acquire().unwrap();
    let s2 = b.try_acquire().unwrap();
    let (t1, t2) = (Task::new(), Task::new());
    let mut w1 = boxed(b.acquire());
    assert!(t1.poll(w1.as_mut()).is_pending());
    drop(s1); // handed to w1
    let mut w2 = boxed(b.acquire());
    assert!(
        t2.poll(w2.as_mut()).is_pending(),
        "no free seat: it went to w1"
    );
    assert!(matches!(t1.poll(w1.as_mut()), Poll::Ready(Ok(_))));
    drop(s2); // handed to w2
    assert!(matches!(t2.poll(w2.as_mut()), Poll::Ready(Ok(_))));
}

#[cfg(feature = "queue-limits")]
#[test]
fn queue_limit_turns_callers_away_at_the_boundary() {
    let b = with_config(Config::new("q", 1).max_waiting(2));
    let held = b.try_acquire().unwrap();
    let t = Task::new();
    let mut w1 = boxed(b.acquire());
    let mut w2 = boxed(b.acquire());
    let mut w3 = boxed(b.acquire());
    assert!(t.poll(w1.as_mut()).is_pending());
    assert!(t.poll(w2.as_mut()).is_pending());
    assert_eq!(
        ready_err(t.poll(w3.as_mut())),
        Error::QueueFull {
            name: "q".into(),
            max_waiting: 2
        }
    );
    assert_eq!(b.state().rejected, 1);
    assert_eq!(b.state().waiting, 2);
    // One leaves: there is room again.
    drop(w1);
    let mut w4 = boxed(b.acquire());
    assert!(t.poll(w4.as_mut()).is_pending());
    drop(held);
    assert!(matches!(t.poll(w2.as_mut()), Poll::Ready(Ok(_))));
}

#[cfg(feature = "queue-limits")]
#[test]
fn max_waiting_zero_means_fail_fast_but_still_takes_a_free_seat() {
    let b = with_config(Config::new("z", 1).max_waiting(0));
    let t = Task::new();
    let mut f = boxed(b.acquire());
    let Poll::Ready(Ok(seat)) = t.poll(f.as_mut()) else {
        panic!()
    };
    let mut g = boxed(b.acquire());
    assert!(matches!(
        t.poll(g.as_mut()),
        Poll::Ready(Err(Error::QueueFull { max_waiting: 0, .. }))
    ));
    drop(seat);
    b.set_max_waiting(None).unwrap();
    assert_eq!(b.state().waiting, 0);
}

#[test]
fn a_spurious_poll_keeps_the_place_in_line_and_updates_the_waker() {
    let b = fifo(1);
    let held = b.try_acquire().unwrap();
    let (old, new) = (Task::new(), Task::new());
    let mut f = boxed(b.acquire());
    assert!(old.poll(f.as_mut()).is_pending());
    assert!(new.poll(f.as_mut()).is_pending()); // moved to another task
    assert_eq!(b.state().waiting, 1);
    drop(held);
    assert_eq!(
        (old.wakes(), new.wakes()),
        (0, 1),
        "the latest waker must be woken"
    );
    assert!(matches!(new.poll(f.as_mut()), Poll::Ready(Ok(_))));
}

#[test]
#[should_panic(expected = "polled after it completed")]
fn polling_after_completion_panics_with_a_clear_message() {
    let b = fifo(1);
    let t = Task::new();
    let mut f = boxed(b.acquire());
    let _seat = t.poll(f.as_mut());
    let _ = t.poll(f.as_mut());
}

#[test]
fn many_seats_freed_at_once_wake_as_many_waiters_across_batches() {
    // More waiters than one lock section's waker batch holds.
    let b = fifo(20);
    let seats: Vec<_> = (0..20).map(|_| b.try_acquire().unwrap()).collect();
    let tasks: Vec<Task> = (0..20).map(|_| Task::new()).collect();
    let mut futs: Vec<_> = (0..20).map(|_| boxed(b.acquire())).collect();
    for (t, f) in tasks.iter().zip(futs.iter_mut()) {
        assert!(t.poll(f.as_mut()).is_pending());
    }
    b.set_max_concurrent(40).unwrap(); // 20 new seats at once
    assert!(
        tasks.iter().all(|t| t.wakes() == 1),
        "every waiter gets one of the new seats"
    );
    for (t, f) in tasks.iter().zip(futs.iter_mut()) {
        assert!(matches!(t.poll(f.as_mut()), Poll::Ready(Ok(_))));
    }
    assert_eq!(b.state().waiting, 0);
    drop(seats);
}
