//! What a new user meets first: a file that declares compartments, a
//! misspelled variable, a blocking acquire on a runtime thread, error
//! chains printed whole, and the config structs and owned seats.

use std::error::Error as StdError;
use std::sync::Arc;

use bulkhead_std::registry::{DomainConfig, EnvSource, Registry, SettingsErrorKind};
use bulkhead_std::{Bulkhead, Config, Error, PoolError};

/// Every message of `err`'s source chain, outermost first.
fn chain(err: &(dyn StdError + 'static)) -> Vec<String> {
    let mut messages = Vec::new();
    let mut current = Some(err);
    while let Some(e) = current {
        messages.push(e.to_string());
        current = e.source();
    }
    messages
}

/// Asserts that no message of the chain repeats another's text, as a
/// report that prints the whole chain (`anyhow`'s `{:#}`) would show it.
fn assert_said_once(err: &(dyn StdError + 'static)) -> Vec<String> {
    let messages = chain(err);
    for (i, outer) in messages.iter().enumerate() {
        for inner in &messages[i + 1..] {
            assert!(
                !outer.contains(inner.as_str()),
                "`{outer}` repeats its source `{inner}` (chain: {messages:?})"
            );
        }
    }
    messages
}

/// The `tracing` warnings `f` logs on this thread.
fn capture_warnings(f: impl FnOnce()) -> Vec<String> {
    use std::sync::Mutex;
    use tracing::field::{Field, Visit};

    struct Capture(Arc<Mutex<Vec<String>>>);
    struct Message(String);
    impl Visit for Message {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            if field.name() == "message" {
                self.0 = format!("{value:?}");
            }
        }
    }
    impl tracing::Subscriber for Capture {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, event: &tracing::Event<'_>) {
            if *event.metadata().level() == tracing::Level::WARN {
                let mut message = Message(String::new());
                event.record(&mut message);
                self.0.lock().unwrap().push(message.0);
            }
        }
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    tracing::subscriber::with_default(Capture(seen.clone()), f);
    seen.lock().unwrap().clone()
}

// === the file's tables declare compartments ===

#[cfg(feature = "config-file")]
mod declared {
    use super::*;
    use bulkhead_std::registry::RegistryError;
    use bulkhead_std::{Algorithm, MaxWait};

    const FILE: &str = r#"
[default]
max_concurrent = 6

[domains.search]
limit = { algorithm = "aimd", min = 2, max = 40 }

[domains.reports]
max_waiting = 3

[domains.pdf]
max_workers = 2
max_concurrent = 5

[domains."database:replica"]
max_waiting = 4
"#;

    fn registry() -> Registry {
        Registry::builder()
            .env(EnvSource::from_pairs([(
                "BULKHEAD_REPORTS_MAX_CONCURRENT",
                "7",
            )]))
            .toml_str(FILE)
            .build()
            .unwrap()
    }

    #[test]
    fn a_domain_the_file_declares_exists_after_build() {
        let registry = registry();
        // No get_or_create: the table is the declaration.
        let search = registry.domain("search").unwrap();
        assert_eq!(
            search.config().limit.map(|l| l.algorithm),
            Some(Algorithm::Aimd)
        );
        assert_eq!(
            search.bulkhead().state().max_concurrent,
            6,
            "the template's"
        );
        // The table and the compartment's variables apply over the template.
        let reports = registry.config("reports").unwrap();
        assert_eq!((reports.max_concurrent, reports.max_waiting), (7, Some(3)));
        assert!(registry.acquire_blocking("reports").is_ok());
        // `max_workers` declares a thread pool.
        let pdf = registry.get_pool("pdf").unwrap();
        assert_eq!(pdf.snapshot().max_concurrent, 5);
        // A per-instance name starts from its built-in.
        let replica = registry.config("database:replica").unwrap();
        assert_eq!((replica.max_concurrent, replica.max_waiting), (10, Some(4)));
        assert!(registry.list_names().iter().any(|n| n.as_str() == "search"));
    }

    #[test]
    fn code_settings_still_sit_under_the_file_until_the_compartment_is_used() {
        let registry = registry();
        // Unused so far: the code's settings replace the template's, and
        // the file and the environment still win over them.
        let reports = registry
            .get_or_create(
                "reports",
                DomainConfig::new(2).max_wait(MaxWait::from_millis(5)),
            )
            .unwrap();
        let config = registry.config("reports").unwrap();
        assert_eq!(config.max_concurrent, 7, "the environment");
        assert_eq!(config.max_waiting, Some(3), "the file");
        assert_eq!(config.max_wait, MaxWait::from_millis(5), "the code");
        // In use now: the existing compartment wins and a warning says so.
        let warnings = capture_warnings(|| {
            let again = registry
                .get_or_create("reports", DomainConfig::new(9))
                .unwrap();
            assert!(Arc::ptr_eq(&reports, &again));
        });
        assert_eq!(warnings.len(), 1, "{warnings:?}");

        // A declared thread pool, too: rebuilt from the code's settings
        // under the file's.
        let pdf = registry
            .get_or_create_pool(
                "pdf",
                DomainConfig::new(1).max_wait(MaxWait::from_millis(7)),
            )
            .unwrap();
        let config = registry.config("pdf").unwrap();
        assert_eq!(
            (config.max_wait, config.max_workers, config.max_concurrent),
            (MaxWait::from_millis(7), Some(2), 5)
        );
        assert_eq!(pdf.spawn(|| 6 * 7).unwrap().join().unwrap(), 42);

        // A declared compartment somebody uses before code asks for it
        // keeps the file's settings.
        let search = registry.get("search").unwrap();
        let warnings = capture_warnings(|| {
            let again = registry
                .get_or_create("search", DomainConfig::new(3))
                .unwrap();
            assert!(Arc::ptr_eq(&search, &again));
        });
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("file-declared"), "{warnings:?}");
    }

    #[test]
    fn a_bounded_registry_never_evicts_a_declared_domain() {
        let registry = Registry::builder()
            .without_env()
            .toml_str(FILE)
            .max_entries(1)
            .build()
            .unwrap();
        registry
            .get_or_create("tenant-1", DomainConfig::new(1))
            .unwrap();
        registry
            .get_or_create("tenant-2", DomainConfig::new(1))
            .unwrap();
        assert!(registry.get("search").is_ok());
        assert!(registry.get("reports").is_ok());
        assert!(registry.get("tenant-1").is_err(), "the dynamic one went");
    }

    #[test]
    fn variables_for_an_undeclared_name_declare_nothing() {
        let registry = Registry::builder()
            .env(EnvSource::from_pairs([(
                "BULKHEAD_ORDERS_MAX_CONCURRENT",
                "4",
            )]))
            .build()
            .unwrap();
        assert!(matches!(
            registry.get("orders"),
            Err(RegistryError::NotFound { .. })
        ));
        // They apply when code creates it.
        let orders = registry
            .get_or_create("orders", DomainConfig::new(1))
            .unwrap();
        assert_eq!(orders.state().max_concurrent, 4);
    }
}

