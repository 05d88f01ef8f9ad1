//! [`RegistryError`]: why a registry call failed.

use std::fmt;

use bulkhead_core::limit::LimitError;
use bulkhead_core::{ConfigError, Error, Name};

use super::parse::SettingsError;
use super::spelling::{ENV_PREFIX, MAX_NAME_LEN, env_segment, nearest};
use crate::pool::BuildError;
use bulkhead_core::partition::UnknownPartition;

/// Why a registry call failed. Every message names the compartment (or
/// setting) and says what to change.
///
/// ```
/// use bulkhead_std::registry::{Registry, RegistryError};
///
/// let registry = Registry::local();
/// let err = registry.get("payments").unwrap_err();
/// assert!(matches!(err, RegistryError::NotFound { .. }));
/// assert!(err.to_string().contains("`payments`"));
/// assert!(err.to_string().contains("cache, database, external_api, message_queue"));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum RegistryError {
    /// No compartment is registered under `name`.
    NotFound {
        /// The name asked for.
        name: String,
        /// The registered names, sorted.
        registered: Vec<Name>,
    },
    /// `unregister` of a built-in compartment was refused.
    BuiltIn {
        /// The built-in's name.
        name: Name,
    },
    /// The name is registered, but as the other kind of compartment
    /// (a semaphore asked for as a thread pool, or the reverse).
    WrongKind {
        /// The compartment.
        name: Name,
        /// Whether it is a thread pool.
        is_pool: bool,
    },
    /// The name is registered, but not as a scoped compartment whose
    /// resource has the type asked for.
    NotScoped {
        /// The compartment.
        name: Name,
        /// The resource type asked for.
        wanted: &'static str,
    },
    /// A name that is empty, too long or contains control characters.
    InvalidName {
        /// The name given.
        name: String,
    },
    /// A bounded registry is full and every entry is busy (seats held,
    /// callers waiting, or handles outstanding), so none could be evicted.
    AtCapacity {
        /// The name that could not be added.
        name: Name,
        /// The registry's `max_entries`.
        limit: usize,
    },
    /// `reconfigure` asked for something that cannot change live.
    Unsupported {
        /// The compartment.
        name: Name,
        /// What cannot change, and what to do instead.
        what: &'static str,
    },
    /// A configuration value was refused (environment or file).
    Settings(SettingsError),
    /// The resulting configuration is invalid (for example zero seats).
    Config(ConfigError),
    /// The resulting adaptive limit is invalid (for example `min` above
    /// `max`, once code, file and environment are combined).
    Limit {
        /// The compartment (`default` for the registry's template).
        name: Name,
        /// What the algorithm refused.
        error: LimitError,
    },
    /// A thread-pool compartment could not be built.
    Pool(BuildError),
    /// The compartment turned the caller away (the registry's lookups
    /// that take a seat only).
    ///
    /// # Reaching the inner [`Error`]
    ///
    /// [`rejection`](RegistryError::rejection) returns it. Through a boxed
    /// error or `anyhow`, the outer type is `RegistryError`, so downcast to
    /// that, or walk the source chain, which holds the `Error` itself:
    ///
    /// ```
    /// use bulkhead_std::Error;
    /// use bulkhead_std::registry::{DomainConfig, Registry, RegistryError};
    ///
    /// fn call(registry: &Registry) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    ///     let _seat = registry.acquire_blocking("one_seat")?; // `?` boxes the RegistryError
    ///     Ok(())
    /// }
    /// let registry = Registry::local();
    /// let db = registry.get_or_create("one_seat", DomainConfig::new(1))?;
    /// let _held = db.try_acquire()?;
    /// let err = call(&registry).unwrap_err();
    /// // 1. the outer type, then its accessor:
    /// let outer = err.downcast_ref::<RegistryError>().unwrap();
    /// assert!(matches!(outer.rejection(), Some(Error::Full { .. })));
    /// // 2. or the source chain (what `anyhow::Error::chain()` walks):
    /// let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&*err);
    /// let inner = std::iter::from_fn(|| { let e = source?; source = e.source(); Some(e) })
    ///     .find_map(|e| e.downcast_ref::<Error>());
    /// assert!(matches!(inner, Some(Error::Full { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// Its message names the compartment only
    /// (``no seat in registry compartment `one_seat` ``); the reason and
    /// what to change are the inner `Error`'s, next in the chain, so print
    /// the chain (`anyhow`'s `{:#}`, or each `source()`) to see both.
    ///
    /// With `anyhow`: `err.downcast_ref::<RegistryError>()`, or
    /// `err.chain().find_map(|e| e.downcast_ref::<bulkhead_std::Error>())`.
    /// (`anyhow::Error::downcast_ref::<Error>()` alone looks at the outer
    /// type only, so it finds nothing.) bulkhead-tokio's `HttpRejection::find`
    /// walks the chain for you.
    Rejected(Error),
    /// The name is registered as a partitioned compartment, whose seats
    /// are taken through one of its partitions
    /// ([`Registry::partition`](super::Registry::partition)).
    Partitioned {
        /// The compartment.
        name: Name,
    },
    /// [`Registry::partition`](super::Registry::partition) asked for a
    /// partition of a compartment that has none.
    NotPartitioned {
        /// The compartment.
        name: Name,
    },
    /// [`Registry::partition`](super::Registry::partition) asked for a
    /// partition the compartment does not have (boxed: core's error holds
    /// the partitions' names inline).
    UnknownPartition(Box<UnknownPartition>),
    /// [`Registry::reconfigure`](super::Registry::reconfigure) of a
    /// partitioned compartment named other partitions, or the same ones
    /// in another order: a live compartment keeps its partitions, in the
    /// order they were declared.
    PartitionsChanged {
        /// The compartment.
        name: Name,
        /// Its partitions, in their order: what the new settings must
        /// name.
        expected: Vec<String>,
        /// The partitions the new settings named, in their order.
        given: Vec<String>,
    },
    /// Two partitions of one compartment whose names give the same
    /// environment variables (`live-x` and `live_x` are both
    /// `BULKHEAD_<NAME>_PARTITIONS_LIVE_X_*`), refused when the compartment
    /// is built: a variable must say which partition it sets.
    PartitionVariablesClash {
        /// The compartment.
        name: Name,
        /// The first partition, in declaration order.
        first: String,
        /// The second.
        second: String,
        /// The variable segment both names give (`LIVE_X`).
        segment: String,
    },
}

