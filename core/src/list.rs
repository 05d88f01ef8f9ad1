//! The intrusive, allocation-free FIFO list of waiting callers.
//!
//! Each [`Node`] lives inside a pinned acquire future (or on a blocking
//! caller's stack, inside the same future). The list only stores raw
//! pointers to nodes; it never owns or frees one. Every field of a node that
//! the list touches is in an `UnsafeCell` and is read or written only while
//! the compartment's lock is held, which the `&mut List` receiver witnesses.
//!
//! The node's `status` is the one field read without the lock: its owner
//! polls it to learn the verdict. Its state machine lives in
//! [`crate::status`]; the list performs the transitions that move a node
//! in or within the list (link, notify, lose the race).
//!
//! In barging mode the list is kept partitioned: every `Notified` node
//! comes before every `Waiting` one, and the list remembers the first
//! `Waiting` node. Notifying the next waiter is then O(1) (the boundary
//! moves one node on), and so is sending a notified node that lost its
//! race back to `Waiting` (it moves to just before the boundary, which then
//! points at it). In FIFO mode no node is ever notified, so the boundary is
//! always the head.

use core::marker::PhantomPinned;
use core::ptr::NonNull;
use core::task::Waker;

use crate::status::NodeStatus;
use crate::sync::UnsafeCell;

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
    pub(crate) status: NodeStatus,
    /// `BoundedBarging`: races this node lost (woken, and found no seat).
    /// # Safety
    /// Read or written only with the lock held, while linked.
    lost_races: UnsafeCell<u8>,
    _pinned: PhantomPinned,
}

/// A node is dropped unlinked and without a waker: its owner's `Drop`
/// unlinks it first, and every exit from the list takes the waker. In debug
/// builds and under loom the drop reads both cells, so that a drainer whose
/// last touch of the node (rule 2 in `engine.rs`) does not happen-before the
/// owner frees it is reported as a data race, by miri and by loom, and not
/// only on hardware that reorders it.
#[cfg(any(debug_assertions, bulkhead_loom))]
impl Drop for Node {
    fn drop(&mut self) {
        self.links.with_mut(|l| {
            // SAFETY: the node is being freed by its owner, so no one else
            // can reach it any more (rule 2).
            let l = unsafe { &*l };
            debug_assert!(
                l.prev.is_none() && l.next.is_none(),
                "inconsistent state: a linked node is dropped"
            );
        });
        self.waker.with_mut(|w| {
            // SAFETY: as above.
            let w = unsafe { &*w };
            debug_assert!(
                w.is_none(),
                "inconsistent state: a node is dropped with a waker"
            );
        });
    }
}

impl Node {
    crate::sync::loom_const_fn! {
        pub(crate) fn new() -> Self {
            Self {
                links: UnsafeCell::new(Links { prev: None, next: None }),
                waker: UnsafeCell::new(None),
                status: NodeStatus::new(),
                lost_races: UnsafeCell::new(0),
                _pinned: PhantomPinned,
            }
        }
    }
}

/// The waiter list: FIFO by link order, `Notified` nodes first.
#[derive(Debug)]
pub(crate) struct List {
    head: Option<NonNull<Node>>,
    tail: Option<NonNull<Node>>,
    /// The first `Waiting` node; every node before it is `Notified`.
    first_waiting: Option<NonNull<Node>>,
    len: usize,
    /// Nodes reached through the list in the current lock section, and the
    /// most in any section; for the test that bounds a section's work.
    #[cfg(test)]
    visits: usize,
    #[cfg(test)]
    pub(crate) max_visits: usize,
}

// SAFETY: the list only holds pointers to nodes whose owners are `Send`
// futures; it is only ever accessed with the compartment's lock held.
unsafe impl Send for List {}

impl List {
    pub(crate) const fn new() -> Self {
        Self {
            head: None,
            tail: None,
            first_waiting: None,
            len: 0,
            #[cfg(test)]
            visits: 0,
            #[cfg(test)]
            max_visits: 0,
        }
    }

