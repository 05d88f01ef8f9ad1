//! [`Engine`], the state behind the public compartment (`Bulkhead`,
//! which wraps one), and its state machine: lock sections, hand-off and
//! the delegated release. All of core's lock-related reasoning lives here.
//!
//! The engine knows nothing of seats or futures: `Seat`, `Acquire` and
//! the facade call it, never the other way round. It holds the seat word
//! (`word.rs`), the waiter list (`list.rs`) and its lock (`lock.rs`), the
//! counters and the name.
//!
//! # The rules this file keeps
//!
//! 1. **No lost wake-up between "a release fails to take the lock" and "the
//!    holder unlocks".** A release that finds waiters adds its seat with an
//!    RMW that acquires, and then *tries* the lock. If the try fails, the
//!    holder will re-check after unlocking, and that re-check is itself an
//!    RMW on the same word (`fetch_add(0)`) that releases. Two RMWs on one
//!    word are totally ordered, so either the holder's re-check sees the
//!    seat, or the release's RMW reads the re-check's write, which makes the
//!    holder's unlock happen-before the release's try, and that try then
//!    succeeds
//!    (`RawLock` promise 2 forbids spurious failure, and only core locks a
//!    compartment's lock, so a failed try means one of *these* sections
//!    runs). Plain loads would allow the store-buffer outcome where both
//!    sides miss. The pair is the same in both admission modes. Every
//!    ordering in core is argued in docs/design.md ("Memory orderings").
//! 2. **A verdict is the last touch of a node.** `unlink`, the one exit
//!    from the list, removes a node and takes its waker *before* storing
//!    its new status (`Granted`/`Closed` with `Release`), because the owner
//!    may see that store without the lock and free the node at once. The
//!    statuses and their transitions live in `status.rs`.
//! 3. **No foreign code under the lock.** Wakers are cloned before locking;
//!    replaced wakers are dropped and taken wakers are woken after
//!    unlocking, by [`Batch`]'s `Drop`, which also runs while unwinding.
//! 4. **Never re-enter the lock.** Giving back a seat from inside a section
//!    adds it to the word and lets that same section's drain hand it on.
//! 5. **`WAITERS` is exact under the lock.** It is set in the same CAS that
//!    fails to take a free seat, before the node is linked (so a release
//!    that races it either sees the flag or leaves a seat the CAS sees),
//!    and cleared in the same CAS that grants the last node (`take_seat`),
//!    or by `unlink` when the last node leaves without a seat.
//! 6. **Every section ends with a drain and a re-check**, so no section can
//!    swallow a release that failed to take the lock while it ran.
//! 7. **Every section is bounded.** It reaches at most `BATCH + 2` nodes
//!    through the list, whatever the queue length (the barging list is
//!    partitioned so that notifying is O(1); see `list.rs`). Both drains
//!    count the nodes they hand a verdict, not the wakers they collect:
//!    a notified node's waker was taken when it was notified, so in a
//!    close, or in a `BoundedBarging` hand-off (rule 9), verdicts for
//!    notified nodes wake nobody and would never fill the batch. A drain
//!    cut short by the count leaves a free seat or `CLOSED` with
//!    `WAITERS` in the word, so the re-check (rule 6) drains again.
//!    Checked by `every_lock_section_reaches_a_bounded_number_of_nodes`,
//!    `closing_a_long_queue_stays_within_the_section_bound`,
//!    `review_closing_with_many_notified_waiters_stays_within_the_section_bound`
//!    and, for a hand-off, `a_grow_during_a_hand_off_with_many_notified_waiters_...`
//!    and `a_close_during_a_hand_off_with_many_notified_waiters_...`
//!    (`core/src/tests/drain.rs`; they assert the exact count, so a
//!    counter that stops counting fails them), and in every interleaving
//!    by the loom model
//!    `bounded_a_grow_during_a_hand_off_with_notified_waiters_stays_bounded`.
//! 8. **A barging release skips the lock while notified waiters cover the
//!    free seats.** The `notified` cell holds the weight of the nodes in
//!    `Notified` (woken, not re-polled yet: each covers as many seats as
//!    it asks for), plus [`ALL_NOTIFIED`] while no linked node is
//!    `Waiting`. Only a drain writes it (a barging drain, or the
//!    FIFO drain of a `BoundedBarging` hand-off, rule 9), under the lock, at
//!    the end of every section that moved a node into or out of `Notified`
//!    (or changed the flag). A drain notifies until the count covers the
//!    free seats it sees. A release whose RMW saw `WAITERS` loads the cell
//!    and tries the lock only if it holds fewer than the free seats. Plain
//!    loads and stores suffice, because rule 1's pair orders them: if the
//!    release's load misses the store of a section S (one that settled a
//!    notified node: it took a seat, lost its race, left, or was closed
//!    out; or an enqueue that cleared [`ALL_NOTIFIED`]), then S's re-check
//!    comes after the release's RMW in the word's order. Otherwise the
//!    release's `Acquire` RMW would read S's `Release` re-check, S's store
//!    would happen-before the release's load, and coherence forbids the
//!    load to miss it. So S's re-check sees the
//!    seat and compares it with S's own store, and drains if it is
//!    uncovered. (A release that loads the cell *before* its RMW loses
//!    this; so does a skip with one seat to spare.) The mode, too, comes
//!    from the value the release's own RMW returned, never from a separate
//!    load: one taken before the RMW can predate a hand-off (rule 9).
//! 9. **A `BoundedBarging` hand-off is FIFO, and keeps rule 8's count.**
//!    A lost race is a barging re-poll of a notified node whose take
//!    finds no free seat in an open compartment: a rival took it, or a
//!    shrink did (the word cannot tell them apart, and rivals that passed
//!    the node before a shrink left a debt are real passes, so both count:
//!    it errs towards an earlier hand-off, never a later one;
//!    `rivals_passing_a_woken_waiter_before_a_shrink_count_as_lost_races`).
//!    A take refused because the compartment closed is none: the node
//!    takes its `Closed` verdict there and then, and no hand-off starts
//!    (`a_take_refused_by_close_is_no_lost_race_and_starts_no_hand_off`).
//!    The re-poll that loses the last allowed race moves its node to the
//!    head, still `Notified` (still counted), and clears `BARGING` with a
//!    `fetch_and`; from then on every release reads the FIFO word in its
//!    RMW and tries the lock, and the drain is `drain_fifo`. Notified
//!    nodes granted, requeued or leaving meanwhile are settled as in
//!    barging mode, and the hand-off's drain publishes the cell, so that
//!    it is exact when `end_hand_off` sets `BARGING` again (a CAS that
//!    only succeeds on a word with no free seat). A release after that CAS
//!    is rule 8's case, with the ending section as the one whose store it
//!    may miss and whose re-check then sees its seat.
//! 10. **A waiter asks for `weight` seats, taken in one CAS or not at all,
//!     and a drain that cannot serve the next waiter owes nothing until the
//!     word changes.** The FIFO drain serves the head only once the word
//!     holds all its seats; until then the freed seats stay in the word,
//!     where no FIFO newcomer may take them (`WAITERS` is set), so they are
//!     the head's in effect, and if the head leaves, the section that
//!     unlinks it drains them to the next waiter. No seat is ever held by
//!     a waiter that has not been granted, so a cancel, a timeout or a
//!     close has nothing to give back. The barging drain notifies the next
//!     `Waiting` node only if its weight fits in the seats the notified
//!     ones do not cover, or else the first lighter one behind it that
//!     fits, within the section's bound (in `BoundedBarging` the passed
//!     node counts a lost race, rule 9). Either drain, stopping for lack of
//!     seats, records
//!     the word it read in [`Batch::stuck`]; the re-check of rule 1 skips
//!     a drain when its RMW returns exactly that word. Without this, a
//!     free seat too few for the next waiter would make `finish` loop
//!     forever (`drain_owed` true, the drain a no-op). It loses no wake-up:
//!     the drain's decision depends on the word and the list, the list only
//!     changes in sections (each ends with its own drain and re-check), and
//!     a release whose try failed added its seat with an RMW before the
//!     re-check's (rule 1), so a re-check that reads the very word the
//!     drain stopped at, after that drain, reads a word the drain already
//!     judged with every such seat counted in (a value equal to it by ABA
//!     means as many seats free, which the same list cannot use either).
//!     A waiter heavier than a limit that shrank below it (not to 0, a
//!     pause) is refused with `Oversized` when a drain reaches it.

