//! [`DomainConfig`]: one registered compartment's settings, built in code.

use bulkhead_core::partition::PartitionConfig;
use bulkhead_core::{Admission, MaxWait, QueueOrder};

use super::limit_config::LimitConfig;
use super::parse::{Field, SettingsError, SettingsErrorKind, parse_admission, parse_queue_order};

/// The settings of one registered compartment, built in code.
///
/// The registry layers the configuration file and the environment on top
/// of it (see [`RegistryBuilder`](crate::registry::RegistryBuilder) for the
/// order). Every setter is `const`.
///
/// - `max_concurrent`: seats (for a thread-pool compartment: workers +
///   queue).
/// - `max_wait`: the wait budget ([`MaxWait`]) of the registry's lookups
///   that take a seat ([`Registry::acquire_blocking`](crate::registry::Registry::acquire_blocking),
///   [`Registry::acquire_timeout`](crate::registry::Registry::acquire_timeout),
///   bulkhead-tokio's `RegistryExt` and `BulkheadLayer::from_registry`);
///   fail fast by default.
/// - `max_waiting`: the queue limit; `None` for none.
/// - `max_workers`: worker threads of a thread-pool compartment; ignored by
///   a semaphore compartment.
/// - `admission`: FIFO (default), barging or bounded barging.
/// - `queue_order`: which end of the line a freed seat goes to
///   ([`QueueOrder`]): oldest first (default) or newest first with
///   drop-oldest when the queue is full. It can change live
///   ([`Registry::reconfigure`](crate::registry::Registry::reconfigure)).
///   A semaphore or scoped compartment setting: a thread pool runs its
///   queue oldest first and refuses `Lifo` set for it (a pool the file
///   declares does not inherit the `[default]` table's order).
/// - `limit`: an adaptive limit ([`LimitConfig`]); `None` (the default)
///   keeps `max_concurrent` fixed. With a limit, the compartment starts at
///   `max_concurrent` (clamped into the limit's bounds, unless the limit
///   sets `initial`) and the algorithm moves it from then on; see
///   [`Registry`](crate::registry::Registry#adaptive-limits).
/// - `partitions`: the partitions that share its seats (core's
///   [`PartitionConfig`]); empty (the default) for a plain compartment.
///   See [`partitions`](Self::partitions) and
///   [`Registry::partition`](crate::registry::Registry::partition).
///
/// ```
/// use bulkhead_std::{Admission, MaxWait, QueueOrder};
/// use bulkhead_std::registry::DomainConfig;
///
/// const REPORTS: DomainConfig = DomainConfig::new(4)
///     .max_wait(MaxWait::from_millis(50))
///     .max_waiting(16)
///     .admission(Admission::Barging)
///     .queue_order(QueueOrder::Lifo);
/// assert_eq!(REPORTS.max_concurrent, 4);
/// assert_eq!(REPORTS.max_waiting, Some(16));
/// ```
///
/// Every field is public, so struct-update syntax works too, as for
/// [`LimitConfig`]:
///
/// ```
/// use bulkhead_std::MaxWait;
/// use bulkhead_std::registry::DomainConfig;
///
/// const SEARCH: DomainConfig = DomainConfig { max_wait: MaxWait::from_millis(20), ..DomainConfig::new(8) };
/// assert_eq!((SEARCH.max_concurrent, SEARCH.max_waiting), (8, None));
/// ```
///
/// With the `serde` feature it is `Serialize` and `Deserialize` (every
/// field optional but `max_concurrent`; `max_wait` as `"50ms"`,
/// `"fail_fast"` or `"forever"`; `admission` as `"fifo"`, `"barging"` or
/// `"bounded_barging"`; `queue_order` as `"fifo"` or `"lifo"`), so it can sit in your own configuration struct:
///
/// ```
/// # #[cfg(feature = "serde")] {
/// use bulkhead_std::MaxWait;
/// use bulkhead_std::registry::DomainConfig;
///
/// let db: DomainConfig = serde_json::from_str(r#"{"max_concurrent": 8, "max_wait": "50ms"}"#).unwrap();
/// assert_eq!((db.max_concurrent, db.max_wait), (8, MaxWait::from_millis(50)));
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct DomainConfig {
    /// Seats; at least 1.
    pub max_concurrent: usize,
    /// The wait budget of the registry's lookups that take a seat (and of
    /// a tower layer built from the registry); fail fast by default.
    #[cfg_attr(feature = "serde", serde(default))]
    pub max_wait: MaxWait,
    /// The queue limit; `None` for no limit.
    #[cfg_attr(feature = "serde", serde(default))]
    pub max_waiting: Option<usize>,
    /// Worker threads of a thread-pool compartment.
    #[cfg_attr(feature = "serde", serde(default))]
    pub max_workers: Option<usize>,
    /// Who gets a freed seat.
    #[cfg_attr(feature = "serde", serde(default))]
    pub admission: Admission,
    /// Which end of the line a freed seat goes to, and whom a full queue
    /// turns away.
    #[cfg_attr(feature = "serde", serde(default))]
    pub queue_order: QueueOrder,
    /// The adaptive limit; `None` for a fixed `max_concurrent`.
    #[cfg_attr(feature = "serde", serde(default))]
    pub limit: Option<LimitConfig>,
    /// The partitions sharing its seats; empty for a plain compartment.
    /// A `'static` slice keeps `DomainConfig` `Copy` and `const`; lists
    /// read from a file, the environment or serde are kept for the life of
    /// the process, once per distinct list.
    #[cfg_attr(
        feature = "serde",
        serde(
            default,
            skip_serializing_if = "<[PartitionConfig]>::is_empty",
            with = "super::partition::serde_partitions"
        )
    )]
    pub partitions: &'static [PartitionConfig],
}

