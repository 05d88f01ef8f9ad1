//! `BoundedBarging`: barging, with a hand-off to a waiter that has lost
//! `MAX_LOST_RACES` races.

use std::pin::Pin;
use std::task::Poll;
use std::vec::Vec;

use super::{Task, TestBulkhead, boxed, ready_err, with_config};
use crate::engine::ALL_NOTIFIED;
use crate::status::Status;
use crate::sync::Ordering::SeqCst;
use crate::{Acquire, Admission, Config, Error, MAX_LOST_RACES, Seat};

fn bounded(max: usize) -> TestBulkhead {
    with_config(Config::new("bounded", max).admission(Admission::BoundedBarging))
}

type Waiter<'a> = Pin<std::boxed::Box<Acquire<'a, super::TestLock>>>;

/// Rule 8's cell is exact between sections, in a hand-off and out of one:
/// the number of `Notified` nodes, with `ALL_NOTIFIED` if none is
/// `Waiting`. A stale count makes a release skip the lock wrongly (too
/// high) or try it needlessly (too low).
fn assert_notified_cell_exact(b: &TestBulkhead, context: &str) {
    let (notified, any_waiting) = b.engine().inspect_list(|list| {
        let statuses: Vec<Status> = list
            .order()
            .into_iter()
            // SAFETY: linked nodes are valid while the lock is held.
            .map(|node| unsafe { node.as_ref() }.status.get())
            .collect();
        (
            statuses.iter().filter(|&&s| s == Status::Notified).count(),
            statuses.contains(&Status::Waiting),
        )
    });
    let expected = notified | if any_waiting { 0 } else { ALL_NOTIFIED };
    assert_eq!(
        b.engine().notified.load(SeqCst),
        expected,
        "the notified cell ({context}, hand-off: {})",
        b.engine().fifo()
    );
}

/// Up to `rounds` times: the seat is released, the queued waiter is
/// woken, a barger takes the seat before the waiter runs, and the waiter's
/// poll loses. Stops early when a barger is refused: the freed seat was
/// handed to the waiter. Returns the last barger's seat (`None` if the
/// seat went to the waiter) and the races the waiter lost.
fn lose_races<'a>(
    b: &'a TestBulkhead,
    held: Seat<'a, super::TestLock>,
    task: &Task,
    waiter: &mut Waiter<'a>,
    rounds: usize,
) -> (Option<Seat<'a, super::TestLock>>, usize) {
    let mut held = Some(held);
    let mut lost = 0;
    for _ in 0..rounds {
        let woken = task.wakes();
        drop(held.take());
        assert_eq!(task.wakes(), woken + 1, "a release wakes the waiter");
        match b.try_acquire() {
            Ok(seat) => held = Some(seat),
            // The hand-off: the freed seat is the waiter's.
            Err(Error::Full { .. }) => break,
            Err(e) => panic!("{e}"),
        }
        assert!(task.poll(waiter.as_mut()).is_pending());
        lost += 1;
    }
    (held, lost)
}

#[test]
fn a_waiter_loses_at_most_max_lost_races_then_is_handed_the_next_seat() {
    let b = bounded(1);
    let held = b.try_acquire().unwrap();
    let task = Task::new();
    let mut waiter = boxed(b.acquire());
    assert!(task.poll(waiter.as_mut()).is_pending());
    let (held, lost) = lose_races(&b, held, &task, &mut waiter, 10 * MAX_LOST_RACES as usize);
    assert_eq!(lost, MAX_LOST_RACES as usize, "then the hand-off");
    // The seat the last barger gave back was handed to the waiter, which
    // was woken with it in hand; nobody else may take it.
    assert!(held.is_none());
    assert!(matches!(b.try_acquire(), Err(Error::Full { .. })));
    let Poll::Ready(Ok(seat)) = task.poll(waiter.as_mut()) else {
        panic!("the seat was handed to the waiter")
    };
    assert_eq!(b.admission(), Admission::BoundedBarging);
    // The list emptied as the seat was handed over: barging again. A new
    // waiter is woken by the release, and a barger may pass it.
    let t2 = Task::new();
    let mut w2 = boxed(b.acquire());
    assert!(t2.poll(w2.as_mut()).is_pending());
    let (held, lost) = lose_races(&b, seat, &t2, &mut w2, 1);
    assert_eq!(lost, 1, "barging resumed once nobody waited");
    drop(held.expect("a barger holds the seat"));
    assert!(matches!(t2.poll(w2.as_mut()), Poll::Ready(Ok(_))));
}

