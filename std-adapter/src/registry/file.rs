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
//! queue_order = "lifo"     # newest first; "fifo" (oldest first) is the default
//!
//! [domains."database:replica"]
//! max_concurrent = 8
//!
//! [domains.search]             # an adaptive compartment
//! max_concurrent = 10          # where the limit starts
//! limit = { algorithm = "gradient2", min = 4, max = 200 }   # also: initial, window
//!
//! [domains.db]                 # a partitioned compartment
//! max_concurrent = 32
//! max_wait = "20ms"            # the partitions' budget unless they set their own
//!
//! [domains.db.partitions.live]
//! share = "75%"                # a count (24) or a percentage with its sign
//! priority = 1
//!
//! [domains.db.partitions.batch]
//! share = 8
//! borrow = 16                  # at most 16 seats beyond its share
//! lendable = "50%"             # of its share; the rest stays free for it
//! max_wait = "1s"              # also: max_waiting, queue_order
//! ```
//!
//! A domain's `partitions` tables replace the code's partitions whole.
//! Partitions are kept in the order the file declares them, the order a
//! live reconfiguration must keep (it breaks ties between equal
//! priorities). An empty `partitions` table is an error: it would
//! otherwise make the compartment a plain one without a word.
//!
//! Every key is optional; an unknown key, in any table, is an error that
//! names it by its path (`domains.payments.max_concurent`), the file, and
//! the key it nearly spells.

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
    use crate::registry::parse::{Field, SettingsError, SettingsErrorKind, unknown_queue_order};
    use crate::registry::partition;
    use crate::registry::spelling::nearest;
    use bulkhead_core::partition::{Amount, PartitionConfig};

    /// The file's top-level tables.
    const TABLES: [&str; 2] = ["default", "domains"];

    /// The keys of a `[default]` or `[domains.NAME]` table besides the
    /// [`Field`]s.
    const LIMIT: &str = "limit";

    /// The key of a `[domains.NAME]` table that holds its partitions.
    const PARTITIONS: &str = "partitions";

    /// The keys of a `limit` table.
    const LIMIT_TABLE_KEYS: [&str; 5] = ["algorithm", "min", "max", "initial", "window"];

    const ACCEPTED: &str = "tables [default] and [domains.NAME] with keys max_concurrent, \
                            max_wait, max_wait_ms, max_waiting, max_workers, admission, \
                            queue_order, limit, partitions (domains only)";

    /// The keys of a `limit` table.
    const LIMIT_KEYS: &str = "a table `limit = { algorithm = \"gradient2\", min = 4, max = 200 }` \
                              with keys algorithm (`aimd`, `vegas` or `gradient2`), min, max, \
                              initial, window";

    impl FileSettings {
        /// Parses and checks `text`; `origin` (a path, or `"the TOML
        /// string"`) names the file in syntax errors and unknown keys.
        pub(crate) fn parse(origin: &str, text: &str) -> Result<Self, SettingsError> {
            let doc: toml::Table = toml::from_str(text).map_err(|e| {
                SettingsError::new(SettingsErrorKind::Syntax, origin, e.message(), ACCEPTED)
            })?;
            // Every key is checked here, rather than by serde, so that an
            // unknown one is named by its path, with the key it nearly
            // spells, like every other error of the file.
            let mut out = FileSettings::default();
            for (key, value) in &doc {
                match key.as_str() {
                    "default" => out.default = section(origin, "default", value, false)?,
                    "domains" => {
                        let toml::Value::Table(domains) = value else {
                            return Err(SettingsError::new(
                                SettingsErrorKind::NotATable,
                                "domains",
                                describe(value),
                                ACCEPTED,
                            ));
                        };
                        for (name, value) in domains {
                            let table = format!("domains.{name}");
                            out.domains
                                .insert(name.clone(), section(origin, &table, value, true)?);
                        }
                    }
                    _ => {
                        return Err(unknown_key(
                            origin,
                            None,
                            key,
                            value,
                            &TABLES,
                            "[default] or [domains.NAME]",
                        ));
                    }
                }
            }
            Ok(out)
        }
    }

    /// The error for key `last` of `table` (the path of the table, `None`
    /// at the top level), which is none of `keys`: it names the key by its
    /// path, the source, what is `accepted` there, and the key it nearly
    /// spells.
    fn unknown_key(
        origin: &str,
        table: Option<&str>,
        last: &str,
        value: &toml::Value,
        keys: &[&str],
        accepted: &str,
    ) -> SettingsError {
        let (key, place) = match table {
            Some(table) => (format!("{table}.{last}"), format!("a key of `{table}`")),
            None => (last.to_owned(), "a top-level table".to_owned()),
        };
        let meant = match nearest(last, keys.iter().copied()) {
            Some(meant) => format!("; did you mean {meant}?"),
            None => String::new(),
        };
        SettingsError::new(
            SettingsErrorKind::UnknownKey,
            key,
            describe(value),
            format!("{place} in {origin}: {accepted}{meant}"),
        )
    }

    /// A `[default]` or `[domains.NAME]` table (`table` is its path); only
    /// a domain's (`domain`) may hold partitions.
    fn section(
        origin: &str,
        table: &str,
        value: &toml::Value,
        domain: bool,
    ) -> Result<Overlay, SettingsError> {
        let toml::Value::Table(section) = value else {
            return Err(SettingsError::new(
                SettingsErrorKind::NotATable,
                table,
                describe(value),
                ACCEPTED,
            ));
        };
        let keys: Vec<&str> = Field::ALL
            .iter()
            .map(|f| f.key())
            .chain([LIMIT])
            .chain(domain.then_some(PARTITIONS))
            .collect();
        if let Some((key, value)) = section.iter().find(|(k, _)| !keys.contains(&k.as_str())) {
            return Err(unknown_key(
                origin,
                Some(table),
                key,
                value,
                &keys,
                &keys.join(", "),
            ));
        }
        let mut overlay = Overlay::default();
        for field in Field::ALL {
            let Some(value) = section.get(field.key()) else {
                continue;
            };
            let key = format!("{table}.{}", field.key());
            let raw = match (field, value) {
                (Field::Admission | Field::QueueOrder | Field::MaxWait, toml::Value::String(s)) => {
                    s.clone()
                }
                // `max_wait = 0` fails fast; other bare numbers are
                // refused for want of a unit.
                (Field::MaxWait, toml::Value::Integer(i)) => i.to_string(),
                (Field::QueueOrder, other) => {
                    return Err(unknown_queue_order(&key, &describe(other), None));
                }
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
        if let Some(value) = section.get(LIMIT) {
            overlay.limit = Some(limit_table(origin, &format!("{table}.{LIMIT}"), value)?);
        }
        if let Some(value) = section.get(PARTITIONS).filter(|_| domain) {
            overlay.partitions = Some(partitions(origin, &format!("{table}.{PARTITIONS}"), value)?);
        }
        Ok(overlay)
    }

    /// A domain's `partitions` tables, each checked key by key.
    fn partitions(
        origin: &str,
        key: &str,
        value: &toml::Value,
    ) -> Result<&'static [PartitionConfig], SettingsError> {
        const WANTED: &str = "tables [domains.NAME.partitions.PARTITION] with keys share, \
                              lendable, borrow, priority, max_wait, max_waiting, queue_order";
        let toml::Value::Table(table) = value else {
            return Err(SettingsError::new(
                SettingsErrorKind::NotATable,
                key,
                describe(value),
                WANTED,
            ));
        };
        if table.is_empty() {
            return Err(SettingsError::new(
                SettingsErrorKind::NotATable,
                key,
                "{}",
                format!(
                    "{WANTED}: at least one partition; remove the empty table for a \
                     compartment without partitions"
                ),
            ));
        }
        // The table keeps the file's order (the `toml` crate's
        // `preserve_order`), so the partitions keep it too.
        let mut out = Vec::with_capacity(table.len());
        for (name, value) in table {
            let path = format!("{key}.{name}");
            let toml::Value::Table(settings) = value else {
                return Err(SettingsError::new(
                    SettingsErrorKind::NotATable,
                    path,
                    describe(value),
                    WANTED,
                ));
            };
            if let Some((k, v)) = settings
                .iter()
                .find(|(k, _)| !partition::KEYS.contains(&k.as_str()))
            {
                return Err(unknown_key(
                    origin,
                    Some(&path),
                    k,
                    v,
                    &partition::KEYS,
                    &partition::KEYS.join(", "),
                ));
            }
            if !settings.contains_key("share") {
                return Err(SettingsError::new(
                    SettingsErrorKind::MissingShare,
                    format!("{path}.share"),
                    "",
                    "a share for every partition: a count (`share = 24`) or a percentage \
                     (`share = \"75%\"`)",
                ));
            }
            // A placeholder share, replaced by the `share` key below.
            let mut config = partition::named(name, Amount::Seats(0));
            for setting in partition::KEYS {
                let Some(value) = settings.get(setting) else {
                    continue;
                };
                let full = format!("{path}.{setting}");
                let (raw, bare_count) = match value {
                    toml::Value::Integer(i) => (i.to_string(), true),
                    toml::Value::String(s) => (s.clone(), false),
                    // An amount is never a fraction, a flag or a table:
                    // say what it is written as, rather than the string
                    // hint below, which is for `"24"`.
                    other if partition::AMOUNT_KEYS.contains(&setting) => {
                        return Err(SettingsError::new(
                            SettingsErrorKind::BadAmount,
                            full,
                            describe(other),
                            partition::FILE_AMOUNT,
                        ));
                    }
                    other => (describe(other), false),
                };
                config = partition::set(config, setting, &full, &raw, bare_count)?;
            }
            out.push(config);
        }
        Ok(partition::intern(out))
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

    /// A `limit` table, with every problem named by its key
    /// (`domains.search.limit.maximum`), in the words the environment's
    /// `LIMIT_*` variables use.
    fn limit_table(
        origin: &str,
        key: &str,
        value: &toml::Value,
    ) -> Result<LimitConfig, SettingsError> {
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
            if !LIMIT_TABLE_KEYS.contains(&name.as_str()) {
                return Err(unknown_key(
                    origin,
                    Some(key),
                    name,
                    value,
                    &LIMIT_TABLE_KEYS,
                    "algorithm (`aimd`, `vegas` or `gradient2`), min, max, initial, window",
                ));
            }
            let suffix = name.to_ascii_uppercase();
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
