//! The per-domain registry: compartments looked up by name, configured
//! from code, a TOML file and the environment, reconfigured live.
//!
//! Start with [`Registry`], the process-wide [`global`] registry, and
//! [`RegistryBuilder`] for where settings come from.

mod builder;
mod domain;
mod env;
mod error;
mod evict;
mod file;
mod global;
mod helpers;
pub(crate) mod limit_config;
mod names;
pub(crate) mod parse;
mod partition;
mod partition_env;
mod pool;
mod scoped;
mod settings;
mod spelling;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use crate::partition::Partitioned;
use bulkhead_core::limit::Limit;
use bulkhead_core::partition::PartitionConfig;
use bulkhead_core::{Config, Name, QueueOrder};

use crate::pool::PoolConfig;
use crate::snapshot::{Inspect, Snapshot};
use crate::{Bulkhead, StdLock};

pub use builder::RegistryBuilder;
pub use domain::{Domain, DomainController, RegistrySeat};
pub use env::{EnvSource, UnknownVariable};
pub use error::RegistryError;
pub use global::{global, reset_global, set_global};
pub use parse::{SettingsError, SettingsErrorKind};
pub use partition::{DomainPartition, DomainPartitionSeat};
pub use pool::RegisteredPool;
pub use settings::DomainConfig;
pub use spelling::{ENV_PREFIX, MAX_NAME_LEN, env_segment};

use file::FileSettings;

/// The built-in compartments and their code defaults (all fail fast, FIFO,
/// no queue limit).
pub const BUILTINS: [(&str, DomainConfig); 4] = [
    ("database", DomainConfig::new(10)),
    ("cache", DomainConfig::new(50)),
    ("external_api", DomainConfig::new(20)),
    ("message_queue", DomainConfig::new(10)),
];

/// The code default of the template for
/// [`Registry::get_or_create_default`]: 10 seats, fail fast.
pub const DEFAULT_TEMPLATE: DomainConfig = DomainConfig::new(10);

/// A registered compartment: a semaphore [`Bulkhead`] or a thread pool.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Registered {
    /// A semaphore compartment.
    Semaphore(Arc<Bulkhead>),
    /// A thread-pool compartment.
    Pool(Arc<RegisteredPool>),
    /// A compartment whose seats are shared by partitions.
    Partitioned(Arc<Partitioned>),
}

impl Registered {
    /// The semaphore compartment, or [`RegistryError::WrongKind`].
    fn semaphore(self) -> Result<Arc<Bulkhead>, RegistryError> {
        match self {
            Registered::Semaphore(b) => Ok(b),
            Registered::Pool(p) => Err(RegistryError::WrongKind {
                name: p.name().clone(),
                is_pool: true,
            }),
            Registered::Partitioned(p) => Err(RegistryError::Partitioned {
                name: p.name_handle(),
            }),
        }
    }

    /// The partitioned compartment, or [`RegistryError::NotPartitioned`].
    fn partitioned(self) -> Result<Arc<Partitioned>, RegistryError> {
        match self {
            Registered::Partitioned(p) => Ok(p),
            Registered::Semaphore(b) => Err(RegistryError::NotPartitioned {
                name: b.name_handle(),
            }),
            Registered::Pool(p) => Err(RegistryError::NotPartitioned {
                name: p.name().clone(),
            }),
        }
    }

    /// The thread-pool compartment, or [`RegistryError::WrongKind`].
    fn pool(self) -> Result<Arc<RegisteredPool>, RegistryError> {
        match self {
            Registered::Pool(p) => Ok(p),
            Registered::Semaphore(b) => Err(RegistryError::WrongKind {
                name: b.name_handle(),
                is_pool: false,
            }),
            Registered::Partitioned(p) => Err(RegistryError::Partitioned {
                name: p.name_handle(),
            }),
        }
    }

    /// Its snapshot.
    pub fn snapshot(&self) -> Snapshot {
        match self {
            Registered::Semaphore(b) => b.snapshot(),
            Registered::Pool(p) => p.snapshot(),
            Registered::Partitioned(p) => {
                Snapshot::new(p.state(), crate::snapshot::Kind::Semaphore, p.raw_lock())
            }
        }
    }

    /// Only the registry holds it (no handle is outstanding) and nobody
    /// holds a seat or waits: the eviction rule.
    fn is_idle(&self) -> bool {
        match self {
            // The seat word and the line alone: `state()` would also sum
            // the lock's counts, under a process-wide lock.
            Registered::Semaphore(b) => {
                Arc::strong_count(b) == 1 && b.active() == 0 && b.waiting() == 0
            }
            Registered::Pool(p) => Arc::strong_count(p) == 1 && !p.is_busy(),
            Registered::Partitioned(p) => {
                let s = p.state();
                Arc::strong_count(p) == 1 && s.active == 0 && s.waiting == 0
            }
        }
    }
}

struct Entry {
    compartment: Registered,
    /// A partitioned compartment's wait budgets, shared with its
    /// `DomainPartition`s and rewritten by `reconfigure`.
    budgets: Option<Arc<partition::Budgets>>,
    /// The adaptive limit of a semaphore compartment with a `limit`.
    controller: Option<Arc<DomainController>>,
    config: DomainConfig,
    /// The code settings it was created from (before file and environment),
    /// to tell a `get_or_create` that asks for different ones.
    code: DomainConfig,
    /// Whether that difference was already reported (once per entry).
    warned: AtomicBool,
    builtin: bool,
    /// Declared by a `[domains.NAME]` table of the file: created by
    /// `build`, and never evicted (the file's names are a fixed set, like
    /// the built-ins).
    declared: bool,
    /// Declared, and no code settings applied yet: the first
    /// `get_or_create` rebuilds it from its code settings if it is idle.
    awaiting_code: bool,
    /// Milliseconds since the registry's epoch of the last lookup.
    last_used: AtomicU64,
}

