//! Partitioned registry compartments: settings from code, a TOML file, the
//! environment and serde, their errors, live reconfiguration, and the
//! waits of a partition's handle.

use std::time::{Duration, Instant};

use bulkhead_std::bulkhead_core::partition::{Amount, PartitionConfig};
use bulkhead_std::registry::{
    DomainConfig, DomainPartition, EnvSource, Registry, RegistryError, SettingsErrorKind as K,
};
use bulkhead_std::{Algorithm, ConfigError, Error, LimitConfig, MaxWait};

static DB_PARTS: [PartitionConfig; 2] = [
    PartitionConfig::new("live", Amount::Seats(24)).priority(1),
    PartitionConfig::new("batch", Amount::Seats(8)).borrow(Amount::Seats(16)),
];
const DB: DomainConfig = DomainConfig::new(32).partitions(&DB_PARTS);

/// A registry reading `env`, with `db` created from [`DB`] by code (the
/// environment's partition settings are checked when it is created).
fn registry_with(env: &[(&str, &str)]) -> Result<Registry, RegistryError> {
    let registry = Registry::builder()
        .env(EnvSource::from_pairs(env.iter().copied()))
        .build()?;
    registry.get_or_create_partitioned("db", DB)?;
    Ok(registry)
}

/// Batch (share 8, may borrow 16) fills its share and borrows live's 16
/// idle seats; live (share 24) takes its 8 free seats, and a ninth live
/// caller waits: the next seat a batch call gives back is handed to it.
fn borrow_then_reclaim(registry: &Registry, live: &DomainPartition, batch: &DomainPartition) {
    let mut night: Vec<_> = (0..24).map(|_| batch.try_acquire().unwrap()).collect();
    assert!(matches!(
        batch.try_acquire(),
        Err(Error::PartitionFull { .. })
    ));
    assert_eq!(live.state().lent, 16);
    assert_eq!(batch.state().borrowed, 16);
    let day: Vec<_> = (0..8).map(|_| live.try_acquire().unwrap()).collect();
    assert!(live.try_acquire().is_err()); // the compartment is full
    let waiter = {
        let live = live.clone();
        std::thread::spawn(move || live.acquire_blocking())
    };
    let start = Instant::now();
    while live.state().waiting == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the waiter never queued"
        );
        std::thread::yield_now();
    }
    night.pop(); // a borrowed seat comes back: to live's waiter
    let reclaimed = waiter.join().unwrap().unwrap();
    assert_eq!(live.state().active, 9);
    assert_eq!(batch.state().borrowed, 15);
    assert!(batch.try_acquire().is_err());
    let compartment = registry.get_partitioned("db").unwrap();
    assert_eq!(compartment.state().active, 32);
    drop((night, day, reclaimed));
    assert_eq!(compartment.state().active, 0);
}

#[test]
fn code_partitions_lend_and_a_lender_reclaims_through_the_registry() {
    let registry = Registry::local();
    registry
        .get_or_create_partitioned("db", DB.max_wait(MaxWait::from_millis(5_000)))
        .unwrap();
    let live = registry.partition("db", "live").unwrap();
    let batch = registry.partition("db", "batch").unwrap();
    borrow_then_reclaim(&registry, &live, &batch);
}

#[test]
fn a_partitioned_domain_is_not_a_plain_one_and_the_reverse() {
    let registry = registry_with(&[]).unwrap();
    let err = registry.get("db").unwrap_err();
    assert!(matches!(err, RegistryError::Partitioned { .. }), "{err}");
    assert!(
        err.to_string().contains("Registry::partition(\"db\""),
        "{err}"
    );
    let err = registry.try_acquire("db").unwrap_err();
    assert!(matches!(err, RegistryError::Partitioned { .. }), "{err}");
    let err = registry.partition("database", "live").unwrap_err();
    assert!(matches!(err, RegistryError::NotPartitioned { .. }), "{err}");
    assert!(err.to_string().contains("has no partitions"), "{err}");
}