    /// Counts one node reached through the list (tests only).
    #[inline(always)]
    fn visit(&mut self) {
        #[cfg(test)]
        {
            self.visits += 1;
        }
    }

    /// Starts counting a new lock section's visits (tests only).
    #[inline(always)]
    pub(crate) fn begin_section(&mut self) {
        #[cfg(test)]
        {
            self.visits = 0;
        }
    }

    /// Records the section's visits (tests only).
    #[inline(always)]
    pub(crate) fn end_section(&mut self) {
        #[cfg(test)]
        {
            self.max_visits = self.max_visits.max(self.visits);
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.head.is_none()
    }

    /// Links `node` at the tail with `waker`: **link**, `Idle -> Waiting`.
    ///
    /// # Safety
    /// `node` is pinned, valid, not linked in any list, and stays valid until
    /// it is unlinked (by [`List::remove`]).
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
        if self.first_waiting.is_none() {
            self.first_waiting = Some(node);
        }
        // SAFETY: the lock is held and the node is being linked.
        unsafe { node_ref.status.link() };
    }

    /// The oldest node, still linked.
    pub(crate) fn front(&mut self) -> Option<NonNull<Node>> {
        self.visit();
        self.head
    }

    /// The node after `node`.
    ///
    /// # Safety
    /// `node` is linked in this list.
    unsafe fn next(&self, node: NonNull<Node>) -> Option<NonNull<Node>> {
        // SAFETY: linked nodes are valid; lock held through `&self` of a
        // list that is only reachable under the lock.
        unsafe { node.as_ref() }
            .links
            .with_mut(|l| unsafe { (*l).next })
    }