// Without `barging` the `BARGING` and `BOUNDED` flags are 0 (`word.rs`), so
// that their tests fold to constants and the barging code is left out;
// masking with them is then masking with zero on purpose.
#![cfg_attr(not(feature = "barging"), allow(clippy::bad_bit_mask))]
#[cfg(feature = "alloc")]
use alloc::sync::Arc;
use core::ptr::NonNull;
use core::task::Waker;
use core::time::Duration;

use heapless::Deque;

use crate::admission::Admission;
use crate::config::{Config, MAX_WAITING_LIMIT, NEWEST_FIRST, NO_QUEUE_LIMIT, State};
use crate::error::Error;
use crate::list::{List, Node};
use crate::lock::RawLock;
use crate::name::Name;
use crate::queue_order::QueueOrder;
use crate::status::Status;
use crate::sync::Ordering::{AcqRel, Acquire, Relaxed, Release};
use crate::sync::{AtomicU32, AtomicUsize, UnsafeCell, loom_const_fn};
use crate::weight::Weight;
use crate::word::{self, BARGING, BOUNDED, CLOSED, WAITERS};

/// A compartment's state: the seat word, the waiter list and its lock,
/// the limits, the counters and the name. The public `Bulkhead` is this
/// and nothing else (`#[repr(transparent)]`); seats and the acquire
/// futures hold a reference to it.
pub(crate) struct Engine<L: RawLock> {
    /// Available seats and flags; see [`crate::word`].
    pub(crate) word: AtomicUsize,
    /// Barging mode: the waiters notified and not re-polled yet, plus
    /// [`ALL_NOTIFIED`] while none is left to notify. Written only under
    /// the lock (rule 8).
    pub(crate) notified: AtomicUsize,
    /// The limit, for snapshots and reconfiguration. Written under the lock.
    /// 32 bits, as is `max_waiting`: the two share one word on 64-bit
    /// targets (`MAX_CONCURRENT_LIMIT` and [`MAX_WAITING_LIMIT`] keep
    /// them in range).
    max: AtomicU32,
    /// The queue limit, [`NO_QUEUE_LIMIT`] for none, and in the top bit
    /// ([`NEWEST_FIRST`]) the order of the line; read them with
    /// [`queue_limit`](Self::queue_limit) and
    /// [`queue_order`](Self::queue_order). Written under the lock, so that
    /// changes of the two settings do not undo each other.
    max_waiting: AtomicU32,
    /// How many nodes the list links: the list's one count, kept by the
    /// engine where it links and unlinks nodes (only under the lock), and
    /// read without the lock by snapshots. 32 bits: the queue limit, also
    /// when there is none, is at most [`MAX_WAITING_LIMIT`].
    pub(crate) waiting: AtomicU32,
    /// The name, as the start of its bytes and its length in 31 bits
    /// (checked by [`Config::validate`]): 12 bytes on 64-bit targets
    /// instead of 16, and the length shares a word with `waiting`. The top
    /// bit, [`SHARED`], says whether the bytes are those of an `Arc<str>`
    /// whose one strong reference this compartment owns (given back in
    /// `Drop`); without it they are a `&'static str`. Read it with
    /// [`name`](Self::name), share it with [`name_handle`](Self::name_handle).
    name_start: *const u8,
    name_len: u32,
    /// # Safety
    /// Accessed only inside `lock`'s closures.
    list: UnsafeCell<List>,
    pub(crate) lock: L,
}

// SAFETY: the list's raw pointers are only dereferenced under `lock`, which
// is `Sync`; the nodes they point to belong to `Send` futures that unlink
// them before they move or die. `name_start` points into a `&'static str`
// or into an `Arc<str>` this compartment owns a reference to; both are
// `Send` and `Sync`. Everything else is atomic or immutable.
unsafe impl<L: RawLock + Send> Send for Engine<L> {}
// SAFETY: as above; shared access to the list goes through `lock`.
unsafe impl<L: RawLock + Sync> Sync for Engine<L> {}

// A panic never leaves a compartment inconsistent: core runs no foreign
// code under the lock, and seats and waiters are given back by `Drop`.
impl<L: RawLock + core::panic::RefUnwindSafe> core::panic::RefUnwindSafe for Engine<L> {}
impl<L: RawLock + core::panic::UnwindSafe> core::panic::UnwindSafe for Engine<L> {}

/// The top bit of `name_len`: the name is a shared `Arc<str>` the
/// compartment owns a reference to. Never set in a validated length
/// (at most [`MAX_NAME_LEN`](crate::MAX_NAME_LEN)).
const SHARED: u32 = 1 << 31;

impl<L: RawLock> Engine<L> {
    loom_const_fn! {
        /// The state of a compartment built from `config`, which
        /// [`Config::validate`] accepts (the caller checked it).
        pub(crate) fn new(config: Config, lock: L) -> Self {
            Self {
                word: AtomicUsize::new(word::initial(config.max_concurrent, config.admission)),
                notified: AtomicUsize::new(ALL_NOTIFIED),
                // Validated: both fit in 32 bits.
                max: AtomicU32::new(config.max_concurrent as u32),
                max_waiting: AtomicU32::new(queue_field(config.max_waiting, config.queue_order)),
                waiting: AtomicU32::new(0),
                name_start: config.name.as_ptr(),
                // Validated: the length fits in 32 bits.
                name_len: config.name.len() as u32,
                list: UnsafeCell::new(List::new()),
                lock,
            }
        }
    }

    /// As [`new`](Self::new), called `name` instead of `config.name`; the
    /// length of `name` has been validated.
    #[cfg(feature = "alloc")]
    pub(crate) fn with_shared_name(name: Arc<str>, config: Config, lock: L) -> Self {
        let len = name.len();
        let mut engine = Self::new(config, lock);
        // The reference `into_raw` hands over is the compartment's; `Drop`
        // gives it back.
        engine.name_start = Arc::into_raw(name).cast::<u8>();
        // Validated by the caller: the length fits in 31 bits, below
        // `SHARED`.
        engine.name_len = len as u32 | SHARED;
        engine
    }

    /// The compartment's name, borrowed from the compartment.
    pub(crate) fn name(&self) -> &str {
        let bytes = core::ptr::slice_from_raw_parts(self.name_start, self.name_len());
        // SAFETY: `name_start` and the length are the start and the length
        // of the string this compartment was built with (checked to fit in
        // 31 bits, so the length is exact). That string is valid UTF-8 and
        // immutable, and lives at least as long as `self`: a `&'static str`
        // forever, a shared name until `Drop` gives back the reference the
        // compartment owns, which cannot happen while `self` is borrowed.
        unsafe { core::str::from_utf8_unchecked(&*bytes) }
    }

    /// The compartment's name, to keep: the `&'static str` it was built
    /// with, or one more reference to its shared name.
    pub(crate) fn name_handle(&self) -> Name {
        #[cfg(feature = "alloc")]
        if self.name_len & SHARED != 0 {
            let name =
                core::ptr::slice_from_raw_parts(self.name_start, self.name_len()) as *const str;
            // SAFETY: with `SHARED` set, `name` is the pointer
            // `Arc::<str>::into_raw` returned in `with_shared_name` (the
            // same address and length), and the compartment still owns
            // the reference that call handed over (`Drop` has not run
            // while `self` is borrowed), so the count is at least 1 and
            // the allocation is live. Incrementing first and then taking
            // the new reference with `from_raw` leaves the compartment's
            // own reference untouched.
            return Name::shared(unsafe {
                Arc::increment_strong_count(name);
                Arc::from_raw(name)
            });
        }
        Name::from_static(self.static_name())
    }

