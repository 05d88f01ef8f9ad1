//! [`LimitConfig`]: an adaptive limit described in configuration, as a
//! TOML table (`limit = { algorithm = "gradient2", min = 4, max = 200 }`)
//! or as `BULKHEAD_<NAME>_LIMIT_*` environment variables.

use std::fmt;

use bulkhead_core::limit::{
    Aimd, AimdParams, AnyLimit, Gradient2, Gradient2Params, LimitError, Vegas, VegasParams,
    Windowed,
};

use crate::registry::{ENV_PREFIX, env_segment};

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
/// use bulkhead_std::core::limit::Limit;
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
const ENV_KEYS: [&str; 5] = [
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
            .unwrap_or(d_initial.clamp(min.min(max), max.max(min)));
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
    /// (`None`: no limit configured yet).
    ///
    /// Returns `Ok(None)` when neither `base` nor the variables describe a
    /// limit.
    ///
    /// ```
    /// use bulkhead_std::{Algorithm, LimitConfig};
    ///
    /// let vars = [("BULKHEAD_DATABASE_LIMIT_ALGORITHM", "vegas"), ("BULKHEAD_DATABASE_LIMIT_MAX", "64")];
    /// let limit = LimitConfig::from_env("database", vars, None)?.unwrap();
    /// assert_eq!((limit.algorithm, limit.max), (Algorithm::Vegas, Some(64)));
    ///
    /// let typo = [("BULKHEAD_DATABASE_LIMIT_MAXIMUM", "64")];
    /// let err = LimitConfig::from_env("database", typo, None).unwrap_err();
    /// assert!(err.to_string().contains("BULKHEAD_DATABASE_LIMIT_MAX"));
    /// # Ok::<(), bulkhead_std::LimitConfigError>(())
    /// ```
    ///
    /// # Errors
    /// [`LimitConfigError`] for an unknown `LIMIT_*` variable (naming the
    /// valid ones), an unknown algorithm, a value that is not a number, or
    /// bounds given without an algorithm.
    pub fn from_env<K: AsRef<str>, V: AsRef<str>>(
        name: &str,
        vars: impl IntoIterator<Item = (K, V)>,
        base: Option<LimitConfig>,
    ) -> Result<Option<LimitConfig>, LimitConfigError> {
        let prefix = format!("{ENV_PREFIX}{}_LIMIT_", env_segment(name));
        let mut config = base;
        let mut numbers: Vec<(String, &'static str, String)> = Vec::new();
        for (key, value) in vars {
            let (key, value) = (key.as_ref(), value.as_ref());
            let Some(rest) = key.strip_prefix(&prefix) else {
                continue;
            };
            let error = |message: String| LimitConfigError {
                variable: key.to_string(),
                value: value.to_string(),
                message,
            };
            match rest {
                "ALGORITHM" => {
                    let algorithm = Algorithm::parse(value).ok_or_else(|| {
                        error(format!(
                            "unknown algorithm; choose one of {}",
                            Algorithm::ALL.map(Algorithm::name).join(", ")
                        ))
                    })?;
                    let mut c = config.unwrap_or(LimitConfig::new(algorithm));
                    c.algorithm = algorithm;
                    config = Some(c);
                }
                "MIN" | "MAX" | "INITIAL" | "WINDOW" => {
                    let field = ENV_KEYS
                        .into_iter()
                        .find(|k| k.ends_with(rest))
                        .unwrap_or("LIMIT_MIN");
                    numbers.push((key.to_string(), field, value.to_string()));
                }
                _ => {
                    let valid: Vec<String> = ENV_KEYS
                        .iter()
                        .map(|k| format!("{ENV_PREFIX}{}_{k}", env_segment(name)))
                        .collect();
                    return Err(error(format!(
                        "unknown adaptive-limit setting; the valid variables are {}",
                        valid.join(", ")
                    )));
                }
            }
        }
        for (variable, field, raw) in numbers {
            let Some(c) = config.as_mut() else {
                return Err(LimitConfigError {
                    variable,
                    value: raw,
                    message: format!(
                        "a limit bound without an algorithm; also set {ENV_PREFIX}{}_LIMIT_ALGORITHM",
                        env_segment(name)
                    ),
                });
            };
            let n: u64 = raw.trim().parse().map_err(|_| LimitConfigError {
                variable: variable.clone(),
                value: raw.clone(),
                message: "not a whole number; give a count such as 16".into(),
            })?;
            let too_big = || LimitConfigError {
                variable: variable.clone(),
                value: raw.clone(),
                message: "too large for this target; choose a smaller count".into(),
            };
            match field {
                "LIMIT_MIN" => c.min = Some(usize::try_from(n).map_err(|_| too_big())?),
                "LIMIT_MAX" => c.max = Some(usize::try_from(n).map_err(|_| too_big())?),
                "LIMIT_INITIAL" => c.initial = Some(usize::try_from(n).map_err(|_| too_big())?),
                _ => c.window = Some(u32::try_from(n).map_err(|_| too_big())?),
            }
        }
        Ok(config)
    }
}

/// A `BULKHEAD_<NAME>_LIMIT_*` variable that could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitConfigError {
    /// The variable.
    pub variable: String,
    /// Its value.
    pub value: String,
    /// What is wrong, and what to do.
    pub message: String,
}

impl fmt::Display for LimitConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {:?}: {}", self.variable, self.value, self.message)
    }
}

impl std::error::Error for LimitConfigError {}

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

        let err = LimitConfig::from_env("db", [("BULKHEAD_DB_LIMIT_ALGORITHM", "pid")], None)
            .unwrap_err();
        assert!(err.message.contains("aimd, vegas, gradient2"), "{err}");
        let err =
            LimitConfig::from_env("db", [("BULKHEAD_DB_LIMIT_MAX", "ten")], base).unwrap_err();
        assert!(err.message.contains("whole number"), "{err}");
        let err = LimitConfig::from_env("db", [("BULKHEAD_DB_LIMIT_MAX", "9")], None).unwrap_err();
        assert!(err.message.contains("BULKHEAD_DB_LIMIT_ALGORITHM"), "{err}");
        let err = LimitConfig::from_env("db", [("BULKHEAD_DB_LIMIT_MAXX", "9")], base).unwrap_err();
        assert!(err.message.contains("BULKHEAD_DB_LIMIT_MAX,"), "{err}");
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
