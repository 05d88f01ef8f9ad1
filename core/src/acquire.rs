//! The futures that wait for a seat.

use core::fmt;
use core::pin::Pin;
use core::ptr::NonNull;
use core::task::{Context, Poll};
use core::time::Duration;

use crate::engine::{Abandoned, Engine, Enqueued, Refusal};
use crate::error::Error;
use crate::list::Node;
use crate::lock::RawLock;
use crate::max_wait::MaxWait;
use crate::seat::{Seat, check_weight};
use crate::status::{REFUSALS, Status};
use crate::weight::Weight;

/// Where the future is; together with the node's [`Status`] it says what a
/// poll or a drop must do. Every combination, and why the others cannot
/// happen:
///
/// | phase | status | meaning | poll | drop |
/// |---|---|---|---|---|
/// | `Start` | `Idle` | not polled yet | fast path, then `enqueue` | nothing |
/// | `Queued` | `Idle` | a panic cut `enqueue` short before it linked the node or reported | start over | nothing (no lock) |
/// | `Queued` | `Waiting`, `Notified` | linked | `repoll` | `abandon` (unlink) |
/// | `Queued` | `Granted` | a seat is ours, not read yet | `Ok(seat)` | give the seat back |
/// | `Queued` | `Closed` | closed, not read yet | `Err(Closed)` | nothing |
/// | `Done` | any but linked | finished; the node is inert | panic | nothing |
///
/// `Start` with any other status is impossible: only `start` changes the
/// status, and it moves to `Queued` first. `Done` with a linked status is
/// impossible: `Done` is set after reading a verdict (the node is not
/// linked), by a fail-fast take straight from `Start` (`take_now`: the
/// node is never linked), after `enqueue` returned without linking, or by `give_up` once
/// `abandon` has unlinked the node (`SettleOnUnwind` unlinks it or aborts
/// if `abandon` unwinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Not polled yet; the node is not linked.
    Start,
    /// The node is linked, or has a verdict the future has not read yet,
    /// or a panic cut `enqueue` short (`Idle`).
    Queued,
    /// The future returned its result, or gave up; the node is inert.
    Done,
}

/// Waits for a seat in a [`Bulkhead`](crate::Bulkhead). Returned by
/// [`Bulkhead::acquire`](crate::Bulkhead::acquire).
///
/// Resolves to a [`Seat`], or to [`Error::Closed`] or [`Error::QueueFull`]
/// (also when a full newest-first queue drops it), and for a weighted wait
/// to [`Error::ZeroWeight`] or [`Error::WeightAboveLimit`].
///
/// # Cancel safety
///
/// Dropping it at any point loses nothing: if it waited, it leaves the
/// line; if a seat had already been handed to it, the seat goes to the next
/// waiter. [`abandon`](Acquire::abandon) stops waiting but keeps a seat
/// that was handed over.
///
/// # Memory ordering
///
/// Everything the seat's previous holder did before giving it back
/// happens-before everything done after this future resolves to `Ok`,
/// whether the seat was free or handed over. An `Err` promises no
/// ordering. The precise orderings are in
/// [`Bulkhead`](crate::Bulkhead#memory-ordering).
///
/// # Leaking
///
/// Leaking a future (`mem::forget` of a pinned box) is memory-safe: its node
/// is never freed, so the list's pointer to it stays valid. But whatever
/// was handed to it is leaked with it. In FIFO mode the waiter keeps its
/// place, and the seat handed to it when it reaches the head is gone for
/// good (the compartment has one seat fewer). In barging mode a leaked
/// waiter that was woken counts as about to compete for a free seat for
/// good: the seat stays free, so an arrival or a re-polled waiter takes it,
/// but waiters are woken as if the compartment had one seat fewer (a
/// release skips waking anyone while woken waiters cover the free seats,
/// and the leaked one always counts). A leaked waiter is
/// indistinguishable from a slow one, so neither can be taken back.
///
/// # Pinning
///
/// It holds the intrusive list node, so it is `!Unpin` and must be pinned
/// (`core::pin::pin!`, `Box::pin`, or `.await`) before it is polled. Moving
/// it before the first poll is fine: the node is linked on the first poll.
///
/// ```compile_fail
/// # use bulkhead_core::{Bulkhead, CsLock};
/// fn assert_unpin<T: Unpin>(_: &T) {}
/// let b: Bulkhead<CsLock> = Bulkhead::new("x", 1).unwrap();
/// assert_unpin(&b.acquire()); // error: `PhantomPinned` cannot be unpinned
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct Acquire<'a, L: RawLock> {
    /// The compartment's state; [`bulkhead`](Self::bulkhead) names the
    /// compartment itself.
    engine: &'a Engine<L>,
    node: Node,
    phase: Phase,
    /// Whether the node was ever linked (see [`has_queued`](Self::has_queued)).
    queued: bool,
    /// The bits of the weight asked for above the node's 32, so that a
    /// weight too large for any limit is reported as asked. In the padding
    /// after the two fields above: the future does not grow.
    #[cfg(all(feature = "weights", target_pointer_width = "64"))]
    weight_high: u32,
}

