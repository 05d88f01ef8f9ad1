//! Registry settings: environment and TOML file, precedence, and a table
//! of malformed inputs with their exact error kind and key.

use bulkhead_std::MaxWait;

use bulkhead_std::registry::{
    DomainConfig, EnvSource, Registry, RegistryError, SettingsErrorKind as K,
};
use bulkhead_std::{Admission, MAX_CONCURRENT_LIMIT};

fn env_error(var: &str, value: &str) -> RegistryError {
    Registry::builder()
        .env(EnvSource::from_pairs([(var, value)]))
        .build()
        .unwrap_err()
}

#[test]
fn malformed_environment_values_name_the_variable() {
    let table: &[(&str, &str, K)] = &[
        ("BULKHEAD_DATABASE_MAX_CONCURRENT", "ten", K::NotANumber),
        ("BULKHEAD_DATABASE_MAX_CONCURRENT", "", K::NotANumber),
        ("BULKHEAD_DATABASE_MAX_CONCURRENT", "1.5", K::NotANumber),
        ("BULKHEAD_DATABASE_MAX_CONCURRENT", "-3", K::Negative),
        ("BULKHEAD_DATABASE_MAX_CONCURRENT", "0", K::Zero),
        (
            "BULKHEAD_DATABASE_MAX_CONCURRENT",
            "99999999999999999999999",
            K::Overflow,
        ),
        (
            "BULKHEAD_DATABASE_MAX_CONCURRENT",
            "5000000000",
            K::Overflow,
        ),
        ("BULKHEAD_CACHE_MAX_WAIT_MS", "soon", K::NotANumber),
        ("BULKHEAD_CACHE_MAX_WAIT_MS", "-1", K::Negative),
        (
            "BULKHEAD_CACHE_MAX_WAIT_MS",
            "18446744073709551616",
            K::Overflow,
        ),
        ("BULKHEAD_EXTERNAL_API_MAX_WAITING", "lots", K::NotANumber),
        ("BULKHEAD_EXTERNAL_API_MAX_WAITING", "-10", K::Negative),
        // One above MAX_WAITING_LIMIT (2^31 - 2): the compartment keeps
        // it in 31 bits.
        (
            "BULKHEAD_EXTERNAL_API_MAX_WAITING",
            "2147483647",
            K::Overflow,
        ),
        ("BULKHEAD_MESSAGE_QUEUE_MAX_WORKERS", "0", K::Zero),
        ("BULKHEAD_MESSAGE_QUEUE_MAX_WORKERS", "5000", K::Overflow),
        (
            "BULKHEAD_MESSAGE_QUEUE_MAX_WORKERS",
            "4 threads",
            K::NotANumber,
        ),
        ("BULKHEAD_DATABASE_ADMISSION", "lifo", K::UnknownWord),
        ("BULKHEAD_DATABASE_ADMISSION", "", K::UnknownWord),
        ("BULKHEAD_MAX_CONCURRENT", "0", K::Zero),
        ("BULKHEAD_MAX_CONCURRENT", "-0", K::Negative),
        ("BULKHEAD_ADMISSION", "fair", K::UnknownWord),
    ];
    for &(var, value, kind) in table {
        let err = env_error(var, value);
        let settings = err
            .settings()
            .unwrap_or_else(|| panic!("{var}={value}: {err:?}"));
        assert_eq!(settings.kind(), kind, "{var}={value}: {err}");
        assert_eq!(settings.key(), var);
        assert_eq!(settings.value(), value);
        let message = err.to_string();
        assert!(message.contains(var), "{message}");
        assert!(message.contains(&format!("{value:?}")), "{message}");
        assert!(message.contains("expected"), "{message}");
    }
}