#[test]
fn an_unknown_partition_at_lookup_names_the_known_ones() {
    let registry = registry_with(&[]).unwrap();
    let err = registry.partition("db", "lve").unwrap_err();
    assert!(matches!(err, RegistryError::UnknownPartition(_)), "{err}");
    let text = err.to_string();
    assert!(text.contains("no partition `lve`"), "{text}");
    assert!(text.contains("`live`, `batch`"), "{text}");
    assert!(text.contains("did you mean `live`?"), "{text}");
    let err = registry.partition("nope", "live").unwrap_err();
    assert!(matches!(err, RegistryError::NotFound { .. }), "{err}");
}

#[test]
fn get_or_create_partitioned_creates_once_and_refuses_a_plain_config() {
    let registry = Registry::local();
    let a = registry.get_or_create_partitioned("p", DB).unwrap();
    let b = registry.get_or_create_partitioned("p", DB).unwrap();
    assert!(std::sync::Arc::ptr_eq(&a, &b));
    let err = registry
        .get_or_create_partitioned("plain", DomainConfig::new(4))
        .unwrap_err();
    assert!(matches!(err, RegistryError::NotPartitioned { .. }), "{err}");
    let err = registry
        .get_or_create("p", DomainConfig::new(4))
        .unwrap_err();
    assert!(matches!(err, RegistryError::Partitioned { .. }), "{err}");
}

#[test]
fn environment_overrides_one_setting_of_a_declared_partition() {
    let registry = registry_with(&[
        ("BULKHEAD_DB_PARTITIONS_LIVE_SHARE", "20"),
        ("BULKHEAD_DB_PARTITIONS_BATCH_SHARE", "25%"),
        ("BULKHEAD_DB_PARTITIONS_BATCH_BORROW", "0"),
        ("BULKHEAD_DB_PARTITIONS_LIVE_MAX_WAIT", "30ms"),
        ("BULKHEAD_DB_MAX_WAIT", "5ms"),
    ])
    .unwrap();
    let live = registry.partition("db", "live").unwrap();
    let batch = registry.partition("db", "batch").unwrap();
    assert_eq!(live.state().share, 20);
    assert_eq!(batch.state().share, 8); // 25% of 32
    assert_eq!(batch.state().may_hold, 8); // no borrowing
    assert_eq!(live.wait_budget(), MaxWait::from_millis(30)); // its own
    assert_eq!(batch.wait_budget(), MaxWait::from_millis(5)); // the domain's
    // The priority set in code survives the share's override.
    let config = registry.config("db").unwrap();
    assert_eq!(config.partitions[0].priority, 1);
    assert_eq!(config.partitions[0].share, Amount::Seats(20));
}

#[test]
fn a_variable_for_an_undeclared_partition_is_an_error_with_a_suggestion() {
    let err = registry_with(&[("BULKHEAD_DB_PARTITIONS_LIVEE_SHARE", "20")]).unwrap_err();
    let e = err.settings().expect("a settings error");
    assert_eq!(e.kind(), K::UnknownKey);
    assert_eq!(e.key(), "BULKHEAD_DB_PARTITIONS_LIVEE_SHARE");
    let text = err.to_string();
    assert!(text.contains("`live`, `batch`"), "{text}");
    assert!(
        text.contains("did you mean BULKHEAD_DB_PARTITIONS_LIVE_SHARE?"),
        "{text}"
    );

    // A compartment without partitions.
    let err = Registry::builder()
        .env(EnvSource::from_pairs([(
            "BULKHEAD_DATABASE_PARTITIONS_LIVE_SHARE",
            "2",
        )]))
        .build()
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("compartment `database` has no partitions"),
        "{err}"
    );
}

#[test]
fn a_misspelled_partition_setting_in_the_environment_is_an_error() {
    let err = registry_with(&[("BULKHEAD_DB_PARTITIONS_LIVE_SHAR", "20")]).unwrap_err();
    let e = err.settings().expect("a settings error");
    assert_eq!(e.kind(), K::UnknownKey);
    assert!(
        err.to_string()
            .contains("BULKHEAD_DB_PARTITIONS_LIVE_SHARE, which it nearly spells"),
        "{err}"
    );
}

#[test]
fn a_misspelled_compartment_in_a_partition_variable_is_an_error() {
    let err = Registry::builder()
        .env(EnvSource::from_pairs([(
            "BULKHEAD_DATABSE_PARTITIONS_LIVE_SHARE",
            "2",
        )]))
        .build()
        .unwrap_err();
    assert_eq!(err.settings().unwrap().kind(), K::UnknownKey);
    assert!(
        err.to_string()
            .contains("BULKHEAD_DATABASE_PARTITIONS_LIVE_SHARE: `database` is a registered"),
        "{err}"
    );
}

