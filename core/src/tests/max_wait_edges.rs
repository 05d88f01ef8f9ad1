//! `acquire_timeout` under each `MaxWait` (borrowed and owned) at its
//! edges: the facade round trip, handles held inline, the counters. Runs
//! under miri too.

use std::boxed::Box;
use std::cell::Cell;
use std::format;
use std::future::{Future, Ready, ready};
use std::ops::Deref;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use super::{Task, TestBulkhead, TestLock, boxed, fifo, ready_err, with_config};
use crate::{Admission, Bulkhead, Config, Error, MaxWait, OwnedSeat};

/// A timer the test fires by hand; panics if polled after it completed.
struct Timer {
    fired: Rc<Cell<bool>>,
    done: bool,
}

impl Future for Timer {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        assert!(!self.done, "timer polled after it completed");
        if self.fired.get() {
            self.done = true;
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

fn timer(fired: &Rc<Cell<bool>>) -> impl FnOnce(Duration) -> Timer + '_ {
    move |_| Timer {
        fired: fired.clone(),
        done: false,
    }
}

fn no_timer(_: Duration) -> Ready<()> {
    panic!("asked for a timer")
}

/// A handle that holds its compartment inline: moving it moves the
/// compartment.
struct Inline(TestBulkhead);
impl Deref for Inline {
    type Target = TestBulkhead;
    fn deref(&self) -> &TestBulkhead {
        &self.0
    }
}

#[test]
fn from_engine_leads_back_to_the_same_compartment() {
    let b = Box::new(fifo(2));
    let seat = b.try_acquire().unwrap();
    assert!(core::ptr::eq(seat.bulkhead(), &*b));
    let w = b.acquire();
    assert!(core::ptr::eq(w.bulkhead(), &*b));
    // Reads the whole compartment (lock included) through the cast.
    let _ = format!("{:?} {:?}", seat.bulkhead(), w.bulkhead().raw_lock().0);
    assert_eq!(seat.bulkhead().state().active, 1);
}

#[cfg(feature = "barging")]
#[test]
fn a_seat_handed_over_as_the_timer_fires_is_returned_not_timed_out() {
    for admission in [
        Admission::Fifo,
        Admission::Barging,
        Admission::BoundedBarging,
    ] {
        let b = with_config(Config::new("test", 1).admission(admission));
        let held = b.try_acquire().unwrap();
        let fired = Rc::new(Cell::new(false));
        let t = Task::new();
        let mut w = boxed(b.acquire_timeout(Duration::from_millis(5), timer(&fired)));
        assert!(t.poll(w.as_mut()).is_pending());
        drop(held);
        fired.set(true);
        assert!(
            matches!(t.poll(w.as_mut()), Poll::Ready(Ok(_))),
            "{admission:?}"
        );
        let s = b.state();
        assert_eq!(
            (s.active, s.waiting, s.timed_out, s.rejected),
            (0, 0, 0, 0),
            "{admission:?}"
        );
    }
}

#[cfg(feature = "barging")]
#[test]
fn an_up_to_wait_dropped_in_every_state_loses_no_seat() {
    for admission in [Admission::Fifo, Admission::Barging] {
        let b = with_config(Config::new("test", 1).admission(admission));
        let fired = Rc::new(Cell::new(false));
        let t = Task::new();
        // Never polled.
        drop(b.acquire_timeout(Duration::from_millis(5), timer(&fired)));
        let held = b.try_acquire().unwrap();
        // Queued.
        let mut w = boxed(b.acquire_timeout(Duration::from_millis(5), timer(&fired)));
        assert!(t.poll(w.as_mut()).is_pending());
        drop(w);
        assert_eq!(b.state().waiting, 0);
        // Granted or notified, not read yet; a second waiter must get it.
        let mut w1 = boxed(b.acquire_timeout(Duration::from_millis(5), timer(&fired)));
        let mut w2 = boxed(b.acquire_timeout(MaxWait::Forever, no_timer));
        assert!(t.poll(w1.as_mut()).is_pending());
        assert!(t.poll(w2.as_mut()).is_pending());
        drop(held);
        drop(w1);
        assert!(
            matches!(t.poll(w2.as_mut()), Poll::Ready(Ok(_))),
            "{admission:?}"
        );
        let s = b.state();
        assert_eq!(
            (s.active, s.waiting, s.timed_out),
            (0, 0, 0),
            "{admission:?}"
        );
    }
}

#[test]
fn polling_a_timed_out_wait_panics_in_the_wait_not_in_the_timer() {
    let b = fifo(1);
    let _held = b.try_acquire().unwrap();
    let fired = Rc::new(Cell::new(true));
    let t = Task::new();
    let mut w = boxed(b.acquire_timeout(Duration::from_millis(5), timer(&fired)));
    assert!(matches!(
        ready_err(t.poll(w.as_mut())),
        Error::Timeout { .. }
    ));
    let again = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| t.poll(w.as_mut())));
    let msg = again.unwrap_err();
    let msg = msg.downcast_ref::<&str>().copied().unwrap_or("");
    assert!(msg.contains("polled after it completed"), "{msg}");
    assert_eq!(b.state().timed_out, 1);
}

