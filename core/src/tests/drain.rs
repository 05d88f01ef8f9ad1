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
    // This test reads no counts.
    fn counts(&self) -> crate::Counts {
        crate::Counts::NONE
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
    b.engine().take_max_section_visits()
}

/// The statuses of the linked nodes, oldest first.
fn statuses<L: RawLock>(b: &Bulkhead<L>) -> Vec<Status> {
    b.engine().inspect_list(|list| {
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
    assert!(!b.engine().fifo());
    assert!(
        task.poll(head.as_mut()).is_pending(),
        "the head's last lost race"
    );
    assert!(b.engine().fifo(), "the hand-off began");
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
#[cfg(feature = "barging")]
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
#[cfg(feature = "barging")]
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

/// Rule 8's cell is exact between sections: the number of `Notified`
/// nodes, with `ALL_NOTIFIED` if none is `Waiting`.
fn assert_notified_cell_exact<L: RawLock>(b: &Bulkhead<L>, context: &str) {
    let s = statuses(b);
    let notified = s.iter().filter(|&&s| s == Status::Notified).count();
    let flag = if s.contains(&Status::Waiting) {
        0
    } else {
        ALL_NOTIFIED
    };
    assert_eq!(
        b.engine().notified.load(SeqCst),
        notified | flag,
        "the notified cell ({context})"
    );
}

/// 11 (engine): the other notified waiters that re-poll during a hand-off
/// are requeued, so each waits in line again (`Waiting`, its fresh waker
/// registered) and no longer counts in the `notified` cell, while the
/// starving head, re-polled too, stays `Notified` and first. Then the line
/// is served in list order, each waiter woken with its seat, and the
/// compartment barges again with an exact cell.
#[cfg(feature = "barging")]
#[test]
fn notified_waiters_re_polled_during_a_hand_off_are_requeued_behind_the_head() {
    let b = bounded(1);
    let task = Task::new();
    let mut head = boxed(b.acquire());
    let (mut held, mut waiters) = hand_off_with_notified(&b, &task, &mut head, 2);
    assert_notified_cell_exact(&b, "the hand-off began");
    let (t1, t2) = (Task::new(), Task::new());
    // The first one re-polls first: it moves to the end of the notified
    // prefix (past the second) and waits; then the second is requeued
    // just before it. Each is uncounted as it goes.
    assert!(t1.poll(waiters[0].as_mut()).is_pending());
    assert_eq!(
        statuses(&b),
        [Status::Notified, Status::Notified, Status::Waiting]
    );
    assert_notified_cell_exact(&b, "one requeued");
    assert!(t2.poll(waiters[1].as_mut()).is_pending());
    assert_eq!(
        statuses(&b),
        [Status::Notified, Status::Waiting, Status::Waiting]
    );
    assert_notified_cell_exact(&b, "both requeued");
    // A spurious re-poll of the starving head keeps it first and counted.
    assert!(task.poll(head.as_mut()).is_pending());
    assert_eq!(
        statuses(&b),
        [Status::Notified, Status::Waiting, Status::Waiting]
    );
    assert_notified_cell_exact(&b, "the head re-polled");
    assert!(b.engine().fifo(), "still in the hand-off");
    // Seats freed one at a time go to the head, then to the line in its
    // order (the second waiter, requeued last, is first, as a barging
    // loser requeued last is the next notified): each is woken
    // through the waker its re-poll registered.
    let woken = task.wakes();
    drop(held.pop());
    assert_eq!(task.wakes(), woken + 1);
    let Poll::Ready(Ok(s0)) = task.poll(head.as_mut()) else {
        panic!("the head was handed the first seat")
    };
    assert_notified_cell_exact(&b, "the head was granted");
    drop(held.pop());
    assert_eq!((t1.wakes(), t2.wakes()), (0, 1));
    let Poll::Ready(Ok(s2)) = t2.poll(waiters[1].as_mut()) else {
        panic!("the second waiter was handed the next seat")
    };
    drop(held.pop());
    assert_eq!(t1.wakes(), 1);
    let Poll::Ready(Ok(s1)) = t1.poll(waiters[0].as_mut()) else {
        panic!("the first waiter was handed the last seat")
    };
    assert_eq!(b.state().waiting, 0);
    assert_notified_cell_exact(&b, "the line was served");
    drop((s0, s1, s2, held));
    assert_eq!(b.state().active, 0);
}

/// For item 6: `x`, having lost `MAX_LOST_RACES - 1` races, is notified
/// behind `SECTION_BATCH` other notified waiters, with seats free. Returns
/// the seat held and the other waiters.
fn notified_behind_a_batch<'a>(
    b: &'a B,
    task: &Task,
    x: &mut Waiter<'a>,
) -> (Vec<Seat<'a, DrainLock>>, Vec<Waiter<'a>>) {
    // `x` loses all but two races alone (first in line).
    let held = lost_races(b, task, x, MAX_LOST_RACES as usize - 2);
    let others = Task::new();
    let mut ahead: Vec<Waiter<'a>> = (0..SECTION_BATCH).map(|_| boxed(b.acquire())).collect();
    for w in &mut ahead {
        assert!(others.poll(w.as_mut()).is_pending());
    }
    // A grow notifies everyone, bargers take every seat, and `x` loses
    // once more: it is requeued behind the others, which stay notified.
    let n = SECTION_BATCH + 1;
    assert_eq!(b.set_max_concurrent(n + 1), Ok(1));
    let mut seats = std::vec![held];
    for _ in 0..n {
        seats.push(b.try_acquire().unwrap());
    }
    assert!(task.poll(x.as_mut()).is_pending());
    assert!(!b.engine().fifo(), "one race short of the hand-off");
    // Freeing every barger's seat notifies `x` again (the others cover
    // `SECTION_BATCH` seats, and there are more).
    let woken = task.wakes();
    seats.truncate(1);
    assert_eq!(task.wakes(), woken + 1, "x was notified");
    assert_eq!(statuses(b), std::vec![Status::Notified; SECTION_BATCH + 1]);
    (seats, ahead)
}

/// Item 6: a re-poll whose take fails because the compartment closed is
/// not a lost race and starts no hand-off. The close's first section
/// closes the `SECTION_BATCH` waiters ahead of `x`; its re-check finds the
/// lock busy (another caller holds it, and owes the drain), so `x` is
/// still linked and notified when it re-polls in the closed compartment,
/// with seats free. Before the fix the take's refusal fell through to
/// `lose_race`: `x`'s last race, and a hand-off began (`BARGING` cleared)
/// on a closed compartment.
#[cfg(feature = "barging")]
#[test]
fn a_take_refused_by_close_is_no_lost_race_and_starts_no_hand_off() {
    let b = bounded(1);
    let task = Task::new();
    let mut x = boxed(b.acquire());
    let (held, mut ahead) = notified_behind_a_batch(&b, &task, &mut x);
    b.raw_lock().busy.store(true, Ordering::SeqCst);
    b.close();
    b.raw_lock().busy.store(false, Ordering::SeqCst);
    assert_eq!(b.state().waiting, 1, "x is still linked");
    assert_eq!(statuses(&b), [Status::Notified]);
    let err = super::ready_err(task.poll(x.as_mut()));
    assert!(matches!(err, Error::Closed { .. }), "{err}");
    assert!(
        !b.engine().fifo(),
        "a hand-off began on a closed compartment"
    );
    assert_eq!(b.state().waiting, 0);
    assert_notified_cell_exact(&b, "x took its verdict");
    for w in &mut ahead {
        assert!(matches!(
            task.poll(w.as_mut()),
            Poll::Ready(Err(Error::Closed { .. }))
        ));
    }
    drop(held);
    assert_eq!(b.state().active, 0);
}

/// 11 (engine): a verdict that arrives after the owner's lock-free look
/// at its node (`Waiting`) and before its re-poll takes the lock. The
/// re-poll must then leave the node alone (it is unlinked: no waker may be
/// stored in it, no seat taken) and let the owner read the verdict: a
/// FIFO grant gives the seat, counted once; a close gives `Closed`, and no
/// seat. The lock's `before` hook is the other thread.
#[cfg(feature = "barging")]
#[test]
fn a_verdict_that_arrives_before_the_re_poll_locks_is_read_as_it_is() {
    for admission in [
        Admission::Fifo,
        Admission::Barging,
        Admission::BoundedBarging,
    ] {
        for close in [false, true] {
            let b: &'static B = super::leak(
                Bulkhead::with_lock(
                    Config::new("verdict", 1).admission(admission),
                    DrainLock::default(),
                )
                .unwrap(),
            );
            let task = Task::new();
            let held = b.try_acquire().unwrap();
            let mut w = boxed(b.acquire());
            assert!(task.poll(w.as_mut()).is_pending());
            let hook: Hook = if close {
                Box::new(move || {
                    b.close();
                    drop(held);
                })
            } else if admission == Admission::Fifo {
                // The release's drain grants the waiter.
                Box::new(move || drop(held))
            } else {
                // Barging notifies rather than grants: a grow, whose
                // drain notifies, cannot be the verdict; use a close.
                continue;
            };
            *b.raw_lock().before.lock().unwrap() = Some(hook);
            let polled = task.poll(w.as_mut());
            assert!(
                b.raw_lock().before.lock().unwrap().is_none(),
                "the re-poll ran the hook"
            );
            match (close, polled) {
                (false, Poll::Ready(Ok(seat))) => {
                    assert_eq!(b.state().active, 1, "{admission:?}");
                    drop(seat);
                }
                (true, Poll::Ready(Err(Error::Closed { .. }))) => {}
                (_, other) => panic!(
                    "{admission:?}, close {close}: got {:?}",
                    other.map(|r| r.map(drop))
                ),
            }
            let s = b.state();
            assert_eq!((s.active, s.waiting), (0, 0), "{admission:?}");
            drop(w);
        }
    }
}

/// Rivals that pass a woken waiter, followed by a shrink that leaves a
/// debt, are real passes (without the rivals a seat would have been free
/// for the waiter after the shrink), so the refusal counts as a lost race:
/// were it exempt, the waiter could be passed without bound while shrinks
/// keep coming (an oscillating adaptive limit) and no hand-off would begin.
#[cfg(feature = "barging")]
#[test]
fn rivals_passing_a_woken_waiter_before_a_shrink_count_as_lost_races() {
    let b = bounded(2);
    let task = Task::new();
    let mut x = boxed(b.acquire());
    let mut held = std::vec![b.try_acquire().unwrap(), b.try_acquire().unwrap()];
    assert!(task.poll(x.as_mut()).is_pending());
    let mut passes = 0;
    for _ in 0..MAX_LOST_RACES {
        let woken = task.wakes();
        held.clear();
        assert_eq!(task.wakes(), woken + 1, "x was woken for a freed seat");
        // Two later callers take both free seats: x is passed.
        held.push(b.try_acquire().expect("barging: a rival passes x"));
        held.push(b.try_acquire().expect("barging: a rival passes x"));
        passes += 2;
        // Shrink by one: without the rivals one seat would still be free.
        assert_eq!(b.set_max_concurrent(1), Ok(2));
        assert!(task.poll(x.as_mut()).is_pending());
        assert_eq!(b.set_max_concurrent(2), Ok(1));
    }
    assert!(
        b.engine().fifo(),
        "x was woken {MAX_LOST_RACES} times and passed by {passes} later callers, \
         and no hand-off began"
    );
    drop(held);
    let Poll::Ready(Ok(seat)) = task.poll(x.as_mut()) else {
        panic!("x gets a seat")
    };
    drop(seat);
}

/// A FIFO drain cut short by the node count exactly as the seats run out
/// leaves no free seat, so the re-check does not drain again: the drain
/// itself must look at the front once more and end the hand-off (it finds
/// no seat for a waiter that is not the starving one), as the next section
/// would have.
#[cfg(feature = "barging")]
#[test]
fn a_drain_cut_short_as_the_seats_run_out_still_ends_the_hand_off() {
    let n = SECTION_BATCH;
    let b = bounded(1);
    let task = Task::new();
    let mut head = boxed(b.acquire());
    let (held, mut waiters) = hand_off_with_notified(&b, &task, &mut head, n);
    // Exactly SECTION_BATCH new seats for SECTION_BATCH + 1 nodes.
    assert_eq!(b.set_max_concurrent(2 * n + 2), Ok(n + 2));
    assert_eq!(statuses(&b).len(), 1, "one waiter left");
    let still_fifo = b.engine().fifo();
    let mut seats = held;
    let Poll::Ready(Ok(s)) = task.poll(head.as_mut()) else {
        panic!()
    };
    seats.push(s);
    for w in waiters.iter_mut().take(n - 1) {
        let Poll::Ready(Ok(s)) = task.poll(w.as_mut()) else {
            panic!()
        };
        seats.push(s);
    }
    // Free one seat: the last waiter is granted FIFO-style; the list empties.
    seats.pop();
    let Poll::Ready(Ok(s)) = task.poll(waiters[n - 1].as_mut()) else {
        panic!()
    };
    seats.push(s);
    assert!(
        !still_fifo,
        "the hand-off did not end when the drain found no seat"
    );
    drop(seats);
}

/// The `Closed` branch of `repoll` for a node still `Waiting`
/// (a spurious poll) in a barging compartment whose close's drain has not
/// reached it: the owner gets `Closed` on this poll, the node is not
/// counted as settled (it was never notified), and two stale wakers (the
/// fresh one and the node's own) fit the section's stale queue.
#[cfg(feature = "barging")]
#[test]
fn a_waiting_node_re_polled_in_a_closed_compartment_gets_closed() {
    for admission in [Admission::Barging, Admission::BoundedBarging] {
        let b = Bulkhead::with_lock(
            Config::new("closed-waiting", 1).admission(admission),
            DrainLock::default(),
        )
        .unwrap();
        let held = b.try_acquire().unwrap();
        let task = Task::new();
        let mut ws: Vec<Waiter<'_>> = (0..2 * SECTION_BATCH + 1)
            .map(|_| boxed(b.acquire()))
            .collect();
        for w in &mut ws {
            assert!(task.poll(w.as_mut()).is_pending());
        }
        assert_eq!(
            statuses(&b),
            std::vec![Status::Waiting; 2 * SECTION_BATCH + 1]
        );
        b.raw_lock().busy.store(true, Ordering::SeqCst);
        b.close();
        b.raw_lock().busy.store(false, Ordering::SeqCst);
        assert_eq!(b.state().waiting, SECTION_BATCH + 1, "{admission:?}");
        assert_notified_cell_exact(&b, "after the close's first section");
        // A different task, so the fresh waker is not `will_wake` the old.
        let other = Task::new();
        let last = ws.last_mut().unwrap();
        let err = super::ready_err(other.poll(last.as_mut()));
        assert!(matches!(err, Error::Closed { .. }), "{admission:?}: {err}");
        assert!(!b.engine().fifo(), "{admission:?}");
        assert_eq!(
            b.state().waiting,
            0,
            "{admission:?}: the re-poll's drain and re-checks closed the rest"
        );
        assert_notified_cell_exact(&b, "after the re-poll");
        for w in ws.iter_mut().take(2 * SECTION_BATCH) {
            assert!(matches!(
                task.poll(w.as_mut()),
                Poll::Ready(Err(Error::Closed { .. }))
            ));
        }
        drop(held);
        assert_eq!(b.state().active, 0);
    }
}