#[test]
fn exact_messages() {
    assert_eq!(
        env_error("BULKHEAD_DATABASE_MAX_CONCURRENT", "-3").to_string(),
        format!(
            "bulkhead setting `BULKHEAD_DATABASE_MAX_CONCURRENT` = \"-3\" is negative; \
             expected a whole number of seats from 1 to {MAX_CONCURRENT_LIMIT}"
        )
    );
    assert_eq!(
        env_error("BULKHEAD_CACHE_ADMISSION", "fair").to_string(),
        "bulkhead setting `BULKHEAD_CACHE_ADMISSION` = \"fair\" is not a known admission mode; \
         expected `fifo`, `barging` or `bounded_barging`"
    );
    // Newest first is a queue order: the message points there.
    assert_eq!(
        env_error("BULKHEAD_CACHE_ADMISSION", "lifo").to_string(),
        "bulkhead setting `BULKHEAD_CACHE_ADMISSION` = \"lifo\" is not a known admission mode; \
         expected `fifo`, `barging` or `bounded_barging`; newest first is a queue order, not \
         an admission mode: set BULKHEAD_CACHE_QUEUE_ORDER to `lifo` instead"
    );
}

#[test]
fn bounded_barging_is_read_from_the_environment() {
    let env = EnvSource::from_pairs([("BULKHEAD_DATABASE_ADMISSION", " Bounded_Barging ")]);
    let registry = Registry::builder().env(env).build().unwrap();
    assert_eq!(
        registry.config("database").unwrap().admission,
        Admission::BoundedBarging
    );
    assert_eq!(
        registry.get("database").unwrap().admission(),
        Admission::BoundedBarging
    );
}

#[test]
fn a_bad_variable_for_a_dynamic_name_fails_its_creation() {
    let registry = Registry::builder()
        .env(EnvSource::from_pairs([(
            "BULKHEAD_TENANT_7_MAX_CONCURRENT",
            "x",
        )]))
        .build()
        .unwrap();
    let err = registry
        .get_or_create("tenant-7", DomainConfig::new(1))
        .unwrap_err();
    assert_eq!(
        err.settings().unwrap().key(),
        "BULKHEAD_TENANT_7_MAX_CONCURRENT"
    );
    assert!(registry.get("tenant-7").is_err());
}

#[test]
fn env_values_apply_and_names_map_to_upper_snake() {
    let env = EnvSource::from_pairs([
        ("BULKHEAD_DATABASE_MAX_CONCURRENT", " 32 "),
        ("BULKHEAD_DATABASE_MAX_WAITING", "0"),
        ("BULKHEAD_DATABASE_MAX_WAIT_MS", "250"),
        ("BULKHEAD_DATABASE_ADMISSION", "Barging"),
        ("BULKHEAD_TENANT_42_EU_MAX_CONCURRENT", "4"),
        ("BULKHEAD_MAX_CONCURRENT", "6"),
    ]);
    let registry = Registry::builder().env(env).build().unwrap();
    let db = registry.config("database").unwrap();
    assert_eq!(db.max_concurrent, 32);
    assert_eq!(db.max_waiting, Some(0));
    assert_eq!(db.max_wait, MaxWait::from_millis(250));
    assert_eq!(db.admission, Admission::Barging);
    assert_eq!(
        registry.get("database").unwrap().admission(),
        Admission::Barging
    );
    let tenant = registry
        .get_or_create("tenant-42.eu", DomainConfig::new(1))
        .unwrap();
    assert_eq!(tenant.state().max_concurrent, 4);
    let other = registry.get_or_create_default("other").unwrap();
    assert_eq!(other.state().max_concurrent, 6);
}

#[test]
fn the_switch_turns_environment_reading_off() {
    let env = EnvSource::from_pairs([("BULKHEAD_DATABASE_MAX_CONCURRENT", "not even a number")]);
    let registry = Registry::builder().env(env).without_env().build().unwrap();
    assert_eq!(registry.get("database").unwrap().state().max_concurrent, 10);
}

#[cfg(feature = "config-file")]
mod file {
    use super::*;

    fn file_error(text: &str) -> RegistryError {
        Registry::builder()
            .without_env()
            .toml_str(text)
            .build()
            .unwrap_err()
    }