impl DomainConfig {
    /// `max_concurrent` seats, fail fast, no queue limit, FIFO admission,
    /// oldest first.
    pub const fn new(max_concurrent: usize) -> Self {
        Self {
            max_concurrent,
            max_wait: MaxWait::FailFast,
            max_waiting: None,
            max_workers: None,
            admission: Admission::Fifo,
            queue_order: QueueOrder::Fifo,
            limit: None,
            partitions: &[],
        }
    }

    /// How long the registry's lookups that take a seat may wait:
    /// [`MaxWait::up_to`]`(d)` (or `MaxWait::from_millis`), `FailFast` (the
    /// default) or `Forever`.
    #[must_use]
    pub const fn max_wait(mut self, max_wait: MaxWait) -> Self {
        self.max_wait = max_wait;
        self
    }

    /// Turns callers away at once when `max_waiting` already wait.
    #[must_use]
    pub const fn max_waiting(mut self, max_waiting: usize) -> Self {
        self.max_waiting = Some(max_waiting);
        self
    }

    /// Worker threads of a thread-pool compartment.
    #[must_use]
    pub const fn max_workers(mut self, max_workers: usize) -> Self {
        self.max_workers = Some(max_workers);
        self
    }

    /// Who gets a freed seat.
    #[must_use]
    pub const fn admission(mut self, admission: Admission) -> Self {
        self.admission = admission;
        self
    }

    /// Which end of the line a freed seat goes to; see [`QueueOrder`].
    /// Newest first ([`QueueOrder::Lifo`]) suits a latency-bound service
    /// under overload; with a [`max_waiting`](Self::max_waiting) limit, a
    /// full queue then turns its oldest waiter away instead of the
    /// newcomer.
    ///
    /// ```
    /// use bulkhead_std::QueueOrder;
    /// use bulkhead_std::registry::{DomainConfig, Registry};
    ///
    /// let registry = Registry::local();
    /// let api = registry.get_or_create("api", DomainConfig::new(8).max_waiting(32).queue_order(QueueOrder::Lifo))?;
    /// assert_eq!(api.queue_order(), QueueOrder::Lifo);
    /// # Ok::<(), bulkhead_std::registry::RegistryError>(())
    /// ```
    #[must_use]
    pub const fn queue_order(mut self, queue_order: QueueOrder) -> Self {
        self.queue_order = queue_order;
        self
    }

