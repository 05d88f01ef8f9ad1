//! Checking one configuration value, from the environment or a file, and
//! [`SettingsError`], which names the variable or key that was wrong.

use std::fmt;

use bulkhead_core::{Admission, MAX_CONCURRENT_LIMIT, MAX_WAITING_LIMIT, QueueOrder};

use super::spelling::nearest;

/// What was wrong with a configuration value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SettingsErrorKind {
    /// Empty, or not a whole number (`"ten"`, `"1.5"`, a TOML string).
    NotANumber,
    /// A number below zero.
    Negative,
    /// A number too large for the setting.
    Overflow,
    /// Zero where it makes no sense (`max_concurrent`, `max_workers`).
    Zero,
    /// An admission word other than `fifo`, `barging` or
    /// `bounded_barging`, or a value of the wrong type for `admission`.
    UnknownWord,
    /// A key the file format does not know, or an environment variable
    /// that names no setting or misspells a registered compartment's name
    /// (a typo is never silently ignored).
    UnknownKey,
    /// The file is not valid TOML.
    Syntax,
    /// The file could not be read.
    Io,
    /// Not a duration: a number without a unit, an unknown unit, or an
    /// unreadable number (`max_wait`).
    BadDuration,
    /// One source sets the wait budget twice (`max_wait` and
    /// `max_wait_ms`).
    Conflict,
    /// An adaptive-limit algorithm other than `aimd`, `vegas` or
    /// `gradient2`.
    UnknownAlgorithm,
    /// An adaptive-limit bound (`BULKHEAD_<NAME>_LIMIT_MAX`, …) for a
    /// compartment whose limit names no algorithm.
    MissingAlgorithm,
    /// A value that should be a table (`limit = { … }`) is not one.
    NotATable,
    /// A queue order other than `fifo` or `lifo` (written exactly so, as
    /// serde writes them), or a value of the wrong type for
    /// `queue_order`.
    UnknownQueueOrder,
    /// A partition's amount (`share`, `lendable`, `borrow`) that is
    /// neither a count (`24`) nor a percentage with its sign (`"75%"`).
    BadAmount,
    /// A partition's table without its `share`.
    MissingShare,
}

/// A configuration value was refused. The message names the variable or
/// key, the bad value and what is accepted.
///
/// ```
/// use bulkhead_std::registry::{EnvSource, Registry, SettingsErrorKind};
///
/// let env = EnvSource::from_pairs([("BULKHEAD_DATABASE_MAX_CONCURRENT", "-3")]);
/// let err = Registry::builder().env(env).build().unwrap_err();
/// let err = err.settings().unwrap();
/// assert_eq!(err.kind(), SettingsErrorKind::Negative);
/// assert_eq!(err.key(), "BULKHEAD_DATABASE_MAX_CONCURRENT");
/// assert!(err.to_string().contains("\"-3\""));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsError {
    kind: SettingsErrorKind,
    key: String,
    value: String,
    expected: String,
}

