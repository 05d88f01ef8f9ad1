//! A new user's papercuts with partitioned registry compartments: the
//! order the file declares partitions in, the environment's spelling,
//! names that clash as variables, amounts written the wrong way, and a
//! kept partition handle across a live reconfiguration.

use std::time::{Duration, Instant};

use bulkhead_std::bulkhead_core::partition::{Amount, PartitionConfig};
use bulkhead_std::registry::{DomainConfig, EnvSource, Registry, RegistryError};
use bulkhead_std::{Error, MaxWait};

static DB_PARTS: [PartitionConfig; 2] = [
    PartitionConfig::new("live", Amount::Seats(24)).priority(1),
    PartitionConfig::new("batch", Amount::Seats(8)).borrow(Amount::Seats(16)),
];
const DB: DomainConfig = DomainConfig::new(32).partitions(&DB_PARTS);

/// The error of building a registry reading `env`, then creating `db`
/// from [`DB`].
fn env_error(env: &[(&str, &str)]) -> RegistryError {
    let built = Registry::builder()
        .env(EnvSource::from_pairs(env.iter().copied()))
        .build();
    match built {
        Ok(registry) => registry.get_or_create_partitioned("db", DB).unwrap_err(),
        Err(e) => e,
    }
}

#[test]
fn a_lower_case_partition_segment_says_upper_case_it() {
    let err = env_error(&[("BULKHEAD_DB_PARTITIONS_live_SHARE", "20")]);
    let text = err.to_string();
    assert!(
        text.contains("upper-case it: BULKHEAD_DB_PARTITIONS_LIVE_SHARE"),
        "{text}"
    );
    // A lower-case key is caught by the builder's check of unknown
    // variables, which names the variable meant.
    let err = env_error(&[("BULKHEAD_DB_PARTITIONS_LIVE_share", "20")]);
    let text = err.to_string();
    assert!(
        text.contains("expected BULKHEAD_DB_PARTITIONS_LIVE_SHARE"),
        "{text}"
    );
}

#[test]
fn a_swap_of_two_letters_is_one_edit_for_did_you_mean() {
    let err = env_error(&[("BULKHEAD_DB_PARTITIONS_LVIE_SHARE", "20")]);
    let text = err.to_string();
    assert!(
        text.contains("did you mean BULKHEAD_DB_PARTITIONS_LIVE_SHARE?"),
        "{text}"
    );
    let err = env_error(&[("BULKHEAD_DB_PARTITIONS_LIVE_SHAER", "20")]);
    let text = err.to_string();
    assert!(text.contains("BULKHEAD_DB_PARTITIONS_LIVE_SHARE"), "{text}");
}

#[test]
fn partitions_whose_variables_clash_are_refused_naming_both() {
    let registry = Registry::local();
    let config = DomainConfig::new(10).partitions_from([
        PartitionConfig::new("live-x", Amount::Seats(5)),
        PartitionConfig::new("live_x", Amount::Seats(5)),
    ]);
    let err = registry
        .get_or_create_partitioned("api", config)
        .unwrap_err();
    assert!(
        matches!(err, RegistryError::PartitionVariablesClash { .. }),
        "{err}"
    );
    let text = err.to_string();
    assert!(text.contains("`live-x` and `live_x`"), "{text}");
    assert!(text.contains("BULKHEAD_API_PARTITIONS_LIVE_X_*"), "{text}");
    assert!(registry.get_partitioned("api").is_err());
}

#[test]
fn a_bare_share_that_overflows_hints_at_the_percent_sign() {
    // 75 seats for live, 8 for batch, in 32 seats: 75% was meant.
    let err = env_error(&[("BULKHEAD_DB_PARTITIONS_LIVE_SHARE", "75")]);
    let text = err.to_string();
    assert!(
        text.contains("BULKHEAD_DB_PARTITIONS_LIVE_SHARE=75%"),
        "{text}"
    );
    assert!(text.contains("add up to 83 seats"), "{text}");
    // A bare share that fits is a count, as documented.
    let registry = Registry::builder()
        .env(EnvSource::from_pairs([(
            "BULKHEAD_DB_PARTITIONS_LIVE_SHARE",
            "20",
        )]))
        .build()
        .unwrap();
    registry.get_or_create_partitioned("db", DB).unwrap();
    assert_eq!(registry.partition("db", "live").unwrap().state().share, 20);
}

#[test]
fn reordered_partitions_are_refused_showing_the_order_expected() {
    let registry = Registry::local();
    registry.get_or_create_partitioned("db", DB).unwrap();
    let reordered =
        DomainConfig::new(32).partitions_from([DB_PARTS[1].clone(), DB_PARTS[0].clone()]);
    let err = registry.reconfigure("db", reordered).unwrap_err();
    let RegistryError::PartitionsChanged {
        expected, given, ..
    } = &err
    else {
        panic!("{err}");
    };
    assert_eq!(
        (expected.as_slice(), given.as_slice()),
        (
            ["live".to_owned(), "batch".to_owned()].as_slice(),
            ["batch".to_owned(), "live".to_owned()].as_slice()
        )
    );
    let text = err.to_string();
    assert!(
        text.contains("expected the partitions `live`, `batch`, in that order"),
        "{text}"
    );
    assert!(text.contains("name `batch`, `live`"), "{text}");
}