/// Compartments by domain name.
///
/// # Lookups
///
/// - [`get`](Self::get) is strict: an unknown name is
///   [`RegistryError::NotFound`], naming it and listing the registered
///   names, sorted. The built-ins and every compartment the settings
///   file declares (`[domains.NAME]`) exist from the start; see
///   [which compartments exist](RegistryBuilder#which-compartments-exist).
/// - [`get_or_create`](Self::get_or_create): concurrent calls for one name
///   create exactly one compartment.
/// - [`list_names`](Self::list_names), [`all_states`](Self::all_states).
///
/// The returned `Arc<Bulkhead>` is also the **async view**: async callers
/// share its seats and its state with threads. To take a seat by name with
/// the compartment's configured `max_wait`, threads call
/// [`acquire_blocking`](Self::acquire_blocking) / [`execute`](Self::execute) (blocking), async
/// code on any runtime [`acquire_timeout`](Self::acquire_timeout) /
/// [`run_timeout`](Self::run_timeout), and tokio tasks bulkhead-tokio's
/// `RegistryExt::acquire_within` / `run_within`; to never wait, any caller
/// calls [`try_acquire`](Self::try_acquire). Each has a weighted form
/// for a caller that counts as several
/// ([`try_acquire_many`](Self::try_acquire_many),
/// [`acquire_many_blocking`](Self::acquire_many_blocking),
/// [`acquire_many_timeout`](Self::acquire_many_timeout),
/// [`execute_weighted`](Self::execute_weighted),
/// [`run_timeout_weighted`](Self::run_timeout_weighted)): one seat of that
/// weight, all or none ([`RegistrySeat::weight`]). Every path that takes a
/// seat, these and a bare `try_acquire` on the returned compartment
/// alike, is counted in the metrics (the `metrics` module, feature
/// `metrics`).
///
/// # Built-ins
///
/// | name | `max_concurrent` |
/// |---|---|
/// | `database` | 10 |
/// | `cache` | 50 |
/// | `external_api` | 20 |
/// | `message_queue` | 10 |
///
/// All fail fast, FIFO, oldest first, no queue limit, unless the settings
/// say otherwise.
/// They always exist: [`unregister`](Self::unregister) refuses them;
/// [`register`](Self::register) may replace one, with a `tracing` warning.
///
/// # Adaptive limits
///
/// A compartment whose settings carry a `limit` ([`DomainConfig::limit`],
/// a `limit = { algorithm = "gradient2", min = 4, max = 200 }` table in
/// the file, or `BULKHEAD_<NAME>_LIMIT_ALGORITHM` and its `_MIN`, `_MAX`,
/// `_INITIAL`, `_WINDOW` variables) is **adaptive**: its `max_concurrent`
/// is where the limit starts (clamped into the bounds, unless the limit
/// sets `initial`), and the algorithm moves it from the calls it admits.
/// The file's table replaces the code's limit whole; each variable then
/// overrides one field. Unknown keys, unknown algorithms and malformed
/// numbers are [`RegistryError::Settings`] naming the key or variable;
/// bounds that do not fit together are [`RegistryError::Limit`].
///
/// Every registry path that takes a seat feeds the limit, with no code
/// from the caller: [`try_acquire`](Self::try_acquire),
/// [`acquire_blocking`](Self::acquire_blocking) and
/// [`acquire_timeout`](Self::acquire_timeout) (and bulkhead-tokio's
/// `RegistryExt::acquire_within`) hand out a [`RegistrySeat`] that times
/// itself from admission to release and records a sample when it is
/// given back (a success when dropped, a drop when dropped while its
/// thread panics, or what [`RegistrySeat::record`] says);
/// [`execute`](Self::execute) and [`run_timeout`](Self::run_timeout)
/// (and `RegistryExt::run_within`) classify the work's result: `Err` or a
/// panic counts as dropped. [`domain`](Self::domain) gives the compartment
/// with its [`DomainController`] for seats taken any other way
/// ([`Domain::try_acquire`], [`Domain::track`]). A seat taken directly
/// from the `Arc<Bulkhead>` of [`get`](Self::get) is counted, but not
/// timed: it records no sample. bulkhead-tokio's
/// `BulkheadLayer::from_registry` feeds the limit too: each admitted
/// request's seat is tracked ([`Domain::track`]) and records one sample
/// when its response completes (`Err` = dropped by default, or the
/// layer's classifier).
///
/// The current limit is the compartment's `state().max_concurrent` (and
/// the [`Snapshot`]'s), so [`all_states`](Self::all_states) shows it. With
/// feature `metrics`, each change sets the `bulkhead_max_concurrent` gauge
/// and the `bulkhead_limit_changes_total` counter as it happens;
/// `publish_registry` publishes them too, with
/// `bulkhead_limit_samples_skipped_total`.
///
/// The limit cannot change on a live compartment
/// ([`reconfigure`](Self::reconfigure) refuses a different `limit` or
/// `max_concurrent`, and changes the other fields); `get_or_create` with
/// another limit keeps the existing compartment and warns once. Thread
/// pools and scoped compartments refuse a limit.
///
/// ```
/// use bulkhead_std::registry::{DomainConfig, EnvSource, Registry};
///
/// let env = EnvSource::from_pairs([
///     ("BULKHEAD_SEARCH_LIMIT_ALGORITHM", "aimd"),
///     ("BULKHEAD_SEARCH_LIMIT_MIN", "2"),
/// ]);
/// let registry = Registry::builder().env(env).build()?;
/// registry.get_or_create("search", DomainConfig::new(10))?; // adaptive: the environment says so
/// for _ in 0..10 {
///     let _ = registry.execute("search", || Err::<(), _>("503")); // each counts as dropped
/// }
/// assert_eq!(registry.get("search")?.state().max_concurrent, 9); // one window of drops: floor(0.9 × 10)
/// # Ok::<(), bulkhead_std::registry::RegistryError>(())
/// ```
///
/// # Partitions
///
/// A compartment whose settings declare partitions
/// ([`DomainConfig::partitions`], `[domains.NAME.partitions.P]` tables in
/// the file, or serde) is a core
/// [`Partitioned`] compartment: its
/// seats are shared by the partitions, each guaranteed its `share`,
/// lending what it does not use and reclaiming it as borrowed seats come
/// back. [`partition`](Self::partition) gives one partition's handle
/// ([`DomainPartition`]: `try_acquire`, `acquire_blocking`,
/// `acquire_timeout`, `execute`, with the partition's `max_wait` or else
/// the compartment's); [`get_partitioned`](Self::get_partitioned) the
/// compartment; [`get_or_create_partitioned`](Self::get_or_create_partitioned)
/// creates one from code. The lookups by name alone (`get`,
/// `try_acquire`, …) refuse it with [`RegistryError::Partitioned`].
///
/// The file's `partitions` tables replace the code's partitions whole;
/// each `BULKHEAD_<NAME>_PARTITIONS_<PARTITION>_<KEY>` variable then
/// overrides one setting of a declared partition (a variable for a
/// partition that neither code nor the file declares is an error naming
/// the partitions known). Amounts are a count (`24`) or a percentage with
/// its sign (`"75%"`). A partitioned compartment has a fixed
/// `max_concurrent` (an adaptive `limit` is refused: not supported yet),
/// and its queue settings are the partitions' own.
/// [`reconfigure`](Self::reconfigure) changes the limit and the
/// partitions' settings live, never the partitions themselves. With
/// feature `metrics`, each partition has its own series
/// (`bulkhead_partition_*`, labelled `name` and `partition`).
///
/// ```
/// use bulkhead_std::registry::{EnvSource, Registry};
///
/// # #[cfg(feature = "config-file")] {
/// let registry = Registry::builder()
///     .env(EnvSource::from_pairs([("BULKHEAD_DB_PARTITIONS_BATCH_BORROW", "0")]))
///     .toml_str(r#"
///         [domains.db]
///         max_concurrent = 10
///         [domains.db.partitions.live]
///         share = "80%"
///         [domains.db.partitions.batch]
///         share = 2
///     "#)
///     .build()?;
/// let batch = registry.partition("db", "batch")?;
/// let seats = (batch.try_acquire()?, batch.try_acquire()?);
/// assert!(batch.try_acquire().is_err()); // the environment forbids borrowing
/// # drop(seats);
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Per-instance compartments
///
/// [`database(alias)`](Self::database) and [`cache(name)`](Self::cache) are
/// named `database:ALIAS` and `cache:NAME` (`"default"` is the built-in
/// itself). They start from the built-in's current settings, overridden by
/// `[domains."database:ALIAS"]` and `BULKHEAD_DATABASE_ALIAS_*`.
///
/// # Replacing a compartment
///
/// [`register`](Self::register) swaps the entry. The old compartment stays
/// valid through its `Arc`: its seat holders finish normally and **its
/// waiters keep waiting on it** and are admitted as its seats free up. New
/// lookups reach the new compartment.
///
/// # Dynamic keys and eviction
///
/// A registry built with [`max_entries`](RegistryBuilder::max_entries) or
/// [`idle_after`](RegistryBuilder::idle_after) evicts dynamic (not
/// built-in) compartments, **never a busy one**. An entry is evicted only
/// if, under the registry's write lock, (a) the registry holds the only
/// `Arc` to it (`Arc::strong_count == 1`: no caller has a handle, so none
/// can be about to acquire), (b) no seat is held and (c) nobody waits.
/// Lookups clone the `Arc` under the read lock, so no lookup can race the
/// check. When every entry is busy, creating a new one fails with
/// [`RegistryError::AtCapacity`] instead of growing. An evicted
/// compartment's name is freed with the last value that names it (its
/// compartment, errors, snapshots, metric labels): a registry may go
/// through any number of distinct names. Recreating one starts with fresh
/// counters.
///
/// # Examples
///
/// ```
/// use bulkhead_std::registry::{DomainConfig, Registry};
///
/// let registry = Registry::local();
/// let reports = registry.get_or_create("reports", DomainConfig::new(2))?;
/// let _seat = reports.try_acquire()?;
/// assert_eq!(registry.get("reports")?.state().active, 1); // the same compartment
/// assert_eq!(
///     registry.list_names(),
///     ["cache", "database", "external_api", "message_queue", "reports"]
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Registry {
    entries: RwLock<HashMap<Name, Entry>>,
    env: EnvSource,
    file: FileSettings,
    template: DomainConfig,
    max_entries: Option<usize>,
    idle_after: Option<Duration>,
    epoch: Instant,
    unknown: Vec<UnknownVariable>,
    /// Scoped compartments (also registered as semaphores), for shutdown.
    scoped: Mutex<Vec<Arc<dyn scoped::AnyScoped>>>,
}

