//! The intrusive, allocation-free FIFO list of waiting callers.
//!
//! Each [`Node`] lives inside a pinned acquire future (or on a blocking
//! caller's stack, inside the same future). The list only stores raw
//! pointers to nodes; it never owns or frees one. Every field of a node that
//! the list touches is in an `UnsafeCell` and is read or written only while
//! the compartment's lock is held, which the `&mut List` receiver witnesses.
//!
//! The node's `status` is the one field read without the lock: its owner
//! polls it to learn the verdict. Status changes are made under the lock,
//! and the change to a final verdict ([`GRANTED`] or [`CLOSED`]) is the
//! last touch of a node by anyone but its owner, because the owner may free
//! the node the moment it sees the verdict.

use core::marker::PhantomPinned;
use core::ptr::NonNull;
use core::task::Waker;

use crate::sync::{AtomicU8, Ordering, UnsafeCell};

/// Not in the list; no verdict.
pub(crate) const IDLE: u8 = 0;
/// Linked, waiting for a seat.
pub(crate) const WAITING: u8 = 1;
/// Barging mode only: linked, and woken to compete for a free seat.
pub(crate) const NOTIFIED: u8 = 2;
/// Unlinked; a seat was reserved for this node and now belongs to it.
pub(crate) const GRANTED: u8 = 3;
/// Unlinked; the compartment was closed while the node waited.
pub(crate) const CLOSED: u8 = 4;

#[derive(Debug)]
struct Links {
    prev: Option<NonNull<Node>>,
    next: Option<NonNull<Node>>,
}

/// One waiting caller.
///
/// `!Unpin` (through `PhantomPinned`): once linked, the list holds a raw
/// pointer to it, so it must not move until it has unlinked itself in its
/// owner's `Drop`. Pinning also exempts `&mut` references to the owning
/// future from uniqueness assumptions, which is what lets the list write to
/// the node while the owner holds a `Pin<&mut _>` to it.
#[derive(Debug)]
pub(crate) struct Node {
    links: UnsafeCell<Links>,
    /// # Safety
    /// Read or written only with the lock held, while linked or by the
    /// owner before linking.
    waker: UnsafeCell<Option<Waker>>,
    status: AtomicU8,
    _pinned: PhantomPinned,
}

impl Node {
    crate::sync::loom_const_fn! {
        pub(crate) fn new() -> Self {
            Self {
                links: UnsafeCell::new(Links { prev: None, next: None }),
                waker: UnsafeCell::new(None),
                status: AtomicU8::new(IDLE),
                _pinned: PhantomPinned,
            }
        }
    }

    /// The verdict as seen by the owner, without the lock. `Acquire` pairs
    /// with the `Release` store of the verdict, so that a granted seat's
    /// previous holder's writes are visible to the owner.
    #[inline]
    pub(crate) fn status(&self) -> u8 {
        self.status.load(Ordering::Acquire)
    }
}

/// The waiter list: FIFO by link order.
#[derive(Debug)]
pub(crate) struct List {
    head: Option<NonNull<Node>>,
    tail: Option<NonNull<Node>>,
    len: usize,
}

// SAFETY: the list only holds pointers to nodes whose owners are `Send`
// futures; it is only ever accessed with the compartment's lock held.
unsafe impl Send for List {}