#[test]
fn malformed_amounts_in_the_environment_name_the_variable() {
    let table: &[(&str, &str, K)] = &[
        ("BULKHEAD_DB_PARTITIONS_LIVE_SHARE", "-1", K::Negative),
        ("BULKHEAD_DB_PARTITIONS_LIVE_SHARE", "150%", K::Overflow),
        ("BULKHEAD_DB_PARTITIONS_LIVE_SHARE", "-5%", K::Negative),
        ("BULKHEAD_DB_PARTITIONS_LIVE_SHARE", "half", K::NotANumber),
        ("BULKHEAD_DB_PARTITIONS_LIVE_LENDABLE", "%", K::NotANumber),
        ("BULKHEAD_DB_PARTITIONS_LIVE_PRIORITY", "256", K::Overflow),
        ("BULKHEAD_DB_PARTITIONS_LIVE_MAX_WAIT", "5", K::BadDuration),
        (
            "BULKHEAD_DB_PARTITIONS_LIVE_QUEUE_ORDER",
            "lif",
            K::UnknownQueueOrder,
        ),
    ];
    for &(var, value, kind) in table {
        let err = registry_with(&[(var, value)]).unwrap_err();
        let e = err
            .settings()
            .unwrap_or_else(|| panic!("{var}={value}: {err}"));
        assert_eq!((e.kind(), e.key()), (kind, var), "{var}={value}: {err}");
        assert!(err.to_string().contains(&format!("{value:?}")), "{err}");
    }
}

#[test]
fn shares_above_the_limit_are_cores_config_error() {
    let err = registry_with(&[("BULKHEAD_DB_PARTITIONS_BATCH_SHARE", "9")]).unwrap_err();
    assert!(
        matches!(
            err,
            RegistryError::Config(ConfigError::SharesExceedLimit { .. })
        ),
        "{err}"
    );
}

#[test]
fn an_adaptive_limit_and_compartment_wide_queue_settings_are_refused() {
    let registry = Registry::local();
    let err = registry
        .get_or_create_partitioned("a", DB.limit(LimitConfig::new(Algorithm::Aimd)))
        .unwrap_err();
    assert!(matches!(err, RegistryError::Unsupported { .. }), "{err}");
    assert!(err.to_string().contains("not supported yet"), "{err}");
    let err = registry
        .get_or_create_partitioned("b", DB.max_waiting(3))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("set max_waiting and queue_order on the partitions"),
        "{err}"
    );
    let err = registry
        .get_or_create_pool("c", DB.max_workers(2))
        .unwrap_err();
    assert!(err.to_string().contains("cannot be partitioned"), "{err}");
    let err = registry
        .create_scoped("d", DB, |config| {
            use bulkhead_std::scoped::{Opener, Scoped};
            Scoped::new(
                config,
                "r",
                Opener::blocking(|_| Ok::<_, std::io::Error>(())),
            )
        })
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("scoped compartment cannot be partitioned"),
        "{err}"
    );
}

