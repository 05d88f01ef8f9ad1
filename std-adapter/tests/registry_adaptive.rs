//! Adaptive compartments in the registry: a `limit` from code, the TOML
//! file or `BULKHEAD_<NAME>_LIMIT_*` builds a compartment whose limit the
//! registry's own paths feed, with no code from the caller.

use std::sync::Arc;

use bulkhead_std::bulkhead_core::limit::{CallOutcome, Recorded};
use bulkhead_std::registry::{
    DomainConfig, EnvSource, Registry, RegistryError, SettingsErrorKind as K,
};
use bulkhead_std::{Algorithm, LimitConfig};

/// AIMD between 2 and `max`, windowed as little as it can be: it moves
/// once per `limit` samples (a window is at least the limit long).
const fn aimd(max: usize) -> LimitConfig {
    LimitConfig {
        min: Some(2),
        max: Some(max),
        window: Some(1),
        ..LimitConfig::new(Algorithm::Aimd)
    }
}

fn limit(registry: &Registry, name: &str) -> usize {
    registry.get(name).unwrap().state().max_concurrent
}

/// One window of failing calls: each `Err` counts as dropped.
fn failing_round(registry: &Registry, name: &str) {
    for _ in 0..limit(registry, name) {
        let r = registry.execute(name, || Err::<(), _>("503")).unwrap();
        assert!(r.is_err());
    }
}

/// One window of fully loaded successes: every seat taken, then all given
/// back (each a success with the compartment full, which AIMD grows on).
fn loaded_round(registry: &Registry, name: &str) {
    let n = limit(registry, name);
    let seats: Vec<_> = (0..n)
        .map(|_| registry.acquire_blocking(name).unwrap())
        .collect();
    assert!(seats.iter().all(|s| s.is_timed()));
    drop(seats);
}

#[test]
fn code_limit_moves_down_under_failures_and_up_under_load() {
    let registry = Registry::local();
    registry
        .get_or_create("payments", DomainConfig::new(10).limit(aimd(40)))
        .unwrap();
    assert_eq!(limit(&registry, "payments"), 10, "starts at max_concurrent");

    // A failing dependency: every call is an `Err`, which counts as dropped.
    for _ in 0..5 {
        failing_round(&registry, "payments");
    }
    // floor(0.9 x 10) = 9, 8, 7, 6, 5
    assert_eq!(limit(&registry, "payments"), 5);
    let domain = registry.domain("payments").unwrap();
    assert_eq!(domain.controller().unwrap().changes(), 5);

    // A healthy dependency under load: the limit climbs back.
    for _ in 0..4 {
        let before = limit(&registry, "payments");
        loaded_round(&registry, "payments");
        assert!(limit(&registry, "payments") > before);
    }
    // The registry's snapshot shows the live limit.
    let states = registry.all_states();
    assert_eq!(
        states["payments"].max_concurrent,
        limit(&registry, "payments")
    );
    assert_eq!(states["payments"].active, 0, "every seat came back");
}

