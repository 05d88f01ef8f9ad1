//! The order of the line: newest first, and drop-oldest.

use std::task::Poll;
use std::vec::Vec;

use super::{Task, boxed, ready_err, with_config};
use crate::{Admission, Config, Error, QueueOrder};

fn lifo(max: usize, admission: Admission) -> super::TestBulkhead {
    with_config(
        Config::new("test", max)
            .admission(admission)
            .queue_order(QueueOrder::Lifo),
    )
}

#[test]
fn newest_first_serves_the_newest_waiter_in_every_admission_mode() {
    for admission in [
        Admission::Fifo,
        Admission::Barging,
        Admission::BoundedBarging,
    ] {
        let b = lifo(1, admission);
        let held = b.try_acquire().unwrap();
        let tasks: Vec<Task> = (0..3).map(|_| Task::new()).collect();
        let mut futs: Vec<_> = (0..3).map(|_| boxed(b.acquire())).collect();
        for (t, f) in tasks.iter().zip(futs.iter_mut()) {
            assert!(t.poll(f.as_mut()).is_pending());
        }
        drop(held);
        let woken: Vec<usize> = tasks.iter().map(Task::wakes).collect();
        assert_eq!(woken, [0, 0, 1], "{admission:?}: the newest is woken");
        let Poll::Ready(Ok(seat)) = tasks[2].poll(futs[2].as_mut()) else {
            panic!("{admission:?}: the newest gets the seat")
        };
        drop(seat);
        assert_eq!(tasks[1].wakes(), 1, "{admission:?}: then the next newest");
        drop(futs);
        assert_eq!(b.state().waiting, 0);
    }
}

#[test]
fn a_full_newest_first_queue_drops_its_oldest_waiter() {
    let b = with_config(
        Config::new("test", 1)
            .max_waiting(2)
            .queue_order(QueueOrder::Lifo),
    );
    let held = b.try_acquire().unwrap();
    let tasks: Vec<Task> = (0..3).map(|_| Task::new()).collect();
    let mut futs: Vec<_> = (0..3).map(|_| boxed(b.acquire())).collect();
    assert!(tasks[0].poll(futs[0].as_mut()).is_pending());
    assert!(tasks[1].poll(futs[1].as_mut()).is_pending());
    assert_eq!(b.state().rejected, 0);
    // The third finds the queue full: the oldest is dropped, woken with
    // `QueueFull`, and counted when it learns it.
    assert!(tasks[2].poll(futs[2].as_mut()).is_pending());
    assert_eq!((tasks[0].wakes(), b.state().waiting), (1, 2));
    assert_eq!(
        ready_err(tasks[0].poll(futs[0].as_mut())),
        Error::QueueFull {
            name: "test".into(),
            max_waiting: 2
        }
    );
    assert_eq!(b.state().rejected, 1);
    drop(held);
    assert!(matches!(
        tasks[2].poll(futs[2].as_mut()),
        Poll::Ready(Ok(_))
    ));
}

#[test]
fn a_full_oldest_first_queue_turns_the_newcomer_away() {
    let b = with_config(Config::new("test", 1).max_waiting(1));
    let held = b.try_acquire().unwrap();
    let (t1, t2) = (Task::new(), Task::new());
    let mut first = boxed(b.acquire());
    let mut second = boxed(b.acquire());
    assert!(t1.poll(first.as_mut()).is_pending());
    assert!(matches!(
        ready_err(t2.poll(second.as_mut())),
        Error::QueueFull { .. }
    ));
    assert_eq!(t1.wakes(), 0);
    drop(held);
    assert!(matches!(t1.poll(first.as_mut()), Poll::Ready(Ok(_))));
}

/// A queue limit of 1: dropping the oldest empties the list (and clears
/// `WAITERS`), so the newcomer must publish `WAITERS` again before it
/// links, or a release would never hand it the seat.
#[test]
fn drop_oldest_that_empties_the_line_still_gets_the_newcomer_its_seat() {
    for admission in [
        Admission::Fifo,
        Admission::Barging,
        Admission::BoundedBarging,
    ] {
        let b = with_config(
            Config::new("test", 1)
                .admission(admission)
                .max_waiting(1)
                .queue_order(QueueOrder::Lifo),
        );
        let held = b.try_acquire().unwrap();
        let (t1, t2) = (Task::new(), Task::new());
        let mut old = boxed(b.acquire());
        let mut new = boxed(b.acquire());
        assert!(t1.poll(old.as_mut()).is_pending());
        assert!(t2.poll(new.as_mut()).is_pending());
        assert!(matches!(
            ready_err(t1.poll(old.as_mut())),
            Error::QueueFull { .. }
        ));
        drop(held);
        assert_eq!(t2.wakes(), 1, "{admission:?}");
        assert!(
            matches!(t2.poll(new.as_mut()), Poll::Ready(Ok(_))),
            "{admission:?}"
        );
    }
}

