//! Resource-scoped compartments from tokio tasks: opening once under
//! racing tasks, cancellation, the task-local scope, async shutdown.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bulkhead_tokio::bulkhead_std::scoped::{
    self, CloseOutcome, Opener, ScopeError, Scoped, Shared,
};
use bulkhead_tokio::prelude::*;
use bulkhead_tokio::{Config, Error, spawn_in_scope};

#[derive(Debug, PartialEq)]
struct Client(&'static str);

fn async_counted(
    name: &'static str,
    seats: usize,
    open_for: Duration,
) -> (Arc<Scoped<Client>>, Arc<AtomicUsize>) {
    let opens = Arc::new(AtomicUsize::new(0));
    let counter = opens.clone();
    let scoped = Scoped::new(
        Config::new(name, seats),
        "client",
        Opener::future(move |_| {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(open_for).await;
                Ok::<_, std::io::Error>(Client(name))
            }
        }),
    )
    .unwrap()
    .max_wait(Duration::from_secs(10));
    (Arc::new(scoped), opens)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_async_initialiser_runs_once_under_32_racing_tasks() {
    let (api, opens) = async_counted("api", 32, Duration::from_millis(50));
    let all_in = Arc::new(tokio::sync::Barrier::new(33));
    let tasks: Vec<_> = (0..32)
        .map(|_| {
            let (api, all_in) = (api.clone(), all_in.clone());
            tokio::spawn(async move {
                let inside = api.enter_within().await.unwrap();
                let shared: Shared<Client> = inside.shared();
                all_in.wait().await; // all 32 inside at once
                all_in.wait().await;
                drop(inside);
                shared
            })
        })
        .collect();
    all_in.wait().await;
    assert_eq!(api.state().active, 32);
    all_in.wait().await;
    let mut handles = Vec::new();
    for task in tasks {
        handles.push(task.await.unwrap());
    }
    assert_eq!(opens.load(Ordering::SeqCst), 1);
    assert!(handles.iter().all(|h| h.same_as(&handles[0])));
    assert_eq!(api.state().active, 0);
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_opening_gives_the_seat_back_and_another_entry_opens() {
    let (api, opens) = async_counted("cancel", 2, Duration::from_secs(1));
    tokio::select! {
        _ = api.enter_within() => panic!("the opening takes a second"),
        _ = tokio::time::sleep(Duration::from_millis(10)) => {}
    }
    assert_eq!(api.state().active, 0, "seat given back");
    assert!(!api.resource_state().open);
    let inside = api.enter_within().await.unwrap();
    assert_eq!(*inside, Client("cancel"));
    assert_eq!(opens.load(Ordering::SeqCst), 2, "opened by the next entry");
}

#[tokio::test(start_paused = true)]
async fn a_waiter_gives_up_on_the_opening_within_its_budget() {
    let opens = Arc::new(AtomicUsize::new(0));
    let counter = opens.clone();
    let api = Arc::new(
        Scoped::new(
            Config::new("slow", 2),
            "slow-client",
            Opener::future(move |_| {
                counter.fetch_add(1, Ordering::SeqCst);
                async {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    Ok::<_, std::io::Error>(Client("slow"))
                }
            }),
        )
        .unwrap()
        .max_wait(Duration::from_millis(100)),
    );
    let api2 = api.clone();
    let opener = tokio::spawn(async move { api2.enter_within().await.map(drop) });
    tokio::task::yield_now().await; // the opener is opening
    let started = tokio::time::Instant::now();
    let err = api.enter_within().await.map(drop).unwrap_err();
    assert_eq!(started.elapsed(), Duration::from_millis(100));
    assert!(matches!(
        &err,
        ScopeError::OpenTimeout {
            compartment,
            resource: "slow-client",
            ..
        } if compartment == "slow"
    ));
    assert_eq!(api.state().active, 1, "only the opener is inside");
    opener.await.unwrap().unwrap();
    assert_eq!(opens.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_failed_async_open_names_both_and_the_next_entry_opens() {
    let attempts = Arc::new(AtomicUsize::new(0));
    let counter = attempts.clone();
    let api = Scoped::new(
        Config::new("payments", 1),
        "payments-client",
        Opener::future(move |_| {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            async move {
                if n == 0 {
                    Err("handshake failed")
                } else {
                    Ok(Client("payments"))
                }
            }
        }),
    )
    .unwrap();
    let Err(ScopeError::Open(err)) = api.enter_within().await.map(drop) else {
        panic!("the first opening fails")
    };
    assert_eq!(
        (err.compartment().as_str(), err.resource()),
        ("payments", "payments-client")
    );
    assert_eq!(api.state().active, 0);
    assert_eq!(*api.enter_within().await.unwrap(), Client("payments"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scope_is_task_local_across_awaits_and_threads() {
    let (checkout, _) = async_counted("checkout", 4, Duration::ZERO);
    let app = Client("app");
    let explicit = Client("explicit");
    let (inside, wins) = checkout
        .run_within(async {
            let mut seen = Vec::new();
            for _ in 0..20 {
                // Sleeping may resume the task on another worker thread.
                tokio::time::sleep(Duration::from_millis(1)).await;
                seen.push(scoped::resolve(None, &app).0);
            }
            (seen, scoped::resolve(Some(&explicit), &app).0)
        })
        .await
        .unwrap();
    assert!(inside.iter().all(|name| *name == "checkout"), "{inside:?}");
    assert_eq!(wins, "explicit");
    assert_eq!(scoped::resolve(None, &app).0, "app", "default outside");
}

#[tokio::test(flavor = "current_thread")]
async fn a_task_outside_the_scope_never_sees_it_even_on_the_same_thread() {
    let (reports, _) = async_counted("reports", 1, Duration::ZERO);
    let outside = tokio::spawn(async {
        let mut saw = false;
        for _ in 0..50 {
            saw |= scoped::current::<Client>().is_some();
            tokio::task::yield_now().await;
        }
        saw
    });
    let inside = reports
        .run_within(async {
            let mut all = true;
            for _ in 0..50 {
                all &= scoped::current::<Client>().is_some();
                tokio::task::yield_now().await; // interleaves with `outside`
            }
            all
        })
        .await
        .unwrap();
    assert!(inside);
    assert!(!outside.await.unwrap(), "the other task saw the scope");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawned_tasks_inherit_the_scope_only_when_asked() {
    let (reports, _) = async_counted("reports", 1, Duration::ZERO);
    let (plain, carried) = reports
        .run_within(async {
            let plain = tokio::spawn(async { scoped::current::<Client>().is_some() });
            let carried = spawn_in_scope(async {
                tokio::task::yield_now().await;
                scoped::current::<Client>().map(|c| c.0)
            });
            (plain.await.unwrap(), carried.await.unwrap())
        })
        .await
        .unwrap();
    assert!(!plain);
    assert_eq!(carried, Some("reports"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_inside_the_scope_releases_the_seat_and_keeps_the_resource() {
    let (api, opens) = async_counted("panicky", 1, Duration::ZERO);
    let api2 = api.clone();
    let task = tokio::spawn(async move {
        api2.run_within(async {
            tokio::task::yield_now().await;
            panic!("boom")
        })
        .await
    });
    assert!(task.await.unwrap_err().is_panic());
    assert_eq!(api.state().active, 0);
    assert!(api.resource_state().open);
    assert_eq!(api.run_within(async { 1 }).await.unwrap(), 1);
    assert_eq!(opens.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn async_shutdown_waits_for_holders_then_awaits_the_close_hook() {
    let closed = Arc::new(AtomicUsize::new(0));
    let c = closed.clone();
    let api = Arc::new(
        Scoped::new(
            Config::new("drain", 1),
            "drain-client",
            Opener::blocking(|_| Ok::<_, std::io::Error>(Client("drain"))),
        )
        .unwrap()
        .on_close_async(move |_| {
            let c = c.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                c.fetch_add(1, Ordering::SeqCst);
            }
        }),
    );
    let api2 = api.clone();
    let holder = tokio::spawn(async move {
        api2.run_within(tokio::time::sleep(Duration::from_millis(200)))
            .await
            .unwrap()
    });
    tokio::task::yield_now().await;
    assert_eq!(api.state().active, 1);
    let started = tokio::time::Instant::now();
    let report = api.shutdown_within(Duration::from_secs(10)).await;
    assert_eq!(report.outcome, CloseOutcome::Closed);
    assert_eq!(
        started.elapsed(),
        Duration::from_millis(205),
        "holder, then hook"
    );
    assert_eq!(closed.load(Ordering::SeqCst), 1);
    holder.await.unwrap();
    assert!(matches!(
        api.enter_within().await.map(drop),
        Err(ScopeError::Rejected(Error::Closed { name })) if name == "drain"
    ));
}

#[tokio::test(start_paused = true)]
async fn async_shutdown_keeps_its_bound_and_defers_to_the_last_holder() {
    let closed = Arc::new(AtomicUsize::new(0));
    let c = closed.clone();
    let api = Scoped::new(
        Config::new("stuck", 1),
        "stuck-client",
        Opener::blocking(|_| Ok::<_, std::io::Error>(Client("stuck"))),
    )
    .unwrap()
    .on_close(move |_| {
        c.fetch_add(1, Ordering::SeqCst);
    });
    let inside = api.enter_within().await.unwrap();
    let started = tokio::time::Instant::now();
    let report = api.shutdown_within(Duration::from_millis(50)).await;
    assert_eq!(started.elapsed(), Duration::from_millis(50));
    assert_eq!(report.outcome, CloseOutcome::Deferred { holders: 1 });
    assert_eq!(closed.load(Ordering::SeqCst), 0);
    drop(inside);
    assert_eq!(closed.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn a_blocking_entry_on_the_runtime_thread_refuses_to_drive_an_async_opener() {
    let (api, opens) = async_counted("loop", 2, Duration::from_millis(1));
    // On the runtime's own thread: driving the opener here would block
    // the loop that its timer needs.
    let err = api.enter_blocking().map(drop).unwrap_err();
    assert!(matches!(
        &err,
        ScopeError::NeedsAsyncEntry {
            compartment,
            resource: "client"
        } if compartment == "loop"
    ));
    assert!(err.to_string().contains("async initialiser"));
    assert_eq!(api.state().active, 0);
    assert_eq!(opens.load(Ordering::SeqCst), 0);
    // From async code it opens.
    assert_eq!(*api.enter_within().await.unwrap(), Client("loop"));
    // Once open, a blocking entry there simply borrows it.
    assert_eq!(*api.enter_blocking().unwrap(), Client("loop"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_entry_in_spawn_blocking_drives_an_async_opener() {
    let (api, opens) = async_counted("pool-thread", 2, Duration::from_millis(5));
    let api2 = api.clone();
    let name = tokio::task::spawn_blocking(move || api2.enter_blocking().map(|c| c.0))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(name, "pool-thread");
    assert_eq!(opens.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_forever_budget_waits_out_a_slow_async_opening() {
    let (api, opens) = async_counted("patient", 2, Duration::from_secs(30));
    let api = Arc::new(api.renewed().max_wait(bulkhead_tokio::MaxWait::Forever));
    let api2 = api.clone();
    let opener = tokio::spawn(async move { api2.enter_within().await.map(|c| c.0) });
    tokio::task::yield_now().await;
    let started = tokio::time::Instant::now();
    assert_eq!(api.enter_within().await.unwrap().0, "patient");
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(30),
        "waited for the opening"
    );
    assert_eq!(opener.await.unwrap().unwrap(), "patient");
    assert_eq!(opens.load(Ordering::SeqCst), 1);
}