// SAFETY: the node's raw links are only touched under the compartment's
// lock, so moving the future (before pinning) or polling it on another
// thread is fine whenever the compartment may be shared.
unsafe impl<L: RawLock + Sync> Send for Acquire<'_, L> {}
// SAFETY: `&Acquire` exposes nothing; all access goes through `Pin<&mut>`.
unsafe impl<L: RawLock + Sync> Sync for Acquire<'_, L> {}

impl<'a, L: RawLock> Acquire<'a, L> {
    /// A wait for `weight` seats at once (1 without the `weights`
    /// feature). A weight of 0 or above any limit is refused at the first
    /// poll.
    pub(crate) fn new(engine: &'a Engine<L>, weight: usize) -> Self {
        #[cfg(not(feature = "weights"))]
        debug_assert_eq!(weight, 1, "only one seat at a time without `weights`");
        Self {
            engine,
            // The low 32 bits; `weight()` puts the rest back.
            #[cfg(feature = "weights")]
            node: Node::new(Weight::new(weight as u32)),
            #[cfg(not(feature = "weights"))]
            node: Node::new(Weight::ONE),
            phase: Phase::Start,
            queued: false,
            #[cfg(all(feature = "weights", target_pointer_width = "64"))]
            weight_high: (weight as u64 >> 32) as u32,
        }
    }

    /// The weight asked for, whole.
    #[inline(always)]
    fn weight(&self) -> usize {
        #[cfg(all(feature = "weights", target_pointer_width = "64"))]
        {
            (self.weight_high as usize) << 32 | self.node.weight.seats()
        }
        #[cfg(not(all(feature = "weights", target_pointer_width = "64")))]
        {
            self.node.weight.seats()
        }
    }

    /// The compartment's state.
    pub(crate) fn engine(&self) -> &'a Engine<L> {
        self.engine
    }

    /// Whether this wait joined the line: a poll linked its node. It
    /// stays true once the future has resolved, timed out or been
    /// abandoned. A wait that took a free seat without linking (on the
    /// fast path, or under the lock) or was refused did not queue.
    ///
    /// A wait can queue and get its seat in the same poll (a seat freed
    /// while it was linking is handed to it before that poll returns), so
    /// "the first poll returned `Pending`" does not tell every wait that
    /// queued; this does. Adapters that time waits use it.
    pub fn has_queued(&self) -> bool {
        self.queued
    }

    /// Stops waiting. Returns the seat if one had already been handed to
    /// this waiter, which is then the caller's to use or drop; `None` if the
    /// waiter left the line without one (or the compartment closed).
    ///
    /// The decision is made in one step under the lock, so a seat handed
    /// over concurrently is never lost and never counted twice. After this
    /// call the future is finished: polling it again panics.
    ///
    /// This is what bounded waits are built from: poll until the deadline,
    /// then `abandon`.
    pub fn abandon(self: Pin<&mut Self>) -> Option<Seat<'a, L>> {
        // SAFETY: nothing is moved out of `this`; the node stays in place.
        let this = unsafe { self.get_unchecked_mut() };
        match this.give_up() {
            Some(Abandoned::Granted) => Some(Seat::new(this.engine, this.node.weight)),
            _ => None,
        }
    }

    /// Gives up after a wait budget ran out: returns the seat if one was
    /// handed over in the meantime, otherwise [`Error::Timeout`] (counted in
    /// [`State::timed_out`](crate::State::timed_out)), or [`Error::Closed`]
    /// if the compartment closed first. Like [`abandon`](Self::abandon), it
    /// decides in one step and finishes the future.
    ///
    /// Adapters build their bounded waits from it; [`AcquireTimeout`] is the
    /// same for a timer future.
    pub fn time_out(self: Pin<&mut Self>, budget: Duration) -> Result<Seat<'a, L>, Error> {
        // SAFETY: nothing is moved out of `this`; the node stays in place.
        let this = unsafe { self.get_unchecked_mut() };
        match this.give_up() {
            Some(Abandoned::Granted) => Ok(Seat::new(this.engine, this.node.weight)),
            Some(Abandoned::Closed) => Err(this.engine.closed_error()),
            Some(Abandoned::Dropped) => Err(this.refusal(Status::Dropped)),
            Some(Abandoned::Oversized) => Err(this.refusal(Status::Oversized)),
            Some(Abandoned::Unlinked) | None => Err(this.engine.time_out(budget)),
        }
    }

    /// Leaves the line if queued; `None` if the node was never queued.
    /// Afterwards the future is `Done` and its node inert.
    ///
    /// If `abandon` unwinds (a panicking waker of another waiter, or a lock
    /// that panics before running its closure), [`SettleOnUnwind`] runs it
    /// once more while the panic unwinds: the node is unlinked before the
    /// future's memory can be freed, or, if the lock refuses again, that
    /// second panic aborts the process.
    fn give_up(&mut self) -> Option<Abandoned> {
        if self.phase != Phase::Queued {
            self.phase = Phase::Done;
            return None;
        }
        let node = self.node_ptr();
        let guard = SettleOnUnwind {
            engine: self.engine,
            node,
            phase: &mut self.phase,
        };
        let outcome = guard.engine.abandon(node);
        core::mem::forget(guard);
        self.phase = Phase::Done;
        if REFUSALS && matches!(outcome, Abandoned::Dropped | Abandoned::Oversized) {
            // Turned away while it waited: counted once, here, whichever
            // way the owner learns it.
            self.engine.count_rejection();
        }
        Some(outcome)
    }

    fn node_ptr(&mut self) -> NonNull<Node> {
        NonNull::from(&mut self.node)
    }
}