    /// Unlinks `node`, takes its waker out, and returns it.
    ///
    /// The caller must then move the node out of its linked status (grant,
    /// close or leave) as its last touch of the node.
    ///
    /// # Safety
    /// `node` is linked in this list.
    pub(crate) unsafe fn remove(&mut self, node: NonNull<Node>) -> Option<Waker> {
        // SAFETY: linked nodes are valid (push_back's contract).
        let node_ref = unsafe { node.as_ref() };
        if self.first_waiting == Some(node) {
            // SAFETY: `node` is linked.
            self.first_waiting = unsafe { self.next(node) };
        }
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

    /// Barging: **notifies** the oldest `Waiting` node (`Waiting ->
    /// Notified`) and moves the boundary past it. Returns `None` if every
    /// node is already notified, else the node's waker, taken out (it
    /// registers a fresh one when it next polls). The node stays linked.
    pub(crate) fn notify_next(&mut self) -> Option<Option<Waker>> {
        let node = self.first_waiting?;
        self.visit();
        // SAFETY: `first_waiting` is linked, hence valid; lock held.
        unsafe {
            self.first_waiting = self.next(node);
            node.as_ref().status.notify();
            Some(node.as_ref().waker.with_mut(|w| (*w).take()))
        }
    }

    /// Barging: a notified node that **lost the race** for a seat waits
    /// again (`Notified -> Waiting`). It moves to the end of the notified
    /// prefix, just before the boundary, and becomes the first `Waiting`
    /// node: the next to be notified. O(1).
    ///
    /// # Safety
    /// `node` is linked in this list and `Notified`.
    pub(crate) unsafe fn requeue(&mut self, node: NonNull<Node>) {
        // SAFETY: `node` is linked (the caller's contract), hence valid.
        unsafe {
            if self.next(node) != self.first_waiting {
                let waker = self.remove(node);
                self.insert_before_first_waiting(node, waker);
            }
            self.first_waiting = Some(node);
            node.as_ref().status.requeue();
        }
    }

    /// `BoundedBarging`: counts one more race lost by `node` and returns how
    /// many it has lost (saturating).
    ///
    /// # Safety
    /// `node` is linked in this list.
    pub(crate) unsafe fn lose_race(&mut self, node: NonNull<Node>) -> u8 {
        // SAFETY: linked nodes are valid; lock held.
        unsafe { node.as_ref() }.lost_races.with_mut(|n| {
            // SAFETY: lock held; exclusive access to the count.
            let n = unsafe { &mut *n };
            *n = n.saturating_add(1);
            *n
        })
    }

    /// `BoundedBarging`: how many races `node` has lost.
    ///
    /// # Safety
    /// `node` is linked in this list.
    pub(crate) unsafe fn lost_races(&self, node: NonNull<Node>) -> u8 {
        // SAFETY: linked nodes are valid; lock held.
        unsafe { node.as_ref() }
            .lost_races
            .with_mut(|n| unsafe { *n })
    }

    /// `BoundedBarging`: moves a `Notified` node to the head, first in line
    /// for a hand-off. It stays `Notified`, so the notified prefix still
    /// comes first. O(1).
    ///
    /// # Safety
    /// `node` is linked in this list and `Notified`.
    pub(crate) unsafe fn move_to_front(&mut self, node: NonNull<Node>) {
        if self.head == Some(node) {
            return;
        }
        // SAFETY: `node` is linked (the caller's contract) and `Notified`,
        // so it is not the boundary and `remove` leaves `first_waiting`.
        unsafe {
            let waker = self.remove(node);
            node.as_ref().waker.with_mut(|w| *w = waker);
            node.as_ref().links.with_mut(|l| {
                (*l).prev = None;
                (*l).next = self.head;
            });
            if let Some(head) = self.head {
                set_prev(head, Some(node));
            } else {
                self.tail = Some(node);
            }
        }
        self.head = Some(node);
        self.len += 1;
    }

    /// Links a node that was just unlinked again, just before the boundary
    /// (or at the tail if every node is notified). Keeps its status.
    ///
    /// # Safety
    /// `node` is valid, pinned, not linked, and was linked a moment ago.
    unsafe fn insert_before_first_waiting(&mut self, node: NonNull<Node>, waker: Option<Waker>) {
        let next = self.first_waiting;
        let prev = match next {
            // SAFETY: a linked node is valid.
            Some(next) => unsafe { next.as_ref() }
                .links
                .with_mut(|l| unsafe { (*l).prev }),
            None => self.tail,
        };
        // SAFETY: `node` is valid and unlinked: its cells are ours.
        unsafe {
            node.as_ref().waker.with_mut(|w| *w = waker);
            node.as_ref().links.with_mut(|l| {
                (*l).prev = prev;
                (*l).next = next;
            });
        }
        match prev {
            // SAFETY: `prev` is linked.
            Some(prev) => unsafe { set_next(prev, Some(node)) },
            None => self.head = Some(node),
        }
        match next {
            // SAFETY: `next` is linked.
            Some(next) => unsafe { set_prev(next, Some(node)) },
            None => self.tail = Some(node),
        }
        self.len += 1;
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
        use crate::status::Status;
        let mut count = 0;
        let mut prev = None;
        let mut cur = self.head;
        let mut waiting = false;
        while let Some(node) = cur {
            // SAFETY: linked nodes are valid.
            let (p, n) = unsafe { node.as_ref() }
                .links
                .with_mut(|l| unsafe { ((*l).prev, (*l).next) });
            assert_eq!(p, prev, "inconsistent state: broken prev link");
            if cur == self.first_waiting {
                waiting = true;
            }
            let expected = if waiting {
                Status::Waiting
            } else {
                Status::Notified
            };
            // SAFETY: linked nodes are valid.
            let status = unsafe { node.as_ref() }.status.get();
            assert_eq!(status, expected, "inconsistent state: partition");
            prev = cur;
            cur = n;
            count += 1;
        }
        assert!(
            self.first_waiting.is_none() || waiting,
            "inconsistent state: first_waiting is not linked"
        );
        assert_eq!(self.tail, prev, "inconsistent state: tail");
        assert_eq!(self.len, count, "inconsistent state: len");
    }
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
