//! The state machine behind [`Bulkhead`]: lock sections, hand-off and the
//! delegated release. All of core's lock-related reasoning lives here.
//!
//! # The rules this file keeps
//!
//! 1. **No lost wake-up between "a release fails to take the lock" and "the
//!    holder unlocks".** A release that finds waiters adds its seat with an
//!    RMW that acquires, and then *tries* the lock. If the try fails, the
//!    holder will re-check after unlocking, and that re-check is itself an
//!    RMW on the same atomic (`fetch_add(0)`) that releases. Two RMWs on one
//!    atomic are totally ordered, so either the holder's re-check sees the
//!    seat, or the release's RMW reads the re-check's write, which makes the
//!    holder's unlock happen-before the release's try, and that try then
//!    succeeds (the lock contract forbids spurious failure). Plain loads
//!    would allow the store-buffer outcome where both sides miss. In barging
//!    mode the same pair of RMWs runs on the owed count. Every ordering in
//!    this file is argued in docs/design.md ("Memory orderings").
//! 2. **A verdict is the last touch of a node.** The drainer unlinks a node
//!    and takes its waker *before* storing `GRANTED`/`CLOSED` with
//!    `Release`, because the owner may see that store without the lock and
//!    free the node at once.
//! 3. **No foreign code under the lock.** Wakers are cloned before locking;
//!    replaced wakers are dropped and taken wakers are woken after
//!    unlocking, by [`Batch`]'s `Drop`, which also runs while unwinding.
//! 4. **Never re-enter the lock.** Giving back a seat from inside a section
//!    adds it to the word and lets that same section's drain hand it on.
//! 5. **`WAITERS` is exact under the lock.** It is set in the same CAS that
//!    fails to take a free seat, before the node is linked (so a release
//!    that races it either sees the flag or leaves a seat the CAS sees),
//!    and cleared in the same CAS that grants the last node, or when the
//!    last node leaves.
//! 6. **Every section ends with a drain and a re-check**, so no section can
//!    swallow a release that failed to take the lock while it ran.

use core::ptr::NonNull;
use core::task::Waker;

use heapless::Deque;

use crate::bulkhead::Bulkhead;
use crate::config::Admission;
use crate::error::Error;
use crate::list::{self, List, Node};
use crate::lock::RawLock;
use crate::sync::Ordering::{AcqRel, Acquire, Relaxed, Release};
use crate::word::{self, CLOSED, ONE, WAITERS};

/// How many wakers one lock section collects before it unlocks to wake
/// them. Bounds both the time spent under the lock and the stack used.
/// loom builds use 2, so that its models, which have at most three
/// threads, reach a full batch and `finish`'s re-drain.
const BATCH: usize = if cfg!(bulkhead_loom) { 2 } else { 8 };

/// Wakers collected under the lock, woken after it, followed by the
/// re-check of rule 1. Everything happens in `Drop`, so a panicking waker
/// or a panic inside a section cannot skip either.
pub(crate) struct Batch<'a, L: RawLock> {
    bulkhead: &'a Bulkhead<L>,
    wake: Deque<Waker, BATCH>,
    /// Wakers replaced or removed under the lock; dropped after it, since
    /// dropping a waker runs foreign code. A section discards at most two.
    stale: Deque<Waker, 2>,
}

impl<'a, L: RawLock> Batch<'a, L> {
    fn new(bulkhead: &'a Bulkhead<L>) -> Self {
        Self {
            bulkhead,
            wake: Deque::new(),
            stale: Deque::new(),
        }
    }

    /// Keeps `waker` to drop after the lock is released.
    fn discard(&mut self, waker: Option<Waker>) {
        if let Some(waker) = waker {
            let overflow = self.stale.push_back(waker);
            debug_assert!(
                overflow.is_ok(),
                "inconsistent state: more than two stale wakers"
            );
        }
    }

    /// Wakes everything collected, then re-checks and drains until nothing
    /// is owed or another thread holds the lock (that thread then owns the
    /// re-check). Lock-free but not wait-free: one thread may drain for
    /// others under a stream of releases. Capping the loop would lose
    /// wake-ups, so it is not capped.
    fn finish(&mut self) {
        /// Resumes `finish` if a waker (foreign code) panics, so that the
        /// rest of the batch is still woken and the re-check still runs.
        struct OnUnwind<'b, 'a, L: RawLock>(&'b mut Batch<'a, L>);
        impl<L: RawLock> Drop for OnUnwind<'_, '_, L> {
            fn drop(&mut self) {
                self.0.finish();
            }
        }

        loop {
            while let Some(stale) = self.stale.pop_front() {
                let guard = OnUnwind(self);
                drop(stale);
                core::mem::forget(guard);
            }
            while let Some(waker) = self.wake.pop_front() {
                let guard = OnUnwind(self);
                waker.wake();
                core::mem::forget(guard);
            }
            if !self.bulkhead.drain_owed() {
                return;
            }
            if !self.bulkhead.try_section(self) {
                return;
            }
        }
    }
}

