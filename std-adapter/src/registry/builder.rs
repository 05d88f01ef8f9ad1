//! [`RegistryBuilder`]: where a registry's settings come from.

use std::collections::BTreeMap;
use std::time::Duration;

use super::env::EnvSource;
use super::file::FileSettings;
use super::parse::SettingsError;
use super::settings::DomainConfig;
use super::{BUILTINS, DEFAULT_TEMPLATE, Registry, RegistryError};

/// Builds a [`Registry`]: code settings, a TOML file, the environment,
/// and the bounds for dynamic keys.
///
/// # Precedence
///
/// For each field of each compartment, the later source wins:
///
/// 1. **code**: the built-in defaults (see [`Registry`]), changed with
///    [`builtin`](Self::builtin), or the [`DomainConfig`] passed to
///    `get_or_create` (for the template: [`default_config`](Self::default_config));
/// 2. **file** (feature `config-file`): `[domains.NAME]` (the template:
///    `[default]`);
/// 3. **environment**: `BULKHEAD_<NAME>_*` (the template: `BULKHEAD_*`).
///
/// Code gives the defaults the program ships with, the file the
/// deployment's settings, the environment the operator's last-minute
/// override. [`Registry::reconfigure`] is an explicit live change and
/// replaces all three for that compartment.
///
/// The environment is read through an [`EnvSource`] snapshot:
/// [`EnvSource::process`] by default, [`without_env`](Self::without_env)
/// turns it off. Every value is checked when the registry is built (or,
/// for a dynamic name, when it is first created): a bad one is a
/// [`SettingsError`] naming the variable or key. A key or variable that
/// names no setting is an error too, and so is a variable whose name
/// segment nearly spells a registered compartment without being one
/// (`BULKHEAD_DATABSE_MAX_CONCURRENT`; see
/// [`allow_unknown_variables`](Self::allow_unknown_variables) and
/// [`EnvSource`]'s misspelled variables).
///
/// # Which compartments exist
///
/// After [`build`](Self::build): the built-ins, and every compartment the
/// file declares with a `[domains.NAME]` table (a thread pool if the table
/// sets `max_workers`, a semaphore otherwise), so that
/// [`Registry::get`] and everything built on it find it without a
/// `get_or_create` first. A declared compartment starts from the
/// template (`default_config`, the file's `[default]`, the `BULKHEAD_*`
/// variables without a name segment; for `database:ALIAS` and
/// `cache:NAME`, from that built-in's settings), overlaid with its table
/// and its `BULKHEAD_<NAME>_*` variables. The first `get_or_create` for
/// it, if nothing has used it yet, rebuilds it with the code settings it
/// passes in place of the template, so the precedence above holds for it
/// too; once it is in use, the existing compartment wins (with a warning
/// if the code asks for other settings). Environment variables never
/// declare a compartment: they override settings of one that exists or
/// is created later (unless their name nearly spells a registered
/// compartment's: that is a typo, see above).
///
/// ```
/// use bulkhead_std::registry::{DomainConfig, EnvSource, Registry};
///
/// let env = EnvSource::from_pairs([
///     ("BULKHEAD_DATABASE_MAX_CONCURRENT", "32"),
///     ("BULKHEAD_MAX_CONCURRENT", "3"),
/// ]);
/// let registry = Registry::builder()
///     .builtin("database", DomainConfig::new(16)) // code: 16, env wins: 32
///     .builtin("cache", DomainConfig::new(64))
///     .env(env)
///     .build()?;
/// assert_eq!(registry.get("database")?.state().max_concurrent, 32);
/// assert_eq!(registry.get("cache")?.state().max_concurrent, 64);
/// assert_eq!(registry.get_or_create_default("reports")?.state().max_concurrent, 3);
/// # Ok::<(), bulkhead_std::registry::RegistryError>(())
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct RegistryBuilder {
    pub(super) env: EnvSource,
    pub(super) file: FileSettings,
    pub(super) file_error: Option<SettingsError>,
    pub(super) template: DomainConfig,
    pub(super) builtins: BTreeMap<&'static str, DomainConfig>,
    pub(super) max_entries: Option<usize>,
    pub(super) idle_after: Option<Duration>,
    pub(super) allow_unknown: bool,
}

