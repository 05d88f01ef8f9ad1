//! The state of a partitioned compartment, kept under its lock, and the
//! rules that decide who gets a seat. Every function here runs with the
//! lock held; none calls foreign code (wakers are collected, and woken by
//! the caller after unlocking).
//!
//! # The rules
//!
//! For partition `i`: `a` seats held, a share `s`, a reserve `r` (the part
//! of the share never lent), and `may_hold` `m` (share plus borrowing
//! limit, at most the limit less every other partition's reserve). `A` is
//! the seats held in all, `C` the limit, and `u_j = max(0, r_j - a_j)` the
//! unused reserve of partition `j`.
//!
//! 1. **Fits**: `w` seats fit partition `i` if `a_i + w <= m_i` and
//!    `A + w + Σ_{j≠i} u_j <= C`: no partition goes past what it may
//!    hold, the total never passes the limit, and every reserve stays free
//!    for its owner.
//! 2. **Eligible**: a waiter is eligible if `a_i + w <= m_i`: it will fit
//!    once enough running calls end. A waiter that is not eligible waits
//!    for its own partition's calls, and holds nobody up.
//! 3. **Rank**: below its share (`a_i < s_i`) first, then higher
//!    priority. Equal ranks take turns: after a partition is served, the
//!    search for the next starts after it.
//! 4. **Serve** (after every change): first the *guaranteed lane*, the
//!    best-ranked line head that fits within its partition's share
//!    (`a_i + w <= s_i`); then the best-ranked eligible head, if it fits.
//!    If it does not, the search stops: the free seats are kept for it, so
//!    a lender that needs its share back gets each seat a borrower frees.
//! 5. **Newcomers** queue behind their own partition's line. With nobody
//!    ahead of them there, they take the guaranteed lane if it fits, and
//!    otherwise take a seat only if no eligible head of another line comes
//!    before them in the serve's order (a higher rank, or an equal rank
//!    earlier in the turn order): exactly what `serve` would decide with
//!    the newcomer at the head of its line, so `try_acquire` and a wait
//!    agree.
//!
//! **Time under the lock.** A section hands out at most [`BATCH`]
//! verdicts; each looks at the head of every line a few times (at most
//! [`MAX_PARTITIONS`] lines), so a section's work is bounded by a constant
//! (about `3 × 8 × 8` head reads), larger than a plain compartment's but
//! independent of how many wait.
//!
//! **The reclaim bound.** Running work is never pre-empted. Once a waiter
//! of a partition below its share is the best-ranked eligible waiter, no
//! partition at or above its share takes a seat until that waiter is
//! served (a newcomer above its share ranks lower, rule 5; the guaranteed
//! lane admits only within a share; the serve keeps freed seats for it,
//! rule 4). So it waits only for calls already running to end, and for
//! other partitions taking seats within their own shares.

use core::ptr::NonNull;
use core::task::Waker;

use heapless::{Deque, Vec};

use super::settings::{MAX_PARTITIONS, PartitionConfig, Resolved};
use crate::list::{List, Node};
use crate::queue_order::QueueOrder;
use crate::status::Status;

/// How many wakers one lock section collects before it unlocks to wake
/// them: bounds the time under the lock (as the plain compartment's
/// `BATCH`). 2 under loom so that models reach a full batch.
pub(crate) const BATCH: usize = if cfg!(bulkhead_loom) { 2 } else { 8 };

/// Wakers collected under the lock, woken after it.
pub(crate) type Wakers = Deque<Waker, BATCH>;

/// One partition's state.
pub(crate) struct Part {
    pub(crate) config: PartitionConfig,
    pub(crate) resolved: Resolved,
    pub(crate) active: usize,
    pub(crate) waiting: usize,
    pub(crate) rejected: u64,
    pub(crate) timed_out: u64,
    pub(crate) list: List,
}

/// Why a newcomer got no seat now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The compartment is closed.
    Closed,
    /// It asks for more than the partition may ever hold.
    Oversized,
    /// No seat for it now; it may wait.
    Full,
}

/// What a newcomer's section decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Joined {
    /// Seats taken; the node was not linked.
    Seated,
    /// Linked; it waits for a verdict.
    Linked,
    /// Turned away: the line is full.
    QueueFull,
}

/// The whole mutable state, under the compartment's lock.
pub(crate) struct Table {
    pub(crate) parts: Vec<Part, MAX_PARTITIONS>,
    /// The limit.
    pub(crate) limit: usize,
    /// Seats held in all (the sum of the parts' `active`).
    pub(crate) active: usize,
    pub(crate) closed: bool,
    /// Waiters in all lines (the sum of the parts' `waiting`): a serve
    /// with none to serve returns at once.
    waiters: usize,
    /// The limit before a pause (0), against which settings given while
    /// paused are checked.
    pub(crate) resumes_at: usize,
    /// Where the search for equal ranks starts (rule 3).
    turn: usize,
    /// Shuttle builds only: called at every decision to hand out seats.
    #[cfg(bulkhead_shuttle)]
    pub(crate) observer: Option<fn(&[SectionView], usize, usize)>,
}

