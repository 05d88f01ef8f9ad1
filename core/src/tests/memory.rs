//! Pinning, leaking, panicking wakers and real threads: the tests miri is
//! most needed for.

use std::boxed::Box;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::vec::Vec;

use super::{Task, TestBulkhead, boxed, fifo, leak};

#[test]
fn moving_an_unpolled_future_is_fine() {
    let b = fifo(1);
    let held = b.try_acquire().unwrap();
    let f = b.acquire();
    let moved = f; // not linked yet, so moving is allowed
    let boxed_f = Box::new(moved);
    let mut pinned = Box::into_pin(boxed_f);
    let t = Task::new();
    assert!(t.poll(pinned.as_mut()).is_pending());
    drop(held);
    assert!(matches!(t.poll(pinned.as_mut()), Poll::Ready(Ok(_))));
}

#[test]
fn a_stack_pinned_future_dropped_mid_wait_unlinks() {
    let b = fifo(1);
    let held = b.try_acquire().unwrap();
    let t = Task::new();
    {
        let mut f = pin!(b.acquire());
        assert!(t.poll(f.as_mut()).is_pending());
        assert_eq!(b.state().waiting, 1);
    } // dropped while linked: its stack frame is gone afterwards
    assert_eq!(b.state().waiting, 0);
    drop(held); // must not touch the dead node
    assert!(b.try_acquire().is_ok());
}

#[test]
fn dropping_a_middle_waiter_keeps_the_list_intact() {
    let b = fifo(1);
    let held = b.try_acquire().unwrap();
    let tasks: Vec<Task> = (0..3).map(|_| Task::new()).collect();
    let mut futs: Vec<_> = (0..3).map(|_| Some(boxed(b.acquire()))).collect();
    for (t, f) in tasks.iter().zip(futs.iter_mut()) {
        assert!(t.poll(f.as_mut().unwrap().as_mut()).is_pending());
    }
    futs[1] = None;
    assert_eq!(
        b.engine().inspect_list(|list| list.assert_valid()),
        b.state().waiting
    );
    drop(held);
    assert_eq!(tasks[0].wakes(), 1);
    let Poll::Ready(Ok(seat)) = tasks[0].poll(futs[0].as_mut().unwrap().as_mut()) else {
        panic!()
    };
    drop(seat);
    assert_eq!(tasks[2].wakes(), 1);
    assert!(matches!(
        tasks[2].poll(futs[2].as_mut().unwrap().as_mut()),
        Poll::Ready(Ok(_))
    ));
}

#[test]
fn a_leaked_waiting_future_stays_valid_and_keeps_its_place() {
    // Leaking a pinned future is allowed: its memory is never freed, so the
    // list's pointer stays valid. The seat handed to it is leaked with it.
    let b: &'static TestBulkhead = leak(fifo(2));
    let held = b.try_acquire().unwrap();
    let _other = b.try_acquire().unwrap();
    let t = Task::new();
    let leaked = leak(b.acquire());
    // SAFETY: the leaked box is never moved or freed.
    let mut pinned = unsafe { std::pin::Pin::new_unchecked(&mut *leaked) };
    assert!(t.poll(pinned.as_mut()).is_pending());
    let forgotten = leak(Box::pin(b.acquire()));
    assert!(t.poll(forgotten.as_mut()).is_pending());
    assert_eq!(b.state().waiting, 2);
    drop(held); // handed to the leaked future
    let s = b.state();
    assert_eq!((s.active, s.waiting), (2, 1));
}

