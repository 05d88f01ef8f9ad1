//! tokio waits on a partitioned compartment (`TokioAcquirePartition`):
//! failing fast, waiting within a budget and timing out (counted in the
//! partition's `timed_out`), owned seats moved into spawned tasks, weights
//! and foreign ids as clear errors, and a lender reclaiming its seats from
//! a borrower's flood before any borrower is served.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bulkhead_tokio::bulkhead_core::partition::{Amount, PartitionConfig, Partitioned};
use bulkhead_tokio::{Error, MaxWait, StdLock, TokioAcquirePartition};
use tokio::time::Instant;

/// 4 seats: `live` (2, first in line) and `batch` (2, may borrow 2 more).
fn shared() -> Arc<Partitioned<StdLock>> {
    Arc::new(
        Partitioned::new(
            "db",
            4,
            &[
                PartitionConfig::new("live", Amount::Seats(2)).priority(1),
                PartitionConfig::new("batch", Amount::Seats(2)).borrow(Amount::Seats(2)),
            ],
        )
        .unwrap(),
    )
}

/// 2 seats, one each, no borrowing.
fn walled() -> Partitioned<StdLock> {
    Partitioned::new(
        "walled",
        2,
        &[
            PartitionConfig::new("live", Amount::Seats(1)).borrow(Amount::Seats(0)),
            PartitionConfig::new("batch", Amount::Seats(1)).borrow(Amount::Seats(0)),
        ],
    )
    .unwrap()
}

