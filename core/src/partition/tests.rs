//! Unit tests of partitioned compartments: the rules, the reclaim bound,
//! waits, cancellation, close, resize and the errors.

extern crate std;

use std::boxed::Box;
use std::pin::{Pin, pin};
use std::string::ToString;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::vec::Vec;

use super::*;
use crate::CsLock;
use crate::QueueOrder;

/// A waker that counts its wake-ups.
struct Count(AtomicUsize);
impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}
fn counting() -> (Arc<Count>, Waker) {
    let c = Arc::new(Count(AtomicUsize::new(0)));
    (c.clone(), Waker::from(c))
}

fn db() -> Partitioned<CsLock> {
    Partitioned::new(
        "db",
        32,
        &[
            PartitionConfig::new("live", Amount::Seats(24)).priority(1),
            PartitionConfig::new("batch", Amount::Seats(8)).borrow(Amount::Seats(16)),
        ],
    )
    .unwrap()
}

#[test]
fn a_borrower_takes_idle_seats_up_to_its_limit() {
    let db = db();
    let (live, batch) = (db.id("live").unwrap(), db.id("batch").unwrap());
    let seats: Vec<_> = (0..24).map(|_| db.try_acquire(batch).unwrap()).collect();
    let err = db.try_acquire(batch).unwrap_err();
    assert!(
        matches!(
            err,
            Error::PartitionFull {
                active: 24,
                share: 8,
                may_hold: 24,
                ..
            }
        ),
        "{err}"
    );
    let s = db.partition_state(batch).unwrap();
    assert_eq!((s.active, s.borrowed, s.rejected), (24, 16, 1));
    assert_eq!(db.partition_state(live).unwrap().lent, 16);
    // live still has 8 free seats of its share
    let l: Vec<_> = (0..8).map(|_| db.try_acquire(live).unwrap()).collect();
    assert!(db.try_acquire(live).is_err());
    assert_eq!(db.state().active, 32);
    drop((seats, l));
    assert_eq!(db.state().active, 0);
}

#[test]
fn a_freed_seat_goes_to_the_lender_below_its_share_before_any_borrower() {
    let db = db();
    let (live, batch) = (db.id("live").unwrap(), db.id("batch").unwrap());
    let mut b: Vec<_> = (0..24).map(|_| db.try_acquire(batch).unwrap()).collect();
    let l: Vec<_> = (0..8).map(|_| db.try_acquire(live).unwrap()).collect();
    // a batch waiter first, then a live waiter
    let (_, wb) = counting();
    let (cl, wl) = counting();
    let mut bw = pin!(db.acquire(batch));
    assert!(bw.as_mut().poll(&mut Context::from_waker(&wb)).is_pending());
    let mut lw = pin!(db.acquire(live));
    assert!(lw.as_mut().poll(&mut Context::from_waker(&wl)).is_pending());
    drop(b.pop());
    assert_eq!(cl.0.load(Ordering::SeqCst), 1);
    let Poll::Ready(Ok(seat)) = lw.as_mut().poll(&mut Context::from_waker(&wl)) else {
        panic!("the lender gets the seat")
    };
    assert!(bw.as_mut().poll(&mut Context::from_waker(&wb)).is_pending());
    // a borrower newcomer cannot take a seat freed while the lender waits
    drop((seat, l, b));
}

#[test]
fn while_a_lender_waits_no_borrower_takes_a_free_seat() {
    let db: Partitioned<CsLock> = Partitioned::new(
        "db",
        4,
        &[
            PartitionConfig::new("live", Amount::Seats(2)).priority(1),
            PartitionConfig::new("batch", Amount::Seats(2)),
        ],
    )
    .unwrap();
    let (live, batch) = (db.id("live").unwrap(), db.id("batch").unwrap());
    let mut b: Vec<_> = (0..4).map(|_| db.try_acquire(batch).unwrap()).collect();
    let (_, w) = counting();
    let mut lw = pin!(db.acquire_many(live, 2));
    assert!(lw.as_mut().poll(&mut Context::from_waker(&w)).is_pending());
    drop(b.pop()); // one seat free, the lender needs two: kept for it
    assert!(db.try_acquire(batch).is_err());
    drop(b.pop());
    let Poll::Ready(Ok(seat)) = lw.as_mut().poll(&mut Context::from_waker(&w)) else {
        panic!("served")
    };
    assert_eq!(seat.weight(), 2);
}

#[test]
fn dropping_a_waiter_leaves_the_line_and_passes_kept_seats_on() {
    let db = db();
    let (live, batch) = (db.id("live").unwrap(), db.id("batch").unwrap());
    let b: Vec<_> = (0..24).map(|_| db.try_acquire(batch).unwrap()).collect();
    let l: Vec<_> = (0..7).map(|_| db.try_acquire(live).unwrap()).collect();
    let (_, w) = counting();
    {
        let mut lw = pin!(db.acquire_many(live, 2));
        assert!(lw.as_mut().poll(&mut Context::from_waker(&w)).is_pending());
        assert_eq!(db.partition_state(live).unwrap().waiting, 1);
    }
    assert_eq!(db.partition_state(live).unwrap().waiting, 0);
    let one = db.try_acquire(live).unwrap();
    drop((one, l, b));
    assert_eq!(db.state().active, 0);
}

fn two(share_a: Amount, share_b: Amount, limit: usize) -> Partitioned<CsLock> {
    Partitioned::new(
        "db",
        limit,
        &[
            PartitionConfig::new("live", share_a).priority(1),
            PartitionConfig::new("batch", share_b),
        ],
    )
    .unwrap()
}

/// Polls `f` once with `w`.
fn poll<F: Future>(f: Pin<&mut F>, w: &Waker) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(w))
}

#[test]
fn close_wakes_every_waiter_with_closed_and_refuses_newcomers() {
    let db = two(Amount::Seats(1), Amount::Seats(1), 2);
    let (live, batch) = (db.id("live").unwrap(), db.id("batch").unwrap());
    let held = [
        db.try_acquire(live).unwrap(),
        db.try_acquire(batch).unwrap(),
    ];
    let (c, w) = counting();
    let mut waits: Vec<_> = (0..12)
        .map(|k| Box::pin(db.acquire(if k % 2 == 0 { live } else { batch })))
        .collect();
    for f in &mut waits {
        assert!(poll(f.as_mut(), &w).is_pending());
    }
    db.close();
    // More waiters than one section's batch: all woken all the same.
    assert_eq!(c.0.load(Ordering::SeqCst), 12);
    for f in &mut waits {
        assert!(matches!(
            poll(f.as_mut(), &w),
            Poll::Ready(Err(Error::Closed { .. }))
        ));
    }
    assert!(matches!(db.try_acquire(live), Err(Error::Closed { .. })));
    assert!(db.is_closed());
    drop(held);
    assert_eq!(db.state().active, 0);
}