impl RegistryError {
    /// The compartment's rejection, if this is one
    /// ([`RegistryError::Rejected`]).
    pub fn rejection(&self) -> Option<&Error> {
        match self {
            RegistryError::Rejected(e) => Some(e),
            _ => None,
        }
    }

    /// The settings error, if this is one.
    pub fn settings(&self) -> Option<&SettingsError> {
        match self {
            RegistryError::Settings(e) => Some(e),
            _ => None,
        }
    }
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegistryError::NotFound { name, registered } => write!(
                f,
                "no bulkhead compartment named `{name}` is registered (registered: {}); \
                 declare it in the settings file ([domains.NAME]), or call get_or_create \
                 or register before the first lookup",
                registered.join(", ")
            ),
            RegistryError::BuiltIn { name } => write!(
                f,
                "bulkhead `{name}` is a built-in compartment and cannot be unregistered: \
                 removing it would silently degrade isolation; reconfigure it or register \
                 a replacement instead"
            ),
            RegistryError::WrongKind { name, is_pool } => {
                let (is, ask) = if *is_pool {
                    ("a thread pool", "get_pool")
                } else {
                    ("a semaphore", "get")
                };
                write!(f, "bulkhead `{name}` is {is}; look it up with {ask}")
            }
            RegistryError::NotScoped { name, wanted } => write!(
                f,
                "bulkhead `{name}` is not a scoped compartment holding a `{wanted}`; register \
                 it with create_scoped or register_scoped, or ask for its own resource type"
            ),
            RegistryError::InvalidName { name } => write!(
                f,
                "{name:?} is not a valid compartment name: use 1 to {} bytes without control \
                 characters",
                MAX_NAME_LEN
            ),
            RegistryError::AtCapacity { name, limit } => write!(
                f,
                "cannot add bulkhead `{name}`: the registry holds its maximum of {limit} \
                 dynamic compartments and all are in use; raise max_entries or retry later"
            ),
            RegistryError::Unsupported { name, what } => write!(f, "bulkhead `{name}`: {what}"),
            RegistryError::Settings(e) => e.fmt(f),
            RegistryError::Config(e) => e.fmt(f),
            RegistryError::Limit { name, error } => {
                // The registry's template is checked under the name
                // `default`; its variables have no name segment.
                let prefix = if *name == "default" {
                    ENV_PREFIX.to_owned()
                } else {
                    format!("{}{}_", ENV_PREFIX, env_segment(name))
                };
                write!(
                    f,
                    "bulkhead `{name}`: {error} (the `limit` from code and the file's \
                     `limit` table, with the {prefix}LIMIT_* variables applied)"
                )
            }
            RegistryError::Pool(e) => e.fmt(f),
            RegistryError::Partitioned { name } => write!(
                f,
                "bulkhead `{name}` is partitioned: take a partition's seats with \
                 Registry::partition(\"{name}\", PARTITION), or look the compartment up with \
                 get_partitioned"
            ),
            RegistryError::NotPartitioned { name } => write!(
                f,
                "bulkhead `{name}` has no partitions: take its seats by its name alone \
                 (try_acquire, acquire_blocking), or declare partitions in code \
                 (DomainConfig::partitions) or in the file ([domains.{name}.partitions.NAME])"
            ),
            RegistryError::UnknownPartition(e) => {
                e.fmt(f)?;
                let known = e.known.iter().map(|n| n.as_str());
                match nearest(&e.asked, known) {
                    Some(meant) => write!(f, "; did you mean `{meant}`?"),
                    None => Ok(()),
                }
            }
            RegistryError::PartitionsChanged {
                name,
                expected,
                given,
            } => write!(
                f,
                "bulkhead `{name}`: partitions cannot be added, removed, renamed or reordered on \
                 a live compartment (only their settings may change); expected the partitions \
                 {}, in that order, but the new settings name {}; list them in that order, or \
                 register a new compartment (or restart) to change them",
                quoted(expected),
                quoted(given),
            ),
            RegistryError::PartitionVariablesClash {
                name,
                first,
                second,
                segment,
            } => write!(
                f,
                "bulkhead `{name}`: partitions `{first}` and `{second}` would share the \
                 environment variables {ENV_PREFIX}{}_PARTITIONS_{segment}_* (a name's letters \
                 are upper-cased and every other character becomes `_`); rename one of them",
                env_segment(name),
            ),
            // The reason and its advice are the source's message.
            RegistryError::Rejected(e) => {
                write!(f, "no seat in registry compartment `{}`", e.name())
            }
        }
    }
}

