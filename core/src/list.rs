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
//! The list is circular and keeps only its tail: the head is the tail's
//! `next` (one load more to find it, one pointer less in every
//! compartment). It keeps no length either: the compartment counts its
//! waiters (`Bulkhead::waiting`) where it links and unlinks them.
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
use crate::weight::Weight;

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
    /// The seats this waiter asks for, at least 1. Set at construction and
    /// never changed, so it is read through a shared reference, by the
    /// owner or under the lock. 32 bits, as every count of seats in the
    /// compartment; it sits in the padding after the two bytes above (and
    /// takes no room at all without the `weights` feature).
    pub(crate) weight: Weight,
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
        /// A node asking for `weight` seats (validated by the caller:
        /// at least 1, at most `MAX_CONCURRENT_LIMIT`).
        pub(crate) fn new(weight: Weight) -> Self {
            Self {
                links: UnsafeCell::new(Links { prev: None, next: None }),
                waker: UnsafeCell::new(None),
                status: NodeStatus::new(),
                lost_races: UnsafeCell::new(0),
                weight,
                _pinned: PhantomPinned,
            }
        }
    }
}

/// The waiter list: FIFO by link order, `Notified` nodes first.
///
/// Circular: every linked node has a `prev` and a `next`, the tail's `next`
/// is the head and the head's `prev` is the tail. A node that is not linked
/// has neither.
#[derive(Debug)]
pub(crate) struct List {
    /// The newest node; its `next` is the oldest.
    tail: Option<NonNull<Node>>,
    /// The first `Waiting` node; every node before it is `Notified`.
    first_waiting: Option<NonNull<Node>>,
    /// Nodes reached through the list in the current lock section, and the
    /// most in any section; for the tests (unit and loom) that bound a
    /// section's work (rule 7 in `engine.rs`).
    #[cfg(any(test, bulkhead_loom))]
    visits: usize,
    #[cfg(any(test, bulkhead_loom))]
    pub(crate) max_visits: usize,
}

// SAFETY: the list only holds pointers to nodes whose owners are `Send`
// futures; it is only ever accessed with the compartment's lock held.
unsafe impl Send for List {}

impl List {
    pub(crate) const fn new() -> Self {
        Self {
            tail: None,
            first_waiting: None,
            #[cfg(any(test, bulkhead_loom))]
            visits: 0,
            #[cfg(any(test, bulkhead_loom))]
            max_visits: 0,
        }
    }

    /// Counts one node reached through the list (tests only).
    #[inline(always)]
    fn visit(&mut self) {
        #[cfg(any(test, bulkhead_loom))]
        {
            self.visits += 1;
        }
    }

    /// Starts counting a new lock section's visits (tests only).
    #[inline(always)]
    pub(crate) fn begin_section(&mut self) {
        #[cfg(any(test, bulkhead_loom))]
        {
            self.visits = 0;
        }
    }

