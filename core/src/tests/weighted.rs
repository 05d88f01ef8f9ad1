//! Weighted seats: taking several seats as one, FIFO without overtaking,
//! seats handed on when a heavy waiter leaves, refusals, split and merge,
//! and the barging drain's notion of coverage (rule 10 in `engine.rs`).

use std::string::ToString;
use std::task::Poll;
use std::vec::Vec;

use super::{Task, boxed, fifo, ready_err, with_config};
use crate::{Admission, Config, Error, SplitError};

fn barging(max: usize) -> super::TestBulkhead {
    with_config(Config::new("test", max).admission(Admission::Barging))
}

#[test]
fn try_acquire_many_takes_every_seat_or_none() {
    let b = fifo(4);
    let three = b.try_acquire_many(3).unwrap();
    assert_eq!((three.weight(), b.state().active), (3, 3));
    // Two asked, one free: none taken, counted as a rejection.
    assert_eq!(
        b.try_acquire_many(2).unwrap_err(),
        Error::Full {
            name: "test".into(),
            max_concurrent: 4,
            active: 3
        }
    );
    assert_eq!((b.state().active, b.state().rejected), (3, 1));
    let one = b.try_acquire_many(1).unwrap();
    drop(three);
    assert_eq!(b.state().active, 1);
    drop(one);
    assert_eq!(b.state().active, 0);
}

#[test]
fn a_zero_weight_is_refused_and_not_counted() {
    let b = fifo(2);
    let err = b.try_acquire_many(0).unwrap_err();
    assert_eq!(
        err,
        Error::ZeroWeight {
            name: "test".into()
        }
    );
    assert!(!err.is_transient());
    assert!(err.to_string().contains("ask for 1 or more"), "{err}");
    let t = Task::new();
    let mut f = boxed(b.acquire_many(0));
    assert_eq!(ready_err(t.poll(f.as_mut())), err);
    assert_eq!(b.state().rejected, 0);
    assert_eq!(b.state().active, 0);
}

#[test]
fn a_weight_above_the_limit_is_refused_at_once_and_counted() {
    let b = fifo(3);
    let expected = Error::WeightAboveLimit {
        name: "test".into(),
        weight: 4,
        max_concurrent: 3,
    };
    assert_eq!(b.try_acquire_many(4).unwrap_err(), expected);
    let t = Task::new();
    let mut f = boxed(b.acquire_many(4));
    assert_eq!(ready_err(t.poll(f.as_mut())), expected);
    assert_eq!(b.state().rejected, 2);
    assert!(
        expected.to_string().contains("ask for at most 3"),
        "{expected}"
    );
    // Absurd weights too, never truncated to a small one.
    // (`u32::MAX + 2` wraps to 1 if truncated to 32 bits; on 32-bit
    // targets it is not a `usize`, so `usize::MAX` stands in.)
    let above_32_bits = (u32::MAX as usize).saturating_add(2);
    for weight in [usize::MAX, above_32_bits, crate::MAX_CONCURRENT_LIMIT + 1] {
        assert!(
            matches!(
                b.try_acquire_many(weight),
                Err(Error::WeightAboveLimit { .. })
            ),
            "{weight}"
        );
        let mut f = boxed(b.acquire_many(weight));
        assert!(matches!(
            ready_err(t.poll(f.as_mut())),
            Error::WeightAboveLimit { .. }
        ));
    }
    assert_eq!(b.state().active, 0);
}

#[test]
fn a_paused_compartment_makes_a_heavy_waiter_wait_not_fail() {
    let b = fifo(2);
    b.set_max_concurrent(0).unwrap();
    assert!(matches!(b.try_acquire_many(2), Err(Error::Full { .. })));
    let t = Task::new();
    let mut f = boxed(b.acquire_many(2));
    assert!(t.poll(f.as_mut()).is_pending());
    b.set_max_concurrent(2).unwrap();
    assert_eq!(t.wakes(), 1);
    let Poll::Ready(Ok(seat)) = t.poll(f.as_mut()) else {
        panic!("the heavy waiter gets both seats once the pause ends")
    };
    assert_eq!(seat.weight(), 2);
}