impl Default for RegistryBuilder {
    fn default() -> Self {
        Self {
            env: EnvSource::process(),
            file: FileSettings::default(),
            file_error: None,
            template: DEFAULT_TEMPLATE,
            builtins: BUILTINS.into_iter().collect(),
            max_entries: None,
            idle_after: None,
            allow_unknown: false,
        }
    }
}

impl RegistryBuilder {
    /// Reads the environment from `env` instead of the process.
    pub fn env(mut self, env: EnvSource) -> Self {
        self.env = env;
        self
    }

    /// The `BULKHEAD_*` variables of the environment source that name no
    /// setting, or whose name nearly spells a compartment registered so
    /// far (a built-in, or one the file declares) without being one:
    /// probably typos, each with the closest valid variable.
    /// [`build`](Self::build) refuses the first one, unless
    /// [`allow_unknown_variables`](Self::allow_unknown_variables).
    ///
    /// ```
    /// use bulkhead_std::registry::{EnvSource, Registry};
    ///
    /// let builder = Registry::builder().env(EnvSource::from_pairs([
    ///     ("BULKHEAD_DATABASE_MAX_CONCURENT", "2"),
    ///     ("BULKHEAD_DATABASE_MAX_WAIT", "200ms"), // valid: a duration with a unit
    /// ]));
    /// let unknown = builder.unknown_variables();
    /// assert_eq!(unknown.len(), 1);
    /// assert_eq!(unknown[0].suggestion(), Some("BULKHEAD_DATABASE_MAX_CONCURRENT"));
    /// ```
    pub fn unknown_variables(&self) -> Vec<super::env::UnknownVariable> {
        let registered: Vec<&str> = self
            .builtins
            .keys()
            .copied()
            .chain(self.file.domains.keys().map(String::as_str))
            .collect();
        self.env.unknown(&registered)
    }

    /// Accepts `BULKHEAD_*` variables that name no setting, or whose name
    /// nearly spells a registered compartment: [`build`](Self::build)
    /// logs a `tracing` warning for each (with the closest valid variable)
    /// and keeps the list ([`Registry::unknown_variables`]), instead of
    /// failing with a
    /// [`SettingsErrorKind::UnknownKey`](super::SettingsErrorKind::UnknownKey)
    /// error for the first, which is the default. For an environment
    /// shared with other versions of the program. The file's unknown keys
    /// stay errors: the file belongs to this program.
    ///
    /// One rule for every variable: a misspelled setting of a built-in,
    /// of a compartment created later, or of an adaptive limit
    /// (`BULKHEAD_DATABASE_LIMIT_MAXX`) is refused by default, and
    /// ignored with a warning here. So is a misspelled compartment
    /// (`BULKHEAD_DATABSE_MAX_CONCURRENT`), whose variable then still
    /// applies if code creates a compartment under that very name.
    ///
    /// ```
    /// use bulkhead_std::registry::{EnvSource, Registry, SettingsErrorKind};
    ///
    /// let env = EnvSource::from_pairs([("BULKHEAD_DATABASE_LIMIT_MAXX", "64")]);
    /// let err = Registry::builder().env(env.clone()).build().unwrap_err();
    /// let err = err.settings().unwrap();
    /// assert_eq!((err.kind(), err.key(), err.value()), (SettingsErrorKind::UnknownKey, "BULKHEAD_DATABASE_LIMIT_MAXX", "64"));
    /// assert!(err.to_string().contains("BULKHEAD_DATABASE_LIMIT_MAX, which it nearly spells"));
    ///
    /// let registry = Registry::builder().env(env).allow_unknown_variables().build()?;
    /// assert_eq!(registry.unknown_variables()[0].variable(), "BULKHEAD_DATABASE_LIMIT_MAXX");
    /// # Ok::<(), bulkhead_std::registry::RegistryError>(())
    /// ```
    pub fn allow_unknown_variables(mut self) -> Self {
        self.allow_unknown = true;
        self
    }

    /// Turns environment reading off.
    pub fn without_env(self) -> Self {
        self.env(EnvSource::disabled())
    }

    /// Changes a built-in's code default. A name that is not a built-in
    /// is ignored; use [`Registry::get_or_create`] for other names.
    pub fn builtin(mut self, name: &str, config: DomainConfig) -> Self {
        if let Some(slot) = self.builtins.get_mut(name) {
            *slot = config;
        }
        self
    }

