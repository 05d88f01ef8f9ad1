//! Unit tests of partitioned compartments: the rules, the reclaim bound,
//! waits, cancellation, close, resize and the errors.

extern crate std;

use std::boxed::Box;
use std::pin::pin;
use std::string::ToString;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::vec::Vec;

use super::*;
use crate::CsLock;

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

#[test]
fn close_wakes_every_waiter_with_closed() {
    let db = db();
    let live = db.id("live").unwrap();
    let l: Vec<_> = (0..32)
        .map(|_| db.try_acquire(live).unwrap_or_else(|e| panic!("{e}")))
        .collect::<Vec<_>>();
    let _ = l;
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