    #[test]
    fn malformed_file_values_name_the_key() {
        let table: &[(&str, K, &str)] = &[
            (
                "[domains.database]\nmax_concurrent = \"ten\"",
                K::NotANumber,
                "domains.database.max_concurrent",
            ),
            (
                "[domains.database]\nmax_concurrent = 1.5",
                K::NotANumber,
                "domains.database.max_concurrent",
            ),
            (
                "[domains.database]\nmax_concurrent = -2",
                K::Negative,
                "domains.database.max_concurrent",
            ),
            (
                "[domains.database]\nmax_concurrent = 0",
                K::Zero,
                "domains.database.max_concurrent",
            ),
            (
                "[domains.database]\nmax_concurrent = 9223372036854775807",
                K::Overflow,
                "domains.database.max_concurrent",
            ),
            (
                "[domains.cache]\nmax_wait_ms = -5",
                K::Negative,
                "domains.cache.max_wait_ms",
            ),
            (
                "[domains.cache]\nmax_waiting = true",
                K::NotANumber,
                "domains.cache.max_waiting",
            ),
            (
                "[domains.cache]\nmax_workers = 0",
                K::Zero,
                "domains.cache.max_workers",
            ),
            (
                "[domains.cache]\nadmission = \"lifo\"",
                K::UnknownWord,
                "domains.cache.admission",
            ),
            (
                "[domains.cache]\nadmission = 1",
                K::UnknownWord,
                "domains.cache.admission",
            ),
            (
                "[default]\nmax_concurrent = 0",
                K::Zero,
                "default.max_concurrent",
            ),
            (
                "[default]\nadmission = \"FIFO!\"",
                K::UnknownWord,
                "default.admission",
            ),
        ];
        for &(text, kind, key) in table {
            let err = file_error(text);
            let settings = err.settings().unwrap_or_else(|| panic!("{text}: {err:?}"));
            assert_eq!(settings.kind(), kind, "{text}: {err}");
            assert_eq!(settings.key(), key, "{text}");
            assert!(err.to_string().contains(key), "{err}");
        }
    }

    #[test]
    fn unknown_keys_and_bad_syntax_are_errors() {
        let table: &[(&str, K, &str)] = &[
            (
                "[domains.cache]\nmax_concurent = 3",
                K::UnknownKey,
                "max_concurent",
            ),
            ("[default]\ntimeout = 3", K::UnknownKey, "timeout"),
            ("[registry]\nmax_entries = 3", K::UnknownKey, "registry"),
            ("max_concurrent = 3", K::UnknownKey, "max_concurrent"),
            (
                "[domains.cache\nmax_concurrent = 3",
                K::Syntax,
                "the TOML string",
            ),
        ];
        for &(text, kind, named) in table {
            let err = file_error(text);
            assert_eq!(err.settings().unwrap().kind(), kind, "{text}: {err}");
            assert!(err.to_string().contains(named), "{text}: {err}");
        }
        let missing = Registry::builder()
            .toml_file("/nonexistent/bulkhead.toml")
            .build();
        let err = missing.unwrap_err();
        assert_eq!(err.settings().unwrap().kind(), K::Io);
        assert!(err.to_string().contains("/nonexistent/bulkhead.toml"));
    }

