//! A partition's settings ([`PartitionConfig`], [`Amount`]) and their
//! resolution against the compartment's limit ([`Resolved`]).

use crate::error::ConfigError;
use crate::max_wait::MaxWait;
use crate::name::Name;
use crate::queue_order::QueueOrder;
use crate::word::MAX_CONCURRENT_LIMIT;

/// The most partitions one compartment holds. A partitioned compartment
/// keeps them inline (no allocation), so this bounds its size.
pub const MAX_PARTITIONS: usize = 8;

/// A number of seats, given as a count or as a percentage.
///
/// A percentage of the compartment's limit (for a share or a borrowing
/// limit) follows the limit when it moves, live or through an adaptive
/// limit; a percentage in [`PartitionConfig::lendable`] is of the
/// partition's own share. Percentages round down.
///
/// ```
/// use bulkhead_core::partition::Amount;
///
/// assert_eq!(Amount::Percent(75).of(32), 24);
/// assert_eq!(Amount::Seats(8).of(32), 8);
/// assert_eq!(Amount::Percent(10).of(5), 0); // rounds down
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Amount {
    /// This many seats.
    Seats(usize),
    /// This percentage (0 to 100) of a whole.
    Percent(u8),
}

impl Amount {
    /// The seats this amount comes to out of `whole`. Saturates: a count
    /// is taken as it is, a percentage is `whole * p / 100`, rounded down
    /// (a percentage above 100 counts as 100; a configuration with one is
    /// refused when built).
    pub const fn of(self, whole: usize) -> usize {
        match self {
            Amount::Seats(n) => n,
            Amount::Percent(p) => {
                let p = if p > 100 { 100 } else { p as usize };
                // `whole / 100 * p + whole % 100 * p / 100` is
                // `whole * p / 100` without overflowing.
                whole / 100 * p + whole % 100 * p / 100
            }
        }
    }
}

/// One partition of a [`Partitioned`](super::Partitioned) compartment: its
/// name, its guaranteed share, how much of that it lends, how much it may
/// borrow, its priority and its own line.
///
/// ```
/// use bulkhead_core::partition::{Amount, PartitionConfig};
///
/// // Guaranteed 24 seats, all of them lendable while idle, first in line
/// // for freed seats.
/// let live = PartitionConfig::new("live", Amount::Seats(24)).priority(1);
/// // Guaranteed 8, may hold up to 16 more when others lend them.
/// let batch = PartitionConfig::new("batch", Amount::Seats(8)).borrow(Amount::Seats(16));
/// # let _ = (live, batch);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionConfig {
    /// The partition's name, unique in its compartment, at most
    /// [`MAX_NAME_LEN`](crate::MAX_NAME_LEN) bytes.
    pub name: Name,
    /// Its guaranteed share: a count of seats, or a percentage of the
    /// compartment's limit.
    pub share: Amount,
    /// How much of its idle share others may use (a count, or a percentage
    /// of the share); `None` for all of it. The rest is reserved.
    pub lendable: Option<Amount>,
    /// How many seats it may hold beyond its share (a count, or a
    /// percentage of the limit); `None` for no limit but the compartment's.
    pub borrow: Option<Amount>,
    /// Its priority: higher is served first among partitions equally far
    /// below (or above) their shares.
    pub priority: u8,
    /// The most callers that may wait in its line; `None` for no limit.
    pub max_waiting: Option<usize>,
    /// The order of its line.
    pub queue_order: QueueOrder,
    /// A wait budget of its own, for adapters that take the budget from
    /// the settings; `None` to use theirs.
    pub max_wait: Option<MaxWait>,
}

impl PartitionConfig {
    /// A partition called `name`, guaranteed `share` seats. By default it
    /// lends all of its idle share, may borrow up to the whole compartment,
    /// has priority 0, an unbounded FIFO line, and no wait budget of its
    /// own (the caller's applies).
    pub const fn new(name: &'static str, share: Amount) -> Self {
        Self::named(Name::from_static(name), share)
    }

    /// As [`new`](Self::new), for a name kept as a [`Name`] (made at run
    /// time with the `alloc` feature).
    pub const fn named(name: Name, share: Amount) -> Self {
        Self {
            name,
            share,
            lendable: None,
            borrow: None,
            priority: 0,
            max_waiting: None,
            queue_order: QueueOrder::Fifo,
            max_wait: None,
        }
    }

    /// Replaces its guaranteed share.
    pub const fn share(mut self, share: Amount) -> Self {
        self.share = share;
        self
    }

    /// How much of its share others may use while it is idle: a count of
    /// seats, or a percentage *of the share*. The rest is reserved: kept
    /// free for this partition even when it is idle. Default: all of it.
    pub const fn lendable(mut self, lendable: Amount) -> Self {
        self.lendable = Some(lendable);
        self
    }

    /// How many seats it may hold beyond its share, borrowed from what
    /// others lend and from seats no share claims: a count, or a
    /// percentage of the compartment's limit. Default: no limit but the
    /// compartment's. `Amount::Seats(0)` forbids borrowing.
    pub const fn borrow(mut self, borrow: Amount) -> Self {
        self.borrow = Some(borrow);
        self
    }

    /// Its priority: when a seat frees up, waiters of partitions below
    /// their share are served first, then higher priorities. Equal ranks
    /// take turns. Default 0.
    pub const fn priority(mut self, priority: u8) -> Self {
        self.priority = priority;
        self
    }