    /// The code default of the template used by
    /// [`Registry::get_or_create_default`].
    pub fn default_config(mut self, config: DomainConfig) -> Self {
        self.template = config;
        self
    }

    /// Bounds the dynamic (not built-in) compartments to `max_entries`.
    /// When it is reached, creating one more evicts the least recently
    /// used idle entry, or fails with [`RegistryError::AtCapacity`] if
    /// every entry is busy (see [`Registry`] for the eviction rule).
    pub fn max_entries(mut self, max_entries: usize) -> Self {
        self.max_entries = Some(max_entries);
        self
    }

    /// Evicts dynamic compartments unused for `idle_after`, when the next
    /// one is created (or on [`Registry::evict_idle`]); busy ones never.
    pub fn idle_after(mut self, idle_after: Duration) -> Self {
        self.idle_after = Some(idle_after);
        self
    }

    /// Reads settings from TOML `text` (see the format in
    /// [`toml_file`](Self::toml_file)). An error is reported by
    /// [`build`](Self::build).
    ///
    /// ```
    /// use bulkhead_std::registry::{Registry, SettingsErrorKind};
    ///
    /// let registry = Registry::builder()
    ///     .without_env()
    ///     .toml_str("[domains.database]\nmax_concurrent = 7\n")
    ///     .build()?;
    /// assert_eq!(registry.get("database")?.state().max_concurrent, 7);
    ///
    /// let err = Registry::builder().toml_str("[domains.cache]\nmax_concurent = 7\n").build();
    /// let err = err.unwrap_err();
    /// let settings = err.settings().unwrap();
    /// assert_eq!(settings.kind(), SettingsErrorKind::UnknownKey);
    /// assert_eq!(settings.key(), "domains.cache.max_concurent");
    /// assert!(err.to_string().contains("in the TOML string"));
    /// assert!(err.to_string().contains("did you mean max_concurrent?"));
    /// # Ok::<(), bulkhead_std::registry::RegistryError>(())
    /// ```
    #[cfg(feature = "config-file")]
    pub fn toml_str(self, text: &str) -> Self {
        self.with_file(FileSettings::parse("the TOML string", text))
    }

    /// Reads settings from the TOML file at `path`:
    ///
    /// ```toml
    /// [default]              # the template (get_or_create_default)
    /// max_concurrent = 10
    ///
    /// [domains.database]     # one table per compartment name
    /// max_concurrent = 20
    /// max_wait = "50ms"      # a duration with a unit; "0" fails fast, "forever"
    /// # max_wait_ms = 50     # the same in whole milliseconds (one of the two)
    /// max_waiting = 100
    /// admission = "fifo"     # or "barging", "bounded_barging"
    /// queue_order = "fifo"   # or "lifo": newest first, drop-oldest when the queue is full
    ///
    /// [domains."database:replica"]
    /// max_workers = 4        # thread-pool compartments
    /// ```
    ///
    /// Each `[domains.NAME]` table declares that compartment: it exists
    /// once the registry is built (see
    /// [which compartments exist](Self#which-compartments-exist)). Unknown
    /// keys are errors. An unreadable or invalid file is reported by
    /// [`build`](Self::build).
    #[cfg(feature = "config-file")]
    pub fn toml_file(self, path: impl AsRef<std::path::Path>) -> Self {
        use super::parse::SettingsErrorKind;
        let path = path.as_ref();
        let origin = path.display().to_string();
        let parsed = match std::fs::read_to_string(path) {
            Ok(text) => FileSettings::parse(&origin, &text),
            Err(e) => Err(SettingsError::new(
                SettingsErrorKind::Io,
                origin,
                e.to_string(),
                "a readable UTF-8 TOML file",
            )),
        };
        self.with_file(parsed)
    }

    #[cfg(feature = "config-file")]
    fn with_file(mut self, parsed: Result<FileSettings, SettingsError>) -> Self {
        match parsed {
            Ok(file) => self.file = file,
            Err(e) => self.file_error = Some(e),
        }
        self
    }

    /// Checks every source and builds the registry with its built-ins.
    ///
    /// # Errors
    /// [`RegistryError::Settings`] for a bad variable or file value,
    /// [`RegistryError::Config`] for a resulting invalid configuration.
    pub fn build(self) -> Result<Registry, RegistryError> {
        Registry::from_builder(self)
    }
}