/// Names as a list for a message: `` `live`, `batch` ``, or `none`.
fn quoted(names: &[String]) -> String {
    if names.is_empty() {
        return "none".to_owned();
    }
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Each variant either shows an inner error in its message or returns it
/// from `source()`, never both, so that a report that prints the whole
/// chain (`anyhow`'s `{:#}`) says everything once. `Settings`, `Config`,
/// `Limit` and `Pool` show it (and return its own source, if any);
/// `Rejected` returns the compartment's [`Error`], so that a walk of the
/// chain finds it.
impl std::error::Error for RegistryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RegistryError::Settings(e) => std::error::Error::source(e),
            RegistryError::Config(e) => std::error::Error::source(e),
            RegistryError::Limit { error, .. } => std::error::Error::source(error),
            RegistryError::Pool(e) => std::error::Error::source(e),
            RegistryError::Rejected(e) => Some(e),
            _ => None,
        }
    }
}

impl From<SettingsError> for RegistryError {
    fn from(e: SettingsError) -> Self {
        RegistryError::Settings(e)
    }
}

impl From<ConfigError> for RegistryError {
    fn from(e: ConfigError) -> Self {
        RegistryError::Config(e)
    }
}

impl From<BuildError> for RegistryError {
    fn from(e: BuildError) -> Self {
        RegistryError::Pool(e)
    }
}

impl From<Error> for RegistryError {
    fn from(e: Error) -> Self {
        RegistryError::Rejected(e)
    }
}
