//! Resource-scoped compartments from threads: opening once, failures,
//! shutdown, the ambient scope, panics.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex, OnceLock, Weak};
use std::thread;
use std::time::{Duration, Instant};

use bulkhead_std::scoped::{self, CloseOutcome, Opener, Resolved, Scope, ScopeError, Scoped};
use bulkhead_std::{Config, Error};

#[derive(Debug, PartialEq)]
struct Pool(&'static str);

/// A compartment whose opener counts its calls and sleeps `open_for`.
fn counted(
    name: &'static str,
    seats: usize,
    open_for: Duration,
) -> (Arc<Scoped<Pool>>, Arc<AtomicUsize>) {
    let opens = Arc::new(AtomicUsize::new(0));
    let counter = opens.clone();
    let scoped = Scoped::new(
        Config::new(name, seats),
        "pool",
        Opener::blocking(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
            thread::sleep(open_for);
            Ok::<_, std::io::Error>(Pool(name))
        }),
    )
    .unwrap()
    .max_wait(Duration::from_secs(10));
    (Arc::new(scoped), opens)
}

/// A one-seat, fail-fast compartment whose close hook counts its calls.
fn close_counted(name: &'static str) -> (Scoped<Pool>, Arc<AtomicUsize>) {
    let closed = Arc::new(AtomicUsize::new(0));
    let c = closed.clone();
    let scoped = Scoped::new(
        Config::new(name, 1),
        "pool",
        Opener::blocking(move |_| Ok::<_, std::io::Error>(Pool(name))),
    )
    .unwrap()
    .on_close(move |_| {
        c.fetch_add(1, Ordering::SeqCst);
    });
    (scoped, closed)
}

#[test]
fn the_initialiser_runs_once_under_32_racing_first_entries() {
    let (db, opens) = counted("db", 32, Duration::from_millis(50));
    assert_eq!(
        opens.load(Ordering::SeqCst),
        0,
        "not opened at construction"
    );
    let start = Arc::new(Barrier::new(32));
    let all_in = Arc::new(Barrier::new(33));
    let threads: Vec<_> = (0..32)
        .map(|_| {
            let (db, start, all_in) = (db.clone(), start.clone(), all_in.clone());
            thread::spawn(move || {
                start.wait();
                let inside = db.enter_blocking().unwrap();
                let shared = inside.shared();
                all_in.wait(); // all 32 hold a seat at once
                all_in.wait();
                shared
            })
        })
        .collect();
    all_in.wait();
    assert_eq!(db.state().active, 32);
    assert_eq!(db.resource_state().holders, 32);
    all_in.wait();
    let handles: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(opens.load(Ordering::SeqCst), 1);
    assert!(handles.iter().all(|h| h.same_as(&handles[0])));
    assert_eq!(db.state().active, 0);
    assert_eq!(db.resource_state().opens, 1);
}

#[test]
fn a_failed_open_names_both_returns_the_seat_and_the_next_entry_retries() {
    let attempts = Arc::new(AtomicUsize::new(0));
    let counter = attempts.clone();
    let db = Scoped::new(
        Config::new("orders", 1),
        "orders-db",
        Opener::blocking(move |_| {
            if counter.fetch_add(1, Ordering::SeqCst) == 0 {
                Err(std::io::Error::other("connection refused"))
            } else {
                Ok(Pool("orders"))
            }
        }),
    )
    .unwrap();
    let Err(ScopeError::Open(err)) = db.enter_blocking() else {
        panic!("the first opening fails")
    };
    assert_eq!(
        (err.compartment().as_str(), err.resource()),
        ("orders", "orders-db")
    );
    let message = err.to_string();
    assert!(message.contains("`orders`") && message.contains("`orders-db`"));
    // The initialiser's error is the source, shown once in a chain.
    let source = std::error::Error::source(&err).unwrap();
    assert_eq!(source.to_string(), "connection refused");
    assert!(!message.contains("connection refused"));
    assert_eq!(db.state().active, 0, "the seat was given back");
    assert!(!db.resource_state().open);
    assert_eq!(db.resource_state().open_failures, 1);

    // One seat only: had the failed entry kept it, this would be Full.
    let inside = db.enter_blocking().unwrap();
    assert_eq!(*inside, Pool("orders"));
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
}

