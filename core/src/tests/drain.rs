//! The drains' bounds and the re-poll's accounting in a `BoundedBarging`
//! hand-off: rule 7 with notified waiters behind the starving head, what
//! counts as a lost race, a second notified waiter requeued during a
//! hand-off, and a verdict that arrives between the owner's look and its
//! re-poll's lock.

use std::boxed::Box;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;
use std::vec::Vec;

use super::{Task, TestLock, boxed};
use crate::engine::{ALL_NOTIFIED, SECTION_BATCH};
use crate::status::Status;
use crate::sync::Ordering::SeqCst;
use crate::{Acquire, Admission, Bulkhead, Config, Error, MAX_LOST_RACES, RawLock, Seat};

type Hook = Box<dyn FnOnce() + Send>;

/// A `TestLock` with two test devices. `before`: a hook run once before
/// the next `with_lock` locks; on one thread it stands for another thread
/// that changes the compartment between an owner's lock-free look at its
/// node and the lock its re-poll then takes. `busy`: while set,
/// `try_with_lock` fails, as it does while another thread holds the lock
/// (that thread then owns the re-check, rule 1); the test clears it and
/// runs the owed drain itself.
#[derive(Default)]
pub(crate) struct DrainLock {
    inner: TestLock,
    before: std::sync::Mutex<Option<Hook>>,
    busy: AtomicBool,
}

// SAFETY: delegates to `TestLock`, which keeps promises 1 to 3. The hook
// runs without the lock held and only calls core's public API. A failed
// try while `busy` is set is what a try sees while another caller holds
// the lock; the tests that set it run the drain that caller would owe.
unsafe impl RawLock for DrainLock {
    unsafe fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
        let before = self.before.lock().unwrap().take();
        if let Some(hook) = before {
            hook();
        }
        // SAFETY: forwarded from our own caller.
        unsafe { self.inner.with_lock(f) }
    }
    unsafe fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        if self.busy.load(Ordering::SeqCst) {
            return None;
        }
        // SAFETY: forwarded from our own caller.
        unsafe { self.inner.try_with_lock(f) }
    }
}

type B = Bulkhead<DrainLock>;
type Waiter<'a> = Pin<Box<Acquire<'a, DrainLock>>>;

fn bounded(max: usize) -> B {
    Bulkhead::with_lock(
        Config::new("drain", max).admission(Admission::BoundedBarging),
        DrainLock::default(),
    )
    .unwrap()
}

/// The most nodes one section reached since the last call (rule 7).
fn take_visits<L: RawLock>(b: &Bulkhead<L>) -> usize {
    b.take_max_section_visits()
}

/// The statuses of the linked nodes, oldest first.
fn statuses<L: RawLock>(b: &Bulkhead<L>) -> Vec<Status> {
    b.inspect_list(|list| {
        list.order()
            .into_iter()
            // SAFETY: linked nodes are valid while the lock is held.
            .map(|node| unsafe { node.as_ref() }.status.get())
            .collect()
    })
}

/// A `BoundedBarging` compartment of one seat, held by the returned seat,
/// with `head` waiting first and having lost `lost` races (each a release
/// that wakes it and a barger that takes the seat before it re-polls).
fn lost_races<'a>(
    b: &'a B,
    task: &Task,
    head: &mut Waiter<'a>,
    lost: usize,
) -> Seat<'a, DrainLock> {
    let mut held = b.try_acquire().unwrap();
    assert!(task.poll(head.as_mut()).is_pending());
    for _ in 0..lost {
        let woken = task.wakes();
        drop(held);
        assert_eq!(task.wakes(), woken + 1, "the release wakes the head");
        held = b.try_acquire().expect("barging: a barger takes the seat");
        assert!(task.poll(head.as_mut()).is_pending());
    }
    held
}

