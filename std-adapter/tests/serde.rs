//! The `serde` feature: `Config`, `DomainConfig`, `Admission` and
//! `MaxWait` round-trip through TOML and JSON, embedded in a user's own
//! configuration struct.
#![cfg(feature = "serde")]

use std::time::Duration;

use bulkhead_std::registry::DomainConfig;
use bulkhead_std::{Admission, Config, MaxWait, QueueOrder};
use serde::{Deserialize, Serialize};

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct AppSettings {
    listen: String,
    database: DomainConfig,
    cache: DomainConfig,
    admission: Admission,
    waits: Vec<MaxWait>,
}

fn sample() -> AppSettings {
    AppSettings {
        listen: "127.0.0.1:3000".into(),
        database: DomainConfig::new(8)
            .max_wait(MaxWait::from_millis(50))
            .max_waiting(32)
            .admission(Admission::Barging)
            .queue_order(QueueOrder::Lifo),
        cache: DomainConfig::new(64)
            .max_workers(4)
            .admission(Admission::BoundedBarging),
        admission: Admission::Fifo,
        waits: vec![
            MaxWait::FailFast,
            MaxWait::Forever,
            MaxWait::from_millis(250),
            MaxWait::up_to(Duration::from_secs(2)),
            MaxWait::up_to(Duration::from_micros(1500)),
            MaxWait::up_to(Duration::from_nanos(7)),
        ],
    }
}

#[test]
fn domain_config_admission_and_max_wait_round_trip_through_json() {
    let json = serde_json::to_string(&sample()).unwrap();
    assert!(json.contains(r#""max_wait":"50ms""#), "{json}");
    assert!(json.contains(r#""admission":"barging""#), "{json}");
    assert!(json.contains(r#""admission":"bounded_barging""#), "{json}");
    assert!(json.contains(r#""queue_order":"lifo""#), "{json}");
    assert!(json.contains(r#""queue_order":"fifo""#), "{json}");
    assert!(
        json.contains(r#""waits":["fail_fast","forever","250ms","2s","1500us","7ns"]"#),
        "{json}"
    );
    assert_eq!(
        serde_json::from_str::<AppSettings>(&json).unwrap(),
        sample()
    );
}

#[test]
fn domain_config_admission_and_max_wait_round_trip_through_toml() {
    let text = toml::to_string(&sample()).unwrap();
    assert!(text.contains("max_wait = \"50ms\""), "{text}");
    assert_eq!(toml::from_str::<AppSettings>(&text).unwrap(), sample());
}

#[test]
fn hand_written_settings_use_defaults_and_refuse_typos() {
    let db: DomainConfig = toml::from_str("max_concurrent = 4\nmax_wait = 0").unwrap();
    assert_eq!(db, DomainConfig::new(4));
    let err = toml::from_str::<DomainConfig>("max_concurrent = 4\nmax_wait = 250").unwrap_err();
    assert!(err.to_string().contains("no unit"), "{err}");
    let err = serde_json::from_str::<DomainConfig>(r#"{"max_concurent": 4}"#).unwrap_err();
    assert!(err.to_string().contains("max_concurent"), "{err}");
}

#[test]
fn queue_order_is_read_by_serde_and_misspellings_name_the_accepted_words() {
    let api: DomainConfig =
        serde_json::from_str(r#"{"max_concurrent": 4, "queue_order": "lifo"}"#).unwrap();
    assert_eq!(api, DomainConfig::new(4).queue_order(QueueOrder::Lifo));
    let api: DomainConfig = toml::from_str("max_concurrent = 4").unwrap();
    assert_eq!(api.queue_order, QueueOrder::Fifo);
    for bad in [r#""lif""#, r#""LIFO ""#] {
        let json = format!(r#"{{"max_concurrent": 4, "queue_order": {bad}}}"#);
        let err = serde_json::from_str::<DomainConfig>(&json).unwrap_err();
        let message = err.to_string();
        assert!(message.contains("`fifo`"), "{message}");
        assert!(message.contains("`lifo`"), "{message}");
    }
    let err =
        toml::from_str::<DomainConfig>("max_concurrent = 4\nqueue_ordr = \"lifo\"").unwrap_err();
    assert!(err.to_string().contains("queue_ordr"), "{err}");
    assert!(err.to_string().contains("queue_order"), "{err}");
}

#[test]
fn config_round_trips_from_static_text() {
    let config = Config::new("database", 16)
        .max_waiting(64)
        .admission(Admission::Barging);
    // `Config::name` is `&'static str`: deserialize from 'static text.
    let json: &'static str = Box::leak(serde_json::to_string(&config).unwrap().into_boxed_str());
    assert_eq!(serde_json::from_str::<Config>(json).unwrap(), config);
    // TOML serializes it, but its deserializer never lends strings, so a
    // `Config` (unlike a `DomainConfig`) cannot be read back from TOML:
    // the error says why (documented on `Config`).
    let text: &'static str = Box::leak(toml::to_string(&config).unwrap().into_boxed_str());
    assert!(text.contains("name = \"database\""), "{text}");
    let err = toml::from_str::<Config>(text).unwrap_err();
    assert!(err.to_string().contains("borrowed string"), "{err}");
    let minimal: Config =
        serde_json::from_str(r#"{"name": "cache", "max_concurrent": 4}"#).unwrap();
    assert_eq!(minimal, Config::new("cache", 4));
}