impl<'a, L: RawLock> Future for Acquire<'a, L> {
    type Output = Result<Seat<'a, L>, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: nothing is moved out of `this`; the node stays in place
        // until `Drop` has unlinked it.
        let this = unsafe { self.get_unchecked_mut() };
        match this.phase {
            Phase::Start => this.start(cx),
            Phase::Queued => {
                if let ready @ Poll::Ready(_) = this.poll_verdict() {
                    return ready;
                }
                if this.node.status.get() == Status::Idle {
                    // Queued but never linked: a panic (a stale waker's
                    // drop, or the lock) cut `enqueue` short before it
                    // linked the node or reported its outcome. IDLE only
                    // changes through the owner, so this read is stable:
                    // start over, which also counts a rejection that the
                    // panic swallowed.
                    return this.start(cx);
                }
                let engine = this.engine;
                let node = this.node_ptr();
                if engine.repoll(node, cx.waker().clone()) {
                    return this.seated();
                }
                this.poll_verdict()
            }
            Phase::Done => panic!("`Acquire` polled after it completed"),
        }
    }
}

impl<'a, L: RawLock> Acquire<'a, L> {
    /// The first poll (or a re-run after a cut-short one): the fast path,
    /// then `enqueue`.
    fn start(&mut self, cx: &mut Context<'_>) -> Poll<Result<Seat<'a, L>, Error>> {
        let engine = self.engine;
        let weight = match check_weight(engine, self.weight()) {
            Ok(weight) => weight,
            Err(e) => return self.refuse(e),
        };
        match engine.try_take(weight) {
            Ok(()) => return self.seated(),
            Err(Refusal::Closed) => return self.finish(Err(engine.closed_error())),
            Err(Refusal::Full) => {}
        }
        let waker = cx.waker().clone();
        // From here on the node may hold a seat or be linked, and a
        // panicking waker may unwind out of `enqueue`: `Drop` must clean up
        // whatever state the node is in, and a re-poll must carry on from
        // it.
        self.phase = Phase::Queued;
        let node = self.node_ptr();
        match engine.enqueue(node, waker) {
            Ok(Enqueued::Seated) => self.seated(),
            // A drain at the end of `enqueue`'s section may have granted
            // the node already.
            Ok(Enqueued::Linked) => {
                self.queued = true;
                self.poll_verdict()
            }
            Err(e) => self.refuse(e),
        }
    }

    /// The error of a node dropped from a full newest-first queue
    /// (`Dropped`) or refused as heavier than the limit (`Oversized`,
    /// which only a weighted wait can be).
    fn refusal(&self, status: Status) -> Error {
        if cfg!(feature = "weights") && status == Status::Oversized {
            self.engine.weight_above_limit(self.weight())
        } else {
            self.engine.queue_full_error()
        }
    }

    /// Finishes with `error`, counting it if it turned the caller away
    /// (`QueueFull`, `WeightAboveLimit`). Finished before the rejection
    /// hook (foreign code) runs: if it panics, the rejection is counted
    /// once, not again by a re-poll that starts over.
    fn refuse(&mut self, error: Error) -> Poll<Result<Seat<'a, L>, Error>> {
        let engine = self.engine;
        let counted = matches!(
            error,
            Error::QueueFull { .. } | Error::WeightAboveLimit { .. }
        );
        let done = self.finish(Err(error));
        if counted {
            engine.count_rejection();
        }
        done
    }