#[test]
fn percentage_shares_follow_the_limit_and_a_grow_serves_waiters() {
    let db = two(Amount::Percent(50), Amount::Percent(50), 4);
    let (live, batch) = (db.id("live").unwrap(), db.id("batch").unwrap());
    let held: Vec<_> = (0..4).map(|_| db.try_acquire(batch).unwrap()).collect();
    let (c, w) = counting();
    let mut lw = pin!(db.acquire(live));
    assert!(poll(lw.as_mut(), &w).is_pending());
    assert_eq!(db.set_max_concurrent(8).unwrap(), 4);
    assert_eq!(db.partition_state(live).unwrap().share, 4);
    assert_eq!(c.0.load(Ordering::SeqCst), 1, "a grow serves the waiter");
    assert!(matches!(poll(lw.as_mut(), &w), Poll::Ready(Ok(_))));
    // A shrink below what is held pre-empts nothing: the count stays.
    db.set_max_concurrent(2).unwrap();
    assert_eq!(db.state().active, 4);
    assert_eq!(db.partition_state(batch).unwrap().share, 1);
    assert!(db.try_acquire(batch).is_err());
    drop(held);
    assert_eq!(db.state().active, 0);
}

#[test]
fn seat_shares_cannot_shrink_below_their_sum_and_zero_pauses() {
    let db = two(Amount::Seats(3), Amount::Seats(1), 4);
    let e = db.set_max_concurrent(3).unwrap_err();
    assert!(
        matches!(
            e,
            ConfigError::SharesExceedLimit {
                shares: 4,
                max_concurrent: 3,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(db.state().max_concurrent, 4, "unchanged after the error");
    db.set_max_concurrent(0).unwrap();
    let live = db.id("live").unwrap();
    assert!(matches!(
        db.try_acquire(live),
        Err(Error::PartitionFull { .. })
    ));
    let (c, w) = counting();
    let mut lw = pin!(db.acquire(live));
    assert!(poll(lw.as_mut(), &w).is_pending(), "a pause: callers wait");
    db.set_max_concurrent(4).unwrap();
    assert_eq!(c.0.load(Ordering::SeqCst), 1);
    assert!(matches!(poll(lw.as_mut(), &w), Poll::Ready(Ok(_))));
}

#[test]
fn a_reserve_is_never_lent() {
    let db: Partitioned<CsLock> = Partitioned::new(
        "db",
        10,
        &[
            PartitionConfig::new("live", Amount::Seats(6)).lendable(Amount::Percent(50)),
            PartitionConfig::new("batch", Amount::Seats(4)),
        ],
    )
    .unwrap();
    let (live, batch) = (db.id("live").unwrap(), db.id("batch").unwrap());
    let s = db.partition_state(live).unwrap();
    assert_eq!((s.share, s.reserved), (6, 3));
    assert_eq!(db.partition_state(batch).unwrap().may_hold, 7);
    let b: Vec<_> = (0..7).map(|_| db.try_acquire(batch).unwrap()).collect();
    assert!(
        db.try_acquire(batch).is_err(),
        "live's reserve of 3 stays free"
    );
    let l: Vec<_> = (0..3).map(|_| db.try_acquire(live).unwrap()).collect();
    assert!(db.try_acquire(live).is_err());
    assert_eq!(db.partition_state(live).unwrap().lent, 3);
    drop((b, l));
}

#[test]
fn the_guaranteed_lane_passes_another_partitions_heavy_waiter() {
    let db = two(Amount::Seats(2), Amount::Seats(2), 4);
    let (live, batch) = (db.id("live").unwrap(), db.id("batch").unwrap());
    let b = db.try_acquire_many(batch, 2).unwrap();
    let l = db.try_acquire(live).unwrap();
    // batch waits for 2 more (borrowing); 1 seat is free.
    let (_, w) = counting();
    let mut bw = pin!(db.acquire_many(batch, 2));
    assert!(poll(bw.as_mut(), &w).is_pending());
    // live within its share takes the free seat at once.
    let l2 = db.try_acquire(live).unwrap();
    drop((b, l, l2));
    assert!(matches!(poll(bw.as_mut(), &w), Poll::Ready(Ok(_))));
}

#[test]
fn equal_ranks_take_turns() {
    let db: Partitioned<CsLock> = Partitioned::new(
        "db",
        2,
        &[
            PartitionConfig::new("a", Amount::Seats(0)),
            PartitionConfig::new("b", Amount::Seats(0)),
        ],
    )
    .unwrap();
    let (a, b) = (db.id("a").unwrap(), db.id("b").unwrap());
    let mut held = Vec::new();
    held.push(db.try_acquire(a).unwrap());
    held.push(db.try_acquire(a).unwrap());
    let (_, w) = counting();
    let mut wa: Vec<_> = (0..3).map(|_| Box::pin(db.acquire(a))).collect();
    let mut wb: Vec<_> = (0..3).map(|_| Box::pin(db.acquire(b))).collect();
    for f in wa.iter_mut().chain(wb.iter_mut()) {
        assert!(poll(f.as_mut(), &w).is_pending());
    }
    let mut order = Vec::new();
    for _ in 0..6 {
        drop(held.remove(0));
        for (k, f) in wa.iter_mut().enumerate() {
            if let Poll::Ready(Ok(s)) = poll(f.as_mut(), &w) {
                order.push('a');
                held.push(s);
                drop(wa.remove(k));
                break;
            }
        }
        for (k, f) in wb.iter_mut().enumerate() {
            if let Poll::Ready(Ok(s)) = poll(f.as_mut(), &w) {
                order.push('b');
                held.push(s);
                drop(wb.remove(k));
                break;
            }
        }
    }
    assert_eq!(order.iter().filter(|c| **c == 'a').count(), 3);
    assert_ne!(order[..2], ['a', 'a'], "b gets a turn: {order:?}");
}

#[test]
fn a_full_line_turns_newcomers_away_or_drops_the_oldest() {
    let db: Partitioned<CsLock> = Partitioned::new(
        "db",
        1,
        &[
            PartitionConfig::new("fifo", Amount::Seats(0)).max_waiting(1),
            PartitionConfig::new("lifo", Amount::Seats(0))
                .max_waiting(1)
                .queue_order(QueueOrder::Lifo),
        ],
    )
    .unwrap();
    let (fifo, lifo) = (db.id("fifo").unwrap(), db.id("lifo").unwrap());
    let held = db.try_acquire(fifo).unwrap();
    let (_, w) = counting();
    let mut f1 = pin!(db.acquire(fifo));
    assert!(poll(f1.as_mut(), &w).is_pending());
    let mut f2 = pin!(db.acquire(fifo));
    assert!(matches!(
        poll(f2.as_mut(), &w),
        Poll::Ready(Err(Error::QueueFull { max_waiting: 1, .. }))
    ));
    let mut l1 = pin!(db.acquire(lifo));
    assert!(poll(l1.as_mut(), &w).is_pending());
    let mut l2 = pin!(db.acquire(lifo));
    assert!(poll(l2.as_mut(), &w).is_pending());
    assert!(
        matches!(
            poll(l1.as_mut(), &w),
            Poll::Ready(Err(Error::QueueFull { .. }))
        ),
        "the oldest is dropped"
    );
    assert_eq!(db.partition_state(fifo).unwrap().rejected, 1);
    assert_eq!(db.partition_state(lifo).unwrap().rejected, 1);
    drop(held);
}

#[test]
fn a_timed_out_wait_is_counted_and_a_seat_granted_meanwhile_is_kept() {
    let db = two(Amount::Seats(1), Amount::Seats(1), 2);
    let (live, batch) = (db.id("live").unwrap(), db.id("batch").unwrap());
    let _other = db.try_acquire(batch).unwrap();
    let held = db.try_acquire(live).unwrap();
    let (_, w) = counting();
    let mut f = pin!(db.acquire(live));
    assert!(poll(f.as_mut(), &w).is_pending());
    let e = f
        .as_mut()
        .time_out(core::time::Duration::from_millis(5))
        .unwrap_err();
    assert!(matches!(e, Error::Timeout { .. }), "{e}");
    assert_eq!(db.partition_state(live).unwrap().timed_out, 1);
    let mut g = pin!(db.acquire(live));
    assert!(poll(g.as_mut(), &w).is_pending());
    drop(held); // granted to g before its budget runs out
    let seat = g
        .as_mut()
        .time_out(core::time::Duration::from_millis(5))
        .unwrap();
    assert_eq!(db.partition_state(live).unwrap().timed_out, 1);
    drop(seat);
    assert_eq!(db.state().active, 1);
}

#[test]
fn a_granted_wait_dropped_unread_gives_its_seat_to_the_next() {
    let db = two(Amount::Seats(1), Amount::Seats(1), 2);
    let (live, batch) = (db.id("live").unwrap(), db.id("batch").unwrap());
    let _other = db.try_acquire(batch).unwrap();
    let held = db.try_acquire(live).unwrap();
    let (_, w) = counting();
    let (c2, w2) = counting();
    let mut f = Box::pin(db.acquire(live));
    assert!(poll(f.as_mut(), &w).is_pending());
    let mut g = pin!(db.acquire(live));
    assert!(poll(g.as_mut(), &w2).is_pending());
    drop(held); // f is granted
    drop(f); // ... and dropped before reading it
    assert_eq!(c2.0.load(Ordering::SeqCst), 1);
    assert!(matches!(poll(g.as_mut(), &w2), Poll::Ready(Ok(_))));
}

#[test]
fn weights_above_what_a_partition_may_hold_are_refused() {
    let db: Partitioned<CsLock> = Partitioned::new(
        "db",
        4,
        &[
            PartitionConfig::new("a", Amount::Seats(2)).borrow(Amount::Seats(1)),
            PartitionConfig::new("b", Amount::Seats(2)),
        ],
    )
    .unwrap();
    let a = db.id("a").unwrap();
    let e = db.try_acquire_many(a, 4).unwrap_err();
    assert!(
        matches!(
            e,
            Error::WeightAboveLimit {
                weight: 4,
                max_concurrent: 3,
                ..
            }
        ),
        "{e}"
    );
    assert!(matches!(
        db.try_acquire_many(a, 0),
        Err(Error::ZeroWeight { .. })
    ));
    let (_, w) = counting();
    let held = db.try_acquire_many(a, 3).unwrap();
    let mut f = pin!(db.acquire_many(a, 3));
    assert!(poll(f.as_mut(), &w).is_pending());
    // A shrink below the waiter's weight refuses it.
    let mut cfg = db.partition_config(a).unwrap();
    cfg = cfg.borrow(Amount::Seats(0));
    db.reconfigure(&[cfg, db.partition_config(db.id("b").unwrap()).unwrap()])
        .unwrap();
    assert!(matches!(
        poll(f.as_mut(), &w),
        Poll::Ready(Err(Error::WeightAboveLimit {
            max_concurrent: 2,
            ..
        }))
    ));
    drop(held);
}

#[test]
fn ids_are_checked_and_reconfigure_keeps_the_partitions() {
    let (db, other) = (db(), db());
    let id = other.id("live").unwrap();
    assert!(matches!(
        db.try_acquire(id),
        Err(Error::ForeignPartition { .. })
    ));
    assert!(matches!(
        db.partition_state(id),
        Err(Error::ForeignPartition { .. })
    ));
    let e = db
        .reconfigure(&[PartitionConfig::new("live", Amount::Seats(24))])
        .unwrap_err();
    assert!(matches!(e, ConfigError::PartitionsChanged { .. }), "{e}");
    let names: Vec<_> = db.partitions().map(|(_, n)| n.as_str()).collect();
    assert_eq!(names, ["live", "batch"]);
}

#[test]
fn owned_seats_move_across_threads() {
    let db = Arc::new(db());
    let batch = db.id("batch").unwrap();
    let seats: Vec<_> = (0..4)
        .map(|_| PartitionSeat::try_acquire(Arc::clone(&db), batch).unwrap())
        .collect();
    std::thread::spawn(move || drop(seats)).join().unwrap();
    assert_eq!(db.state().active, 0);
}

#[test]
fn a_panicking_waker_does_not_lose_the_rest_of_the_batch() {
    struct Bomb;
    impl Wake for Bomb {
        fn wake(self: Arc<Self>) {
            panic!("waker");
        }
    }
    let db = two(Amount::Seats(0), Amount::Seats(0), 3);
    let live = db.id("live").unwrap();
    let held: Vec<_> = (0..3).map(|_| db.try_acquire(live).unwrap()).collect();
    let bomb = Waker::from(Arc::new(Bomb));
    let (c, w) = counting();
    let mut f1 = Box::pin(db.acquire(live));
    assert!(poll(f1.as_mut(), &bomb).is_pending());
    let mut f2 = Box::pin(db.acquire(live));
    assert!(poll(f2.as_mut(), &w).is_pending());
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| db.close()));
    assert!(r.is_err());
    assert_eq!(
        c.0.load(Ordering::SeqCst),
        1,
        "the second waiter is still woken"
    );
    drop((f1, f2, held));
}

#[test]
fn errors_name_the_problem() {
    let e = Partitioned::<CsLock>::new("db", 4, &[]).unwrap_err();
    assert!(matches!(e, ConfigError::NoPartitions { .. }));
    let e = Partitioned::<CsLock>::new(
        "db",
        4,
        &[PartitionConfig::new("a", Amount::Seats(2)).lendable(Amount::Seats(3))],
    )
    .unwrap_err();
    assert!(matches!(e, ConfigError::LendableAboveShare { .. }), "{e}");
    let e = Partitioned::<CsLock>::new(
        "db",
        4,
        &[
            PartitionConfig::new("a", Amount::Seats(2)).lendable(Amount::Seats(0)),
            PartitionConfig::new("b", Amount::Seats(2)).borrow(Amount::Seats(2)),
        ],
    )
    .unwrap_err();
    assert!(matches!(e, ConfigError::BorrowWithoutLender { .. }), "{e}");
    let db = db();
    let e = db.id("lvie").unwrap_err();
    assert_eq!(
        e.to_string(),
        "bulkhead `db` has no partition `lvie`; its partitions are `live`, `batch`"
    );
    let _ = Box::new(0);
}

#[test]
fn an_adaptive_limit_moves_percentage_shares() {
    use crate::limit::{Aimd, AimdParams, CallOutcome, Controller, Recorded, Resize, Sample};
    let db = two(Amount::Percent(75), Amount::Percent(25), 20);
    let live = db.id("live").unwrap();
    let aimd = Aimd::new(AimdParams {
        initial: 20,
        min: 4,
        max: 40,
        ..AimdParams::DEFAULT
    })
    .unwrap();
    let c = Controller::new(aimd);
    let dropped = Sample::new(
        core::time::Duration::from_millis(5),
        20,
        CallOutcome::Dropped,
    );
    let Recorded::Changed { old: 20, new } = c.record(&db, &dropped) else {
        panic!("a drop shrinks the limit")
    };
    assert!(new < 20);
    assert_eq!(Resize::max_concurrent(&db), new);
    assert_eq!(db.state().max_concurrent, new);
    assert_eq!(
        db.partition_state(live).unwrap().share,
        Amount::Percent(75).of(new)
    );
}

#[test]
fn a_controller_keeps_the_limit_when_count_shares_would_not_fit() {
    use crate::limit::Resize;
    let db = two(Amount::Seats(3), Amount::Seats(1), 4);
    assert!(Resize::try_set_max_concurrent(&db, 3).is_err());
    assert_eq!(Resize::max_concurrent(&db), 4);
    assert_eq!(Resize::try_set_max_concurrent(&db, 6).unwrap(), Some(4));
    assert_eq!(Resize::max_concurrent(&db), 6);
}

/// The review's lock: refuses (panics before its closure) while
/// `refusing` is set, counts calls made while unwinding, and can make its
/// admission hook panic.
type Refusing = crate::tests::review::ReviewLock;

fn refusing_db() -> Partitioned<Refusing> {
    Partitioned::with_lock(
        "db".into(),
        2,
        &[
            PartitionConfig::new("live", Amount::Seats(1)),
            PartitionConfig::new("batch", Amount::Seats(1)),
        ],
        Refusing::default(),
    )
    .unwrap()
}

#[test]
fn a_wait_whose_lock_refuses_its_first_section_leaves_without_locking_again() {
    let db = refusing_db();
    let live = db.id("live").unwrap();
    db.raw_lock().refusing.store(true, Ordering::SeqCst);
    let (_, w) = counting();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut f = Box::pin(db.acquire(live));
        let _ = poll(f.as_mut(), &w); // panics; `f` drops while unwinding
    }));
    assert!(r.is_err());
    assert_eq!(
        db.raw_lock().calls_while_unwinding.load(Ordering::SeqCst),
        0
    );
    db.raw_lock().refusing.store(false, Ordering::SeqCst);
    assert_eq!(db.state().active, 0);
    assert_eq!(db.state().waiting, 0);
}

