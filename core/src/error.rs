//! Why a caller did not get a seat, and why a configuration was refused.

use core::fmt;
use core::time::Duration;

use crate::name::Name;

/// Why a caller did not get a seat.
///
/// Every variant names the compartment, and its message says what to
/// change. Match on the variant to map a rejection to a response (an HTTP
/// 503, a fallback value, a retry).
///
/// ```
/// # use bulkhead_core::Error;
/// let err = Error::Full { name: "database".into(), max_concurrent: 8, active: 8 };
/// assert!(err.to_string().contains("`database` is full"));
/// assert_eq!(err.name(), "database");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// Every seat was taken and the caller had no wait budget (fail fast),
    /// or, in FIFO mode, earlier callers were already waiting.
    Full {
        /// The compartment.
        name: Name,
        /// Its limit when the caller was turned away.
        max_concurrent: usize,
        /// Seats held at that moment.
        active: usize,
    },
    /// `max_waiting` callers were already waiting, so the caller was turned
    /// away at once instead of queueing.
    QueueFull {
        /// The compartment.
        name: Name,
        /// The queue limit.
        max_waiting: usize,
    },
    /// The caller waited its whole budget without getting a seat.
    Timeout {
        /// The compartment.
        name: Name,
        /// How long the caller was willing to wait.
        budget: Duration,
    },
    /// The compartment was closed; it admits nobody any more.
    Closed {
        /// The compartment.
        name: Name,
    },
    /// As [`Error::Full`], for a *blocking* acquire that had a wait budget
    /// but could not use it: its thread drives an event loop (a tokio
    /// runtime, an async-std task), where blocking could stall the very
    /// tasks that would free a seat, so it gave the immediate verdict. The
    /// fix is to wait with the async acquire, or to call from a thread
    /// that may block (`spawn_blocking`). Core never returns it; the std
    /// adapter's blocking acquires do.
    FullOnEventLoop {
        /// The compartment.
        name: Name,
        /// Its limit when the caller was turned away.
        max_concurrent: usize,
        /// Seats held at that moment.
        active: usize,
    },
    /// The caller asked for more seats at once than the compartment has:
    /// `weight` above `max_concurrent`, when it asked or because the limit
    /// shrank below it while it waited. It could never get them, so it is
    /// refused rather than left to wait. A limit of 0 is a pause, not a
    /// refusal: callers wait for it to rise. Counted in
    /// [`State::rejected`](crate::State::rejected).
    WeightAboveLimit {
        /// The compartment.
        name: Name,
        /// The seats asked for.
        weight: usize,
        /// The limit that refused them.
        max_concurrent: usize,
    },
    /// The caller asked for zero seats, which would admit it without
    /// taking part in the count; ask for at least one. Not counted as a
    /// rejection.
    ZeroWeight {
        /// The compartment.
        name: Name,
    },
    /// A partition of a partitioned compartment had no seat for the
    /// caller, who had no wait budget (or, with waiters ahead of it, could
    /// not pass them): the partition holds its whole share and could
    /// borrow no more, or the free seats are kept for a waiter that ranks
    /// higher. Counted in the partition's `rejected`.
    PartitionFull {
        /// The compartment.
        name: Name,
        /// The partition.
        partition: Name,
        /// Seats the partition held at that moment.
        active: usize,
        /// Its guaranteed share at that moment.
        share: usize,
        /// The most it may hold, borrowing included.
        may_hold: usize,
    },
    /// A `partition::PartitionId` made by another
    /// partitioned compartment was used with this one. Look ids up with
    /// `id(name)` on the compartment they are used with.
    ForeignPartition {
        /// The compartment the id was used with.
        name: Name,
    },
}

impl Error {
    /// The compartment that turned the caller away.
    pub fn name(&self) -> &Name {
        match self {
            Error::Full { name, .. }
            | Error::QueueFull { name, .. }
            | Error::Timeout { name, .. }
            | Error::Closed { name }
            | Error::FullOnEventLoop { name, .. }
            | Error::WeightAboveLimit { name, .. }
            | Error::ZeroWeight { name }
            | Error::PartitionFull { name, .. }
            | Error::ForeignPartition { name } => name,
        }
    }