#[test]
fn a_panic_counts_as_dropped_and_classifiers_decide_the_rest() {
    let registry = Registry::local();
    registry
        .get_or_create("search", DomainConfig::new(10).limit(aimd(40)))
        .unwrap();
    // Nine successes with little load keep the limit; the tenth sample,
    // a panic, closes the window as a drop.
    let idle = || registry.execute("search", || ()).unwrap();
    (0..9).for_each(|_| idle());
    let panicked = std::panic::catch_unwind(|| {
        let _ = registry.execute("search", || -> Result<(), ()> { panic!("work panicked") });
    });
    assert!(panicked.is_err());
    assert_eq!(limit(&registry, "search"), 9, "a panic is a drop");
    assert_eq!(registry.get("search").unwrap().state().active, 0);

    (0..8).for_each(|_| idle());
    let timed_out = registry
        .execute_classified("search", || "slow", |_| CallOutcome::Timeout)
        .unwrap();
    assert_eq!(timed_out, "slow");
    assert_eq!(
        limit(&registry, "search"),
        8,
        "the work's own timeout backs off"
    );

    // A seat given back with an explicit outcome, or ignored.
    (0..7).for_each(|_| idle());
    let seat = registry.acquire_blocking("search").unwrap();
    assert!(matches!(
        seat.record(CallOutcome::Dropped),
        Some(Recorded::Changed { old: 8, new: 7 })
    ));
    let changes = registry
        .domain("search")
        .unwrap()
        .controller()
        .unwrap()
        .changes();
    registry.acquire_blocking("search").unwrap().ignore();
    let domain = registry.domain("search").unwrap();
    assert_eq!(
        domain.controller().unwrap().changes(),
        changes,
        "ignored: no sample"
    );

    // Seats taken from the handle feed the limit too: a full window of
    // successes with 7 of 7 in use: + 1.
    let held: Vec<_> = (0..7).map(|_| domain.try_acquire().unwrap()).collect();
    drop(held);
    assert_eq!(limit(&registry, "search"), 8);
}

#[test]
fn a_static_compartment_is_unchanged() {
    let registry = Registry::local();
    let db = registry.domain("database").unwrap();
    assert!(db.controller().is_none());
    let seat = registry.acquire_blocking("database").unwrap();
    assert!(!seat.is_timed());
    assert_eq!(seat.record(CallOutcome::Dropped), None);
    for _ in 0..30 {
        let _ = registry.execute("database", || Err::<(), _>("503"));
    }
    assert_eq!(limit(&registry, "database"), 10);
}

#[test]
fn environment_variables_make_a_compartment_adaptive_and_override_fields() {
    let env = EnvSource::from_pairs([
        ("BULKHEAD_SEARCH_LIMIT_ALGORITHM", "aimd"),
        ("BULKHEAD_SEARCH_LIMIT_MIN", "3"),
        ("BULKHEAD_SEARCH_LIMIT_MAX", "6"),
        ("BULKHEAD_SEARCH_LIMIT_WINDOW", "1"),
        ("BULKHEAD_DATABASE_LIMIT_ALGORITHM", "gradient2"),
    ]);
    let registry = Registry::builder().env(env).build().unwrap();
    assert!(
        registry.unknown_variables().is_empty(),
        "LIMIT_* are known settings"
    );
    // A built-in made adaptive by the environment alone: Gradient2 starts
    // at the built-in's 10 seats, clamped into its default bounds [20, 200].
    let db = registry.domain("database").unwrap();
    assert_eq!(
        db.config().limit.map(|l| l.algorithm),
        Some(Algorithm::Gradient2)
    );
    assert_eq!(limit(&registry, "database"), 20);

    // Code asks for a fixed compartment; the environment makes it AIMD
    // within [3, 6], starting at 4.
    registry
        .get_or_create("search", DomainConfig::new(4))
        .unwrap();
    assert!(registry.domain("search").unwrap().controller().is_some());
    for _ in 0..10 {
        loaded_round(&registry, "search");
    }
    assert_eq!(limit(&registry, "search"), 6, "the environment's max");
    for _ in 0..10 {
        failing_round(&registry, "search");
    }
    assert_eq!(limit(&registry, "search"), 3, "the environment's min");
}

