//! Scoped compartments in the registry: registered like any compartment,
//! closed in reverse order of opening.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use bulkhead_std::registry::{DomainConfig, EnvSource, Registry, RegistryError};
use bulkhead_std::scoped::{CloseOutcome, Opener, Scoped};
use bulkhead_std::{Config, Error, MaxWait};

type Log = Arc<Mutex<Vec<String>>>;

/// Creates the scoped compartment `name` whose close hook logs its name.
fn logged(registry: &Registry, name: &'static str, log: &Log) -> Arc<Scoped<&'static str>> {
    let log = log.clone();
    registry
        .create_scoped(name, DomainConfig::new(2), |config| {
            Ok(Scoped::new(
                config,
                "pool",
                Opener::blocking(move |_| Ok::<_, std::io::Error>(name)),
            )?
            .on_close(move |name| log.lock().unwrap().push(format!("closed {name}"))))
        })
        .unwrap()
}

#[test]
fn shutdown_closes_scoped_compartments_in_reverse_order_of_opening() {
    let registry = Registry::local();
    let log = Log::default();
    let a = logged(&registry, "a", &log);
    let b = logged(&registry, "b", &log);
    let c = logged(&registry, "c", &log);
    let _never = logged(&registry, "never", &log);
    // Opened b, c, a: not the order of registration.
    b.execute(|_| ()).unwrap();
    c.execute(|_| ()).unwrap();
    a.execute(|_| ()).unwrap();
    let reports = registry.shutdown_blocking(Duration::from_secs(5));
    let order: Vec<_> = reports
        .iter()
        .map(|r| (r.compartment.as_str(), r.outcome))
        .collect();
    assert_eq!(
        order,
        [
            ("a", CloseOutcome::Closed),
            ("c", CloseOutcome::Closed),
            ("b", CloseOutcome::Closed),
            ("never", CloseOutcome::NeverOpened),
        ]
    );
    assert_eq!(*log.lock().unwrap(), ["closed a", "closed c", "closed b"]);
}

#[test]
fn a_resource_opened_inside_another_opening_closes_after_it() {
    // `cart`'s initialiser enters `redis` (its provider), so `redis` opens
    // first and must close last.
    let registry = Arc::new(Registry::local());
    let log = Log::default();
    let redis = logged(&registry, "redis", &log);
    let l = log.clone();
    let cart = registry
        .create_scoped("cart", DomainConfig::new(1), |config| {
            Ok(Scoped::new(
                config,
                "cart-store",
                Opener::blocking(move |_| redis.execute(|r| format!("cart on {r}"))),
            )?
            .on_close(move |s| l.lock().unwrap().push(format!("closed {s}"))))
        })
        .unwrap();
    assert_eq!(cart.execute(|s| s.clone()).unwrap(), "cart on redis");
    registry.shutdown_blocking(Duration::from_secs(5));
    assert_eq!(
        *log.lock().unwrap(),
        ["closed cart on redis", "closed redis"]
    );
}

#[test]
fn shutdown_waits_for_holders_and_keeps_its_bound() {
    let registry = Arc::new(Registry::local());
    let log = Log::default();
    let drains = logged(&registry, "drains", &log);
    let stuck = logged(&registry, "stuck", &log);
    let held = stuck.enter_blocking().unwrap(); // never lets go in time
    let inside = Arc::new(Barrier::new(2));
    let (i, l, d) = (inside.clone(), log.clone(), drains.clone());
    let holder = thread::spawn(move || {
        d.execute(|_| {
            i.wait();
            thread::sleep(Duration::from_millis(100));
            l.lock().unwrap().push("holder done".into());
        })
        .unwrap()
    });
    inside.wait();
    // `drains` opened after `stuck`, so it is closed first.
    let started = Instant::now();
    let reports = registry.shutdown_blocking(Duration::from_millis(400));
    let took = started.elapsed();
    assert_eq!(reports[0].compartment, "drains");
    assert_eq!(reports[0].outcome, CloseOutcome::Closed);
    assert_eq!(reports[1].compartment, "stuck");
    assert_eq!(reports[1].outcome, CloseOutcome::Deferred { holders: 1 });
    assert!(took >= Duration::from_millis(400), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(*log.lock().unwrap(), ["holder done", "closed drains"]);
    drop(held);
    assert_eq!(
        *log.lock().unwrap(),
        ["holder done", "closed drains", "closed stuck"]
    );
    holder.join().unwrap();
}

#[test]
fn a_scoped_compartment_is_registered_like_any_other() {
    let registry = Registry::local();
    let opens = Arc::new(AtomicUsize::new(0));
    let o = opens.clone();
    let reports = registry
        .create_scoped(
            "reports",
            DomainConfig::new(2).max_wait(MaxWait::from_millis(20)),
            |config| {
                Scoped::new(
                    config,
                    "reports-db",
                    Opener::blocking(move |_| {
                        o.fetch_add(1, Ordering::SeqCst);
                        Ok::<_, std::io::Error>(())
                    }),
                )
            },
        )
        .unwrap();
    assert!(registry.list_names().iter().any(|n| n == "reports"));
    assert_eq!(
        registry.config("reports").unwrap().max_wait,
        MaxWait::from_millis(20)
    );
    // The registry's compartment is the scoped one's: the same seats.
    let seat = registry.acquire_blocking("reports").unwrap();
    let inside = reports.enter_blocking().unwrap();
    assert_eq!(registry.all_states()["reports"].active, 2);
    assert!(matches!(
        reports.enter_blocking(),
        Err(bulkhead_std::scoped::ScopeError::Rejected(
            Error::Timeout { .. }
        ))
    ));
    drop((seat, inside));
    // Live reconfiguration reaches it.
    registry
        .reconfigure("reports", DomainConfig::new(5))
        .unwrap();
    assert_eq!(reports.state().max_concurrent, 5);
    assert_eq!(opens.load(Ordering::SeqCst), 1);
    // Creating it again returns the same compartment.
    let again = registry
        .create_scoped("reports", DomainConfig::new(1), |_| unreachable!())
        .unwrap();
    assert!(Arc::ptr_eq(&reports, &again));
}

#[test]
fn the_environment_configures_a_scoped_compartment() {
    let registry = Registry::builder()
        .env(EnvSource::from_pairs([
            ("BULKHEAD_CHECKOUT_MAX_CONCURRENT", "7"),
            ("BULKHEAD_CHECKOUT_MAX_WAIT_MS", "30"),
        ]))
        .build()
        .unwrap();
    let checkout = registry
        .create_scoped("checkout", DomainConfig::new(2), |config| {
            assert_eq!(config.max_concurrent, 7);
            Scoped::new(
                config,
                "pool",
                Opener::blocking(|_| Ok::<_, std::io::Error>(())),
            )
        })
        .unwrap();
    assert_eq!(checkout.state().max_concurrent, 7);
    assert_eq!(checkout.wait_budget(), MaxWait::from_millis(30));
}

#[test]
fn lookups_by_type_say_what_is_wrong() {
    let registry = Registry::local();
    let log = Log::default();
    logged(&registry, "cart", &log);
    assert!(registry.get_scoped::<&str>("cart").is_ok());
    let err = registry.get_scoped::<String>("cart").unwrap_err();
    assert!(
        matches!(&err, RegistryError::NotScoped { name, .. } if name == "cart"),
        "{err}"
    );
    assert!(err.to_string().contains("String"), "{err}");
    let err = registry.get_scoped::<String>("database").unwrap_err();
    assert!(matches!(
        err,
        RegistryError::NotScoped { name, .. } if name == "database"
    ));
    assert!(matches!(
        registry.get_scoped::<String>("nope"),
        Err(RegistryError::NotFound { .. })
    ));
}

#[test]
fn register_scoped_takes_a_compartment_built_in_code() {
    let registry = Registry::local();
    let scoped = Scoped::new(
        Config::new("billing", 3).max_waiting(4),
        "billing-db",
        Opener::blocking(|_| Ok::<_, std::io::Error>(1_u8)),
    )
    .unwrap()
    .max_wait(Duration::from_millis(9));
    assert!(registry.register_scoped(scoped).is_none());
    let config = registry.config("billing").unwrap();
    assert_eq!(
        (config.max_concurrent, config.max_wait, config.max_waiting),
        (3, MaxWait::from_millis(9), Some(4))
    );
    assert_eq!(
        *registry
            .get_scoped::<u8>("billing")
            .unwrap()
            .enter_blocking()
            .unwrap(),
        1
    );
}

#[test]
fn shutdown_stops_admissions_everywhere() {
    let registry = Registry::local();
    registry.shutdown_blocking(Duration::ZERO);
    for name in registry.list_names() {
        assert!(matches!(
            registry.get(&name).unwrap().try_acquire(),
            Err(Error::Closed { .. })
        ));
    }
}

#[cfg(feature = "metrics")]
#[test]
fn metrics_publish_the_resource_state() {
    use bulkhead_std::metrics as bm;
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    ::metrics::with_local_recorder(&recorder, || {
        let registry = Registry::local();
        let attempts = Arc::new(AtomicUsize::new(0));
        let a = attempts.clone();
        let db = registry
            .create_scoped("metered", DomainConfig::new(1), |config| {
                Scoped::new(
                    config,
                    "metered-db",
                    Opener::blocking(move |_| match a.fetch_add(1, Ordering::SeqCst) {
                        0 => Err("down"),
                        _ => Ok(()),
                    }),
                )
            })
            .unwrap();
        assert!(db.execute(|_| ()).is_err());
        db.execute(|_| ()).unwrap();
        bm::publish_registry(&registry);
    });
    let all = snapshotter.snapshot().into_vec();
    let find = |metric: &str| {
        all.iter()
            .find(|(k, ..)| {
                k.key().name() == metric && k.key().labels().any(|l| l.value() == "metered")
            })
            .map(|(.., v)| v)
    };
    assert_eq!(
        find(bm::RESOURCE_OPEN),
        Some(&DebugValue::Gauge(1.0.into()))
    );
    assert_eq!(find(bm::RESOURCE_OPENS), Some(&DebugValue::Counter(1)));
    assert_eq!(
        find(bm::RESOURCE_OPEN_FAILURES),
        Some(&DebugValue::Counter(1))
    );
    assert_eq!(
        find(bm::MAX_CONCURRENT),
        Some(&DebugValue::Gauge(1.0.into()))
    );
}

#[test]
fn racing_creations_of_one_name_register_one_compartment() {
    let registry = Arc::new(Registry::local());
    let start = Arc::new(Barrier::new(8));
    let made: Vec<_> = (0..8)
        .map(|_| {
            let (registry, start) = (registry.clone(), start.clone());
            thread::spawn(move || {
                start.wait();
                registry
                    .create_scoped("raced", DomainConfig::new(1), |config| {
                        Scoped::new(
                            config,
                            "pool",
                            Opener::blocking(|_| Ok::<_, std::io::Error>(())),
                        )
                    })
                    .unwrap()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    assert!(made.iter().all(|s| Arc::ptr_eq(s, &made[0])));
    let registered = registry.get("raced").unwrap();
    assert!(Arc::ptr_eq(&registered, made[0].bulkhead()));
}

#[test]
fn creating_an_unregistered_scoped_compartment_again_registers_it_again() {
    let registry = Registry::local();
    let log = Log::default();
    let first = logged(&registry, "cart", &log);
    assert!(registry.unregister("cart").unwrap());
    assert!(registry.get("cart").is_err());
    let again = logged(&registry, "cart", &log);
    assert!(
        Arc::ptr_eq(&first, &again),
        "the same compartment and resource"
    );
    assert!(Arc::ptr_eq(
        &registry.get("cart").unwrap(),
        first.bulkhead()
    ));
}

/// A connection pool that hands out at most `size` connections.
struct ConnPool {
    compartment: String,
    free: Mutex<usize>,
}

impl ConnPool {
    fn checkout(&self) -> Option<()> {
        let mut free = self.free.lock().unwrap();
        *free = free.checked_sub(1)?;
        Some(())
    }
}

#[test]
fn an_environment_override_of_max_concurrent_reaches_the_opener() {
    let registry = Registry::builder()
        .env(EnvSource::from_pairs([(
            "BULKHEAD_CHECKOUT_MAX_CONCURRENT",
            "7",
        )]))
        .build()
        .unwrap();
    // The code says 2; the environment says 7. The pool is sized in the
    // opener, from what it is told, never from a constant.
    let checkout = registry
        .create_scoped("checkout", DomainConfig::new(2), |config| {
            Scoped::new(
                config,
                "checkout-pool",
                Opener::blocking(|opening| {
                    Ok::<_, std::io::Error>(ConnPool {
                        compartment: opening.compartment.to_string(),
                        free: Mutex::new(opening.max_concurrent),
                    })
                }),
            )
        })
        .unwrap();
    // Every seat the environment allows gets a connection of its own.
    let inside: Vec<_> = (0..7).map(|_| checkout.enter_blocking().unwrap()).collect();
    assert!(inside.iter().all(|pool| pool.checkout().is_some()));
    assert_eq!(inside[0].compartment, "checkout", "the registered name");
    assert!(checkout.enter_blocking().is_err(), "7 seats, not more");
    assert_eq!(inside[0].checkout(), None, "7 connections, not more");
}

#[test]
fn the_opener_sees_the_limit_as_it_stands_when_it_opens() {
    let registry = Registry::local();
    let sized = registry
        .create_scoped("reports", DomainConfig::new(2), |config| {
            Scoped::new(
                config,
                "reports-pool",
                Opener::blocking(|opening| Ok::<_, std::io::Error>(opening.max_concurrent)),
            )
        })
        .unwrap();
    // Reconfigured before the first entry: the resource opens at 5.
    registry
        .reconfigure("reports", DomainConfig::new(5))
        .unwrap();
    assert_eq!(sized.execute(|size| *size).unwrap(), 5);
}
