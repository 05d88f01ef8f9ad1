//! Partitioned registry compartments: their settings as a file, the
//! environment and serde write them, and [`DomainPartition`], the handle
//! that takes one partition's seats.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bulkhead_core::partition::{
    Amount, MAX_PARTITIONS, PartitionConfig, PartitionId, PartitionSeat, PartitionState,
};
use bulkhead_core::{Error, MAX_CONCURRENT_LIMIT, MaxWait};

use super::parse::{Field, SettingsError, SettingsErrorKind, parse_queue_order, whole_number};
use super::spelling::nearest;
use crate::blocking::BlockingAcquirePartition;
use crate::partition::Partitioned;

/// A seat of one partition of a registered compartment; it owns an `Arc`
/// of the compartment, so it may move to another thread or task.
pub type DomainPartitionSeat = PartitionSeat<Arc<Partitioned>>;

/// The keys of one partition's table (`[domains.NAME.partitions.P]`);
/// upper-cased, the last words of its variables.
pub(crate) const KEYS: [&str; 7] = [
    "share",
    "lendable",
    "borrow",
    "priority",
    "max_wait",
    "max_waiting",
    "queue_order",
];

/// The settings of [`KEYS`] that are amounts.
#[cfg(feature = "config-file")]
pub(crate) const AMOUNT_KEYS: [&str; 3] = ["share", "lendable", "borrow"];

/// What an amount looks like, for messages.
const AMOUNT: &str = "a whole number of seats (`24`) or a percentage from 0% to 100% written \
                      with a percent sign (`\"75%\"`)";

/// What an amount looks like in the file, for a value of another type
/// (`share = 8.5`).
#[cfg(feature = "config-file")]
pub(crate) const FILE_AMOUNT: &str = "a whole number of seats (`share = 8`, never a fraction) or \
                                      a percentage from 0% to 100% written as a string \
                                      (`share = \"75%\"`)";

/// Keeps `partitions` for the life of the process, once per distinct list,
/// so that a [`DomainConfig`](super::DomainConfig) built from a file, the
/// environment or serde stays `Copy` like one built in code. The lists a
/// process reads are few (one per partitioned compartment and
/// configuration), so what is kept stays small.
pub(crate) fn intern(partitions: Vec<PartitionConfig>) -> &'static [PartitionConfig] {
    static KEPT: Mutex<Vec<&'static [PartitionConfig]>> = Mutex::new(Vec::new());
    if partitions.is_empty() {
        return &[];
    }
    let mut kept = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(same) = kept.iter().find(|k| **k == partitions.as_slice()) {
        return same;
    }
    let leaked: &'static [PartitionConfig] = Vec::leak(partitions);
    kept.push(leaked);
    leaked
}

/// An amount as written: `24` (a count) or `"75%"` (a percentage).
/// `bare_count` says whether digits without `%` are a count: yes for a
/// number (a TOML integer, a variable), no for a TOML string, where
/// `"75"` is more likely a percentage missing its sign than a count.
pub(crate) fn parse_amount(
    key: &str,
    raw: &str,
    bare_count: bool,
) -> Result<Amount, SettingsError> {
    let text = raw.trim();
    if let Some(percent) = text.strip_suffix('%') {
        let p = whole_number(key, percent, 0, u64::MAX, AMOUNT)
            .map_err(|e| SettingsError::new(e.kind(), key, raw, AMOUNT))?;
        return match u8::try_from(p) {
            Ok(p) if p <= 100 => Ok(Amount::Percent(p)),
            _ => Err(SettingsError::new(
                SettingsErrorKind::Overflow,
                key,
                raw,
                "a percentage from 0% to 100%",
            )),
        };
    }
    if !bare_count {
        return Err(SettingsError::new(
            SettingsErrorKind::BadAmount,
            key,
            raw,
            format!("{AMOUNT}; a count is a bare number, not a string"),
        ));
    }
    let max = MAX_CONCURRENT_LIMIT as u64;
    let n = whole_number(key, text, 0, max, AMOUNT)?;
    Ok(Amount::Seats(usize::try_from(n).unwrap_or(usize::MAX)))
}