/// The waiter that asks for the hand-off is served first even when an
/// older waiter, woken in the same round, is ahead of it in line and has
/// not run yet.
#[test]
fn the_starving_waiter_is_served_before_a_woken_waiter_ahead_of_it() {
    let b = bounded(2);
    let mut held = (b.try_acquire().unwrap(), b.try_acquire().unwrap());
    let (tx, ty) = (Task::new(), Task::new());
    let mut x = boxed(b.acquire());
    let mut y = boxed(b.acquire());
    assert!(tx.poll(x.as_mut()).is_pending());
    assert!(ty.poll(y.as_mut()).is_pending());
    for round in 1..=MAX_LOST_RACES as usize {
        // Two releases wake both; two bargers take both seats.
        drop(held);
        assert_eq!((tx.wakes(), ty.wakes()), (round, round));
        held = (b.try_acquire().unwrap(), b.try_acquire().unwrap());
        // `y` runs first; in the last round its lost race is the one that
        // asks for the hand-off, while `x` is still woken and ahead of it.
        assert!(ty.poll(y.as_mut()).is_pending());
        if round < MAX_LOST_RACES as usize {
            assert!(tx.poll(x.as_mut()).is_pending());
        }
    }
    // The first seat freed goes to `y`, not to `x` ahead of it, even if
    // `x` runs first.
    drop(held.0);
    assert!(tx.poll(x.as_mut()).is_pending(), "x took y's seat");
    let Poll::Ready(Ok(seat)) = ty.poll(y.as_mut()) else {
        panic!("the seat was handed to the starving waiter")
    };
    drop(seat);
    assert!(matches!(tx.poll(x.as_mut()), Poll::Ready(Ok(_))));
    drop(held.1);
}

#[test]
fn plain_barging_has_no_such_bound() {
    let b = with_config(Config::new("barge", 1).admission(Admission::Barging));
    let held = b.try_acquire().unwrap();
    let task = Task::new();
    let mut waiter = boxed(b.acquire());
    assert!(task.poll(waiter.as_mut()).is_pending());
    let rounds = 10 * MAX_LOST_RACES as usize;
    let (held, lost) = lose_races(&b, held, &task, &mut waiter, rounds);
    assert_eq!(lost, rounds);
    drop(held.expect("a barger holds the seat"));
    assert!(matches!(task.poll(waiter.as_mut()), Poll::Ready(Ok(_))));
}

/// Once the hand-off is done, the compartment barges again: the next
/// waiter can be passed (and starts its own count).
#[test]
fn barging_resumes_after_the_hand_off() {
    let b = bounded(1);
    let held = b.try_acquire().unwrap();
    let (t1, t2) = (Task::new(), Task::new());
    let mut w1 = boxed(b.acquire());
    let mut w2 = boxed(b.acquire());
    assert!(t1.poll(w1.as_mut()).is_pending());
    assert!(t2.poll(w2.as_mut()).is_pending());
    let (held, lost) = lose_races(&b, held, &t1, &mut w1, 100);
    assert_eq!((held.is_none(), lost), (true, MAX_LOST_RACES as usize));
    let Poll::Ready(Ok(s1)) = t1.poll(w1.as_mut()) else {
        panic!("w1 was handed the seat")
    };
    // w2 is first in line now but has lost nothing: barging again.
    let (held, lost) = lose_races(&b, s1, &t2, &mut w2, 1);
    assert_eq!(lost, 1, "a barger passes w2 once the hand-off is over");
    drop(held.expect("a barger holds the seat"));
    assert!(matches!(t2.poll(w2.as_mut()), Poll::Ready(Ok(_))));
}