// === one policy for every unknown variable ===

#[test]
fn every_misspelled_variable_fails_the_build_the_same_way() {
    // A plain setting's typo and a built-in's adaptive-limit typo.
    for (variable, value, meant) in [
        (
            "BULKHEAD_DATABASE_MAX_CONCURENT",
            "2",
            "BULKHEAD_DATABASE_MAX_CONCURRENT",
        ),
        (
            "BULKHEAD_DATABASE_LIMIT_MAXX",
            "64",
            "BULKHEAD_DATABASE_LIMIT_MAX",
        ),
        (
            "BULKHEAD_REPORTS_LIMIT_MINN",
            "3",
            "BULKHEAD_REPORTS_LIMIT_MIN",
        ),
    ] {
        let err = Registry::builder()
            .env(EnvSource::from_pairs([(variable, value)]))
            .build()
            .expect_err(variable);
        let settings = err.settings().expect(variable);
        assert_eq!(
            (settings.kind(), settings.key(), settings.value()),
            (SettingsErrorKind::UnknownKey, variable, value)
        );
        let message = err.to_string();
        assert!(
            message.contains(&format!("{meant}, which it nearly spells")),
            "{message}"
        );
        assert!(message.contains("allow_unknown_variables"), "{message}");
        // One message, not a warning's text inside an error's.
        assert!(!message.contains("is ignored"), "{message}");
        assert_eq!(message.matches(variable).count(), 1, "{message}");
    }
}