#[test]
fn a_panicking_admission_hook_gives_the_seat_back() {
    let db = refusing_db();
    let live = db.id("live").unwrap();
    db.raw_lock()
        .panic_on_admission
        .store(true, Ordering::SeqCst);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| db.try_acquire(live)));
    assert!(r.is_err());
    assert_eq!(db.state().active, 0);
    let seat = db.try_acquire(live).unwrap();
    drop(seat);
}

/// Rule 4 with the borrower declared first and queued first: a freed seat
/// goes to the best-ranked eligible head (the lender, below its share),
/// not the first one the search meets; and while that head needs more
/// seats than are free, the free seats are kept for it, not handed to the
/// borrower behind it. (Serving the first eligible head, or skipping a
/// head that does not fit, would both serve `batch` here.)
#[test]
fn a_freed_seat_is_kept_for_the_best_ranked_head_even_if_it_does_not_fit_yet() {
    let db: Partitioned<CsLock> = Partitioned::new(
        "db",
        4,
        &[
            PartitionConfig::new("batch", Amount::Seats(2)),
            PartitionConfig::new("live", Amount::Seats(2)),
        ],
    )
    .unwrap();
    let (batch, live) = (db.id("batch").unwrap(), db.id("live").unwrap());
    let mut b: Vec<_> = (0..4).map(|_| db.try_acquire(batch).unwrap()).collect();
    let (cb, wb) = counting();
    let (cl, wl) = counting();
    let mut bw = pin!(db.acquire(batch));
    assert!(poll(bw.as_mut(), &wb).is_pending());
    let mut lw = pin!(db.acquire_many(live, 2));
    assert!(poll(lw.as_mut(), &wl).is_pending());
    drop(b.pop()); // one seat free: kept for live, which needs two
    assert_eq!(
        (cb.0.load(Ordering::SeqCst), cl.0.load(Ordering::SeqCst)),
        (0, 0)
    );
    assert!(
        poll(bw.as_mut(), &wb).is_pending(),
        "batch took a kept seat"
    );
    assert_eq!(db.state().active, 3);
    drop(b.pop()); // two free: live's
    assert_eq!(cl.0.load(Ordering::SeqCst), 1);
    let Poll::Ready(Ok(seat)) = poll(lw.as_mut(), &wl) else {
        panic!("the lender is served")
    };
    assert_eq!(seat.weight(), 2);
    assert!(poll(bw.as_mut(), &wb).is_pending());
    drop(seat); // live back to 0 of 2: batch's waiter may borrow again
    assert_eq!(cb.0.load(Ordering::SeqCst), 1);
    assert!(matches!(poll(bw.as_mut(), &wb), Poll::Ready(Ok(_))));
    drop(b);
    assert_eq!(db.state().active, 0);
}

