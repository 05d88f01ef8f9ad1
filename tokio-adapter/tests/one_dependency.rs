//! A tokio service that depends on bulkhead-tokio alone: the registry, its
//! settings file, its metrics and serde support are all reached through
//! `bulkhead_tokio::…` paths, with this crate's features (`config-file`,
//! `metrics`, `serde`) forwarded to bulkhead-std.
//!
//! Nothing here names `bulkhead_std`: a path that only bulkhead-std
//! exports would not compile for a user whose `Cargo.toml` lists
//! bulkhead-tokio only.

use std::time::Duration;

use bulkhead_tokio::prelude::*;
use bulkhead_tokio::registry::{Registry, RegistryError, SettingsErrorKind};
use bulkhead_tokio::{Error, MaxWait};

/// The settings a service keeps next to its binary.
const SETTINGS: &str = r#"
[domains.database]
max_concurrent = 1
max_wait = "50ms"
"#;

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_registry_from_toml_waits_its_configured_budget_on_tokios_clock() {
    let registry = Registry::builder()
        .without_env()
        .toml_str(SETTINGS)
        .build()
        .unwrap();
    let database = registry.get("database").unwrap();
    assert_eq!(database.state().max_concurrent, 1);

    let seat = registry.acquire_within("database").await.unwrap();
    let started = tokio::time::Instant::now();
    let err = registry.acquire_within("database").await.unwrap_err();
    assert!(
        matches!(err, RegistryError::Rejected(Error::Timeout { .. })),
        "{err:?}"
    );
    // The file's budget, measured on tokio's (paused) clock.
    assert_eq!(started.elapsed(), Duration::from_millis(50));
    drop(seat);
    assert_eq!(
        registry
            .run_within("database", async { Ok::<_, ()>(7) })
            .await
            .unwrap(),
        Ok(7)
    );
}

#[test]
fn a_mistyped_key_in_the_file_is_a_clear_error() {
    let err = Registry::builder()
        .without_env()
        .toml_str("[domains.database]\nmax_concurent = 1\n")
        .build()
        .unwrap_err();
    assert_eq!(
        err.settings().unwrap().kind(),
        SettingsErrorKind::UnknownKey
    );
    assert!(err.to_string().contains("max_concurent"), "{err}");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_zero_budget_in_the_file_fails_fast() {
    let registry = Registry::builder()
        .without_env()
        .toml_str("[domains.cache]\nmax_concurrent = 1\nmax_wait = \"0\"\n")
        .build()
        .unwrap();
    let _seat = registry.acquire_within("cache").await.unwrap();
    let started = tokio::time::Instant::now();
    let err = registry.acquire_within("cache").await.unwrap_err();
    assert!(
        matches!(err, RegistryError::Rejected(Error::Full { .. })),
        "{err:?}"
    );
    assert_eq!(started.elapsed(), Duration::ZERO);
}

#[cfg(feature = "metrics")]
#[test]
fn the_metrics_module_is_reachable_from_this_crate() {
    // `describe` registers every series' unit and help text; with no
    // recorder installed it is a no-op, which is all this path check needs.
    bulkhead_tokio::metrics::describe();
}

#[cfg(feature = "serde")]
#[test]
fn domain_settings_round_trip_through_serde() {
    use bulkhead_tokio::registry::DomainConfig;
    let config = DomainConfig::new(8).max_wait(MaxWait::from_millis(20));
    let text = serde_json::to_string(&config).unwrap();
    let back: DomainConfig = serde_json::from_str(&text).unwrap();
    assert_eq!(back, config);
}
