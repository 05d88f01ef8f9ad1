//! The futures that wait for a partition's seat.

use core::fmt;
use core::pin::Pin;
use core::ptr::NonNull;
use core::task::{Context, Poll, Waker};
use core::time::Duration;

use super::seat::{PartitionHandle, PartitionSeat, check_weight, take_now};
use super::table::{Joined, Refusal};
use super::{PartitionId, Partitioned};
use crate::acquire::{Bounded, normalize, poll_bounded, timer};
use crate::error::Error;
use crate::list::Node;
use crate::lock::RawLock;
use crate::max_wait::MaxWait;
use crate::status::Status;
#[cfg(feature = "weights")]
use crate::weight::Weight;
use crate::word::MAX_CONCURRENT_LIMIT;

/// Where the future is. With the node's status it says what a poll or a
/// drop does:
///
/// | phase | status | poll | drop |
/// |---|---|---|---|
/// | `Start` | `Idle` | take a seat, or link | nothing |
/// | `Queued` | `Idle` | start over (the lock panicked before linking) | nothing |
/// | `Queued` | `Waiting` | refresh the waker | leave the line |
/// | `Queued` | `Granted` | `Ok(seat)` | give the seat back |
/// | `Queued` | `Closed`, `Dropped`, `Oversized` | the error | nothing |
/// | `Done` | not linked | panic | nothing |
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Start,
    Queued,
    Done,
}

/// Waits for a seat of one partition. Returned by
/// [`Partitioned::acquire`] and [`PartitionSeat::acquire`].
///
/// Resolves to a [`PartitionSeat`], or to [`Error::Closed`],
/// [`Error::QueueFull`] (also when a full newest-first line drops it),
/// [`Error::ZeroWeight`], [`Error::WeightAboveLimit`] or
/// [`Error::ForeignPartition`].
///
/// # Cancel safety
///
/// Dropping it at any point loses nothing: if it waited, it leaves the
/// line (and a seat it kept waiting for goes to the next waiter); if a
/// seat had already been handed to it, the seat is given back.
///
/// # Memory ordering
///
/// Every decision is made under the compartment's lock, so everything a
/// seat's previous holder did before giving it back happens-before
/// everything done after this future resolves to `Ok`.
///
/// # Pinning
///
/// It holds an intrusive list node, so it is `!Unpin`: pin it (or
/// `.await` it) before polling.
#[must_use = "futures do nothing unless polled"]
pub struct AcquirePartition<P: PartitionHandle> {
    /// Taken out when the future resolves to a seat.
    handle: Option<P>,
    id: PartitionId,
    /// The compartment, resolved once at the first poll (the future is
    /// pinned then, so the handle stays in place): the node is unlinked
    /// from the line it joined even if the handle would lead elsewhere
    /// later.
    target: Option<NonNull<Partitioned<P::Lock>>>,
    /// The partition's index in `target`.
    index: usize,
    node: Node,
    phase: Phase,
    queued: bool,
    weight: usize,
}

// SAFETY: the node's links are only touched under the compartment's lock,
// and `target` points to the compartment the handle leads to; sending the
// future sends the handle with it.
unsafe impl<P: PartitionHandle + Send> Send for AcquirePartition<P> where P::Lock: Sync {}
// SAFETY: `&AcquirePartition` exposes only `has_queued` and the handle.
unsafe impl<P: PartitionHandle + Sync> Sync for AcquirePartition<P> where P::Lock: Sync {}

impl<P: PartitionHandle> AcquirePartition<P> {
    pub(crate) fn new(handle: P, id: PartitionId, weight: usize) -> Self {
        Self {
            handle: Some(handle),
            id,
            target: None,
            index: 0,
            // The node's weight is the low 32 bits; weights above the
            // limit are refused at the first poll before any linking.
            #[cfg(feature = "weights")]
            node: Node::new(Weight::new(weight.min(MAX_CONCURRENT_LIMIT) as u32)),
            #[cfg(not(feature = "weights"))]
            node: Node::new(crate::weight::Weight::ONE),
            phase: Phase::Start,
            queued: false,
            weight,
        }
    }

    /// Whether this wait joined its partition's line (as a plain
    /// compartment's `Acquire::has_queued`).
    pub fn has_queued(&self) -> bool {
        self.queued
    }

    /// The handle, until the future resolves to a seat.
    pub fn handle(&self) -> Option<&P> {
        self.handle.as_ref()
    }

