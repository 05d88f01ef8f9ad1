//! Bounded waits measured with embassy-time.

use core::fmt;
use core::pin::Pin;
use core::task::{Context, Poll};

#[cfg(feature = "partitions")]
use bulkhead_core::partition::{AcquirePartition, PartitionId, PartitionSeat, Partitioned};
use bulkhead_core::{Acquire, Error, RawLock, Seat};
use embassy_time::{Duration, Instant, TICK_HZ, Timer};

#[cfg(feature = "partitions")]
mod partitioned;

#[cfg(feature = "partitions")]
pub use partitioned::EmbassyAcquirePartition;
#[cfg(all(feature = "partitions", feature = "weights"))]
pub use partitioned::EmbassyAcquirePartitionManyWithin;
#[cfg(feature = "partitions")]
pub use partitioned::EmbassyAcquirePartitionWithin;

/// Bounded waits for any compartment, measured with embassy-time.
///
/// Implemented for every [`bulkhead_core::Bulkhead`], whatever its lock, so
/// `FLASH.acquire_within(..)` works on a [`Bulkhead<M>`](crate::Bulkhead)
/// and on a `Bulkhead<CsLock>` alike. The free functions
/// [`acquire_within`] and [`acquire_until`] do the same, and, with the
/// `weights` feature, `acquire_many_within` and `acquire_many_until`.
///
/// ```
/// use bulkhead_embassy::{Bulkhead, EmbassyAcquire, Error, raw::CriticalSectionRawMutex};
/// use embassy_time::Duration;
///
/// static RADIO: Bulkhead<CriticalSectionRawMutex> = bulkhead_embassy::new_static("radio", 1);
///
/// async fn send(frame: &[u8]) -> Result<(), Error> {
///     let _seat = RADIO.acquire_within(Duration::from_millis(20)).await?;
///     // ... talk to the radio; the seat is given back when `_seat` drops
///     # let _ = frame;
///     Ok(())
/// }
/// # let _ = send;
/// ```
pub trait EmbassyAcquire {
    /// The compartment's lock.
    type Lock: RawLock;

    /// Waits at most `budget` for a seat; see [`acquire_within`].
    fn acquire_within(&self, budget: Duration) -> EmbassyAcquireWithin<'_, Self::Lock>;

    /// Waits for a seat until `deadline` at the latest; see
    /// [`acquire_until`].
    fn acquire_until(&self, deadline: Instant) -> EmbassyAcquireWithin<'_, Self::Lock>;

    /// Waits at most `budget` for one seat of `weight` seats, taken
    /// together; see [`acquire_many_within`].
    #[cfg(feature = "weights")]
    fn acquire_many_within(
        &self,
        weight: usize,
        budget: Duration,
    ) -> EmbassyAcquireManyWithin<'_, Self::Lock>;

    /// Waits until `deadline` at the latest for one seat of `weight`
    /// seats, taken together; see [`acquire_many_until`].
    #[cfg(feature = "weights")]
    fn acquire_many_until(
        &self,
        weight: usize,
        deadline: Instant,
    ) -> EmbassyAcquireManyWithin<'_, Self::Lock>;
}

impl<L: RawLock> EmbassyAcquire for bulkhead_core::Bulkhead<L> {
    type Lock = L;

    #[inline]
    fn acquire_within(&self, budget: Duration) -> EmbassyAcquireWithin<'_, L> {
        acquire_within(self, budget)
    }

    #[inline]
    fn acquire_until(&self, deadline: Instant) -> EmbassyAcquireWithin<'_, L> {
        acquire_until(self, deadline)
    }

    #[cfg(feature = "weights")]
    #[inline]
    fn acquire_many_within(
        &self,
        weight: usize,
        budget: Duration,
    ) -> EmbassyAcquireManyWithin<'_, L> {
        acquire_many_within(self, weight, budget)
    }

    #[cfg(feature = "weights")]
    #[inline]
    fn acquire_many_until(
        &self,
        weight: usize,
        deadline: Instant,
    ) -> EmbassyAcquireManyWithin<'_, L> {
        acquire_many_until(self, weight, deadline)
    }
}