/// A partition's settings read back as they were given (what adapters
/// read, e.g. the wait budget), and a percentage above 100 counts as 100.
#[test]
fn settings_read_back_as_given_and_a_percentage_above_100_counts_as_100() {
    let c = PartitionConfig::new("a", Amount::Seats(2))
        .lendable(Amount::Seats(1))
        .borrow(Amount::Percent(50))
        .priority(3)
        .max_waiting(5)
        .max_wait(crate::MaxWait::from_millis(7));
    assert_eq!(c.share, Amount::Seats(2));
    assert_eq!(c.lendable, Some(Amount::Seats(1)));
    assert_eq!(c.borrow, Some(Amount::Percent(50)));
    assert_eq!(c.priority, 3);
    assert_eq!(c.max_waiting, Some(5));
    assert_eq!(c.max_wait, Some(crate::MaxWait::from_millis(7)));
    assert_eq!(
        c.clone().share(Amount::Percent(20)).share,
        Amount::Percent(20)
    );
    let plain = PartitionConfig::new("b", Amount::Seats(1));
    assert_eq!(
        (plain.lendable, plain.borrow, plain.max_waiting),
        (None, None, None)
    );
    assert_eq!(Amount::Percent(150).of(10), 10);
    assert_eq!(Amount::Percent(100).of(10), 10);
    assert_eq!(Amount::Percent(99).of(10), 9);
}

