//! [`EnvSource`]: the environment variables a registry reads, and how a
//! compartment name maps to its variables.

use std::collections::BTreeMap;

use super::parse::{Field, SettingsError};
use super::settings::Overlay;

/// The prefix of every variable the registry reads.
pub const ENV_PREFIX: &str = "BULKHEAD_";

/// The environment a registry reads its settings from: a snapshot taken
/// once, so that tests can inject a map instead of touching the process
/// environment.
///
/// - [`EnvSource::process`] copies the process's `BULKHEAD_*` variables
///   (the default of [`Registry::builder`](crate::registry::Registry::builder));
/// - [`EnvSource::from_pairs`] uses the pairs given;
/// - [`EnvSource::disabled`] reads nothing (the switch that turns
///   environment reading off).
///
/// # Variable names
///
/// For a compartment named `NAME`: `BULKHEAD_<NAME>_MAX_CONCURRENT`,
/// `_MAX_WAIT_MS`, `_MAX_WAITING`, `_MAX_WORKERS` and `_ADMISSION`
/// (`fifo` or `barging`), where `<NAME>` is the name upper-cased with
/// every character that is not an ASCII letter or digit replaced by `_`
/// ([`env_segment`]): `database:replica` reads
/// `BULKHEAD_DATABASE_REPLICA_MAX_CONCURRENT`. The registry's default
/// settings (the template of
/// [`get_or_create_default`](crate::registry::Registry::get_or_create_default))
/// drop the name segment: `BULKHEAD_MAX_CONCURRENT`.
///
/// ```
/// use bulkhead_std::registry::{DomainConfig, EnvSource, Registry};
///
/// let env = EnvSource::from_pairs([("BULKHEAD_CACHE_SESSIONS_MAX_CONCURRENT", "3")]);
/// let registry = Registry::builder().env(env).build()?;
/// let sessions = registry.cache("sessions")?;
/// assert_eq!((sessions.name(), sessions.state().max_concurrent), ("cache:sessions", 3));
/// # Ok::<(), bulkhead_std::registry::RegistryError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvSource {
    vars: BTreeMap<String, String>,
}

impl EnvSource {
    /// A snapshot of the process's `BULKHEAD_*` variables. Variables that
    /// are not valid Unicode are skipped.
    pub fn process() -> Self {
        Self {
            vars: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .filter(|(k, _)| k.starts_with(ENV_PREFIX))
                .collect(),
        }
    }

    /// Exactly these variables (a test's or an embedder's map).
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Self {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// No variables: environment reading is off.
    pub fn disabled() -> Self {
        Self::default()
    }

    /// The overlay for compartment `name`, or for the default settings
    /// when `name` is `None`.
    pub(crate) fn overlay(&self, name: Option<&str>) -> Result<Overlay, SettingsError> {
        let mut overlay = Overlay::default();
        let prefix = match name {
            Some(name) => format!("{ENV_PREFIX}{}_", env_segment(name)),
            None => ENV_PREFIX.to_owned(),
        };
        for field in Field::ALL {
            let key = format!("{prefix}{}", field.key().to_ascii_uppercase());
            if let Some(raw) = self.vars.get(&key) {
                field.set(&mut overlay, &key, raw)?;
            }
        }
        Ok(overlay)
    }
}

/// The segment a compartment name contributes to its variables: ASCII
/// upper case, every other character `_`.
///
/// ```
/// use bulkhead_std::registry::env_segment;
/// assert_eq!(env_segment("database:replica"), "DATABASE_REPLICA");
/// assert_eq!(env_segment("tenant-42.eu"), "TENANT_42_EU");
/// ```
pub fn env_segment(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}