#[test]
fn entries_that_waited_on_a_failed_attempt_share_its_error_and_later_ones_retry() {
    let attempts = Arc::new(AtomicUsize::new(0));
    let counter = attempts.clone();
    // The first attempt fails only once all 32 entries are inside, so
    // that every one of them waited on it.
    let this: Arc<OnceLock<Weak<Scoped<Pool>>>> = Arc::new(OnceLock::new());
    let me = this.clone();
    let db = Arc::new(
        Scoped::new(
            Config::new("flaky", 32),
            "flaky-db",
            Opener::blocking(move |_| {
                let n = counter.fetch_add(1, Ordering::SeqCst);
                let db = me.get().and_then(Weak::upgrade).unwrap();
                let deadline = Instant::now() + Duration::from_secs(10);
                while n == 0 && db.resource_state().holders < 32 && Instant::now() < deadline {
                    thread::sleep(Duration::from_millis(1));
                }
                if n == 0 {
                    Err("down")
                } else {
                    Ok(Pool("flaky"))
                }
            }),
        )
        .unwrap()
        .max_wait(Duration::from_secs(10)),
    );
    this.set(Arc::downgrade(&db)).unwrap();
    let start = Arc::new(Barrier::new(32));
    let results: Vec<_> = (0..32)
        .map(|_| {
            let (db, start) = (db.clone(), start.clone());
            thread::spawn(move || {
                start.wait();
                db.enter_blocking().map(|_| ()).unwrap_err()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    assert_eq!(attempts.load(Ordering::SeqCst), 1, "one attempt for all 32");
    assert!(
        results
            .iter()
            .all(|e| matches!(e, ScopeError::Open(o) if o.resource() == "flaky-db"))
    );
    assert_eq!(db.state().active, 0);
    assert!(db.enter_blocking().is_ok(), "the next entry retries");
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
}

#[test]
fn an_overlapping_entry_borrows_the_open_resource() {
    let (db, opens) = counted("shared", 2, Duration::ZERO);
    let first = db.enter_blocking().unwrap();
    let second = db.enter_blocking().unwrap();
    assert!(first.shared().same_as(&second.shared()));
    drop((first, second));
    let third = db.enter_blocking().unwrap();
    drop(third);
    assert_eq!(opens.load(Ordering::SeqCst), 1, "open for the whole run");
}

#[test]
fn a_later_run_opens_afresh() {
    let (db, opens) = counted("runs", 1, Duration::ZERO);
    let first = db.enter_blocking().unwrap().shared();
    db.shutdown_blocking(Duration::from_secs(1));
    let next = db.renewed();
    let second = next.enter_blocking().unwrap().shared();
    assert!(!first.same_as(&second));
    assert_eq!(opens.load(Ordering::SeqCst), 2);
    assert!(matches!(
        db.enter_blocking(),
        Err(ScopeError::Rejected(Error::Closed { name })) if name == "runs"
    ));
}

#[test]
fn a_fail_fast_entry_during_the_opening_gets_an_open_timeout() {
    let opening = Arc::new(Barrier::new(2));
    let release = Arc::new(Barrier::new(2));
    let (o, r) = (opening.clone(), release.clone());
    let db = Arc::new(
        Scoped::new(
            Config::new("slow", 2),
            "slow-db",
            Opener::blocking(move |_| {
                o.wait();
                r.wait();
                Ok::<_, std::io::Error>(Pool("slow"))
            }),
        )
        .unwrap(),
    );
    let db2 = db.clone();
    let opener = thread::spawn(move || db2.enter_blocking().map(|_| ()));
    opening.wait();
    let err = db.enter_blocking().map(|_| ()).unwrap_err();
    assert!(matches!(
        &err,
        ScopeError::OpenTimeout {
            compartment,
            resource: "slow-db",
            ..
        } if compartment == "slow"
    ));
    assert!(err.to_string().contains("still being opened"));
    release.wait();
    opener.join().unwrap().unwrap();
    assert_eq!(db.state().active, 0);
}

#[test]
fn shutdown_waits_for_holders_then_closes() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = events.clone();
    let db = Arc::new(
        Scoped::new(
            Config::new("drain", 2),
            "drain-db",
            Opener::blocking(|_| Ok::<_, std::io::Error>(Pool("drain"))),
        )
        .unwrap()
        .on_close(move |_| log.lock().unwrap().push("closed")),
    );
    let inside = Arc::new(Barrier::new(2));
    let (db2, inside2, log2) = (db.clone(), inside.clone(), events.clone());
    let holder = thread::spawn(move || {
        db2.execute(|_| {
            inside2.wait();
            thread::sleep(Duration::from_millis(100));
            log2.lock().unwrap().push("holder done");
        })
    });
    inside.wait();
    let started = Instant::now();
    let report = db.shutdown_blocking(Duration::from_secs(10));
    assert_eq!(report.outcome, CloseOutcome::Closed);
    assert!(started.elapsed() >= Duration::from_millis(50), "it waited");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "woken by the last holder, not by its bound"
    );
    assert_eq!(*events.lock().unwrap(), ["holder done", "closed"]);
    holder.join().unwrap().unwrap();
    assert!(matches!(
        db.enter_blocking(),
        Err(ScopeError::Rejected(Error::Closed { .. }))
    ));
}

#[test]
fn shutdown_keeps_its_bound_and_the_last_holder_closes() {
    let (db, closed) = close_counted("stuck");
    let inside = db.enter_blocking().unwrap();
    let started = Instant::now();
    let report = db.shutdown_blocking(Duration::from_millis(50));
    let took = started.elapsed();
    assert_eq!(report.outcome, CloseOutcome::Deferred { holders: 1 });
    assert!(took >= Duration::from_millis(50) && took < Duration::from_secs(5));
    assert_eq!(
        closed.load(Ordering::SeqCst),
        0,
        "not closed under a live borrow"
    );
    assert_eq!(inside.0, "stuck", "still usable by its holder");
    drop(inside);
    assert_eq!(
        closed.load(Ordering::SeqCst),
        1,
        "closed by the last holder"
    );
    assert_eq!(
        db.shutdown_blocking(Duration::ZERO).outcome,
        CloseOutcome::AlreadyClosed
    );
    assert_eq!(closed.load(Ordering::SeqCst), 1, "closed once");
}

#[test]
fn shutdown_of_a_never_opened_compartment_closes_nothing() {
    let (db, opens) = counted("idle", 1, Duration::ZERO);
    let report = db.shutdown_blocking(Duration::from_secs(1));
    assert_eq!(report.outcome, CloseOutcome::NeverOpened);
    assert_eq!(
        (report.compartment.as_str(), report.resource),
        ("idle", "pool")
    );
    assert!(db.enter_blocking().is_err());
    assert_eq!(opens.load(Ordering::SeqCst), 0);
}

#[test]
fn the_ambient_lookup_sees_the_scope_inside_and_the_default_outside() {
    let (checkout, _) = counted("checkout", 2, Duration::ZERO);
    let app = Pool("app");
    let chosen = Pool("chosen");
    assert_eq!(*scoped::resolve(None, &app), Pool("app"));
    assert!(matches!(scoped::resolve(None, &app), Resolved::Default(_)));
    checkout
        .execute(|pool| {
            assert_eq!(*pool, Pool("checkout"));
            assert_eq!(*scoped::resolve(None, &app), Pool("checkout"));
            assert!(matches!(scoped::resolve(None, &app), Resolved::Scoped(_)));
            // An explicit choice always wins over the scope.
            assert_eq!(*scoped::resolve(Some(&chosen), &app), Pool("chosen"));
            assert!(matches!(
                scoped::resolve(Some(&chosen), &app),
                Resolved::Explicit(_)
            ));
            assert_eq!(scoped::current::<Pool>().unwrap().0, "checkout");
            // Another type is not scoped.
            assert!(scoped::current::<String>().is_none());
        })
        .unwrap();
    assert_eq!(*scoped::resolve(None, &app), Pool("app"));
    assert!(scoped::current::<Pool>().is_none());
    assert!(Scope::capture().is_empty());
}

#[test]
fn nested_scopes_shadow_by_type_and_restore_on_exit() {
    let (outer, _) = counted("outer", 1, Duration::ZERO);
    let (inner, _) = counted("inner", 1, Duration::ZERO);
    let label = Scoped::new(
        Config::new("label", 1),
        "label",
        Opener::blocking(|_| Ok::<_, std::io::Error>(String::from("outer-label"))),
    )
    .unwrap();
    label
        .execute(|_| {
            outer.execute(|_| {
                assert_eq!(scoped::current::<Pool>().unwrap().0, "outer");
                inner
                    .execute(|_| {
                        assert_eq!(scoped::current::<Pool>().unwrap().0, "inner");
                        // The outer compartment's other kind is still seen.
                        assert_eq!(*scoped::current::<String>().unwrap(), "outer-label");
                        assert_eq!(Scope::capture().compartments(), ["inner", "outer", "label"]);
                    })
                    .unwrap();
                assert_eq!(scoped::current::<Pool>().unwrap().0, "outer");
            })
        })
        .unwrap()
        .unwrap();
}

#[test]
fn the_scope_does_not_follow_into_spawned_threads_unless_carried() {
    let (reports, _) = counted("reports", 1, Duration::ZERO);
    reports
        .execute(|_| {
            let plain = thread::spawn(|| scoped::current::<Pool>().is_some());
            assert!(!plain.join().unwrap());
            let scope = Scope::capture();
            let carried =
                thread::spawn(move || scope.with(|| scoped::current::<Pool>().map(|p| p.0)));
            assert_eq!(carried.join().unwrap(), Some("reports"));
        })
        .unwrap();
}

#[test]
fn a_panic_inside_the_scope_releases_the_seat_and_keeps_the_resource() {
    let (db, opens) = counted("panicky", 1, Duration::ZERO);
    let caught = catch_unwind(AssertUnwindSafe(|| {
        db.execute(|_| panic!("boom")).unwrap();
    }));
    assert!(caught.is_err());
    assert_eq!(db.state().active, 0, "seat given back");
    assert_eq!(db.resource_state().holders, 0);
    assert!(db.resource_state().open, "the resource stays open");
    assert!(
        scoped::current::<Pool>().is_none(),
        "the scope was restored"
    );
    let used = db.execute(|pool| pool.0).unwrap();
    assert_eq!(used, "panicky");
    assert_eq!(opens.load(Ordering::SeqCst), 1, "not reopened");
}

#[test]
fn a_panicking_initialiser_gives_the_seat_back_and_the_next_entry_opens() {
    let attempts = Arc::new(AtomicUsize::new(0));
    let counter = attempts.clone();
    let db = Scoped::new(
        Config::new("init-panic", 1),
        "db",
        Opener::blocking(move |_| {
            if counter.fetch_add(1, Ordering::SeqCst) == 0 {
                panic!("opener bug");
            }
            Ok::<_, std::io::Error>(Pool("ok"))
        }),
    )
    .unwrap();
    assert!(catch_unwind(AssertUnwindSafe(|| db.enter_blocking().map(drop))).is_err());
    assert_eq!(db.state().active, 0);
    assert_eq!(
        db.resource_state().open_failures,
        0,
        "a panic is not a failure"
    );
    assert_eq!(db.enter_blocking().unwrap().0, "ok");
}

#[test]
fn a_full_compartment_rejects_before_opening() {
    let opens = Arc::new(AtomicUsize::new(0));
    let counter = opens.clone();
    let db = Scoped::new(
        Config::new("tiny", 1),
        "pool",
        Opener::blocking(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok::<_, std::io::Error>(Pool("tiny"))
        }),
    )
    .unwrap(); // fail fast
    let inside = db.enter_blocking().unwrap();
    assert!(matches!(
        db.enter_blocking(),
        Err(ScopeError::Rejected(Error::Full { .. }))
    ));
    drop(inside);
    assert_eq!(opens.load(Ordering::SeqCst), 1);
}

#[test]
fn a_compartment_dropped_without_shutdown_still_runs_its_close_hook() {
    let (db, closed) = close_counted("dropped");
    let kept = db.enter_blocking().unwrap().shared();
    drop(db);
    assert_eq!(closed.load(Ordering::SeqCst), 0, "a handle is still out");
    drop(kept);
    assert_eq!(closed.load(Ordering::SeqCst), 1);
}

/// A resource that knows whether it was closed.
struct Probe {
    closed: std::sync::atomic::AtomicBool,
}

#[test]
fn shutdown_racing_busy_threads_never_closes_under_a_holder() {
    for bound in [
        Duration::ZERO,
        Duration::from_millis(1),
        Duration::from_secs(5),
    ] {
        let inside = Arc::new(AtomicUsize::new(0));
        let hooks = Arc::new(AtomicUsize::new(0));
        let (i, h) = (inside.clone(), hooks.clone());
        let db = Arc::new(
            Scoped::new(
                Config::new("busy", 16),
                "probe",
                Opener::blocking(|_| {
                    Ok::<_, std::io::Error>(Probe {
                        closed: false.into(),
                    })
                }),
            )
            .unwrap()
            .max_wait(Duration::from_millis(50))
            .on_close(move |probe: Probe| {
                assert_eq!(i.load(Ordering::SeqCst), 0, "closed under a holder");
                probe.closed.store(true, Ordering::SeqCst);
                h.fetch_add(1, Ordering::SeqCst);
            }),
        );
        let workers: Vec<_> = (0..8)
            .map(|_| {
                let (db, inside) = (db.clone(), inside.clone());
                thread::spawn(move || {
                    let mut entries = 0_u32;
                    loop {
                        match db.execute(|probe| {
                            inside.fetch_add(1, Ordering::SeqCst);
                            assert!(!probe.closed.load(Ordering::SeqCst), "used after close");
                            thread::yield_now();
                            inside.fetch_sub(1, Ordering::SeqCst);
                        }) {
                            Ok(()) => entries += 1,
                            Err(ScopeError::Rejected(Error::Closed { .. })) => return entries,
                            Err(e) => panic!("{e}"),
                        }
                    }
                })
            })
            .collect();
        thread::sleep(Duration::from_millis(20));
        let report = db.shutdown_blocking(bound);
        let entries: u32 = workers.into_iter().map(|w| w.join().unwrap()).sum();
        assert!(entries > 0);
        assert_eq!(
            hooks.load(Ordering::SeqCst),
            1,
            "closed exactly once ({report:?})"
        );
        assert_eq!(db.state().active, 0);
    }
}

#[test]
fn a_forever_budget_waits_out_a_slow_opening() {
    let (db, opens) = counted("patient", 2, Duration::from_millis(100));
    let db = Arc::new(db.renewed().max_wait(bulkhead_std::MaxWait::Forever));
    let opener = {
        let db = db.clone();
        thread::spawn(move || db.enter_blocking().map(|p| p.0))
    };
    while db.resource_state().holders == 0 {
        thread::yield_now();
    }
    let started = Instant::now();
    assert_eq!(db.enter_blocking().unwrap().0, "patient");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(opener.join().unwrap().unwrap(), "patient");
    assert_eq!(opens.load(Ordering::SeqCst), 1);
}