impl SettingsError {
    pub(crate) fn new(
        kind: SettingsErrorKind,
        key: impl Into<String>,
        value: impl Into<String>,
        expected: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            key: key.into(),
            value: value.into(),
            expected: expected.into(),
        }
    }

    /// The same error, for the key as written in another source (a file
    /// key instead of the variable the check was phrased in).
    #[cfg(feature = "config-file")]
    pub(crate) fn renamed(mut self, key: &str) -> Self {
        key.clone_into(&mut self.key);
        self
    }

    /// What was wrong.
    pub fn kind(&self) -> SettingsErrorKind {
        self.kind
    }

    /// The environment variable (`BULKHEAD_DATABASE_MAX_CONCURRENT`) or
    /// file key by its path (`domains.database.max_concurrent`, also for
    /// an unknown key), or, for syntax and I/O errors, the file's path
    /// (`the TOML string` for `RegistryBuilder::toml_str`, feature
    /// `config-file`).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The value as written.
    pub fn value(&self) -> &str {
        &self.value
    }
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let problem = match self.kind {
            SettingsErrorKind::NotANumber => "is not a whole number",
            SettingsErrorKind::Negative => "is negative",
            SettingsErrorKind::Overflow => "is too large",
            SettingsErrorKind::Zero => "is zero, which would admit nobody",
            SettingsErrorKind::UnknownWord => "is not a known admission mode",
            SettingsErrorKind::UnknownKey => "is not a known key",
            SettingsErrorKind::Syntax => "is not valid TOML",
            SettingsErrorKind::Io => "could not be read",
            SettingsErrorKind::BadDuration => "is not a duration",
            SettingsErrorKind::Conflict => "sets the wait budget a second time",
            SettingsErrorKind::UnknownAlgorithm => "is not a known adaptive-limit algorithm",
            SettingsErrorKind::MissingAlgorithm => "sets a limit bound, but no algorithm",
            SettingsErrorKind::NotATable => "is not a table",
            SettingsErrorKind::UnknownQueueOrder => "is not a known queue order",
            SettingsErrorKind::BadAmount => "is not an amount of seats",
            SettingsErrorKind::MissingShare => "is missing",
        };
        // A missing key has no value to show.
        if self.kind == SettingsErrorKind::MissingShare {
            return write!(
                f,
                "bulkhead setting `{}` {problem}; expected {}",
                self.key, self.expected
            );
        }
        write!(
            f,
            "bulkhead setting `{}` = {:?} {problem}; expected {}",
            self.key, self.value, self.expected
        )
    }
}

impl std::error::Error for SettingsError {}

/// The settings a source may set, with their env suffix / file key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Field {
    MaxConcurrent,
    MaxWait,
    MaxWaitMs,
    MaxWaiting,
    MaxWorkers,
    Admission,
    QueueOrder,
}

impl Field {
    pub(crate) const ALL: [Field; 7] = [
        Field::MaxConcurrent,
        Field::MaxWait,
        Field::MaxWaitMs,
        Field::MaxWaiting,
        Field::MaxWorkers,
        Field::Admission,
        Field::QueueOrder,
    ];

    /// The file key; the env suffix is its upper-case form.
    pub(crate) const fn key(self) -> &'static str {
        match self {
            Field::MaxConcurrent => "max_concurrent",
            Field::MaxWait => "max_wait",
            Field::MaxWaitMs => "max_wait_ms",
            Field::MaxWaiting => "max_waiting",
            Field::MaxWorkers => "max_workers",
            Field::Admission => "admission",
            Field::QueueOrder => "queue_order",
        }
    }

    fn bounds(self) -> (u64, u64, &'static str) {
        const LIMIT: u64 = if MAX_CONCURRENT_LIMIT as u64 > u32::MAX as u64 {
            u32::MAX as u64
        } else {
            MAX_CONCURRENT_LIMIT as u64
        };
        match self {
            Field::MaxConcurrent => (1, LIMIT, "a whole number of seats from 1"),
            Field::MaxWorkers => (1, 4096, "a whole number of worker threads from 1"),
            Field::MaxWaitMs => (
                0,
                u64::MAX,
                "a whole number of milliseconds (0 = fail fast)",
            ),
            Field::MaxWaiting => (
                0,
                MAX_WAITING_LIMIT as u64,
                "a whole number of waiting callers (0 = nobody waits)",
            ),
            Field::Admission => (0, 0, "`fifo`, `barging` or `bounded_barging`"),
            Field::QueueOrder => (
                0,
                0,
                "`fifo` (oldest first) or `lifo` (newest first), in lower case",
            ),
            Field::MaxWait => (
                0,
                0,
                "a duration with a unit (`250ms`, `2s`, `1.5s`, `1m`; units ns, us, ms, s, m, h), \
                 `0` or `fail_fast` to fail fast, or `forever`",
            ),
        }
    }

    /// What is accepted, for messages.
    pub(crate) fn expected(self) -> String {
        let (min, max, what) = self.bounds();
        match self {
            Field::Admission | Field::QueueOrder | Field::MaxWait => what.to_owned(),
            _ if min == 0 => format!("{what}, at most {max}"),
            _ => format!("{what} to {max}"),
        }
    }

    pub(super) fn number(self, key: &str, raw: &str) -> Result<u64, SettingsError> {
        let (min, max, _) = self.bounds();
        whole_number(key, raw, min, max, &self.expected())
    }
}