    /// The most callers that may wait in its line; a caller beyond it is
    /// turned away with `Error::QueueFull` (in newest-first order, the
    /// oldest waiter is). Default: no limit.
    pub const fn max_waiting(mut self, max_waiting: usize) -> Self {
        self.max_waiting = Some(max_waiting);
        self
    }

    /// The order of its line. Default [`QueueOrder::Fifo`].
    pub const fn queue_order(mut self, queue_order: QueueOrder) -> Self {
        self.queue_order = queue_order;
        self
    }

    /// A wait budget of its own, for adapters that take the budget from the
    /// settings (the registry, the tower layer). Core's own waits take the
    /// budget as an argument and do not read it.
    pub const fn max_wait(mut self, max_wait: MaxWait) -> Self {
        self.max_wait = Some(max_wait);
        self
    }
}

/// A partition's settings resolved against a limit: what the rules use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Resolved {
    /// The guaranteed share.
    pub(crate) share: usize,
    /// The part of the share never lent.
    pub(crate) reserved: usize,
    /// The most it may hold: its share plus its borrowing limit, and no
    /// more than the limit less every other partition's reserve.
    pub(crate) may_hold: usize,
}

/// Checks `partitions` for a compartment called `name` with `limit` seats
/// and resolves each against it (written into `out`, in order). `strict`
/// (when settings are given, not when the limit moves) also refuses a
/// partition that could hold nothing at this limit; after a resize that is
/// a pause of that partition until the limit grows.
pub(crate) fn resolve(
    name: &Name,
    limit: usize,
    partitions: &[&PartitionConfig],
    out: &mut [Resolved],
    strict: bool,
) -> Result<(), ConfigError> {
    let compartment = || name.clone();
    let mut seat_shares = 0usize;
    let mut percent_shares = 0usize;
    for p in partitions {
        for amount in [Some(p.share), p.lendable, p.borrow].into_iter().flatten() {
            if let Amount::Percent(pc) = amount
                && pc > 100
            {
                return Err(ConfigError::PercentAbove100 {
                    name: compartment(),
                    partition: p.name.clone(),
                    percent: pc,
                });
            }
        }
        match p.share {
            Amount::Seats(n) => seat_shares = seat_shares.saturating_add(n),
            Amount::Percent(pc) => percent_shares += pc as usize,
        }
        if let (Amount::Seats(share), Some(Amount::Seats(lendable))) = (p.share, p.lendable)
            && lendable > share
        {
            return Err(ConfigError::LendableAboveShare {
                name: compartment(),
                partition: p.name.clone(),
                lendable,
                share,
            });
        }
        if p.share.of(MAX_CONCURRENT_LIMIT) == 0
            && matches!(p.borrow, Some(b) if b.of(MAX_CONCURRENT_LIMIT) == 0)
        {
            return Err(ConfigError::EmptyPartition {
                name: compartment(),
                partition: p.name.clone(),
            });
        }
        if let Some(Amount::Seats(n)) = p.max_waiting.map(Amount::Seats)
            && n > crate::config::MAX_WAITING_LIMIT
        {
            return Err(ConfigError::QueueLimitOverflow {
                name: compartment(),
                requested: n,
                limit: crate::config::MAX_WAITING_LIMIT,
            });
        }
        if !cfg!(feature = "lifo") && p.queue_order == QueueOrder::Lifo {
            return Err(ConfigError::LifoUnavailable {
                name: compartment(),
            });
        }
    }
    if percent_shares > 100 {
        return Err(ConfigError::SharePercentsAbove100 {
            name: compartment(),
            percent: percent_shares,
        });
    }
    // The percentages' seats, rounded down each, as `Amount::of` does.
    let percent_seats: usize = partitions
        .iter()
        .filter(|p| matches!(p.share, Amount::Percent(_)))
        .map(|p| p.share.of(limit))
        .sum();
    if seat_shares.saturating_add(percent_seats) > limit {
        return Err(ConfigError::SharesExceedLimit {
            name: compartment(),
            shares: seat_shares.saturating_add(percent_seats),
            max_concurrent: limit,
        });
    }
    let mut reserved_total = 0usize;
    for (p, r) in partitions.iter().zip(out.iter_mut()) {
        let share = p.share.of(limit);
        let lendable = p.lendable.map_or(share, |l| l.of(share).min(share));
        r.share = share;
        r.reserved = share - lendable;
        reserved_total += r.reserved;
    }
    // Seats nobody's share claims, and what others lend: whether a
    // borrowing limit has anything to borrow from.
    let unclaimed = limit - (seat_shares + percent_seats);
    for (i, p) in partitions.iter().enumerate() {
        let borrow = p.borrow.map_or(limit, |b| b.of(limit));
        let others_lend: usize = out
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, r)| r.share - r.reserved)
            .sum();
        if p.borrow.is_some() && borrow > 0 && others_lend == 0 && unclaimed == 0 {
            return Err(ConfigError::BorrowWithoutLender {
                name: compartment(),
                partition: p.name.clone(),
            });
        }
        let r = &mut out[i];
        let others_reserved = reserved_total - r.reserved;
        r.may_hold = r
            .share
            .saturating_add(borrow)
            .min(limit - others_reserved)
            .max(r.share);
        if strict && r.may_hold == 0 && limit > 0 {
            // No share, and nothing to borrow: the others reserve every
            // seat (or it may not borrow).
            return Err(ConfigError::EmptyPartition {
                name: compartment(),
                partition: p.name.clone(),
            });
        }
    }
    Ok(())
}