/// The bounds of the settings are inclusive: share percentages may add up
/// to exactly 100 and a queue limit may be `MAX_WAITING_LIMIT`; one more
/// is refused (also when the percentages' seats, rounded down, would fit).
#[test]
fn share_percentages_may_add_up_to_100_and_queue_limits_to_the_maximum() {
    let halves = [
        PartitionConfig::new("a", Amount::Percent(50)),
        PartitionConfig::new("b", Amount::Percent(50)),
    ];
    assert!(Partitioned::<CsLock>::new("db", 4, &halves).is_ok());
    let e = Partitioned::<CsLock>::new(
        "db",
        1,
        &[
            PartitionConfig::new("a", Amount::Percent(60)),
            PartitionConfig::new("b", Amount::Percent(50)),
        ],
    )
    .err()
    .unwrap();
    assert!(
        matches!(e, ConfigError::SharePercentsAbove100 { percent: 110, .. }),
        "{e}"
    );
    let queue = |n| {
        Partitioned::<CsLock>::new(
            "db",
            4,
            &[PartitionConfig::new("a", Amount::Seats(1)).max_waiting(n)],
        )
    };
    assert!(queue(crate::MAX_WAITING_LIMIT).is_ok());
    let e = queue(crate::MAX_WAITING_LIMIT + 1).err().unwrap();
    assert!(matches!(e, ConfigError::QueueLimitOverflow { .. }), "{e}");
}

/// Exactly `MAX_PARTITIONS` partitions are accepted; one more is refused.
#[test]
fn a_compartment_holds_up_to_max_partitions() {
    const NAMES: [&str; MAX_PARTITIONS + 1] = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
    let configs: Vec<_> = NAMES
        .iter()
        .map(|n| PartitionConfig::new(n, Amount::Seats(1)))
        .collect();
    let full = Partitioned::<CsLock>::new("db", 9, &configs[..MAX_PARTITIONS]).unwrap();
    assert_eq!(full.partitions().count(), MAX_PARTITIONS);
    assert!(full.reconfigure(&configs[..MAX_PARTITIONS]).is_ok());
    let e = Partitioned::<CsLock>::new("db", 9, &configs).err().unwrap();
    assert!(
        matches!(
            e,
            ConfigError::TooManyPartitions {
                count: 9,
                limit: MAX_PARTITIONS,
                ..
            }
        ),
        "{e}"
    );
}

/// A limit may be `MAX_CONCURRENT_LIMIT`, when built or resized; one more
/// is refused with `CapacityOverflow`, and the limit is unchanged.
#[test]
fn the_limit_may_be_max_concurrent_limit_and_no_more() {
    use crate::word::MAX_CONCURRENT_LIMIT;
    let parts = [PartitionConfig::new("a", Amount::Percent(50))];
    let e = Partitioned::<CsLock>::new("db", MAX_CONCURRENT_LIMIT + 1, &parts)
        .err()
        .unwrap();
    assert!(matches!(e, ConfigError::CapacityOverflow { .. }), "{e}");
    let db = Partitioned::<CsLock>::new("db", MAX_CONCURRENT_LIMIT, &parts).unwrap();
    assert_eq!(db.state().max_concurrent, MAX_CONCURRENT_LIMIT);
    assert_eq!(db.set_max_concurrent(4), Ok(MAX_CONCURRENT_LIMIT));
    let e = db.set_max_concurrent(MAX_CONCURRENT_LIMIT + 1).unwrap_err();
    assert!(matches!(e, ConfigError::CapacityOverflow { .. }), "{e}");
    let e = db
        .try_set_max_concurrent(MAX_CONCURRENT_LIMIT + 1)
        .unwrap_err();
    assert!(matches!(e, ConfigError::CapacityOverflow { .. }), "{e}");
    assert_eq!(db.state().max_concurrent, 4);
    assert_eq!(db.try_set_max_concurrent(MAX_CONCURRENT_LIMIT), Ok(Some(4)));
}