    fn finish(&mut self, result: Result<Seat<'a, L>, Error>) -> Poll<Result<Seat<'a, L>, Error>> {
        self.phase = Phase::Done;
        Poll::Ready(result)
    }

    /// Resolves to the seat this future now holds. `Done` comes first:
    /// `Seat::new` runs the lock's admission hook, and if that panics the
    /// unwinding `Seat` gives the seat back, so the future must no longer
    /// own it (a `Queued` future with a `Granted` node would give it back
    /// again when dropped).
    fn seated(&mut self) -> Poll<Result<Seat<'a, L>, Error>> {
        self.phase = Phase::Done;
        Poll::Ready(Ok(Seat::new(self.engine, self.node.weight)))
    }

    /// Reads a final verdict, if there is one. The seat of a `GRANTED` node
    /// was reserved by the drainer, so it is not counted again.
    fn poll_verdict(&mut self) -> Poll<Result<Seat<'a, L>, Error>> {
        let engine = self.engine;
        match self.node.status.get() {
            Status::Granted => self.seated(),
            Status::Closed => self.finish(Err(engine.closed_error())),
            // Only newest-first order drops, and only a weighted wait is
            // refused as oversized: without both features no node gets
            // either verdict, and the arm is left out.
            status @ (Status::Dropped | Status::Oversized) if REFUSALS => {
                let error = self.refusal(status);
                self.refuse(error)
            }
            _ => Poll::Pending,
        }
    }
}

impl<L: RawLock> Drop for Acquire<'_, L> {
    fn drop(&mut self) {
        if let Some(Abandoned::Granted) = self.give_up() {
            // The seat was ours; pass it on (bug class 1 in docs/bug-classes.md).
            self.engine.release(self.node.weight);
        }
    }
}

/// Settles a node whose `abandon` unwound, while the panic unwinds.
///
/// A panic that escapes a destructor running during unwinding aborts the
/// process, in `no_std` too. That is what this relies on: the future's
/// memory may be freed as soon as the unwind leaves it, so its node must be
/// unlinked first, and if the lock panics again (it cannot be unlinked),
/// aborting is the only sound outcome (bug class 8 in
/// docs/bug-classes.md). A seat found granted is given back: the caller
/// that would have received it is unwinding.
struct SettleOnUnwind<'p, 'a, L: RawLock> {
    engine: &'a Engine<L>,
    node: NonNull<Node>,
    phase: &'p mut Phase,
}

impl<L: RawLock> Drop for SettleOnUnwind<'_, '_, L> {
    fn drop(&mut self) {
        let outcome = self.engine.abandon(self.node);
        *self.phase = Phase::Done;
        if let Abandoned::Granted = outcome {
            // SAFETY: the node lives in the future being dropped, which
            // is still valid while this guard runs.
            self.engine.release(unsafe { self.node.as_ref() }.weight);
        }
    }
}

impl<L: RawLock> fmt::Debug for Acquire<'_, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acquire")
            .field("bulkhead", &self.engine.name())
            .field("phase", &self.phase)
            .finish()
    }
}

impl<'a, L: RawLock> Acquire<'a, L> {
    /// The verdict of a wait that may not wait (a fail-fast budget), at
    /// its first poll: as `try_acquire`. Finishes the future.
    fn take_now(&mut self) -> Result<Seat<'a, L>, Error> {
        assert!(
            self.phase == Phase::Start,
            "`Acquire` polled after it completed"
        );
        self.phase = Phase::Done;
        Seat::try_take(self.engine, self.weight())
    }
}

/// A wait that a budget can bound: [`Acquire`], and the owned wait built
/// on it. [`poll_bounded`] drives either under a [`MaxWait`].
pub(crate) trait Bounded: Future {
    /// The verdict without waiting, at the first poll (fail fast).
    fn try_now(self: Pin<&mut Self>) -> Self::Output;
    /// Gives up because the budget ran out.
    fn time_out(self: Pin<&mut Self>, budget: Duration) -> Self::Output;
}