/// A defect found in review, documented on `Acquire` ("Leaking"): in barging
/// mode a leaked waiter that had been notified is never re-polled, so it
/// covers one free seat for good (rule 8 in `engine.rs`), as a leaked FIFO
/// waiter keeps its seat. The seat itself stays free: any caller may take
/// it and a re-poll of a waiter takes it, but waiters are woken as if the
/// compartment had one seat fewer.
#[cfg(feature = "barging")]
#[test]
fn a_leaked_notified_barging_waiter_covers_one_seat_but_does_not_hold_it() {
    let b: &'static TestBulkhead = leak(super::with_config(
        crate::Config::new("leak", 1).admission(crate::Admission::Barging),
    ));
    let held = b.try_acquire().unwrap();
    let (t1, t2) = (Task::new(), Task::new());
    let forgotten = leak(Box::pin(b.acquire()));
    assert!(t1.poll(forgotten.as_mut()).is_pending());
    let mut next = boxed(b.acquire());
    assert!(t2.poll(next.as_mut()).is_pending());
    drop(held); // notifies the first waiter, which is never polled again
    assert_eq!((t1.wakes(), t2.wakes()), (1, 0));
    let s = b.state();
    assert_eq!((s.active, s.waiting), (0, 2), "the seat is free");
    // Any caller may take the free seat; its release finds the seat still
    // covered by the leaked waiter and wakes nobody.
    let arrival = b.try_acquire().unwrap();
    drop(arrival);
    assert_eq!(t2.wakes(), 0, "the next waiter sleeps: the seat is covered");
    // A second free seat is uncovered: the next waiter is woken for it.
    assert_eq!(b.set_max_concurrent(2), Ok(1));
    assert_eq!(t2.wakes(), 1);
    let Poll::Ready(Ok(seat)) = t2.poll(next.as_mut()) else {
        panic!("the next waiter takes a free seat")
    };
    drop(seat);
    let s = b.state();
    assert_eq!(
        (s.active, s.waiting),
        (0, 1),
        "only the leaked one still waits"
    );
}

/// A waker whose `wake` panics.
pub(super) struct PanickingWaker;
impl Wake for PanickingWaker {
    fn wake(self: Arc<Self>) {
        panic!("waker panicked");
    }
}

#[test]
fn a_panicking_waker_does_not_strand_the_rest() {
    // bug class 7 in docs/bug-classes.md. Two waiters are granted in one batch; the first
    // waker panics, the second must still be woken, and the lock is free.
    let b = fifo(2);
    let s1 = b.try_acquire().unwrap();
    let s2 = b.try_acquire().unwrap();
    let bad = Waker::from(Arc::new(PanickingWaker));
    let good = Task::new();
    let mut w1 = boxed(b.acquire());
    let mut w2 = boxed(b.acquire());
    assert!(
        w1.as_mut()
            .poll(&mut Context::from_waker(&bad))
            .is_pending()
    );
    assert!(good.poll(w2.as_mut()).is_pending());
    let outcome = catch_unwind(AssertUnwindSafe(|| b.set_max_concurrent(4).unwrap()));
    assert!(outcome.is_err(), "the waker's panic propagates");
    assert_eq!(good.wakes(), 1, "the rest of the batch is still woken");
    let Poll::Ready(Ok(g)) = good.poll(w2.as_mut()) else {
        panic!("seat lost")
    };
    let Poll::Ready(Ok(a)) = w1.as_mut().poll(&mut Context::from_waker(Waker::noop())) else {
        panic!()
    };
    assert_eq!(b.state().active, 4);
    drop((s1, s2, g, a));
    assert!(b.try_acquire().is_ok(), "the lock was released");
}

