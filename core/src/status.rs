//! The status of a waiter's node: the whole state machine of a waiter, in
//! one place.
//!
//! | status \ event | link | notify | lose the race | grant | close | leave | seat at once | drop | refuse |
//! |---|---|---|---|---|---|---|---|---|---|
//! | `Idle` | `Waiting` | – | – | – | – | – | `Granted` | – | – |
//! | `Waiting` | – | `Notified` | – | `Granted` | `Closed` | `Idle` | – | `Dropped` | `Oversized` |
//! | `Notified` | – | – | `Waiting` | `Granted` | `Closed` | `Idle` | – | `Dropped` | `Oversized` |
//! | `Granted` | – | – | – | – | – | – | – | – | – |
//! | `Closed` | – | – | – | – | – | – | – | – | – |
//! | `Dropped` | – | – | – | – | – | – | – | – | – |
//! | `Oversized` | – | – | – | – | – | – | – | – | – |
//!
//! - **link**: `enqueue` found no seat and links the node, at the back of
//!   the line (`List::push_back`, oldest first) or at its front
//!   (`List::push_newest`, newest first).
//! - **notify**: barging only; a drain wakes the oldest un-notified waiter
//!   (`List::notify_next`).
//! - **lose the race**: barging only; a notified waiter re-polls and finds
//!   no free seat (`List::requeue`), in an open compartment (a closed one
//!   gives it `Closed` instead). `BoundedBarging` counts it as a lost race
//!   (rule 9 in `engine.rs`); in a hand-off the same move is uncounted.
//! - **grant**: a FIFO drain reserves a seat for the node, or a barging
//!   waiter takes a free seat in its re-poll.
//! - **close**: a drain of a closed compartment, or a barging waiter's
//!   re-poll that finds it closed before the drain reached the node.
//! - **leave**: the owner gives up (`abandon`: drop, timeout).
//! - **seat at once**: `enqueue` found a free seat and never links the node.
//! - **drop**: newest-first order with a full queue: a newcomer's
//!   `enqueue` unlinks the oldest waiter to make room (drop-oldest); its
//!   owner resolves to `Error::QueueFull`.
//! - **refuse**: a drain finds a waiter heavier than a limit that shrank
//!   below its weight (and is not a pause, 0); its owner resolves to
//!   `Error::WeightAboveLimit`.
//!
//! Every transition happens under the compartment's lock. `Waiting` and
//! `Notified` are exactly the linked statuses. `Granted`, `Closed`,
//! `Dropped` and `Oversized` are final, and storing one is the last touch of the node by anyone but its
//! owner, which may read it without the lock and free the node at once
//! (rule 2 in `engine.rs`). Only the owner moves a node out of `Idle`, so
//! the owner may also trust `Idle` without the lock.
//!
//! Each method below is one transition; in debug builds it checks that it
//! starts from a status the table allows.

use crate::sync::{AtomicU8, Ordering};

/// Whether a waiter can be turned away while it waits: dropped from a full
/// newest-first queue (feature `lifo`) or refused as heavier than the
/// limit (feature `weights`).
pub(crate) const REFUSALS: bool = cfg!(any(feature = "lifo", feature = "weights"));

/// Where a waiter's node is in its life; see the module's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Status {
    /// Not linked; no verdict.
    Idle = 0,
    /// Linked, waiting for a seat (or, in barging mode, for a wake-up).
    Waiting = 1,
    /// Barging mode only: linked, and woken to compete for a free seat.
    Notified = 2,
    /// Not linked; a seat was reserved for this node and now belongs to it.
    Granted = 3,
    /// Not linked; the compartment was closed while the node waited.
    Closed = 4,
    /// Not linked; a newcomer took the node's place in a full newest-first
    /// queue (drop-oldest).
    Dropped = 5,
    /// Not linked; the limit shrank below the node's weight.
    Oversized = 6,
}

impl Status {
    const fn from_u8(v: u8) -> Self {
        match v {
            0 => Self::Idle,
            1 => Self::Waiting,
            2 => Self::Notified,
            3 => Self::Granted,
            // Without the features that produce them, no node is ever
            // dropped or refused: reading them as `Closed` (never stored
            // either) lets the compiler leave their handling out.
            5 if REFUSALS => Self::Dropped,
            6 if REFUSALS => Self::Oversized,
            _ => Self::Closed,
        }
    }

    /// Whether a node in this status is linked in the list.
    pub(crate) const fn is_linked(self) -> bool {
        matches!(self, Self::Waiting | Self::Notified)
    }
}

