//! [`LimitConfig`]: an adaptive limit described in configuration, as a
//! TOML table (`limit = { algorithm = "gradient2", min = 4, max = 200 }`)
//! or as `BULKHEAD_<NAME>_LIMIT_*` environment variables.

use bulkhead_core::limit::{
    Aimd, AimdParams, AnyLimit, Gradient2, Gradient2Params, LimitError, MAX_ADAPTIVE_LIMIT, Vegas,
    VegasParams, Windowed,
};

use super::parse::{Field, SettingsError, SettingsErrorKind, whole_number};
use super::spelling::{ENV_PREFIX, env_segment};

/// Which algorithm a [`LimitConfig`] builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(
    any(feature = "serde", feature = "config-file"),
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "lowercase")
)]
pub enum Algorithm {
    /// [`Aimd`]: additive increase, multiplicative decrease.
    Aimd,
    /// [`Vegas`]: delay-based, from TCP Vegas.
    Vegas,
    /// [`Gradient2`]: long-term over current round-trip time.
    Gradient2,
}

impl Algorithm {
    /// Every algorithm, in the order error messages list them.
    pub const ALL: [Algorithm; 3] = [Algorithm::Aimd, Algorithm::Vegas, Algorithm::Gradient2];

    /// The name configuration uses: `"aimd"`, `"vegas"`, `"gradient2"`.
    pub const fn name(self) -> &'static str {
        match self {
            Algorithm::Aimd => "aimd",
            Algorithm::Vegas => "vegas",
            Algorithm::Gradient2 => "gradient2",
        }
    }

    fn parse(raw: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(raw.trim()))
    }
}

/// An adaptive limit as configuration describes it: the algorithm, its
/// bounds, and the smallest window. Everything else keeps the algorithm's
/// defaults (see `docs/adaptive.md`).
///
/// ```
/// # #[cfg(feature = "config-file")] {
/// use bulkhead_std::{Algorithm, LimitConfig};
/// use bulkhead_std::bulkhead_core::limit::Limit;
///
/// #[derive(serde::Deserialize)]
/// struct Database {
///     limit: LimitConfig,
/// }
/// let db: Database = toml::from_str(r#"limit = { algorithm = "gradient2", min = 4, max = 200 }"#).unwrap();
/// assert_eq!(db.limit.algorithm, Algorithm::Gradient2);
/// let limit = db.limit.build().unwrap();
/// assert_eq!(limit.limit(), 20); // Gradient2's initial limit, within [4, 200]
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    any(feature = "serde", feature = "config-file"),
    derive(serde::Serialize, serde::Deserialize),
    serde(deny_unknown_fields)
)]
pub struct LimitConfig {
    /// The algorithm.
    pub algorithm: Algorithm,
    /// The lowest limit; the algorithm's default, capped at `max`.
    #[cfg_attr(any(feature = "serde", feature = "config-file"), serde(default))]
    pub min: Option<usize>,
    /// The highest limit; the algorithm's default, raised to `min`.
    #[cfg_attr(any(feature = "serde", feature = "config-file"), serde(default))]
    pub max: Option<usize>,
    /// The starting limit; the algorithm's default, clamped into the bounds.
    #[cfg_attr(any(feature = "serde", feature = "config-file"), serde(default))]
    pub initial: Option<usize>,
    /// The smallest window, in samples ([`Windowed`]); default 10.
    #[cfg_attr(any(feature = "serde", feature = "config-file"), serde(default))]
    pub window: Option<u32>,
}

/// The window [`LimitConfig::build`] uses when none is given.
pub const DEFAULT_WINDOW: u32 = 10;

/// The environment suffixes, after `BULKHEAD_<NAME>_`.
pub(crate) const ENV_KEYS: [&str; 5] = [
    "LIMIT_ALGORITHM",
    "LIMIT_MIN",
    "LIMIT_MAX",
    "LIMIT_INITIAL",
    "LIMIT_WINDOW",
];

impl LimitConfig {
    /// `algorithm` with its default bounds and window.
    pub const fn new(algorithm: Algorithm) -> Self {
        Self {
            algorithm,
            min: None,
            max: None,
            initial: None,
            window: None,
        }
    }

    /// Builds the windowed algorithm.
    ///
    /// # Errors
    /// [`LimitError`] for bounds out of order (`min` 0, `min` above `max`)
    /// or an `initial` outside them.
    pub fn build(&self) -> Result<Windowed<AnyLimit>, LimitError> {
        self.build_with(None)
    }