#[test]
fn live_reconfigure_changes_settings_but_never_the_partitions() {
    let registry = registry_with(&[]).unwrap();
    let compartment = registry.get_partitioned("db").unwrap();
    let batch = registry.partition("db", "batch").unwrap();
    static BIGGER_PARTS: [PartitionConfig; 2] = [
        PartitionConfig::new("live", Amount::Seats(30)).priority(1),
        PartitionConfig::new("batch", Amount::Seats(10)).borrow(Amount::Seats(0)),
    ];
    const BIGGER: DomainConfig = DomainConfig::new(40).partitions(&BIGGER_PARTS);
    registry.reconfigure("db", BIGGER).unwrap();
    assert_eq!(compartment.state().max_concurrent, 40);
    assert_eq!((batch.state().share, batch.state().may_hold), (10, 10));
    // Shrinking: the shares shrink first, so they fit in between.
    registry.reconfigure("db", DB).unwrap();
    assert_eq!(compartment.state().max_concurrent, 32);
    assert_eq!(batch.state().share, 8);
    assert_eq!(registry.config("db").unwrap(), DB);

    static RENAMED_PARTS: [PartitionConfig; 2] = [
        PartitionConfig::new("live", Amount::Seats(24)),
        PartitionConfig::new("reports", Amount::Seats(8)),
    ];
    const RENAMED: DomainConfig = DomainConfig::new(32).partitions(&RENAMED_PARTS);
    let err = registry.reconfigure("db", RENAMED).unwrap_err();
    assert!(
        matches!(err, RegistryError::PartitionsChanged { .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("cannot be added, removed"),
        "{err}"
    );
    let fewer =
        DomainConfig::new(32).partitions_from([PartitionConfig::new("live", Amount::Seats(24))]);
    assert!(registry.reconfigure("db", fewer).is_err());
    let err = registry
        .reconfigure("db", DomainConfig::new(32))
        .unwrap_err();
    assert!(err.to_string().contains("keeps its partitions"), "{err}");
    // Shares that no longer fit are refused, and nothing changed.
    static TOO_MUCH_PARTS: [PartitionConfig; 2] = [
        PartitionConfig::new("live", Amount::Seats(30)),
        PartitionConfig::new("batch", Amount::Seats(8)),
    ];
    const TOO_MUCH: DomainConfig = DomainConfig::new(32).partitions(&TOO_MUCH_PARTS);
    let err = registry.reconfigure("db", TOO_MUCH).unwrap_err();
    assert!(matches!(err, RegistryError::Config(_)), "{err}");
    assert_eq!(registry.config("db").unwrap(), DB);
    assert_eq!(registry.partition("db", "live").unwrap().state().share, 24);
    // A plain compartment does not become partitioned live.
    let err = registry.reconfigure("database", DB).unwrap_err();
    assert!(
        err.to_string().contains("cannot become partitioned"),
        "{err}"
    );
    assert_eq!(registry.get("database").unwrap().state().max_concurrent, 10);
}

#[test]
fn blocking_waits_use_the_partitions_budget_and_are_handed_a_freed_seat() {
    static ONE_PARTS: [PartitionConfig; 2] = [
        PartitionConfig::new("a", Amount::Seats(1)).borrow(Amount::Seats(0)),
        PartitionConfig::new("b", Amount::Seats(1))
            .borrow(Amount::Seats(0))
            .max_wait(MaxWait::from_millis(2_000)),
    ];
    const ONE: DomainConfig = DomainConfig::new(2)
        .max_wait(MaxWait::from_millis(20))
        .partitions(&ONE_PARTS);
    let registry = Registry::local();
    registry.get_or_create_partitioned("w", ONE).unwrap();
    let a = registry.partition("w", "a").unwrap();
    let held = a.acquire_blocking().unwrap();
    let start = Instant::now();
    assert!(matches!(a.acquire_blocking(), Err(Error::Timeout { .. })));
    let waited = start.elapsed();
    assert!(waited >= Duration::from_millis(15), "{waited:?}");
    assert!(matches!(a.execute(|| ()), Err(Error::Timeout { .. })));
    assert_eq!(a.state().timed_out, 2);
    drop(held);
    assert_eq!(a.execute(|| 7).unwrap(), 7);

    // b waits up to 2 s; another thread frees its seat after 30 ms.
    let b = registry.partition("w", "b").unwrap();
    let held = b.try_acquire().unwrap();
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        drop(held);
    });
    let start = Instant::now();
    let seat = b.acquire_blocking().unwrap();
    assert!(start.elapsed() < Duration::from_millis(1_500));
    releaser.join().unwrap();
    drop(seat);
}

#[test]
fn the_timer_wait_uses_the_budget_too() {
    static T_PARTS: [PartitionConfig; 1] = [PartitionConfig::new("only", Amount::Seats(1))];
    const T: DomainConfig = DomainConfig::new(1)
        .max_wait(MaxWait::from_millis(10))
        .partitions(&T_PARTS);
    let registry = Registry::local();
    registry.get_or_create_partitioned("t", T).unwrap();
    let only = registry.partition("t", "only").unwrap();
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(async {
            let seat = only.acquire_timeout(tokio::time::sleep).await.unwrap();
            let err = only.acquire_timeout(tokio::time::sleep).await.unwrap_err();
            assert!(matches!(err, Error::Timeout { .. }), "{err}");
            drop(seat);
            let seat = only.acquire_many_timeout(1, tokio::time::sleep).await;
            assert_eq!(seat.unwrap().weight(), 1);
        });
}