impl Registry {
    /// A builder: settings from code, a file and the environment.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    /// A registry with the built-ins at their code defaults, reading
    /// neither the environment nor a file: for tests and libraries.
    pub fn local() -> Self {
        let builder = Self::builder().without_env();
        match Self::from_builder(builder) {
            Ok(registry) => registry,
            // The code defaults are valid constants and no source is read.
            Err(e) => unreachable!("the built-in defaults are valid: {e}"),
        }
    }

    fn from_builder(b: RegistryBuilder) -> Result<Self, RegistryError> {
        if let Some(e) = b.file_error {
            return Err(e.into());
        }
        let unknown = b.unknown_variables();
        if !b.allow_unknown
            && let Some(first) = unknown.first()
        {
            return Err(first.to_error(unknown.len() - 1).into());
        }
        for var in &unknown {
            tracing::warn!(
                variable = var.variable(),
                suggestion = var.suggestion(),
                "bulkhead: {var}"
            );
        }
        let mut registry = Self {
            entries: RwLock::default(),
            env: b.env,
            file: b.file,
            template: b.template,
            max_entries: b.max_entries,
            idle_after: b.idle_after,
            epoch: Instant::now(),
            unknown,
            scoped: Mutex::new(Vec::new()),
        };
        let mut template = registry.template;
        template.apply(&registry.file.default);
        template.apply(&registry.env.overlay(None)?);
        template.limit = registry.env.limit(None, template.limit)?;
        let default = Name::from_static("default");
        check(&default, template.max_concurrent, None)?;
        check_limit(&default, &template)?;
        registry.template = template;
        for (name, code) in b.builtins {
            let name = Name::from_static(name);
            let config = registry.resolve(&name, code)?;
            let (compartment, controller) = compartment(&name, &config)?;
            let entry = registry.entry(compartment, controller, config, code, true);
            registry.write().insert(name, entry);
        }
        let declared: Vec<String> = registry.file.domains.keys().cloned().collect();
        for name in declared {
            registry.declare(&name)?;
        }
        Ok(registry)
    }

    /// Creates the compartment a `[domains.NAME]` table of the file
    /// declares (unless it is a built-in): a thread pool if the table sets
    /// `max_workers`, a semaphore otherwise, from the template (or, for
    /// `database:ALIAS` and `cache:NAME`, that built-in's settings)
    /// overlaid with the table and the environment.
    fn declare(&self, name: &str) -> Result<(), RegistryError> {
        if self.read().contains_key(name) {
            return Ok(());
        }
        let name = names::shared(name)?;
        let base = name
            .split_once(':')
            .and_then(|(base, _)| {
                self.read()
                    .get(base)
                    .filter(|e| e.builtin)
                    .map(|e| e.config)
            })
            .unwrap_or(self.template);
        let mut config = self.resolve(&name, base)?;
        let (registered, controller) = if config.max_workers.is_some() {
            // A pool's queue is its own: the order the template or the
            // built-in gives its semaphores is not the pool's. Only an
            // order set for the pool itself reaches `make_pool` (which
            // refuses `Lifo`).
            let pool_base = DomainConfig {
                queue_order: QueueOrder::Fifo,
                ..base
            };
            config = self.resolve(&name, pool_base)?;
            make_pool(&name, &config)?
        } else {
            compartment(&name, &config)?
        };
        let mut entry = self.entry(registered, controller, config, base, false);
        entry.declared = true;
        entry.awaiting_code = true;
        self.write().insert(name, entry);
        Ok(())
    }

