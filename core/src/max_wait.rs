//! [`MaxWait`]: how long a caller may wait for a seat, one convention for
//! every crate.

use core::time::Duration;

/// How long a caller may wait for a seat: the wait budget, spelled the same
/// in every crate (std, tokio, the tower layer, the registry's settings;
/// embassy takes a bare `embassy_time::Duration` with the same rule).
///
/// Rust's convention for an optional timeout is that *no* timeout means
/// *wait forever*; a bulkhead's safe default is the opposite, *don't wait*.
/// An `Option<Duration>` cannot say both without being misread, so the
/// budget has its own type, whose variants say what they do:
///
/// | value | meaning | when every seat is taken |
/// |---|---|---|
/// | [`MaxWait::FailFast`] (the default) | do not wait | [`Error::Full`](crate::Error::Full) at once |
/// | [`MaxWait::UpTo(budget)`](MaxWait::UpTo) | wait at most `budget` | [`Error::Timeout`](crate::Error::Timeout) after `budget` |
/// | [`MaxWait::Forever`] | wait with no time limit | waits until a seat frees up or the compartment closes |
///
/// Every API takes `impl Into<MaxWait>`, and a plain [`Duration`] converts:
/// a non-zero duration is `UpTo`, **`Duration::ZERO` is `FailFast`** (as a
/// zero budget allows no waiting). `UpTo(Duration::ZERO)` built by hand
/// behaves as `FailFast` too.
///
/// Prefer a bounded budget to [`Forever`](MaxWait::Forever): an unbounded
/// wait lets a stuck dependency hold its callers forever.
///
/// ```
/// use core::time::Duration;
/// use bulkhead_core::MaxWait;
///
/// assert_eq!(MaxWait::from(Duration::from_millis(50)), MaxWait::UpTo(Duration::from_millis(50)));
/// assert_eq!(MaxWait::from(Duration::ZERO), MaxWait::FailFast);
/// assert_eq!(MaxWait::default(), MaxWait::FailFast);
/// assert_eq!(MaxWait::from_millis(20).budget(), Some(Duration::from_millis(20)));
/// assert_eq!(MaxWait::UpTo(Duration::ZERO).budget(), None); // fails fast
/// assert!(MaxWait::Forever.is_unbounded());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MaxWait {
    /// Do not wait: the immediate verdict, as
    /// [`try_acquire`](crate::Bulkhead::try_acquire). The default.
    #[default]
    FailFast,
    /// Wait at most this long for a seat, then give up with
    /// [`Error::Timeout`](crate::Error::Timeout). A zero duration fails
    /// fast.
    UpTo(Duration),
    /// Wait with no time limit, as core's
    /// [`acquire`](crate::Bulkhead::acquire).
    Forever,
}

impl MaxWait {
    /// `UpTo(budget)`, or `FailFast` for a zero `budget`: the conversion
    /// from [`Duration`], usable in a `const`.
    pub const fn up_to(budget: Duration) -> Self {
        if budget.is_zero() {
            MaxWait::FailFast
        } else {
            MaxWait::UpTo(budget)
        }
    }

    /// [`up_to`](Self::up_to) a budget in milliseconds.
    pub const fn from_millis(millis: u64) -> Self {
        Self::up_to(Duration::from_millis(millis))
    }

    /// The bounded budget, if the caller may wait a bounded time: `Some`
    /// for a non-zero `UpTo`, `None` for `FailFast` (or a zero `UpTo`) and
    /// for `Forever`.
    pub const fn budget(self) -> Option<Duration> {
        match self {
            MaxWait::UpTo(budget) if !budget.is_zero() => Some(budget),
            _ => None,
        }
    }

    /// Whether the caller gets the immediate verdict (`FailFast`, or a zero
    /// `UpTo`).
    pub const fn is_fail_fast(self) -> bool {
        match self {
            MaxWait::FailFast => true,
            MaxWait::UpTo(budget) => budget.is_zero(),
            MaxWait::Forever => false,
        }
    }

    /// Whether the caller waits with no time limit.
    pub const fn is_unbounded(self) -> bool {
        matches!(self, MaxWait::Forever)
    }
}

impl From<Duration> for MaxWait {
    /// `UpTo(budget)`, or `FailFast` for `Duration::ZERO`.
    fn from(budget: Duration) -> Self {
        Self::up_to(budget)
    }
}

impl core::fmt::Display for MaxWait {
    /// `fail fast`, `up to 50ms`, `forever`.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.budget() {
            Some(budget) => write!(f, "up to {budget:?}"),
            None if self.is_unbounded() => f.write_str("forever"),
            None => f.write_str("fail fast"),
        }
    }
}

/// Why a text is not a [`MaxWait`]: see [`MaxWait`'s `FromStr`](MaxWait#impl-FromStr-for-MaxWait).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseMaxWaitError;

impl core::fmt::Display for ParseMaxWaitError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(
            "not a wait budget: expected a duration with a unit (`250ms`, `2s`, `1.5s`, `1m`; \
             units ns, us, ms, s, m, h), `0` or `fail_fast` to fail fast, or `forever`",
        )
    }
}

impl core::error::Error for ParseMaxWaitError {}

impl core::str::FromStr for MaxWait {
    type Err = ParseMaxWaitError;