    #[test]
    fn precedence_is_code_then_file_then_env() {
        let text = "[default]\nmax_concurrent = 20\nmax_waiting = 5\n\
                    [domains.database]\nmax_concurrent = 30\nmax_wait_ms = 40\n\
                    [domains.cache]\nmax_concurrent = 31\n\
                    [domains.reports]\nmax_waiting = 7\n";
        let env = EnvSource::from_pairs([
            ("BULKHEAD_DATABASE_MAX_CONCURRENT", "50"),
            ("BULKHEAD_MAX_CONCURRENT", "60"),
        ]);
        let registry = Registry::builder()
            .builtin("database", DomainConfig::new(11).max_waiting(3))
            .builtin("external_api", DomainConfig::new(12))
            .default_config(DomainConfig::new(13))
            .toml_str(text)
            .env(env)
            .build()
            .unwrap();
        // env > file > code, field by field.
        let db = registry.config("database").unwrap();
        assert_eq!(db.max_concurrent, 50); // env
        assert_eq!(db.max_wait, MaxWait::from_millis(40)); // file
        assert_eq!(db.max_waiting, Some(3)); // code
        assert_eq!(registry.config("cache").unwrap().max_concurrent, 31); // file
        assert_eq!(registry.config("external_api").unwrap().max_concurrent, 12); // code
        // The template: env (60) > file [default] (20) > code (13).
        let t = registry.get_or_create_default("t").unwrap();
        assert_eq!(t.state().max_concurrent, 60);
        assert_eq!(registry.config("t").unwrap().max_waiting, Some(5));
        // A named dynamic compartment: file > code.
        registry
            .get_or_create("reports", DomainConfig::new(2))
            .unwrap();
        let reports = registry.config("reports").unwrap();
        assert_eq!((reports.max_concurrent, reports.max_waiting), (2, Some(7)));
        // reconfigure is an explicit live change and wins over all three.
        registry
            .reconfigure("database", DomainConfig::new(4))
            .unwrap();
        assert_eq!(registry.get("database").unwrap().state().max_concurrent, 4);
    }

    #[test]
    fn a_file_on_disk_is_read() {
        let path = std::env::temp_dir().join(format!("bulkhead-{}.toml", std::process::id()));
        std::fs::write(
            &path,
            "[domains.\"database:replica\"]\nmax_concurrent = 3\n",
        )
        .unwrap();
        let registry = Registry::builder()
            .without_env()
            .toml_file(&path)
            .build()
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(
            registry.database("replica").unwrap().state().max_concurrent,
            3
        );
    }
}

// === durations with units, misspelled variables, differing settings ===

#[test]
fn wait_budgets_take_units_in_env_and_file_and_ms_keys_still_work() {
    let env = EnvSource::from_pairs([
        ("BULKHEAD_DATABASE_MAX_WAIT", "200ms"),
        ("BULKHEAD_CACHE_MAX_WAIT", "1.5s"),
        ("BULKHEAD_EXTERNAL_API_MAX_WAIT_MS", "30"),
        ("BULKHEAD_MESSAGE_QUEUE_MAX_WAIT", "forever"),
    ]);
    let registry = Registry::builder().env(env).build().unwrap();
    let wait = |name| registry.config(name).unwrap().max_wait;
    assert_eq!(wait("database"), MaxWait::from_millis(200));
    assert_eq!(wait("cache"), MaxWait::from_millis(1500));
    assert_eq!(wait("external_api"), MaxWait::from_millis(30));
    assert_eq!(wait("message_queue"), MaxWait::Forever);
    assert!(registry.unknown_variables().is_empty());
}

#[cfg(feature = "config-file")]
#[test]
fn the_file_takes_durations_with_units_and_refuses_ambiguous_ones() {
    let ok = "[domains.database]\nmax_wait = \"2s\"\n[domains.cache]\nmax_wait = 0\n";
    let registry = Registry::builder()
        .without_env()
        .toml_str(ok)
        .build()
        .unwrap();
    assert_eq!(
        registry.config("database").unwrap().max_wait,
        MaxWait::from_millis(2000)
    );
    assert_eq!(
        registry.config("cache").unwrap().max_wait,
        MaxWait::FailFast
    );
    for (text, kind, key) in [
        (
            "[domains.cache]\nmax_wait = \"250\"",
            K::BadDuration,
            "domains.cache.max_wait",
        ),
        (
            "[domains.cache]\nmax_wait = 250",
            K::BadDuration,
            "domains.cache.max_wait",
        ),
        (
            "[domains.cache]\nmax_wait = \"2 fortnights\"",
            K::BadDuration,
            "domains.cache.max_wait",
        ),
        (
            "[domains.cache]\nmax_wait = \"2s\"\nmax_wait_ms = 5",
            K::Conflict,
            "domains.cache.max_wait_ms",
        ),
    ] {
        let err = Registry::builder()
            .without_env()
            .toml_str(text)
            .build()
            .unwrap_err();
        let err = err.settings().unwrap();
        assert_eq!((err.kind(), err.key()), (kind, key), "{text}: {err}");
    }
}