    /// Makes the compartment adaptive: `limit` moves `max_concurrent`
    /// from the round trips and outcomes of the calls it admits.
    ///
    /// ```
    /// use bulkhead_std::{Algorithm, LimitConfig};
    /// use bulkhead_std::registry::{DomainConfig, Registry};
    ///
    /// const LIMIT: LimitConfig = LimitConfig { min: Some(2), max: Some(64), ..LimitConfig::new(Algorithm::Gradient2) };
    /// const SEARCH: DomainConfig = DomainConfig::new(8).limit(LIMIT);
    /// let registry = Registry::local();
    /// registry.get_or_create("search", SEARCH)?;
    /// let search = registry.domain("search")?;
    /// assert!(search.controller().is_some());
    /// assert_eq!(search.bulkhead().state().max_concurrent, 8); // where it starts, within [2, 64]
    /// # Ok::<(), bulkhead_std::registry::RegistryError>(())
    /// ```
    #[must_use]
    pub const fn limit(mut self, limit: LimitConfig) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Makes the compartment partitioned: its seats are shared by
    /// `partitions` (core's [`PartitionConfig`]: a share, what it lends,
    /// what it may borrow, a priority, a line of its own and a `max_wait`
    /// that replaces the domain's for that partition). Take a partition's
    /// seats with [`Registry::partition`](crate::registry::Registry::partition).
    ///
    /// A partitioned compartment has a fixed `max_concurrent` (an adaptive
    /// `limit` is refused), and is created with
    /// [`Registry::get_or_create_partitioned`](crate::registry::Registry::get_or_create_partitioned)
    /// or declared by the file. The file's `[domains.NAME.partitions.*]`
    /// tables replace these partitions whole; each
    /// `BULKHEAD_<NAME>_PARTITIONS_<PARTITION>_<KEY>` variable then
    /// overrides one setting of one of them.
    ///
    /// ```
    /// use bulkhead_std::bulkhead_core::partition::{Amount, PartitionConfig};
    /// use bulkhead_std::registry::{DomainConfig, Registry};
    ///
    /// // A `static` array: partitions hold names, which a `const` cannot
    /// // borrow for `'static`.
    /// static PARTITIONS: [PartitionConfig; 2] = [
    ///     PartitionConfig::new("live", Amount::Percent(75)).priority(1),
    ///     PartitionConfig::new("batch", Amount::Seats(8)).borrow(Amount::Seats(16)),
    /// ];
    /// const DB: DomainConfig = DomainConfig::new(32).partitions(&PARTITIONS);
    /// let registry = Registry::local();
    /// registry.get_or_create_partitioned("db", DB)?;
    /// let batch = registry.partition("db", "batch")?;
    /// let night: Vec<_> = (0..24).map(|_| batch.try_acquire().unwrap()).collect(); // 8 + 16 borrowed
    /// assert!(batch.try_acquire().is_err());
    /// assert_eq!(registry.partition("db", "live")?.state().lent, 16);
    /// # drop(night);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub const fn partitions(mut self, partitions: &'static [PartitionConfig]) -> Self {
        self.partitions = partitions;
        self
    }

    /// As [`partitions`](Self::partitions), for partitions made at run
    /// time (names read from elsewhere, a list built in a loop): the list
    /// is kept for the life of the process, once per distinct list.
    ///
    /// ```
    /// use bulkhead_std::bulkhead_core::partition::{Amount, PartitionConfig};
    /// use bulkhead_std::registry::{DomainConfig, Registry};
    ///
    /// let tenants = ["gold", "silver"];
    /// let config = DomainConfig::new(10).partitions_from(
    ///     tenants.map(|t| PartitionConfig::new(t, Amount::Percent(50))),
    /// );
    /// let registry = Registry::local();
    /// registry.get_or_create_partitioned("api", config)?;
    /// assert_eq!(registry.partition("api", "silver")?.state().share, 5);
    /// # Ok::<(), bulkhead_std::registry::RegistryError>(())
    /// ```
    #[must_use]
    pub fn partitions_from(self, partitions: impl IntoIterator<Item = PartitionConfig>) -> Self {
        self.partitions(super::partition::intern(partitions.into_iter().collect()))
    }

    /// Applies the fields an overlay sets (file or environment).
    pub(crate) fn apply(&mut self, overlay: &Overlay) {
        if let Some(v) = overlay.max_concurrent {
            self.max_concurrent = v;
        }
        if let Some(v) = overlay.max_wait {
            self.max_wait = v;
        }
        if let Some(v) = overlay.max_waiting {
            self.max_waiting = Some(v);
        }
        if let Some(v) = overlay.max_workers {
            self.max_workers = Some(v);
        }
        if let Some(v) = overlay.admission {
            self.admission = v;
        }
        if let Some(v) = overlay.queue_order {
            self.queue_order = v;
        }
        if let Some(v) = overlay.limit {
            self.limit = Some(v);
        }
        if let Some(v) = overlay.partitions {
            self.partitions = v;
        }
    }
}