    /// The compartment this wait is bound to.
    fn target(&self) -> &Partitioned<P::Lock> {
        match self.target {
            // SAFETY: set at the first poll from the pinned handle, which
            // stays in this future, in place, until the node is unlinked
            // and the future is `Done`; the compartment it led to lives at
            // least as long as the handle.
            Some(t) => unsafe { t.as_ref() },
            None => self
                .handle
                .as_ref()
                .expect("a future that is not done keeps its handle")
                .partitioned(),
        }
    }

    fn node_ptr(&mut self) -> NonNull<Node> {
        NonNull::from(&mut self.node)
    }

    /// Stops waiting: the seat if one had been handed over, else `None`.
    /// Decided in one step under the lock. The future is finished after it.
    pub fn abandon(self: Pin<&mut Self>) -> Option<PartitionSeat<P>> {
        // SAFETY: nothing is moved out but the handle, after the node is
        // unlinked (the future is then `Done`).
        let this = unsafe { self.get_unchecked_mut() };
        match this.give_up(false) {
            Some(Status::Granted) => Some(this.seat()),
            _ => None,
        }
    }

    /// Gives up after a wait budget ran out: the seat if one was handed
    /// over meanwhile, otherwise [`Error::Timeout`] (counted in the
    /// partition's `timed_out`), or the verdict that came first.
    pub fn time_out(self: Pin<&mut Self>, budget: Duration) -> Result<PartitionSeat<P>, Error> {
        // SAFETY: as in `abandon`.
        let this = unsafe { self.get_unchecked_mut() };
        match this.give_up(true) {
            Some(Status::Granted) => Ok(this.seat()),
            Some(status @ (Status::Closed | Status::Dropped | Status::Oversized)) => {
                Err(this.verdict_error(status))
            }
            _ => Err(Error::Timeout {
                name: this.target().error_name(this.index),
                budget,
            }),
        }
    }

    /// Leaves the line if queued; the status found (`Idle` if it left
    /// now), or `None` if it never queued. Afterwards the future is `Done`.
    fn give_up(&mut self, timing_out: bool) -> Option<Status> {
        if self.phase != Phase::Queued {
            self.phase = Phase::Done;
            return None;
        }
        let node = self.node_ptr();
        let target = self
            .target
            .expect("a queued wait is bound to its compartment");
        let guard = Settle {
            // SAFETY: as in `target()`; the reference does not borrow
            // `self`, so the guard can also hold the phase.
            target: unsafe { target.as_ref() },
            index: self.index,
            node,
            weight: self.weight,
            phase: &mut self.phase,
        };
        let status = guard.leave(timing_out);
        core::mem::forget(guard);
        self.phase = Phase::Done;
        if matches!(status, Status::Dropped | Status::Oversized) {
            // Turned away while it waited: reported once, here, whichever
            // way the owner learns it.
            // SAFETY: as above.
            unsafe { target.as_ref() }.raw_lock().record_rejection();
        }
        Some(status)
    }

    /// The seat this future now holds; finishes it.
    fn seat(&mut self) -> PartitionSeat<P> {
        self.phase = Phase::Done;
        let handle = self.handle.take().expect("a seat is made once");
        PartitionSeat::new(handle, self.id, self.weight)
    }

    fn verdict_error(&self, status: Status) -> Error {
        let t = self.target();
        match status {
            Status::Dropped => Error::QueueFull {
                name: t.error_name(self.index),
                max_waiting: t
                    .partition_config(self.id)
                    .ok()
                    .and_then(|c| c.max_waiting)
                    .unwrap_or(0),
            },
            Status::Oversized => {
                let may_hold = t.partition_state(self.id).map_or(0, |s| s.may_hold);
                Error::WeightAboveLimit {
                    name: t.error_name(self.index),
                    weight: self.weight,
                    max_concurrent: may_hold,
                }
            }
            _ => t.closed_error(),
        }
    }

    fn finish(
        &mut self,
        result: Result<PartitionSeat<P>, Error>,
    ) -> Poll<<Self as Future>::Output> {
        self.phase = Phase::Done;
        Poll::Ready(result)
    }

    /// Reads a final verdict, if there is one.
    fn poll_verdict(&mut self) -> Poll<<Self as Future>::Output> {
        match self.node.status.get() {
            Status::Granted => Poll::Ready(Ok(self.seat())),
            status @ (Status::Closed | Status::Dropped | Status::Oversized) => {
                let e = self.verdict_error(status);
                if status != Status::Closed {
                    self.target().raw_lock().record_rejection();
                }
                self.finish(Err(e))
            }
            _ => Poll::Pending,
        }
    }