/// `config` with its setting `setting` (one of [`KEYS`]) set from `raw`;
/// `key` names the setting in messages.
pub(crate) fn set(
    config: PartitionConfig,
    setting: &str,
    key: &str,
    raw: &str,
    bare_count: bool,
) -> Result<PartitionConfig, SettingsError> {
    Ok(match setting {
        "share" => config.share(parse_amount(key, raw, bare_count)?),
        "lendable" => config.lendable(parse_amount(key, raw, bare_count)?),
        "borrow" => config.borrow(parse_amount(key, raw, bare_count)?),
        "priority" => {
            let p = whole_number(key, raw, 0, 255, "a whole number from 0 to 255")?;
            config.priority(u8::try_from(p).unwrap_or(u8::MAX))
        }
        "max_wait" => config.max_wait(raw.parse::<MaxWait>().map_err(|_| {
            SettingsError::new(
                SettingsErrorKind::BadDuration,
                key,
                raw,
                Field::MaxWait.expected(),
            )
        })?),
        "max_waiting" => {
            let n = Field::MaxWaiting.number(key, raw)?;
            config.max_waiting(usize::try_from(n).unwrap_or(usize::MAX))
        }
        "queue_order" => config.queue_order(parse_queue_order(key, raw)?),
        other => {
            return Err(unknown_setting(key, other, raw));
        }
    })
}

/// The error for a setting of a partition that is none of [`KEYS`].
pub(crate) fn unknown_setting(key: &str, setting: &str, raw: &str) -> SettingsError {
    let meant = match nearest(setting, KEYS) {
        Some(meant) => format!("; did you mean {meant}?"),
        None => String::new(),
    };
    SettingsError::new(
        SettingsErrorKind::UnknownKey,
        key,
        raw,
        format!("a partition setting: {}{meant}", KEYS.join(", ")),
    )
}

/// A partition named at run time.
#[cfg(any(feature = "config-file", feature = "serde"))]
pub(crate) fn named(name: &str, share: Amount) -> PartitionConfig {
    PartitionConfig::named(bulkhead_core::Name::shared(Arc::from(name)), share)
}

/// The wait budgets of a registered partitioned compartment's partitions,
/// by partition index: each partition's `max_wait`, or else the
/// compartment's. Shared by the registry's entry and every
/// [`DomainPartition`] of it, and rewritten by a live reconfiguration, so
/// that a kept handle waits the current budget; a wait reads one atomic.
pub(crate) struct Budgets([AtomicU64; MAX_PARTITIONS]);

/// [`MaxWait::FailFast`] (and a zero budget, which fails fast too).
const FAIL_FAST: u64 = 0;
/// [`MaxWait::Forever`].
const FOREVER: u64 = u64::MAX;

impl Budgets {
    /// The budgets `partitions` and the compartment's `max_wait` give.
    pub(crate) fn new(max_wait: MaxWait, partitions: &[PartitionConfig]) -> Self {
        let budgets = Self(std::array::from_fn(|_| AtomicU64::new(FAIL_FAST)));
        budgets.set(max_wait, partitions);
        budgets
    }

    /// Takes new settings (after a live reconfiguration).
    pub(crate) fn set(&self, max_wait: MaxWait, partitions: &[PartitionConfig]) {
        for (slot, p) in self.0.iter().zip(partitions) {
            slot.store(encode(p.max_wait.unwrap_or(max_wait)), Ordering::Relaxed);
        }
    }

    /// The budget of partition `index`.
    fn get(&self, index: usize) -> MaxWait {
        self.0
            .get(index)
            .map_or(MaxWait::FailFast, |b| decode(b.load(Ordering::Relaxed)))
    }
}

/// A budget in one `u64`: nanoseconds, with 0 for failing fast and
/// `u64::MAX` for no limit. A budget beyond 584 years is kept as 584
/// years, which no caller will tell from its own.
fn encode(max_wait: MaxWait) -> u64 {
    match max_wait {
        MaxWait::FailFast => FAIL_FAST,
        MaxWait::Forever => FOREVER,
        MaxWait::UpTo(d) => u64::try_from(d.as_nanos()).map_or(FOREVER - 1, |n| n.min(FOREVER - 1)),
    }
}

fn decode(raw: u64) -> MaxWait {
    match raw {
        FAIL_FAST => MaxWait::FailFast,
        FOREVER => MaxWait::Forever,
        nanos => MaxWait::UpTo(Duration::from_nanos(nanos)),
    }
}