/// Rule 3 in the guaranteed lane: of two heads of equal rank that both
/// fit within their shares, the one the search meets first (the turn
/// starts at the first partition) is served, then the turn passes to the
/// other.
#[test]
fn equal_ranks_take_turns_in_the_guaranteed_lane() {
    let db: Partitioned<CsLock> = Partitioned::new(
        "db",
        3,
        &[
            PartitionConfig::new("a", Amount::Seats(1)),
            PartitionConfig::new("b", Amount::Seats(1)),
            PartitionConfig::new("c", Amount::Seats(1)),
        ],
    )
    .unwrap();
    let (a, b, c) = (
        db.id("a").unwrap(),
        db.id("b").unwrap(),
        db.id("c").unwrap(),
    );
    let mut held: Vec<_> = (0..3).map(|_| db.try_acquire(c).unwrap()).collect();
    let (ca, wa) = counting();
    let (cb, wb) = counting();
    let mut fa = pin!(db.acquire(a));
    let mut fb = pin!(db.acquire(b));
    assert!(poll(fa.as_mut(), &wa).is_pending());
    assert!(poll(fb.as_mut(), &wb).is_pending());
    drop(held.pop()); // one seat: both heads fit within their shares
    assert_eq!(
        (ca.0.load(Ordering::SeqCst), cb.0.load(Ordering::SeqCst)),
        (1, 0),
        "the first in the search order is served first"
    );
    drop(held.pop());
    assert_eq!(cb.0.load(Ordering::SeqCst), 1);
    assert!(matches!(poll(fa.as_mut(), &wa), Poll::Ready(Ok(_))));
    assert!(matches!(poll(fb.as_mut(), &wb), Poll::Ready(Ok(_))));
}

/// The compartment's name and whether it is closed read back as they are.
#[test]
fn the_name_and_the_closed_flag_read_back() {
    let db = two(Amount::Seats(1), Amount::Seats(1), 2);
    assert_eq!(db.name(), "db");
    assert_eq!(db.name_handle().as_str(), "db");
    assert!(!db.is_closed());
    db.close();
    assert!(db.is_closed());
}

/// A compartment's or a partition's name of `MAX_NAME_LEN` bytes is
/// kept; one byte more is refused. As in the plain compartment's test,
/// the name is 2 GiB of zeros (valid UTF-8) from `alloc_zeroed`, so no
/// page of it is touched.
#[cfg(all(target_pointer_width = "64", not(miri)))]
#[test]
fn names_of_max_name_len_bytes_are_kept_and_longer_ones_refused() {
    let len = crate::MAX_NAME_LEN + 1;
    let bytes = std::vec![0u8; len].into_boxed_slice();
    let long: &'static str = Box::leak(
        // SAFETY: zeros are valid UTF-8 (NUL characters).
        unsafe { std::string::String::from_utf8_unchecked(bytes.into_vec()) }.into_boxed_str(),
    );
    let longest = &long[..crate::MAX_NAME_LEN];
    let too_long = |e: ConfigError| {
        assert!(
            matches!(e, ConfigError::NameTooLong { length, .. } if length == len),
            "{e}"
        );
    };
    let one = |name| [PartitionConfig::new(name, Amount::Seats(1))];
    // The compartment's name.
    let with = |name| Partitioned::with_lock(Name::from_static(name), 1, &one("a"), CsLock::new());
    assert_eq!(with(longest).unwrap().name().len(), crate::MAX_NAME_LEN);
    too_long(with(long).err().unwrap());
    // A partition's name.
    let db = Partitioned::<CsLock>::new("db", 1, &one(longest)).unwrap();
    assert_eq!(
        db.partitions().map(|(_, n)| n.len()).sum::<usize>(),
        crate::MAX_NAME_LEN
    );
    too_long(
        Partitioned::<CsLock>::new("db", 1, &one(long))
            .err()
            .unwrap(),
    );
}

/// A wait reports whether it queued and keeps its handle until it
/// resolves; `abandon` hands over a seat granted meanwhile (or `None` if
/// there was none), and nothing is left held afterwards.
#[test]
fn a_wait_reports_queueing_keeps_its_handle_and_abandon_hands_over_a_granted_seat() {
    let db = two(Amount::Seats(1), Amount::Seats(1), 2);
    let (live, batch) = (db.id("live").unwrap(), db.id("batch").unwrap());
    let (_, w) = counting();
    // Seated at once: never queued.
    let mut now = pin!(db.acquire(live));
    assert!(!now.has_queued());
    assert!(core::ptr::eq(
        *now.as_ref().get_ref().handle().unwrap(),
        &db
    ));
    let Poll::Ready(Ok(first)) = poll(now.as_mut(), &w) else {
        panic!("a free seat")
    };
    assert!(!now.has_queued());
    assert!(now.handle().is_none(), "the seat took the handle");
    let second = db.try_acquire(batch).unwrap();
    // Queued, then granted while nobody polled it.
    let mut queued = pin!(db.acquire(live));
    assert!(poll(queued.as_mut(), &w).is_pending());
    assert!(queued.has_queued());
    assert!(queued.handle().is_some());
    let mut timed = Box::pin(
        db.acquire_timeout(live, crate::MaxWait::from_millis(5), |_| {
            core::future::pending::<()>()
        }),
    );
    assert!(!timed.has_queued());
    assert!(poll(timed.as_mut(), &w).is_pending());
    assert!(timed.has_queued());
    drop(first);
    let seat = queued
        .as_mut()
        .abandon()
        .expect("the seat granted meanwhile");
    assert_eq!(seat.partition(), live);
    // Abandoned while still waiting: no seat.
    let mut other = pin!(db.acquire(batch));
    assert!(poll(other.as_mut(), &w).is_pending());
    assert!(other.as_mut().abandon().is_none());
    drop((seat, second, timed));
    assert_eq!((db.state().active, db.state().waiting), (0, 0));
}

/// A lock that counts the admission and rejection hooks.
#[derive(Default)]
struct Counting {
    inner: crate::tests::TestLock,
    admissions: AtomicUsize,
    rejections: AtomicUsize,
    timeouts: AtomicUsize,
}

