//! `AcquireOwned`: the owned wait behaves as `Acquire`, and moves its handle
//! into the seat. Run under miri too: the `'static` borrow of the handle's
//! compartment must never outlive it.

use std::sync::Arc;
use std::task::Poll;

use super::{Task, TestBulkhead, boxed, fifo, ready_err};
use crate::{Error, OwnedSeat};

fn arc(max: usize) -> Arc<TestBulkhead> {
    Arc::new(fifo(max))
}

#[test]
fn a_free_seat_is_taken_at_the_first_poll_and_owns_the_handle() {
    let b = arc(1);
    let task = Task::new();
    let mut wait = boxed(OwnedSeat::acquire(b.clone()));
    assert_eq!(b.state().active, 0, "nothing before the first poll");
    let Poll::Ready(Ok(seat)) = task.poll(wait.as_mut()) else {
        panic!("a free seat")
    };
    assert!(Arc::ptr_eq(seat.handle(), &b));
    assert_eq!(
        Arc::strong_count(&b),
        2,
        "the future's handle moved into the seat"
    );
    drop(wait);
    assert_eq!(
        Arc::strong_count(&b),
        2,
        "and the finished future holds none"
    );
    drop(seat);
    assert_eq!((b.state().active, Arc::strong_count(&b)), (0, 1));
}

#[test]
fn a_queued_owned_wait_is_handed_the_seat_and_the_only_handle_keeps_the_compartment_alive() {
    let b = arc(1);
    let first = OwnedSeat::try_acquire(b.clone()).unwrap();
    let task = Task::new();
    let mut wait = boxed(OwnedSeat::acquire(b.clone()));
    assert!(task.poll(wait.as_mut()).is_pending());
    assert_eq!(b.state().waiting, 1);
    drop(b); // the holder and the waiter keep it alive
    drop(first);
    assert_eq!(task.wakes(), 1);
    let Poll::Ready(Ok(seat)) = task.poll(wait.as_mut()) else {
        panic!("handed over")
    };
    drop(wait);
    assert_eq!(seat.handle().state().active, 1);
    drop(seat); // the last handle: the compartment is freed here
}

#[test]
fn dropping_a_queued_or_granted_owned_wait_loses_nothing() {
    let b = arc(1);
    let first = OwnedSeat::try_acquire(b.clone()).unwrap();
    let task = Task::new();
    let mut queued = boxed(OwnedSeat::acquire(b.clone()));
    let mut granted = boxed(OwnedSeat::acquire(b.clone()));
    assert!(task.poll(queued.as_mut()).is_pending());
    assert!(task.poll(granted.as_mut()).is_pending());
    drop(queued); // leaves the line
    assert_eq!(b.state().waiting, 1);
    drop(first); // handed to `granted`, which is dropped before it polls
    drop(granted);
    assert_eq!(b.state().active, 0, "the granted seat was passed on");
    assert!(b.try_acquire().is_ok());
    assert_eq!(Arc::strong_count(&b), 1);
}

#[test]
fn time_out_and_abandon_decide_in_one_step() {
    let b = arc(1);
    let first = OwnedSeat::try_acquire(b.clone()).unwrap();
    let task = Task::new();
    let mut wait = boxed(OwnedSeat::acquire(b.clone()));
    assert!(task.poll(wait.as_mut()).is_pending());
    let budget = core::time::Duration::from_millis(5);
    let err = wait.as_mut().time_out(budget).unwrap_err();
    assert_eq!(
        err,
        Error::Timeout {
            name: "test".into(),
            budget
        }
    );
    assert_eq!((b.state().timed_out, b.state().waiting), (1, 0));
    assert!(wait.handle().is_none(), "finished");
    // Abandon after a hand-off keeps the seat.
    let mut late = boxed(OwnedSeat::acquire(b.clone()));
    assert!(task.poll(late.as_mut()).is_pending());
    drop(first);
    let seat = late.as_mut().abandon().expect("the seat was handed over");
    assert_eq!(b.state().active, 1);
    drop(seat);
    // Closed while waiting.
    let first = OwnedSeat::try_acquire(b.clone()).unwrap();
    let mut closing = boxed(OwnedSeat::acquire(b.clone()));
    assert!(task.poll(closing.as_mut()).is_pending());
    b.close();
    assert_eq!(
        ready_err(task.poll(closing.as_mut())),
        Error::Closed {
            name: "test".into()
        }
    );
    drop((first, closing));
    assert_eq!(Arc::strong_count(&b), 1);
}

/// As `Acquire::abandon`, abandoning an owned wait that has already
/// finished does nothing and returns `None`, whether it finished with a
/// seat or by an earlier `abandon`; `time_out` then panics with a message
/// that says why.
#[test]
fn abandoning_a_finished_owned_wait_returns_none() {
    let b = arc(1);
    let task = Task::new();
    let mut wait = boxed(OwnedSeat::acquire(b.clone()));
    let Poll::Ready(Ok(seat)) = task.poll(wait.as_mut()) else {
        panic!("a free seat")
    };
    assert!(wait.as_mut().abandon().is_none(), "after resolving");
    assert_eq!(b.state().active, 1, "the seat taken stays taken");
    drop(seat);

    let mut abandoned = boxed(OwnedSeat::acquire(b.clone()));
    assert!(abandoned.as_mut().abandon().is_none(), "never polled");
    assert!(abandoned.as_mut().abandon().is_none(), "a second time");
    assert_eq!(Arc::strong_count(&b), 1, "no handle kept by either");
    let timed_out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = abandoned
            .as_mut()
            .time_out(core::time::Duration::from_millis(1));
    }));
    let message = timed_out.expect_err("time_out on a finished wait panics");
    let text = message
        .downcast_ref::<&str>()
        .map(|s| std::string::String::from(*s))
        .or_else(|| message.downcast_ref::<std::string::String>().cloned())
        .unwrap_or_default();
    assert!(text.contains("completed"), "says why: {text}");
    let s = b.state();
    assert_eq!((s.active, s.timed_out), (0, 0), "nothing counted");
}