#[test]
fn limit_errors_name_the_variable_and_the_fix() {
    let build = |pairs: &[(&str, &str)]| {
        Registry::builder()
            .env(EnvSource::from_pairs(pairs.iter().copied()))
            .build()
    };
    let err = build(&[("BULKHEAD_DATABASE_LIMIT_MAXX", "9")]).unwrap_err();
    let settings = err.settings().unwrap();
    assert_eq!(
        (settings.kind(), settings.key()),
        (K::UnknownKey, "BULKHEAD_DATABASE_LIMIT_MAXX")
    );
    assert!(
        err.to_string().contains("BULKHEAD_DATABASE_LIMIT_MAX,"),
        "{err}"
    );

    let err = build(&[("BULKHEAD_CACHE_LIMIT_ALGORITHM", "pid")]).unwrap_err();
    assert_eq!(err.settings().unwrap().kind(), K::UnknownAlgorithm);
    assert!(
        err.to_string().contains("`aimd`, `vegas` or `gradient2`"),
        "{err}"
    );

    let err = build(&[("BULKHEAD_CACHE_LIMIT_MAX", "64")]).unwrap_err();
    assert_eq!(err.settings().unwrap().kind(), K::MissingAlgorithm);
    assert!(
        err.to_string().contains("BULKHEAD_CACHE_LIMIT_ALGORITHM"),
        "{err}"
    );

    let err = build(&[
        ("BULKHEAD_CACHE_LIMIT_ALGORITHM", "vegas"),
        ("BULKHEAD_CACHE_LIMIT_MIN", "50"),
        ("BULKHEAD_CACHE_LIMIT_MAX", "10"),
    ])
    .unwrap_err();
    assert!(
        matches!(&err, RegistryError::Limit { name, .. } if name == "cache"),
        "{err}"
    );
    assert!(err.to_string().contains("min = 50, max = 10"), "{err}");

    // A typo for a compartment created later: the same build-time error
    // as for a built-in; allowed, a warning with the closest variable, and
    // the compartment is created without it.
    let err = build(&[("BULKHEAD_REPORTS_LIMIT_MAXX", "9")]).unwrap_err();
    assert_eq!(err.settings().unwrap().key(), "BULKHEAD_REPORTS_LIMIT_MAXX");
    let registry = Registry::builder()
        .env(EnvSource::from_pairs([(
            "BULKHEAD_REPORTS_LIMIT_MAXX",
            "9",
        )]))
        .allow_unknown_variables()
        .build()
        .unwrap();
    let unknown = &registry.unknown_variables()[0];
    assert_eq!(unknown.suggestion(), Some("BULKHEAD_REPORTS_LIMIT_MAX"));
    let reports = registry
        .get_or_create("reports", DomainConfig::new(2))
        .unwrap();
    assert_eq!(reports.state().max_concurrent, 2);
}

#[test]
fn live_changes_of_the_limit_are_refused_and_pools_stay_fixed() {
    let registry = Registry::local();
    let adaptive = DomainConfig::new(4).limit(aimd(8));
    registry.get_or_create("search", adaptive).unwrap();
    let err = registry
        .reconfigure("search", DomainConfig::new(4))
        .unwrap_err();
    assert!(matches!(err, RegistryError::Unsupported { .. }), "{err}");
    let err = registry
        .reconfigure("search", adaptive.limit(aimd(9)))
        .unwrap_err();
    assert!(
        err.to_string().contains("adaptive limit cannot change"),
        "{err}"
    );
    // Other fields change as usual.
    registry
        .reconfigure("search", adaptive.max_waiting(3))
        .unwrap();
    assert_eq!(registry.config("search").unwrap().max_waiting, Some(3));

    let err = registry.get_or_create_pool("pdf", adaptive).unwrap_err();
    assert!(err.to_string().contains("semaphore compartments"), "{err}");
}

#[test]
fn get_or_create_with_another_limit_keeps_the_existing_compartment() {
    let registry = Registry::local();
    let first = registry
        .get_or_create("search", DomainConfig::new(4).limit(aimd(8)))
        .unwrap();
    let second = registry
        .get_or_create("search", DomainConfig::new(4).limit(aimd(99)))
        .unwrap();
    assert!(Arc::ptr_eq(&first, &second));
    assert_eq!(
        registry.config("search").unwrap().limit.and_then(|l| l.max),
        Some(8),
        "the first settings win"
    );
}

#[cfg(feature = "config-file")]
mod file {
    use super::*;

    const FILE: &str = r#"
[domains.payments]
max_concurrent = 10
limit = { algorithm = "aimd", min = 2, max = 40, window = 1 }

[domains.search]
limit = { algorithm = "gradient2", min = 4, max = 200 }
"#;

