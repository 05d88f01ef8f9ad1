//! `AdaptivePolicy`: rejections stay values, and every admitted call is
//! timed and classified for the limit.

use std::time::Duration;

use bulkhead_std::bulkhead_core::limit::{Aimd, AimdParams, CallOutcome};
use bulkhead_std::{AdaptiveBulkhead, AdaptivePolicy, Bulkhead, MaxWait, Outcome, StdClock};

/// AIMD without a window, so that every call moves the limit.
fn api(limit: usize) -> AdaptiveBulkhead<Aimd> {
    let aimd = Aimd::new(AimdParams {
        initial: limit,
        min: 1,
        max: 100,
        ..AimdParams::DEFAULT
    })
    .unwrap();
    AdaptiveBulkhead::new(Bulkhead::new("api", limit).unwrap(), aimd, StdClock)
}

#[test]
fn err_and_panic_back_off_and_rejections_record_nothing() {
    let api = api(10);
    let policy = AdaptivePolicy::new(&api, MaxWait::FailFast);
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
    let policy = AdaptivePolicy::new(std::sync::Arc::new(api), MaxWait::from_millis(50));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let outcome = rt.block_on(async {
        let slow = tokio::time::timeout(Duration::from_millis(2), std::future::pending::<()>());
        policy
            .run_classified(tokio::time::sleep, slow, |r| match r {
                Err(_elapsed) => CallOutcome::Timeout,
                Ok(()) => CallOutcome::Success,
            })
            .await
    });
    assert!(matches!(outcome, Outcome::Success(Err(_))));
    assert_eq!(policy.adaptive().limit(), 3, "floor(0.9 x 4)");
    // Success with the compartment at least half full grows it.
    let _held = policy.adaptive().bulkhead().try_acquire().unwrap();
    let ok = rt.block_on(policy.run(tokio::time::sleep, async { Ok::<_, ()>(7) }));
    assert_eq!(ok, Outcome::Success(Ok(7)));
    assert_eq!(policy.adaptive().limit(), 4);
}