impl<L: RawLock> Drop for Batch<'_, L> {
    fn drop(&mut self) {
        self.finish();
    }
}

/// What the slow path of an acquire decided.
pub(crate) enum Enqueued {
    /// A free seat was taken; the node was not linked.
    Seated,
    /// The node is linked and waits for a verdict.
    Linked,
}

/// What the owner of a linked node learned when it gave up waiting.
pub(crate) enum Abandoned {
    /// Unlinked in time: no seat was handed to it.
    Unlinked,
    /// A seat had already been handed over; it now belongs to the caller.
    Granted,
    /// The compartment closed first.
    Closed,
}

impl<L: RawLock> Bulkhead<L> {
    /// Runs `f` with the lock held and the list in hand, drains, unlocks,
    /// then wakes and re-checks (rules 3 and 6). `f` must not call foreign
    /// code and must not panic.
    pub(crate) fn with_list<R>(&self, f: impl FnOnce(&mut List, &mut Batch<'_, L>) -> R) -> R {
        let mut batch = Batch::new(self);
        // SAFETY: core is the only caller of its compartment's lock, and
        // `section` runs inside it.
        unsafe { self.lock.with_lock(|| self.section(&mut batch, f)) }
        // `batch` drops here, after the unlock: wake, then re-check.
    }

    /// Runs a section that only drains, if the lock is free right now;
    /// returns whether it ran. If it did not, the holder re-checks after
    /// unlocking (rule 1).
    fn try_section(&self, batch: &mut Batch<'_, L>) -> bool {
        // SAFETY: core is the only caller of its compartment's lock, and
        // `section` runs inside it.
        unsafe {
            self.lock
                .try_with_lock(|| self.section(batch, |_, _| ()))
                .is_some()
        }
    }

    /// Reads the list under the lock, without draining; for tests that
    /// check internal invariants.
    #[cfg(test)]
    pub(crate) fn inspect_list<R>(&self, f: impl FnOnce(&List) -> R) -> R {
        // SAFETY: core's own test is the caller; the list is only read.
        unsafe {
            self.lock.with_lock(|| {
                // SAFETY: the lock is held.
                self.list.with_mut(|list| f(&*list))
            })
        }
    }

    /// The body of every lock section: `f`, then the drain (rule 6).
    ///
    /// # Safety
    /// The lock is held (only `with_list` and `try_section` call it).
    unsafe fn section<R>(
        &self,
        batch: &mut Batch<'_, L>,
        f: impl FnOnce(&mut List, &mut Batch<'_, L>) -> R,
    ) -> R {
        self.list.with_mut(|list| {
            // SAFETY: the lock is held (the caller's contract), so this is
            // the only access to the list.
            let list = unsafe { &mut *list };
            let r = f(list, batch);
            self.drain_locked(list, batch);
            r
        })
    }

    /// The fast path: one CAS when a seat is free and, in FIFO mode, nobody
    /// waits. Never touches the lock. `Acquire` on success pairs with the
    /// `Release` half of the release that freed the seat (bug class 15 in
    /// docs/bug-classes.md).
    #[inline]
    pub(crate) fn try_take(&self) -> Result<(), Refusal> {
        let mut w = self.word.load(Relaxed);
        loop {
            if w & CLOSED != 0 {
                return Err(Refusal::Closed);
            }
            if word::available(w) <= 0 || (self.fifo() && w & WAITERS != 0) {
                return Err(Refusal::Full);
            }
            match self
                .word
                .compare_exchange_weak(w, w - ONE, Acquire, Relaxed)
            {
                Ok(_) => return Ok(()),
                Err(actual) => w = actual,
            }
        }
    }

    /// Gives one seat back. With no waiter this is one RMW and no lock.
    /// With waiters, it tries the lock to hand the seat on; if the lock is
    /// busy it returns at once and the holder hands the seat on instead
    /// (rule 1). Safe in `Drop`, while unwinding, and in an interrupt
    /// handler whose lock is a critical section.
    #[inline]
    pub(crate) fn release(&self) {
        if self.add_seats(1) {
            self.try_drain();
        }
    }

    /// Adds `n` seats to the word; in barging mode also owes one wake-up per
    /// seat if anyone waits. Returns whether anyone waited. Both RMWs are
    /// `AcqRel`: the release half publishes the holder's work (to the next
    /// holder through the word, to the drainer that notifies a barging
    /// waiter through the owed count); the acquire half is rule 1's.
    ///
    /// `n >= 1`: adding nothing needs no RMW, and rule 1's argument is about
    /// a release that really frees a seat.
    pub(crate) fn add_seats(&self, n: usize) -> bool {
        debug_assert!(n >= 1, "add_seats(0) is a wasted RMW");
        let prev = self.word.fetch_add(word::seats(n), AcqRel);
        // Free seats never exceed the limit: each one was held before, or
        // added by a grow that stays within `MAX_CONCURRENT_LIMIT`. More
        // means a seat was given back twice (the field would overflow
        // eventually).
        debug_assert!(
            word::available(prev) + n as isize <= word::MAX_CONCURRENT_LIMIT as isize,
            "inconsistent state: more seats released than the compartment has"
        );
        let waiters = prev & WAITERS != 0;
        if waiters && !self.fifo() {
            self.owed.fetch_add(n, AcqRel);
        }
        waiters
    }

    /// Hands free seats on if the lock is free; otherwise the holder will.
    fn try_drain(&self) {
        let mut batch = Batch::new(self);
        self.try_section(&mut batch);
        // `batch` drops here: wake, then re-check.
    }

    /// Rule 1's re-check: whether a drain may be owed. The RMWs are what
    /// order this check against a release that failed to take the lock.
    /// `Release`: a release whose RMW reads this one's write must see this
    /// thread's unlock. No `Acquire`: this thread takes no seat on the
    /// strength of what it reads here (every taker's CAS acquires), and if
    /// its own try then fails, the section it sees running began after its
    /// own ended and drains what it saw (docs/design.md).
    fn drain_owed(&self) -> bool {
        let w = self.word.fetch_add(0, Release);
        if w & WAITERS == 0 {
            // Nobody waits; in barging mode a drain still clears stale owed
            // wake-ups so that they are not handed to a later waiter.
            return !self.fifo() && self.owed.fetch_add(0, Release) != 0;
        }
        w & CLOSED != 0
            || if self.fifo() {
                word::available(w) > 0
            } else {
                self.owed.fetch_add(0, Release) != 0
            }
    }

    /// Hands seats to waiters, or `Closed` verdicts once the compartment is
    /// closed, until seats, waiters or room in the batch run out.
    fn drain_locked(&self, list: &mut List, batch: &mut Batch<'_, L>) {
        if self.fifo() {
            self.drain_fifo(list, batch);
        } else {
            self.drain_barging(list, batch);
        }
        self.waiting.store(list.len(), Relaxed);
    }

    fn drain_fifo(&self, list: &mut List, batch: &mut Batch<'_, L>) {
        while !batch.wake.is_full() {
            let Some(node) = list.front() else { return };
            let last = list.len() == 1;
            let mut w = self.word.load(Relaxed);
            let verdict = loop {
                if w & CLOSED != 0 {
                    break list::CLOSED;
                }
                if word::available(w) <= 0 {
                    return;
                }
                // Reserve the seat for `node`, and clear WAITERS in the same
                // CAS if it is the last waiter (rule 5). `Acquire`: the
                // releaser's work; the verdict's `Release` store passes it
                // on to the owner, so the CAS itself releases nothing.
                let new = if last { (w - ONE) & !WAITERS } else { w - ONE };
                match self.word.compare_exchange_weak(w, new, Acquire, Relaxed) {
                    Ok(_) => break list::GRANTED,
                    Err(actual) => w = actual,
                }
            };
            self.hand_verdict(list, node, verdict, batch);
        }
    }

    fn drain_barging(&self, list: &mut List, batch: &mut Batch<'_, L>) {
        // `CLOSED` is only set under the lock, so this load is exact and
        // needs no ordering of its own.
        if self.word.load(Relaxed) & CLOSED != 0 {
            // Owed wake-ups die with the compartment: every waiter gets a
            // `Closed` verdict instead. Left standing, they would make
            // `drain_owed` ask for another drain forever.
            self.owed.store(0, Relaxed);
            while !batch.wake.is_full() {
                let Some(node) = list.front() else { return };
                self.hand_verdict(list, node, list::CLOSED, batch);
            }
            return;
        }
        // `Acquire`: pairs with the release's owed `fetch_add`, so the seat
        // it freed happens-before the notified waiter's re-poll, whose
        // `take_locked` must not read a word from before that seat.
        let mut owed = self.owed.swap(0, Acquire);
        let mut cursor = list.front();
        while owed > 0 {
            let Some(node) = cursor else { break };
            // SAFETY: `node` is linked in `list`.
            cursor = unsafe { list.next(node) };
            // SAFETY: linked nodes are valid; status only changes under the
            // lock, which we hold.
            if unsafe { node.as_ref() }.status() != list::WAITING {
                continue;
            }
            if batch.wake.is_full() {
                // Put the rest back; `finish` drains again after waking.
                // Under the lock; the next section takes them back.
                self.owed.fetch_add(owed, Relaxed);
                return;
            }
            // SAFETY: `node` is linked in `list`; it stays linked, so its
            // owner cannot free it until it takes the lock itself.
            if let Some(waker) = unsafe { list.take_waker(node) } {
                let _ = batch.wake.push_back(waker);
            }
            // SAFETY: valid, linked node; not a final verdict.
            unsafe { list::set_status(node, list::NOTIFIED) };
            owed -= 1;
        }
        // Wake-ups owed beyond the un-notified waiters are dropped: every
        // waiter is then notified and will compete for the free seats.
    }

    /// Unlinks `node`, queues its waker, and publishes `verdict` as the last
    /// touch (rule 2).
    fn hand_verdict(
        &self,
        list: &mut List,
        node: NonNull<Node>,
        verdict: u8,
        batch: &mut Batch<'_, L>,
    ) {
        // SAFETY: callers pass a node linked in `list`.
        let waker = unsafe { list.remove(node) };
        if list.is_empty() && verdict == list::CLOSED {
            // Under the lock; an RMW, so it continues the release sequences
            // of the seats in the word and needs no ordering of its own.
            self.word.fetch_and(!WAITERS, Relaxed);
        }
        if let Some(waker) = waker {
            // Cannot fail: callers stop while the batch is full.
            let _ = batch.wake.push_back(waker);
        }
        // SAFETY: `node` is still valid: its owner has not seen a final
        // verdict. Nothing touches it after this store.
        unsafe { list::set_status(node, verdict) };
    }

    /// The slow path of an acquire, for a node that is not linked: take a
    /// free seat, or publish `WAITERS` and link the node, in one CAS loop
    /// under the lock, so a concurrent release either sees the flag or
    /// leaves a seat that this loop sees (bug class 3 in docs/bug-classes.md).
    pub(crate) fn enqueue(&self, node: NonNull<Node>, waker: Waker) -> Result<Enqueued, Error> {
        self.with_list(|list, batch| {
            // `Relaxed`: a seat is only taken by the CAS below, which
            // acquires; `CLOSED` and `WAITERS` are exact under the lock.
            let mut w = self.word.load(Relaxed);
            loop {
                if w & CLOSED != 0 {
                    batch.discard(Some(waker));
                    return Err(self.closed_error());
                }
                let may_take = !self.fifo() || w & WAITERS == 0;
                if may_take && word::available(w) > 0 {
                    // `Acquire`, as on the fast path: the only ordering on
                    // this path that relates the releaser's work to ours.
                    match self
                        .word
                        .compare_exchange_weak(w, w - ONE, Acquire, Relaxed)
                    {
                        Ok(_) => {
                            batch.discard(Some(waker));
                            // Mark the seat as the node's before anything
                            // can panic (the batch wakes foreign wakers), so
                            // the owner's `Drop` gives it back.
                            // SAFETY: the caller owns the unlinked node.
                            unsafe { list::set_status(node, list::GRANTED) };
                            return Ok(Enqueued::Seated);
                        }
                        Err(actual) => {
                            w = actual;
                            continue;
                        }
                    }
                }
                if list.len() >= self.max_waiting.load(Relaxed) {
                    batch.discard(Some(waker));
                    // Counted by the caller, after the lock: the adapter's
                    // rejection hook is foreign code.
                    return Err(Error::QueueFull {
                        name: self.name,
                        max_waiting: self.max_waiting.load(Relaxed),
                    });
                }
                // Publish WAITERS before linking, in a CAS that fails if a
                // release freed a seat since `w` was read. `Relaxed`: it
                // takes no seat (a retry that does acquires in its own CAS),
                // and a release that reads the flag needs nothing from this
                // thread but the re-check of rule 1.
                if w & WAITERS == 0
                    && let Err(actual) =
                        self.word
                            .compare_exchange_weak(w, w | WAITERS, Relaxed, Relaxed)
                {
                    w = actual;
                    continue;
                }
                // SAFETY: the owner pinned the node, it is not linked, and
                // its `Drop` unlinks it before it is freed.
                unsafe { list.push_back(node, waker) };
                return Ok(Enqueued::Linked);
            }
        })
    }

    /// A poll of a linked node that has no final verdict yet: refresh its
    /// waker and, in barging mode, compete for a free seat. Returns whether
    /// the node took a seat (it is then unlinked and seated).
    pub(crate) fn repoll(&self, node: NonNull<Node>, waker: Waker) -> bool {
        self.with_list(|list, batch| {
            // SAFETY: the owner keeps `node` valid; under the lock its
            // status is stable.
            let status = unsafe { node.as_ref() }.status();
            if status != list::WAITING && status != list::NOTIFIED {
                batch.discard(Some(waker));
                return false;
            }
            if !self.fifo() && self.take_locked(list, node, batch) {
                batch.discard(Some(waker));
                return true;
            }
            // SAFETY: `node` is linked (status WAITING or NOTIFIED).
            unsafe {
                batch.discard(list.refresh_waker(node, waker));
                // Lost the race for the seat it was woken for: wait again
                // for the next notification.
                list::set_status(node, list::WAITING);
            }
            false
        })
    }

    /// Barging: takes a free seat for a linked `node` and unlinks it.
    fn take_locked(&self, list: &mut List, node: NonNull<Node>, batch: &mut Batch<'_, L>) -> bool {
        let mut w = self.word.load(Relaxed);
        loop {
            if word::available(w) <= 0 || w & CLOSED != 0 {
                return false;
            }
            let new = if list.len() == 1 {
                (w - ONE) & !WAITERS
            } else {
                w - ONE
            };
            // `Acquire`: the seat's releaser may have failed its try while
            // this section held the lock, so nothing else orders its work
            // before this waiter's.
            match self.word.compare_exchange_weak(w, new, Acquire, Relaxed) {
                Ok(_) => break,
                Err(actual) => w = actual,
            }
        }
        // SAFETY: `node` is linked in `list`.
        batch.discard(unsafe { list.remove(node) });
        // GRANTED, not IDLE: if waking the batch panics before the owner
        // learns it took a seat, its `Drop` still gives the seat back.
        // SAFETY: the caller owns `node`.
        unsafe { list::set_status(node, list::GRANTED) };
        true
    }

    /// The owner of a linked node stops waiting (drop, timeout). Decided in
    /// one lock section, so a seat handed over at that very moment is either
    /// seen as granted or never handed: never lost, never counted twice
    /// (bug class 2 in docs/bug-classes.md).
    pub(crate) fn abandon(&self, node: NonNull<Node>) -> Abandoned {
        // SAFETY: the owner keeps `node` valid. A final verdict is only ever
        // stored once, so seeing it without the lock is conclusive; and only
        // the owner moves a node out of IDLE, so IDLE is conclusive too.
        match unsafe { node.as_ref() }.status() {
            list::GRANTED => return Abandoned::Granted,
            list::CLOSED => return Abandoned::Closed,
            // Never linked (a panic cut `enqueue` short before it), or
            // already unlinked by an earlier `abandon` that then unwound.
            // No lock needed, so a lock that refuses to lock here cannot
            // turn this into an abort.
            list::IDLE => return Abandoned::Unlinked,
            _ => {}
        }
        self.with_list(|list, batch| {
            // SAFETY: as above; under the lock the status is stable.
            let status = unsafe { node.as_ref() }.status();
            match status {
                list::GRANTED => return Abandoned::Granted,
                list::CLOSED => return Abandoned::Closed,
                _ => {}
            }
            // SAFETY: WAITING or NOTIFIED nodes are linked in `list`.
            batch.discard(unsafe { list.remove(node) });
            if list.is_empty() {
                // As in `hand_verdict`: under the lock, no ordering needed.
                self.word.fetch_and(!WAITERS, Relaxed);
            }
            if status == list::NOTIFIED {
                // Pass the notification on (embassy #6964): this section's
                // drain gives it to the next waiter. Under the lock: the
                // seat it stands for already happens-before this section.
                self.owed.fetch_add(1, Relaxed);
            }
            // SAFETY: the caller owns `node`.
            unsafe { list::set_status(node, list::IDLE) };
            Abandoned::Unlinked
        })
    }

    pub(crate) fn closed_error(&self) -> Error {
        Error::Closed { name: self.name }
    }

    #[inline(always)]
    pub(crate) fn fifo(&self) -> bool {
        matches!(self.admission, Admission::Fifo)
    }
}

/// Why the fast path did not take a seat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    Full,
    Closed,
}