    #[test]
    fn a_limit_table_builds_an_adaptive_compartment() {
        let registry = Registry::builder()
            .without_env()
            .toml_str(FILE)
            .build()
            .unwrap();
        registry
            .get_or_create("payments", DomainConfig::new(1))
            .unwrap();
        for _ in 0..5 {
            failing_round(&registry, "payments");
        }
        assert_eq!(
            limit(&registry, "payments"),
            5,
            "10 -> 9 -> 8 -> 7 -> 6 -> 5"
        );
        let before = limit(&registry, "payments");
        loaded_round(&registry, "payments");
        assert!(limit(&registry, "payments") > before);

        // The issue's example: Gradient2 within [4, 200], starting at the
        // template's 10 seats; a failing workload brings it down.
        // Gradient2 holds while less than half the seats are in use, so the
        // calls overlap: each round, every seat is taken, then each call
        // fails.
        let search = registry.get_or_create_default("search").unwrap();
        assert_eq!(search.state().max_concurrent, 10);
        for _ in 0..10 {
            let seats: Vec<_> = (0..limit(&registry, "search"))
                .map(|_| registry.acquire_blocking("search").unwrap())
                .collect();
            for seat in seats {
                let _ = seat.record(CallOutcome::Dropped);
            }
        }
        // Each drop halves the target, plus Gradient2's queue allowance:
        // it settles where the two balance, above its min of 4.
        let after = search.state().max_concurrent;
        assert!((4..10).contains(&after), "{after}");
        // Healthy again: it grows by its queue allowance.
        for _ in 0..10 {
            loaded_round(&registry, "search");
        }
        assert!(search.state().max_concurrent > after);
    }

    #[test]
    fn the_environment_overrides_one_field_of_the_file_limit() {
        let registry = Registry::builder()
            .env(EnvSource::from_pairs([(
                "BULKHEAD_PAYMENTS_LIMIT_MAX",
                "12",
            )]))
            .toml_str(FILE)
            .build()
            .unwrap();
        registry
            .get_or_create("payments", DomainConfig::new(1))
            .unwrap();
        let config = registry.config("payments").unwrap().limit.unwrap();
        assert_eq!(
            (config.algorithm, config.min, config.max),
            (Algorithm::Aimd, Some(2), Some(12))
        );
        for _ in 0..5 {
            loaded_round(&registry, "payments");
        }
        assert_eq!(limit(&registry, "payments"), 12);
    }

    #[test]
    fn the_template_may_be_adaptive_from_the_file_or_the_environment() {
        let registry = Registry::builder()
            .without_env()
            .toml_str("[default]\nlimit = { algorithm = \"vegas\", min = 2 }\n")
            .build()
            .unwrap();
        registry.get_or_create_default("tenant-1").unwrap();
        let tenant = registry.domain("tenant-1").unwrap();
        assert_eq!(
            tenant.config().limit.map(|l| l.algorithm),
            Some(Algorithm::Vegas)
        );

        let env = EnvSource::from_pairs([
            ("BULKHEAD_LIMIT_ALGORITHM", "aimd"),
            ("BULKHEAD_LIMIT_MIN", "3"),
        ]);
        let registry = Registry::builder().env(env).build().unwrap();
        assert!(registry.unknown_variables().is_empty());
        registry.get_or_create_default("tenant-2").unwrap();
        let limit = registry.config("tenant-2").unwrap().limit.unwrap();
        assert_eq!((limit.algorithm, limit.min), (Algorithm::Aimd, Some(3)));
        // Built-ins keep their own settings: the template is for new names.
        assert!(registry.domain("database").unwrap().controller().is_none());
    }