/// A waker that re-enters the compartment from `wake`.
struct ReentrantWaker(&'static TestBulkhead, AtomicBool);
impl Wake for ReentrantWaker {
    fn wake(self: Arc<Self>) {
        let _ = self.0.try_acquire();
        let _ = self.0.state();
        self.1.store(true, Ordering::SeqCst);
    }
}

#[test]
fn a_waker_may_reenter_the_compartment() {
    let b: &'static TestBulkhead = leak(fifo(1));
    let held = b.try_acquire().unwrap();
    let waker = Arc::new(ReentrantWaker(b, AtomicBool::new(false)));
    let mut w = boxed(b.acquire());
    assert!(
        w.as_mut()
            .poll(&mut Context::from_waker(&Waker::from(waker.clone())))
            .is_pending()
    );
    drop(held); // wakes outside the lock, so re-entry cannot deadlock
    assert!(waker.1.load(Ordering::SeqCst));
}

/// Threads hand seats around; the count inside never exceeds the limit.
#[test]
fn threads_share_seats_without_exceeding_the_limit() {
    const THREADS: usize = 4;
    let rounds = if cfg!(miri) { 10 } else { 500 };
    let b = Arc::new(fifo(2));
    let inside = Arc::new(AtomicUsize::new(0));
    let _watch = super::watchdog::watch("the threads' rounds (a parked thread never woken?)");
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let (b, inside) = (b.clone(), inside.clone());
            thread::spawn(move || {
                let parker = Arc::new(Parker(thread::current()));
                let waker = Waker::from(parker);
                let mut cx = Context::from_waker(&waker);
                for _ in 0..rounds {
                    let mut f = pin!(b.acquire());
                    let seat = loop {
                        match f.as_mut().poll(&mut cx) {
                            Poll::Ready(r) => break r.unwrap(),
                            Poll::Pending => thread::park(),
                        }
                    };
                    let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    assert!(n <= 2, "{n} inside a 2-seat compartment");
                    inside.fetch_sub(1, Ordering::SeqCst);
                    drop(seat);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let s = b.state();
    assert_eq!((s.active, s.waiting), (0, 0));
}

struct Parker(thread::Thread);
impl Wake for Parker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// A waker whose next drop panics once armed.
pub(super) fn drop_panicking_waker(armed: &'static AtomicBool) -> Waker {
    use std::task::{RawWaker, RawWakerVTable};
    fn clone(data: *const ()) -> RawWaker {
        RawWaker::new(data, &VTABLE)
    }
    fn noop(_: *const ()) {}
    fn drop(data: *const ()) {
        // SAFETY: `data` is the `&'static AtomicBool` the waker was made of.
        let armed = unsafe { &*data.cast::<AtomicBool>() };
        if armed.swap(false, Ordering::SeqCst) {
            panic!("waker panicked on drop");
        }
    }
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, noop, noop, drop);
    // SAFETY: the vtable functions uphold the RawWaker contract: the data
    // pointer is `'static` and never freed, clone copies it, wake does
    // nothing, and drop only reads the flag.
    unsafe { Waker::from_raw(RawWaker::new((armed as *const AtomicBool).cast(), &VTABLE)) }
}

#[cfg(feature = "barging")]
#[test]
fn a_panic_after_taking_a_seat_inside_poll_does_not_leak_it() {
    // Barging: a woken waiter takes the seat in its poll, then dropping its
    // own stale waker panics before the poll returns. The future must still
    // give the seat back when it is dropped. (Found by the loom panic model.)
    static ARMED: AtomicBool = AtomicBool::new(false);
    let b = super::with_config(crate::Config::new("p", 1).admission(crate::Admission::Barging));
    let held = b.try_acquire().unwrap();
    let t = Task::new();
    let mut w = boxed(b.acquire());
    assert!(t.poll(w.as_mut()).is_pending());
    drop(held); // notifies w
    let waker = drop_panicking_waker(&ARMED);
    ARMED.store(true, Ordering::SeqCst);
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        w.as_mut().poll(&mut Context::from_waker(&waker))
    }));
    assert!(outcome.is_err(), "the drop of the stale waker panicked");
    assert_eq!(b.state().active, 1, "the seat was taken");
    drop(w);
    assert_eq!(b.state().active, 0, "and given back by the future's Drop");
}

/// Two wakers of one batch that both panic: the second panics while the
/// first unwinds, and the process aborts (docs/design.md, "Wakers run after
/// the lock is released"). Run in a child process, whose death by SIGABRT
/// is the expected outcome.
#[test]
#[cfg_attr(miri, ignore = "needs a child process")]
fn two_panicking_wakers_in_one_batch_abort() {
    const CHILD: &str = "BULKHEAD_CORE_TWO_WAKERS_CHILD";
    const NAME: &str = "tests::memory::two_panicking_wakers_in_one_batch_abort";
    if std::env::var_os(CHILD).is_some() {
        let b = fifo(2);
        let _held = (b.try_acquire().unwrap(), b.try_acquire().unwrap());
        let bad = Waker::from(Arc::new(PanickingWaker));
        let mut w1 = boxed(b.acquire());
        let mut w2 = boxed(b.acquire());
        for w in [&mut w1, &mut w2] {
            assert!(w.as_mut().poll(&mut Context::from_waker(&bad)).is_pending());
        }
        let _ = b.set_max_concurrent(4);
        unreachable!("two panicking wakers in one batch must abort");
    }
    let stderr = super::run_aborting_child(NAME, CHILD);
    assert_eq!(
        stderr.matches("waker panicked").count(),
        2,
        "not the two wakers' panics:\n{stderr}"
    );
}