fn poll_once<F: Future>(f: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(Waker::noop()))
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn no_budget_fails_fast_with_partition_full() {
    let db = walled();
    let batch = db.id("batch").unwrap();
    let held = db.acquire_within(batch, MaxWait::FailFast).await.unwrap();
    let start = Instant::now();
    let err = db.acquire_within(batch, Duration::ZERO).await.unwrap_err();
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert!(
        matches!(&err, Error::PartitionFull { partition, active: 1, share: 1, may_hold: 1, .. } if partition == "batch"),
        "{err:?}"
    );
    let state = db.partition_state(batch).unwrap();
    assert_eq!((state.rejected, state.timed_out), (1, 0));
    // The other partition is untouched.
    let live = db.id("live").unwrap();
    drop(db.acquire_within(live, MaxWait::FailFast).await.unwrap());
    drop(held);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_wait_times_out_after_exactly_its_budget_and_is_counted() {
    let db = walled();
    let batch = db.id("batch").unwrap();
    let _held = db.try_acquire(batch).unwrap();
    let start = Instant::now();
    let err = db
        .acquire_within(batch, Duration::from_millis(40))
        .await
        .unwrap_err();
    assert_eq!(start.elapsed(), Duration::from_millis(40));
    assert!(
        matches!(err, Error::Timeout { budget, .. } if budget == Duration::from_millis(40)),
        "{err:?}"
    );
    let state = db.partition_state(batch).unwrap();
    assert_eq!((state.timed_out, state.waiting, state.active), (1, 0, 1));
    assert_eq!(db.state().timed_out, 1);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_wait_is_admitted_within_its_budget_when_a_seat_frees() {
    let db = walled();
    let batch = db.id("batch").unwrap();
    let held = db.try_acquire(batch).unwrap();
    let mut wait = pin!(db.acquire_within(batch, Duration::from_millis(100)));
    assert!(poll_once(wait.as_mut()).is_pending());
    assert_eq!(db.partition_state(batch).unwrap().waiting, 1);
    tokio::time::advance(Duration::from_millis(60)).await;
    assert!(poll_once(wait.as_mut()).is_pending());
    drop(held);
    let seat = match poll_once(wait.as_mut()) {
        Poll::Ready(Ok(seat)) => seat,
        other => panic!("expected the freed seat, got {other:?}"),
    };
    assert_eq!(seat.partition(), batch);
    let state = db.partition_state(batch).unwrap();
    assert_eq!((state.active, state.timed_out, state.waiting), (1, 0, 0));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_dropped_wait_leaves_its_line() {
    let db = walled();
    let batch = db.id("batch").unwrap();
    let held = db.try_acquire(batch).unwrap();
    tokio::select! {
        _ = db.acquire_within(batch, MaxWait::Forever) => panic!("no seat was free"),
        () = tokio::time::sleep(Duration::from_millis(10)) => {}
    }
    assert_eq!(db.partition_state(batch).unwrap().waiting, 0);
    drop(held);
    assert_eq!(db.state().active, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owned_seats_move_into_spawned_tasks() {
    let db = shared();
    let live = db.id("live").unwrap();
    let batch = db.id("batch").unwrap();
    let seat = Arc::clone(&db)
        .acquire_within_owned(live, Duration::from_millis(100))
        .await
        .unwrap();
    let heavy = Arc::clone(&db)
        .acquire_many_within_owned(batch, 3, Duration::from_millis(100))
        .await
        .unwrap();
    assert_eq!((heavy.weight(), db.state().active), (3, 4));
    let observed = Arc::clone(&db);
    tokio::spawn(async move {
        let _seat = seat;
        let _heavy = heavy;
        assert_eq!(observed.state().active, 4);
    })
    .await
    .unwrap();
    assert_eq!(db.state().active, 0);

    // A waiter in one task is handed the seat another task gives back.
    let holders: Vec<_> = (0..4)
        .map(|_| db.clone().acquire_within_owned(batch, MaxWait::FailFast))
        .collect();
    let mut seats = Vec::new();
    for h in holders {
        seats.push(h.await.unwrap());
    }
    let waiter = tokio::spawn(Arc::clone(&db).acquire_within_owned(batch, Duration::from_secs(10)));
    while db.partition_state(batch).unwrap().waiting == 0 {
        tokio::task::yield_now().await;
    }
    let giver = seats.pop().unwrap();
    tokio::spawn(async move { drop(giver) }).await.unwrap();
    let seat = waiter.await.unwrap().unwrap();
    assert_eq!(seat.partition(), batch);
    drop((seat, seats));
    assert_eq!(db.state().active, 0);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_lender_reclaims_its_seats_from_a_borrower_flood() {
    let db = shared();
    let live = db.id("live").unwrap();
    let batch = db.id("batch").unwrap();
    // Batch floods: its 2 and live's 2 idle seats.
    let mut flood: Vec<_> = (0..4).map(|_| db.try_acquire(batch).unwrap()).collect();
    let lent = db.partition_state(live).unwrap().lent;
    assert_eq!((db.partition_state(batch).unwrap().borrowed, lent), (2, 2));
    // More batch callers wait first, then a live caller.
    let mut more_batch = pin!(db.acquire_within(batch, Duration::from_secs(1)));
    assert!(poll_once(more_batch.as_mut()).is_pending());
    let mut live_wait = pin!(db.acquire_within(live, Duration::from_secs(1)));
    assert!(poll_once(live_wait.as_mut()).is_pending());
    // The first seat a borrower frees goes to the lender, not to the
    // batch caller who waited longer.
    drop(flood.pop());
    let live_seat = match poll_once(live_wait.as_mut()) {
        Poll::Ready(Ok(seat)) => seat,
        other => panic!("the lender should get the freed seat, got {other:?}"),
    };
    assert!(poll_once(more_batch.as_mut()).is_pending());
    assert_eq!(db.partition_state(batch).unwrap().waiting, 1);
    assert_eq!(db.partition_state(live).unwrap().active, 1);
    // Once borrowers give back more, the batch waiter is served too.
    drop(flood.pop());
    drop(flood.pop());
    match poll_once(more_batch.as_mut()) {
        Poll::Ready(Ok(seat)) => drop(seat),
        other => panic!("batch should be served once seats are idle, got {other:?}"),
    }
    drop((live_seat, flood));
    assert_eq!(db.state().active, 0);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn bad_weights_and_foreign_ids_are_errors() {
    let db = shared();
    let batch = db.id("batch").unwrap();
    let err = db
        .acquire_many_within(batch, 0, Duration::from_secs(1))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::ZeroWeight { .. }), "{err:?}");
    // Batch may hold 2 + 2.
    let err = db
        .acquire_many_within(batch, 5, Duration::from_secs(60))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::WeightAboveLimit {
                weight: 5,
                max_concurrent: 4,
                ..
            }
        ),
        "{err:?}"
    );
    let other = walled();
    let foreign = other.id("batch").unwrap();
    for max_wait in [MaxWait::FailFast, MaxWait::from_millis(10)] {
        let err = db.acquire_within(foreign, max_wait).await.unwrap_err();
        assert!(matches!(err, Error::ForeignPartition { .. }), "{err:?}");
    }
    assert_eq!(db.state().active, 0);
}

#[test]
fn futures_are_send_and_owned_ones_static() {
    fn send<T: Send>(_: &T) {}
    fn send_static<T: Send + 'static>(_: &T) {}
    let db = shared();
    let live = db.id("live").unwrap();
    // Made outside a runtime: nothing runs before the first poll.
    let borrowed = db.acquire_within(live, Duration::from_millis(5));
    send(&borrowed);
    let owned = Arc::clone(&db).acquire_within_owned(live, Duration::from_millis(5));
    send_static(&owned);
    assert!(format!("{owned:?}").contains("AcquirePartitionWithin"));
    drop((borrowed, owned));
    assert_eq!(db.state().active, 0);
}