#[test]
fn a_misspelled_variable_is_reported_with_the_closest_valid_one() {
    let env = EnvSource::from_pairs([
        ("BULKHEAD_DATABASE_MAX_CONCURENT", "2"),
        ("BULKHEAD_CACHE_ADMISION", "barging"),
        ("BULKHEAD_REPORTS_COLOUR", "blue"),
        ("BULKHEAD_DATABASE_MAX_CONCURRENT", "3"),
    ]);
    let registry = Registry::builder()
        .env(env.clone())
        .allow_unknown_variables()
        .build()
        .unwrap();
    let unknown: Vec<_> = registry
        .unknown_variables()
        .iter()
        .map(|u| (u.variable().to_owned(), u.suggestion().map(str::to_owned)))
        .collect();
    assert_eq!(
        unknown,
        [
            (
                "BULKHEAD_CACHE_ADMISION".to_owned(),
                Some("BULKHEAD_CACHE_ADMISSION".to_owned())
            ),
            (
                "BULKHEAD_DATABASE_MAX_CONCURENT".to_owned(),
                Some("BULKHEAD_DATABASE_MAX_CONCURRENT".to_owned())
            ),
            ("BULKHEAD_REPORTS_COLOUR".to_owned(), None),
        ]
    );
    // The valid one still applies, and a warning names each unknown one.
    assert_eq!(registry.get("database").unwrap().state().max_concurrent, 3);
    let warnings = capture_warnings(|| {
        drop(
            Registry::builder()
                .env(env.clone())
                .allow_unknown_variables()
                .build(),
        )
    });
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    assert!(
        warnings[1].contains("did you mean BULKHEAD_DATABASE_MAX_CONCURRENT"),
        "{warnings:?}"
    );
    // By default the build refuses the first, with its own value.
    let err = Registry::builder().env(env).build().unwrap_err();
    let err = err.settings().unwrap();
    assert_eq!(
        (err.kind(), err.key(), err.value()),
        (K::UnknownKey, "BULKHEAD_CACHE_ADMISION", "barging")
    );
}

#[test]
fn get_or_create_with_other_settings_keeps_the_existing_one_and_says_so() {
    let registry = Registry::local();
    let warnings = capture_warnings(|| {
        let db = registry
            .get_or_create("database", DomainConfig::new(4))
            .unwrap();
        assert_eq!(db.state().max_concurrent, 10, "the built-in wins");
        registry
            .get_or_create("database", DomainConfig::new(4))
            .unwrap(); // said once
        registry
            .get_or_create("reports", DomainConfig::new(2))
            .unwrap();
        registry
            .get_or_create("reports", DomainConfig::new(2))
            .unwrap(); // same: silent
        let reports = registry
            .get_or_create("reports", DomainConfig::new(9))
            .unwrap();
        assert_eq!(reports.state().max_concurrent, 2, "the first settings win");
    });
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("the built-in"), "{warnings:?}");
    assert!(
        warnings[1].contains("get_or_create(\"reports\")"),
        "{warnings:?}"
    );
}