#[test]
fn allowed_misspellings_are_all_warnings_the_same_way() {
    let env = EnvSource::from_pairs([
        ("BULKHEAD_DATABASE_MAX_CONCURENT", "2"),
        ("BULKHEAD_DATABASE_LIMIT_MAXX", "64"),
    ]);
    let mut registry = None;
    let warnings = capture_warnings(|| {
        registry = Some(
            Registry::builder()
                .env(env)
                .allow_unknown_variables()
                .build()
                .unwrap(),
        );
    });
    let registry = registry.unwrap();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert_eq!(registry.unknown_variables().len(), 2);
    // Neither applied: the built-in keeps its code settings, not adaptive.
    let db = registry.domain("database").unwrap();
    assert_eq!(db.config(), &DomainConfig::new(10));
    assert!(db.controller().is_none());
}

// === a blocking acquire on an event-loop thread says why ===

#[cfg(feature = "tokio")]
#[test]
fn a_blocking_acquire_on_a_runtime_thread_says_it_could_not_wait_and_warns_once() {
    use std::time::Duration;
    let db = Bulkhead::new("db", 1).unwrap();
    let other = Bulkhead::new("other", 1).unwrap();
    let _held = (db.try_acquire().unwrap(), other.try_acquire().unwrap());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut errors = Vec::new();
    let warnings = capture_warnings(|| {
        runtime.block_on(async {
            use bulkhead_std::BlockingAcquire;
            for _ in 0..3 {
                errors.push(db.acquire_blocking(Duration::from_millis(50)).unwrap_err());
            }
            errors.push(
                other
                    .acquire_blocking(Duration::from_millis(50))
                    .unwrap_err(),
            );
        });
    });
    for err in &errors {
        let message = err.to_string();
        assert!(
            message.contains("a thread that drives an event loop"),
            "{message}"
        );
        assert!(message.contains("async acquire"), "{message}");
        assert!(!message.contains("give callers a wait budget"), "{message}");
    }
    // Once per compartment.
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("`db`") && warnings[0].contains("a tokio runtime"));
    assert!(warnings[1].contains("`other`"), "{warnings:?}");
}

#[cfg(feature = "tokio")]
#[test]
fn the_registry_acquire_on_a_runtime_thread_gives_the_distinct_variant() {
    use bulkhead_std::MaxWait;
    let registry = Registry::local();
    registry
        .get_or_create(
            "one",
            DomainConfig::new(1).max_wait(MaxWait::from_millis(50)),
        )
        .unwrap();
    let _held = registry.acquire_blocking("one").unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let err = runtime.block_on(async { registry.acquire_blocking("one").unwrap_err() });
    assert!(matches!(
        err.rejection(),
        Some(Error::FullOnEventLoop { name, .. }) if name.as_str() == "one"
    ));
    // Off the runtime, the same call waits its budget and times out.
    assert!(matches!(
        registry.acquire_blocking("one").unwrap_err().rejection(),
        Some(Error::Timeout { .. })
    ));
}

// === error chains say everything once ===