/// A partition of a registered compartment, looked up once by name with
/// [`Registry::partition`](super::Registry::partition): cheap to clone,
/// and every wait uses its budget, the partition's own `max_wait` or else
/// the compartment's.
///
/// The budget is read at each wait, so a kept handle follows a live
/// [`Registry::reconfigure`](super::Registry::reconfigure) of either
/// `max_wait` (one atomic load; nothing to look up again).
///
/// ```
/// use bulkhead_std::MaxWait;
/// use bulkhead_std::bulkhead_core::partition::{Amount, PartitionConfig};
/// use bulkhead_std::registry::{DomainConfig, Registry};
///
/// let registry = Registry::local();
/// registry.get_or_create_partitioned(
///     "db",
///     DomainConfig::new(4).max_wait(MaxWait::from_millis(5)).partitions_from([
///         PartitionConfig::new("live", Amount::Seats(3)),
///         PartitionConfig::new("batch", Amount::Seats(1)).borrow(Amount::Seats(0)),
///     ]),
/// )?;
/// let batch = registry.partition("db", "batch")?;
/// let seat = batch.acquire_blocking()?;
/// assert!(batch.acquire_blocking().is_err()); // waits 5 ms: batch may not borrow
/// assert_eq!(batch.execute(|| 6 * 7).is_err(), true);
/// drop(seat);
/// assert_eq!(batch.execute(|| 6 * 7)?, 42);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct DomainPartition {
    pub(super) compartment: Arc<Partitioned>,
    pub(super) id: PartitionId,
    pub(super) budgets: Arc<Budgets>,
}

impl DomainPartition {
    /// The compartment it is a partition of.
    pub fn compartment(&self) -> &Arc<Partitioned> {
        &self.compartment
    }

    /// The partition's id in its compartment.
    pub fn id(&self) -> PartitionId {
        self.id
    }

    /// The wait budget of [`acquire_blocking`](Self::acquire_blocking),
    /// [`execute`](Self::execute) and
    /// [`acquire_timeout`](Self::acquire_timeout): the partition's
    /// `max_wait`, or else the compartment's, as configured now (a live
    /// reconfiguration reaches handles already looked up).
    pub fn wait_budget(&self) -> MaxWait {
        self.budgets.get(self.id.index())
    }

    /// The partition's counters (core's
    /// [`partition_state`](Partitioned::partition_state)).
    pub fn state(&self) -> PartitionState {
        match self.compartment.partition_state(self.id) {
            Ok(state) => state,
            // The id was made by this compartment, which never loses a
            // partition.
            Err(e) => unreachable!("a partition id of its own compartment: {e}"),
        }
    }

    /// A seat now, or core's [`Error`] (`PartitionFull`, `Closed`, …).
    ///
    /// # Errors
    /// As [`Partitioned::try_acquire`].
    pub fn try_acquire(&self) -> Result<DomainPartitionSeat, Error> {
        PartitionSeat::try_acquire(Arc::clone(&self.compartment), self.id)
    }

    /// `weight` seats at once, as one seat, now or not at all.
    ///
    /// # Errors
    /// As [`Partitioned::try_acquire_many`].
    pub fn try_acquire_many(&self, weight: usize) -> Result<DomainPartitionSeat, Error> {
        PartitionSeat::try_acquire_many(Arc::clone(&self.compartment), self.id, weight)
    }

    /// A seat within the budget ([`wait_budget`](Self::wait_budget)), parking the
    /// calling thread. On a thread that drives an async runtime's event
    /// loop it does not wait (that could block the loop that holds the
    /// seat) and gives the immediate verdict.
    ///
    /// # Errors
    /// `PartitionFull` / `QueueFull` / `Closed` as
    /// [`try_acquire`](Self::try_acquire), `Timeout` when the budget runs
    /// out.
    pub fn acquire_blocking(&self) -> Result<DomainPartitionSeat, Error> {
        self.acquire_many_blocking(1)
    }

    /// As [`acquire_blocking`](Self::acquire_blocking), for `weight` seats
    /// at once.
    ///
    /// # Errors
    /// As [`acquire_blocking`](Self::acquire_blocking), and `ZeroWeight`,
    /// `WeightAboveLimit`.
    pub fn acquire_many_blocking(&self, weight: usize) -> Result<DomainPartitionSeat, Error> {
        // The crate's one blocking wait (event-loop check, park, budget,
        // wait histogram), as for any partitioned compartment.
        self.compartment
            .acquire_many_blocking_owned(self.id, weight, self.wait_budget())
    }

    /// A seat within the budget, on the timer `sleep` (any runtime's:
    /// `tokio::time::sleep`, `async_io::Timer::after`, …).
    ///
    /// # Errors
    /// As [`acquire_blocking`](Self::acquire_blocking).
    pub async fn acquire_timeout<T: Future>(
        &self,
        sleep: impl FnOnce(Duration) -> T,
    ) -> Result<DomainPartitionSeat, Error> {
        self.acquire_many_timeout(1, sleep).await
    }