    /// The name of a compartment built with a `&'static str`.
    fn static_name(&self) -> &'static str {
        let bytes = core::ptr::slice_from_raw_parts(self.name_start, self.name_len());
        // SAFETY: only called without `SHARED` (`name_handle` checks it,
        // and without `alloc` no constructor sets it), so `name_start` and
        // the length are those of the `&'static str` the compartment was
        // built with: valid UTF-8, immutable, for the rest of the program.
        unsafe { core::str::from_utf8_unchecked(&*bytes) }
    }

    /// The name's length, without the `SHARED` bit.
    fn name_len(&self) -> usize {
        (self.name_len & !SHARED) as usize
    }

    /// The admission order chosen at construction.
    pub(crate) fn admission(&self) -> Admission {
        // The mode's bits never change after construction (a hand-off only
        // flips `BARGING` of a `BoundedBarging` compartment, whose
        // `BOUNDED` bit tells), so any value of the word tells.
        word::admission(self.word.load(Relaxed))
    }

    /// The current limit.
    #[inline]
    pub(crate) fn max_concurrent(&self) -> usize {
        self.max.load(Relaxed) as usize
    }

    /// The current queue limit. With none it is [`MAX_WAITING_LIMIT`],
    /// the most that the 32-bit waiter count holds (documented on
    /// [`Config::max_waiting`]).
    #[inline]
    pub(crate) fn queue_limit(&self) -> usize {
        // Without `queue-limits` no compartment has one
        // (`Config::validate`), nor is given one.
        if !cfg!(feature = "queue-limits") {
            return MAX_WAITING_LIMIT;
        }
        match self.max_waiting.load(Relaxed) & !NEWEST_FIRST {
            NO_QUEUE_LIMIT => MAX_WAITING_LIMIT,
            n => n as usize,
        }
    }

    /// Moves the limit to `max_concurrent` (at most `MAX_CONCURRENT_LIMIT`,
    /// checked by the caller), under the lock so that concurrent changes
    /// apply in some order; returns the old one.
    pub(crate) fn resize(&self, max_concurrent: usize) -> usize {
        self.with_list(|_, _| self.resize_locked(max_concurrent))
    }

    /// As [`resize`](Self::resize) if the lock is free right now; `None`,
    /// changing nothing, if another caller holds it.
    pub(crate) fn try_resize(&self, max_concurrent: usize) -> Option<usize> {
        self.try_with_list(|_, _| self.resize_locked(max_concurrent))
    }

    /// Moves the limit to `max_concurrent`; returns the old one. Only with
    /// the lock held, so that concurrent changes apply in some order.
    fn resize_locked(&self, max_concurrent: usize) -> usize {
        let old = self.max_concurrent();
        // Checked against `MAX_CONCURRENT_LIMIT`: it fits in 32 bits.
        self.max.store(max_concurrent as u32, Relaxed);
        if max_concurrent > old {
            self.add_seats(max_concurrent - old);
        } else if max_concurrent < old {
            // A debt that later releases pay before anyone is admitted.
            // `Relaxed`: it frees no seat and publishes nothing; as an RMW
            // it continues the release sequences of the seats in the word.
            self.word
                .fetch_sub(word::seats(old - max_concurrent), Relaxed);
        }
        old
    }

    /// The order in which waiters are served.
    #[inline]
    pub(crate) fn queue_order(&self) -> QueueOrder {
        // Without the `lifo` feature no compartment is built with `Lifo`
        // (`Config::validate`) nor switched to it: a constant, so that the
        // newest-first code is left out.
        if cfg!(feature = "lifo") && self.max_waiting.load(Relaxed) & NEWEST_FIRST != 0 {
            QueueOrder::Lifo
        } else {
            QueueOrder::Fifo
        }
    }

    /// Stores the queue limit (`None` for none), which the caller checked
    /// against [`MAX_WAITING_LIMIT`]. Under the lock, as
    /// [`set_queue_order`](Self::set_queue_order).
    #[cfg(feature = "queue-limits")]
    pub(crate) fn set_queue_limit(&self, max_waiting: Option<usize>) {
        self.with_list(|_, _| {
            let order = self.queue_order();
            self.max_waiting
                .store(queue_field(max_waiting, order), Relaxed);
        });
    }

    /// Changes the order of the line. Waiters already in line keep their
    /// places: the order decides where newcomers join (a freed seat always
    /// goes to the front, drop-oldest always takes the back). Returns the
    /// old order.
    #[cfg(feature = "lifo")]
    pub(crate) fn set_queue_order(&self, order: QueueOrder) -> QueueOrder {
        self.with_list(|_, _| {
            let old = self.queue_order();
            let limit = self.max_waiting.load(Relaxed) & !NEWEST_FIRST;
            let bit = if order == QueueOrder::Lifo {
                NEWEST_FIRST
            } else {
                0
            };
            self.max_waiting.store(limit | bit, Relaxed);
            old
        })
    }

    /// Closes the compartment and wakes every waiter with `Closed`.
    pub(crate) fn close(&self) {
        self.with_list(|_, _| {
            // `Release`: pairs with `is_closed`'s `Acquire`. The closer
            // reads nothing it needs, so no `Acquire`.
            self.word.fetch_or(CLOSED, Release);
        });
    }

    /// Whether the compartment is closed; `Acquire`, pairing with
    /// `close`'s `Release`.
    pub(crate) fn is_closed(&self) -> bool {
        self.word.load(Acquire) & CLOSED != 0
    }

    /// A snapshot of the counters: `active` and `closed` from one
    /// `Acquire` load of the seat word, the rest plain counters, the
    /// rejections and time-outs as the lock keeps them.
    pub(crate) fn state(&self) -> State {
        let w = self.word.load(Acquire);
        let max = self.max_concurrent();
        let counts = self.lock.counts();
        State {
            name: self.name_handle(),
            max_concurrent: max,
            active: active(max, w),
            waiting: self.waiting.load(Relaxed) as usize,
            rejected: counts.rejected,
            timed_out: counts.timed_out,
            closed: w & CLOSED != 0,
        }
    }

    /// Seats held right now, from one relaxed load: for callers that need
    /// no snapshot (and no counts, which a lock may sum at a cost).
    pub(crate) fn active(&self) -> usize {
        active(self.max_concurrent(), self.word.load(Relaxed))
    }

    /// Counts a caller turned away (full, or queue full): the lock keeps
    /// the count.
    pub(crate) fn count_rejection(&self) {
        self.lock.record_rejection();
    }

    /// Counts a fail-fast rejection and describes it. Inlined, so that
    /// the error is built where the caller keeps it (see `Seat::try_take`).
    #[inline(always)]
    pub(crate) fn reject_full(&self) -> Error {
        self.count_rejection();
        let max_concurrent = self.max_concurrent();
        Error::Full {
            name: self.name_handle(),
            max_concurrent,
            active: active(max_concurrent, self.word.load(Relaxed)),
        }
    }

    /// Counts a timed-out wait and describes it.
    pub(crate) fn time_out(&self, budget: Duration) -> Error {
        self.lock.record_timeout();
        Error::Timeout {
            name: self.name_handle(),
            budget,
        }
    }
}

/// Gives back the compartment's reference to a shared name. A no-op for a
/// `&'static str` name (and without `alloc`), so a `static` compartment,
/// which is never dropped anyway, costs nothing more. The impl exists in
/// every build, so that enabling `alloc` changes nothing about where a
/// compartment may be built (`Drop` types cannot be dropped in a `const`
/// initializer: build `static`s with `new_static`/`from_config_static`).
impl<L: RawLock> Drop for Engine<L> {
    fn drop(&mut self) {
        #[cfg(feature = "alloc")]
        if self.name_len & SHARED != 0 {
            let name =
                core::ptr::slice_from_raw_parts(self.name_start, self.name_len()) as *const str;
            // SAFETY: with `SHARED` set, `name` is what
            // `Arc::into_raw` returned in `with_shared_name`, and
            // the reference that call handed over is the compartment's
            // alone (`name_handle` takes new ones). It is given back once:
            // `drop` runs once, and nothing borrows `self` any more, so no
            // `name()` borrow outlives the string.
            drop(unsafe { Arc::from_raw(name) });
        }
    }
}