#[cfg(feature = "queue-limits")]
#[test]
fn fail_fast_with_no_queue_room_is_full_counted_once() {
    let b = with_config(Config::new("test", 1).max_waiting(0));
    let _held = b.try_acquire().unwrap();
    let t = Task::new();
    let mut w = boxed(b.acquire_timeout(MaxWait::FailFast, no_timer));
    assert!(matches!(ready_err(t.poll(w.as_mut())), Error::Full { .. }));
    drop(w);
    let s = b.state();
    assert_eq!((s.rejected, s.timed_out, s.waiting), (1, 0, 0));
    // UpTo with no queue room: QueueFull, a rejection, not a timeout.
    let fired = Rc::new(Cell::new(true));
    let mut w = boxed(b.acquire_timeout(Duration::from_millis(5), timer(&fired)));
    assert!(matches!(
        ready_err(t.poll(w.as_mut())),
        Error::QueueFull { .. }
    ));
    let s = b.state();
    assert_eq!((s.rejected, s.timed_out, s.waiting), (2, 0, 0));
}

#[test]
fn fail_fast_never_passes_a_fifo_line() {
    let b = fifo(1);
    let held = b.try_acquire().unwrap();
    let t = Task::new();
    let mut waiter = boxed(b.acquire());
    assert!(t.poll(waiter.as_mut()).is_pending());
    let mut w = boxed(b.acquire_timeout(MaxWait::FailFast, no_timer));
    assert!(matches!(ready_err(t.poll(w.as_mut())), Error::Full { .. }));
    assert_eq!((b.state().rejected, b.state().waiting), (1, 1));
    drop(held);
    assert!(matches!(t.poll(waiter.as_mut()), Poll::Ready(Ok(_))));
}

#[test]
fn owned_timeouts_with_an_inline_handle() {
    // FailFast with a free seat, and full.
    let b = fifo(1);
    let t = Task::new();
    let mut w = boxed(OwnedSeat::acquire_timeout(
        Inline(b),
        MaxWait::FailFast,
        no_timer,
    ));
    let Poll::Ready(Ok(seat)) = t.poll(w.as_mut()) else {
        panic!()
    };
    assert_eq!(seat.handle().state().active, 1);
    drop(seat);

    // UpTo on a full inline compartment: queue, then time out. The inner
    // wait borrows the handle inside the pinned future.
    let b = fifo(1);
    core::mem::forget(b.try_acquire().unwrap());
    let fired = Rc::new(Cell::new(false));
    let mut w = boxed(OwnedSeat::acquire_timeout(
        Inline(b),
        Duration::from_millis(5),
        timer(&fired),
    ));
    assert!(t.poll(w.as_mut()).is_pending());
    let _ = format!("{w:?}");
    fired.set(true);
    assert!(matches!(
        ready_err(t.poll(w.as_mut())),
        Error::Timeout { .. }
    ));
    assert!(w.has_queued());

    // Forever, dropped while queued.
    let b = fifo(1);
    core::mem::forget(b.try_acquire().unwrap());
    let mut w = boxed(OwnedSeat::acquire_timeout(
        Inline(b),
        MaxWait::Forever,
        no_timer,
    ));
    assert!(t.poll(w.as_mut()).is_pending());
    drop(w);
}

#[test]
fn owned_timeout_futures_are_send_and_static() {
    fn send_static<T: Send + 'static>(_: &T) {}
    type B = Bulkhead<TestLock>;
    let b: Arc<B> = Arc::new(fifo(1));
    let w = OwnedSeat::acquire_timeout(b.clone(), Duration::from_millis(1), |_| ready(()));
    send_static(&w);
    let _ = format!("{w:?}");
}

/// Pre-existing, reachable only through the public `time_out`, not through
/// `acquire_timeout`: timing out a wait that was never polled counts a
/// timeout for a caller that neither waited nor looked for a free seat.
#[test]
fn time_out_before_the_first_poll_counts_a_timeout_with_a_free_seat() {
    let b = fifo(1);
    let mut w = boxed(b.acquire());
    let r = w.as_mut().time_out(Duration::from_millis(1));
    assert!(matches!(r, Err(Error::Timeout { .. })));
    assert_eq!((b.state().timed_out, b.state().active), (1, 0));
    assert!(!w.has_queued());
}