#[test]
fn rejection_chains_repeat_no_text() {
    let registry = Registry::local();
    registry
        .get_or_create("single", DomainConfig::new(1))
        .unwrap();
    let _held = registry.acquire_blocking("single").unwrap();
    let err = registry.acquire_blocking("single").unwrap_err();
    let messages = assert_said_once(&err);
    assert_eq!(messages.len(), 2, "the compartment's Error is the source");
    assert!(messages[1].contains("is full"), "{messages:?}");

    let scoped = bulkhead_std::scoped::Scoped::new(
        Config::new("scoped", 1),
        "conn",
        bulkhead_std::scoped::Opener::blocking(|_| Ok::<_, std::io::Error>(())),
    )
    .unwrap();
    let _inside = scoped.enter_blocking().unwrap();
    let err = scoped.enter_blocking().unwrap_err();
    assert_eq!(assert_said_once(&err).len(), 2);

    let failing = bulkhead_std::scoped::Scoped::<()>::new(
        Config::new("failing", 1),
        "conn",
        bulkhead_std::scoped::Opener::blocking(|_| Err(std::io::Error::other("refused"))),
    )
    .unwrap();
    let err = failing.enter_blocking().unwrap_err();
    let messages = assert_said_once(&err);
    assert_eq!(messages.last().map(String::as_str), Some("refused"));

    let settings = Registry::builder()
        .env(EnvSource::from_pairs([(
            "BULKHEAD_CACHE_MAX_CONCURRENT",
            "x",
        )]))
        .build()
        .unwrap_err();
    assert_said_once(&settings);
}

#[test]
fn a_pool_rejection_gives_the_pool_advice_not_a_wait_budget() {
    let pool = bulkhead_std::ThreadPoolBulkhead::builder("pdf")
        .queue_capacity(0)
        .build()
        .unwrap();
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let busy = pool
        .spawn(move || {
            started_tx.send(()).unwrap();
            release_rx.recv().ok();
        })
        .unwrap();
    started_rx.recv().unwrap();
    let err = pool.spawn(|| ()).unwrap_err();
    assert!(matches!(err, PoolError::Rejected(Error::Full { .. })));
    let messages = assert_said_once(&err);
    let all = messages.join(": ");
    assert!(!all.contains("wait budget"), "{all}");
    assert!(all.contains("max_workers or queue_capacity"), "{all}");
    release_tx.send(()).unwrap();
    busy.join().unwrap();
}

// === config structs and owned seats ===

#[test]
fn domain_config_takes_struct_update_syntax_like_limit_config() {
    const DB: DomainConfig = DomainConfig {
        max_waiting: Some(8),
        ..DomainConfig::new(4)
    };
    const LIMIT: bulkhead_std::LimitConfig = bulkhead_std::LimitConfig {
        max: Some(16),
        ..bulkhead_std::LimitConfig::new(bulkhead_std::Algorithm::Aimd)
    };
    assert_eq!((DB.max_concurrent, DB.max_waiting), (4, Some(8)));
    assert_eq!(LIMIT.max, Some(16));
}

#[test]
fn an_owned_seat_over_an_adaptive_compartment_needs_no_wrapper() {
    use bulkhead_std::bulkhead_core::limit::{Aimd, AimdParams};
    use bulkhead_std::{Adaptive, OwnedSeat, StdClock};

    let aimd = Aimd::new(AimdParams {
        initial: 2,
        min: 1,
        ..AimdParams::DEFAULT
    })
    .unwrap();
    let api: Arc<Adaptive<Aimd>> = Arc::new(Adaptive::new(
        Bulkhead::new("api", 2).unwrap(),
        aimd,
        StdClock,
    ));
    let seat = OwnedSeat::try_acquire(Arc::clone(&api)).unwrap();
    let moved = std::thread::spawn(move || {
        assert_eq!(seat.handle().bulkhead().state().active, 1);
        drop(seat);
    });
    moved.join().unwrap();
    assert_eq!(api.bulkhead().state().active, 0);
}