/// The waiter that asked for the hand-off gives up (dropped, or its
/// budget runs out): the compartment barges again, and the next waiter is
/// still woken.
#[test]
fn the_starving_waiter_leaves_and_barging_resumes() {
    for time_out in [false, true] {
        let b = bounded(1);
        let held = b.try_acquire().unwrap();
        let (t1, t2) = (Task::new(), Task::new());
        let mut w1 = boxed(b.acquire());
        let mut w2 = boxed(b.acquire());
        assert!(t1.poll(w1.as_mut()).is_pending());
        assert!(t2.poll(w2.as_mut()).is_pending());
        let rounds = MAX_LOST_RACES as usize;
        let (held, lost) = lose_races(&b, held, &t1, &mut w1, rounds);
        assert_eq!(lost, rounds);
        // The hand-off is on: no barging while anyone waits.
        let held = held.expect("the last barger holds the seat");
        if time_out {
            let err = w1.as_mut().time_out(core::time::Duration::from_millis(5));
            assert!(matches!(err, Err(Error::Timeout { .. })), "{err:?}");
        }
        drop(w1);
        assert_eq!(b.state().waiting, 1);
        // Barging again: with w2 waiting, a barger may take the freed seat
        // (during a hand-off it could not), and w2 still gets one later.
        drop(held);
        let barger = b.try_acquire().expect("barging resumed");
        assert!(t2.poll(w2.as_mut()).is_pending());
        drop(barger);
        assert!(matches!(t2.poll(w2.as_mut()), Poll::Ready(Ok(_))));
        assert_eq!(b.state().active, 0);
    }
}

/// A grow during a hand-off serves the line in order, the starving waiter
/// first, and lets no barger in.
#[test]
fn a_grow_during_a_hand_off_serves_the_line_in_order() {
    let b = bounded(1);
    let held = b.try_acquire().unwrap();
    let (t1, t2, t3) = (Task::new(), Task::new(), Task::new());
    let mut w1 = boxed(b.acquire());
    assert!(t1.poll(w1.as_mut()).is_pending());
    let rounds = MAX_LOST_RACES as usize;
    let (held, lost) = lose_races(&b, held, &t1, &mut w1, rounds);
    assert_eq!(lost, rounds);
    let held = held.expect("the last barger holds the seat");
    let mut w2 = boxed(b.acquire());
    let mut w3 = boxed(b.acquire());
    assert!(t2.poll(w2.as_mut()).is_pending());
    assert!(t3.poll(w3.as_mut()).is_pending());
    assert_eq!(b.set_max_concurrent(4), Ok(1));
    assert!(matches!(b.try_acquire(), Err(Error::Full { .. })));
    let mut seats = Vec::new();
    for (t, w) in [(&t1, &mut w1), (&t2, &mut w2), (&t3, &mut w3)] {
        let Poll::Ready(Ok(seat)) = t.poll(w.as_mut()) else {
            panic!("every waiter was handed a seat")
        };
        seats.push(seat);
    }
    drop(held);
    drop(seats);
    assert_eq!(b.state().active, 0);
    drop(b.try_acquire().unwrap());
}

#[test]
fn close_during_a_hand_off_closes_every_waiter() {
    let b = bounded(1);
    let held = b.try_acquire().unwrap();
    let (t1, t2) = (Task::new(), Task::new());
    let mut w1 = boxed(b.acquire());
    let mut w2 = boxed(b.acquire());
    assert!(t1.poll(w1.as_mut()).is_pending());
    assert!(t2.poll(w2.as_mut()).is_pending());
    let (held, lost) = lose_races(&b, held, &t1, &mut w1, MAX_LOST_RACES as usize);
    assert_eq!(lost, MAX_LOST_RACES as usize);
    b.close();
    assert!(matches!(
        ready_err(t1.poll(w1.as_mut())),
        Error::Closed { .. }
    ));
    assert!(matches!(
        ready_err(t2.poll(w2.as_mut())),
        Error::Closed { .. }
    ));
    drop(held);
    assert_eq!(b.state().active, 0);
    assert_eq!(b.admission(), Admission::BoundedBarging);
}