/// Waits at most `budget` for a seat in `bulkhead`.
///
/// - A zero budget fails fast: the future resolves at its first poll,
///   exactly like [`try_acquire`](bulkhead_core::Bulkhead::try_acquire)
///   ([`Error::Full`], counted as a rejection, when no seat is free).
/// - Otherwise the caller queues for a seat (first come, first served
///   with the default settings; see [`QueueOrder`](bulkhead_core::QueueOrder)
///   for newest first) and gets [`Error::Timeout`] (counted in
///   [`State::timed_out`](bulkhead_core::State::timed_out)) once the budget
///   has passed. The budget bounds only the wait, not the work done with
///   the seat.
/// - A budget so long that the deadline would not fit in an
///   [`Instant`] waits without a time limit, instead of panicking the way
///   `Instant + Duration` does on overflow.
///
/// The deadline is fixed when this function is called, like
/// [`Timer::after`]'s.
///
/// # Cancel safety
///
/// Dropping the future at any point loses nothing: a waiter leaves the
/// line, and a seat that had just been handed to it goes to the next
/// waiter. A seat handed over at the very moment the timer fires is
/// returned to the caller rather than lost.
///
/// # Memory ordering
///
/// As for every seat: everything the seat's previous holder did before
/// giving it back (in a task or an interrupt handler) happens-before
/// everything done after this future resolves to `Ok`. The precise
/// orderings are in [`Bulkhead`](bulkhead_core::Bulkhead#memory-ordering).
///
/// # Errors
///
/// [`Error::Full`] (zero budget), [`Error::Timeout`], [`Error::QueueFull`]
/// (the queue is full; with [`QueueOrder::Lifo`](bulkhead_core::QueueOrder::Lifo),
/// also while waiting, when a newcomer to a full queue drops the oldest
/// waiter) or [`Error::Closed`].
pub fn acquire_within<L: RawLock>(
    bulkhead: &bulkhead_core::Bulkhead<L>,
    budget: Duration,
) -> EmbassyAcquireWithin<'_, L> {
    EmbassyAcquireWithin {
        wait: Wait::within(
            Plain {
                bulkhead,
                weight: One,
            },
            budget,
        ),
    }
}

/// Waits for a seat in `bulkhead` until `deadline` at the latest.
///
/// Useful to give every step of an operation one shared deadline. A
/// deadline that has already passed fails fast, like
/// [`try_acquire`](bulkhead_core::Bulkhead::try_acquire). A timeout reports
/// the time that was left when this function was called as its budget.
///
/// # Cancel safety
/// As [`acquire_within`].
///
/// # Memory ordering
/// As [`acquire_within`].
///
/// # Errors
/// As [`acquire_within`].
pub fn acquire_until<L: RawLock>(
    bulkhead: &bulkhead_core::Bulkhead<L>,
    deadline: Instant,
) -> EmbassyAcquireWithin<'_, L> {
    EmbassyAcquireWithin {
        wait: Wait::until(
            Plain {
                bulkhead,
                weight: One,
            },
            deadline,
        ),
    }
}