    /// Whether retrying later may succeed: true for every variant but
    /// [`Error::Closed`] and [`Error::ZeroWeight`]. (A weight above the
    /// limit may fit once the limit is raised.)
    pub const fn is_transient(&self) -> bool {
        !matches!(
            self,
            Error::Closed { .. } | Error::ZeroWeight { .. } | Error::ForeignPartition { .. }
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Full {
                name,
                max_concurrent: 0,
                ..
            } => write!(
                f,
                "bulkhead `{name}` is paused (max_concurrent = 0) and admits nobody; \
                 retry later, or raise max_concurrent to resume"
            ),
            Error::Full {
                name,
                max_concurrent,
                active,
            } if active < max_concurrent => write!(
                f,
                "bulkhead `{name}` is full for this caller: {active} of {max_concurrent} seats \
                 taken, and the free ones are kept for callers already waiting (or are too \
                 few for the seats asked); retry later, give callers a wait budget, or raise \
                 max_concurrent"
            ),
            Error::Full {
                name,
                max_concurrent,
                active,
            } => write!(
                f,
                "bulkhead `{name}` is full: {active} of {max_concurrent} seats taken; \
                 retry later, give callers a wait budget, or raise max_concurrent"
            ),
            Error::QueueFull { name, max_waiting } => write!(
                f,
                "bulkhead `{name}` turned the caller away: its queue is full \
                 (max_waiting = {max_waiting}; in newest-first order the oldest waiter is the \
                 one turned away); shed load upstream or raise max_waiting"
            ),
            Error::Timeout { name, budget } => write!(
                f,
                "bulkhead `{name}`: no seat became free within the wait budget of {budget:?}; \
                 the dependency is saturated, so shed load, raise max_concurrent (for a \
                 partition, its share or borrowing limit), or lengthen the budget"
            ),
            Error::Closed { name } => write!(
                f,
                "bulkhead `{name}` is closed and admits no new callers; \
                 build a new compartment to resume"
            ),
            Error::FullOnEventLoop {
                name,
                max_concurrent,
                active,
            } => write!(
                f,
                "bulkhead `{name}` is full: {active} of {max_concurrent} seats taken, and this \
                 blocking acquire did not wait: a blocking wait on a thread that drives an \
                 event loop (tokio, async-std) could stall the tasks that would free a seat, \
                 so its wait budget was not used; use the async acquire (acquire().await, \
                 or a timed one) from async code, or call from a thread that may block \
                 (spawn_blocking)"
            ),
            Error::WeightAboveLimit {
                name,
                weight,
                max_concurrent,
            } => {
                let seats = if *max_concurrent == 1 {
                    "seat"
                } else {
                    "seats"
                };
                write!(
                    f,
                    "bulkhead `{name}` can hold at most {max_concurrent} {seats}, fewer than \
                     the {weight} asked for at once, so the caller can never be admitted; ask \
                     for at most {max_concurrent} {seats}, or raise max_concurrent (for a \
                     partition, its share or borrowing limit)"
                )
            }
            Error::ZeroWeight { name } => write!(
                f,
                "bulkhead `{name}`: a seat of weight 0 was asked for; a caller takes at least \
                 one seat, so ask for 1 or more"
            ),
            Error::PartitionFull {
                name,
                partition,
                may_hold: 0,
                ..
            } => write!(
                f,
                "partition `{partition}` of bulkhead `{name}` may hold no seat now (the \
                 compartment is paused, or its limit leaves this partition nothing); retry \
                 later, or raise max_concurrent"
            ),
            Error::PartitionFull {
                name,
                partition,
                active,
                share,
                ..
            } if active < share => write!(
                f,
                "partition `{partition}` of bulkhead `{name}` holds {active} of its share of \
                 {share} seats, and the rest are lent to other partitions (they come back as \
                 those calls end, before any borrower gets a seat) or kept for a waiter of \
                 this partition; give callers a wait budget, or reserve part of the share \
                 (lendable) so that it is never lent"
            ),
            Error::PartitionFull {
                name,
                partition,
                active,
                share,
                may_hold,
            } if active < may_hold => write!(
                f,
                "partition `{partition}` of bulkhead `{name}` holds {active} seats, beyond its \
                 share of {share}, and no idle seat is free for it to borrow now (or the free \
                 ones are kept for a waiter that ranks higher); retry later, give callers a \
                 wait budget, or raise its share"
            ),
            Error::PartitionFull {
                name,
                partition,
                active,
                may_hold,
                ..
            } => write!(
                f,
                "partition `{partition}` of bulkhead `{name}` holds {active} seats, all it may \
                 hold ({may_hold}: its share and borrowing limit); retry later, give callers a \
                 wait budget, or raise its share or borrowing limit"
            ),
            Error::ForeignPartition { name } => write!(
                f,
                "bulkhead `{name}`: the partition id was made by another partitioned \
                 compartment; look it up with `id(name)` on `{name}` itself"
            ),
        }
    }
}

