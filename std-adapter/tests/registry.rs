//! The registry's rules: lookups, built-ins, replace, unregister,
//! per-instance names, concurrent creation, eviction, reconfiguration.

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use bulkhead_std::MaxWait;
use bulkhead_std::registry::{DomainConfig, Registered, Registry, RegistryError};
use bulkhead_std::{BlockingAcquire, Bulkhead, Error};

#[test]
fn get_is_strict_and_lists_registered_names_sorted() {
    let registry = Registry::local();
    registry
        .get_or_create("zeta", DomainConfig::new(1))
        .unwrap();
    registry
        .get_or_create("alpha", DomainConfig::new(1))
        .unwrap();
    let err = registry.get("payments").unwrap_err();
    let RegistryError::NotFound { name, registered } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(name, "payments");
    assert_eq!(
        registered,
        &[
            "alpha",
            "cache",
            "database",
            "external_api",
            "message_queue",
            "zeta"
        ]
    );
    assert!(err.to_string().contains("named `payments`"), "{err}");
    assert!(
        err.to_string()
            .contains("alpha, cache, database, external_api, message_queue, zeta")
    );
}

#[test]
fn builtins_exist_with_documented_defaults() {
    let registry = Registry::local();
    let states = registry.all_states();
    let max: Vec<_> = states
        .iter()
        .map(|(n, s)| (n.as_str(), s.max_concurrent))
        .collect();
    assert_eq!(
        max,
        [
            ("cache", 50),
            ("database", 10),
            ("external_api", 20),
            ("message_queue", 10)
        ]
    );
}

#[test]
fn concurrent_get_or_create_creates_exactly_one() {
    let registry = Arc::new(Registry::local());
    let threads = 32;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|i| {
            let (registry, barrier) = (registry.clone(), barrier.clone());
            thread::spawn(move || {
                barrier.wait();
                registry
                    .get_or_create("tenant-race", DomainConfig::new(i + 1))
                    .unwrap()
            })
        })
        .collect();
    let all: Vec<Arc<Bulkhead>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(all.iter().all(|b| Arc::ptr_eq(b, &all[0])));
    // The one created took its config from exactly one caller.
    let max = all[0].state().max_concurrent;
    assert!((1..=threads).contains(&max));
    // And the registry holds that very one.
    assert!(Arc::ptr_eq(&registry.get("tenant-race").unwrap(), &all[0]));
}

#[test]
fn register_replaces_and_old_waiters_keep_waiting_on_the_old_compartment() {
    let registry = Registry::local();
    let old = registry
        .get_or_create("reports", DomainConfig::new(1))
        .unwrap();
    let held = bulkhead_std::OwnedSeat::try_acquire(old.clone()).unwrap();
    let waiter = {
        let old = old.clone();
        thread::spawn(move || {
            old.acquire_blocking_owned(Duration::from_secs(5))
                .map(|s| s.handle().state().max_concurrent)
        })
    };
    while old.state().waiting == 0 {
        thread::yield_now();
    }
    let previous = registry.register(Bulkhead::new("reports", 7).unwrap());
    assert!(matches!(previous, Some(Registered::Semaphore(p)) if Arc::ptr_eq(&p, &old)));
    assert_eq!(registry.get("reports").unwrap().state().max_concurrent, 7);
    drop(held); // the old waiter is admitted by the old compartment
    assert_eq!(waiter.join().unwrap(), Ok(1));
}

#[test]
fn overwriting_a_builtin_is_allowed_and_it_stays_protected() {
    let registry = Registry::local();
    registry.register(Bulkhead::new("database", 3).unwrap());
    assert_eq!(registry.get("database").unwrap().state().max_concurrent, 3);
    assert!(matches!(
        registry.unregister("database"),
        Err(RegistryError::BuiltIn { name }) if name == "database"
    ));
}

#[test]
fn unregister_reports_whether_removed_and_refuses_builtins() {
    let registry = Registry::local();
    for name in ["database", "cache", "external_api", "message_queue"] {
        let err = registry.unregister(name).unwrap_err();
        assert!(err.to_string().contains("degrade isolation"), "{err}");
    }
    registry.get_or_create("x", DomainConfig::new(1)).unwrap();
    assert!(registry.unregister("x").unwrap());
    assert!(!registry.unregister("x").unwrap());
    assert!(matches!(
        registry.get("x"),
        Err(RegistryError::NotFound { .. })
    ));
}