#[test]
fn a_kept_partition_handle_follows_a_live_max_wait() {
    let registry = Registry::local();
    let config = DB.max_wait(MaxWait::from_millis(5));
    registry.get_or_create_partitioned("db", config).unwrap();
    let live = registry.partition("db", "live").unwrap();
    let batch = registry.partition("db", "batch").unwrap();
    assert_eq!(batch.wait_budget(), MaxWait::from_millis(5));

    // The compartment's budget, then the partition's own.
    registry
        .reconfigure("db", DB.max_wait(MaxWait::from_millis(60)))
        .unwrap();
    assert_eq!(batch.wait_budget(), MaxWait::from_millis(60));
    assert_eq!(live.wait_budget(), MaxWait::from_millis(60));
    let own = DomainConfig::new(32)
        .max_wait(MaxWait::from_millis(60))
        .partitions_from([
            DB_PARTS[0].clone().max_wait(MaxWait::FailFast),
            DB_PARTS[1].clone(),
        ]);
    registry.reconfigure("db", own).unwrap();
    assert_eq!(live.wait_budget(), MaxWait::FailFast);
    assert_eq!(batch.wait_budget(), MaxWait::from_millis(60));

    // The wait itself uses it: batch may hold 24, all held, so the next
    // caller waits the new 60 ms, not the 5 ms it was looked up with.
    let _held: Vec<_> = (0..24).map(|_| batch.try_acquire().unwrap()).collect();
    let start = Instant::now();
    let err = batch.acquire_blocking().unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    assert!(
        start.elapsed() >= Duration::from_millis(50),
        "{:?}",
        start.elapsed()
    );
    // A failed reconfiguration leaves the budgets as they were.
    let too_much = DomainConfig::new(32)
        .max_wait(MaxWait::from_millis(1))
        .partitions_from([
            PartitionConfig::new("live", Amount::Seats(30)),
            PartitionConfig::new("batch", Amount::Seats(8)),
        ]);
    assert!(registry.reconfigure("db", too_much).is_err());
    assert_eq!(batch.wait_budget(), MaxWait::from_millis(60));
}

#[cfg(feature = "config-file")]
mod file {
    use super::*;

    fn toml_error(text: &str) -> RegistryError {
        Registry::builder()
            .without_env()
            .toml_str(text)
            .build()
            .unwrap_err()
    }

    const LIVE_THEN_BATCH: &str = r#"
        [domains.db]
        max_concurrent = 32

        [domains.db.partitions.live]
        share = 24
        priority = 1

        [domains.db.partitions.batch]
        share = 8
    "#;

    #[test]
    fn the_file_order_of_partitions_is_kept_and_reconfigure_accepts_it() {
        let registry = Registry::builder()
            .without_env()
            .toml_str(LIVE_THEN_BATCH)
            .build()
            .unwrap();
        let config = registry.config("db").unwrap();
        let names: Vec<&str> = config.partitions.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["live", "batch"]);
        let compartment = registry.get_partitioned("db").unwrap();
        let order: Vec<&str> = compartment.partitions().map(|(_, n)| n.as_str()).collect();
        assert_eq!(order, ["live", "batch"]);
        // The order the user wrote is the order a live change keeps.
        let written = DomainConfig::new(40).partitions_from([
            PartitionConfig::new("live", Amount::Seats(30)).priority(1),
            PartitionConfig::new("batch", Amount::Seats(10)),
        ]);
        registry.reconfigure("db", written).unwrap();
        assert_eq!(compartment.state().max_concurrent, 40);
    }

    #[test]
    fn an_empty_partitions_table_is_an_error() {
        let err = toml_error(
            r#"
            [domains.db]
            max_concurrent = 32
            [domains.db.partitions]
            "#,
        );
        let text = err.to_string();
        assert_eq!(err.settings().unwrap().key(), "domains.db.partitions");
        assert!(text.contains("at least one partition"), "{text}");
    }

    #[test]
    fn a_fractional_share_gets_the_right_hint() {
        let err = toml_error(
            r#"
            [domains.db]
            max_concurrent = 32
            [domains.db.partitions.live]
            share = 8.5
            "#,
        );
        let text = err.to_string();
        assert_eq!(
            err.settings().unwrap().key(),
            "domains.db.partitions.live.share"
        );
        assert!(!text.contains("not a string"), "{text}");
        assert!(text.contains("never a fraction"), "{text}");
        assert!(text.contains(r#"share = "75%""#), "{text}");
    }

    #[test]
    fn a_missing_share_shows_no_empty_value() {
        let err = toml_error(
            r#"
            [domains.db]
            max_concurrent = 32
            [domains.db.partitions.live]
            priority = 1
            "#,
        );
        let text = err.to_string();
        assert!(!text.contains("= \"\""), "{text}");
        assert!(
            text.contains("`domains.db.partitions.live.share` is missing; expected a share"),
            "{text}"
        );
    }

    #[test]
    fn a_swapped_key_in_the_file_is_suggested() {
        let err = toml_error(
            r#"
            [domains.db]
            max_concurrent = 32
            [domains.db.partitions.live]
            shaer = 8
            "#,
        );
        assert!(err.to_string().contains("did you mean share?"), "{err}");
    }
}

#[cfg(feature = "serde")]
#[test]
fn serde_keeps_the_order_written() {
    let text =
        r#"{"max_concurrent": 10, "partitions": {"zeta": {"share": 5}, "alpha": {"share": 5}}}"#;
    let config: DomainConfig = serde_json::from_str(text).unwrap();
    let names: Vec<&str> = config.partitions.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["zeta", "alpha"]);
}