    /// Records the section's visits (tests only).
    #[inline(always)]
    pub(crate) fn end_section(&mut self) {
        #[cfg(any(test, bulkhead_loom))]
        {
            self.max_visits = self.max_visits.max(self.visits);
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.tail.is_none()
    }

    /// Whether exactly one node is linked: the tail is its own successor.
    /// The list keeps no length: the compartment counts its waiters where
    /// it links and unlinks them (`Bulkhead::waiting`), so that snapshots
    /// can read the count without the lock.
    pub(crate) fn is_single(&self) -> bool {
        // SAFETY: the tail is linked, hence valid; the lock is held.
        self.tail
            .is_some_and(|tail| unsafe { links(tail) }.next == Some(tail))
    }

    /// The oldest node: the tail's successor.
    fn head(&self) -> Option<NonNull<Node>> {
        // SAFETY: the tail is linked, hence valid; the lock is held.
        self.tail.and_then(|tail| unsafe { links(tail) }.next)
    }

    /// Barging: whether no linked node is `Waiting` (every one is notified,
    /// or the list is empty), so a drain has nobody to notify.
    pub(crate) fn all_notified(&self) -> bool {
        self.first_waiting.is_none()
    }

    /// Links `node` at the tail with `waker`: **link**, `Idle -> Waiting`.
    ///
    /// # Safety
    /// `node` is pinned, valid, not linked in any list, and stays valid until
    /// it is unlinked (by [`List::remove`]).
    pub(crate) unsafe fn push_back(&mut self, node: NonNull<Node>, waker: Waker) {
        // SAFETY: the caller guarantees `node` is valid and not linked; the
        // list lock is held (we have `&mut self`), so no one else touches
        // its cells.
        unsafe { self.link_before(node, None, Some(waker)) };
        if self.first_waiting.is_none() {
            self.first_waiting = Some(node);
        }
        // SAFETY: the lock is held and the node is being linked.
        unsafe { node.as_ref().status.link() };
    }

    /// Links `node` with `waker` at the front of the `Waiting` nodes, just
    /// after the notified ones: the next to be served or notified
    /// (newest-first order): **link**, `Idle -> Waiting`.
    ///
    /// # Safety
    /// As [`push_back`](Self::push_back).
    #[cfg(feature = "lifo")]
    pub(crate) unsafe fn push_newest(&mut self, node: NonNull<Node>, waker: Waker) {
        // SAFETY: as in `push_back`; `first_waiting`, if any, is linked.
        unsafe { self.link_before(node, self.first_waiting, Some(waker)) };
        self.first_waiting = Some(node);
        // SAFETY: the lock is held and the node is being linked.
        unsafe { node.as_ref().status.link() };
    }

    /// The node served last: the tail (in newest-first order, the oldest
    /// waiter, which drop-oldest removes).
    pub(crate) fn back(&mut self) -> Option<NonNull<Node>> {
        self.visit();
        self.tail
    }

    /// Barging: the next `Waiting` node to notify, still `Waiting`, or
    /// `None` if every node is notified. O(1).
    pub(crate) fn next_waiting(&mut self) -> Option<NonNull<Node>> {
        self.visit();
        self.first_waiting
    }

    /// Links an unlinked `node` with `waker` just before `next`, or at the
    /// tail for `None`. Inserting before the head makes `node` the head
    /// with no write to the list itself: it becomes the tail's successor.
    ///
    /// # Safety
    /// `node` is valid, pinned and not linked; `next`, if any, is linked in
    /// this list.
    unsafe fn link_before(
        &mut self,
        node: NonNull<Node>,
        next: Option<NonNull<Node>>,
        waker: Option<Waker>,
    ) {
        // SAFETY: `node` is valid and unlinked, so its cells are ours.
        unsafe { node.as_ref() }
            .waker
            .with_mut(|w| unsafe { *w = waker });
        let Some(tail) = self.tail else {
            debug_assert!(
                next.is_none(),
                "inconsistent state: a node in an empty list"
            );
            // SAFETY: as above.
            unsafe {
                set_links(
                    node,
                    Links {
                        prev: Some(node),
                        next: Some(node),
                    },
                )
            };
            self.tail = Some(node);
            return;
        };
        let (prev, next) = match next {
            // SAFETY: a linked node is valid and has a `prev`.
            Some(next) => (neighbour(unsafe { links(next) }.prev, tail), next),
            None => {
                self.tail = Some(node);
                // SAFETY: the old tail is linked; its `next` is the head.
                (tail, neighbour(unsafe { links(tail) }.next, tail))
            }
        };
        // SAFETY: `node` is ours; `prev` and `next` are linked, hence valid,
        // and the lock is held.
        unsafe {
            set_links(
                node,
                Links {
                    prev: Some(prev),
                    next: Some(next),
                },
            );
            set_next(prev, Some(node));
            set_prev(next, Some(node));
        }
    }

    /// The oldest node, still linked.
    pub(crate) fn front(&mut self) -> Option<NonNull<Node>> {
        self.visit();
        self.head()
    }

    /// The node after `node` in FIFO order: `None` after the tail (the
    /// link itself goes round to the head).
    ///
    /// # Safety
    /// `node` is linked in this list.
    unsafe fn successor(&self, node: NonNull<Node>) -> Option<NonNull<Node>> {
        if self.tail == Some(node) {
            return None;
        }
        // SAFETY: `node` is linked, hence valid; the lock is held.
        unsafe { links(node) }.next
    }

    /// Unlinks `node`, takes its waker out, and returns it.
    ///
    /// The caller must then move the node out of its linked status (grant,
    /// close or leave) as its last touch of the node.
    ///
    /// # Safety
    /// `node` is linked in this list.
    pub(crate) unsafe fn remove(&mut self, node: NonNull<Node>) -> Option<Waker> {
        if self.first_waiting == Some(node) {
            // SAFETY: `node` is linked.
            self.first_waiting = unsafe { self.successor(node) };
        }
        // SAFETY: linked nodes are valid (push_back's contract); the lock is
        // held, so the links are ours.
        let (prev, next) = unsafe { node.as_ref() }
            .links
            .with_mut(|l| unsafe { ((*l).prev.take(), (*l).next.take()) });
        let (prev, next) = (neighbour(prev, node), neighbour(next, node));
        if next == node {
            debug_assert!(
                prev == node && self.tail == Some(node),
                "inconsistent state: a lone node that is not the tail"
            );
            self.tail = None;
        } else {
            // SAFETY: neighbours of a linked node are linked, hence valid.
            unsafe {
                set_next(prev, Some(next));
                set_prev(next, Some(prev));
            }
            if self.tail == Some(node) {
                self.tail = Some(prev);
            }
        }
        // SAFETY: lock held; exclusive access to the waker.
        unsafe { node.as_ref() }
            .waker
            .with_mut(|w| unsafe { (*w).take() })
    }

    /// Barging: **notifies** the oldest `Waiting` node (`Waiting ->
    /// Notified`) and moves the boundary past it. Returns `None` if every
    /// node is already notified, else the node's waker, taken out (it
    /// registers a fresh one when it next polls). The node stays linked.
    pub(crate) fn notify_next(&mut self) -> Option<Option<Waker>> {
        let node = self.first_waiting?;
        // SAFETY: `first_waiting` is linked, hence valid; lock held.
        unsafe {
            self.first_waiting = self.successor(node);
            node.as_ref().status.notify();
            Some(node.as_ref().waker.with_mut(|w| (*w).take()))
        }
    }

    /// Barging: the first `Waiting` node after `first` (itself `Waiting`)
    /// whose weight fits in `room` seats, looking at most at `budget`
    /// nodes; returns it and how many nodes it looked at.
    ///
    /// # Safety
    /// `first` is linked in this list and `Waiting`.
    pub(crate) unsafe fn find_waiting(
        &mut self,
        first: NonNull<Node>,
        room: isize,
        budget: usize,
    ) -> (Option<NonNull<Node>>, usize) {
        let mut node = first;
        for looked in 1..=budget {
            // SAFETY: `node` is linked (the caller's `first`, or a
            // successor of a linked node).
            let Some(next) = (unsafe { self.successor(node) }) else {
                return (None, looked - 1);
            };
            self.visit();
            // SAFETY: linked, hence valid; its weight never changes.
            if unsafe { next.as_ref() }.weight.get() as isize <= room {
                return (Some(next), looked);
            }
            node = next;
        }
        (None, budget)
    }

    /// Barging: **notifies** the `Waiting` node `node` (`Waiting ->
    /// Notified`): the first one, as [`notify_next`](Self::notify_next), or
    /// one behind it, which moves to the end of the notified prefix.
    /// Returns its waker, taken out. O(1).
    ///
    /// # Safety
    /// `node` is linked in this list and `Waiting`.
    pub(crate) unsafe fn notify(&mut self, node: NonNull<Node>) -> Option<Waker> {
        if self.first_waiting == Some(node) {
            return self.notify_next().flatten();
        }
        // SAFETY: `node` is linked and `Waiting` but not the boundary, so
        // `remove` leaves `first_waiting` (linked) alone, and inserting
        // before it puts `node` at the end of the notified prefix.
        unsafe {
            let waker = self.remove(node);
            self.link_before(node, self.first_waiting, None);
            node.as_ref().status.notify();
            waker
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
        // SAFETY: `node` is linked (the caller's contract), hence valid; it
        // is `Notified`, so it is not `first_waiting`, which `remove` keeps.
        unsafe {
            if self.successor(node) != self.first_waiting {
                let waker = self.remove(node);
                self.link_before(node, self.first_waiting, waker);
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
        let Some(head) = self.head() else { return };
        if head == node {
            return;
        }
        // SAFETY: `node` is linked (the caller's contract) and `Notified`,
        // so it is not the boundary and `remove` leaves `first_waiting`;
        // it is not the head, so the list keeps `head` linked and
        // inserting before it makes `node` the new head.
        unsafe {
            let waker = self.remove(node);
            self.link_before(node, Some(head), waker);
        }
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

    /// The linked nodes, oldest first; for tests.
    #[cfg(test)]
    pub(crate) fn order(&self) -> std::vec::Vec<NonNull<Node>> {
        let mut nodes = std::vec::Vec::new();
        let mut cur = self.head();
        while let Some(node) = cur {
            nodes.push(node);
            // SAFETY: `node` is linked; the caller holds the list.
            cur = unsafe { self.successor(node) };
        }
        nodes
    }

    /// Checks the links in both directions, round the whole circle, and
    /// returns how many nodes are linked; for tests.
    #[cfg(test)]
    pub(crate) fn assert_valid(&self) -> usize {
        use crate::status::Status;
        let Some(tail) = self.tail else {
            assert!(
                self.first_waiting.is_none(),
                "inconsistent state: first_waiting in an empty list"
            );
            assert!(!self.is_single());
            return 0;
        };
        let mut count = 0;
        let mut prev = tail;
        // SAFETY: linked nodes are valid; the caller holds the lock.
        let mut cur = unsafe { links(tail) }.next.expect("the tail has a next");
        let mut waiting = false;
        loop {
            // SAFETY: as above.
            let Links { prev: p, next: n } = unsafe { links(cur) };
            assert_eq!(p, Some(prev), "inconsistent state: broken prev link");
            if Some(cur) == self.first_waiting {
                waiting = true;
            }
            let expected = if waiting {
                Status::Waiting
            } else {
                Status::Notified
            };
            // SAFETY: linked nodes are valid.
            let status = unsafe { cur.as_ref() }.status.get();
            assert_eq!(status, expected, "inconsistent state: partition");
            count += 1;
            assert!(
                count <= 1 << 20,
                "inconsistent state: the circle misses the tail"
            );
            if cur == tail {
                break;
            }
            prev = cur;
            cur = n.expect("inconsistent state: a linked node without next");
        }
        assert!(
            self.first_waiting.is_none() || waiting,
            "inconsistent state: first_waiting is not linked"
        );
        assert_eq!(
            self.is_single(),
            count == 1,
            "inconsistent state: is_single"
        );
        count
    }
}

/// A linked node's neighbour, which a circular list always has. The
/// fallback is never used (no panic path in release builds).
#[inline(always)]
fn neighbour(link: Option<NonNull<Node>>, fallback: NonNull<Node>) -> NonNull<Node> {
    debug_assert!(
        link.is_some(),
        "inconsistent state: a linked node without a neighbour"
    );
    link.unwrap_or(fallback)
}

/// A copy of `node`'s links.
///
/// # Safety
/// `node` is valid and the lock is held.
unsafe fn links(node: NonNull<Node>) -> Links {
    // SAFETY: guaranteed by the caller.
    unsafe { node.as_ref() }.links.with_mut(|l| unsafe {
        Links {
            prev: (*l).prev,
            next: (*l).next,
        }
    })
}

/// # Safety
/// `node` is valid, and linked or being linked, and the lock is held.
unsafe fn set_links(node: NonNull<Node>, links: Links) {
    // SAFETY: guaranteed by the caller.
    unsafe { node.as_ref() }
        .links
        .with_mut(|l| unsafe { *l = links })
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