// SAFETY: delegates to `TestLock`.
unsafe impl RawLock for Counting {
    unsafe fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
        // SAFETY: forwarded from our own caller.
        unsafe { self.inner.with_lock(f) }
    }
    unsafe fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        // SAFETY: forwarded from our own caller.
        unsafe { self.inner.try_with_lock(f) }
    }
    fn record_admission(&self) {
        self.admissions.fetch_add(1, Ordering::SeqCst);
    }
    fn record_rejection(&self) {
        self.rejections.fetch_add(1, Ordering::SeqCst);
    }
    fn record_timeout(&self) {
        self.timeouts.fetch_add(1, Ordering::SeqCst);
    }
    // This test reads no counts.
    fn counts(&self) -> crate::Counts {
        crate::Counts::NONE
    }
}

/// A waiter dropped from a full newest-first line is counted as a
/// rejection once, when it reads its verdict; a waiter woken by `close` is
/// not (a closed compartment rejects nobody).
#[cfg(feature = "lifo")]
#[test]
fn a_dropped_waiter_is_one_rejection_and_a_closed_one_none() {
    let db = Partitioned::with_lock(
        "db".into(),
        1,
        &[PartitionConfig::new("live", Amount::Seats(1))
            .max_waiting(1)
            .queue_order(QueueOrder::Lifo)],
        Counting::default(),
    )
    .unwrap();
    let live = db.id("live").unwrap();
    let rejections = || db.raw_lock().rejections.load(Ordering::SeqCst);
    let held = db.try_acquire(live).unwrap();
    let (_, w) = counting();
    let mut oldest = pin!(db.acquire(live));
    assert!(poll(oldest.as_mut(), &w).is_pending());
    let mut newest = pin!(db.acquire(live));
    assert!(poll(newest.as_mut(), &w).is_pending());
    assert_eq!(rejections(), 0);
    assert!(matches!(
        poll(oldest.as_mut(), &w),
        Poll::Ready(Err(Error::QueueFull { .. }))
    ));
    assert_eq!(rejections(), 1);
    db.close();
    assert!(matches!(
        poll(newest.as_mut(), &w),
        Poll::Ready(Err(Error::Closed { .. }))
    ));
    assert_eq!(rejections(), 1);
    drop(held);
}

/// A weight of exactly `MAX_CONCURRENT_LIMIT` is not too heavy for a
/// compartment that large: waited for or taken at once, it gets the whole
/// compartment.
#[test]
fn a_weight_of_max_concurrent_limit_fits_a_compartment_that_large() {
    use crate::word::MAX_CONCURRENT_LIMIT;
    let db = Partitioned::<Counting>::with_lock(
        "db".into(),
        MAX_CONCURRENT_LIMIT,
        &[PartitionConfig::new("a", Amount::Percent(100))],
        Counting::default(),
    )
    .unwrap();
    let a = db.id("a").unwrap();
    let (_, w) = counting();
    let mut wait = pin!(db.acquire_many(a, MAX_CONCURRENT_LIMIT));
    let Poll::Ready(Ok(seat)) = poll(wait.as_mut(), &w) else {
        panic!("the whole compartment was free")
    };
    assert_eq!(seat.weight(), MAX_CONCURRENT_LIMIT);
    drop(seat);
    let seat = db.try_acquire_many(a, MAX_CONCURRENT_LIMIT).unwrap();
    assert_eq!(db.state().active, MAX_CONCURRENT_LIMIT);
    drop(seat);
    assert_eq!(db.raw_lock().admissions.load(Ordering::SeqCst), 2);
    assert_eq!(db.raw_lock().rejections.load(Ordering::SeqCst), 0);
}

/// The `Debug` output names the type and what it belongs to.
#[test]
fn debug_output_names_the_type_and_the_compartment() {
    let db = two(Amount::Seats(1), Amount::Seats(1), 2);
    let live = db.id("live").unwrap();
    let shown = std::format!("{db:?}");
    assert!(
        shown.starts_with("Partitioned") && shown.contains("\"live\""),
        "{shown}"
    );
    let wait = db.acquire(live);
    let shown = std::format!("{wait:?}");
    assert!(
        shown.starts_with("AcquirePartition") && shown.contains("weight: 1"),
        "{shown}"
    );
    let timed = db.acquire_timeout(live, crate::MaxWait::from_millis(5), |_| {
        core::future::pending::<()>()
    });
    let shown = std::format!("{timed:?}");
    assert!(
        shown.starts_with("AcquirePartitionTimeout") && shown.contains("max_wait"),
        "{shown}"
    );
    let seat = db.try_acquire(live).unwrap();
    let shown = std::format!("{seat:?}");
    assert!(
        shown.starts_with("PartitionSeat") && shown.contains("\"live\""),
        "{shown}"
    );
}

/// A wait that times out is one time-out, reported to the lock; one that
/// is abandoned, or that times out after a seat was handed to it, is none.
#[test]
fn a_time_out_is_one_time_out_and_an_abandoned_wait_none() {
    let db = Partitioned::with_lock(
        "db".into(),
        1,
        &[PartitionConfig::new("live", Amount::Seats(1))],
        Counting::default(),
    )
    .unwrap();
    let live = db.id("live").unwrap();
    let reported = || {
        let lock = db.raw_lock();
        (
            lock.rejections.load(Ordering::SeqCst),
            lock.timeouts.load(Ordering::SeqCst),
        )
    };
    let held = db.try_acquire(live).unwrap();
    let (_, w) = counting();
    let mut left = pin!(db.acquire(live));
    assert!(poll(left.as_mut(), &w).is_pending());
    assert!(left.as_mut().abandon().is_none());
    assert_eq!(reported(), (0, 0));
    let mut timed = pin!(db.acquire(live));
    assert!(poll(timed.as_mut(), &w).is_pending());
    let e = timed
        .as_mut()
        .time_out(core::time::Duration::from_millis(1))
        .err()
        .unwrap();
    assert!(matches!(e, Error::Timeout { .. }), "{e}");
    assert_eq!(reported(), (0, 1));
    assert_eq!(db.partition_state(live).unwrap().timed_out, 1);
    let mut granted = pin!(db.acquire(live));
    assert!(poll(granted.as_mut(), &w).is_pending());
    drop(held);
    let seat = granted
        .as_mut()
        .time_out(core::time::Duration::from_millis(1))
        .unwrap();
    assert_eq!(reported(), (0, 1));
    drop(seat);
}