#[test]
fn per_instance_helpers_are_named_base_colon_instance() {
    let registry = Registry::local();
    let replica = registry.database("replica").unwrap();
    assert_eq!(replica.name(), "database:replica");
    assert_eq!(replica.state().max_concurrent, 10); // the built-in's settings
    let sessions = registry.cache("sessions").unwrap();
    assert_eq!(sessions.name(), "cache:sessions");
    assert!(Arc::ptr_eq(
        &registry.database("default").unwrap(),
        &registry.get("database").unwrap()
    ));
    assert!(Arc::ptr_eq(
        &registry.database("replica").unwrap(),
        &replica
    ));
}

#[test]
fn async_view_shares_seats_with_threads() {
    let registry = Registry::local();
    let db = registry.get("database").unwrap();
    registry
        .reconfigure("database", DomainConfig::new(1))
        .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    let seat = rt.block_on(async { db.acquire().await }).unwrap();
    assert!(matches!(
        registry
            .get("database")
            .unwrap()
            .acquire_blocking(MaxWait::FailFast),
        Err(Error::Full { .. })
    ));
    drop(seat);
    assert_eq!(registry.all_states()["database"].active, 0);
}

#[test]
fn invalid_names_are_refused() {
    let registry = Registry::local();
    for bad in ["", "a\nb", &"x".repeat(101)] {
        assert!(matches!(
            registry.get_or_create(bad, DomainConfig::new(1)),
            Err(RegistryError::InvalidName { .. })
        ));
    }
}

#[test]
fn eviction_never_removes_a_busy_compartment() {
    let registry = Registry::builder()
        .without_env()
        .max_entries(2)
        .build()
        .unwrap();
    // a: a seat held. b: a handle outstanding (got the Arc, not acquired yet).
    let a = registry.get_or_create("a", DomainConfig::new(1)).unwrap();
    let seat = bulkhead_std::OwnedSeat::try_acquire(a.clone()).unwrap();
    drop(a);
    let b = registry.get_or_create("b", DomainConfig::new(1)).unwrap();
    let err = registry
        .get_or_create("c", DomainConfig::new(1))
        .unwrap_err();
    assert!(
        matches!(err, RegistryError::AtCapacity { limit: 2, .. }),
        "{err}"
    );
    assert!(registry.get("a").is_ok() && registry.get("b").is_ok());
    assert!(registry.evict_idle(Duration::ZERO).is_empty());
    // A waiter alone (no other handle kept by the test) also keeps it.
    let waiter = {
        let a = registry.get("a").unwrap();
        thread::spawn(move || a.acquire_blocking(Duration::from_secs(5)).is_ok())
    };
    while registry.get("a").unwrap().state().waiting == 0 {
        thread::yield_now();
    }
    assert!(registry.evict_idle(Duration::ZERO).is_empty());
    drop(seat);
    assert!(waiter.join().unwrap());
    // b idle once its handle is gone, and least recently used: evicted.
    drop(b);
    thread::sleep(Duration::from_millis(5));
    drop(registry.get("a").unwrap());
    let c = registry.get_or_create("c", DomainConfig::new(1)).unwrap();
    assert_eq!(c.name(), "c");
    assert!(registry.get("b").is_err());
    assert_eq!(registry.list_names().len(), 6);
}