/// The head of the line asks for 3: freed seats stay in the word for it,
/// no newcomer and no lighter waiter behind it takes them, and it gets all
/// three at once.
#[test]
fn a_heavy_head_is_never_passed_by_lighter_waiters() {
    let b = fifo(4);
    let held: Vec<_> = (0..4).map(|_| b.try_acquire().unwrap()).collect();
    let (heavy_task, light_task) = (Task::new(), Task::new());
    let mut heavy = boxed(b.acquire_many(3));
    let mut light = boxed(b.acquire());
    assert!(heavy_task.poll(heavy.as_mut()).is_pending());
    assert!(light_task.poll(light.as_mut()).is_pending());
    let mut held = held.into_iter();
    for freed in 1..=2 {
        drop(held.next());
        assert_eq!(b.state().active, 4 - freed);
        assert!(b.try_acquire().is_err(), "a newcomer took a kept seat");
        assert_eq!((heavy_task.wakes(), light_task.wakes()), (0, 0));
        assert!(light_task.poll(light.as_mut()).is_pending());
    }
    drop(held.next());
    assert_eq!(heavy_task.wakes(), 1);
    let Poll::Ready(Ok(seat)) = heavy_task.poll(heavy.as_mut()) else {
        panic!("the head has its three seats")
    };
    assert_eq!(
        (seat.weight(), b.state().active, b.state().waiting),
        (3, 4, 1)
    );
    assert!(light_task.poll(light.as_mut()).is_pending());
    drop(held.next());
    assert!(matches!(
        light_task.poll(light.as_mut()),
        Poll::Ready(Ok(_))
    ));
}

/// A heavy head that leaves with seats already freed for it passes them on
/// in the same section: the next waiter is granted without another
/// release.
#[test]
fn seats_kept_for_a_heavy_head_that_leaves_go_to_the_next_waiter_at_once() {
    for leave in ["drop", "time out", "abandon"] {
        let b = fifo(3);
        let held: Vec<_> = (0..3).map(|_| b.try_acquire().unwrap()).collect();
        let (t1, t2, t3) = (Task::new(), Task::new(), Task::new());
        let mut heavy = boxed(b.acquire_many(3));
        let mut a = boxed(b.acquire());
        let mut c = boxed(b.acquire());
        assert!(t1.poll(heavy.as_mut()).is_pending());
        assert!(t2.poll(a.as_mut()).is_pending());
        assert!(t3.poll(c.as_mut()).is_pending());
        let mut held = held.into_iter();
        drop(held.next());
        drop(held.next());
        assert_eq!((t2.wakes(), t3.wakes()), (0, 0));
        match leave {
            "drop" => drop(heavy),
            "time out" => {
                let err = heavy
                    .as_mut()
                    .time_out(core::time::Duration::from_millis(5));
                assert!(matches!(err, Err(Error::Timeout { .. })));
            }
            _ => assert!(heavy.as_mut().abandon().is_none()),
        }
        assert_eq!((t2.wakes(), t3.wakes()), (1, 1), "{leave}");
        assert!(matches!(t2.poll(a.as_mut()), Poll::Ready(Ok(_))), "{leave}");
        assert!(matches!(t3.poll(c.as_mut()), Poll::Ready(Ok(_))), "{leave}");
        assert_eq!(b.state().waiting, 0);
        drop(held);
    }
}

#[test]
fn closing_wakes_a_heavy_waiter_with_closed_and_loses_no_seat() {
    let b = fifo(2);
    let held = b.try_acquire().unwrap();
    let t = Task::new();
    let mut heavy = boxed(b.acquire_many(2));
    assert!(t.poll(heavy.as_mut()).is_pending());
    b.close();
    assert_eq!(
        ready_err(t.poll(heavy.as_mut())),
        Error::Closed {
            name: "test".into()
        }
    );
    drop(held);
    assert_eq!((b.state().active, b.state().waiting), (0, 0));
}

/// A shrink below a queued weight refuses that waiter when it reaches the
/// front, with a counted `WeightAboveLimit`, and the line moves on.
#[test]
fn a_shrink_below_a_queued_weight_refuses_that_waiter() {
    let b = fifo(4);
    let held = b.try_acquire_many(4).unwrap();
    let (t1, t2) = (Task::new(), Task::new());
    let mut heavy = boxed(b.acquire_many(3));
    let mut light = boxed(b.acquire());
    assert!(t1.poll(heavy.as_mut()).is_pending());
    assert!(t2.poll(light.as_mut()).is_pending());
    b.set_max_concurrent(2).unwrap();
    assert_eq!(t1.wakes(), 1, "refused in the resize's own section");
    assert_eq!(
        ready_err(t1.poll(heavy.as_mut())),
        Error::WeightAboveLimit {
            name: "test".into(),
            weight: 3,
            max_concurrent: 2
        }
    );
    assert_eq!((b.state().rejected, b.state().waiting), (1, 1));
    drop(held); // pays the debt of 2, leaves 2 free: the light one's turn
    assert!(matches!(t2.poll(light.as_mut()), Poll::Ready(Ok(_))));
}

