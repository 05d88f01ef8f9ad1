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