/// The messages of the `WARN` events `f` emits on this thread.
fn capture_warnings(f: impl FnOnce()) -> Vec<String> {
    use std::sync::{Arc, Mutex};
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

/// A misspelled key anywhere in the file is reported like every other
/// file error: by its full key path, with the source and the key it
/// nearly spells.
#[cfg(feature = "config-file")]
#[test]
fn a_misspelled_file_key_names_its_path_its_source_and_the_key_it_nearly_spells() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "[domains.payments]\nmax_concurent = 2\n",
            "domains.payments.max_concurent",
            "did you mean max_concurrent?",
        ),
        (
            "[default]\nmax_wiat = \"1s\"\n",
            "default.max_wiat",
            "did you mean max_wait?",
        ),
        (
            "[domains.search]\nlimit = { algoritm = \"aimd\" }\n",
            "domains.search.limit.algoritm",
            "did you mean algorithm?",
        ),
        (
            "[domain.payments]\nmax_concurrent = 2\n",
            "domain",
            "did you mean domains?",
        ),
    ];
    for &(text, key, hint) in cases {
        let err = Registry::builder()
            .without_env()
            .toml_str(text)
            .build()
            .unwrap_err();
        let settings = err.settings().unwrap();
        assert_eq!(
            (settings.kind(), settings.key()),
            (K::UnknownKey, key),
            "{err}"
        );
        let message = err.to_string();
        assert!(message.contains(hint), "{message}");
        assert!(message.contains("the TOML string"), "{message}");
        assert!(!message.contains("unknown field"), "{message}");
    }
    // A file names itself by its path.
    let path = std::env::temp_dir().join(format!("bulkhead-typo-{}.toml", std::process::id()));
    std::fs::write(&path, "[domains.payments]\nmax_concurent = 2\n").unwrap();
    let err = Registry::builder()
        .without_env()
        .toml_file(&path)
        .build()
        .unwrap_err();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(
        err.settings().unwrap().key(),
        "domains.payments.max_concurent"
    );
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
    assert!(
        err.to_string().contains("did you mean max_concurrent?"),
        "{err}"
    );
}

/// A variable whose name segment nearly spells a registered compartment
/// (and is not one) is a typo, refused like a misspelled setting.
#[test]
fn a_misspelled_compartment_in_a_variable_is_refused_or_listed() {
    let env = EnvSource::from_pairs([("BULKHEAD_DATABSE_MAX_CONCURRENT", "5")]);
    let err = Registry::builder().env(env.clone()).build().unwrap_err();
    let settings = err.settings().unwrap();
    assert_eq!(
        (settings.kind(), settings.key(), settings.value()),
        (K::UnknownKey, "BULKHEAD_DATABSE_MAX_CONCURRENT", "5")
    );
    assert!(err.to_string().contains("`database`"), "{err}");
    assert!(
        err.to_string().contains("BULKHEAD_DATABASE_MAX_CONCURRENT"),
        "{err}"
    );

    let registry = Registry::builder()
        .env(env)
        .allow_unknown_variables()
        .build()
        .unwrap();
    let unknown = registry.unknown_variables();
    assert_eq!(unknown.len(), 1);
    assert_eq!(unknown[0].variable(), "BULKHEAD_DATABSE_MAX_CONCURRENT");
    assert_eq!(
        unknown[0].suggestion(),
        Some("BULKHEAD_DATABASE_MAX_CONCURRENT")
    );
    assert_eq!(registry.get("database").unwrap().state().max_concurrent, 10);

    // Names that are not near a registered one, and children of one
    // (`database:replica`), are left for the code to create.
    let env = EnvSource::from_pairs([
        ("BULKHEAD_REPORTS_MAX_CONCURRENT", "3"),
        ("BULKHEAD_DATABASE_R1_MAX_CONCURRENT", "4"),
        ("BULKHEAD_CACHE_X_MAX_CONCURRENT", "4"),
    ]);
    let registry = Registry::builder().env(env).build().unwrap();
    assert!(registry.unknown_variables().is_empty());
}

/// The file's compartments count as registered names for the check.
#[cfg(feature = "config-file")]
#[test]
fn a_variable_misspelling_a_compartment_the_file_declares_is_refused() {
    let env = EnvSource::from_pairs([("BULKHEAD_PAYMNETS_MAX_CONCURRENT", "5")]);
    let err = Registry::builder()
        .env(env)
        .toml_str("[domains.payments]\nmax_concurrent = 2\n")
        .build()
        .unwrap_err();
    assert_eq!(
        err.settings().unwrap().key(),
        "BULKHEAD_PAYMNETS_MAX_CONCURRENT"
    );
    assert!(err.to_string().contains("`payments`"), "{err}");
}
