//! [`Admission`], who gets a seat that has just been freed, and the bound
//! of its `BoundedBarging` mode.

/// Who gets a seat that has just been freed.
///
/// # Trade-off
///
/// - [`Fifo`](Admission::Fifo) (the default) hands a released seat straight
///   to the oldest waiter. Nobody starves, arrivals cannot jump the queue,
///   and a wait budget means what it says. The price is a *convoy* when
///   waiters are parked threads: every release must wake a sleeping thread
///   before the seat is used again.
/// - [`Barging`](Admission::Barging) is the behaviour of the Python
///   libraries that define the bulkhead concept: a release frees the seat
///   and wakes the oldest waiter, which then competes for it; a running
///   caller that arrives first takes it. Throughput is higher under heavy
///   contention, but a waiter can lose repeatedly and time out while others
///   keep getting in.
/// - [`BoundedBarging`](Admission::BoundedBarging) barges, but bounds how
///   often a waiter can be passed: a waiter that has been woken and found
///   its seat taken [`MAX_LOST_RACES`] times is handed the next seat that
///   becomes free, FIFO-style, and nobody passes it from then on. Throughput
///   stays close to barging, because a hand-off (and the context switch it
///   costs) happens at most once per `MAX_LOST_RACES` lost races.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Admission {
    /// First come, first served, by direct hand-off.
    #[default]
    Fifo,
    /// Wake the oldest waiter, but let any caller take a free seat.
    Barging,
    /// Barging, with a hand-off to a waiter that has lost
    /// [`MAX_LOST_RACES`] races.
    ///
    /// # The bound
    ///
    /// A waiter *loses a race* when it is woken for a freed seat and, when
    /// it runs while the compartment barges, finds every seat taken (by a
    /// caller that arrived later, or by another woken waiter; a shrink that
    /// took the seat counts too, since the two cannot be told apart). A
    /// closed compartment is no lost race: the waiter gets
    /// [`Error::Closed`](crate::Error::Closed) at once. It loses at
    /// most [`MAX_LOST_RACES`] races per wait. Its last lost race puts it
    /// first in line and starts a *hand-off*: the compartment admits
    /// FIFO-style, so no caller takes a seat while anyone waits, and the
    /// first seat freed after that moment (by a release or a grow; a
    /// shrink's *debt*, the seats held beyond a lowered limit, is paid
    /// first) is handed to it. Further free seats go
    /// to the next waiters in line; the compartment barges again as soon as
    /// a hand-off finds no free seat for the waiter then first in line. If
    /// the starving waiter gives up (dropped, timed out), the hand-off ends
    /// the same way.
    ///
    /// The count is of the waiter's own lost races, not of time, so core
    /// reads no clock, and the bound is the same for blocking threads and
    /// async tasks. It bounds passes *after* a waiter is woken: seats freed
    /// before its last lost race may be taken by others (those are the
    /// races it lost); before it is first woken it is behind the waiters
    /// ahead of it, each bounded the same way, and while no waiter has been
    /// woken for a free seat a running caller may take it, as in `Barging`.
    /// A wake-up during another waiter's hand-off is not a lost race: the
    /// waiter waits in line behind that one, and no newcomer passes it.
    BoundedBarging,
}

/// How many races a waiter of an
/// [`Admission::BoundedBarging`] compartment loses, at most, before the
/// next free seat is handed to it. A lost race is a wake-up for a freed
/// seat that someone else took first (see [`Admission::BoundedBarging`]).
///
/// Four keeps a hand-off, which costs a context switch when the waiter is
/// a parked thread, rare under contention, while bounding the unfairness
/// a waiter can see.
pub const MAX_LOST_RACES: u8 = 4;