impl<'a, L: RawLock> Bounded for Acquire<'a, L> {
    fn try_now(self: Pin<&mut Self>) -> Self::Output {
        // SAFETY: nothing is moved out of the future: `take_now` only
        // reads and sets its phase (a fail-fast wait never links its node).
        unsafe { self.get_unchecked_mut() }.take_now()
    }

    fn time_out(self: Pin<&mut Self>, budget: Duration) -> Self::Output {
        Acquire::time_out(self, budget)
    }
}

/// `max_wait` with a zero budget made `FailFast`: what a bounded wait
/// keeps, so that its poll tells the cases by the variant alone.
pub(crate) fn normalize(max_wait: MaxWait) -> MaxWait {
    match max_wait {
        MaxWait::UpTo(budget) => MaxWait::up_to(budget),
        other => other,
    }
}

/// The timer of a bounded wait: `sleep(budget)` for `UpTo(budget)`, none
/// otherwise (`sleep` is not called). `max_wait` is normalized.
pub(crate) fn timer<T>(max_wait: MaxWait, sleep: impl FnOnce(Duration) -> T) -> Option<T> {
    match max_wait {
        MaxWait::UpTo(budget) => Some(sleep(budget)),
        MaxWait::FailFast | MaxWait::Forever => None,
    }
}

/// One poll of `wait` under a normalized `max_wait`: fail fast, wait until
/// `timer` completes, or wait without one. A seat that arrives with the
/// timer wins: the wait is polled first, and `time_out` decides under the
/// lock.
pub(crate) fn poll_bounded<W: Bounded, T: Future>(
    mut wait: Pin<&mut W>,
    timer: Option<Pin<&mut T>>,
    max_wait: MaxWait,
    cx: &mut Context<'_>,
) -> Poll<W::Output> {
    if max_wait == MaxWait::FailFast {
        return Poll::Ready(wait.try_now());
    }
    if let ready @ Poll::Ready(_) = wait.as_mut().poll(cx) {
        return ready;
    }
    if let (MaxWait::UpTo(budget), Some(timer)) = (max_wait, timer)
        && timer.poll(cx).is_ready()
    {
        return Poll::Ready(wait.time_out(budget));
    }
    Poll::Pending
}

/// Waits for a seat at most a [`MaxWait`], on a timer the caller supplies.
/// Returned by [`Bulkhead::acquire_timeout`](crate::Bulkhead::acquire_timeout).
///
/// # Cancel safety
/// As [`Acquire`]: dropping it loses nothing. The timer is dropped with
/// it.
///
/// # Memory ordering
/// As [`Acquire`]: a seat obtained here is ordered after its previous
/// holder's work, also when it was handed over as the timer fired.
#[must_use = "futures do nothing unless polled"]
pub struct AcquireTimeout<'a, L: RawLock, T> {
    acquire: Acquire<'a, L>,
    /// `Some` for `UpTo`: the caller's `sleep(budget)`.
    timer: Option<T>,
    /// Normalized: a zero `UpTo` is `FailFast`.
    max_wait: MaxWait,
}

impl<'a, L: RawLock, T> AcquireTimeout<'a, L, T> {
    pub(crate) fn new(
        acquire: Acquire<'a, L>,
        max_wait: MaxWait,
        sleep: impl FnOnce(Duration) -> T,
    ) -> Self {
        let max_wait = normalize(max_wait);
        Self {
            acquire,
            timer: timer(max_wait, sleep),
            max_wait,
        }
    }
}

impl<L: RawLock, T> AcquireTimeout<'_, L, T> {
    /// Whether this wait joined the line, as [`Acquire::has_queued`].
    pub fn has_queued(&self) -> bool {
        self.acquire.has_queued()
    }
}

impl<'a, L: RawLock, T: Future> Future for AcquireTimeout<'a, L, T> {
    type Output = Result<Seat<'a, L>, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: a pin projection: no field is moved out of, and each is
        // dropped in place with the struct (`timer` too: `as_pin_mut`
        // pins the `Option`'s contents where they are).
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: as above.
        let acquire = unsafe { Pin::new_unchecked(&mut this.acquire) };
        // SAFETY: as above.
        let timer = unsafe { Pin::new_unchecked(&mut this.timer) }.as_pin_mut();
        poll_bounded(acquire, timer, this.max_wait, cx)
    }
}

impl<L: RawLock, T> fmt::Debug for AcquireTimeout<'_, L, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcquireTimeout")
            .field("acquire", &self.acquire)
            .field("max_wait", &self.max_wait)
            .finish()
    }
}