/// Waits at most `budget` for one seat of `weight` seats in `bulkhead`,
/// taken together or not at all: [`acquire_within`] for a
/// [`try_acquire_many`](bulkhead_core::Bulkhead::try_acquire_many) seat.
///
/// - A zero budget fails fast, exactly like `try_acquire_many(weight)`.
/// - Otherwise the caller queues as
///   [`acquire_many`](bulkhead_core::Bulkhead::acquire_many) does: in FIFO
///   order a waiter at the head of the line is never passed by a lighter
///   one behind it (seats freed while it waits are kept for it), and
///   [`Error::Timeout`] ends the wait once the budget has passed. Seats
///   kept for it that it did not get are passed on when it leaves.
/// - Weight 1 is [`acquire_within`]. The returned seat's
///   [`weight`](bulkhead_core::Seat::weight) is `weight`; it gives all
///   its seats back when dropped, and
///   [`split`](bulkhead_core::Seat::split) gives some back early.
///
/// ```
/// use bulkhead_embassy::{Bulkhead, EmbassyAcquire, Error, raw::CriticalSectionRawMutex};
/// use embassy_time::Duration;
///
/// /// Three DMA channels; a memory-to-peripheral copy with a scatter list needs two.
/// static DMA: Bulkhead<CriticalSectionRawMutex> = bulkhead_embassy::new_static("dma", 3);
///
/// async fn copy_scattered() -> Result<(), Error> {
///     let mut channels = DMA.acquire_many_within(2, Duration::from_millis(10)).await?;
///     // ... the scatter phase is done: give one channel back early
///     drop(channels.split(1).unwrap());
///     // ... finish on the other; it is given back when `channels` drops
///     Ok(())
/// }
/// # let _ = copy_scattered;
/// ```
///
/// # Cancel safety
/// As [`acquire_within`].
///
/// # Memory ordering
/// As [`acquire_within`].
///
/// # Errors
/// Those of [`acquire_within`], and:
/// - [`Error::ZeroWeight`] for `weight == 0` (not counted);
/// - [`Error::WeightAboveLimit`] (counted in
///   [`State::rejected`](bulkhead_core::State::rejected)) if `weight` is
///   above the compartment's limit, at once or when the limit shrinks below
///   it while it waits. A limit of 0 is a pause: it waits.
#[cfg(feature = "weights")]
pub fn acquire_many_within<L: RawLock>(
    bulkhead: &bulkhead_core::Bulkhead<L>,
    weight: usize,
    budget: Duration,
) -> EmbassyAcquireManyWithin<'_, L> {
    EmbassyAcquireManyWithin {
        wait: Wait::within(Plain { bulkhead, weight }, budget),
    }
}

/// Waits until `deadline` at the latest for one seat of `weight` seats in
/// `bulkhead`, taken together or not at all: [`acquire_until`] for a
/// weighted seat, with the waiting rules of [`acquire_many_within`]. A
/// deadline that has already passed fails fast, like
/// [`try_acquire_many`](bulkhead_core::Bulkhead::try_acquire_many).
///
/// # Cancel safety
/// As [`acquire_within`].
///
/// # Memory ordering
/// As [`acquire_within`].
///
/// # Errors
/// As [`acquire_many_within`].
#[cfg(feature = "weights")]
pub fn acquire_many_until<L: RawLock>(
    bulkhead: &bulkhead_core::Bulkhead<L>,
    weight: usize,
    deadline: Instant,
) -> EmbassyAcquireManyWithin<'_, L> {
    EmbassyAcquireManyWithin {
        wait: Wait::until(Plain { bulkhead, weight }, deadline),
    }
}

/// Converts an embassy-time [`Duration`] into a [`core::time::Duration`],
/// exactly up to the nanosecond (rounding down), for every tick rate and
/// every value: it never panics or wraps.
///
/// ```
/// use embassy_time::Duration;
/// let d = bulkhead_embassy::to_core_duration(Duration::from_millis(1500));
/// assert_eq!(d, core::time::Duration::from_millis(1500));
/// ```
pub const fn to_core_duration(duration: Duration) -> core::time::Duration {
    /// `gcd(TICK_HZ, 10^9)`, so that the sub-second product stays small.
    const GCD: u64 = gcd(TICK_HZ, NANOS_PER_SEC);
    const NUM: u64 = NANOS_PER_SEC / GCD;
    const DEN: u64 = TICK_HZ / GCD;
    /// Whether `rem * NUM` (with `rem < TICK_HZ`) always fits in a `u64`.
    /// True for every tick rate embassy-time offers; the `u128` path is
    /// compiled out then.
    const FITS_U64: bool = (TICK_HZ as u128) * (NUM as u128) <= u64::MAX as u128;

    let ticks = duration.as_ticks();
    let secs = ticks / TICK_HZ;
    let rem = ticks % TICK_HZ;
    let nanos = if FITS_U64 {
        rem * NUM / DEN
    } else {
        ((rem as u128) * (NUM as u128) / (DEN as u128)) as u64
    };
    // `rem < TICK_HZ`, so `nanos < 10^9`: the cast is lossless and
    // `Duration::new` cannot carry into (and overflow) the seconds.
    core::time::Duration::new(secs, nanos as u32)
}

const NANOS_PER_SEC: u64 = 1_000_000_000;

const fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    a
}

/// Waits for a seat with an embassy-time budget. Returned by
/// [`acquire_within`] and [`acquire_until`].
///
/// # Cancel safety
/// As [`acquire_within`].
///
/// # Memory ordering
/// As [`acquire_within`].
#[must_use = "futures do nothing unless polled"]
pub struct EmbassyAcquireWithin<'a, L: RawLock> {
    wait: Wait<Plain<'a, L, One>>,
}

/// Waits for one seat of several seats with an embassy-time budget.
/// Returned by [`acquire_many_within`] and [`acquire_many_until`].
///
/// A type of its own, rather than [`EmbassyAcquireWithin`] with a weight
/// of 1: the one-seat future knows its weight at compile time, so firmware
/// that never asks for a weight links none of the weight checks of its
/// fail-fast path.
///
/// # Cancel safety
/// As [`acquire_within`].
///
/// # Memory ordering
/// As [`acquire_within`].
#[cfg(feature = "weights")]
#[must_use = "futures do nothing unless polled"]
pub struct EmbassyAcquireManyWithin<'a, L: RawLock> {
    wait: Wait<Plain<'a, L, usize>>,
}

/// A seat's weight: [`One`], known at compile time, or a `usize` chosen at
/// run time. Says how to take that weight from each kind of compartment.
pub(crate) trait Weight: Copy {
    /// Whether this is the weight of a `_many` future.
    const MANY: bool;
    fn get(self) -> usize;
    /// Takes the seats now, if they are free.
    fn try_take<L: RawLock>(
        self,
        bulkhead: &bulkhead_core::Bulkhead<L>,
    ) -> Result<Seat<'_, L>, Error>;
    /// Waits for the seats in core's line.
    fn wait<L: RawLock>(self, bulkhead: &bulkhead_core::Bulkhead<L>) -> Acquire<'_, L>;
    /// Takes the seats of partition `id` now, if it has them for the caller.
    #[cfg(feature = "partitions")]
    fn try_take_partition<L: RawLock>(
        self,
        partitioned: &Partitioned<L>,
        id: PartitionId,
    ) -> Result<PartitionSeat<&Partitioned<L>>, Error>;
    /// Waits for the seats in partition `id`'s line.
    #[cfg(feature = "partitions")]
    fn wait_partition<L: RawLock>(
        self,
        partitioned: &Partitioned<L>,
        id: PartitionId,
    ) -> AcquirePartition<&Partitioned<L>>;
}

/// The weight of a one-seat wait.
#[derive(Clone, Copy)]
pub(crate) struct One;

impl Weight for One {
    const MANY: bool = false;
    #[inline(always)]
    fn get(self) -> usize {
        1
    }
    #[inline(always)]
    fn try_take<L: RawLock>(
        self,
        bulkhead: &bulkhead_core::Bulkhead<L>,
    ) -> Result<Seat<'_, L>, Error> {
        bulkhead.try_acquire()
    }
    #[inline(always)]
    fn wait<L: RawLock>(self, bulkhead: &bulkhead_core::Bulkhead<L>) -> Acquire<'_, L> {
        bulkhead.acquire()
    }
    #[cfg(feature = "partitions")]
    #[inline(always)]
    fn try_take_partition<L: RawLock>(
        self,
        partitioned: &Partitioned<L>,
        id: PartitionId,
    ) -> Result<PartitionSeat<&Partitioned<L>>, Error> {
        partitioned.try_acquire(id)
    }
    #[cfg(feature = "partitions")]
    #[inline(always)]
    fn wait_partition<L: RawLock>(
        self,
        partitioned: &Partitioned<L>,
        id: PartitionId,
    ) -> AcquirePartition<&Partitioned<L>> {
        partitioned.acquire(id)
    }
}