/// Shuttle builds only: one partition as it stands when seats are handed
/// out, for the randomized tests that check the reclaim bound at every
/// decision ([`Partitioned::observe_decisions`](super::Partitioned::observe_decisions)).
#[cfg(bulkhead_shuttle)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectionView {
    /// The limit.
    pub limit: usize,
    /// The partition's share, reserve and what it may hold.
    pub share: usize,
    /// The part of the share never lent.
    pub reserved: usize,
    /// The most it may hold.
    pub may_hold: usize,
    /// Its priority.
    pub priority: u8,
    /// Seats it holds.
    pub active: usize,
    /// Callers in its line.
    pub waiting: usize,
    /// The weight its line's head asks for.
    pub head: Option<usize>,
}

// SAFETY: the lists' raw pointers are only touched under the compartment's
// lock, as in the plain compartment.
unsafe impl Send for Table {}

impl Table {
    pub(crate) fn new(limit: usize, parts: Vec<Part, MAX_PARTITIONS>) -> Self {
        Self {
            parts,
            limit,
            active: 0,
            closed: false,
            waiters: 0,
            resumes_at: limit,
            turn: 0,
            #[cfg(bulkhead_shuttle)]
            observer: None,
        }
    }

    /// `Σ_{j≠i} u_j`: the other partitions' unused reserves.
    fn others_unused_reserve(&self, i: usize) -> usize {
        self.parts
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, p)| p.resolved.reserved.saturating_sub(p.active))
            .sum()
    }

    /// Rule 1.
    pub(crate) fn fits(&self, i: usize, w: usize) -> bool {
        let p = &self.parts[i];
        p.active.saturating_add(w) <= p.resolved.may_hold
            && self
                .active
                .saturating_add(w)
                .saturating_add(self.others_unused_reserve(i))
                <= self.limit
    }

    /// Rule 2.
    fn eligible(&self, i: usize, w: usize) -> bool {
        let p = &self.parts[i];
        p.active.saturating_add(w) <= p.resolved.may_hold
    }

    /// Within the share: the guaranteed lane.
    fn within_share(&self, i: usize, w: usize) -> bool {
        let p = &self.parts[i];
        p.active.saturating_add(w) <= p.resolved.share
    }

    /// Rule 3: a larger rank is served first.
    fn rank(&self, i: usize) -> (bool, u8) {
        let p = &self.parts[i];
        (p.active < p.resolved.share, p.config.priority)
    }

    /// Whether partition `j`'s head comes before partition `i`'s in the
    /// serve's order: a higher rank, or an equal rank earlier in the turn
    /// order (the order `serve` searches in).
    fn comes_before(&self, j: usize, i: usize) -> bool {
        let n = self.parts.len();
        let place = |x: usize| (x + n - self.turn) % n;
        let (rj, ri) = (self.rank(j), self.rank(i));
        rj > ri || (rj == ri && place(j) < place(i))
    }

    /// Whether `w` seats are more than partition `i` may ever hold. A
    /// `may_hold` of 0 is a pause (the limit is 0, or a percentage share
    /// rounds to 0), not a refusal.
    pub(crate) fn oversized(&self, i: usize, w: usize) -> bool {
        let m = self.parts[i].resolved.may_hold;
        m > 0 && w > m
    }

    /// The weight of the head of partition `i`'s line.
    fn head(&mut self, i: usize) -> Option<(NonNull<Node>, usize)> {
        let node = self.parts[i].list.front()?;
        // SAFETY: a linked node is valid (its owner unlinks it before it
        // moves or dies), and the lock is held.
        Some((node, unsafe { node.as_ref() }.weight.seats()))
    }

    /// Rule 5: may a newcomer of partition `i` take `w` seats now?
    pub(crate) fn admit(&mut self, i: usize, w: usize) -> Result<(), Refusal> {
        if self.closed {
            return Err(Refusal::Closed);
        }
        if self.oversized(i, w) {
            return Err(Refusal::Oversized);
        }
        if self.parts[i].waiting > 0 || !self.fits(i, w) {
            return Err(Refusal::Full);
        }
        if !self.within_share(i, w) {
            // The same decision `serve` would make with this newcomer at
            // the head of its line: it is passed over for an eligible head
            // that comes before it.
            for j in 0..self.parts.len() {
                if j == i {
                    continue;
                }
                if let Some((_, h)) = self.head(j)
                    && self.eligible(j, h)
                    && self.comes_before(j, i)
                {
                    return Err(Refusal::Full);
                }
            }
        }
        self.take(i, w);
        Ok(())
    }

    /// Counts `w` seats taken by partition `i`.
    fn take(&mut self, i: usize, w: usize) {
        #[cfg(bulkhead_shuttle)]
        self.observe(i, w);
        self.parts[i].active += w;
        self.active += w;
    }

    /// Gives back `w` seats of partition `i`. Saturates: a seat given back
    /// through a handle that switched compartments must not wrap a count.
    pub(crate) fn give_back(&mut self, i: usize, w: usize) {
        if let Some(p) = self.parts.get_mut(i) {
            let w = w.min(p.active);
            p.active -= w;
            self.active -= w;
        }
    }

    /// Links `node` into partition `i`'s line with `waker`, after `admit`
    /// refused it with `Full`: at the back (FIFO) or the front (newest
    /// first). A full line turns the newcomer away (FIFO), handing its
    /// waker back to be dropped after unlocking, or drops its oldest waiter
    /// (newest first), whose waker goes into `wake`.
    ///
    /// # Safety
    /// `node` is pinned, valid, idle and stays valid until it is unlinked.
    pub(crate) unsafe fn link(
        &mut self,
        i: usize,
        node: NonNull<Node>,
        waker: Waker,
        wake: &mut Wakers,
    ) -> Result<(), Waker> {
        #[cfg(not(feature = "lifo"))]
        let _ = &wake;
        let p = &mut self.parts[i];
        let limit = p.config.max_waiting.unwrap_or(usize::MAX);
        let newest_first = cfg!(feature = "lifo") && p.config.queue_order == QueueOrder::Lifo;
        if p.waiting >= limit && (!newest_first || limit == 0) {
            return Err(waker);
        }
        #[cfg(feature = "lifo")]
        if p.waiting >= limit
            && let Some(oldest) = p.list.back()
        {
            // Drop-oldest: the back of a newest-first line is its oldest.
            // SAFETY: `oldest` is linked in this list.
            let w = unsafe { p.list.remove(oldest) };
            // SAFETY: just unlinked; the last touch of the node.
            unsafe { oldest.as_ref().status.refuse(Status::Dropped) };
            p.waiting -= 1;
            self.waiters -= 1;
            p.rejected += 1;
            push(wake, w);
        }
        // SAFETY: the caller's contract; the lock is held.
        unsafe {
            #[cfg(feature = "lifo")]
            if p.config.queue_order == QueueOrder::Lifo {
                p.list.push_newest(node, waker);
                p.waiting += 1;
                self.waiters += 1;
                return Ok(());
            }
            p.list.push_back(node, waker);
        }
        p.waiting += 1;
        self.waiters += 1;
        Ok(())
    }

    /// Unlinks `node` of partition `i` when its owner gives up, if it is
    /// still linked; returns its status afterwards (`Idle` if it was
    /// unlinked now) and its waker, to drop after unlocking.
    ///
    /// # Safety
    /// `node` is the caller's, and was linked into partition `i`'s line.
    pub(crate) unsafe fn leave(
        &mut self,
        i: usize,
        node: NonNull<Node>,
    ) -> (Status, Option<Waker>) {
        // SAFETY: the owner's node is valid.
        let status = unsafe { node.as_ref() }.status.get();
        if !status.is_linked() {
            return (status, None);
        }
        let p = &mut self.parts[i];
        // SAFETY: linked in this partition's list (the caller's contract).
        let waker = unsafe { p.list.remove(node) };
        // SAFETY: just unlinked, by its owner.
        unsafe { node.as_ref().status.leave() };
        p.waiting -= 1;
        self.waiters -= 1;
        (Status::Idle, waker)
    }

    /// Rule 4, and the verdicts a closed compartment or a shrunk limit
    /// owe: hands verdicts to waiters until none is owed or `wake` is full.
    /// Returns whether it stopped because `wake` is full (the caller then
    /// unlocks, wakes, and serves again).
    #[inline]
    pub(crate) fn serve(&mut self, wake: &mut Wakers) -> bool {
        // Nobody waits in most sections of an uncontended compartment:
        // checked inline, the search out of line.
        if self.waiters == 0 {
            return false;
        }
        self.serve_waiters(wake)
    }

    /// [`serve`](Self::serve), with somebody waiting.
    #[inline(never)]
    fn serve_waiters(&mut self, wake: &mut Wakers) -> bool {
        loop {
            if self.waiters == 0 {
                return false;
            }
            if wake.is_full() {
                return true;
            }
            let n = self.parts.len();
            if self.closed {
                let Some(i) = (0..n).find(|&i| self.parts[i].waiting > 0) else {
                    return false;
                };
                let (node, _) = self.head(i).expect("a counted waiter is linked");
                // SAFETY: the head is linked in partition `i`'s list.
                self.verdict(i, node, Status::Closed, wake);
                continue;
            }
            // Refuse heads that can never fit (a shrunk limit).
            if let Some((i, node)) = (0..n).find_map(|i| {
                let (node, w) = self.head(i)?;
                self.oversized(i, w).then_some((i, node))
            }) {
                self.parts[i].rejected += 1;
                self.verdict(i, node, Status::Oversized, wake);
                continue;
            }
            // The guaranteed lane, then the best eligible head.
            let mut lane: Option<(usize, (bool, u8))> = None;
            let mut best: Option<(usize, (bool, u8))> = None;
            for k in 0..n {
                let i = (self.turn + k) % n;
                let Some((_, w)) = self.head(i) else { continue };
                let rank = self.rank(i);
                if self.within_share(i, w) && self.fits(i, w) && lane.is_none_or(|(_, r)| rank > r)
                {
                    lane = Some((i, rank));
                }
                if self.eligible(i, w) && best.is_none_or(|(_, r)| rank > r) {
                    best = Some((i, rank));
                }
            }
            let chosen = match (lane, best) {
                (Some((i, _)), _) => i,
                (None, Some((i, _))) => {
                    let (_, w) = self.head(i).expect("chosen from a head");
                    if !self.fits(i, w) {
                        return false;
                    }
                    i
                }
                (None, None) => return false,
            };
            let (node, w) = self.head(chosen).expect("chosen from a head");
            self.take(chosen, w);
            self.verdict(chosen, node, Status::Granted, wake);
            self.turn = (chosen + 1) % n;
        }
    }

    /// Unlinks the head `node` of partition `i` and stores `status`, its
    /// final verdict, as the last touch of the node.
    fn verdict(&mut self, i: usize, node: NonNull<Node>, status: Status, wake: &mut Wakers) {
        let p = &mut self.parts[i];
        // SAFETY: `node` is the head of this partition's list, hence linked
        // and valid; the lock is held.
        let waker = unsafe { p.list.remove(node) };
        p.waiting -= 1;
        self.waiters -= 1;
        // SAFETY: just unlinked; storing the verdict is the last touch.
        unsafe {
            let cell = &node.as_ref().status;
            match status {
                Status::Granted => cell.grant(),
                Status::Closed => cell.close(),
                other => cell.refuse(other),
            }
        }
        push(wake, waker);
    }

    /// Shuttle builds only: hands every partition's view, as it stands
    /// before partition `i` takes `w` seats, to the observer, if one is set.
    #[cfg(bulkhead_shuttle)]
    fn observe(&mut self, i: usize, w: usize) {
        let Some(observer) = self.observer else {
            return;
        };
        let mut views: Vec<SectionView, MAX_PARTITIONS> = Vec::new();
        for i in 0..self.parts.len() {
            let head = self.head(i).map(|(_, w)| w);
            let p = &self.parts[i];
            let _ = views.push(SectionView {
                limit: self.limit,
                share: p.resolved.share,
                reserved: p.resolved.reserved,
                may_hold: p.resolved.may_hold,
                priority: p.config.priority,
                active: p.active,
                waiting: p.waiting,
                head,
            });
        }
        observer(&views, i, w);
    }

    /// Seats partition `i` lends to others now: of the seats borrowed
    /// beyond every share, those the unclaimed seats do not cover are
    /// counted against the lenders' idle lendable shares, in declaration
    /// order.
    pub(crate) fn lent(&self, i: usize) -> usize {
        let shares: usize = self.parts.iter().map(|p| p.resolved.share).sum();
        let borrowed: usize = self
            .parts
            .iter()
            .map(|p| p.active.saturating_sub(p.resolved.share))
            .sum();
        let mut owed = borrowed.saturating_sub(self.limit.saturating_sub(shares));
        for (j, p) in self.parts.iter().enumerate() {
            let idle_lendable = (p.resolved.share - p.resolved.reserved).saturating_sub(
                p.active
                    .saturating_sub(p.resolved.reserved)
                    .min(p.resolved.share),
            );
            let lends = idle_lendable.min(owed);
            if j == i {
                return lends;
            }
            owed -= lends;
        }
        0
    }
}

/// Keeps `waker` to wake after unlocking; a node always has one while
/// linked, and a section hands out at most `BATCH` verdicts.
fn push(wake: &mut Wakers, waker: Option<Waker>) {
    if let Some(waker) = waker {
        let overflow = wake.push_back(waker);
        debug_assert!(overflow.is_ok(), "inconsistent state: a full waker batch");
    }
}
