//! `Policy` over an adaptive compartment: rejections stay values, and
//! every admitted call is timed and classified for the limit.

use std::time::Duration;

use bulkhead_std::bulkhead_core::limit::{Aimd, AimdParams, CallOutcome};
use bulkhead_std::{Adaptive, Bulkhead, MaxWait, Outcome, Policy, StdClock};

/// AIMD without a window, so that every call moves the limit.
fn api(limit: usize) -> Adaptive<Aimd> {
    let aimd = Aimd::new(AimdParams {
        initial: limit,
        min: 1,
        max: 100,
        ..AimdParams::DEFAULT
    })
    .unwrap();
    Adaptive::new(Bulkhead::new("api", limit).unwrap(), aimd, StdClock)
}

#[test]
fn err_and_panic_back_off_and_rejections_record_nothing() {
    let api = api(10);
    let policy = Policy::new(&api, MaxWait::FailFast);
    assert_eq!(
        policy.execute(|| Err::<(), _>("503")),
        Outcome::Success(Err("503"))
    );
    assert_eq!(api.limit(), 9);
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = policy.execute(|| -> Result<(), ()> { panic!("work panicked") });
    }));
    assert!(panicked.is_err());
    assert_eq!(api.limit(), 8, "a panic is a drop");
    assert_eq!(api.bulkhead().state().active, 0);

    let hogs: Vec<_> = (0..8)
        .map(|_| api.bulkhead().try_acquire().unwrap())
        .collect();
    let changes = api.controller().changes();
    assert!(matches!(
        policy.execute(|| Ok::<_, ()>(1)),
        Outcome::Rejected(_)
    ));
    assert_eq!(
        api.controller().changes(),
        changes,
        "a rejection is no sample"
    );
    drop(hogs);
}

#[test]
fn the_works_own_timeout_is_classified_as_a_timeout() {
    let api = api(4);
    let policy = Policy::new(std::sync::Arc::new(api), MaxWait::from_millis(50));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let outcome = rt.block_on(async {
        let slow = tokio::time::timeout(Duration::from_millis(2), std::future::pending::<()>());
        policy
            .run_timeout_classified(
                slow,
                |r| match r {
                    Err(_elapsed) => CallOutcome::Timeout,
                    Ok(()) => CallOutcome::Success,
                },
                tokio::time::sleep,
            )
            .await
    });
    assert!(matches!(outcome, Outcome::Success(Err(_))));
    assert_eq!(policy.compartment().limit(), 3, "floor(0.9 x 4)");
    // Success with the compartment at least half full grows it.
    let _held = policy.compartment().bulkhead().try_acquire().unwrap();
    let ok = rt.block_on(policy.run_timeout(async { Ok::<_, ()>(7) }, tokio::time::sleep));
    assert_eq!(ok, Outcome::Success(Ok(7)));
    assert_eq!(policy.compartment().limit(), 4);
}

/// One `Policy` type over either kind of compartment: over a plain one the
/// work's result may be anything and nothing is recorded; over an adaptive
/// one the same calls feed the limit.
#[test]
fn one_policy_over_a_plain_or_an_adaptive_compartment() {
    struct NotAResult;
    let plain = Bulkhead::new("plain", 1).unwrap();
    let policy = Policy::new(&plain, MaxWait::FailFast);
    assert!(matches!(
        policy.execute(|| NotAResult),
        Outcome::Success(NotAResult)
    ));
    assert_eq!(
        policy.execute(|| Err::<(), _>("503")),
        Outcome::Success(Err("503"))
    );
    assert_eq!(policy.bulkhead().state().active, 0);

    let api = api(4);
    let policy = Policy::new(&api, MaxWait::FailFast);
    assert_eq!(
        policy.execute(|| Err::<(), _>("503")),
        Outcome::Success(Err("503"))
    );
    assert_eq!(api.limit(), 3, "the same call, recorded as dropped");
    assert!(std::ptr::eq(policy.bulkhead(), api.bulkhead()));
    assert_eq!(policy.max_wait(), MaxWait::FailFast);
}

/// `run_timeout`'s future is `Send` over an `Arc` of either kind, so a
/// spawned task can run it.
#[test]
fn run_timeout_runs_in_a_spawned_task() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_time()
        .build()
        .unwrap();
    let api = std::sync::Arc::new(api(4));
    let adaptive = Policy::new(std::sync::Arc::clone(&api), MaxWait::from_millis(50));
    let plain = Policy::new(
        std::sync::Arc::new(Bulkhead::new("plain", 1).unwrap()),
        MaxWait::from_millis(50),
    );
    let (a, p) = rt.block_on(async move {
        let a = tokio::spawn(async move {
            adaptive
                .run_timeout(async { Err::<(), _>("503") }, tokio::time::sleep)
                .await
        });
        let p =
            tokio::spawn(async move { plain.run_timeout(async { 7 }, tokio::time::sleep).await });
        (a.await.unwrap(), p.await.unwrap())
    });
    assert_eq!(a, Outcome::Success(Err("503")));
    assert_eq!(p, Outcome::Success(7));
    assert_eq!(api.limit(), 3, "recorded as dropped");
}