/// A dropped waiter whose owner times out or abandons instead of polling
/// learns `QueueFull` (time out) or nothing (abandon), counted once.
#[test]
fn a_dropped_waiter_is_counted_once_however_its_owner_learns_it() {
    for how in ["time out", "abandon", "drop"] {
        let b = with_config(
            Config::new("test", 1)
                .max_waiting(1)
                .queue_order(QueueOrder::Lifo),
        );
        let _held = b.try_acquire().unwrap();
        let (t1, t2) = (Task::new(), Task::new());
        let mut old = boxed(b.acquire());
        let mut new = boxed(b.acquire());
        assert!(t1.poll(old.as_mut()).is_pending());
        assert!(t2.poll(new.as_mut()).is_pending());
        match how {
            "time out" => assert!(matches!(
                old.as_mut().time_out(core::time::Duration::from_millis(1)),
                Err(Error::QueueFull { .. })
            )),
            "abandon" => assert!(old.as_mut().abandon().is_none()),
            _ => drop(old),
        }
        assert_eq!((b.state().rejected, b.state().timed_out), (1, 0), "{how}");
    }
}

/// Drop-oldest drops exactly one waiter per newcomer, even above a queue
/// limit that shrank, so a section stays bounded.
#[test]
fn drop_oldest_drops_one_waiter_per_newcomer_above_a_shrunk_limit() {
    let b = with_config(Config::new("test", 1).queue_order(QueueOrder::Lifo));
    let _held = b.try_acquire().unwrap();
    let tasks: Vec<Task> = (0..5).map(|_| Task::new()).collect();
    let mut futs: Vec<_> = (0..5).map(|_| boxed(b.acquire())).collect();
    for i in 0..4 {
        assert!(tasks[i].poll(futs[i].as_mut()).is_pending());
    }
    b.set_max_waiting(Some(1)).unwrap();
    assert!(tasks[4].poll(futs[4].as_mut()).is_pending());
    let dropped: Vec<usize> = tasks.iter().map(Task::wakes).collect();
    assert_eq!(dropped, [1, 0, 0, 0, 0], "only the oldest");
    assert_eq!(b.state().waiting, 4);
}

#[test]
fn the_order_changes_live_and_waiters_keep_their_places() {
    let b = super::fifo(1);
    assert_eq!(b.queue_order(), QueueOrder::Fifo);
    let held = b.try_acquire().unwrap();
    let tasks: Vec<Task> = (0..3).map(|_| Task::new()).collect();
    let mut futs: Vec<_> = (0..3).map(|_| boxed(b.acquire())).collect();
    assert!(tasks[0].poll(futs[0].as_mut()).is_pending());
    assert!(tasks[1].poll(futs[1].as_mut()).is_pending());
    assert_eq!(b.set_queue_order(QueueOrder::Lifo), QueueOrder::Fifo);
    assert_eq!(b.queue_order(), QueueOrder::Lifo);
    // The newcomer joins at the front.
    assert!(tasks[2].poll(futs[2].as_mut()).is_pending());
    drop(held);
    assert_eq!(tasks[2].wakes(), 1);
    let Poll::Ready(Ok(seat)) = tasks[2].poll(futs[2].as_mut()) else {
        panic!()
    };
    assert_eq!(b.set_queue_order(QueueOrder::Fifo), QueueOrder::Lifo);
    drop(seat);
    // The two earlier waiters kept their order: the older one is next.
    assert_eq!((tasks[0].wakes(), tasks[1].wakes()), (1, 0));
    // The queue limit and the order live in one field: neither undoes the
    // other.
    b.set_queue_order(QueueOrder::Lifo);
    b.set_max_waiting(Some(7)).unwrap();
    assert_eq!(b.queue_order(), QueueOrder::Lifo);
    b.set_queue_order(QueueOrder::Fifo);
    assert_eq!(b.engine().queue_limit(), 7);
}

#[cfg(feature = "weights")]
/// Heavy waiters in newest-first order: the newest is served first, so a
/// seat freed while a heavy waiter waits goes to a newer, lighter one.
#[test]
fn newest_first_with_weights_serves_the_newest_first() {
    let b = lifo(2, Admission::Fifo);
    let mut held = b.try_acquire_many(2).unwrap();
    let (t1, t2) = (Task::new(), Task::new());
    let mut heavy = boxed(b.acquire_many(2));
    let mut light = boxed(b.acquire());
    assert!(t1.poll(heavy.as_mut()).is_pending());
    assert!(t2.poll(light.as_mut()).is_pending());
    drop(held.split(1).unwrap());
    assert_eq!((t1.wakes(), t2.wakes()), (0, 1), "the newest, light one");
    let Poll::Ready(Ok(seat)) = t2.poll(light.as_mut()) else {
        panic!()
    };
    drop(seat);
    assert_eq!(t1.wakes(), 0, "one seat free, two asked");
    drop(held);
    assert!(matches!(t1.poll(heavy.as_mut()), Poll::Ready(Ok(_))));
}
