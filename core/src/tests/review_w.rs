//! Findings of the review of weighted seats and the order of the line,
//! each a scenario that once failed.

use std::task::Poll;
use std::vec::Vec;

use super::{Task, boxed, ready_err, with_config};
use crate::{Admission, Config, Error, QueueOrder};

/// `BoundedBarging`: a heavy first waiter that bargers keep passing, with
/// a light waiter behind it. The light one is woken for the seats the heavy
/// one cannot use, and the heavy one, passed again and again, gets the
/// hand-off within the bound.
#[test]
fn review_light_waiter_behind_a_heavy_one_is_woken_and_the_heavy_one_gets_the_hand_off() {
    let b = with_config(Config::new("test", 2).admission(Admission::BoundedBarging));
    let mut a = Some(b.try_acquire().unwrap());
    let mut c = Some(b.try_acquire().unwrap());
    let (th, tl) = (Task::new(), Task::new());
    let mut heavy = boxed(b.acquire_many(2));
    let mut light = boxed(b.acquire());
    assert!(th.poll(heavy.as_mut()).is_pending());
    assert!(tl.poll(light.as_mut()).is_pending());
    let (mut heavy_seat, mut light_served) = (None, false);
    for i in 0..100 {
        let slot = if i % 2 == 0 { &mut a } else { &mut c };
        drop(slot.take());
        *slot = b.try_acquire().ok();
        if th.wakes() > 0
            && heavy_seat.is_none()
            && let Poll::Ready(r) = th.poll(heavy.as_mut())
        {
            heavy_seat = Some(r.unwrap());
        }
        if tl.wakes() > 0
            && !light_served
            && let Poll::Ready(r) = tl.poll(light.as_mut())
        {
            // Served, and given back at once.
            drop(r.unwrap());
            light_served = true;
        }
        if heavy_seat.is_some() {
            break;
        }
    }
    assert!(tl.wakes() > 0, "the light waiter was never woken");
    assert!(
        heavy_seat.is_some(),
        "the heavy waiter never got its hand-off"
    );
}

/// `Barging`: a light waiter behind a heavy one is woken for a free seat
/// the heavy one cannot use, rather than sleep next to it.
#[test]
fn review_barging_light_waiter_is_woken_for_a_seat_a_heavy_one_cannot_use() {
    let b = with_config(Config::new("test", 3).admission(Admission::Barging));
    let _long_lived = b.try_acquire_many(2).unwrap();
    let short = b.try_acquire().unwrap();
    let (th, tl) = (Task::new(), Task::new());
    let mut heavy = boxed(b.acquire_many(3));
    let mut light = boxed(b.acquire());
    assert!(th.poll(heavy.as_mut()).is_pending());
    assert!(tl.poll(light.as_mut()).is_pending());
    drop(short);
    assert_eq!(b.state().active, 2);
    assert_eq!((th.wakes(), tl.wakes()), (0, 1));
    assert!(matches!(tl.poll(light.as_mut()), Poll::Ready(Ok(_))));
    assert!(th.poll(heavy.as_mut()).is_pending());
}

/// Newest first with barging: drop-oldest drops the oldest waiter not yet
/// woken; the woken ones (about to take a seat) are passed over. Here the
/// only one not yet woken is the newest, so that is the one dropped.
#[test]
fn review_newest_first_barging_drop_oldest_passes_over_woken_waiters() {
    let b = with_config(
        Config::new("test", 2)
            .admission(Admission::Barging)
            .max_waiting(3)
            .queue_order(QueueOrder::Lifo),
    );
    let held: Vec<_> = (0..2).map(|_| b.try_acquire().unwrap()).collect();
    let tasks: Vec<Task> = (0..4).map(|_| Task::new()).collect();
    let mut futs: Vec<_> = (0..4).map(|_| boxed(b.acquire())).collect();
    assert!(tasks[0].poll(futs[0].as_mut()).is_pending());
    assert!(tasks[1].poll(futs[1].as_mut()).is_pending());
    drop(held);
    assert_eq!((tasks[0].wakes(), tasks[1].wakes()), (1, 1));
    let _bargers: Vec<_> = (0..2).map(|_| b.try_acquire().unwrap()).collect();
    assert!(tasks[2].poll(futs[2].as_mut()).is_pending());
    assert!(tasks[3].poll(futs[3].as_mut()).is_pending());
    assert!(matches!(
        ready_err(tasks[2].poll(futs[2].as_mut())),
        Error::QueueFull { .. }
    ));
    assert_eq!(b.state().rejected, 1);
}