#[cfg(feature = "weights")]
impl Weight for usize {
    const MANY: bool = true;
    #[inline(always)]
    fn get(self) -> usize {
        self
    }
    #[inline(always)]
    fn try_take<L: RawLock>(
        self,
        bulkhead: &bulkhead_core::Bulkhead<L>,
    ) -> Result<Seat<'_, L>, Error> {
        bulkhead.try_acquire_many(self)
    }
    #[inline(always)]
    fn wait<L: RawLock>(self, bulkhead: &bulkhead_core::Bulkhead<L>) -> Acquire<'_, L> {
        bulkhead.acquire_many(self)
    }
    #[cfg(feature = "partitions")]
    #[inline(always)]
    fn try_take_partition<L: RawLock>(
        self,
        partitioned: &Partitioned<L>,
        id: PartitionId,
    ) -> Result<PartitionSeat<&Partitioned<L>>, Error> {
        partitioned.try_acquire_many(id, self)
    }
    #[cfg(feature = "partitions")]
    #[inline(always)]
    fn wait_partition<L: RawLock>(
        self,
        partitioned: &Partitioned<L>,
        id: PartitionId,
    ) -> AcquirePartition<&Partitioned<L>> {
        partitioned.acquire_many(id, self)
    }
}

/// What one bounded wait asks core for: the compartment, and what to take
/// from it. [`Wait`] runs the same budget logic over every kind.
pub(crate) trait Request: Copy {
    type Seat;
    /// Core's wait for it.
    type Acquire: Future<Output = Result<Self::Seat, Error>> + fmt::Debug;
    /// Takes the seats now, if they are free (a zero budget).
    fn try_take(self) -> Result<Self::Seat, Error>;
    /// Joins core's line.
    fn wait(self) -> Self::Acquire;
    /// Ends core's wait when the budget has run out: the seat if one was
    /// handed over meanwhile, else the timeout (or the verdict that came
    /// first).
    fn time_out(
        acquire: Pin<&mut Self::Acquire>,
        budget: core::time::Duration,
    ) -> Result<Self::Seat, Error>;
    /// Panics: the public future was polled after it completed. A literal
    /// message per future, since a formatted panic would cost code.
    fn polled_after_completion() -> !;
    /// The fields of a fail-fast wait, for `Debug`.
    fn fmt_fields(self, f: &mut fmt::DebugStruct<'_, '_>);
}

/// A seat of `W` in a plain compartment.
pub(crate) struct Plain<'a, L: RawLock, W> {
    bulkhead: &'a bulkhead_core::Bulkhead<L>,
    weight: W,
}

// By hand: a derive would ask for `L: Copy`, and no lock is.
impl<L: RawLock, W: Copy> Clone for Plain<'_, L, W> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<L: RawLock, W: Copy> Copy for Plain<'_, L, W> {}

impl<'a, L: RawLock, W: Weight> Request for Plain<'a, L, W> {
    type Seat = Seat<'a, L>;
    type Acquire = Acquire<'a, L>;

    #[inline(always)]
    fn try_take(self) -> Result<Seat<'a, L>, Error> {
        // A constant for `One`: the same code as `try_acquire`.
        self.weight.try_take(self.bulkhead)
    }

    #[inline(always)]
    fn wait(self) -> Acquire<'a, L> {
        self.weight.wait(self.bulkhead)
    }

    #[inline(always)]
    fn time_out(
        acquire: Pin<&mut Acquire<'a, L>>,
        budget: core::time::Duration,
    ) -> Result<Seat<'a, L>, Error> {
        acquire.time_out(budget)
    }

    #[inline(always)]
    fn polled_after_completion() -> ! {
        if W::MANY {
            panic!("`EmbassyAcquireManyWithin` polled after it completed")
        }
        panic!("`EmbassyAcquireWithin` polled after it completed")
    }

    fn fmt_fields(self, f: &mut fmt::DebugStruct<'_, '_>) {
        f.field("bulkhead", &self.bulkhead.name())
            .field("weight", &self.weight.get());
    }
}

/// A bounded wait, whatever it waits for.
pub(crate) enum Wait<R: Request> {
    /// Zero budget: one `try_take` at the first poll.
    FailFast(R),
    /// Queued in core's line until `timer` fires; with no timer (a deadline
    /// beyond the end of embassy time), until a seat comes. Bounded and
    /// unbounded waits share this variant, so firmware links core's wait
    /// once. The budget is kept in embassy ticks (8 bytes) and converted
    /// only for a timeout's error; core's `AcquireTimeout` would keep a
    /// 16-byte `core::time::Duration` in every waiting task's future.
    Queued {
        acquire: R::Acquire,
        timer: Option<Timer>,
        budget: Duration,
    },
    /// A fail-fast verdict was returned.
    Done,
}