impl core::error::Error for Error {}

/// With the `std` feature (on in bulkhead-std): a rejection as an
/// [`std::io::Error`], for I/O-shaped code (`?` in a function returning
/// `io::Result`), with the [`ErrorKind`](std::io::ErrorKind) that fits:
///
/// | variant | kind |
/// |---|---|
/// | [`Error::Full`], [`Error::PartitionFull`] | `WouldBlock`: no seat, and the caller chose not to wait |
/// | [`Error::FullOnEventLoop`] | `WouldBlock`: no seat, and the caller could not wait |
/// | [`Error::QueueFull`] | `ResourceBusy`: too many callers already wait |
/// | [`Error::Timeout`] | `TimedOut` |
/// | [`Error::Closed`] | `NotConnected`: the compartment admits nobody any more |
/// | [`Error::WeightAboveLimit`], [`Error::ZeroWeight`], [`Error::ForeignPartition`] | `InvalidInput`: no count of seats could admit the request |
///
/// The `Error` stays inside: `io_error.get_ref()` downcasts back to it, and
/// the message is the `Error`'s.
///
/// ```
/// # #[cfg(feature = "std")] {
/// use bulkhead_core::Error;
/// use std::io::ErrorKind;
///
/// let io: std::io::Error = Error::Full { name: "db".into(), max_concurrent: 2, active: 2 }.into();
/// assert_eq!(io.kind(), ErrorKind::WouldBlock);
/// assert!(io.get_ref().unwrap().downcast_ref::<Error>().is_some());
/// # }
/// ```
#[cfg(feature = "std")]
#[allow(clippy::std_instead_of_core)]
impl From<Error> for std::io::Error {
    fn from(error: Error) -> Self {
        use std::io::ErrorKind;
        let kind = match error {
            Error::Full { .. } | Error::FullOnEventLoop { .. } | Error::PartitionFull { .. } => {
                ErrorKind::WouldBlock
            }
            Error::QueueFull { .. } => ErrorKind::ResourceBusy,
            Error::Timeout { .. } => ErrorKind::TimedOut,
            Error::Closed { .. } => ErrorKind::NotConnected,
            Error::WeightAboveLimit { .. }
            | Error::ZeroWeight { .. }
            | Error::ForeignPartition { .. } => ErrorKind::InvalidInput,
        };
        std::io::Error::new(kind, error)
    }
}