/// After a live switch from oldest first, the back of the line is the
/// newest of the earlier waiters: that is the one a full queue drops.
#[test]
fn review_switching_to_newest_first_drops_the_back_of_the_line() {
    let b = with_config(Config::new("test", 1).max_waiting(2));
    let _held = b.try_acquire().unwrap();
    let tasks: Vec<Task> = (0..3).map(|_| Task::new()).collect();
    let mut futs: Vec<_> = (0..3).map(|_| boxed(b.acquire())).collect();
    assert!(tasks[0].poll(futs[0].as_mut()).is_pending());
    assert!(tasks[1].poll(futs[1].as_mut()).is_pending());
    b.set_queue_order(QueueOrder::Lifo);
    assert!(tasks[2].poll(futs[2].as_mut()).is_pending());
    assert_eq!(tasks.iter().map(Task::wakes).collect::<Vec<_>>(), [0, 1, 0]);
}

#[cfg(target_pointer_width = "64")]
#[test]
fn review_a_weight_above_32_bits_is_reported_as_asked() {
    let b = super::fifo(2);
    let asked = u32::MAX as usize + 7;
    let mut f = boxed(b.acquire_many(asked));
    match ready_err(Task::new().poll(f.as_mut())) {
        Error::WeightAboveLimit { weight, .. } => assert_eq!(weight, asked),
        e => panic!("{e:?}"),
    }
    let mut f = boxed(b.acquire_many(usize::MAX));
    assert!(matches!(
        ready_err(Task::new().poll(f.as_mut())),
        Error::WeightAboveLimit {
            weight: usize::MAX,
            ..
        }
    ));
}

/// A paused compartment answers `Full` to any weight a limit could reach,
/// and `WeightAboveLimit` to one no limit can.
#[test]
fn review_a_paused_compartment_refuses_only_weights_no_limit_can_reach() {
    let b = super::fifo(1);
    b.set_max_concurrent(0).unwrap();
    assert!(matches!(
        b.try_acquire_many(crate::MAX_CONCURRENT_LIMIT),
        Err(Error::Full { .. })
    ));
    assert!(matches!(
        b.try_acquire_many(crate::MAX_CONCURRENT_LIMIT + 1),
        Err(Error::WeightAboveLimit { .. })
    ));
}

/// `BoundedBarging`: once the starving waiter is served, a next head too
/// heavy for the free seats ends the hand-off, and running callers may take
/// those seats again.
#[test]
fn review_a_hand_off_ends_when_the_next_head_is_too_heavy() {
    let b = with_config(Config::new("test", 3).admission(Admission::BoundedBarging));
    let a = b.try_acquire_many(2).unwrap();
    let mut c = b.try_acquire().unwrap();
    let (ts, th) = (Task::new(), Task::new());
    let mut s = boxed(b.acquire());
    let mut h = boxed(b.acquire_many(3));
    assert!(ts.poll(s.as_mut()).is_pending());
    assert!(th.poll(h.as_mut()).is_pending());
    let mut served = None;
    for _ in 0..crate::MAX_LOST_RACES {
        drop(c);
        c = b.try_acquire().unwrap();
        if let Poll::Ready(r) = ts.poll(s.as_mut()) {
            served = Some(r.unwrap());
            break;
        }
    }
    drop(a);
    let _s_seat = match served {
        Some(seat) => seat,
        None => match ts.poll(s.as_mut()) {
            Poll::Ready(r) => r.unwrap(),
            Poll::Pending => panic!("the starving waiter was not served"),
        },
    };
    assert!(b.state().active <= 2);
    let r = b.try_acquire();
    assert!(
        r.is_ok(),
        "still in the hand-off with a seat free: {:?}",
        r.err()
    );
    drop((c, r));
}