/// The stored queue field for a validated `max_waiting` (at most
/// [`MAX_WAITING_LIMIT`], so it cannot collide with [`NO_QUEUE_LIMIT`] or
/// the order bit) and an order.
const fn queue_field(max_waiting: Option<usize>, order: QueueOrder) -> u32 {
    let limit = match max_waiting {
        Some(n) => n as u32,
        None => NO_QUEUE_LIMIT,
    };
    match order {
        QueueOrder::Fifo => limit,
        QueueOrder::Lifo => limit | NEWEST_FIRST,
    }
}

/// Seats held: `max - available`, clamped into `usize`.
fn active(max: usize, w: usize) -> usize {
    let available = word::available(w);
    if available >= 0 {
        max.saturating_sub(available as usize)
    } else {
        max.saturating_add(available.unsigned_abs())
    }
}

/// The flag of the `notified` cell: no linked waiter is still `Waiting`,
/// so a drain would find nobody to notify (rule 8). The top bit: the count
/// below it is at most the number of linked nodes, and with the flag the
/// cell is above any number of free seats.
pub(crate) const ALL_NOTIFIED: usize = 1 << (usize::BITS - 1);

/// How many wakers one lock section collects before it unlocks to wake
/// them. Bounds both the time spent under the lock and the stack used.
/// loom builds use 2, so that its models, which have at most three
/// threads, reach a full batch and `finish`'s re-drain.
const BATCH: usize = if cfg!(bulkhead_loom) { 2 } else { 8 };

/// `BoundedBarging`: the lost races after which a waiter asks for a
/// hand-off ([`MAX_LOST_RACES`](crate::MAX_LOST_RACES)). loom and shuttle
/// builds use 1, so that their models reach the hand-off with one barger
/// and shuttle's schedules go through many hand-offs.
const LOST_RACES: u8 = if cfg!(any(bulkhead_loom, bulkhead_shuttle)) {
    1
} else {
    crate::admission::MAX_LOST_RACES
};

/// `BATCH`, for the test that bounds a section's work.
#[cfg(test)]
pub(crate) const SECTION_BATCH: usize = BATCH;

/// Wakers collected under the lock, woken after it, followed by the
/// re-check of rule 1. Everything happens in `Drop`, so a panicking waker
/// or a panic inside a section cannot skip either.
pub(crate) struct Batch<'a, L: RawLock> {
    engine: &'a Engine<L>,
    wake: Deque<Waker, BATCH>,
    /// Wakers replaced or removed under the lock; dropped after it, since
    /// dropping a waker runs foreign code. A section discards at most two.
    stale: Deque<Waker, 2>,
    /// Whether one of this batch's sections ran. A batch whose lock call
    /// panicked before its first section (`RawLock` promise 4) never held
    /// the lock, so no failed try relies on its re-check (rule 1); it skips
    /// it, rather than lock again while that panic unwinds, which with a
    /// lock that refuses the context every time would be a second panic
    /// and abort.
    ran: bool,
    /// Barging: the weight of the notified waiters that left the
    /// `Notified` status in this section (took a seat, lost the race, left,
    /// or were closed out); the section's drain takes it off the
    /// `notified` count.
    settled: usize,
    /// The word at which the last section's drain stopped because the next
    /// waiter asks for more seats than are free (rule 10); `None` if it
    /// stopped for any other reason. Without the `weights` feature every
    /// waiter asks for one seat, so a drain never stops with a seat free
    /// and the field does not exist.
    #[cfg(feature = "weights")]
    stuck: Option<usize>,
}

impl<'a, L: RawLock> Batch<'a, L> {
    fn new(engine: &'a Engine<L>) -> Self {
        Self {
            engine,
            wake: Deque::new(),
            stale: Deque::new(),
            ran: false,
            settled: 0,
            #[cfg(feature = "weights")]
            stuck: None,
        }
    }

    /// Rule 10: the drain stopped at the word `w` for lack of seats for
    /// the next waiter.
    #[inline(always)]
    fn stop_at(&mut self, w: usize) {
        #[cfg(feature = "weights")]
        {
            self.stuck = Some(w);
        }
        #[cfg(not(feature = "weights"))]
        let _ = w;
    }