/// Why a compartment's configuration was refused.
///
/// ```
/// # use bulkhead_core::{Config, ConfigError};
/// let err = Config::new("cache", 0).validate().unwrap_err();
/// assert_eq!(err, ConfigError::ZeroCapacity { name: "cache".into() });
/// assert!(err.to_string().contains("max_concurrent = 0"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// A compartment was built with `max_concurrent = 0`, which would admit
    /// nobody. To pause a live compartment on purpose, use
    /// `set_max_concurrent(0)`.
    ZeroCapacity {
        /// The compartment.
        name: Name,
    },
    /// `max_concurrent` is beyond what the seat word can count.
    CapacityOverflow {
        /// The compartment.
        name: Name,
        /// The value asked for.
        requested: usize,
        /// The largest accepted value, [`MAX_CONCURRENT_LIMIT`](crate::MAX_CONCURRENT_LIMIT).
        limit: usize,
    },
    /// `max_waiting` is beyond what the compartment can count.
    QueueLimitOverflow {
        /// The compartment.
        name: Name,
        /// The value asked for.
        requested: usize,
        /// The largest accepted value, [`MAX_WAITING_LIMIT`](crate::MAX_WAITING_LIMIT).
        limit: usize,
    },
    /// The name is longer than a compartment keeps (it stores the length
    /// in 31 bits). The error leaves the name out: it would be gigabytes.
    NameTooLong {
        /// The name's length in bytes.
        length: usize,
        /// The longest accepted name, [`MAX_NAME_LEN`](crate::MAX_NAME_LEN)
        /// bytes.
        limit: usize,
    },
    /// `QueueOrder::Lifo` was asked for, but bulkhead-core was built
    /// without its `lifo` feature (left out to save flash in firmware).
    LifoUnavailable {
        /// The compartment.
        name: Name,
    },
    /// [`Admission::Barging`](crate::Admission::Barging) or
    /// [`Admission::BoundedBarging`](crate::Admission::BoundedBarging) was
    /// asked for, but bulkhead-core was built without its `barging` feature
    /// (left out to save flash in firmware).
    BargingUnavailable {
        /// The compartment.
        name: Name,
        /// The admission asked for.
        admission: crate::Admission,
    },
    /// A queue limit (`max_waiting`) was asked for, but bulkhead-core was
    /// built without its `queue-limits` feature (left out to save flash in
    /// firmware).
    QueueLimitUnavailable {
        /// The compartment.
        name: Name,
    },
    /// A partitioned compartment was given no partitions.
    NoPartitions {
        /// The compartment.
        name: Name,
    },
    /// More partitions than a compartment holds.
    TooManyPartitions {
        /// The compartment.
        name: Name,
        /// How many were given.
        count: usize,
        /// The most accepted, `partition::MAX_PARTITIONS`.
        limit: usize,
    },
    /// Two partitions share a name.
    DuplicatePartition {
        /// The compartment.
        name: Name,
        /// The name given twice.
        partition: Name,
    },
    /// A percentage above 100.
    PercentAbove100 {
        /// The compartment.
        name: Name,
        /// The partition whose setting it is.
        partition: Name,
        /// The percentage given.
        percent: u8,
    },
    /// The shares given as percentages add up to more than 100.
    SharePercentsAbove100 {
        /// The compartment.
        name: Name,
        /// Their sum.
        percent: usize,
    },
    /// The shares add up to more seats than the compartment's limit, so
    /// not every share could be guaranteed.
    SharesExceedLimit {
        /// The compartment.
        name: Name,
        /// The seats the shares add up to at that limit.
        shares: usize,
        /// The limit.
        max_concurrent: usize,
    },
    /// A partition would lend more seats than its share.
    LendableAboveShare {
        /// The compartment.
        name: Name,
        /// The partition.
        partition: Name,
        /// The lendable seats given.
        lendable: usize,
        /// Its share.
        share: usize,
    },
    /// A partition has a borrowing limit, but nothing could ever be
    /// borrowed: every other partition lends nothing and the shares claim
    /// every seat.
    BorrowWithoutLender {
        /// The compartment.
        name: Name,
        /// The partition with the borrowing limit.
        partition: Name,
    },
    /// A partition could never hold a seat: it has no share and may not
    /// borrow, or the other partitions reserve every seat.
    EmptyPartition {
        /// The compartment.
        name: Name,
        /// The partition.
        partition: Name,
    },
    /// A live reconfiguration changed the partitions' names or number;
    /// only their settings can change while the compartment runs.
    PartitionsChanged {
        /// The compartment.
        name: Name,
    },
}