    /// `code` overlaid with the file's and the environment's settings for
    /// `name`, checked.
    fn resolve(&self, name: &Name, code: DomainConfig) -> Result<DomainConfig, RegistryError> {
        let mut config = code;
        if let Some(overlay) = self.file.domains.get(name.as_str()) {
            config.apply(overlay);
        }
        config.apply(&self.env.overlay(Some(name))?);
        config.limit = self.env.limit(Some(name), config.limit)?;
        config.partitions = partition_env::env_overrides(
            &self.env,
            name,
            config.max_concurrent,
            config.partitions,
        )?;
        check(name, config.max_concurrent, None)?;
        check_limit(name, &config)?;
        Ok(config)
    }

    fn entry(
        &self,
        compartment: Registered,
        controller: Option<Arc<DomainController>>,
        config: DomainConfig,
        code: DomainConfig,
        builtin: bool,
    ) -> Entry {
        let budgets = matches!(compartment, Registered::Partitioned(_))
            .then(|| Arc::new(partition::Budgets::new(config.max_wait, config.partitions)));
        Entry {
            budgets,
            compartment,
            controller,
            config,
            code,
            warned: AtomicBool::new(false),
            builtin,
            declared: false,
            awaiting_code: false,
            last_used: AtomicU64::new(self.now_ms()),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn read(&self) -> RwLockReadGuard<'_, HashMap<Name, Entry>> {
        self.entries.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, HashMap<Name, Entry>> {
        self.entries.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Looks `name` up, marking it used.
    fn lookup(&self, name: &str) -> Result<(Registered, DomainConfig), RegistryError> {
        self.lookup_with(name, |entry| (entry.compartment.clone(), entry.config))
    }

    /// Looks `name` up, marking it used, and reads what `read` wants of its
    /// entry under the read lock.
    fn lookup_with<R>(
        &self,
        name: &str,
        read: impl FnOnce(&Entry) -> R,
    ) -> Result<R, RegistryError> {
        let map = self.read();
        match map.get(name) {
            Some(entry) => {
                entry.last_used.store(self.now_ms(), Ordering::Relaxed);
                Ok(read(entry))
            }
            None => Err(not_found(name, &map)),
        }
    }

    /// The semaphore compartment `name` with its settings and, if it is
    /// adaptive, its limit's controller, from one lookup. Its
    /// [`try_acquire`](Domain::try_acquire) and [`track`](Domain::track)
    /// give seats that feed the limit; the registry's own lookups that take
    /// a seat ([`acquire_blocking`](Self::acquire_blocking), [`execute`](Self::execute),
    /// [`acquire_timeout`](Self::acquire_timeout), bulkhead-tokio's
    /// `RegistryExt`) start here.
    ///
    /// # Errors
    /// [`RegistryError::NotFound`], or [`RegistryError::WrongKind`] for a
    /// thread pool.
    pub fn domain(&self, name: &str) -> Result<Domain, RegistryError> {
        let (compartment, controller, config) = self.lookup_with(name, |entry| {
            (
                entry.compartment.clone(),
                entry.controller.clone(),
                entry.config,
            )
        })?;
        Ok(Domain {
            bulkhead: compartment.semaphore()?,
            controller,
            config,
        })
    }

    /// The semaphore compartment registered as `name`.
    ///
    /// # Errors
    /// [`RegistryError::NotFound`] (listing the registered names), or
    /// [`RegistryError::WrongKind`] for a thread pool.
    pub fn get(&self, name: &str) -> Result<Arc<Bulkhead>, RegistryError> {
        self.lookup(name)?.0.semaphore()
    }

    /// The thread-pool compartment registered as `name`.
    ///
    /// # Errors
    /// [`RegistryError::NotFound`], or [`RegistryError::WrongKind`] for a
    /// semaphore.
    pub fn get_pool(&self, name: &str) -> Result<Arc<RegisteredPool>, RegistryError> {
        self.lookup(name)?.0.pool()
    }

    /// The compartment `name`, created from `config` (overlaid with the
    /// file's and the environment's settings for `name`) if it does not
    /// exist. Concurrent calls for one name create exactly one.
    ///
    /// # When `name` already exists
    ///
    /// **The existing compartment wins**, whatever `config` says: a
    /// built-in (`database`, `cache`, …) keeps its built-in settings, and a
    /// compartment created earlier keeps the settings it was created with.
    /// If `config` differs from the code settings the existing compartment
    /// was created from, a `tracing` warning says so (once per
    /// compartment). To change a live compartment, call
    /// [`reconfigure`](Self::reconfigure); to change a built-in's defaults,
    /// [`RegistryBuilder::builtin`]; the precedence of code, file and
    /// environment is in [`RegistryBuilder`].
    ///
    /// ```
    /// use bulkhead_std::registry::{DomainConfig, Registry};
    ///
    /// let registry = Registry::local();
    /// let a = registry.get_or_create("tenant-7", DomainConfig::new(2))?;
    /// let b = registry.get_or_create("tenant-7", DomainConfig::new(99))?;
    /// assert!(std::sync::Arc::ptr_eq(&a, &b));
    /// assert_eq!(b.state().max_concurrent, 2); // the first settings win (and a warning says so)
    /// // A built-in exists already: its 10 seats win over the 4 asked for.
    /// assert_eq!(registry.get_or_create("database", DomainConfig::new(4))?.state().max_concurrent, 10);
    /// # Ok::<(), bulkhead_std::registry::RegistryError>(())
    /// ```
    ///
    /// # Errors
    /// [`RegistryError::WrongKind`] if `name` is a thread pool;
    /// [`RegistryError::InvalidName`],
    /// [`RegistryError::AtCapacity`], [`RegistryError::Settings`],
    /// [`RegistryError::Config`] when creating it.
    pub fn get_or_create(
        &self,
        name: &str,
        config: DomainConfig,
    ) -> Result<Arc<Bulkhead>, RegistryError> {
        self.get_or_insert(name, config, Registered::semaphore, compartment)
    }

    /// The partitioned compartment `name`, created if needed from `config`
    /// (which declares its partitions, [`DomainConfig::partitions`])
    /// overlaid with the file's and the environment's settings, as
    /// [`get_or_create`](Self::get_or_create) does. Take a partition's seats
    /// with [`partition`](Self::partition).
    ///
    /// # Errors
    /// As [`get_or_create`](Self::get_or_create);
    /// [`RegistryError::NotPartitioned`] if the compartment has no
    /// partitions; [`RegistryError::Config`] for partitions that do not fit
    /// (shares above the limit, …); [`RegistryError::Unsupported`] for a
    /// partitioned compartment with an adaptive `limit`, or with
    /// compartment-wide queue settings (each partition has its own line).
    pub fn get_or_create_partitioned(
        &self,
        name: &str,
        config: DomainConfig,
    ) -> Result<Arc<Partitioned>, RegistryError> {
        self.get_or_insert(name, config, Registered::partitioned, compartment)
    }

    /// The partitioned compartment registered as `name`.
    ///
    /// # Errors
    /// [`RegistryError::NotFound`], or [`RegistryError::NotPartitioned`].
    pub fn get_partitioned(&self, name: &str) -> Result<Arc<Partitioned>, RegistryError> {
        self.lookup(name)?.0.partitioned()
    }

    /// The partition `partition` of the partitioned compartment `domain`:
    /// a cheap handle that takes its seats ([`DomainPartition`]), with the
    /// partition's `max_wait` as its budget, or else the compartment's.
    /// The handle may be kept: it reads the budget at each wait, so a live
    /// [`reconfigure`](Self::reconfigure) of either `max_wait` reaches it.
    ///
    /// ```
    /// use bulkhead_std::bulkhead_core::partition::{Amount, PartitionConfig};
    /// use bulkhead_std::registry::{DomainConfig, Registry, RegistryError};
    ///
    /// let registry = Registry::local();
    /// registry.get_or_create_partitioned("db", DomainConfig::new(4).partitions_from([
    ///     PartitionConfig::new("live", Amount::Seats(3)),
    ///     PartitionConfig::new("batch", Amount::Seats(1)),
    /// ]))?;
    /// let live = registry.partition("db", "live")?;
    /// let _seat = live.try_acquire()?;
    /// let err = registry.partition("db", "btch").unwrap_err();
    /// assert!(err.to_string().contains("did you mean `batch`?"));
    /// # Ok::<(), RegistryError>(())
    /// ```
    ///
    /// # Errors
    /// [`RegistryError::NotFound`], [`RegistryError::NotPartitioned`],
    /// [`RegistryError::UnknownPartition`] (naming the partitions it has).
    pub fn partition(
        &self,
        domain: &str,
        partition: &str,
    ) -> Result<DomainPartition, RegistryError> {
        let (compartment, budgets) = self.lookup_with(domain, |entry| {
            (entry.compartment.clone(), entry.budgets.clone())
        })?;
        let compartment = compartment.partitioned()?;
        let id = compartment
            .id(partition)
            .map_err(|e| RegistryError::UnknownPartition(Box::new(e)))?;
        // Every partitioned entry has its budgets.
        let budgets = budgets.unwrap_or_else(|| {
            Arc::new(partition::Budgets::new(
                bulkhead_core::MaxWait::FailFast,
                &[],
            ))
        });
        Ok(DomainPartition {
            compartment,
            id,
            budgets,
        })
    }

    /// The partitioned compartments, by name (for the metrics).
    #[cfg(feature = "metrics")]
    pub(crate) fn partitioned_compartments(&self) -> Vec<Arc<Partitioned>> {
        self.read()
            .values()
            .filter_map(|e| match &e.compartment {
                Registered::Partitioned(p) => Some(Arc::clone(p)),
                _ => None,
            })
            .collect()
    }

    /// The shared body of `get_or_create` and `get_or_create_pool`: look
    /// up, or create under the write lock so that concurrent callers for
    /// one name create exactly one compartment. `kind` picks the wanted
    /// kind out of an entry (or refuses the other kind).
    fn get_or_insert<T>(
        &self,
        name: &str,
        config: DomainConfig,
        kind: fn(Registered) -> Result<T, RegistryError>,
        make: impl FnOnce(
            &Name,
            &DomainConfig,
        ) -> Result<(Registered, Option<Arc<DomainController>>), RegistryError>,
    ) -> Result<T, RegistryError> {
        match self.lookup_with(name, |e| (e.compartment.clone(), e.awaiting_code)) {
            Err(RegistryError::NotFound { .. }) => {}
            // Declared by the file, no code settings yet: rebuilt below
            // from them if nothing uses it (the write lock decides).
            Ok((_, true)) => {}
            found => {
                self.note_differing(name, &config);
                return found.and_then(|(registered, _)| kind(registered));
            }
        }
        let code = config;
        let name = names::shared(name)?;
        let config = self.resolve(&name, config)?;
        let mut map = self.write();
        let mut declared = false;
        if let Some(entry) = map.get(&name) {
            // Idle: only the registry holds it, so nobody sees the swap.
            if !(entry.awaiting_code && entry.compartment.is_idle()) {
                let found = entry.compartment.clone();
                drop(map);
                self.note_differing(&name, &code);
                return kind(found);
            }
            declared = true;
        } else {
            self.make_room(&mut map, &name)?;
        }
        let (registered, controller) = make(&name, &config)?;
        let mut entry = self.entry(registered.clone(), controller, config, code, false);
        entry.declared = declared;
        let replaced = map.insert(name, entry);
        // A replaced declared pool joins its idle workers when dropped:
        // not under the lock.
        drop(map);
        drop(replaced);
        kind(registered)
    }

    /// The rule when `get_or_create` finds `name` already registered (a
    /// built-in, or created earlier) with other code settings: the existing
    /// compartment wins and is returned unchanged. Said once per
    /// compartment as a `tracing` warning, so a mismatch is never silent.
    fn note_differing(&self, name: &str, requested: &DomainConfig) {
        let map = self.read();
        let Some((name, entry)) = map.get_key_value(name) else {
            return;
        };
        let differs = if entry.awaiting_code {
            // Declared by the file and in use before code asked for it:
            // what the code asks for, under the same file and environment,
            // against what it runs with.
            self.resolve(name, *requested).ok() != Some(entry.config)
        } else {
            entry.code != *requested
        };
        if differs && !entry.warned.swap(true, Ordering::Relaxed) {
            let kind = if entry.builtin {
                "the built-in"
            } else if entry.awaiting_code {
                "the file-declared (already in use, so built from the template and its table)"
            } else {
                "the existing"
            };
            tracing::warn!(
                compartment = name.as_str(),
                requested = ?requested,
                existing = ?entry.code,
                "bulkhead: get_or_create(\"{name}\") asked for other settings than {kind} \
                 compartment has; the existing compartment wins and is returned unchanged \
                 (change it with reconfigure, or configure the built-in with \
                 RegistryBuilder::builtin)"
            );
        }
    }

    /// The `BULKHEAD_*` variables that named no setting, or nearly spelled
    /// a registered compartment's name, when the registry was built
    /// (probably typos), each with the closest valid variable;
    /// each was also logged as a `tracing` warning. Always empty unless
    /// the registry was built with
    /// [`RegistryBuilder::allow_unknown_variables`]: by default such a
    /// variable makes `build` fail.
    pub fn unknown_variables(&self) -> &[UnknownVariable] {
        &self.unknown
    }

    /// As [`get_or_create`](Self::get_or_create) with the registry's
    /// template: [`DEFAULT_TEMPLATE`] overlaid with the file's `[default]`
    /// and the `BULKHEAD_*` variables without a name segment.
    ///
    /// # Errors
    /// As [`get_or_create`](Self::get_or_create).
    pub fn get_or_create_default(&self, name: &str) -> Result<Arc<Bulkhead>, RegistryError> {
        self.get_or_create(name, self.template)
    }

    /// The thread-pool compartment `name`, created if needed with
    /// `max_workers` workers (default: `max_concurrent`) and
    /// `max_concurrent - max_workers` queue seats.
    ///
    /// # Errors
    /// As [`get_or_create`](Self::get_or_create), and
    /// [`RegistryError::Pool`] if its threads cannot start.
    pub fn get_or_create_pool(
        &self,
        name: &str,
        config: DomainConfig,
    ) -> Result<Arc<RegisteredPool>, RegistryError> {
        self.get_or_insert(name, config, Registered::pool, make_pool)
    }

    /// Registers `bulkhead` under its name, replacing any compartment of
    /// that name, which is returned. Overwriting a built-in is allowed but
    /// logs a `tracing` warning (it stays a built-in). See the type's docs
    /// for what happens to the old compartment's waiters: they keep
    /// waiting on it.
    ///
    /// `register` is never refused by
    /// [`max_entries`](RegistryBuilder::max_entries). A registered
    /// compartment that is not a built-in is a dynamic entry: a bounded
    /// registry may evict it once it is idle by the eviction rule.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use bulkhead_std::Bulkhead;
    /// use bulkhead_std::registry::Registry;
    ///
    /// let registry = Registry::local();
    /// let old = registry.get("cache")?;
    /// let seat = old.try_acquire()?;
    /// registry.register(Bulkhead::new("cache", 500)?); // logs a warning
    /// assert_eq!(registry.get("cache")?.state().max_concurrent, 500);
    /// drop(seat); // the old compartment is still valid
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn register(&self, bulkhead: impl Into<Arc<Bulkhead>>) -> Option<Registered> {
        let bulkhead = bulkhead.into();
        let name = bulkhead.name_handle();
        let s = bulkhead.state();
        let mut config = DomainConfig::new(s.max_concurrent)
            .admission(bulkhead.admission())
            .queue_order(bulkhead.queue_order());
        let mut map = self.write();
        let builtin = map.get(&name).is_some_and(|e| e.builtin);
        let declared = map.get(&name).is_some_and(|e| e.declared);
        if let Some(old) = map.get(&name) {
            config.max_wait = old.config.max_wait;
        }
        if builtin {
            tracing::warn!(
                compartment = name.as_str(),
                "bulkhead: the built-in compartment `{name}` was replaced by register(); \
                 its settings-owned limits no longer apply"
            );
        }
        let mut entry = self.entry(
            Registered::Semaphore(bulkhead),
            None,
            config,
            config,
            builtin,
        );
        entry.declared = declared;
        map.insert(name, entry).map(|old| old.compartment)
    }

    /// Removes the compartment `name`; returns whether one was removed.
    /// Holders of its `Arc` keep using it.
    ///
    /// ```
    /// use bulkhead_std::registry::{DomainConfig, Registry, RegistryError};
    ///
    /// let registry = Registry::local();
    /// registry.get_or_create("reports", DomainConfig::new(1))?;
    /// assert!(registry.unregister("reports")?);
    /// assert!(!registry.unregister("reports")?);
    /// assert!(matches!(registry.unregister("database"), Err(RegistryError::BuiltIn { .. })));
    /// # Ok::<(), RegistryError>(())
    /// ```
    ///
    /// # Errors
    /// [`RegistryError::BuiltIn`] for a built-in: removing it would
    /// silently degrade isolation.
    pub fn unregister(&self, name: &str) -> Result<bool, RegistryError> {
        let mut map = self.write();
        match map.get_key_value(name) {
            Some((name, entry)) if entry.builtin => {
                Err(RegistryError::BuiltIn { name: name.clone() })
            }
            Some(_) => Ok(map.remove(name).is_some()),
            None => Ok(false),
        }
    }

    /// The registered names, sorted.
    pub fn list_names(&self) -> Vec<Name> {
        sorted_names(&self.read())
    }

    /// A snapshot of every compartment, by name.
    pub fn all_states(&self) -> BTreeMap<Name, Snapshot> {
        let compartments: Vec<_> = self
            .read()
            .iter()
            .map(|(name, e)| (name.clone(), e.compartment.clone()))
            .collect();
        compartments
            .into_iter()
            .map(|(name, c)| (name, c.snapshot()))
            .collect()
    }

    /// The adaptive compartments' controllers, by name (for the metrics).
    #[cfg(feature = "metrics")]
    pub(crate) fn controllers(&self) -> Vec<(Name, Arc<DomainController>)> {
        self.read()
            .iter()
            .filter_map(|(name, e)| Some((name.clone(), Arc::clone(e.controller.as_ref()?))))
            .collect()
    }

    /// The settings a compartment runs with.
    ///
    /// # Errors
    /// [`RegistryError::NotFound`].
    pub fn config(&self, name: &str) -> Result<DomainConfig, RegistryError> {
        Ok(self.lookup(name)?.1)
    }

    /// The compartment `database:ALIAS` (the built-in `database` for
    /// `"default"`), created from the built-in's current settings.
    ///
    /// # Errors
    /// As [`get_or_create`](Self::get_or_create).
    pub fn database(&self, alias: &str) -> Result<Arc<Bulkhead>, RegistryError> {
        self.instance("database", alias)
    }

    /// The compartment `cache:NAME` (the built-in `cache` for
    /// `"default"`), created from the built-in's current settings.
    ///
    /// # Errors
    /// As [`get_or_create`](Self::get_or_create).
    pub fn cache(&self, name: &str) -> Result<Arc<Bulkhead>, RegistryError> {
        self.instance("cache", name)
    }

    fn instance(&self, base: &str, instance: &str) -> Result<Arc<Bulkhead>, RegistryError> {
        if instance == "default" {
            return self.get(base);
        }
        let config = self.config(base)?;
        self.get_or_create(&format!("{base}:{instance}"), config)
    }

    /// Applies `config` to the live compartment `name`:
    ///
    /// - `max_concurrent` applies to callers admitted after the change;
    ///   callers inside keep their seat (growing wakes waiters, shrinking
    ///   never blocks);
    /// - `max_waiting` and `max_wait` apply at once;
    /// - `queue_order` applies at once (core's
    ///   [`set_queue_order`](bulkhead_core::Bulkhead::set_queue_order)):
    ///   waiters already in line keep their places, and the new order
    ///   decides where newcomers join, which end a freed seat goes to and
    ///   whom a full queue turns away;
    /// - a different `admission` is refused ([`RegistryError::Unsupported`]):
    ///   register a new compartment instead;
    /// - on a partitioned compartment, `max_concurrent` and the partitions'
    ///   settings apply at once (core's
    ///   [`Partitioned::reconfigure`](bulkhead_core::partition::Partitioned::reconfigure)
    ///   and `set_max_concurrent`), ordered so that the shares fit the
    ///   limit throughout; the partitions themselves (their names and
    ///   order) cannot change, and a plain compartment cannot become
    ///   partitioned ([`RegistryError::Unsupported`]);
    /// - on a thread pool, a change of `max_workers` or `max_concurrent`
    ///   rebuilds its pool without losing queued work (see
    ///   [`RegisteredPool`]); `queue_order` [`Lifo`](QueueOrder::Lifo) is
    ///   refused ([`RegistryError::Unsupported`]): a pool's queue is its
    ///   own, served oldest first.
    ///
    /// ```
    /// use bulkhead_std::registry::{DomainConfig, Registry};
    ///
    /// let registry = Registry::local();
    /// let db = registry.get("database")?;
    /// let seat = db.try_acquire()?;
    /// registry.reconfigure("database", DomainConfig::new(1))?;
    /// assert!(db.try_acquire().is_err()); // the new limit, and the holder kept its seat
    /// drop(seat);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`RegistryError::NotFound`], [`RegistryError::Config`] (zero or too
    /// many seats, or a queue limit above
    /// [`MAX_WAITING_LIMIT`](bulkhead_core::MAX_WAITING_LIMIT)),
    /// [`RegistryError::Unsupported`], [`RegistryError::Pool`].
    pub fn reconfigure(&self, name: &str, config: DomainConfig) -> Result<(), RegistryError> {
        let mut map = self.write();
        let Some((name, entry)) = map.get_key_value(name) else {
            return Err(not_found(name, &map));
        };
        let name = name.clone();
        check(&name, config.max_concurrent, config.max_waiting)?;
        if config.limit != entry.config.limit {
            return Err(RegistryError::Unsupported {
                name,
                what: "the adaptive limit cannot change on a live compartment; register a new \
                       compartment (or restart with the new settings) instead",
            });
        }
        if !config.partitions.is_empty() && !matches!(entry.compartment, Registered::Partitioned(_))
        {
            return Err(RegistryError::Unsupported {
                name,
                what: "a live compartment cannot become partitioned; create a partitioned \
                       compartment under another name (get_or_create_partitioned), or restart \
                       with the partitions declared",
            });
        }
        let adaptive = entry.controller.is_some();
        if adaptive && config.max_concurrent != entry.config.max_concurrent {
            return Err(RegistryError::Unsupported {
                name,
                what: "the adaptive limit owns max_concurrent; pass the compartment's \
                       current settings (Registry::config) with only the fields to change",
            });
        }
        match &entry.compartment {
            Registered::Semaphore(b) => {
                if config.admission != b.admission() {
                    return Err(RegistryError::Unsupported {
                        name,
                        what: "admission cannot change on a live compartment; register a new \
                               compartment with the other admission instead",
                    });
                }
                if !adaptive {
                    b.set_max_concurrent(config.max_concurrent)?;
                }
                b.set_max_waiting(config.max_waiting)?;
                b.set_queue_order(config.queue_order);
            }
            Registered::Partitioned(p) => {
                reconfigure_partitioned(&name, p, &entry.config, &config)?;
            }
            Registered::Pool(p) => {
                check_pool_order(&name, &config)?;
                let old = entry.config;
                if old.max_workers != config.max_workers
                    || old.max_concurrent != config.max_concurrent
                {
                    p.rebuild(pool_config(&name, &config))?;
                }
            }
        }
        if let Some(entry) = map.get_mut(&name) {
            if let Some(budgets) = &entry.budgets {
                budgets.set(config.max_wait, config.partitions);
            }
            entry.config = config;
        }
        Ok(())
    }
}

impl Default for Registry {
    /// [`Registry::local`].
    fn default() -> Self {
        Self::local()
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("names", &self.list_names())
            .field("max_entries", &self.max_entries)
            .field("idle_after", &self.idle_after)
            .finish_non_exhaustive()
    }
}

/// Checks the seat and queue limits of the compartment `name`.
fn check(
    name: &Name,
    max_concurrent: usize,
    max_waiting: Option<usize>,
) -> Result<(), RegistryError> {
    let mut config = Config::new("", max_concurrent);
    config.max_waiting = max_waiting;
    config.check_named(name).map_err(RegistryError::Config)
}

/// Checks that the settings' adaptive limit, if any, builds.
fn check_limit(name: &Name, config: &DomainConfig) -> Result<(), RegistryError> {
    if let Some(limit) = &config.limit {
        limit
            .build_starting_at(config.max_concurrent)
            .map_err(|error| RegistryError::Limit {
                name: name.clone(),
                error,
            })?;
    }
    Ok(())
}

/// A semaphore compartment from resolved settings and, with a `limit`,
/// its controller; an adaptive compartment starts at the limit's initial
/// value (its `max_concurrent`, clamped into the bounds, unless `initial`
/// is set), so that `state()` and the algorithm agree from the start.
fn semaphore(
    name: &Name,
    config: &DomainConfig,
) -> Result<(Arc<Bulkhead>, Option<Arc<DomainController>>), RegistryError> {
    let algorithm =
        match &config.limit {
            Some(limit) => Some(limit.build_starting_at(config.max_concurrent).map_err(
                |error| RegistryError::Limit {
                    name: name.clone(),
                    error,
                },
            )?),
            None => None,
        };
    let seats = algorithm
        .as_ref()
        .map_or(config.max_concurrent, Limit::limit);
    let mut core = Config::new("", seats)
        .admission(config.admission)
        .queue_order(config.queue_order);
    core.max_waiting = config.max_waiting;
    let bulkhead = Arc::new(Bulkhead::with_name(name.clone(), core, StdLock::new())?);
    Ok((
        bulkhead,
        algorithm.map(|a| Arc::new(DomainController::new(a))),
    ))
}

/// The compartment resolved settings ask for: partitioned if they declare
/// partitions, a semaphore otherwise.
fn compartment(
    name: &Name,
    config: &DomainConfig,
) -> Result<(Registered, Option<Arc<DomainController>>), RegistryError> {
    if config.partitions.is_empty() {
        let (bulkhead, controller) = semaphore(name, config)?;
        return Ok((Registered::Semaphore(bulkhead), controller));
    }
    check_partitioned(name, config)?;
    check_variable_segments(name, config.partitions)?;
    let partitioned = Partitioned::with_lock(
        name.clone(),
        config.max_concurrent,
        config.partitions,
        StdLock::new(),
    )?;
    Ok((Registered::Partitioned(Arc::new(partitioned)), None))
}

/// Refuses the settings a partitioned compartment cannot honour, rather
/// than ignoring them.
fn check_partitioned(name: &Name, config: &DomainConfig) -> Result<(), RegistryError> {
    let what = if config.limit.is_some() {
        "an adaptive limit is not supported yet on a partitioned compartment: its shares are \
         set against a fixed max_concurrent; remove `limit` (code, file or \
         BULKHEAD_<NAME>_LIMIT_* variables) or the partitions"
    } else if config.max_waiting.is_some() || config.queue_order != QueueOrder::Fifo {
        "each partition of a partitioned compartment has its own line: set max_waiting and \
         queue_order on the partitions ([domains.NAME.partitions.P] or \
         BULKHEAD_<NAME>_PARTITIONS_<P>_*), not on the compartment"
    } else if config.admission != bulkhead_core::Admission::Fifo {
        "a partitioned compartment serves freed seats by share and priority, so another \
         admission cannot apply; remove `admission` from its settings"
    } else if config.max_workers.is_some() {
        "a thread pool cannot be partitioned; remove max_workers or the partitions"
    } else {
        return Ok(());
    };
    Err(RegistryError::Unsupported {
        name: name.clone(),
        what,
    })
}

/// Refuses two partitions whose names give the same variable segment
/// (`live-x` and `live_x`): a `BULKHEAD_<NAME>_PARTITIONS_LIVE_X_*`
/// variable could not say which it sets.
fn check_variable_segments(
    name: &Name,
    partitions: &[PartitionConfig],
) -> Result<(), RegistryError> {
    let segments: Vec<String> = partitions.iter().map(|p| env_segment(&p.name)).collect();
    for (i, segment) in segments.iter().enumerate() {
        if let Some(j) = segments[..i].iter().position(|s| s == segment) {
            // Equal names are core's DuplicatePartition, said in its words.
            if partitions[i].name != partitions[j].name {
                return Err(RegistryError::PartitionVariablesClash {
                    name: name.clone(),
                    first: partitions[j].name.as_str().to_owned(),
                    second: partitions[i].name.as_str().to_owned(),
                    segment: segment.clone(),
                });
            }
        }
    }
    Ok(())
}

/// Applies new settings to a live partitioned compartment: the limit and
/// the partitions' settings (the same partitions, in the same order). The
/// two steps are ordered so that the shares fit the limit in between, and
/// the first is undone if the second is refused.
fn reconfigure_partitioned(
    name: &Name,
    compartment: &Partitioned,
    old: &DomainConfig,
    new: &DomainConfig,
) -> Result<(), RegistryError> {
    if new.partitions.is_empty() {
        return Err(RegistryError::Unsupported {
            name: name.clone(),
            what: "a partitioned compartment keeps its partitions; pass them with the new \
                   settings (Registry::config gives the current ones), or register a new \
                   compartment",
        });
    }
    let names = |partitions: &[PartitionConfig]| -> Vec<String> {
        partitions
            .iter()
            .map(|p| p.name.as_str().to_owned())
            .collect()
    };
    let same = new.partitions.len() == old.partitions.len()
        && new
            .partitions
            .iter()
            .zip(old.partitions)
            .all(|(a, b)| a.name == b.name);
    if !same {
        return Err(RegistryError::PartitionsChanged {
            name: name.clone(),
            expected: names(old.partitions),
            given: names(new.partitions),
        });
    }
    check_partitioned(name, new)?;
    // One step: the settings are checked against the new limit, and
    // nothing changes on an error.
    compartment.reconfigure_with_limit(new.max_concurrent, new.partitions)?;
    Ok(())
}

/// A thread-pool compartment from resolved settings, which must not carry
/// an adaptive limit.
fn make_pool(
    name: &Name,
    config: &DomainConfig,
) -> Result<(Registered, Option<Arc<DomainController>>), RegistryError> {
    if config.limit.is_some() {
        return Err(RegistryError::Unsupported {
            name: name.clone(),
            what: "an adaptive limit applies to semaphore compartments, not thread \
                   pools; remove `limit` from this compartment's settings (code, \
                   file or BULKHEAD_<NAME>_LIMIT_* variables)",
        });
    }
    if !config.partitions.is_empty() {
        return Err(RegistryError::Unsupported {
            name: name.clone(),
            what: "a thread pool cannot be partitioned; remove max_workers or the partitions",
        });
    }
    check_pool_order(name, config)?;
    let pool = RegisteredPool::new(pool_config(name, config))?;
    Ok((Registered::Pool(Arc::new(pool)), None))
}

/// A thread pool's queue is its own, served oldest first; its submissions
/// never wait in the compartment's line, so newest first would change
/// nothing and is refused rather than ignored.
fn check_pool_order(name: &Name, config: &DomainConfig) -> Result<(), RegistryError> {
    if config.queue_order == QueueOrder::Lifo {
        return Err(RegistryError::Unsupported {
            name: name.clone(),
            what: "a thread pool runs its queued tasks oldest first and its submissions never \
                   wait in line, so queue_order = \"lifo\" cannot apply; remove queue_order \
                   from this compartment's settings (code, file or BULKHEAD_<NAME>_QUEUE_ORDER)",
        });
    }
    Ok(())
}

fn pool_config(name: &Name, config: &DomainConfig) -> PoolConfig {
    let workers = config.max_workers.unwrap_or(config.max_concurrent);
    PoolConfig::named(name.clone(), workers)
        .queue_capacity(config.max_concurrent.saturating_sub(workers))
}

fn sorted_names(map: &HashMap<Name, Entry>) -> Vec<Name> {
    let mut names: Vec<_> = map.keys().cloned().collect();
    names.sort_unstable();
    names
}

fn not_found(name: &str, map: &HashMap<Name, Entry>) -> RegistryError {
    RegistryError::NotFound {
        name: name.to_owned(),
        registered: sorted_names(map),
    }
}
