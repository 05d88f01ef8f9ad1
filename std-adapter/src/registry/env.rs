//! [`EnvSource`]: the environment variables a registry reads, and how a
//! compartment name maps to its variables.

use std::collections::BTreeMap;

use super::limit_config::{ENV_KEYS as LIMIT_ENV_KEYS, LimitConfig};
use super::parse::{Field, SettingsError, SettingsErrorKind};
use super::partition::KEYS as PARTITION_KEYS;
use super::settings::Overlay;
use super::spelling::{ENV_PREFIX, env_segment, nearest, nearly_spells};

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
/// `_MAX_WAIT` (a duration with a unit: `250ms`, `2s`; `0` fails fast,
/// `forever`), `_MAX_WAIT_MS` (whole milliseconds), `_MAX_WAITING`,
/// `_MAX_WORKERS`, `_ADMISSION` (`fifo`, `barging` or `bounded_barging`),
/// `_QUEUE_ORDER` (`fifo` or `lifo`),
/// and the adaptive limit's `_LIMIT_ALGORITHM` (`aimd`, `vegas`,
/// `gradient2`), `_LIMIT_MIN`,
/// `_LIMIT_MAX`, `_LIMIT_INITIAL`, `_LIMIT_WINDOW` (see
/// [`LimitConfig::from_env`]), and for each partition `P` of a partitioned
/// compartment `_PARTITIONS_<P>_SHARE`, `_LENDABLE`, `_BORROW` (a count, or
/// a percentage such as `75%`), `_PRIORITY`, `_MAX_WAIT`, `_MAX_WAITING`,
/// `_QUEUE_ORDER` (a variable for a partition the compartment does not
/// declare is an error), where `<NAME>` is the name upper-cased with
/// every character that is not an ASCII letter or digit replaced by `_`
/// ([`env_segment`]): `database:replica` reads
/// `BULKHEAD_DATABASE_REPLICA_MAX_CONCURRENT`. The registry's default
/// settings (the template of
/// [`get_or_create_default`](crate::registry::Registry::get_or_create_default))
/// drop the name segment: `BULKHEAD_MAX_CONCURRENT`.
///
/// # Misspelled variables
///
/// A `BULKHEAD_*` variable that ends in no known setting
/// (`BULKHEAD_DATABASE_MAX_CONCURENT`, `BULKHEAD_DATABASE_LIMIT_MAXX`) is
/// never silently dropped. The rule is the same for every setting, the
/// adaptive limit's included, and for every compartment, built-in or not:
/// building the registry fails with a
/// [`SettingsErrorKind::UnknownKey`](crate::registry::SettingsErrorKind::UnknownKey)
/// error naming the variable, its value and the closest valid variable
/// (the file's unknown keys are errors too). To accept such variables (an
/// environment shared with other versions of the program),
/// [`allow_unknown_variables`](crate::registry::RegistryBuilder::allow_unknown_variables)
/// turns each into a `tracing` warning, listed in
/// [`Registry::unknown_variables`](crate::registry::Registry::unknown_variables)
/// for a program that has not set `tracing` up.
///
/// A variable never declares a compartment itself (the file's
/// `[domains.NAME]` tables do): a variable for a name that neither the
/// built-ins nor the file declare applies to the compartment code creates
/// under that name (`get_or_create`), when it does. One such name is
/// treated as a typo, under the same policy as an unknown setting: a name
/// that nearly spells a registered compartment (a built-in, or one the
/// file declares) without being one. `BULKHEAD_DATABSE_MAX_CONCURRENT`
/// fails the build, naming `BULKHEAD_DATABASE_MAX_CONCURRENT` and the
/// compartment `database`. A registered compartment's children
/// (`BULKHEAD_DATABASE_R1_*`, for `database:r1`) are never typos. To use
/// a name that nearly spells a registered one, declare it in the file.
///
/// ```
/// use bulkhead_std::registry::{EnvSource, Registry, SettingsErrorKind};
///
/// let env = EnvSource::from_pairs([("BULKHEAD_DATABSE_MAX_CONCURRENT", "5")]);
/// let err = Registry::builder().env(env.clone()).build().unwrap_err();
/// assert_eq!(err.settings().unwrap().kind(), SettingsErrorKind::UnknownKey);
/// assert!(err.to_string().contains("BULKHEAD_DATABASE_MAX_CONCURRENT"));
///
/// let registry = Registry::builder().env(env).allow_unknown_variables().build()?;
/// assert_eq!(registry.unknown_variables()[0].variable(), "BULKHEAD_DATABSE_MAX_CONCURRENT");
/// assert_eq!(registry.get("database")?.state().max_concurrent, 10); // unchanged
/// # Ok::<(), bulkhead_std::registry::RegistryError>(())
/// ```
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

    /// The adaptive limit for compartment `name` (the default settings
    /// when `None`): `base` with the `LIMIT_*` variables applied.
    ///
    /// An unknown `LIMIT_*` suffix is skipped here: every unknown variable
    /// was already handled when the registry was built, by one policy
    /// (an error, or a warning with
    /// [`allow_unknown_variables`](crate::registry::RegistryBuilder::allow_unknown_variables)).
    pub(crate) fn limit(
        &self,
        name: Option<&str>,
        base: Option<LimitConfig>,
    ) -> Result<Option<LimitConfig>, SettingsError> {
        LimitConfig::from_env_prefix(&prefix(name), &self.vars, base, false)
    }

    /// The variables whose name starts with `prefix`, in order.
    pub(crate) fn with_prefix<'a>(
        &'a self,
        prefix: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        self.vars
            .range(prefix.to_owned()..)
            .take_while(move |(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The overlay for compartment `name`, or for the default settings
    /// when `name` is `None`.
    pub(crate) fn overlay(&self, name: Option<&str>) -> Result<Overlay, SettingsError> {
        let mut overlay = Overlay::default();
        let prefix = prefix(name);
        for field in Field::ALL {
            let key = format!("{prefix}{}", field.key().to_ascii_uppercase());
            if let Some(raw) = self.vars.get(&key) {
                field.set(&mut overlay, &key, raw)?;
            }
        }
        Ok(overlay)
    }
}

/// `BULKHEAD_<NAME>_`, or `BULKHEAD_` for the default settings.
fn prefix(name: Option<&str>) -> String {
    match name {
        Some(name) => format!("{ENV_PREFIX}{}_", env_segment(name)),
        None => ENV_PREFIX.to_owned(),
    }
}

impl EnvSource {
    /// The `BULKHEAD_*` variables that end in no known setting, each with
    /// the closest valid variable when one is near, and those whose name
    /// segment is not one of the `registered` compartments but nearly
    /// spells one (`BULKHEAD_DATABSE_MAX_CONCURRENT`).
    pub(crate) fn unknown(&self, registered: &[&str]) -> Vec<UnknownVariable> {
        let suffixes: Vec<String> = Field::ALL
            .iter()
            .map(|f| f.key().to_ascii_uppercase())
            .chain(LIMIT_ENV_KEYS.iter().map(|k| (*k).to_owned()))
            .collect();
        let segments: Vec<(String, &str)> =
            registered.iter().map(|n| (env_segment(n), *n)).collect();
        self.vars
            .iter()
            .filter_map(|(var, value)| {
                let rest = var.strip_prefix(ENV_PREFIX)?;
                // Each way of reading the variable as NAME_SETTING: the
                // name segment (empty for the template) and the setting
                // (a partition's variable reads one way only: what is
                // before `PARTITIONS_` names the compartment).
                let readings: Vec<(&str, &str)> = match partition_variable(var, value, rest) {
                    Some(Ok(reading)) => vec![reading],
                    Some(Err(unknown)) => return Some(unknown),
                    None => suffixes
                        .iter()
                        .filter_map(|s| {
                            let name = if rest == s {
                                ""
                            } else {
                                rest.strip_suffix(s.as_str())?.strip_suffix('_')?
                            };
                            Some((name, s.as_str()))
                        })
                        .collect(),
                };
                if readings.is_empty() {
                    return Some(UnknownVariable {
                        variable: var.clone(),
                        value: value.clone(),
                        suggestion: closest(rest, &suffixes).map(|s| format!("{ENV_PREFIX}{s}")),
                        domain: None,
                    });
                }
                let (segment, setting, domain) = misspelled_domain(&readings, &segments)?;
                Some(UnknownVariable {
                    variable: var.clone(),
                    value: value.clone(),
                    suggestion: Some(format!("{ENV_PREFIX}{segment}_{setting}")),
                    domain: Some(domain.to_owned()),
                })
            })
            .collect()
    }
}

/// For a variable of a partition (`<NAME>_PARTITIONS_<P>_<KEY>`, `rest`
/// being the part after `BULKHEAD_`): `Ok` with its compartment segment
/// and the rest (`PARTITIONS_<P>_<KEY>`) if it ends in a partition setting
/// (the partition itself is checked when the compartment is built), or
/// `Err` naming the setting it nearly spells; `None` for any other
/// variable.
fn partition_variable<'v>(
    var: &str,
    value: &str,
    rest: &'v str,
) -> Option<Result<(&'v str, &'v str), UnknownVariable>> {
    let (name, setting) = if rest.starts_with("PARTITIONS_") {
        ("", rest)
    } else {
        let at = rest.find("_PARTITIONS_")?;
        (&rest[..at], &rest[at + 1..])
    };
    let tail = &setting["PARTITIONS_".len()..];
    let known = PARTITION_KEYS.iter().any(|k| {
        tail.strip_suffix(k.to_ascii_uppercase().as_str())
            .is_some_and(|p| p.len() > 1 && p.ends_with('_'))
    });
    if known {
        return Some(Ok((name, setting)));
    }
    let (part, last) = tail.rsplit_once('_').unwrap_or(("", tail));
    let meant = nearest(&last.to_ascii_lowercase(), PARTITION_KEYS).map(str::to_ascii_uppercase);
    let head = &var[..var.len() - last.len()];
    Some(Err(UnknownVariable {
        variable: var.to_owned(),
        value: value.to_owned(),
        suggestion: meant
            .filter(|_| !part.is_empty())
            .map(|s| format!("{head}{s}")),
        domain: None,
    }))
}