impl<R: Request> Wait<R> {
    /// At most `budget`; see [`acquire_many_within`].
    #[inline]
    pub(crate) fn within(request: R, budget: Duration) -> Self {
        if budget.as_ticks() == 0 {
            return Self::FailFast(request);
        }
        match Instant::now().checked_add(budget) {
            Some(deadline) => Self::queued(request, Some(Timer::at(deadline)), budget),
            None => Self::queued(request, None, Duration::MAX),
        }
    }

    /// Until `deadline`; see [`acquire_many_until`].
    #[inline]
    pub(crate) fn until(request: R, deadline: Instant) -> Self {
        let now = Instant::now();
        if deadline <= now {
            return Self::FailFast(request);
        }
        let budget = deadline.saturating_duration_since(now);
        Self::queued(request, Some(Timer::at(deadline)), budget)
    }

    #[inline]
    fn queued(request: R, timer: Option<Timer>, budget: Duration) -> Self {
        Self::Queued {
            acquire: request.wait(),
            timer,
            budget,
        }
    }

    /// The poll of every public future.
    ///
    /// # Safety
    /// `self` is pinned: `acquire` is never moved out.
    #[inline]
    pub(crate) unsafe fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Result<R::Seat, Error>> {
        match self {
            Wait::FailFast(request) => {
                let request = *request;
                *self = Wait::Done;
                Poll::Ready(request.try_take())
            }
            Wait::Queued {
                acquire,
                timer,
                budget,
            } => {
                // SAFETY: structural pinning (the caller's contract):
                // `acquire` is only ever used through this pin and never
                // moved out; `timer` is `Unpin`; the only other write is
                // replacing `FailFast` (which holds no pinned data) with
                // `Done`.
                let mut acquire = unsafe { Pin::new_unchecked(acquire) };
                if let Poll::Ready(result) = acquire.as_mut().poll(cx) {
                    return Poll::Ready(result);
                }
                let expired = match timer {
                    Some(timer) => Pin::new(timer).poll(cx).is_ready(),
                    None => false,
                };
                if expired {
                    // Decided in one step under core's lock: a seat handed
                    // over as the timer fires is returned, not lost.
                    return Poll::Ready(R::time_out(acquire, to_core_duration(*budget)));
                }
                Poll::Pending
            }
            Wait::Done => R::polled_after_completion(),
        }
    }

    /// `Debug` for the public future called `name`.
    pub(crate) fn fmt(&self, f: &mut fmt::Formatter<'_>, name: &'static str) -> fmt::Result {
        match self {
            Wait::FailFast(request) => {
                let mut d = f.debug_struct(name);
                request.fmt_fields(&mut d);
                d.field("budget", &"zero (fail fast)").finish()
            }
            Wait::Queued {
                acquire, budget, ..
            } => f
                .debug_struct(name)
                .field("acquire", acquire)
                .field("budget", budget)
                .finish(),
            Wait::Done => write!(f, "{name}(done)"),
        }
    }
}

impl<'a, L: RawLock> Future for EmbassyAcquireWithin<'a, L> {
    type Output = Result<Seat<'a, L>, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `wait` is pinned with `self` and never moved out of it.
        unsafe { self.get_unchecked_mut().wait.poll(cx) }
    }
}

#[cfg(feature = "weights")]
impl<'a, L: RawLock> Future for EmbassyAcquireManyWithin<'a, L> {
    type Output = Result<Seat<'a, L>, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `wait` is pinned with `self` and never moved out of it.
        unsafe { self.get_unchecked_mut().wait.poll(cx) }
    }
}

impl<L: RawLock> fmt::Debug for EmbassyAcquireWithin<'_, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.wait.fmt(f, "EmbassyAcquireWithin")
    }
}

#[cfg(feature = "weights")]
impl<L: RawLock> fmt::Debug for EmbassyAcquireManyWithin<'_, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.wait.fmt(f, "EmbassyAcquireManyWithin")
    }
}