/// When the lock panics in the section of `abandon` (before its closure,
/// as `RawLock` allows), the wait still leaves the line as the panic
/// unwinds, even if the future itself outlives the panic: nothing is left
/// waiting, and the future is finished.
#[test]
fn a_wait_whose_lock_panics_in_abandon_leaves_the_line_while_unwinding() {
    let db = refusing_db();
    let live = db.id("live").unwrap();
    let held = [db.try_acquire(live).unwrap(), db.try_acquire(live).unwrap()];
    let (_, w) = counting();
    let mut f = Box::pin(db.acquire(live));
    assert!(poll(f.as_mut(), &w).is_pending());
    assert_eq!(db.state().waiting, 1);
    db.raw_lock().refusing.store(true, Ordering::SeqCst);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f.as_mut().abandon()));
    assert!(r.is_err());
    db.raw_lock().refusing.store(false, Ordering::SeqCst);
    assert_eq!(db.state().waiting, 0, "left the line while unwinding");
    assert_eq!(
        db.raw_lock().calls_while_unwinding.load(Ordering::SeqCst),
        1
    );
    drop(f);
    drop(held);
    assert_eq!(db.state().active, 0);
}

#[test]
fn settings_given_after_a_pause_are_checked_against_the_limit_now() {
    let db = two(Amount::Seats(5), Amount::Seats(5), 10);
    db.set_max_concurrent(40).unwrap();
    db.set_max_concurrent(0).unwrap();
    db.set_max_concurrent(10).unwrap();
    let e = db
        .reconfigure(&[
            PartitionConfig::new("live", Amount::Seats(20)),
            PartitionConfig::new("batch", Amount::Seats(20)),
        ])
        .unwrap_err();
    assert!(
        matches!(
            e,
            ConfigError::SharesExceedLimit {
                max_concurrent: 10,
                ..
            }
        ),
        "{e}"
    );
    // While paused, settings are checked against the limit before the pause.
    db.set_max_concurrent(0).unwrap();
    db.reconfigure(&[
        PartitionConfig::new("live", Amount::Seats(5)).priority(3),
        PartitionConfig::new("batch", Amount::Seats(5)),
    ])
    .unwrap();
    assert!(
        db.reconfigure(&[
            PartitionConfig::new("live", Amount::Seats(6)),
            PartitionConfig::new("batch", Amount::Seats(5)),
        ])
        .is_err()
    );
}

#[test]
fn partition_full_says_why() {
    let db = db();
    let (live, batch) = (db.id("live").unwrap(), db.id("batch").unwrap());
    let b: Vec<_> = (0..24).map(|_| db.try_acquire(batch).unwrap()).collect();
    let l: Vec<_> = (0..8).map(|_| db.try_acquire(live).unwrap()).collect();
    let lent = db.try_acquire(live).unwrap_err().to_string();
    assert!(
        lent.contains("holds 8 of its share of 24") && lent.contains("lent"),
        "{lent}"
    );
    let all = db.try_acquire(batch).unwrap_err().to_string();
    assert!(all.contains("all it may hold (24"), "{all}");
    drop(l);
    let idle = db.try_acquire_many(batch, 1).unwrap_err().to_string();
    assert!(idle.contains("all it may hold"), "{idle}");
    drop(b);
    db.set_max_concurrent(0).unwrap();
    let paused = db.try_acquire(live).unwrap_err().to_string();
    assert!(paused.contains("paused"), "{paused}");
}

#[cfg(feature = "alloc")]
#[test]
fn a_partitions_errors_name_it() {
    let db = two(Amount::Seats(1), Amount::Seats(1), 2);
    let live = db.id("live").unwrap();
    let e = db.try_acquire_many(live, 3).unwrap_err();
    assert_eq!(e.name(), "db/live");
    assert!(
        e.to_string().contains("`db/live` can hold at most 2 seats"),
        "{e}"
    );
    let _held = [db.try_acquire(live).unwrap(), db.try_acquire(live).unwrap()];
    let (_, w) = counting();
    let mut f = pin!(db.acquire(live));
    assert!(poll(f.as_mut(), &w).is_pending());
    let e = f
        .as_mut()
        .time_out(core::time::Duration::from_millis(1))
        .unwrap_err();
    assert_eq!(e.name(), "db/live");
}

#[test]
fn reconfiguring_with_a_limit_checks_the_settings_at_that_limit() {
    let db = two(Amount::Percent(90), Amount::Percent(10), 20);
    let cfgs = [
        PartitionConfig::new("live", Amount::Percent(90)),
        PartitionConfig::new("batch", Amount::Percent(10)).borrow(Amount::Seats(0)),
    ];
    // At 5 seats batch's 10 % is 0 and it may not borrow: refused, as a
    // new compartment would be, and nothing changes.
    let e = db.reconfigure_with_limit(5, &cfgs).unwrap_err();
    assert!(matches!(e, ConfigError::EmptyPartition { .. }), "{e}");
    assert_eq!(db.state().max_concurrent, 20);
    assert_eq!(
        db.partition_config(db.id("batch").unwrap()).unwrap().borrow,
        None
    );
    assert_eq!(db.reconfigure_with_limit(10, &cfgs).unwrap(), 20);
    assert_eq!(
        db.partition_state(db.id("batch").unwrap())
            .unwrap()
            .may_hold,
        1
    );
}

#[test]
fn seats_split_and_merge_within_one_partition() {
    let db = Arc::new(db());
    let (live, batch) = (db.id("live").unwrap(), db.id("batch").unwrap());
    let mut s = PartitionSeat::try_acquire_many(Arc::clone(&db), batch, 3).unwrap();
    assert!(s.split(3).is_err() && s.split(0).is_err());
    let part = s.split(1).unwrap();
    assert_eq!((s.weight(), part.weight(), db.state().active), (2, 1, 3));
    s.merge(part).unwrap();
    assert_eq!(s.weight(), 3);
    let other = PartitionSeat::try_acquire(Arc::clone(&db), live).unwrap();
    let e = s.merge(other).unwrap_err();
    assert_eq!(e.into_inner().partition(), live);
    assert_eq!(
        db.partition_state(live).unwrap().active,
        0,
        "given back when dropped"
    );
    drop(s);
    assert_eq!(db.state().active, 0);
    assert_eq!(Arc::strong_count(&db), 1, "no handle leaked by a merge");
}