#[cfg(feature = "config-file")]
mod file {
    use super::*;

    const TOML: &str = r#"
        [domains.db]
        max_concurrent = 32
        max_wait = "20ms"

        [domains.db.partitions.live]
        share = "75%"
        priority = 1
        max_wait = "5s"

        [domains.db.partitions.batch]
        share = 8
        borrow = 16
        lendable = "50%"
        max_wait = "1s"
        max_waiting = 4
        queue_order = "lifo"
    "#;

    fn toml_error(text: &str) -> RegistryError {
        Registry::builder()
            .without_env()
            .toml_str(text)
            .build()
            .unwrap_err()
    }

    #[test]
    fn toml_partitions_build_working_partitions() {
        let registry = Registry::builder()
            .without_env()
            .toml_str(TOML)
            .build()
            .unwrap();
        let live = registry.partition("db", "live").unwrap();
        let batch = registry.partition("db", "batch").unwrap();
        assert_eq!((live.state().share, live.state().reserved), (24, 0));
        assert_eq!((batch.state().share, batch.state().reserved), (8, 4));
        assert_eq!(batch.state().may_hold, 24);
        assert_eq!(live.wait_budget(), MaxWait::from_millis(5_000));
        assert_eq!(batch.wait_budget(), MaxWait::from_millis(1_000));
        assert_eq!(
            registry.config("db").unwrap().max_wait,
            MaxWait::from_millis(20)
        );
        let config = registry.config("db").unwrap();
        let b = config
            .partitions
            .iter()
            .find(|p| p.name == "batch")
            .unwrap();
        assert_eq!(
            (b.max_waiting, b.queue_order),
            (Some(4), bulkhead_std::QueueOrder::Lifo)
        );
        borrow_then_reclaim(&registry, &live, &batch);
    }