    /// A wait budget as written in a setting: a number with a unit
    /// (`250ms`, `2s`, `1.5s`, `90us`, `1m`, `1h`; `µs` too), `0` or
    /// `fail_fast` to fail fast, `forever`. Case and surrounding spaces
    /// are ignored. A bare number other than 0 is refused: `250` could
    /// mean milliseconds or seconds.
    ///
    /// ```
    /// use bulkhead_core::MaxWait;
    ///
    /// assert_eq!("250ms".parse(), Ok(MaxWait::from_millis(250)));
    /// assert_eq!(" 1.5S ".parse(), Ok(MaxWait::from_millis(1500)));
    /// assert_eq!("0".parse(), Ok(MaxWait::FailFast));
    /// assert_eq!("forever".parse(), Ok(MaxWait::Forever));
    /// assert!("250".parse::<MaxWait>().is_err()); // which unit?
    /// assert!("2 parsecs".parse::<MaxWait>().is_err());
    /// ```
    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        let text = raw.trim();
        for word in ["0", "fail_fast", "fail-fast", "failfast"] {
            if text.eq_ignore_ascii_case(word) {
                return Ok(MaxWait::FailFast);
            }
        }
        if text.eq_ignore_ascii_case("forever") {
            return Ok(MaxWait::Forever);
        }
        let split = text
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let unit = unit.trim();
        let unit_nanos: u128 = [
            ("ns", 1),
            ("us", 1_000),
            ("µs", 1_000),
            ("ms", 1_000_000),
            ("s", 1_000_000_000),
            ("m", 60_000_000_000),
            ("h", 3_600_000_000_000),
        ]
        .iter()
        .find(|(name, _)| unit.eq_ignore_ascii_case(name))
        .map(|&(_, nanos)| nanos)
        .ok_or(ParseMaxWaitError)?;
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty() && fraction.is_empty()
            || !digits(whole)
            || !digits(fraction)
            || fraction.len() > 9
        {
            return Err(ParseMaxWaitError);
        }
        let whole: u128 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| ParseMaxWaitError)?
        };
        let fraction_nanos = if fraction.is_empty() {
            0
        } else {
            let scale = 10u128.pow(fraction.len() as u32);
            fraction.parse::<u128>().map_err(|_| ParseMaxWaitError)? * unit_nanos / scale
        };
        let nanos = whole
            .checked_mul(unit_nanos)
            .and_then(|n| n.checked_add(fraction_nanos))
            .ok_or(ParseMaxWaitError)?;
        let secs = u64::try_from(nanos / 1_000_000_000).map_err(|_| ParseMaxWaitError)?;
        Ok(MaxWait::up_to(Duration::new(
            secs,
            (nanos % 1_000_000_000) as u32,
        )))
    }
}

/// A budget written back in the form `FromStr` reads: the largest unit
/// that is exact (`2s`, `250ms`, `1500us`), `fail_fast`, `forever`.
struct Setting(MaxWait);

impl core::fmt::Display for Setting {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let Some(budget) = self.0.budget() else {
            return f.write_str(if self.0.is_unbounded() {
                "forever"
            } else {
                "fail_fast"
            });
        };
        let nanos = budget.as_nanos();
        for (unit, size) in [("s", 1_000_000_000u128), ("ms", 1_000_000), ("us", 1_000)] {
            if nanos % size == 0 {
                return write!(f, "{}{unit}", nanos / size);
            }
        }
        write!(f, "{nanos}ns")
    }
}

impl MaxWait {
    /// The budget as a setting string, which `FromStr` reads back
    /// exactly: `"250ms"`, `"2s"`, `"fail_fast"`, `"forever"`.
    ///
    /// ```
    /// use bulkhead_core::MaxWait;
    /// use core::fmt::Write;
    ///
    /// let mut text = String::new();
    /// write!(text, "{}", MaxWait::from_millis(2500).as_setting()).unwrap();
    /// assert_eq!(text, "2500ms");
    /// assert_eq!(text.parse(), Ok(MaxWait::from_millis(2500)));
    /// ```
    pub fn as_setting(self) -> impl core::fmt::Display {
        Setting(self)
    }
}

#[cfg(feature = "serde")]
mod serde_impls {
    use super::MaxWait;

    /// As its setting string (`"250ms"`, `"fail_fast"`, `"forever"`).
    impl serde::Serialize for MaxWait {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            serializer.collect_str(&self.as_setting())
        }
    }

    /// From a setting string, or the number 0 (fail fast).
    impl<'de> serde::Deserialize<'de> for MaxWait {
        fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            struct Visitor;
            impl serde::de::Visitor<'_> for Visitor {
                type Value = MaxWait;
                fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                    f.write_str(
                        "a wait budget: \"250ms\", \"2s\", \"fail_fast\" (or 0), \"forever\"",
                    )
                }
                fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<MaxWait, E> {
                    v.parse().map_err(E::custom)
                }
                fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<MaxWait, E> {
                    if v == 0 {
                        Ok(MaxWait::FailFast)
                    } else {
                        Err(E::custom(
                            "a bare number has no unit: write \"250ms\" or \"2s\"",
                        ))
                    }
                }
                fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<MaxWait, E> {
                    match u64::try_from(v) {
                        Ok(v) => self.visit_u64(v),
                        Err(_) => Err(E::custom("a wait budget cannot be negative")),
                    }
                }
            }
            deserializer.deserialize_any(Visitor)
        }
    }
}