/// The registered compartment a variable's name segment nearly spells,
/// as its segment, the setting and its name, unless some reading of the
/// variable is valid: the template's (no name), a registered name's, or
/// the name of a child of one (`DATABASE_REPLICA`, for
/// `database:replica`, which code may create later). Any other name is
/// left alone: code may create that compartment after the build.
fn misspelled_domain<'a>(
    readings: &[(&str, &'a str)],
    registered: &'a [(String, &'a str)],
) -> Option<(&'a str, &'a str, &'a str)> {
    let valid = |name: &str| {
        name.is_empty()
            || registered.iter().any(|(segment, _)| {
                name == segment
                    || name
                        .strip_prefix(segment.as_str())
                        .is_some_and(|rest| rest.starts_with('_'))
            })
    };
    if readings.iter().any(|(name, _)| valid(name)) {
        return None;
    }
    readings.iter().find_map(|&(name, setting)| {
        let segment = nearest(name, registered.iter().map(|(s, _)| s.as_str()))?;
        let (_, domain) = registered.iter().find(|(s, _)| s == segment)?;
        Some((segment, setting, *domain))
    })
}

/// The valid variable nearest to `rest` (the part after `BULKHEAD_`):
/// its last words replaced by the setting they nearly spell.
fn closest(rest: &str, suffixes: &[String]) -> Option<String> {
    let words: Vec<&str> = rest.split('_').collect();
    let mut best: Option<(usize, String)> = None;
    for suffix in suffixes {
        let n = suffix.split('_').count();
        for take in n.saturating_sub(1).max(1)..=(n + 1).min(words.len()) {
            let (head, tail) = words.split_at(words.len() - take);
            let Some(distance) = nearly_spells(&tail.join("_"), suffix) else {
                continue;
            };
            let candidate = if head.is_empty() {
                suffix.clone()
            } else {
                format!("{}_{suffix}", head.join("_"))
            };
            if best.as_ref().is_none_or(|(d, _)| distance < *d) {
                best = Some((distance, candidate));
            }
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// A `BULKHEAD_*` environment variable that names no setting, or whose
/// name nearly spells a registered compartment without being one:
/// probably a typo. Its `Display` says which variable and what was
/// probably meant.
///
/// ```
/// use bulkhead_std::registry::{EnvSource, Registry};
///
/// let env = EnvSource::from_pairs([("BULKHEAD_DATABASE_MAX_CONCURENT", "2")]);
/// let registry = Registry::builder().env(env).allow_unknown_variables().build()?;
/// let unknown = registry.unknown_variables();
/// assert_eq!(unknown[0].variable(), "BULKHEAD_DATABASE_MAX_CONCURENT");
/// assert_eq!(unknown[0].suggestion(), Some("BULKHEAD_DATABASE_MAX_CONCURRENT"));
/// assert!(unknown[0].to_string().contains("did you mean BULKHEAD_DATABASE_MAX_CONCURRENT"));
/// # Ok::<(), bulkhead_std::registry::RegistryError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownVariable {
    variable: String,
    value: String,
    suggestion: Option<String>,
    /// The registered compartment the name segment nearly spells, when
    /// that is the typo.
    domain: Option<String>,
}

impl UnknownVariable {
    /// The variable as set.
    pub fn variable(&self) -> &str {
        &self.variable
    }

    /// The closest valid variable, if one is near.
    pub fn suggestion(&self) -> Option<&str> {
        self.suggestion.as_deref()
    }

    /// The error [`build`](crate::registry::RegistryBuilder::build) gives
    /// for it: the variable and its value, the variable it nearly spells,
    /// and the way to accept unknown variables; `more` other unknown
    /// variables are counted.
    pub(crate) fn to_error(&self, more: usize) -> SettingsError {
        let meant = match (&self.suggestion, &self.domain) {
            (Some(s), Some(domain)) => format!(
                "{s}: `{domain}` is a registered compartment whose name it nearly spells; if \
                 the name is meant, declare that compartment in the settings file \
                 ([domains.NAME]),"
            ),
            (Some(s), None) => format!("{s}, which it nearly spells,"),
            (None, _) => format!("BULKHEAD_<NAME>_<SETTING> with SETTING one of {SETTINGS}"),
        };
        let more = match more {
            0 => String::new(),
            1 => " (1 more unknown variable is set)".to_owned(),
            n => format!(" ({n} more unknown variables are set)"),
        };
        SettingsError::new(
            SettingsErrorKind::UnknownKey,
            &self.variable,
            &self.value,
            format!(
                "{meant} or call RegistryBuilder::allow_unknown_variables to accept unknown \
                 BULKHEAD_* variables with a warning each{more}"
            ),
        )
    }
}

/// The settings a variable may end in, for messages.
const SETTINGS: &str = "MAX_CONCURRENT, MAX_WAIT, MAX_WAIT_MS, MAX_WAITING, MAX_WORKERS, \
                        ADMISSION, QUEUE_ORDER, LIMIT_ALGORITHM, LIMIT_MIN, LIMIT_MAX, LIMIT_INITIAL, \
                        LIMIT_WINDOW, or PARTITIONS_<PARTITION>_<KEY> with KEY one of SHARE, \
                        LENDABLE, BORROW, PRIORITY, MAX_WAIT, MAX_WAITING, QUEUE_ORDER";

impl std::fmt::Display for UnknownVariable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let (Some(s), Some(domain)) = (&self.suggestion, &self.domain) {
            return write!(
                f,
                "environment variable {} names no registered compartment (it applies only if \
                 code creates one by that name); did you mean {s}, for compartment `{domain}`?",
                self.variable
            );
        }
        write!(
            f,
            "environment variable {} is not a bulkhead setting and is ignored",
            self.variable
        )?;
        match &self.suggestion {
            Some(s) => write!(f, "; did you mean {s}?"),
            None => write!(
                f,
                "; bulkhead variables are BULKHEAD_<NAME>_<SETTING> with SETTING one of \
                 {SETTINGS}"
            ),
        }
    }
}