    #[test]
    fn the_example_file_builds() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/partitions.toml");
        let registry = Registry::builder()
            .without_env()
            .toml_file(path)
            .build()
            .unwrap();
        let batch = registry.partition("db", "batch").unwrap();
        let s = batch.state();
        assert_eq!((s.share, s.reserved, s.may_hold), (8, 4, 24));
        assert_eq!(registry.partition("db", "live").unwrap().state().share, 24);
    }

    #[test]
    fn precedence_is_code_then_file_then_environment() {
        // Code declares the partitions; the file's tables replace them
        // whole; a variable overrides one setting.
        let registry = Registry::builder()
            .env(EnvSource::from_pairs([(
                "BULKHEAD_DB_PARTITIONS_BATCH_PRIORITY",
                "3",
            )]))
            .toml_str(TOML)
            .build()
            .unwrap();
        registry.get_or_create_partitioned("db", DB).unwrap();
        let config = registry.config("db").unwrap();
        let names: Vec<&str> = config.partitions.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["live", "batch"]); // the file's, in its order
        let batch = &config.partitions[1];
        assert_eq!(batch.priority, 3); // the environment's
        assert_eq!(batch.lendable, Some(Amount::Percent(50))); // the file's
    }

    #[test]
    fn a_misspelled_partition_key_names_its_path_and_the_key_meant() {
        let err = toml_error(
            "[domains.db]\nmax_concurrent = 4\n[domains.db.partitions.live]\nshare = 2\nborow = 1\n",
        );
        let e = err.settings().unwrap();
        assert_eq!(e.kind(), K::UnknownKey);
        assert_eq!(e.key(), "domains.db.partitions.live.borow");
        assert!(err.to_string().contains("did you mean borrow?"), "{err}");
    }

    #[test]
    fn malformed_partition_values_in_the_file() {
        let table: &[(&str, &str, K)] = &[
            (r#"share = "75""#, "share", K::BadAmount),
            (r#"share = "150%""#, "share", K::Overflow),
            ("share = -1", "share", K::Negative),
            ("share = 1.5", "share", K::BadAmount),
            ("share = 2\nlendable = \"x%\"", "lendable", K::NotANumber),
            ("share = 2\npriority = 300", "priority", K::Overflow),
            (
                "share = 2\nqueue_order = \"LIFO\"",
                "queue_order",
                K::UnknownQueueOrder,
            ),
            ("priority = 1", "share", K::MissingShare),
        ];
        for &(body, key, kind) in table {
            let text =
                format!("[domains.db]\nmax_concurrent = 4\n[domains.db.partitions.p]\n{body}\n");
            let err = toml_error(&text);
            let e = err.settings().unwrap_or_else(|| panic!("{body}: {err}"));
            assert_eq!(
                (e.kind(), e.key()),
                (kind, format!("domains.db.partitions.p.{key}").as_str()),
                "{body}: {err}"
            );
        }
        let err = toml_error(
            "[domains.db]\nmax_concurrent = 4\n[domains.db.partitions.p]\nshare = \"75\"\n",
        );
        assert!(err.to_string().contains("percent sign"), "{err}");
    }

    #[test]
    fn the_default_table_holds_no_partitions() {
        let err = toml_error("[default]\n[default.partitions.p]\nshare = 1\n");
        assert_eq!(err.settings().unwrap().key(), "default.partitions");
    }

    #[test]
    fn an_adaptive_limit_on_a_partitioned_domain_in_the_file_is_refused() {
        let err = toml_error(
            "[domains.db]\nmax_concurrent = 4\nlimit = { algorithm = \"aimd\" }\n\
             [domains.db.partitions.p]\nshare = 2\n",
        );
        assert!(err.to_string().contains("not supported yet"), "{err}");
    }
}

#[cfg(feature = "serde")]
#[test]
fn serde_round_trips_partitions_as_the_file_writes_them() {
    let json = serde_json::to_string(&DB).unwrap();
    assert!(
        json.contains(r#""partitions":{"live":{"share":24,"priority":1"#),
        "{json}"
    );
    assert!(json.contains(r#""batch":{"share":8,"borrow":16"#), "{json}");
    let back: DomainConfig = serde_json::from_str(&json).unwrap();
    // In the order written, both ways: live, then batch.
    let names: Vec<&str> = back.partitions.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["live", "batch"]);
    assert_eq!(back, DB);

    let text = r#"{"max_concurrent": 10, "partitions": {"a": {"share": "50%", "lendable": "10%", "max_wait": "5ms"}}}"#;
    let config: DomainConfig = serde_json::from_str(text).unwrap();
    let a = &config.partitions[0];
    assert_eq!(
        (a.share, a.lendable, a.max_wait),
        (
            Amount::Percent(50),
            Some(Amount::Percent(10)),
            Some(MaxWait::from_millis(5))
        )
    );
    let again: DomainConfig =
        serde_json::from_str(&serde_json::to_string(&config).unwrap()).unwrap();
    assert_eq!(again, config);
    // No partitions: nothing written, as before.
    assert!(
        !serde_json::to_string(&DomainConfig::new(3))
            .unwrap()
            .contains("partitions")
    );

    for (bad, says) in [
        (
            r#"{"max_concurrent": 1, "partitions": {"a": {"share": "75"}}}"#,
            "percent sign",
        ),
        (
            r#"{"max_concurrent": 1, "partitions": {"a": {"share": "150%"}}}"#,
            "0% to 100%",
        ),
        (
            r#"{"max_concurrent": 1, "partitions": {"a": {"share": -1}}}"#,
            "partitions",
        ),
        (
            r#"{"max_concurrent": 1, "partitions": {"a": {"shar": 1}}}"#,
            "shar",
        ),
    ] {
        let err = serde_json::from_str::<DomainConfig>(bad)
            .unwrap_err()
            .to_string();
        assert!(err.contains(says), "{bad}: {err}");
    }
}

/// The compartment's snapshot (and so `bulkhead_admitted_total`) counts
/// the partitions' admissions, through the registry's lock.
#[test]
fn a_partitioned_compartment_counts_its_admissions() {
    let registry = registry_with(&[]).unwrap();
    let live = registry.partition("db", "live").unwrap();
    drop(live.try_acquire().unwrap());
    assert_eq!(live.execute(|| 1).unwrap(), 1);
    assert_eq!(registry.all_states()["db"].admitted, 2);
}