impl List {
    pub(crate) const fn new() -> Self {
        Self {
            head: None,
            tail: None,
            len: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.head.is_none()
    }

    /// Links `node` at the tail with `waker`, and marks it `WAITING`.
    ///
    /// # Safety
    /// `node` is pinned, valid, not linked in any list, and stays valid until
    /// it is unlinked (by [`List::remove`] or [`List::pop_front`]).
    pub(crate) unsafe fn push_back(&mut self, node: NonNull<Node>, waker: Waker) {
        // SAFETY: the caller guarantees `node` is valid; the list lock is
        // held (we have `&mut self`), so no one else touches its cells.
        let node_ref = unsafe { node.as_ref() };
        node_ref.waker.with_mut(|w| {
            // SAFETY: lock held and node not yet linked: exclusive access.
            unsafe { *w = Some(waker) }
        });
        node_ref.links.with_mut(|links| {
            // SAFETY: as above.
            unsafe {
                (*links).prev = self.tail;
                (*links).next = None;
            }
        });
        match self.tail {
            // SAFETY: `tail` is linked, hence valid (push_back's contract).
            Some(tail) => unsafe { set_next(tail, Some(node)) },
            None => self.head = Some(node),
        }
        self.tail = Some(node);
        self.len += 1;
        node_ref.status.store(WAITING, Ordering::Relaxed);
    }

    /// The oldest node, still linked.
    pub(crate) fn front(&self) -> Option<NonNull<Node>> {
        self.head
    }

    /// The node after `node`.
    ///
    /// # Safety
    /// `node` is linked in this list.
    pub(crate) unsafe fn next(&self, node: NonNull<Node>) -> Option<NonNull<Node>> {
        // SAFETY: linked nodes are valid; lock held through `&self` of a
        // list that is only reachable under the lock.
        unsafe { node.as_ref() }
            .links
            .with_mut(|l| unsafe { (*l).next })
    }

    /// Unlinks `node`, takes its waker out, and returns it.
    ///
    /// The caller must then publish a verdict with [`set_status`] as its
    /// last touch of the node.
    ///
    /// # Safety
    /// `node` is linked in this list.
    pub(crate) unsafe fn remove(&mut self, node: NonNull<Node>) -> Option<Waker> {
        // SAFETY: linked nodes are valid (push_back's contract).
        let node_ref = unsafe { node.as_ref() };
        let (prev, next) = node_ref.links.with_mut(|l| {
            // SAFETY: lock held; exclusive access to the links.
            unsafe { ((*l).prev.take(), (*l).next.take()) }
        });
        match prev {
            // SAFETY: neighbours of a linked node are linked, hence valid.
            Some(prev) => unsafe { set_next(prev, next) },
            None => {
                debug_assert!(self.head == Some(node), "inconsistent state: unlinked head");
                self.head = next;
            }
        }
        match next {
            // SAFETY: as above.
            Some(next) => unsafe { set_prev(next, prev) },
            None => {
                debug_assert!(self.tail == Some(node), "inconsistent state: unlinked tail");
                self.tail = prev;
            }
        }
        self.len -= 1;
        // SAFETY: lock held; exclusive access to the waker.
        node_ref.waker.with_mut(|w| unsafe { (*w).take() })
    }

    /// Takes a linked node's waker out, leaving the node linked (barging
    /// mode wakes a node without unlinking it; the node registers a fresh
    /// waker when it next polls).
    ///
    /// # Safety
    /// `node` is linked in this list.
    pub(crate) unsafe fn take_waker(&mut self, node: NonNull<Node>) -> Option<Waker> {
        // SAFETY: linked nodes are valid; lock held; exclusive access.
        unsafe { node.as_ref() }
            .waker
            .with_mut(|w| unsafe { (*w).take() })
    }

    /// Replaces a linked node's waker, returning the old one so that it can
    /// be dropped after unlocking (dropping a waker may run foreign code).
    /// Keeps the old waker if it would wake the same task.
    ///
    /// # Safety
    /// `node` is linked in this list.
    pub(crate) unsafe fn refresh_waker(
        &mut self,
        node: NonNull<Node>,
        waker: Waker,
    ) -> Option<Waker> {
        // SAFETY: linked nodes are valid; lock held.
        unsafe { node.as_ref() }.waker.with_mut(|w| {
            // SAFETY: lock held; exclusive access to the waker.
            let slot = unsafe { &mut *w };
            match slot {
                Some(old) if old.will_wake(&waker) => Some(waker),
                _ => slot.replace(waker),
            }
        })
    }

    /// Checks the links in both directions; for tests.
    #[cfg(test)]
    pub(crate) fn assert_valid(&self) {
        let mut count = 0;
        let mut prev = None;
        let mut cur = self.head;
        while let Some(node) = cur {
            // SAFETY: linked nodes are valid.
            let (p, n) = unsafe { node.as_ref() }
                .links
                .with_mut(|l| unsafe { ((*l).prev, (*l).next) });
            assert_eq!(p, prev, "inconsistent state: broken prev link");
            prev = cur;
            cur = n;
            count += 1;
        }
        assert_eq!(self.tail, prev, "inconsistent state: tail");
        assert_eq!(self.len, count, "inconsistent state: len");
    }
}

/// Publishes a verdict on a node that is not linked.
///
/// For `GRANTED` and `CLOSED` this must be the caller's last touch of the
/// node: the owner may see the verdict without the lock and free the node.
/// `Release` makes the seat's history visible to the owner's `Acquire` load.
///
/// # Safety
/// `node` is valid (its owner has not seen a final verdict yet).
pub(crate) unsafe fn set_status(node: NonNull<Node>, status: u8) {
    // SAFETY: the caller guarantees `node` is valid; the store is atomic.
    unsafe { node.as_ref() }
        .status
        .store(status, Ordering::Release);
}

/// # Safety
/// `node` is linked and the lock is held.
unsafe fn set_next(node: NonNull<Node>, next: Option<NonNull<Node>>) {
    // SAFETY: guaranteed by the caller.
    unsafe { node.as_ref() }
        .links
        .with_mut(|l| unsafe { (*l).next = next })
}

/// # Safety
/// `node` is linked and the lock is held.
unsafe fn set_prev(node: NonNull<Node>, prev: Option<NonNull<Node>>) {
    // SAFETY: guaranteed by the caller.
    unsafe { node.as_ref() }
        .links
        .with_mut(|l| unsafe { (*l).prev = prev })
}