    /// As [`acquire_timeout`](Self::acquire_timeout), for `weight` seats at
    /// once.
    ///
    /// # Errors
    /// As [`acquire_many_blocking`](Self::acquire_many_blocking).
    pub async fn acquire_many_timeout<T: Future>(
        &self,
        weight: usize,
        sleep: impl FnOnce(Duration) -> T,
    ) -> Result<DomainPartitionSeat, Error> {
        PartitionSeat::acquire_many_timeout(
            Arc::clone(&self.compartment),
            self.id,
            weight,
            self.wait_budget(),
            sleep,
        )
        .await
    }

    /// Runs `work` on this thread while holding a seat, taken as
    /// [`acquire_blocking`](Self::acquire_blocking) takes it.
    ///
    /// # Errors
    /// As [`acquire_blocking`](Self::acquire_blocking); `work` has then
    /// not run.
    pub fn execute<T>(&self, work: impl FnOnce() -> T) -> Result<T, Error> {
        let _seat = self.acquire_blocking()?;
        Ok(work())
    }
}

impl std::fmt::Debug for DomainPartition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state();
        f.debug_struct("DomainPartition")
            .field("compartment", &self.compartment.name())
            .field("partition", &state.name.as_str())
            .field("wait_budget", &self.wait_budget())
            .finish()
    }
}

/// serde for [`DomainConfig::partitions`](super::DomainConfig::partitions):
/// a map from partition name to its settings, as the file writes them
/// (`{"live": {"share": "75%", "priority": 1}}`).
#[cfg(feature = "serde")]
pub(crate) mod serde_partitions {
    use std::fmt;

    use serde::de::{Error as _, MapAccess, Visitor};
    use serde::ser::SerializeMap;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::*;

    /// An amount as written: a count or `"N%"`.
    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Written {
        Count(i64),
        Text(String),
    }

    impl From<Amount> for Written {
        fn from(a: Amount) -> Self {
            match a {
                Amount::Seats(n) => Written::Count(i64::try_from(n).unwrap_or(i64::MAX)),
                Amount::Percent(p) => Written::Text(format!("{p}%")),
            }
        }
    }

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Settings {
        share: Written,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lendable: Option<Written>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        borrow: Option<Written>,
        #[serde(default)]
        priority: u8,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_wait: Option<MaxWait>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_waiting: Option<usize>,
        #[serde(default)]
        queue_order: bulkhead_core::QueueOrder,
    }

    fn amount(key: &str, w: Written) -> Result<Amount, SettingsError> {
        match w {
            Written::Count(n) => parse_amount(key, &n.to_string(), true),
            Written::Text(t) => parse_amount(key, &t, false),
        }
    }

    pub(crate) fn serialize<S: Serializer>(
        partitions: &&'static [PartitionConfig],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        // A map, as the file writes it, in the partitions' order (which
        // breaks ties between equal priorities, and which a live
        // reconfiguration keeps): the way back keeps the order written.
        let mut map = serializer.serialize_map(Some(partitions.len()))?;
        for p in *partitions {
            map.serialize_entry(
                p.name.as_str(),
                &Settings {
                    share: p.share.into(),
                    lendable: p.lendable.map(Into::into),
                    borrow: p.borrow.map(Into::into),
                    priority: p.priority,
                    max_wait: p.max_wait,
                    max_waiting: p.max_waiting,
                    queue_order: p.queue_order,
                },
            )?;
        }
        map.end()
    }

    /// The map's entries in the order written (a `BTreeMap` would sort
    /// them by name).
    struct InOrder;

    impl<'de> Visitor<'de> for InOrder {
        type Value = Vec<(String, Settings)>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a map from partition name to its settings")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::with_capacity(access.size_hint().unwrap_or(0));
            while let Some(entry) = access.next_entry()? {
                out.push(entry);
            }
            Ok(out)
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<&'static [PartitionConfig], D::Error> {
        let entries = deserializer.deserialize_map(InOrder)?;
        let mut out = Vec::with_capacity(entries.len());
        for (name, s) in entries {
            let key = |k: &str| format!("partitions.{name}.{k}");
            let share = amount(&key("share"), s.share).map_err(D::Error::custom)?;
            let mut p = named(&name, share)
                .priority(s.priority)
                .queue_order(s.queue_order);
            if let Some(w) = s.lendable {
                p = p.lendable(amount(&key("lendable"), w).map_err(D::Error::custom)?);
            }
            if let Some(w) = s.borrow {
                p = p.borrow(amount(&key("borrow"), w).map_err(D::Error::custom)?);
            }
            if let Some(w) = s.max_wait {
                p = p.max_wait(w);
            }
            if let Some(n) = s.max_waiting {
                p = p.max_waiting(n);
            }
            out.push(p);
        }
        Ok(intern(out))
    }
}