impl ConfigError {
    /// The same error for the compartment `name` (settings checked under
    /// another name).
    pub(crate) fn renamed(mut self, new: Name) -> Self {
        match &mut self {
            ConfigError::ZeroCapacity { name }
            | ConfigError::CapacityOverflow { name, .. }
            | ConfigError::QueueLimitOverflow { name, .. }
            | ConfigError::LifoUnavailable { name }
            | ConfigError::BargingUnavailable { name, .. }
            | ConfigError::QueueLimitUnavailable { name }
            | ConfigError::NoPartitions { name }
            | ConfigError::TooManyPartitions { name, .. }
            | ConfigError::DuplicatePartition { name, .. }
            | ConfigError::PercentAbove100 { name, .. }
            | ConfigError::SharePercentsAbove100 { name, .. }
            | ConfigError::SharesExceedLimit { name, .. }
            | ConfigError::LendableAboveShare { name, .. }
            | ConfigError::BorrowWithoutLender { name, .. }
            | ConfigError::EmptyPartition { name, .. }
            | ConfigError::PartitionsChanged { name } => *name = new,
            ConfigError::NameTooLong { .. } => {}
        }
        self
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::ZeroCapacity { name } => write!(
                f,
                "bulkhead `{name}`: max_concurrent = 0 would admit nobody; \
                 give it at least 1 seat (to pause a live compartment, call set_max_concurrent(0))"
            ),
            ConfigError::CapacityOverflow {
                name,
                requested,
                limit,
            } => write!(
                f,
                "bulkhead `{name}`: max_concurrent = {requested} is more than this target can count \
                 (at most {limit}); choose a value of at most {limit}"
            ),
            ConfigError::QueueLimitOverflow {
                name,
                requested,
                limit,
            } => write!(
                f,
                "bulkhead `{name}`: max_waiting = {requested} is more than a compartment can count \
                 (at most {limit}); choose a value of at most {limit}, or no queue limit (None)"
            ),
            ConfigError::NameTooLong { length, limit } => write!(
                f,
                "bulkhead name of {length} bytes is longer than a compartment keeps \
                 (at most {limit} bytes); choose a shorter name"
            ),
            ConfigError::LifoUnavailable { name } => write!(
                f,
                "bulkhead `{name}`: queue_order = lifo needs bulkhead-core's `lifo` feature, \
                 which this build leaves out; enable it (features = [\"lifo\"] on bulkhead-core in \
                 Cargo.toml), or use queue_order = fifo"
            ),
            ConfigError::BargingUnavailable { name, admission } => write!(
                f,
                "bulkhead `{name}`: admission = {} needs bulkhead-core's `barging` feature, \
                 which this build leaves out; enable it (features = [\"barging\"] on bulkhead-core \
                 in Cargo.toml), or use admission = fifo",
                match admission {
                    crate::Admission::BoundedBarging => "bounded_barging",
                    _ => "barging",
                }
            ),
            ConfigError::QueueLimitUnavailable { name } => write!(
                f,
                "bulkhead `{name}`: max_waiting needs bulkhead-core's `queue-limits` feature, \
                 which this build leaves out; enable it (features = [\"queue-limits\"] on \
                 bulkhead-core in Cargo.toml), or set no queue limit (None)"
            ),
            ConfigError::NoPartitions { name } => write!(
                f,
                "bulkhead `{name}`: a partitioned compartment needs at least one partition; \
                 give it one, or build a plain compartment"
            ),
            ConfigError::TooManyPartitions { name, count, limit } => write!(
                f,
                "bulkhead `{name}`: {count} partitions are more than a compartment holds \
                 (at most {limit}); merge some, or split the dependency into compartments"
            ),
            ConfigError::DuplicatePartition { name, partition } => write!(
                f,
                "bulkhead `{name}`: two partitions are called `{partition}`; give each its own name"
            ),
            ConfigError::PercentAbove100 {
                name,
                partition,
                percent,
            } => write!(
                f,
                "bulkhead `{name}`, partition `{partition}`: {percent}% is above 100%; \
                 give a percentage from 0 to 100"
            ),
            ConfigError::SharePercentsAbove100 { name, percent } => write!(
                f,
                "bulkhead `{name}`: the partitions' shares add up to {percent}%, above 100%; \
                 lower them so that every share can be guaranteed"
            ),
            ConfigError::SharesExceedLimit {
                name,
                shares,
                max_concurrent,
            } => write!(
                f,
                "bulkhead `{name}`: the partitions' shares add up to {shares} seats, more than \
                 max_concurrent = {max_concurrent}; lower the shares, raise max_concurrent, or \
                 give shares as percentages so that they follow the limit"
            ),
            ConfigError::LendableAboveShare {
                name,
                partition,
                lendable,
                share,
            } => write!(
                f,
                "bulkhead `{name}`, partition `{partition}`: lendable = {lendable} is more than \
                 its share of {share} seats; a partition lends only its own idle share, so \
                 give lendable at most {share}"
            ),
            ConfigError::BorrowWithoutLender { name, partition } => write!(
                f,
                "bulkhead `{name}`, partition `{partition}`: it has a borrowing limit, but no \
                 other partition lends any seats and the shares claim every seat, so it could \
                 never borrow; let another partition lend (lendable), leave seats outside the \
                 shares, or drop the borrowing limit"
            ),
            ConfigError::EmptyPartition { name, partition } => write!(
                f,
                "bulkhead `{name}`, partition `{partition}`: it could never hold a seat (its \
                 share is 0 and it may not borrow, or the other partitions reserve every \
                 seat); give it a share, let it borrow, or make the others' shares lendable"
            ),
            ConfigError::PartitionsChanged { name } => write!(
                f,
                "bulkhead `{name}`: a live reconfiguration must keep the same partitions, in \
                 the same order (only their settings may change); build a new compartment to \
                 change the partitions"
            ),
        }
    }
}