/// Rule 10: a free seat too few for the head makes no drain loop forever,
/// and the next release that makes enough does grant it. (A hang here is
/// the failure.)
#[test]
fn a_release_too_small_for_the_head_owes_no_drain_and_loses_no_grant() {
    for admission in [
        Admission::Fifo,
        Admission::Barging,
        Admission::BoundedBarging,
    ] {
        let b = with_config(Config::new("test", 3).admission(admission));
        let held: Vec<_> = (0..3).map(|_| b.try_acquire().unwrap()).collect();
        let t = Task::new();
        let mut heavy = boxed(b.acquire_many(2));
        assert!(t.poll(heavy.as_mut()).is_pending());
        let mut held = held.into_iter();
        drop(held.next());
        assert_eq!(t.wakes(), 0, "{admission:?}: woken with one seat of two");
        drop(held.next());
        assert_eq!(t.wakes(), 1, "{admission:?}");
        let Poll::Ready(Ok(seat)) = t.poll(heavy.as_mut()) else {
            panic!("{admission:?}: two seats free")
        };
        assert_eq!(seat.weight(), 2);
    }
}

/// Barging: a heavy waiter is woken only when its weight fits in the
/// uncovered seats, so it is never woken over and over to lose.
#[test]
fn a_barging_heavy_waiter_is_not_woken_for_seats_it_cannot_use() {
    let b = barging(3);
    let held: Vec<_> = (0..3).map(|_| b.try_acquire().unwrap()).collect();
    let t = Task::new();
    let mut heavy = boxed(b.acquire_many(3));
    assert!(t.poll(heavy.as_mut()).is_pending());
    let mut held = held.into_iter();
    drop(held.next());
    drop(held.next());
    assert_eq!(t.wakes(), 0);
    // A newcomer may barge for a free seat: this is barging.
    let barger = b.try_acquire().unwrap();
    drop(barger);
    assert_eq!(t.wakes(), 0);
    drop(held.next());
    assert_eq!(t.wakes(), 1);
    assert!(matches!(t.poll(heavy.as_mut()), Poll::Ready(Ok(_))));
}

/// Barging: a notified heavy waiter that loses its seats to a barger is
/// requeued and not notified again until enough seats are free.
#[test]
fn a_barging_heavy_waiter_that_loses_is_not_re_notified_for_too_few_seats() {
    let b = barging(2);
    let held: Vec<_> = (0..2).map(|_| b.try_acquire().unwrap()).collect();
    let t = Task::new();
    let mut heavy = boxed(b.acquire_many(2));
    assert!(t.poll(heavy.as_mut()).is_pending());
    drop(held);
    assert_eq!(t.wakes(), 1);
    let barger = b.try_acquire().unwrap();
    assert!(t.poll(heavy.as_mut()).is_pending(), "lost the race");
    assert_eq!(t.wakes(), 1, "not woken again with one seat free");
    drop(barger);
    assert_eq!(t.wakes(), 2);
    assert!(matches!(t.poll(heavy.as_mut()), Poll::Ready(Ok(_))));
}