    /// The word at which the last section's drain stopped for lack of
    /// seats for the next waiter, if it did (rule 10).
    #[inline(always)]
    fn stuck(&self) -> Option<usize> {
        #[cfg(feature = "weights")]
        {
            self.stuck
        }
        #[cfg(not(feature = "weights"))]
        {
            None
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
            if !self.ran || !self.engine.drain_owed(self.stuck()) {
                return;
            }
            if !self.engine.try_section(self) {
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
    /// A newcomer took its place in a full newest-first queue.
    Dropped,
    /// The limit shrank below its weight.
    Oversized,
}

impl<L: RawLock> Engine<L> {
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

    /// As [`with_list`](Self::with_list) if the lock is free right now;
    /// `None`, without running `f`, if another caller holds it.
    pub(crate) fn try_with_list<R>(
        &self,
        f: impl FnOnce(&mut List, &mut Batch<'_, L>) -> R,
    ) -> Option<R> {
        let mut batch = Batch::new(self);
        // SAFETY: core is the only caller of its compartment's lock, and
        // `section` runs inside it.
        unsafe { self.lock.try_with_lock(|| self.section(&mut batch, f)) }
        // As in `with_list`, `batch` wakes and re-checks after the unlock.
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

    /// The most nodes one lock section reached through the list since the
    /// last call, and starts counting afresh; for the tests and the loom
    /// models of rule 7 (`loom-tests/tests/drain.rs`). Call it only while no other thread uses the compartment: it locks
    /// without the drain and re-check of rule 6, so a release whose try
    /// failed meanwhile would hand its seat to nobody.
    #[cfg(any(test, bulkhead_loom))]
    pub(crate) fn take_max_section_visits(&self) -> usize {
        // SAFETY: only the test counter is written, and the callers (core's
        // tests and the loom models of rule 7) call it while no other thread
        // uses the compartment, so no release's try can fail against this
        // section and rely on a re-check it does not make.
        unsafe {
            self.lock.with_lock(|| {
                // SAFETY: the lock is held.
                self.list
                    .with_mut(|list| core::mem::take(&mut (*list).max_visits))
            })
        }
    }

    /// The body of every lock section: `f`, then the drain (rule 6).
    ///
    /// # Safety
    /// The lock is held (only `with_list`, `try_with_list` and
    /// `try_section` call it).
    unsafe fn section<R>(
        &self,
        batch: &mut Batch<'_, L>,
        f: impl FnOnce(&mut List, &mut Batch<'_, L>) -> R,
    ) -> R {
        batch.ran = true;
        #[cfg(feature = "weights")]
        {
            batch.stuck = None;
        }
        self.list.with_mut(|list| {
            // SAFETY: the lock is held (the caller's contract), so this is
            // the only access to the list.
            let list = unsafe { &mut *list };
            list.begin_section();
            let r = f(list, batch);
            self.drain_locked(list, batch);
            list.end_section();
            r
        })
    }

    /// The fast path: one CAS when a seat is free and, in FIFO mode, nobody
    /// waits. Never touches the lock. `Acquire` on success pairs with the
    /// `Release` half of the release that freed the seat (bug class 15 in
    /// docs/bug-classes.md).
    ///
    /// `weight` seats at once (at least 1: the caller checked); a constant
    /// 1 compiles to the one-seat loop.
    #[inline]
    pub(crate) fn try_take(&self, weight: Weight) -> Result<(), Refusal> {
        let w = self.word.load(Relaxed);
        self.take_seat(w, Take::NEWCOMER, weight)
            .map_err(|(refusal, _)| refusal)
    }

    /// The one take-a-seat CAS loop: from the word `w`, takes one seat if
    /// the compartment is open, a seat is free and (for a FIFO newcomer)
    /// nobody waits; with `take.clear_waiters` it also clears `WAITERS` in
    /// the same CAS (rule 5: the taker is the last linked node). On refusal,
    /// returns why and the word it last read, so that `enqueue` can go on
    /// from it. `#[inline(always)]` with a constant `take`: each caller
    /// compiles to its own loop, so the fast path stays one load and one
    /// CAS.
    ///
    /// `Acquire` on success, for every taker: it pairs with the `Release`
    /// half of every release before it (all changes of the word are RMWs,
    /// so they continue each release's release sequence), which orders the
    /// seat's previous holders' work before the new holder's. The drain
    /// takes on a waiter's behalf and passes that work on with the
    /// verdict's `Release` store, so its CAS needs no `Release` of its own.
    /// The first load and a failure are `Relaxed`: they only pick the value
    /// to try, and a refusal promises nothing.
    ///
    /// `weight` seats are taken together or not at all.
    #[inline(always)]
    fn take_seat(&self, mut w: usize, take: Take, weight: Weight) -> Result<(), (Refusal, usize)> {
        let seats = word::seats(weight.seats());
        loop {
            if w & CLOSED != 0 {
                return Err((Refusal::Closed, w));
            }
            // Too few free seats, or a newcomer in FIFO mode with a line:
            // `WAITERS` set and `BARGING` clear, one mask of the word
            // already loaded.
            if word::available(w) < weight.get() as isize
                || (take.fifo_newcomer && w & (BARGING | WAITERS) == WAITERS)
            {
                return Err((Refusal::Full, w));
            }
            let new = if take.clear_waiters {
                (w - seats) & !WAITERS
            } else {
                w - seats
            };
            match self.word.compare_exchange_weak(w, new, Acquire, Relaxed) {
                Ok(_) => return Ok(()),
                Err(actual) => w = actual,
            }
        }
    }

    /// Gives one seat back. With no waiter this is one RMW and no lock.
    /// With waiters, it tries the lock to hand the seat on; if the lock is
    /// busy it returns at once and the holder hands the seat on instead
    /// (rule 1). In barging mode it does not even try when notified waiters
    /// that have not re-polled yet cover every free seat (rule 8): one RMW
    /// and one load. Safe in `Drop`, while unwinding, and in an interrupt
    /// handler whose lock is a critical section.
    ///
    /// `weight` seats (a seat of that weight) go back in the one RMW.
    #[inline]
    pub(crate) fn release(&self, weight: Weight) {
        let n = weight.seats();
        let prev = self.add_seats(n);
        if prev & WAITERS != 0 && self.drain_due(prev, n) {
            self.try_drain();
        }
    }

    /// Whether a release of `n` seats that found the word at `prev`, with
    /// `WAITERS` set, must try to hand them on. FIFO: always (the drain
    /// reserves seats for the line; a debt makes it a cheap no-op). Closing:
    /// always (rare; the closer's own drain would do it too). Barging: only
    /// if the free seats are not covered by notified waiters (rule 8).
    #[inline(always)]
    fn drain_due(&self, prev: usize, n: usize) -> bool {
        word::fifo(prev) || prev & CLOSED != 0 || self.uncovered(word::available(prev) + n as isize)
    }

    /// Barging (rule 8): whether `free` seats are more than the notified
    /// waiters who will re-poll for them, and someone is left to notify.
    /// `Relaxed`: see rule 8 and docs/design.md ("Memory orderings").
    #[inline(always)]
    fn uncovered(&self, free: isize) -> bool {
        // With `ALL_NOTIFIED` set the cell is above any count of seats.
        free > 0 && free as usize > self.notified.load(Relaxed)
    }

    /// Adds `n` seats to the word and returns the word it replaced.
    /// `AcqRel`: the release half publishes the holder's work to the next
    /// holder (every take acquires); the acquire half is rule 1's (and so
    /// rule 8's, which rests on it).
    ///
    /// `n >= 1`: adding nothing needs no RMW, and rule 1's argument is about
    /// a release that really frees a seat.
    pub(crate) fn add_seats(&self, n: usize) -> usize {
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
        prev
    }

    /// Hands free seats on if the lock is free; otherwise the holder will.
    fn try_drain(&self) {
        let mut batch = Batch::new(self);
        self.try_section(&mut batch);
        // `batch` drops here: wake, then re-check.
    }

    /// Rule 1's re-check: whether a drain may be owed. A word equal to
    /// `stuck`, the one at which the last section's drain stopped for lack
    /// of seats for the next waiter, owes nothing (rule 10). The RMW is what
    /// orders this check against a release that failed to take the lock
    /// (rule 1), and against a barging release that skipped the lock
    /// (rule 8). `Release`: a release whose RMW reads this one's write must
    /// see this thread's unlock, and everything its section did. No
    /// `Acquire`: nothing read here is used as a seat (every taker's CAS
    /// acquires), and if this thread's own try then fails, the section it
    /// sees began after its own ended, so that section drains what this one
    /// saw (docs/design.md).
    fn drain_owed(&self, stuck: Option<usize>) -> bool {
        let w = self.word.fetch_add(0, Release);
        stuck != Some(w)
            && w & WAITERS != 0
            && (w & CLOSED != 0
                || if word::fifo(w) {
                    word::available(w) > 0
                } else {
                    self.uncovered(word::available(w))
                })
    }

    /// Hands seats to waiters, or `Closed` verdicts once the compartment is
    /// closed, until seats, waiters or room in the batch run out.
    fn drain_locked(&self, list: &mut List, batch: &mut Batch<'_, L>) {
        // One load: `BARGING` only changes under the lock, `BOUNDED` never.
        let w = self.word.load(Relaxed);
        let mut reached = 0;
        if word::fifo(w) {
            if w & BOUNDED == 0 {
                // Plain FIFO: no node is ever notified; the cell is unused.
                self.drain_fifo(list, batch);
                return;
            }
            // A hand-off. It grants notified nodes (the starving one, and
            // any woken before it began) and requeues those that re-poll,
            // so it keeps the `notified` cell exact as a barging drain
            // does: the count is then right for the releases that read it
            // once barging resumes, and the section that ends the hand-off
            // is the one whose store rule 8 is about.
            reached = self.drain_fifo(list, batch);
            if self.fifo() {
                let old = self.notified.load(Relaxed);
                let settled = core::mem::take(&mut batch.settled);
                self.publish_notified(list, old, (old & !ALL_NOTIFIED) - settled, settled != 0);
                return;
            }
            // The drain ended the hand-off, maybe with seats free that the
            // head cannot use: barge for them now (`end_hand_off`), within
            // what is left of the section's bound (rule 7; if nothing is,
            // the seats stay uncovered and the re-check drains again). The
            // barging drain settles and publishes the cell.
        }
        // One call site, so that it is inlined.
        self.drain_barging(list, batch, reached);
    }

    /// Hands seats (or `Closed` verdicts) to the line, oldest first: at most
    /// `BATCH` nodes per section (rule 7). Returns how many nodes it
    /// reached.
    fn drain_fifo(&self, list: &mut List, batch: &mut Batch<'_, L>) -> usize {
        // Counted in nodes, not in wakers: in a hand-off, a notified node's
        // waker was taken when it was notified, so its verdict wakes nobody
        // and would never fill the batch. A drain cut short by the count
        // leaves a free seat (or `CLOSED`) and `WAITERS` in the word, so
        // `finish`'s re-check drains again; one cut short just as the seats
        // run out looks at the front once more below.
        for reached in 0..BATCH {
            if batch.wake.is_full() {
                return reached;
            }
            let Some(node) = list.front() else {
                return reached;
            };
            // SAFETY: `node` is linked, hence valid; its weight never
            // changes.
            let weight = unsafe { node.as_ref() }.weight;
            // Reserve the seats for `node`, clearing WAITERS in the same
            // CAS if it is the last waiter (rule 5). The drainer acquires
            // the releasers' work and passes it on to the owner with the
            // verdict's `Release` store.
            let take = Take::drain(list.is_single());
            match self.take_seat(self.word.load(Relaxed), take, weight) {
                Ok(()) => self.hand_verdict(list, node, Verdict::Granted, batch),
                Err((Refusal::Closed, _)) => self.hand_verdict(list, node, Verdict::Closed, batch),
                Err((Refusal::Full, _)) if self.oversized(weight) => {
                    self.hand_verdict(list, node, Verdict::Oversized, batch);
                }
                Err((Refusal::Full, w)) => {
                    // SAFETY: `node` is linked (the list's front).
                    if w & BOUNDED != 0 && unsafe { list.lost_races(node) } < LOST_RACES {
                        // The waiter that asked for the hand-off has left
                        // the head (granted or gone), and the free seats
                        // are too few for the one there now.
                        self.end_hand_off(w, weight);
                    }
                    // The head waits for more seats than are free: they
                    // stay in the word, reserved for the line (a FIFO
                    // newcomer may not take them), and nothing is owed
                    // until the word changes (rule 10).
                    batch.stop_at(w);
                    return reached + 1;
                }
            }
        }
        // Cut short by the count. If the last grant took the last free
        // seat, nothing is owed and the re-check will not drain again, so
        // the look at the front that would end a hand-off (the `Full` arm
        // above) happens here: one more node, `BATCH + 1`, within rule 7.
        // With seats still free, the re-check drains again, and that drain's
        // `Full` arm ends the hand-off if the head does not fit them.
        let w = self.word.load(Relaxed);
        if w & BOUNDED != 0
            && word::available(w) <= 0
            && w & CLOSED == 0
            && let Some(node) = list.front()
            // SAFETY: `node` is linked (the list's front).
            && unsafe { list.lost_races(node) } < LOST_RACES
        {
            // SAFETY: as above; its weight never changes.
            self.end_hand_off(w, unsafe { node.as_ref() }.weight);
        }
        BATCH + 1
    }

    /// `BoundedBarging`, under the lock, in a hand-off (`BARGING` clear):
    /// barge again, unless seats became free since `w` was read so that
    /// the head, asking for `head`, now fits (the section that hands them
    /// on ends the hand-off after it). The CAS fails on any change of the
    /// word, so `BARGING` is set only on a word whose free seats are too
    /// few for the head, and this same section then runs the barging drain
    /// (`drain_locked`), which reads the word after the CAS and covers
    /// those seats with notified waiters or stops at them (rule 10). A
    /// release before the CAS in the word's order read the FIFO word, so it
    /// tried the lock (no skip in a hand-off: the release decides on the
    /// value its own RMW returned), and its seat is in the word that drain
    /// reads. A release after it reads `BARGING` and runs rule 8's check
    /// against the `notified` cell, which that drain stores before the
    /// section's re-check: if the release's load misses the store, the
    /// re-check comes after its RMW in the word's order, reads the barging
    /// word and drains if the seat is uncovered (rule 8's argument, with
    /// this section as S). `Relaxed`: under the lock it only flips a mode
    /// bit; readers outside the lock use nothing this thread wrote (as for
    /// `enqueue`'s `WAITERS` CAS).
    fn end_hand_off(&self, mut w: usize, head: Weight) {
        while word::available(w) < head.get() as isize {
            match self
                .word
                .compare_exchange_weak(w, w | BARGING, Relaxed, Relaxed)
            {
                Ok(_) => return,
                Err(actual) => w = actual,
            }
        }
    }

    /// Barging: notifies the oldest waiting nodes until the notified ones
    /// cover the free seats, then publishes the `notified` cell (rule 8).
    /// Once closed, hands out `Closed` verdicts instead.
    ///
    /// `reached`: the nodes this section's drain has already reached (a
    /// hand-off's FIFO drain that ended it), counted against the bound.
    fn drain_barging(&self, list: &mut List, batch: &mut Batch<'_, L>, mut reached: usize) {
        // Exact under the lock: only sections write the cell.
        let old = self.notified.load(Relaxed);
        let mut notified = (old & !ALL_NOTIFIED) - core::mem::take(&mut batch.settled);
        let mut changed = notified != old & !ALL_NOTIFIED;
        // `CLOSED` is only set under the lock, so this load is exact and
        // needs no ordering of its own.
        let w = self.word.load(Relaxed);
        if w & CLOSED != 0 {
            // Counted in nodes, not in wakers: a notified node's waker was
            // taken when it was notified, so its verdict wakes nobody and
            // would never fill the batch. `finish` drains again while
            // `WAITERS` is set (rule 7).
            for _ in 0..BATCH {
                if batch.wake.is_full() {
                    break;
                }
                let Some(node) = list.front() else { break };
                self.hand_verdict(list, node, Verdict::Closed, batch);
            }
            notified -= core::mem::take(&mut batch.settled);
            changed = true;
        } else {
            // A plain load: a seat it misses was added by a release whose
            // RMW either reads this section's re-check (and tries the lock
            // after this section) or is read by it (rule 1).
            let free = word::available(w);
            // Nodes reached through the list: at most `BATCH`, as in the
            // FIFO drain (rule 7).
            // Whether this section has counted a pass of the first waiter.
            let mut passed = false;
            // `notified` is at most the seats of the compartment, far below
            // `isize::MAX`.
            // Without weights every node reached is notified and queues a
            // waker, so the full batch already bounds the loop.
            while !batch.wake.is_full() && (!cfg!(feature = "weights") || reached < BATCH) {
                // O(1): the list keeps notified nodes first and remembers
                // the first waiting one.
                let Some(first) = list.next_waiting() else {
                    // Every waiter is notified; they compete for the seats.
                    break;
                };
                // SAFETY: `first` is linked; its weight never changes.
                let weight = unsafe { first.as_ref() }.weight;
                if self.oversized(weight) {
                    // Heavier than a limit that shrank: it would never fit,
                    // so it is refused now, free seats or not (the shrink's
                    // own section gets here). It was `Waiting`, so the
                    // count is unchanged.
                    reached += 1;
                    self.hand_verdict(list, first, Verdict::Oversized, batch);
                    continue;
                }
                if notified as isize >= free {
                    // The free seats are covered.
                    break;
                }
                reached += 1;
                let room = free - notified as isize;
                // Without weights every waiter asks for one seat, and the
                // loop's condition leaves at least one uncovered: it fits.
                let node = if !cfg!(feature = "weights") || weight.get() as isize <= room {
                    first
                } else {
                    // `first` does not fit in the uncovered seats (rule 10).
                    // Newcomers may take them (this is barging); so may the
                    // first lighter waiter behind it, so that nobody sleeps
                    // next to a seat it could use.
                    let starving = w & BOUNDED != 0 && !core::mem::replace(&mut passed, true) && {
                        // `BoundedBarging`: being passed while seats are
                        // free is a lost race, counted once a section
                        // (rule 9 errs towards an earlier hand-off). Once
                        // it has lost them all, it is woken although it
                        // does not fit: its re-poll loses once more and
                        // starts the hand-off, after which the freed seats
                        // are kept for it.
                        // SAFETY: `first` is linked.
                        (unsafe { list.lose_race(first) }) >= LOST_RACES
                    };
                    if starving {
                        first
                    } else {
                        // SAFETY: `first` is linked and `Waiting`.
                        match unsafe { list.find_waiting(first, room, BATCH - reached) } {
                            (Some(node), looked) => {
                                reached += looked;
                                node
                            }
                            (None, _) => {
                                // Nothing is owed until the word changes.
                                batch.stop_at(w);
                                break;
                            }
                        }
                    }
                };
                // SAFETY: `node` is linked and `Waiting`.
                let (waker, weight) = unsafe { (list.notify(node), node.as_ref().weight) };
                if let Some(waker) = waker {
                    let _ = batch.wake.push_back(waker);
                }
                notified += weight.seats();
                changed = true;
            }
        }
        self.publish_notified(list, old, notified, changed);
    }

    /// Stores the `notified` cell (rule 8): the count of `Notified` nodes,
    /// with [`ALL_NOTIFIED`] if no linked node is `Waiting`. `old` is the
    /// cell as this section found it; `changed`: a node entered or left
    /// `Notified` in this section. Stored then even if the count came out
    /// the same: rule 8's argument is about the store of the section that
    /// settled a notified node. `Relaxed`: rule 8.
    fn publish_notified(&self, list: &List, old: usize, notified: usize, changed: bool) {
        let new = notified | if list.all_notified() { ALL_NOTIFIED } else { 0 };
        if changed || new != old {
            self.notified.store(new, Relaxed);
        }
    }

    /// Unlinks `node` and moves it out of the list's statuses, as its last
    /// touch (rule 2): the one exit from the list. A removal without a seat
    /// (`Closed`, `Left`) that empties the list clears `WAITERS` with its own
    /// RMW; a grant has already cleared it in the CAS that took the seat,
    /// for free (rule 5). The node's waker is queued to be woken (`wake`,
    /// a verdict for someone else) or dropped after the unlock (the owner's
    /// own exit, whose waker is stale).
    fn unlink(
        &self,
        list: &mut List,
        node: NonNull<Node>,
        verdict: Verdict,
        wake: bool,
        batch: &mut Batch<'_, L>,
    ) {
        // SAFETY: `node` is linked, so valid (callers pass a linked node).
        let status = unsafe { &node.as_ref().status };
        // Only barging notifies (a constant `false` without the feature).
        if cfg!(feature = "barging") && status.get() == Status::Notified {
            // SAFETY: as above.
            batch.settled += unsafe { node.as_ref() }.weight.seats();
        }
        // SAFETY: callers pass a node linked in `list`.
        let waker = unsafe { list.remove(node) };
        self.count_waiting(-1);
        if list.is_empty() && verdict != Verdict::Granted {
            // Under the lock, and an RMW, so it continues the release
            // sequences of the seats in the word: no ordering of its own.
            self.word.fetch_and(!WAITERS, Relaxed);
        }
        if wake {
            if let Some(waker) = waker {
                // Cannot fail: callers stop while the batch is full.
                let _ = batch.wake.push_back(waker);
            }
        } else {
            batch.discard(waker);
        }
        // `node` is still valid: its owner has not seen a final verdict.
        // Nothing touches it after this store.
        // SAFETY: lock held; `node` was just unlinked.
        unsafe {
            match verdict {
                Verdict::Granted => status.grant(),
                Verdict::Closed => status.close(),
                Verdict::Left => status.leave(),
                Verdict::Dropped => status.refuse(Status::Dropped),
                Verdict::Oversized => status.refuse(Status::Oversized),
            }
        }
    }

    /// A drainer's verdict for a waiter: unlink, wake, publish.
    fn hand_verdict(
        &self,
        list: &mut List,
        node: NonNull<Node>,
        verdict: Verdict,
        batch: &mut Batch<'_, L>,
    ) {
        self.unlink(list, node, verdict, true, batch);
    }

    /// The slow path of an acquire, for a node that is not linked: take a
    /// free seat, or publish `WAITERS` and link the node, in one CAS loop
    /// under the lock, so a concurrent release either sees the flag or
    /// leaves a seat that this loop sees (bug class 3 in docs/bug-classes.md).
    ///
    /// A node heavier than the limit (and the limit is not a pause, 0) is
    /// refused with [`Error::WeightAboveLimit`]. In newest-first order a
    /// full queue makes room by dropping its oldest waiter (drop-oldest);
    /// in oldest-first order it refuses the newcomer.
    pub(crate) fn enqueue(&self, node: NonNull<Node>, waker: Waker) -> Result<Enqueued, Error> {
        // SAFETY: the caller owns the node; its weight never changes.
        let weight = unsafe { node.as_ref() }.weight;
        self.with_list(|list, batch| {
            // `Relaxed`: a seat is only taken by `take_seat`'s CAS, which
            // acquires; `CLOSED` and `WAITERS` are exact under the lock.
            let mut w = self.word.load(Relaxed);
            // Exact under the lock, as `BARGING`.
            let newest_first = self.queue_order() == QueueOrder::Lifo;
            // Newest first in plain FIFO admission: the newcomer would be
            // linked at the front and served first, so it may take seats
            // the line leaves free (kept for a heavier head) at once,
            // before any drop-oldest makes room it does not need. Not in a
            // hand-off (`BOUNDED` set), whose seats are the starving
            // waiter's.
            let take = if newest_first && w & (BARGING | BOUNDED) == 0 {
                Take::NEWEST
            } else {
                Take::NEWCOMER
            };
            // Drop-oldest makes room for one newcomer by dropping exactly
            // one waiter, so the section stays bounded (rule 7) even when
            // the queue is above a limit that shrank.
            let mut made_room = false;
            loop {
                w = match self.take_seat(w, take, weight) {
                    Ok(()) => {
                        batch.discard(Some(waker));
                        // Mark the seat as the node's before anything can
                        // panic (the batch wakes foreign wakers), so the
                        // owner's `Drop` gives it back.
                        // SAFETY: lock held; the caller owns the unlinked
                        // node.
                        unsafe { node.as_ref().status.seat() };
                        return Ok(Enqueued::Seated);
                    }
                    Err((Refusal::Closed, _)) => {
                        batch.discard(Some(waker));
                        return Err(self.closed_error());
                    }
                    Err((Refusal::Full, w)) => w,
                };
                if self.oversized(weight) {
                    batch.discard(Some(waker));
                    // Counted by the caller, as `QueueFull`.
                    return Err(self.weight_above_limit(weight.seats()));
                }
                // Without `queue-limits` the only limit is
                // `MAX_WAITING_LIMIT`, which on a 32-bit target no list can
                // reach (that many nodes do not fit in its memory), so the
                // check is left out there.
                if !made_room
                    && (cfg!(feature = "queue-limits") || usize::BITS > 32)
                    && self.waiting.load(Relaxed) as usize >= self.queue_limit()
                {
                    match list.back() {
                        Some(oldest) if newest_first => {
                            // Drop-oldest: the oldest waiter leaves with
                            // `QueueFull` (its owner counts it) and the
                            // newcomer takes its place. If that emptied the
                            // list, `unlink` cleared `WAITERS`: read the
                            // word again and publish it anew below.
                            self.hand_verdict(list, oldest, Verdict::Dropped, batch);
                            made_room = true;
                            w = self.word.load(Relaxed);
                            continue;
                        }
                        _ => {
                            batch.discard(Some(waker));
                            // Counted by the caller, after the lock: the
                            // adapter's rejection hook is foreign code.
                            return Err(self.queue_full_error());
                        }
                    }
                }
                // Publish WAITERS before linking, in a CAS that fails if a
                // release freed a seat since `w` was read. Not a take, and
                // `Relaxed`: it takes no seat (a retry that does acquires in
                // `take_seat`), and a release that reads the flag needs
                // nothing from this thread but rule 1's re-check.
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
                unsafe {
                    #[cfg(feature = "lifo")]
                    if newest_first {
                        list.push_newest(node, waker);
                    } else {
                        list.push_back(node, waker);
                    }
                    #[cfg(not(feature = "lifo"))]
                    list.push_back(node, waker);
                }
                self.count_waiting(1);
                return Ok(Enqueued::Linked);
            }
        })
    }

    /// A poll of a linked node that has no final verdict yet: refresh its
    /// waker and, in barging mode, compete for a free seat. Returns whether
    /// the node took a seat (it is then unlinked and granted).
    pub(crate) fn repoll(&self, node: NonNull<Node>, waker: Waker) -> bool {
        self.with_list(|list, batch| {
            // SAFETY: the owner keeps `node` valid; under the lock its
            // status is stable.
            let status = unsafe { node.as_ref() }.status.get();
            if !status.is_linked() {
                // A verdict arrived since the owner looked.
                batch.discard(Some(waker));
                return false;
            }
            // Exact under the lock (`BARGING` only changes under it).
            let barging = !self.fifo();
            if barging {
                // Barging: take a free seat if there is one, whoever else
                // waits.
                let take = Take::barging_repoll(list.is_single());
                // SAFETY: as above; the weight never changes.
                let weight = unsafe { node.as_ref() }.weight;
                match self.take_seat(self.word.load(Relaxed), take, weight) {
                    Ok(()) => {
                        batch.discard(Some(waker));
                        // GRANTED, not IDLE: if waking the batch panics
                        // before the owner learns it took a seat, its
                        // `Drop` still gives the seat back.
                        self.unlink(list, node, Verdict::Granted, false, batch);
                        return true;
                    }
                    Err((Refusal::Closed, _)) => {
                        // No rival took a seat: the compartment closed (a
                        // close whose drain has not reached this node yet,
                        // rule 7). Not a lost race, and no hand-off: the
                        // node takes the verdict the drain would give it.
                        batch.discard(Some(waker));
                        self.unlink(list, node, Verdict::Closed, false, batch);
                        return false;
                    }
                    // Every seat taken, or a debt left by a shrink: a
                    // lost race (rule 9). The word cannot tell a rival's
                    // take from a shrink's, and rivals that passed the node
                    // before a shrink are real passes, so both count.
                    Err((Refusal::Full, _)) => {}
                }
            }
            // SAFETY: `node` is linked (status WAITING or NOTIFIED).
            unsafe {
                batch.discard(list.refresh_waker(node, waker));
                // Only barging notifies (a constant `false` without the
                // feature, so that this code is left out).
                if cfg!(feature = "barging") && status == Status::Notified {
                    if !barging {
                        // A hand-off of a `BoundedBarging` compartment
                        // (FIFO compartments notify nobody): the node waits
                        // in line, except the one the hand-off is for,
                        // which stays first.
                        if list.lost_races(node) < LOST_RACES {
                            list.requeue(node);
                            // It no longer covers its seats (rule 8); the
                            // hand-off's FIFO drain publishes the count.
                            batch.settled += node.as_ref().weight.seats();
                        }
                    } else if self.word.load(Relaxed) & BOUNDED != 0
                        && list.lose_race(node) >= LOST_RACES
                    {
                        // Lost too often: first in line, and no more
                        // barging until it has a seat (or leaves). This
                        // section's drain hands it a seat if one is free.
                        // It stays `Notified`, so it stays counted in
                        // `notified` (not settled). `Relaxed`: see
                        // `end_hand_off`.
                        list.move_to_front(node);
                        self.word.fetch_and(!BARGING, Relaxed);
                    } else {
                        // Lost the race for the seat it was woken for: wait
                        // again, first in line for the next notification. It
                        // no longer covers a seat (rule 8).
                        list.requeue(node);
                        batch.settled += node.as_ref().weight.seats();
                    }
                }
            }
            false
        })
    }

    /// The owner of a linked node stops waiting (drop, timeout). Decided in
    /// one lock section, so a seat handed over at that very moment is either
    /// seen as granted or never handed: never lost, never counted twice
    /// (bug class 2 in docs/bug-classes.md).
    pub(crate) fn abandon(&self, node: NonNull<Node>) -> Abandoned {
        // SAFETY: the owner keeps `node` valid. A final verdict is only ever
        // stored once, so seeing it without the lock is conclusive; and only
        // the owner moves a node out of IDLE, so IDLE is conclusive too.
        match unsafe { node.as_ref() }.status.get() {
            Status::Granted => return Abandoned::Granted,
            Status::Closed => return Abandoned::Closed,
            Status::Dropped => return Abandoned::Dropped,
            Status::Oversized => return Abandoned::Oversized,
            // Never linked (a panic cut `enqueue` short before it), or
            // already unlinked by an earlier `abandon` that then unwound.
            // No lock needed, so a lock that refuses to lock here cannot
            // turn this into an abort.
            Status::Idle => return Abandoned::Unlinked,
            Status::Waiting | Status::Notified => {}
        }
        self.with_list(|list, batch| {
            // SAFETY: as above; under the lock the status is stable.
            let status = unsafe { node.as_ref() }.status.get();
            match status {
                Status::Granted => return Abandoned::Granted,
                Status::Closed => return Abandoned::Closed,
                Status::Dropped => return Abandoned::Dropped,
                Status::Oversized => return Abandoned::Oversized,
                Status::Idle => unreachable!("only the owner unlinks to IDLE"),
                Status::Waiting | Status::Notified => {}
            }
            // A notified node that leaves no longer covers a seat: `unlink`
            // counts it settled, and this section's drain notifies the next
            // waiter if a seat is then uncovered (the lost wake-up embassy-sync once shipped, rule 8).
            self.unlink(list, node, Verdict::Left, false, batch);
            Abandoned::Unlinked
        })
    }

    /// Counts a node linked (`1`) or unlinked (`-1`). Only under the lock,
    /// so the count is exact there and a load and a store suffice (no RMW,
    /// which thumbv6m lacks). `Relaxed`: lock-free readers (`state`) get a
    /// recent count and no ordering, as for every counter. It cannot
    /// overflow: `enqueue` links no node at the queue limit, which is at
    /// most `MAX_WAITING_LIMIT`.
    fn count_waiting(&self, delta: i32) {
        let n = self.waiting.load(Relaxed);
        self.waiting.store(n.wrapping_add_signed(delta), Relaxed);
    }

    /// Whether a waiter of `weight` can never fit under the current limit.
    /// A limit of 0 is a pause, not a refusal: everyone waits for it to
    /// rise again.
    #[inline]
    pub(crate) fn oversized(&self, weight: Weight) -> bool {
        let max = self.max_concurrent();
        max != 0 && weight.seats() > max
    }

    /// Describes a full queue (not counted).
    pub(crate) fn queue_full_error(&self) -> Error {
        Error::QueueFull {
            name: self.name_handle(),
            max_waiting: self.queue_limit(),
        }
    }

    /// Describes a weight above the limit (not counted).
    pub(crate) fn weight_above_limit(&self, weight: usize) -> Error {
        Error::WeightAboveLimit {
            name: self.name_handle(),
            weight,
            max_concurrent: self.max_concurrent(),
        }
    }

    pub(crate) fn closed_error(&self) -> Error {
        Error::Closed {
            name: self.name_handle(),
        }
    }

    /// Whether the compartment admits FIFO-style right now. Under the lock
    /// this is exact: `BARGING` only changes in a `BoundedBarging`
    /// compartment's hand-off, under the lock, and never otherwise.
    #[inline(always)]
    pub(crate) fn fifo(&self) -> bool {
        word::fifo(self.word.load(Relaxed))
    }
}

/// Why the fast path did not take a seat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    Full,
    Closed,
}

/// How a caller of [`Engine::take_seat`] takes a seat.
///
/// | taker | yields to waiters | clears `WAITERS` |
/// |---|---|---|
/// | newcomer: fast path (`try_take`) and `enqueue` | in FIFO mode (the word's `BARGING` bit clear) | no (its node is not linked) |
/// | newest-first newcomer in plain FIFO admission, in `enqueue` | no (it would be first in line) | no |
/// | barging re-poll | no | if its node is the last |
/// | FIFO drain | no (it *is* the queue) | if the node is the last |
///
/// Every taker's CAS is `Acquire` (see [`Engine::take_seat`]).
#[derive(Clone, Copy)]
struct Take {
    /// A newcomer: in FIFO mode (the word's `BARGING` bit clear) it refuses
    /// while `WAITERS` is set.
    fifo_newcomer: bool,
    /// Clear `WAITERS` in the same CAS.
    clear_waiters: bool,
}

impl Take {
    /// A newcomer (the fast path, and `enqueue`): in FIFO mode it may not
    /// pass anyone who waits; its node, if any, is not linked. The mode is
    /// read from the word inside the loop, so the fast path loads nothing
    /// else.
    const NEWCOMER: Self = Self {
        fifo_newcomer: true,
        clear_waiters: false,
    };

    /// A newcomer in newest-first order and plain FIFO admission, under
    /// the lock in `enqueue`: it would be first in line, so it passes the
    /// waiters; its node is not linked.
    const NEWEST: Self = Self {
        fifo_newcomer: false,
        clear_waiters: false,
    };

    #[inline(always)]
    const fn barging_repoll(last: bool) -> Self {
        Self {
            fifo_newcomer: false,
            clear_waiters: last,
        }
    }

    #[inline(always)]
    const fn drain(last: bool) -> Self {
        Self {
            fifo_newcomer: false,
            clear_waiters: last,
        }
    }
}

/// How a node leaves the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// A seat is the node's (FIFO drain, or a barging re-poll that took one).
    Granted,
    /// The compartment closed.
    Closed,
    /// The owner gave up.
    Left,
    /// A newcomer took its place in a full newest-first queue.
    Dropped,
    /// The limit shrank below its weight.
    Oversized,
}