    /// As [`build`](Self::build), starting at `start` (clamped into the
    /// bounds) unless `initial` is set: the registry starts an adaptive
    /// compartment at its configured `max_concurrent`.
    ///
    /// ```
    /// use bulkhead_std::{Algorithm, LimitConfig};
    /// use bulkhead_std::bulkhead_core::limit::Limit;
    ///
    /// let config = LimitConfig { min: Some(4), max: Some(200), ..LimitConfig::new(Algorithm::Gradient2) };
    /// assert_eq!(config.build_starting_at(10)?.limit(), 10);
    /// assert_eq!(config.build_starting_at(1)?.limit(), 4);
    /// # Ok::<(), bulkhead_std::bulkhead_core::limit::LimitError>(())
    /// ```
    ///
    /// # Errors
    /// As [`build`](Self::build).
    pub fn build_starting_at(&self, start: usize) -> Result<Windowed<AnyLimit>, LimitError> {
        self.build_with(Some(start))
    }

    fn build_with(&self, start: Option<usize>) -> Result<Windowed<AnyLimit>, LimitError> {
        let (d_initial, d_min, d_max) = match self.algorithm {
            Algorithm::Aimd => {
                let d = AimdParams::DEFAULT;
                (d.initial, d.min, d.max)
            }
            Algorithm::Vegas => {
                let d = VegasParams::DEFAULT;
                (d.initial, d.min, d.max)
            }
            Algorithm::Gradient2 => {
                let d = Gradient2Params::DEFAULT;
                (d.initial, d.min, d.max)
            }
        };
        let min = self
            .min
            .unwrap_or(self.max.map_or(d_min, |max| d_min.min(max)));
        let max = self.max.unwrap_or(d_max.max(min));
        let initial = self
            .initial
            .unwrap_or(start.unwrap_or(d_initial).clamp(min.min(max), max.max(min)));
        let limit: AnyLimit = match self.algorithm {
            Algorithm::Aimd => Aimd::new(AimdParams {
                initial,
                min,
                max,
                ..AimdParams::DEFAULT
            })?
            .into(),
            Algorithm::Vegas => Vegas::new(VegasParams {
                initial,
                min,
                max,
                ..VegasParams::DEFAULT
            })?
            .into(),
            Algorithm::Gradient2 => Gradient2::new(Gradient2Params {
                initial,
                min,
                max,
                ..Gradient2Params::DEFAULT
            })?
            .into(),
        };
        Ok(Windowed::new(limit, self.window.unwrap_or(DEFAULT_WINDOW)))
    }

    /// Reads `BULKHEAD_<NAME>_LIMIT_ALGORITHM`, `_LIMIT_MIN`, `_LIMIT_MAX`,
    /// `_LIMIT_INITIAL` and `_LIMIT_WINDOW` for the compartment `name` (the
    /// name segment as [`env_segment`] spells it) from `vars`, over `base`
    /// (`None`: no limit configured yet). Each variable overrides one field
    /// of `base`; `_LIMIT_ALGORITHM` alone keeps `base`'s bounds.
    ///
    /// Returns `Ok(None)` when neither `base` nor the variables describe a
    /// limit. The registry calls this for every compartment it creates.
    ///
    /// ```
    /// use bulkhead_std::{Algorithm, LimitConfig};
    /// use bulkhead_std::registry::SettingsErrorKind;
    ///
    /// let vars = [("BULKHEAD_DATABASE_LIMIT_ALGORITHM", "vegas"), ("BULKHEAD_DATABASE_LIMIT_MAX", "64")];
    /// let limit = LimitConfig::from_env("database", vars, None)?.unwrap();
    /// assert_eq!((limit.algorithm, limit.max), (Algorithm::Vegas, Some(64)));
    ///
    /// let typo = [("BULKHEAD_DATABASE_LIMIT_MAXIMUM", "64")];
    /// let err = LimitConfig::from_env("database", typo, None).unwrap_err();
    /// assert_eq!(err.kind(), SettingsErrorKind::UnknownKey);
    /// assert!(err.to_string().contains("BULKHEAD_DATABASE_LIMIT_MAX,"));
    /// # Ok::<(), bulkhead_std::registry::SettingsError>(())
    /// ```
    ///
    /// # Errors
    /// [`SettingsError`] naming the variable: an unknown `LIMIT_*` suffix
    /// ([`UnknownKey`](SettingsErrorKind::UnknownKey), listing the valid
    /// variables), an unknown algorithm
    /// ([`UnknownAlgorithm`](SettingsErrorKind::UnknownAlgorithm)), a value
    /// that is not a whole number in range, or bounds given without an
    /// algorithm ([`MissingAlgorithm`](SettingsErrorKind::MissingAlgorithm)).
    pub fn from_env<K: AsRef<str>, V: AsRef<str>>(
        name: &str,
        vars: impl IntoIterator<Item = (K, V)>,
        base: Option<LimitConfig>,
    ) -> Result<Option<LimitConfig>, SettingsError> {
        let prefix = format!("{ENV_PREFIX}{}_", env_segment(name));
        Self::from_env_prefix(&prefix, vars, base, true)
    }