/// A whole number in `[min, max]` as written in a variable or file, or
/// the error that names `key` and says what is `expected`.
pub(crate) fn whole_number(
    key: &str,
    raw: &str,
    min: u64,
    max: u64,
    expected: &str,
) -> Result<u64, SettingsError> {
    let err = |kind| SettingsError::new(kind, key, raw, expected);
    let text = raw.trim();
    let digits = text.strip_prefix('+').unwrap_or(text);
    if let Some(rest) = text.strip_prefix('-')
        && !rest.is_empty()
        && rest.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(err(SettingsErrorKind::Negative));
    }
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(err(SettingsErrorKind::NotANumber));
    }
    let n: u64 = digits
        .parse()
        .map_err(|_| err(SettingsErrorKind::Overflow))?;
    if n < min {
        return Err(err(SettingsErrorKind::Zero));
    }
    if n > max {
        return Err(err(SettingsErrorKind::Overflow));
    }
    Ok(n)
}

/// `fifo`, `barging` or `bounded_barging` (the names serde uses), any
/// case, surrounding spaces ignored. `lifo`, which is a queue order, is
/// refused with a pointer to the `queue_order` setting of the same source.
pub(crate) fn parse_admission(key: &str, raw: &str) -> Result<Admission, SettingsError> {
    let word = raw.trim().to_ascii_lowercase();
    match word.as_str() {
        "fifo" => Ok(Admission::Fifo),
        "barging" => Ok(Admission::Barging),
        "bounded_barging" => Ok(Admission::BoundedBarging),
        _ => {
            let mut expected = Field::Admission.expected();
            if word == "lifo" {
                expected = format!(
                    "{expected}; newest first is a queue order, not an admission mode: set {} \
                     to `lifo` instead",
                    sibling(key, Field::Admission, Field::QueueOrder)
                );
            }
            Err(SettingsError::new(
                SettingsErrorKind::UnknownWord,
                key,
                raw,
                expected,
            ))
        }
    }
}

/// `fifo` or `lifo`, exactly: the words serde reads for core's
/// [`QueueOrder`], so that a file, a variable and a serde document accept
/// the same values. Anything else is refused, with the word it nearly
/// spells (`"lif"`, `"LIFO "`: did you mean `lifo`?).
pub(crate) fn parse_queue_order(key: &str, raw: &str) -> Result<QueueOrder, SettingsError> {
    match raw {
        "fifo" => Ok(QueueOrder::Fifo),
        "lifo" => Ok(QueueOrder::Lifo),
        _ => {
            let word = raw.trim().to_ascii_lowercase();
            Err(unknown_queue_order(key, raw, Some(&word)))
        }
    }
}

/// The error for a `queue_order` value `raw` (as written, for the
/// message); `word`, if the value is text, is compared with the accepted
/// words for a did-you-mean.
pub(crate) fn unknown_queue_order(key: &str, raw: &str, word: Option<&str>) -> SettingsError {
    let mut expected = Field::QueueOrder.expected();
    if let Some(meant) = word.and_then(|w| nearest(w, ["fifo", "lifo"])) {
        expected = format!("{expected}; did you mean `{meant}`?");
    }
    SettingsError::new(SettingsErrorKind::UnknownQueueOrder, key, raw, expected)
}

/// `key` (a variable `…_ADMISSION` or a file key `….admission`) with its
/// setting `from` replaced by `to`, in the same spelling.
fn sibling(key: &str, from: Field, to: Field) -> String {
    let upper = from.key().to_ascii_uppercase();
    if let Some(head) = key.strip_suffix(upper.as_str()) {
        format!("{head}{}", to.key().to_ascii_uppercase())
    } else if let Some(head) = key.strip_suffix(from.key()) {
        format!("{head}{}", to.key())
    } else {
        format!("`{}`", to.key())
    }
}
