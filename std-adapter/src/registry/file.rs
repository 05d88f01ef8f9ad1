//! Settings from a TOML file (feature `config-file`).
//!
//! ```toml
//! [default]                # the template of get_or_create_default
//! max_concurrent = 10
//!
//! [domains.database]
//! max_concurrent = 20
//! max_wait = "50ms"        # or max_wait_ms = 50; "0" fails fast, "forever"
//! admission = "fifo"
//!
//! [domains."database:replica"]
//! max_concurrent = 8
//!
//! [domains.search]             # an adaptive compartment
//! max_concurrent = 10          # where the limit starts
//! limit = { algorithm = "gradient2", min = 4, max = 200 }   # also: initial, window
//! ```
//!
//! Every key is optional; an unknown key, in any table, is an error.

use std::collections::BTreeMap;

use super::settings::Overlay;

/// The parsed, checked file: the default settings and one overlay per
/// compartment name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FileSettings {
    pub(crate) default: Overlay,
    pub(crate) domains: BTreeMap<String, Overlay>,
}

#[cfg(feature = "config-file")]
mod toml_file {
    use super::*;
    use crate::LimitConfig;
    use crate::registry::parse::{Field, SettingsError, SettingsErrorKind};
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Document {
        default: Option<Section>,
        domains: Option<BTreeMap<String, Section>>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Section {
        max_concurrent: Option<toml::Value>,
        max_wait: Option<toml::Value>,
        max_wait_ms: Option<toml::Value>,
        max_waiting: Option<toml::Value>,
        max_workers: Option<toml::Value>,
        admission: Option<toml::Value>,
        limit: Option<toml::Value>,
    }

    const ACCEPTED: &str = "tables [default] and [domains.NAME] with keys max_concurrent, \
                            max_wait, max_wait_ms, max_waiting, max_workers, admission, limit";

    /// The keys of a `limit` table.
    const LIMIT_KEYS: &str = "a table `limit = { algorithm = \"gradient2\", min = 4, max = 200 }` \
                              with keys algorithm (`aimd`, `vegas` or `gradient2`), min, max, \
                              initial, window";

    impl FileSettings {
        /// Parses and checks `text`; `origin` (a path, or `"<string>"`)
        /// names the file in syntax errors.
        pub(crate) fn parse(origin: &str, text: &str) -> Result<Self, SettingsError> {
            let doc: Document = toml::from_str(text).map_err(|e| {
                let message = e.message().to_owned();
                let kind = if message.contains("unknown field") {
                    SettingsErrorKind::UnknownKey
                } else {
                    SettingsErrorKind::Syntax
                };
                SettingsError::new(kind, origin, message, ACCEPTED)
            })?;
            let mut out = FileSettings::default();
            if let Some(section) = &doc.default {
                out.default = section.overlay("default")?;
            }
            for (name, section) in doc.domains.iter().flatten() {
                let table = format!("domains.{name}");
                out.domains.insert(name.clone(), section.overlay(&table)?);
            }
            Ok(out)
        }
    }

    /// A value as written, for messages.
    fn describe(value: &toml::Value) -> String {
        match value {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            other => format!("<{}>", other.type_str()),
        }
    }

    impl Section {
        fn overlay(&self, table: &str) -> Result<Overlay, SettingsError> {
            let mut overlay = Overlay::default();
            let values = [
                (Field::MaxConcurrent, &self.max_concurrent),
                (Field::MaxWait, &self.max_wait),
                (Field::MaxWaitMs, &self.max_wait_ms),
                (Field::MaxWaiting, &self.max_waiting),
                (Field::MaxWorkers, &self.max_workers),
                (Field::Admission, &self.admission),
            ];
            for (field, value) in values {
                let Some(value) = value else { continue };
                let key = format!("{table}.{}", field.key());
                let raw = match (field, value) {
                    (Field::Admission | Field::MaxWait, toml::Value::String(s)) => s.clone(),
                    // `max_wait = 0` fails fast; other bare numbers are
                    // refused for want of a unit.
                    (Field::MaxWait, toml::Value::Integer(i)) => i.to_string(),
                    (Field::Admission, other) => {
                        return Err(SettingsError::new(
                            SettingsErrorKind::UnknownWord,
                            key,
                            describe(other),
                            field.expected(),
                        ));
                    }
                    (_, toml::Value::Integer(i)) => i.to_string(),
                    (_, other) => {
                        return Err(SettingsError::new(
                            SettingsErrorKind::NotANumber,
                            key,
                            describe(other),
                            field.expected(),
                        ));
                    }
                };
                field.set(&mut overlay, &key, &raw)?;
            }
            if let Some(value) = &self.limit {
                overlay.limit = Some(limit_table(&format!("{table}.limit"), value)?);
            }
            Ok(overlay)
        }
    }

    /// A `limit` table, with every problem named by its key
    /// (`domains.search.limit.maximum`), in the words the environment's
    /// `LIMIT_*` variables use.
    fn limit_table(key: &str, value: &toml::Value) -> Result<LimitConfig, SettingsError> {
        let toml::Value::Table(table) = value else {
            return Err(SettingsError::new(
                SettingsErrorKind::NotATable,
                key,
                describe(value),
                LIMIT_KEYS,
            ));
        };
        // The table is read in the environment's terms, so that both
        // sources share one parser and one set of messages.
        let mut vars = Vec::new();
        for (name, value) in table {
            let suffix = match name.as_str() {
                "algorithm" | "min" | "max" | "initial" | "window" => name.to_ascii_uppercase(),
                _ => {
                    return Err(SettingsError::new(
                        SettingsErrorKind::UnknownKey,
                        format!("{key}.{name}"),
                        describe(value),
                        LIMIT_KEYS,
                    ));
                }
            };
            vars.push((format!("{key}.{name}"), suffix, describe(value)));
        }
        let algorithm = vars.iter().position(|(_, suffix, _)| suffix == "ALGORITHM");
        let Some(algorithm) = algorithm else {
            return Err(SettingsError::new(
                SettingsErrorKind::MissingAlgorithm,
                key,
                describe(value),
                LIMIT_KEYS,
            ));
        };
        // The algorithm first, so that the bounds apply to it.
        vars.swap(0, algorithm);
        let mut config = None;
        for (full, suffix, raw) in vars {
            let var = format!("LIMIT_{suffix}");
            config = LimitConfig::from_env_prefix("", [(var, raw)], config, true)
                .map_err(|e| e.renamed(&full))?;
        }
        config.ok_or_else(|| {
            SettingsError::new(SettingsErrorKind::MissingAlgorithm, key, "", LIMIT_KEYS)
        })
    }
}