    /// As [`from_env`](Self::from_env) for the variables that start with
    /// `prefix` (`BULKHEAD_DATABASE_`, or `BULKHEAD_` for the registry's
    /// template). An unknown `LIMIT_*` suffix is an error if `strict`, and
    /// skipped otherwise (the registry, which has its own policy for every
    /// unknown variable).
    pub(crate) fn from_env_prefix<K: AsRef<str>, V: AsRef<str>>(
        prefix: &str,
        vars: impl IntoIterator<Item = (K, V)>,
        base: Option<LimitConfig>,
        strict: bool,
    ) -> Result<Option<LimitConfig>, SettingsError> {
        let limit_prefix = format!("{prefix}LIMIT_");
        let mut config = base;
        let mut numbers: Vec<(String, &'static str, String)> = Vec::new();
        for (key, value) in vars {
            let (key, value) = (key.as_ref(), value.as_ref());
            let Some(rest) = key.strip_prefix(&limit_prefix) else {
                continue;
            };
            if let Some(field) = ENV_KEYS
                .into_iter()
                .find(|k| k.strip_prefix("LIMIT_") == Some(rest))
            {
                if field == "LIMIT_ALGORITHM" {
                    let algorithm = Algorithm::parse(value).ok_or_else(|| {
                        SettingsError::new(
                            SettingsErrorKind::UnknownAlgorithm,
                            key,
                            value,
                            ALGORITHMS,
                        )
                    })?;
                    let mut c = config.unwrap_or(LimitConfig::new(algorithm));
                    c.algorithm = algorithm;
                    config = Some(c);
                } else {
                    numbers.push((key.to_string(), field, value.to_string()));
                }
            } else if strict && !is_other_setting(rest) {
                let valid: Vec<String> = ENV_KEYS.iter().map(|k| format!("{prefix}{k}")).collect();
                return Err(SettingsError::new(
                    SettingsErrorKind::UnknownKey,
                    key,
                    value,
                    format!("one of the adaptive-limit variables {}", valid.join(", ")),
                ));
            }
        }
        for (variable, field, raw) in numbers {
            let Some(c) = config.as_mut() else {
                return Err(SettingsError::new(
                    SettingsErrorKind::MissingAlgorithm,
                    variable,
                    raw,
                    format!(
                        "{prefix}LIMIT_ALGORITHM too ({ALGORITHMS}), or a limit in the code or file"
                    ),
                ));
            };
            let (min, max, what) = number_bounds(field);
            let n = whole_number(&variable, &raw, min, max, &format!("{what} to {max}"))?;
            // In range by `number_bounds`, which stays within usize and u32.
            let count = usize::try_from(n).unwrap_or(usize::MAX);
            match field {
                "LIMIT_MIN" => c.min = Some(count),
                "LIMIT_MAX" => c.max = Some(count),
                "LIMIT_INITIAL" => c.initial = Some(count),
                _ => c.window = Some(u32::try_from(n).unwrap_or(u32::MAX)),
            }
        }
        Ok(config)
    }
}

/// The algorithms, for messages.
const ALGORITHMS: &str = "`aimd`, `vegas` or `gradient2`";

/// Accepted range and meaning of a numeric `LIMIT_*` setting.
fn number_bounds(field: &str) -> (u64, u64, &'static str) {
    const LIMIT: u64 = MAX_ADAPTIVE_LIMIT as u64;
    match field {
        "LIMIT_WINDOW" => (
            0,
            u32::MAX as u64,
            "a whole number of samples per window (0 = every sample)",
        ),
        _ => (1, LIMIT, "a whole number of seats from 1"),
    }
}

/// Whether `rest`, after `BULKHEAD_<NAME>_LIMIT_`, is a setting of
/// another compartment whose name extends `NAME` with `_LIMIT_…`
/// (`BULKHEAD_DB_LIMIT_X_MAX_CONCURRENT` for `db.limit.x`), which is not
/// this compartment's typo.
fn is_other_setting(rest: &str) -> bool {
    let ends = |suffix: &str| rest == suffix || rest.ends_with(&format!("_{suffix}"));
    Field::ALL
        .iter()
        .any(|f| ends(&f.key().to_ascii_uppercase()))
        || ENV_KEYS.iter().any(|k| rest.ends_with(&format!("_{k}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bulkhead_core::limit::Limit;

    #[test]
    fn defaults_fit_the_given_bounds() {
        let mut c = LimitConfig::new(Algorithm::Gradient2);
        c.max = Some(10); // below Gradient2's default min (20) and initial (20)
        let l = c.build().unwrap();
        assert_eq!(l.limit(), 10);
        c.min = Some(50);
        assert!(matches!(
            c.build(),
            Err(LimitError::Bounds { min: 50, max: 10 })
        ));
        let vegas = LimitConfig::new(Algorithm::Vegas).build().unwrap();
        assert_eq!((vegas.limit(), vegas.min_samples()), (20, DEFAULT_WINDOW));
    }

    #[test]
    fn env_variables_override_and_misspellings_are_errors() {
        let base = Some(LimitConfig {
            min: Some(2),
            ..LimitConfig::new(Algorithm::Aimd)
        });
        let vars = [
            ("BULKHEAD_DB_REPLICA_LIMIT_ALGORITHM", "Gradient2"),
            ("BULKHEAD_DB_REPLICA_LIMIT_MAX", "64"),
            ("BULKHEAD_DB_REPLICA_LIMIT_WINDOW", "5"),
            ("BULKHEAD_OTHER_LIMIT_MAX", "1"),
        ];
        let c = LimitConfig::from_env("db.replica", vars, base)
            .unwrap()
            .unwrap();
        assert_eq!(c.algorithm, Algorithm::Gradient2);
        assert_eq!((c.min, c.max, c.window), (Some(2), Some(64), Some(5)));
        assert_eq!(
            LimitConfig::from_env("db", [("PATH", "/bin")], None).unwrap(),
            None
        );

        let kind = |vars: [(&str, &str); 1], base| {
            let err = LimitConfig::from_env("db", vars, base).unwrap_err();
            (err.kind(), err.to_string())
        };
        let (k, msg) = kind([("BULKHEAD_DB_LIMIT_ALGORITHM", "pid")], None);
        assert_eq!(k, SettingsErrorKind::UnknownAlgorithm);
        assert!(msg.contains("`aimd`, `vegas` or `gradient2`"), "{msg}");
        let (k, msg) = kind([("BULKHEAD_DB_LIMIT_MAX", "ten")], base);
        assert_eq!(k, SettingsErrorKind::NotANumber);
        assert!(msg.contains("BULKHEAD_DB_LIMIT_MAX"), "{msg}");
        assert_eq!(
            kind([("BULKHEAD_DB_LIMIT_MIN", "0")], base).0,
            SettingsErrorKind::Zero
        );
        assert_eq!(
            kind([("BULKHEAD_DB_LIMIT_MIN", "-2")], base).0,
            SettingsErrorKind::Negative
        );
        let (k, msg) = kind([("BULKHEAD_DB_LIMIT_MAX", "9")], None);
        assert_eq!(k, SettingsErrorKind::MissingAlgorithm);
        assert!(msg.contains("BULKHEAD_DB_LIMIT_ALGORITHM too"), "{msg}");
        let (k, msg) = kind([("BULKHEAD_DB_LIMIT_MAXX", "9")], base);
        assert_eq!(k, SettingsErrorKind::UnknownKey);
        assert!(msg.contains("BULKHEAD_DB_LIMIT_MAXX"), "{msg}");
        assert!(msg.contains("BULKHEAD_DB_LIMIT_MAX,"), "{msg}");
        // Another compartment's setting (`db.limit.x`), not a typo of db's.
        let other = [("BULKHEAD_DB_LIMIT_X_MAX_CONCURRENT", "3")];
        assert_eq!(LimitConfig::from_env("db", other, base).unwrap(), base);
    }

    #[cfg(feature = "config-file")]
    #[test]
    fn toml_table_and_unknown_keys() {
        #[derive(Debug, serde::Deserialize)]
        struct Section {
            limit: LimitConfig,
        }
        let s: Section =
            toml::from_str(r#"limit = { algorithm = "gradient2", min = 4, max = 200 }"#).unwrap();
        assert_eq!(
            s.limit,
            LimitConfig {
                min: Some(4),
                max: Some(200),
                ..LimitConfig::new(Algorithm::Gradient2)
            }
        );
        let typo = toml::from_str::<Section>(r#"limit = { algorithm = "vegas", maximum = 9 }"#);
        assert!(typo.unwrap_err().to_string().contains("maximum"));
        let bad = toml::from_str::<Section>(r#"limit = { algorithm = "pid" }"#);
        assert!(bad.unwrap_err().to_string().contains("gradient2"));
    }
}