/// A node's status cell. The owner's reads are `Acquire` and a drainer's
/// stores of a final verdict (`grant`, `close`) are `Release`, so a granted
/// seat's history (the previous holder's writes, acquired by the drainer's
/// CAS) reaches the owner, and so does the drainer's last write to the node
/// before the owner frees it. Every other transition is `Relaxed`: it is
/// made under the lock, and either the owner acts on it only after taking
/// the lock itself (`Waiting`, `Notified`), or the owner made it on its own
/// thread (`seat`, `leave`, and `requeue` in its own re-poll).
#[derive(Debug)]
pub(crate) struct NodeStatus(AtomicU8);

impl NodeStatus {
    crate::sync::loom_const_fn! {
        pub(crate) fn new() -> Self {
            Self(AtomicU8::new(Status::Idle as u8))
        }
    }

    /// The status as the owner sees it, without the lock. `Acquire` pairs
    /// with the `Release` store of a verdict.
    #[inline]
    pub(crate) fn get(&self) -> Status {
        Status::from_u8(self.0.load(Ordering::Acquire))
    }

    #[inline]
    fn change(&self, from: &[Status], to: Status, order: Ordering) {
        debug_assert!(
            from.contains(&Status::from_u8(self.0.load(Ordering::Relaxed))),
            "inconsistent state: {:?} -> {to:?}",
            Status::from_u8(self.0.load(Ordering::Relaxed)),
        );
        self.0.store(to as u8, order);
    }

    /// **link**: `Idle -> Waiting`. `Relaxed`: the owner never acts on
    /// `Waiting` without taking the lock, which orders it.
    ///
    /// # Safety
    /// The lock is held, and the node is being linked.
    pub(crate) unsafe fn link(&self) {
        self.change(&[Status::Idle], Status::Waiting, Ordering::Relaxed);
    }

    /// **notify**: `Waiting -> Notified`.
    ///
    /// # Safety
    /// The lock is held, and the node is linked.
    pub(crate) unsafe fn notify(&self) {
        self.change(&[Status::Waiting], Status::Notified, Ordering::Relaxed);
    }

    /// **lose the race**: `Notified -> Waiting`.
    ///
    /// # Safety
    /// The lock is held, and the node is linked.
    pub(crate) unsafe fn requeue(&self) {
        self.change(&[Status::Notified], Status::Waiting, Ordering::Relaxed);
    }

    /// **seat at once**: `Idle -> Granted`, by `enqueue` for a node it never
    /// linked. Stored before anything can panic, so that the owner's `Drop`
    /// gives the seat back.
    ///
    /// # Safety
    /// The lock is held, and the caller owns the unlinked node.
    pub(crate) unsafe fn seat(&self) {
        self.change(&[Status::Idle], Status::Granted, Ordering::Relaxed);
    }

    /// **grant**: `Waiting | Notified -> Granted`. The last touch of the
    /// node by the caller (rule 2).
    ///
    /// # Safety
    /// The lock is held, and the node has just been unlinked.
    pub(crate) unsafe fn grant(&self) {
        self.change(
            &[Status::Waiting, Status::Notified],
            Status::Granted,
            Ordering::Release,
        );
    }

    /// **close**: `Waiting | Notified -> Closed`. The last touch of the
    /// node by the caller (rule 2).
    ///
    /// # Safety
    /// The lock is held, and the node has just been unlinked.
    pub(crate) unsafe fn close(&self) {
        self.change(
            &[Status::Waiting, Status::Notified],
            Status::Closed,
            Ordering::Release,
        );
    }

    /// **drop** or **refuse**: `Waiting | Notified -> Dropped | Oversized`.
    /// The last touch of the node by the caller (rule 2).
    ///
    /// # Safety
    /// The lock is held, and the node has just been unlinked.
    pub(crate) unsafe fn refuse(&self, to: Status) {
        debug_assert!(matches!(to, Status::Dropped | Status::Oversized));
        self.change(&[Status::Waiting, Status::Notified], to, Ordering::Release);
    }

    /// **leave**: `Waiting | Notified -> Idle`, by the owner giving up.
    ///
    /// # Safety
    /// The lock is held, the caller owns the node, and it has just been
    /// unlinked.
    pub(crate) unsafe fn leave(&self) {
        self.change(
            &[Status::Waiting, Status::Notified],
            Status::Idle,
            Ordering::Relaxed,
        );
    }
}