    #[test]
    fn malformed_limit_tables_name_the_key() {
        for (table, kind, key) in [
            (
                r#"limit = { algorithm = "vegas", maximum = 9 }"#,
                K::UnknownKey,
                "domains.db.limit.maximum",
            ),
            (
                r#"limit = { algorithm = "pid" }"#,
                K::UnknownAlgorithm,
                "domains.db.limit.algorithm",
            ),
            (
                r#"limit = { max = 9 }"#,
                K::MissingAlgorithm,
                "domains.db.limit",
            ),
            (
                r#"limit = { algorithm = "aimd", min = -1 }"#,
                K::Negative,
                "domains.db.limit.min",
            ),
            (
                r#"limit = { algorithm = "aimd", max = 1.5 }"#,
                K::NotANumber,
                "domains.db.limit.max",
            ),
            (r#"limit = "gradient2""#, K::NotATable, "domains.db.limit"),
        ] {
            let text = format!("[domains.db]\n{table}\n");
            let err = Registry::builder()
                .without_env()
                .toml_str(&text)
                .build()
                .unwrap_err();
            let settings = err.settings().unwrap();
            assert_eq!(
                (settings.kind(), settings.key()),
                (kind, key),
                "{text}: {err}"
            );
        }
        let err = Registry::builder()
            .without_env()
            .toml_str("[domains.db]\nlimit = { algorithm = \"vegas\", maximum = 9 }\n")
            .build()
            .unwrap_err();
        assert!(
            err.to_string().contains("min, max, initial, window"),
            "{err}"
        );
    }
}

#[cfg(feature = "metrics")]
#[test]
fn limit_changes_publish_the_gauge_and_the_counter_without_a_call() {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let registry = Registry::local();
    metrics::with_local_recorder(&recorder, || {
        registry
            .get_or_create("metered", DomainConfig::new(10).limit(aimd(40)))
            .unwrap();
        for _ in 0..3 {
            failing_round(&registry, "metered");
        }
    });
    let all = snapshotter.snapshot().into_vec();
    let value = |metric: &str| {
        all.iter()
            .find(|(k, ..)| {
                k.key().name() == metric && k.key().labels().any(|l| l.value() == "metered")
            })
            .map(|(.., v)| v)
    };
    // 10 -> 9 -> 8 -> 7, published as it happened.
    assert_eq!(
        value("bulkhead_max_concurrent"),
        Some(&DebugValue::Gauge(7.0.into()))
    );
    assert_eq!(
        value("bulkhead_limit_changes_total"),
        Some(&DebugValue::Counter(3))
    );
}

/// `Registry::try_acquire` never waits, whatever the configured budget,
/// and its seat owns its compartment and feeds an adaptive limit like
/// every registry verb's (a seat from `registry.get(name)?.try_acquire()`
/// would borrow a temporary, and record nothing).
#[test]
fn try_acquire_fails_fast_and_its_seat_records_a_sample() {
    let registry = Registry::local();
    let patient = DomainConfig::new(10)
        .limit(aimd(40))
        .max_wait(bulkhead_std::MaxWait::from_millis(30_000));
    registry.get_or_create("search", patient).unwrap();

    // A window of ten samples: nine successes, then a drop: 10 -> 9.
    for _ in 0..9 {
        let seat = registry.try_acquire("search").unwrap();
        assert!(seat.is_timed());
    }
    let seat = registry.try_acquire("search").unwrap();
    assert!(matches!(
        seat.record(CallOutcome::Dropped),
        Some(Recorded::Changed { old: 10, new: 9 })
    ));
    assert_eq!(limit(&registry, "search"), 9);

    // Full: refused at once, not after the 30 s budget.
    let held: Vec<_> = (0..9)
        .map(|_| registry.try_acquire("search").unwrap())
        .collect();
    let started = std::time::Instant::now();
    let full = registry.try_acquire("search").unwrap_err();
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert!(matches!(
        full.rejection(),
        Some(bulkhead_std::Error::Full { .. })
    ));
    // The seats own their compartment: they outlive the registry.
    drop(registry);
    drop(held);

    let registry = Registry::local();
    assert!(matches!(
        registry.try_acquire("nowhere"),
        Err(RegistryError::NotFound { .. })
    ));
}
