//! [`QueueOrder`]: which waiter a freed seat goes to.

/// The order in which a compartment serves its waiters.
///
/// Every waiter joins one line, and a freed seat goes to the front of it
/// (in FIFO admission), or the waiter at its front is woken to compete for
/// it (in the barging modes). The order decides where a newcomer joins:
/// at the back (oldest first) or at the front (newest first), and so which
/// waiter a full queue turns away.
///
/// | | a freed seat goes to | a full queue ([`max_waiting`](crate::Config::max_waiting)) turns away |
/// |---|---|---|
/// | [`Fifo`](Self::Fifo) | the oldest waiter | the newcomer, with [`Error::QueueFull`](crate::Error::QueueFull) |
/// | [`Lifo`](Self::Lifo) | the newest waiter | the waiter at the back of the line, with `QueueFull`, and queues the newcomer (drop-oldest) |
///
/// Oldest first is fair, and what every peer does. Newest first suits a
/// latency-bound service under overload: the oldest waiters are the ones
/// whose callers are about to give up anyway, so serving the newest first
/// serves more calls within their budget, and drop-oldest keeps the queue
/// full of the freshest requests. The price is that an old waiter may
/// wait its whole budget while newer ones pass it (bound its wait).
///
/// The back of a newest-first line is its oldest waiter *not yet woken*:
/// in the barging modes a waiter woken to compete for a free seat has moved
/// to the front part of the line, so drop-oldest passes over it (it is
/// about to take a seat or go back to waiting).
///
/// In FIFO admission a newest-first newcomer that fits in seats the line
/// leaves free (kept for a heavier waiter at the front) takes them at once
/// when it *waits* (`acquire`): it would be first in line anyway.
/// `try_acquire` still refuses while anyone waits, as in oldest-first
/// order: it decides from the seat word alone, in one CAS, and the order is
/// not part of that word.
///
/// The order is live (feature `lifo`): `Bulkhead::set_queue_order`
/// changes where newcomers join, and waiters already in line keep their
/// places. So right after a switch from oldest first, the back of the line
/// holds the newest of the earlier waiters, and that is the one a full
/// queue drops, until the earlier waiters have left.
///
/// ```
/// # use bulkhead_core::{Bulkhead, Config, ConfigError, CsLock, QueueOrder};
/// let config = Config::new("api", 8).queue_order(QueueOrder::Lifo);
/// # #[cfg(feature = "lifo")] {
/// let api: Bulkhead<CsLock> = Bulkhead::from_config(config)?;
/// assert_eq!(api.queue_order(), QueueOrder::Lifo);
/// # }
/// // Without the `lifo` feature the order is refused by name:
/// # #[cfg(not(feature = "lifo"))]
/// assert_eq!(config.validate(), Err(ConfigError::LifoUnavailable { name: "api".into() }));
/// # Ok::<(), ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum QueueOrder {
    /// Oldest first (the default). In FIFO admission a waiter is never
    /// passed by one that came later, whatever their weights.
    #[default]
    Fifo,
    /// Newest first, with drop-oldest when the queue is full.
    Lifo,
}
