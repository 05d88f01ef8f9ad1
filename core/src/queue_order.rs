//! [`QueueOrder`]: which waiter a freed seat goes to.

/// The order in which a compartment serves its waiters.
///
/// Every waiter joins one line; the order decides which end of it a freed
/// seat goes to (in FIFO admission), or which waiter is woken to compete
/// for it (in the barging modes), and which waiter a full queue turns
/// away.
///
/// | | a freed seat goes to | a full queue ([`max_waiting`](crate::Config::max_waiting)) turns away |
/// |---|---|---|
/// | [`Fifo`](Self::Fifo) | the oldest waiter | the newcomer, with [`Error::QueueFull`](crate::Error::QueueFull) |
/// | [`Lifo`](Self::Lifo) | the newest waiter | the oldest waiter, with `QueueFull`, and queues the newcomer (drop-oldest) |
///
/// Oldest first is fair, and what every peer does. Newest first suits a
/// latency-bound service under overload: the oldest waiters are the ones
/// whose callers are about to give up anyway, so serving the newest first
/// serves more calls within their budget, and drop-oldest keeps the queue
/// full of the freshest requests. The price is that an old waiter may
/// wait its whole budget while newer ones pass it (bound its wait).
///
/// The order is live: [`Bulkhead::set_queue_order`](crate::Bulkhead::set_queue_order)
/// changes it, and waiters already in line keep their places.
///
/// ```
/// # use bulkhead_core::{Bulkhead, Config, CsLock, QueueOrder};
/// let api: Bulkhead<CsLock> =
///     Bulkhead::from_config(Config::new("api", 8).queue_order(QueueOrder::Lifo))?;
/// assert_eq!(api.queue_order(), QueueOrder::Lifo);
/// # Ok::<(), bulkhead_core::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum QueueOrder {
    /// Oldest first (the default). A waiter is never passed by one that
    /// came later, whatever their weights.
    #[default]
    Fifo,
    /// Newest first, with drop-oldest when the queue is full.
    Lifo,
}