    /// The first poll: bind the compartment, take a seat or link.
    fn start(&mut self, cx: &mut Context<'_>) -> Poll<<Self as Future>::Output> {
        let target = NonNull::from(
            self.handle
                .as_ref()
                .expect("a future that is not done keeps its handle")
                .partitioned(),
        );
        self.target = Some(target);
        // SAFETY: as in `target()`: just resolved from the pinned handle.
        let p = unsafe { target.as_ref() };
        let i = match p.index(self.id) {
            Ok(i) => i,
            Err(e) => return self.finish(Err(e)),
        };
        self.index = i;
        if let Err(e) = check_weight(p, i, self.weight) {
            return self.finish(Err(e));
        }
        let weight = self.weight;
        let node = self.node_ptr();
        self.phase = Phase::Queued;
        // One section decides and, if the caller must wait, links. The
        // waker is cloned before locking and moved in: the section neither
        // clones nor drops a waker (foreign code). A first section without
        // one takes a free seat without cloning it at all; only a caller
        // that must wait pays for a second section.
        let attempt = |waker: Option<Waker>| {
            p.section(move |t, wake| {
                let admitted = if weight > MAX_CONCURRENT_LIMIT {
                    Err(Refusal::Oversized)
                } else {
                    t.admit(i, weight)
                };
                match admitted {
                    Ok(()) => {
                        // SAFETY: the lock is held and the node, ours, was
                        // never linked. Stored before the section's wakers
                        // run: if one panics, `Drop` gives the seat back.
                        unsafe { node.as_ref().status.seat() };
                        (Ok(Joined::Seated), waker)
                    }
                    Err(Refusal::Closed) => (Err(Refusal::Closed), waker),
                    Err(Refusal::Oversized) => {
                        t.parts[i].rejected += 1;
                        (Err(Refusal::Oversized), waker)
                    }
                    Err(Refusal::Full) => match waker {
                        None => (Err(Refusal::Full), None),
                        // SAFETY: the node is pinned (we are polled), idle,
                        // and unlinked by `Drop` before the future dies.
                        Some(waker) => match unsafe { t.link(i, node, waker, wake) } {
                            Ok(()) => (Ok(Joined::Linked), None),
                            Err(waker) => {
                                t.parts[i].rejected += 1;
                                (Ok(Joined::QueueFull), Some(waker))
                            }
                        },
                    },
                }
            })
        };
        let (outcome, unused) = match attempt(None) {
            (Err(Refusal::Full), _) => attempt(Some(cx.waker().clone())),
            decided => decided,
        };
        // A waker not linked is dropped here, after unlocking.
        drop(unused);
        match outcome {
            Ok(Joined::Seated) => self.poll_verdict(),
            Ok(Joined::Linked) => {
                self.queued = true;
                self.poll_verdict()
            }
            Ok(Joined::QueueFull) => {
                p.raw_lock().record_rejection();
                let e = Error::QueueFull {
                    name: p.error_name(i),
                    max_waiting: p
                        .partition_config(self.id)
                        .ok()
                        .and_then(|c| c.max_waiting)
                        .unwrap_or(0),
                };
                self.finish(Err(e))
            }
            Err(Refusal::Closed) => {
                let e = p.closed_error();
                self.finish(Err(e))
            }
            Err(_) => {
                p.raw_lock().record_rejection();
                let e = p.section(|t, _| p.oversized_error(t, i, weight));
                self.finish(Err(e))
            }
        }
    }
}

impl<P: PartitionHandle> Future for AcquirePartition<P> {
    type Output = Result<PartitionSeat<P>, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: the node stays in place until `Drop` has unlinked it; the
        // handle is moved out only when the future is done.
        let this = unsafe { self.get_unchecked_mut() };
        match this.phase {
            Phase::Start => this.start(cx),
            Phase::Queued => {
                if let ready @ Poll::Ready(_) = this.poll_verdict() {
                    return ready;
                }
                if this.node.status.get() == Status::Idle {
                    // The lock panicked before the node was linked.
                    return this.start(cx);
                }
                let waker = cx.waker().clone();
                let node = this.node_ptr();
                let i = this.index;
                let stale = this.target().section(|t, _| {
                    // SAFETY: the node is ours; refreshed only while linked.
                    if unsafe { node.as_ref() }.status.get().is_linked() {
                        // SAFETY: linked in partition `i`'s line.
                        unsafe { t.parts[i].list.refresh_waker(node, waker) }
                    } else {
                        Some(waker)
                    }
                });
                drop(stale);
                this.poll_verdict()
            }
            Phase::Done => panic!("`AcquirePartition` polled after it completed"),
        }
    }
}