/// A hand-off with `n` notified waiters behind the starving head: the head
/// loses `MAX_LOST_RACES - 1` races alone, then `n` waiters queue, a grow
/// notifies all `n + 1`, bargers take every new seat, and the head's
/// re-poll loses its last race. Returns the seats held (the first one and
/// the bargers') and the `n` waiters, which are still `Notified` and have
/// no waker in the list (it was taken when they were notified).
fn hand_off_with_notified<'a>(
    b: &'a B,
    task: &Task,
    head: &mut Waiter<'a>,
    n: usize,
) -> (Vec<Seat<'a, DrainLock>>, Vec<Waiter<'a>>) {
    let mut held = std::vec![lost_races(b, task, head, MAX_LOST_RACES as usize - 1)];
    let others = Task::new();
    let mut waiters: Vec<Waiter<'a>> = (0..n).map(|_| boxed(b.acquire())).collect();
    for w in &mut waiters {
        assert!(others.poll(w.as_mut()).is_pending());
    }
    assert_eq!(b.set_max_concurrent(n + 2), Ok(1));
    assert_eq!(others.wakes(), n, "the grow notifies every waiter");
    for _ in 0..=n {
        held.push(
            b.try_acquire()
                .expect("barging: bargers take the new seats"),
        );
    }
    assert!(!b.fifo());
    assert!(
        task.poll(head.as_mut()).is_pending(),
        "the head's last lost race"
    );
    assert!(b.fifo(), "the hand-off began");
    let s = statuses(b);
    assert_eq!(s.len(), n + 1);
    assert!(s.iter().all(|&s| s == Status::Notified), "{s:?}");
    (held, waiters)
}

/// Rule 7, item 1: a grow during a hand-off with `n` notified waiters
/// behind the starving head. `drain_fifo` stopped only when its batch of
/// *wakers* was full, and a notified node has none, so one section granted
/// every waiter: `n + 2` nodes (100 waiters: 102) in one section. Counted
/// in nodes, each section reaches exactly `SECTION_BATCH`.
#[test]
fn a_grow_during_a_hand_off_with_many_notified_waiters_stays_within_the_section_bound() {
    let n = if cfg!(miri) { 30 } else { 100 };
    let b = bounded(1);
    let task = Task::new();
    let mut head = boxed(b.acquire());
    let (held, mut waiters) = hand_off_with_notified(&b, &task, &mut head, n);
    let before = take_visits(&b);
    assert!(before >= 1, "the setup's sections reached nodes");
    let woken = task.wakes();
    assert_eq!(b.set_max_concurrent(2 * n + 3), Ok(n + 2));
    let visits = take_visits(&b);
    assert_eq!(
        visits, SECTION_BATCH,
        "a grow during a hand-off reached {visits} nodes in one section"
    );
    assert_eq!(task.wakes(), woken + 1, "the head was woken with its seat");
    assert!(matches!(b.try_acquire(), Err(Error::Full { .. })));
    let mut seats = held;
    for w in core::iter::once(&mut head).chain(waiters.iter_mut()) {
        let Poll::Ready(Ok(seat)) = task.poll(w.as_mut()) else {
            panic!("every waiter was granted a seat, in one grow")
        };
        seats.push(seat);
    }
    assert_eq!(b.state().waiting, 0);
    drop(seats);
    assert_eq!(b.state().active, 0);
}

/// Rule 7, item 1: a close during the same hand-off handed every waiter
/// its `Closed` verdict in one section (102 nodes for 100 waiters).
#[test]
fn a_close_during_a_hand_off_with_many_notified_waiters_stays_within_the_section_bound() {
    let n = if cfg!(miri) { 30 } else { 100 };
    let b = bounded(1);
    let task = Task::new();
    let mut head = boxed(b.acquire());
    let (held, mut waiters) = hand_off_with_notified(&b, &task, &mut head, n);
    take_visits(&b);
    b.close();
    let visits = take_visits(&b);
    assert_eq!(
        visits, SECTION_BATCH,
        "a close during a hand-off reached {visits} nodes in one section"
    );
    assert_eq!(
        b.state().waiting,
        0,
        "the close's re-drains closed everyone"
    );
    for w in core::iter::once(&mut head).chain(waiters.iter_mut()) {
        assert!(matches!(
            task.poll(w.as_mut()),
            Poll::Ready(Err(Error::Closed { .. }))
        ));
    }
    drop(held);
    assert_eq!(b.state().active, 0);
}