impl core::error::Error for ConfigError {}

#[cfg(feature = "weights")]
/// Why [`Seat::split`](crate::Seat::split) (or an owned seat's) refused:
/// each part must keep at least one seat, so the weight split off must be
/// at least 1 and less than the seat's weight.
///
/// ```
/// # use bulkhead_core::{Bulkhead, CsLock, SplitError};
/// let b: Bulkhead<CsLock> = Bulkhead::new("db", 2).unwrap();
/// let mut seat = b.try_acquire_many(2).unwrap();
/// let err = seat.split(2).unwrap_err();
/// assert_eq!(err, SplitError { held: 2, requested: 2 });
/// assert!(err.to_string().contains("between 1 and 1"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitError {
    /// The weight of the seat asked to split.
    pub held: usize,
    /// The weight asked to split off.
    pub requested: usize,
}

#[cfg(feature = "weights")]
impl fmt::Display for SplitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { held, requested } = *self;
        if held < 2 {
            write!(
                f,
                "cannot split {requested} seats off a seat of weight {held}: a seat of weight 1 \
                 cannot be split; take a heavier seat to split it"
            )
        } else {
            write!(
                f,
                "cannot split {requested} seats off a seat of weight {held}: each part keeps at \
                 least one seat, so split off between 1 and {}",
                held - 1
            )
        }
    }
}

#[cfg(feature = "weights")]
impl core::error::Error for SplitError {}

#[cfg(feature = "weights")]
/// Why a seat's `merge` refused: the two seats belong to different
/// compartments. It carries the seat that was to be merged, still held;
/// take it back with [`into_inner`](Self::into_inner).
pub struct MergeError<S> {
    into: Name,
    from: Name,
    seat: S,
}

#[cfg(feature = "weights")]
impl<S> MergeError<S> {
    pub(crate) fn new(into: Name, from: Name, seat: S) -> Self {
        Self { into, from, seat }
    }

    /// The seat that was not merged, unchanged.
    pub fn into_inner(self) -> S {
        self.seat
    }

    /// The compartment of the seat that was to receive the merge.
    pub fn compartment(&self) -> &Name {
        &self.into
    }

    /// The compartment of the seat that was to be merged (and comes back
    /// with [`into_inner`](Self::into_inner)).
    pub fn other_compartment(&self) -> &Name {
        &self.from
    }
}

#[cfg(feature = "weights")]
impl<S> fmt::Debug for MergeError<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MergeError")
            .field("into", &self.into)
            .field("from", &self.from)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "weights")]
impl<S> fmt::Display for MergeError<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot merge a seat of bulkhead `{}` into a seat of bulkhead `{}`: seats merge \
             only within one compartment; keep the two seats apart",
            self.from, self.into
        )
    }
}

#[cfg(feature = "weights")]
impl<S> core::error::Error for MergeError<S> {}