impl<P: PartitionHandle> Drop for AcquirePartition<P> {
    fn drop(&mut self) {
        if let Some(Status::Granted) = self.give_up(false) {
            // The seat was ours: give it back (served to the next waiter).
            self.target().release(self.index, self.weight);
        }
    }
}

impl<P: PartitionHandle> fmt::Debug for AcquirePartition<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcquirePartition")
            .field("partition", &self.id)
            .field("weight", &self.weight)
            .field("phase", &self.phase)
            .finish()
    }
}

/// Leaves the line; if that unwinds (a lock that panics before running
/// its closure), runs once more as the panic unwinds, so the node is
/// unlinked before the future's memory can be freed (a second panic
/// aborts).
struct Settle<'p, 'a, L: RawLock> {
    target: &'a Partitioned<L>,
    index: usize,
    node: NonNull<Node>,
    weight: usize,
    /// Set to `Done` once settled while unwinding, so that the future's
    /// own `Drop` does not give a granted seat back a second time.
    phase: &'p mut Phase,
}

impl<L: RawLock> Settle<'_, '_, L> {
    fn leave(&self, timing_out: bool) -> Status {
        let (i, node) = (self.index, self.node);
        // SAFETY: the node is the owner's, alive while this guard is.
        let status = unsafe { node.as_ref() }.status.get();
        if !status.is_linked() {
            // A verdict is final and `Idle` only changes through the owner
            // (linking happens in its own section), so neither needs the
            // lock: a wait that never linked (a lock that panicked before
            // its first section) leaves without touching it again.
            return status;
        }
        let (status, waker) = self.target.section(|t, _| {
            // SAFETY: the node is the owner's, linked (if at all) into
            // partition `i`'s line.
            let (status, waker) = unsafe { t.leave(i, node) };
            if status == Status::Idle && timing_out {
                t.parts[i].timed_out += 1;
            }
            (status, waker)
        });
        drop::<Option<Waker>>(waker);
        if status == Status::Idle && timing_out {
            self.target.raw_lock().record_timeout();
        }
        status
    }
}

impl<L: RawLock> Drop for Settle<'_, '_, L> {
    fn drop(&mut self) {
        let status = self.leave(false);
        *self.phase = Phase::Done;
        if status == Status::Granted {
            self.target.release(self.index, self.weight);
        }
    }
}

impl<P: PartitionHandle> Bounded for AcquirePartition<P> {
    fn try_now(self: Pin<&mut Self>) -> Self::Output {
        // SAFETY: nothing pinned is moved: a fail-fast wait never links.
        let this = unsafe { self.get_unchecked_mut() };
        assert!(
            this.phase == Phase::Start,
            "`AcquirePartition` polled after it completed"
        );
        this.phase = Phase::Done;
        let handle = this.handle.take().expect("not done yet");
        take_now(handle, this.id, this.weight)
    }

    fn time_out(self: Pin<&mut Self>, budget: Duration) -> Self::Output {
        AcquirePartition::time_out(self, budget)
    }
}

/// Waits for a partition's seat at most a [`MaxWait`], on a timer the
/// caller supplies. Returned by [`Partitioned::acquire_timeout`].
///
/// # Cancel safety
/// As [`AcquirePartition`]; the timer is dropped with it.
#[must_use = "futures do nothing unless polled"]
pub struct AcquirePartitionTimeout<P: PartitionHandle, T> {
    acquire: AcquirePartition<P>,
    timer: Option<T>,
    max_wait: MaxWait,
}

impl<P: PartitionHandle, T> AcquirePartitionTimeout<P, T> {
    pub(crate) fn new(
        acquire: AcquirePartition<P>,
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

    /// Whether this wait joined its partition's line.
    pub fn has_queued(&self) -> bool {
        self.acquire.has_queued()
    }
}

impl<P: PartitionHandle, T: Future> Future for AcquirePartitionTimeout<P, T> {
    type Output = Result<PartitionSeat<P>, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: a pin projection; no field is moved out of.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: as above.
        let acquire = unsafe { Pin::new_unchecked(&mut this.acquire) };
        // SAFETY: as above.
        let timer = unsafe { Pin::new_unchecked(&mut this.timer) }.as_pin_mut();
        poll_bounded(acquire, timer, this.max_wait, cx)
    }
}

impl<P: PartitionHandle, T> fmt::Debug for AcquirePartitionTimeout<P, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcquirePartitionTimeout")
            .field("acquire", &self.acquire)
            .field("max_wait", &self.max_wait)
            .finish()
    }
}
