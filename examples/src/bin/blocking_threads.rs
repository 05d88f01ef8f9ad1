//! Plain threads sharing compartments: `acquire_blocking`, `execute`,
//! `execute_or_else` with a fallback, and `Policy` outcomes.
//!
//! Eight threads call a `reports` service (2 seats, a slow dependency) and
//! a `profiles` service (4 seats, fast). Reports get a short wait budget
//! and a cached fallback; profiles are read through a `Policy`, which turns
//! the compartment's verdicts into values a retry loop can match on.
//!
//! Run it with `cargo run -p bulkhead-examples --bin blocking_threads`.
//! It finishes in well under a second.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use bulkhead_std::MaxWait;
use bulkhead_std::prelude::*; // BlockingAcquire, Execute, Run, Inspect
use bulkhead_std::{Bulkhead, Error, Outcome, Policy};

/// A slow dependency: 2 seats. A `static` compartment needs no `Arc`.
static REPORTS: Bulkhead = Bulkhead::new_static("reports", 2); // bad settings: a compile-time error

/// A fast dependency: 4 seats.
static PROFILES: Bulkhead = Bulkhead::new_static("profiles", 4);

/// The slow call behind `REPORTS`.
fn build_report(user: usize) -> String {
    thread::sleep(Duration::from_millis(40));
    format!("fresh report for user {user}")
}

/// The fast call behind `PROFILES`; user 7 does not exist (a business
/// error, which the compartment passes through untouched).
fn load_profile(user: usize) -> Result<String, &'static str> {
    thread::sleep(Duration::from_millis(2));
    if user == 7 {
        Err("no such user")
    } else {
        Ok(format!("profile {user}"))
    }
}

fn main() -> Result<(), Error> {
    let start = Instant::now();

    // 1. `acquire_blocking`: take a seat yourself and hold it for a scope.
    {
        let _seat = REPORTS.acquire_blocking(Duration::from_millis(50))?;
        println!(
            "acquire_blocking: inside `reports`, {} of {} seats taken",
            REPORTS.state().active,
            REPORTS.state().max_concurrent
        );
    } // the seat goes back here, also if the scope panics

    // 2. Eight threads at once: `execute_or_else` for reports, a `Policy`
    //    for profiles.
    let fresh = AtomicUsize::new(0);
    let cached = AtomicUsize::new(0);
    let profile_policy = Policy::new(&PROFILES, MaxWait::up_to(Duration::from_millis(20)));
    thread::scope(|scope| {
        for user in 0..8 {
            let (fresh, cached, policy) = (&fresh, &cached, &profile_policy);
            scope.spawn(move || {
                // Wait at most 10 ms for one of the 2 seats; otherwise serve
                // the cached page. Only a closed compartment is an error.
                let report = REPORTS
                    .execute_or_else(
                        Duration::from_millis(10),
                        || build_report(user),
                        |_full_or_timeout| format!("cached report for user {user}"),
                    )
                    .expect("`reports` is never closed here");
                if report.starts_with("fresh") {
                    fresh.fetch_add(1, Ordering::Relaxed);
                } else {
                    cached.fetch_add(1, Ordering::Relaxed);
                }

                // A policy: the work's own `Result` comes back in `Success`;
                // only the compartment's verdicts are `Rejected`/`TimedOut`.
                match policy.execute(|| load_profile(user)) {
                    Outcome::Success(Ok(_profile)) => {}
                    Outcome::Success(Err(e)) => println!("user {user}: business error: {e}"),
                    Outcome::Rejected(e) | Outcome::TimedOut(e) => {
                        println!("user {user}: turned away: {e}")
                    }
                }
            });
        }
    });
    let (fresh, cached) = (fresh.into_inner(), cached.into_inner());
    println!("execute_or_else: {fresh} fresh reports, {cached} served from cache");
    assert_eq!(fresh + cached, 8);
    assert!(fresh >= 2, "the 2 seats were used");

    // 3. `execute` without a budget fails fast when every seat is taken.
    let hog = (REPORTS.try_acquire()?, REPORTS.try_acquire()?);
    match REPORTS.execute(MaxWait::FailFast, || build_report(0)) {
        Err(e @ Error::Full { .. }) => println!("execute(MaxWait::FailFast) while full: {e}"),
        other => panic!("expected Full, got {other:?}"),
    }
    // With a budget it waits; here nobody gives a seat back in time.
    let outcome =
        Policy::new(&REPORTS, MaxWait::up_to(Duration::from_millis(5))).execute(|| build_report(0));
    assert!(matches!(outcome, Outcome::TimedOut(_)));
    println!("Policy with a 5 ms budget while full: TimedOut");
    drop(hog);

    // 4. What the compartments saw, including when a caller was last turned
    //    away (`Inspect::snapshot`).
    for b in [&REPORTS, &PROFILES] {
        let s = b.snapshot();
        println!(
            "{:<8}: {} active, {} rejected, {} timed out, last rejection: {}",
            s.name,
            s.active,
            s.rejected,
            s.timed_out,
            match s.last_rejection.map(|at| at.elapsed().unwrap_or_default()) {
                Some(age) => format!("{age:.1?} ago"),
                None => "never".to_owned(),
            }
        );
        assert_eq!(s.active, 0, "every seat was given back");
    }
    println!("done in {:.0?}", start.elapsed());
    Ok(())
}