#[test]
fn eviction_under_concurrent_use_never_drops_a_held_compartment() {
    let registry = Arc::new(
        Registry::builder()
            .without_env()
            .max_entries(4)
            .build()
            .unwrap(),
    );
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let registry = registry.clone();
            thread::spawn(move || {
                for i in 0..300 {
                    let name = format!("tenant-{}", (t * 7 + i) % 12);
                    match registry.get_or_create(&name, DomainConfig::new(2)) {
                        Ok(b) => {
                            let seat = b.try_acquire();
                            // While we hold it, the registry must still map
                            // the name to this very compartment.
                            let now = registry.get(&name).unwrap();
                            assert!(Arc::ptr_eq(&now, &b));
                            drop(seat);
                        }
                        Err(RegistryError::AtCapacity { .. }) => {}
                        Err(e) => panic!("{e}"),
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert!(registry.list_names().len() <= 4 + 4);
}

#[test]
fn idle_after_evicts_only_idle_entries() {
    let registry = Registry::builder()
        .without_env()
        .idle_after(Duration::from_millis(20))
        .build()
        .unwrap();
    let kept = registry
        .get_or_create("kept", DomainConfig::new(1))
        .unwrap();
    registry
        .get_or_create("gone", DomainConfig::new(1))
        .unwrap();
    thread::sleep(Duration::from_millis(40));
    registry.get_or_create("new", DomainConfig::new(1)).unwrap();
    assert!(registry.get("gone").is_err());
    assert!(Arc::ptr_eq(&registry.get("kept").unwrap(), &kept));
}

#[test]
fn reconfigure_applies_live_and_keeps_holders_seats() {
    let registry = Registry::local();
    let db = registry.get("database").unwrap();
    let seats: Vec<_> = (0..3).map(|_| db.try_acquire().unwrap()).collect();
    registry
        .reconfigure("database", DomainConfig::new(2).max_waiting(0))
        .unwrap();
    assert_eq!(db.state().active, 3);
    drop(seats);
    let _a = db.try_acquire().unwrap();
    let _b = db.try_acquire().unwrap();
    assert!(db.try_acquire().is_err());
    assert!(matches!(
        registry.reconfigure("database", DomainConfig::new(0)),
        Err(RegistryError::Config(_))
    ));
    assert!(matches!(
        registry.reconfigure("nope", DomainConfig::new(1)),
        Err(RegistryError::NotFound { .. })
    ));
    let barging = DomainConfig::new(2).admission(bulkhead_std::Admission::Barging);
    assert!(matches!(
        registry.reconfigure("database", barging),
        Err(RegistryError::Unsupported { .. })
    ));
}

#[test]
fn reconfigure_max_workers_rebuilds_the_pool_without_losing_queued_work() {
    let registry = Registry::local();
    let pool = registry
        .get_or_create_pool("pdf", DomainConfig::new(5).max_workers(1))
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let blocker = pool.spawn(move || rx.recv().is_ok()).unwrap();
    let queued: Vec<_> = (0..4)
        .map(|i| pool.spawn(move || i * 10).unwrap())
        .collect();
    registry
        .reconfigure("pdf", DomainConfig::new(3).max_workers(3))
        .unwrap();
    assert_eq!(pool.workers(), 3);
    // The new pool takes new work at once, while the old one is blocked.
    assert_eq!(pool.execute(|| "new").unwrap(), "new");
    tx.send(()).unwrap();
    assert_eq!(blocker.join(), Ok(true));
    let results: Vec<_> = queued.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(results, [0, 10, 20, 30]);
    assert!(matches!(
        registry.get("pdf"),
        Err(RegistryError::WrongKind { is_pool: true, .. })
    ));
}

#[test]
fn execute_uses_the_configured_wait_budget_and_never_masks_not_found() {
    let registry = Registry::local();
    registry
        .get_or_create(
            "slow",
            DomainConfig::new(1).max_wait(MaxWait::from_millis(20)),
        )
        .unwrap();
    let _seat = registry.acquire_blocking("slow").unwrap();
    let err = registry.execute("slow", || ()).unwrap_err();
    assert!(
        matches!(err, RegistryError::Rejected(Error::Timeout { .. })),
        "{err}"
    );
    assert!(matches!(
        registry.execute("missing", || ()),
        Err(RegistryError::NotFound { .. })
    ));
}

#[test]
fn the_global_registry_is_lazy_resettable_and_replaceable() {
    bulkhead_std::registry::reset_global();
    let first = bulkhead_std::registry::global().unwrap();
    assert!(Arc::ptr_eq(
        &first,
        &bulkhead_std::registry::global().unwrap()
    ));
    first
        .get_or_create("global-only", DomainConfig::new(1))
        .unwrap();
    bulkhead_std::registry::reset_global();
    let second = bulkhead_std::registry::global().unwrap();
    assert!(second.get("global-only").is_err());
    bulkhead_std::registry::set_global(Registry::local());
    assert!(!Arc::ptr_eq(
        &second,
        &bulkhead_std::registry::global().unwrap()
    ));
}

#[test]
fn a_domain_reports_its_state_like_every_compartment() {
    let registry = Registry::local();
    registry
        .get_or_create("reports", DomainConfig::new(2))
        .unwrap();
    let reports = registry.domain("reports").unwrap();
    let seat = reports.try_acquire().unwrap();
    assert_eq!(reports.state(), reports.bulkhead().state());
    assert_eq!(
        (reports.state().max_concurrent, reports.state().active),
        (2, 1)
    );
    drop(seat);
    assert_eq!(reports.state().active, 0);
}
