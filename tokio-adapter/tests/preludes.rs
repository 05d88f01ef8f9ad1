//! One compartment type for both crates: with both preludes in scope, every
//! extension method resolves without ambiguity, and rejections made through
//! this crate are timed by bulkhead-std's lock.

use std::sync::Arc;
use std::time::Duration;

use bulkhead_std::prelude::*;
use bulkhead_tokio::MaxWait;
use bulkhead_tokio::prelude::*;
use bulkhead_tokio::{Bulkhead, Error, OwnedSeat};

const MS: Duration = Duration::from_millis(1);

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn every_method_of_both_preludes_resolves_on_one_type() {
    let db: Arc<Bulkhead> = Arc::new(Bulkhead::new("db", 2).unwrap());
    // bulkhead-tokio's TokioAcquire.
    let a = db.acquire_within(MS).await.unwrap();
    let b: OwnedSeat<Arc<Bulkhead>> = db
        .clone()
        .acquire_within_owned(MaxWait::FailFast)
        .await
        .unwrap();
    assert!(matches!(
        db.acquire_blocking(MS),
        Err(Error::FullOnEventLoop { .. })
    ));
    drop((a, b));
    // bulkhead-std's BlockingAcquire, Execute, Run, Inspect.
    drop(db.acquire_blocking(MaxWait::FailFast).unwrap());
    drop(db.try_acquire_owned().unwrap());
    drop(db.acquire_blocking_owned(MaxWait::FailFast).unwrap());
    assert_eq!(db.execute(MaxWait::FailFast, || 1), Ok(1));
    assert_eq!(db.execute_or_else(MaxWait::FailFast, || 2, |_| 0), Ok(2));
    assert_eq!(db.wrap(MaxWait::FailFast, |x: u8| x + 1)(2), Ok(3));
    assert_eq!(db.try_run(async { 4 }).await, Ok(4));
    assert_eq!(
        db.run_timeout(MS, async { 5 }, tokio::time::sleep).await,
        Ok(5)
    );
    assert_eq!(
        db.run_timeout_or_else(MaxWait::FailFast, async { 6 }, |_| 0, tokio::time::sleep)
            .await,
        Ok(6)
    );
    // Core's inherent waits.
    drop(db.acquire_timeout(MS, tokio::time::sleep).await.unwrap());
    drop(db.acquire().await.unwrap());
    assert_eq!(db.snapshot().last_rejection, db.last_rejection());
    assert_eq!(db.state().active, 0);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn tokio_side_rejections_are_timed_by_the_std_lock() {
    let db = Bulkhead::new("db", 1).unwrap();
    let _held = db.acquire_within(MaxWait::FailFast).await.unwrap();
    assert_eq!(db.last_rejection(), None);
    let err = db.acquire_within(10 * MS).await.unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }));
    let s = db.snapshot();
    assert_eq!((s.timed_out, s.rejected), (1, 0));
    assert!(s.last_rejection.is_some());
}