/// A rejection hook that panics once: the oversized request it counts is
/// counted once, not again when the future is polled after the panic.
#[test]
fn review_a_weight_above_the_limit_is_counted_once_when_the_hook_panics() {
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    #[derive(Default)]
    struct PanicOnce(super::TestLock, AtomicBool);
    // SAFETY: delegates to `TestLock`, which keeps `RawLock`'s promises.
    unsafe impl crate::RawLock for PanicOnce {
        unsafe fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
            // SAFETY: the caller's contract, passed on.
            unsafe { self.0.with_lock(f) }
        }
        unsafe fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
            // SAFETY: the caller's contract, passed on.
            unsafe { self.0.try_with_lock(f) }
        }
        fn record_rejection(&self) {
            self.0.record_rejection();
            if !self.1.swap(true, SeqCst) {
                panic!("hook");
            }
        }
        fn counts(&self) -> crate::Counts {
            self.0.counts()
        }
    }
    let b = crate::Bulkhead::with_lock(Config::new("test", 2), PanicOnce::default()).unwrap();
    let t = Task::new();
    let mut f = boxed(b.acquire_many(crate::MAX_CONCURRENT_LIMIT + 1));
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = t.poll(f.as_mut());
    }));
    assert!(unwound.is_err());
    let again = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = t.poll(f.as_mut());
    }));
    assert!(again.is_err(), "a finished future panics when polled again");
    assert_eq!(b.state().rejected, 1);
}

/// Newest first: a newcomer that the free seats fit is served at once,
/// and no waiter is dropped to make room it does not need.
#[test]
fn review_drop_oldest_evicts_nobody_for_a_newcomer_served_at_once() {
    let b = with_config(
        Config::new("test", 3)
            .max_waiting(2)
            .queue_order(QueueOrder::Lifo),
    );
    let _one = b.try_acquire().unwrap();
    let (t1, t2, t3) = (Task::new(), Task::new(), Task::new());
    let mut h1 = boxed(b.acquire_many(3));
    let mut h2 = boxed(b.acquire_many(3));
    assert!(t1.poll(h1.as_mut()).is_pending());
    assert!(t2.poll(h2.as_mut()).is_pending());
    let mut n = boxed(b.acquire());
    assert!(matches!(t3.poll(n.as_mut()), Poll::Ready(Ok(_))));
    assert_eq!(
        (t1.wakes(), b.state().waiting, b.state().rejected),
        (0, 2, 0)
    );
}

/// Barging: a waiter heavier than a limit that shrank below it is refused
/// in the shrink's own section, even with no seat free, as in FIFO mode;
/// it does not wait out its budget.
#[test]
fn review_barging_refuses_a_waiter_heavier_than_a_shrunk_limit_at_once() {
    for admission in [Admission::Barging, Admission::BoundedBarging] {
        let b = with_config(Config::new("test", 8).admission(admission));
        let _hold = b.try_acquire_many(8).unwrap();
        let t = Task::new();
        let mut heavy = boxed(b.acquire_many(6));
        assert!(t.poll(heavy.as_mut()).is_pending());
        b.set_max_concurrent(5).unwrap();
        assert_eq!(t.wakes(), 1, "{admission:?}");
        assert!(
            matches!(
                ready_err(t.poll(heavy.as_mut())),
                Error::WeightAboveLimit {
                    weight: 6,
                    max_concurrent: 5,
                    ..
                }
            ),
            "{admission:?}"
        );
    }
}