/// The fields one source (file section or environment) sets, already
/// validated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Overlay {
    pub(crate) max_concurrent: Option<usize>,
    pub(crate) max_wait: Option<MaxWait>,
    pub(crate) max_waiting: Option<usize>,
    pub(crate) max_workers: Option<usize>,
    pub(crate) admission: Option<Admission>,
    pub(crate) queue_order: Option<QueueOrder>,
    /// A file's `limit` table, which replaces the code's limit whole (the
    /// environment's `LIMIT_*` variables override single fields; see
    /// [`LimitConfig::from_env`]).
    pub(crate) limit: Option<LimitConfig>,
    /// A file's `partitions` tables, which replace the code's partitions
    /// whole (the environment's `PARTITIONS_*` variables override single
    /// settings of the partitions declared).
    pub(crate) partitions: Option<&'static [PartitionConfig]>,
}

// Here rather than in `parse`, so that reading a value depends on the
// settings it fills, not the settings on the reader.
impl Field {
    /// Checks a written value and stores it in `overlay`.
    pub(crate) fn set(
        self,
        overlay: &mut Overlay,
        key: &str,
        raw: &str,
    ) -> Result<(), SettingsError> {
        if self == Field::Admission {
            overlay.admission = Some(parse_admission(key, raw)?);
            return Ok(());
        }
        if self == Field::QueueOrder {
            overlay.queue_order = Some(parse_queue_order(key, raw)?);
            return Ok(());
        }
        if matches!(self, Field::MaxWait | Field::MaxWaitMs) && overlay.max_wait.is_some() {
            return Err(SettingsError::new(
                SettingsErrorKind::Conflict,
                key,
                raw,
                "one of `max_wait` (with a unit) or `max_wait_ms`, not both",
            ));
        }
        if self == Field::MaxWait {
            overlay.max_wait = Some(raw.parse::<MaxWait>().map_err(|_| {
                SettingsError::new(SettingsErrorKind::BadDuration, key, raw, self.expected())
            })?);
            return Ok(());
        }
        let n = self.number(key, raw)?;
        let as_usize = usize::try_from(n).unwrap_or(usize::MAX);
        match self {
            Field::MaxConcurrent => overlay.max_concurrent = Some(as_usize),
            Field::MaxWorkers => overlay.max_workers = Some(as_usize),
            Field::MaxWaiting => overlay.max_waiting = Some(as_usize),
            Field::MaxWaitMs => overlay.max_wait = Some(MaxWait::from_millis(n)),
            Field::Admission | Field::QueueOrder | Field::MaxWait => {}
        }
        Ok(())
    }
}