/// `BoundedBarging`: a weighted waiter that keeps losing (woken and then
/// beaten by a barger, or passed over while seats it cannot use are free)
/// gets the hand-off within `MAX_LOST_RACES` rounds, and from then on the
/// freed seats are kept for it: no barger gets in.
#[test]
fn a_bounded_barging_heavy_waiter_gets_the_hand_off() {
    let b = with_config(Config::new("test", 2).admission(Admission::BoundedBarging));
    let held: Vec<_> = (0..2).map(|_| b.try_acquire().unwrap()).collect();
    let t = Task::new();
    let mut heavy = boxed(b.acquire_many(2));
    assert!(t.poll(heavy.as_mut()).is_pending());
    drop(held);
    let mut rounds = 0;
    let seat = loop {
        if let Poll::Ready(result) = t.poll(heavy.as_mut()) {
            break result.expect("a seat, not an error");
        }
        rounds += 1;
        assert!(
            rounds <= crate::MAX_LOST_RACES as usize,
            "no hand-off after {rounds} rounds"
        );
        match b.try_acquire() {
            Ok(barger) => drop(barger),
            // In the hand-off: the seats are kept for the heavy waiter.
            Err(Error::Full { .. }) => assert!(b.engine().fifo()),
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(seat.weight(), 2);
    drop(seat);
    assert_eq!(b.state().active, 0);
}

#[test]
fn split_and_merge_move_weight_without_touching_the_count() {
    let other = fifo(1);
    let b = fifo(4);
    let mut seat = b.try_acquire_many(4).unwrap();
    let part = seat.split(1).unwrap();
    assert_eq!((seat.weight(), part.weight(), b.state().active), (3, 1, 4));
    drop(part);
    assert_eq!(b.state().active, 3);
    for bad in [0, 3, 4, usize::MAX] {
        assert_eq!(
            seat.split(bad).unwrap_err(),
            SplitError {
                held: 3,
                requested: bad
            }
        );
    }
    assert_eq!(seat.weight(), 3, "a refused split changes nothing");
    let more = b.try_acquire().unwrap();
    seat.merge(more).unwrap();
    assert_eq!((seat.weight(), b.state().active), (4, 4));
    let foreign = other.try_acquire().unwrap();
    let err = seat.merge(foreign).unwrap_err();
    assert!(
        err.to_string().contains("only within one compartment"),
        "{err}"
    );
    let foreign = err.into_inner();
    assert_eq!((other.state().active, seat.weight()), (1, 4));
    drop(foreign);
    assert_eq!(other.state().active, 0);
    drop(seat);
    assert_eq!(b.state().active, 0);
    let mut one = b.try_acquire().unwrap();
    assert!(
        one.split(1)
            .unwrap_err()
            .to_string()
            .contains("weight 1 cannot be split")
    );
}

/// A split part given back while a heavy waiter waits counts towards it.
#[test]
fn a_split_part_given_back_counts_towards_a_heavy_waiter() {
    let b = fifo(3);
    let mut seat = b.try_acquire_many(3).unwrap();
    let t = Task::new();
    let mut heavy = boxed(b.acquire_many(2));
    assert!(t.poll(heavy.as_mut()).is_pending());
    let part = seat.split(1).unwrap();
    drop(part);
    assert_eq!(t.wakes(), 0);
    let part = seat.split(1).unwrap();
    drop(part);
    assert!(matches!(t.poll(heavy.as_mut()), Poll::Ready(Ok(_))));
    drop(seat);
}

#[test]
fn owned_seats_carry_their_weight() {
    use crate::OwnedSeat;
    use std::sync::Arc;
    let b = Arc::new(fifo(4));
    let mut seat = OwnedSeat::try_acquire_many(b.clone(), 3).unwrap();
    assert_eq!((seat.weight(), b.state().active), (3, 3));
    let part = seat.split(2).unwrap();
    assert!(Arc::ptr_eq(part.handle(), &b));
    drop(seat);
    assert_eq!(b.state().active, 2);
    let t = Task::new();
    let mut wait = boxed(OwnedSeat::acquire_many(b.clone(), 2));
    assert!(matches!(t.poll(wait.as_mut()), Poll::Ready(Ok(ref s)) if s.weight() == 2));
    drop(wait);
    let mut wait = boxed(OwnedSeat::acquire_many(b.clone(), 3));
    assert!(t.poll(wait.as_mut()).is_pending());
    drop(part);
    let Poll::Ready(Ok(mut three)) = t.poll(wait.as_mut()) else {
        panic!("three seats")
    };
    let other = Arc::new(fifo(1));
    let foreign = OwnedSeat::try_acquire(other.clone()).unwrap();
    let foreign = three.merge(foreign).unwrap_err().into_inner();
    assert_eq!(foreign.weight(), 1);
    let one = OwnedSeat::try_acquire(b.clone()).unwrap();
    three.merge(one).unwrap();
    assert_eq!((three.weight(), b.state().active), (4, 4));
    drop(three);
    drop(foreign);
    assert_eq!((b.state().active, other.state().active), (0, 0));
    // Arc counts: only the test's own handles are left (merge dropped the
    // merged seat's handle exactly once).
    assert_eq!(Arc::strong_count(&b), 1);
}