/// A small deterministic schedule: waiters, bargers and releases in a
/// pseudo-random order. No waiter ever loses more than `MAX_LOST_RACES`
/// races (a lost race: woken, then a poll that finds no seat while the
/// compartment barges), and every waiter gets a seat.
#[test]
fn no_waiter_loses_more_than_the_bound_in_random_schedules() {
    let steps = if cfg!(miri) { 200 } else { 5_000 };
    for seed in [1u64, 2, 3, 0x9E37_79B9_7F4A_7C15] {
        let mut rng = seed;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let b = bounded(2);
        let tasks: Vec<Task> = (0..4).map(|_| Task::new()).collect();
        let mut waiters: Vec<Option<Waiter<'_>>> = (0..4).map(|_| None).collect();
        let mut seen_wakes = [0usize; 4];
        let mut lost = [0usize; 4];
        let mut served = [0usize; 4];
        let mut holders: Vec<Seat<'_, super::TestLock>> = Vec::new();
        let mut in_hand_off = false;
        for _ in 0..steps {
            let r = next();
            match r % 4 {
                // A waiter arrives, or (if it waits and was woken) runs.
                0 | 1 => {
                    let i = (r >> 8) as usize % 4;
                    let waiter = waiters[i].get_or_insert_with(|| boxed(b.acquire()));
                    let woken = tasks[i].wakes() > seen_wakes[i];
                    seen_wakes[i] = tasks[i].wakes();
                    // Nothing changes the mode between here and the poll.
                    let barging = !b.engine().fifo();
                    match tasks[i].poll(waiter.as_mut()) {
                        Poll::Ready(Ok(seat)) => {
                            holders.push(seat);
                            waiters[i] = None;
                            served[i] += 1;
                            lost[i] = 0;
                        }
                        Poll::Ready(Err(e)) => panic!("{e}"),
                        Poll::Pending if woken && barging => {
                            lost[i] += 1;
                            assert!(
                                lost[i] <= MAX_LOST_RACES as usize,
                                "waiter {i} lost {} races (seed {seed})",
                                lost[i]
                            );
                        }
                        Poll::Pending => {}
                    }
                }
                // A barger.
                2 => {
                    if let Ok(seat) = b.try_acquire() {
                        holders.push(seat);
                    }
                }
                // A holder leaves.
                _ => {
                    if !holders.is_empty() {
                        let i = (r >> 8) as usize % holders.len();
                        drop(holders.swap_remove(i));
                    }
                }
            }
            assert_notified_cell_exact(&b, &std::format!("seed {seed}"));
            in_hand_off |= b.engine().fifo();
        }
        // Drain: release everything; then polling the woken waiters, each
        // of which gives its seat straight back, serves everyone.
        holders.clear();
        for _ in 0..waiters.len() * (MAX_LOST_RACES as usize + 2) {
            for (i, w) in waiters.iter_mut().enumerate() {
                if let Some(fut) = w
                    && tasks[i].wakes() > seen_wakes[i]
                {
                    seen_wakes[i] = tasks[i].wakes();
                    if let Poll::Ready(seat) = tasks[i].poll(fut.as_mut()) {
                        drop(seat.unwrap());
                        *w = None;
                    }
                }
            }
        }
        assert!(
            waiters.iter().all(Option::is_none),
            "a waiter was stranded (seed {seed})"
        );
        assert!(
            in_hand_off || cfg!(miri),
            "no hand-off reached (seed {seed})"
        );
        assert!(served.iter().all(|&n| n > 0), "{served:?} (seed {seed})");
        let s = b.state();
        assert_eq!((s.active, s.waiting), (0, 0));
    }
}
