//! Per-thread counts: a compartment's admissions, rejections, time-outs
//! and the time of its last rejection, counted without a locked
//! instruction.
//!
//! # Why per thread
//!
//! A full compartment under overload turns callers away as fast as they
//! come, and each rejection is counted. One shared counter would make every
//! rejecting thread write the same cache line with a locked
//! read-modify-write (about 8 ns on a 2-core VM, and the line bounces
//! between cores), while the rejection itself is one load of the seat word.
//! So each thread counts into cells that only it writes: a load and a
//! store, no locked instruction, no line shared with another writer. A read
//! sums the cells of every thread.
//!
//! # The layout
//!
//! A compartment's [`PerThreadCounts`] holds a *slot*, an index given out
//! the first time the compartment counts anything and given back when it
//! is dropped (a compartment that never counts takes none). Each thread
//! that counts owns a [`Block`]: growing buckets of [`Cells`], one per slot
//! (bucket `b` holds `32 << b` of them, so a slot's cells stay where they
//! are while the block grows). The global [`Table`] lists every live
//! thread's block, keeps the counts of threads that have exited
//! (`retired`), and the free slots.
//!
//! # Exact counts
//!
//! - A cell is written only by its thread, so a load and a store lose
//!   nothing.
//! - A thread that exits folds its cells into `retired` and leaves the
//!   list in one step under the table's lock, and a read sums under the
//!   same lock: it sees the thread's counts in its block or in `retired`,
//!   never in both or neither. A count made after the thread's block is
//!   gone (in a later thread-local destructor) goes straight to `retired`.
//! - A dropped compartment's cells are zeroed, under the lock, before its
//!   slot is given out again. The next compartment with that slot is
//!   assigned it under the same lock, and publishes it with `Release`;
//!   a thread reads the slot with `Acquire` before it touches a cell, so
//!   its load of the cell sees the zero, not its own older count.
//!
//! Counts are exact once the counting threads are done; a read made while
//! they run sums each cell as it stands, so it may miss events in flight,
//! never count one twice, and never go backwards.
//!
//! # Costs
//!
//! - Counting: a thread-local access, a bucket lookup (one `Acquire` load
//!   once the bucket exists), a relaxed load and a relaxed store. The
//!   thread's first count on a slot beyond its buckets allocates one
//!   bucket; a compartment's first count ever takes the table's lock once.
//! - Reading: the table's lock and one cell per live thread that ever
//!   counted anything.
//! - Memory: 32 bytes per slot per counting thread, allocated in
//!   doubling buckets up to the highest slot the thread touched.

use std::cell::OnceCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The counts of one compartment, in one 32-bit word: its slot (plus one;
/// 0 while it has none) in the low bits, and two flags of the lock's.
pub(crate) struct PerThreadCounts(AtomicU32);

/// The low bits: the slot plus one.
const SLOT: u32 = (1 << 30) - 1;
/// The lock keeps no rejection time ([`StdLock::untimed`](crate::StdLock::untimed)).
const UNTIMED: u32 = 1 << 31;
/// The compartment's "a blocking acquire could not wait on an event loop"
/// warning was logged.
const WARNED: u32 = 1 << 30;

/// One thread's counts for one slot. Only that thread writes the three
/// counts; `last` is also resolved by readers (see [`observe`]).
#[derive(Default)]
struct Cells {
    admitted: AtomicU64,
    rejected: AtomicU64,
    timed_out: AtomicU64,
    /// The thread's last rejection: a time and a state, see [`record_time`].
    last: AtomicU64,
}

/// The cells of the first bucket; bucket `b` holds `FIRST << b`.
const FIRST: usize = 32;
/// Enough buckets for every slot below [`SLOT`].
const BUCKETS: usize = 26;

/// One thread's cells, in buckets that only that thread creates.
struct Block {
    buckets: [OnceLock<Box<[Cells]>>; BUCKETS],
}

/// Where slot `slot`'s cells are: its bucket and its index there.
#[inline]
fn place(slot: u32) -> (usize, usize) {
    let i = slot as usize + FIRST;
    let bucket = (usize::BITS - 1 - i.leading_zeros()) as usize - FIRST.trailing_zeros() as usize;
    (bucket, i - (FIRST << bucket))
}

impl Block {
    fn new() -> Self {
        Self {
            buckets: std::array::from_fn(|_| OnceLock::new()),
        }
    }

    /// The cells of `slot`, creating their bucket; only on the owning
    /// thread.
    #[inline]
    fn cells(&self, slot: u32) -> &Cells {
        let (bucket, index) = place(slot);
        let cells = self.buckets[bucket]
            .get_or_init(|| (0..FIRST << bucket).map(|_| Cells::default()).collect());
        &cells[index]
    }

    /// The cells of `slot` if its bucket exists; from any thread.
    fn existing(&self, slot: u32) -> Option<&Cells> {
        let (bucket, index) = place(slot);
        self.buckets[bucket].get().map(|cells| &cells[index])
    }

    /// Every slot's cells that exist, with their slot.
    fn all(&self) -> impl Iterator<Item = (u32, &Cells)> {
        self.buckets.iter().enumerate().flat_map(|(bucket, cells)| {
            let base = (FIRST << bucket) - FIRST;
            cells.get().into_iter().flat_map(move |cells| {
                cells
                    .iter()
                    .enumerate()
                    .map(move |(i, c)| ((base + i) as u32, c))
            })
        })
    }
}

/// The counts of the threads that have exited, for one slot; and the last
/// rejection among them, a resolved time (0 for none).
#[derive(Default, Clone, Copy)]
struct Retired {
    admitted: u64,
    rejected: u64,
    timed_out: u64,
    last: u64,
}

/// Every live thread's block, the exited threads' counts, the free slots.
struct Table {
    blocks: Vec<Arc<Block>>,
    retired: Vec<Retired>,
    /// Slots given back, smallest first, so that slots (and the buckets
    /// they need) stay low.
    free: BinaryHeap<Reverse<u32>>,
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    blocks: Vec::new(),
    retired: Vec::new(),
    free: BinaryHeap::new(),
});

/// The table, locked. Nothing panics while it is held (a panic would be a
/// bug here, and the table stays consistent at every step anyway), so a
/// poisoned lock is taken as it is.
fn table() -> MutexGuard<'static, Table> {
    TABLE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// This thread's block, created and listed in the table on first use, and
/// folded into the table when the thread exits.
struct Local(OnceCell<Arc<Block>>);

impl Local {
    fn block(&self) -> &Block {
        self.0.get_or_init(|| {
            let block = Arc::new(Block::new());
            table().blocks.push(Arc::clone(&block));
            block
        })
    }
}

impl Drop for Local {
    /// Folds this thread's counts into `retired` and leaves the list, in
    /// one step under the lock.
    fn drop(&mut self) {
        let Some(block) = self.0.get() else { return };
        let mut table = table();
        for (slot, cells) in block.all() {
            if let Some(retired) = table.retired.get_mut(slot as usize) {
                add(retired, cells);
            }
        }
        table.blocks.retain(|b| !Arc::ptr_eq(b, block));
    }
}

thread_local! {
    static LOCAL: Local = const { Local(OnceCell::new()) };
}

/// Adds `cells` (and the last rejection they saw) to `retired`.
fn add(retired: &mut Retired, cells: &Cells) {
    retired.admitted += cells.admitted.load(Ordering::Relaxed);
    retired.rejected += cells.rejected.load(Ordering::Relaxed);
    retired.timed_out += cells.timed_out.load(Ordering::Relaxed);
    retired.last = retired.last.max(resolve(&cells.last));
}

/// What a compartment counted: the lock's [`Counts`](bulkhead_core::Counts)
/// and its admissions.
#[derive(Default, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sum {
    pub(crate) admitted: u64,
    pub(crate) rejected: u64,
    pub(crate) timed_out: u64,
}

/// Which count an event adds to.
#[derive(Clone, Copy)]
pub(crate) enum Event {
    Admitted,
    Rejected,
    TimedOut,
}

impl PerThreadCounts {
    /// Nothing counted, no slot yet.
    pub(crate) const fn new(timed: bool) -> Self {
        Self(AtomicU32::new(if timed { 0 } else { UNTIMED }))
    }

    /// Counts `event` in this thread's cells, and for a rejection or a
    /// time-out notes its time unless the lock is untimed.
    #[inline]
    pub(crate) fn record(&self, event: Event) {
        // `Acquire`: see "Exact counts" (a reused slot's zeroed cells).
        let word = self.0.load(Ordering::Acquire);
        let slot = match word & SLOT {
            0 => self.assign(),
            n => n - 1,
        };
        let counted = LOCAL.try_with(|local| {
            let cells = local.block().cells(slot);
            let count = match event {
                Event::Admitted => &cells.admitted,
                Event::Rejected => &cells.rejected,
                Event::TimedOut => &cells.timed_out,
            };
            // Only this thread writes the cell: a load and a store.
            count.store(count.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
            if word & UNTIMED == 0 && !matches!(event, Event::Admitted) {
                record_time(&cells.last);
            }
        });
        if counted.is_err() {
            self.record_exited(slot, event, word & UNTIMED == 0);
        }
    }

    /// A count made while this thread's thread-locals are being destroyed:
    /// straight into `retired`.
    #[cold]
    fn record_exited(&self, slot: u32, event: Event, timed: bool) {
        let mut table = table();
        let retired = &mut table.retired[slot as usize];
        match event {
            Event::Admitted => retired.admitted += 1,
            Event::Rejected => retired.rejected += 1,
            Event::TimedOut => retired.timed_out += 1,
        }
        if timed && !matches!(event, Event::Admitted) {
            retired.last = retired.last.max(now_stamp());
        }
    }

    /// Gives this compartment a slot (the smallest free one) the first
    /// time it counts; returns it.
    #[cold]
    #[inline(never)]
    fn assign(&self) -> u32 {
        let mut table = table();
        // Under the lock, so that a slot is given out once; re-read in
        // case another thread assigned one while this one waited.
        let word = self.0.load(Ordering::Acquire);
        if word & SLOT != 0 {
            return (word & SLOT) - 1;
        }
        let slot = match table.free.pop() {
            Some(Reverse(slot)) => slot,
            None => {
                let slot = table.retired.len() as u32;
                assert!(
                    slot < SLOT,
                    "more than {SLOT} compartments counting at once"
                );
                table.retired.push(Retired::default());
                slot
            }
        };
        // `Release`: publishes the slot's zeroed cells (see "Exact
        // counts"). A `fetch_or`, so that a flag set meanwhile stays.
        self.0.fetch_or(slot + 1, Ordering::Release);
        slot
    }

    /// The sum of every thread's counts.
    pub(crate) fn sum(&self) -> Sum {
        let Some(slot) = self.slot() else {
            return Sum::default();
        };
        let table = table();
        let retired = table.retired[slot as usize];
        let mut sum = Sum {
            admitted: retired.admitted,
            rejected: retired.rejected,
            timed_out: retired.timed_out,
        };
        for cells in table.blocks.iter().filter_map(|b| b.existing(slot)) {
            sum.admitted += cells.admitted.load(Ordering::Relaxed);
            sum.rejected += cells.rejected.load(Ordering::Relaxed);
            sum.timed_out += cells.timed_out.load(Ordering::Relaxed);
        }
        sum
    }

    /// The last rejection or time-out, resolved ("observed") in every
    /// thread's cell: see [`record_time`]. `None` for an untimed lock or
    /// none yet.
    pub(crate) fn last_rejection(&self) -> Option<SystemTime> {
        if self.0.load(Ordering::Relaxed) & UNTIMED != 0 {
            return None;
        }
        let slot = self.slot()?;
        let table = table();
        let stamp = table
            .blocks
            .iter()
            .filter_map(|b| b.existing(slot))
            .map(|cells| resolve(&cells.last))
            .fold(table.retired[slot as usize].last, u64::max);
        to_time(stamp)
    }

    /// Claims the compartment's one event-loop warning: `true` the first
    /// time.
    pub(crate) fn claim_warning(&self) -> bool {
        self.0.load(Ordering::Relaxed) & WARNED == 0
            && self.0.fetch_or(WARNED, Ordering::Relaxed) & WARNED == 0
    }

    fn slot(&self) -> Option<u32> {
        match self.0.load(Ordering::Acquire) & SLOT {
            0 => None,
            n => Some(n - 1),
        }
    }
}

impl Drop for PerThreadCounts {
    /// Zeroes the slot's cells in every thread and gives the slot back.
    fn drop(&mut self) {
        let Some(slot) = self.slot() else { return };
        let mut table = table();
        for cells in table.blocks.iter().filter_map(|b| b.existing(slot)) {
            for count in [
                &cells.admitted,
                &cells.rejected,
                &cells.timed_out,
                &cells.last,
            ] {
                count.store(0, Ordering::Relaxed);
            }
        }
        table.retired[slot as usize] = Retired::default();
        table.free.push(Reverse(slot));
    }
}

impl fmt::Debug for PerThreadCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PerThreadCounts")
            .field("slot", &self.slot())
            .finish_non_exhaustive()
    }
}

// -- the time of the last rejection ------------------------------------------

/// A thread's last rejection as one `AtomicU64`: a time in the high 62 bits
/// (nanoseconds since the Unix epoch, a multiple of 4; 0 for "never") and a
/// state in the low two bits. Transitions, each one CAS:
///
/// | state | a rejection (this thread) | an observation (any thread) |
/// |---|---|---|
/// | `QUIET`: none since the last observation; the time is final | reads the clock → `ONE` | returns the time |
/// | `ONE`: one since; the time is its own | → `MANY` (no clock) | returns the time → `QUIET` |
/// | `MANY`: several since; the time is the first one's | nothing: one load | returns "now" → `QUIET` with that time |
///
/// An observation takes the latest time over all threads. Times only grow
/// (the later of the stored and the new time is kept), so a clock stepping
/// back never makes the last rejection earlier.
fn record_time(last: &AtomicU64) {
    let v = last.load(Ordering::Relaxed);
    if v & MANY == 0 {
        record_time_slow(last, v);
    }
}

const QUIET: u64 = 0b00;
const ONE: u64 = 0b01;
const MANY: u64 = 0b10;
const STATE: u64 = 0b11;

/// `QUIET` → `ONE` (the clock read) or `ONE` → `MANY`: at most twice
/// between two observations. Relaxed: the word orders nothing else.
#[cold]
#[inline(never)]
fn record_time_slow(last: &AtomicU64, mut v: u64) {
    loop {
        let new = match v & STATE {
            QUIET => later(v, now_stamp()) | ONE,
            ONE => (v & !STATE) | MANY,
            _ => return,
        };
        match last.compare_exchange_weak(v, new, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return,
            Err(actual) => v = actual,
        }
    }
}

/// Resolves `last` (see the table) and returns its time as a stamp.
fn resolve(last: &AtomicU64) -> u64 {
    let mut v = last.load(Ordering::Relaxed);
    loop {
        let resolved = match v & STATE {
            QUIET => return v,
            ONE => v & !STATE,
            _ => later(v, now_stamp()),
        };
        match last.compare_exchange_weak(v, resolved, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return resolved,
            Err(actual) => v = actual,
        }
    }
}

/// The later of `v`'s time and `stamp`, with the state bits cleared.
fn later(v: u64, stamp: u64) -> u64 {
    (v & !STATE).max(stamp)
}

/// "Now" as a stamp: nanoseconds since the epoch, rounded down to a
/// multiple of 4 and at least 4 (a clock set before 1970 still records a
/// rejection), saturating in the year 2554 instead of wrapping.
fn now_stamp() -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    nanos.max(STATE + 1) & !STATE
}

fn to_time(stamp: u64) -> Option<SystemTime> {
    match stamp & !STATE {
        0 => None,
        nanos => UNIX_EPOCH.checked_add(Duration::from_nanos(nanos)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;

    #[test]
    fn places_are_dense_and_buckets_double() {
        assert_eq!(place(0), (0, 0));
        assert_eq!(place(31), (0, 31));
        assert_eq!(place(32), (1, 0));
        assert_eq!(place(95), (1, 63));
        assert_eq!(place(96), (2, 0));
        assert_eq!(place(SLOT - 1).0, BUCKETS - 1);
        // Every slot has one place, and `all` lists it under its slot.
        let block = Block::new();
        for slot in [0, 5, 31, 32, 100, 1000] {
            block
                .cells(slot)
                .admitted
                .store(u64::from(slot) + 1, Ordering::Relaxed);
        }
        for (slot, cells) in block.all() {
            let v = cells.admitted.load(Ordering::Relaxed);
            assert!(v == 0 || v == u64::from(slot) + 1, "slot {slot} holds {v}");
        }
        assert_eq!(
            block
                .all()
                .filter(|(_, c)| c.admitted.load(Ordering::Relaxed) != 0)
                .count(),
            6
        );
    }

    #[test]
    fn counts_of_exited_threads_are_kept_exactly() {
        let counts = PerThreadCounts::new(true);
        thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..1_000 {
                        counts.record(Event::Admitted);
                    }
                    counts.record(Event::Rejected);
                    counts.record(Event::TimedOut);
                });
            }
        });
        // The threads have exited: their counts are in `retired`.
        assert_eq!(
            counts.sum(),
            Sum {
                admitted: 4_000,
                rejected: 4,
                timed_out: 4
            }
        );
        counts.record(Event::Rejected);
        assert_eq!(counts.sum().rejected, 5);
        assert!(counts.last_rejection().is_some());
    }

    #[test]
    fn a_dropped_compartment_leaves_zeroed_cells_in_every_live_thread() {
        let first = Arc::new(PerThreadCounts::new(true));
        first.record(Event::Admitted);
        let slot = first.slot().unwrap();
        let (counted, wait_counted) = std::sync::mpsc::channel();
        let (dropped, wait_dropped) = std::sync::mpsc::channel::<()>();
        // A thread that lives on across the drop, with counts and a time
        // in the slot.
        let worker = {
            let first = Arc::clone(&first);
            thread::spawn(move || {
                first.record(Event::Rejected);
                first.record(Event::TimedOut);
                drop(first);
                let block = LOCAL.with(|local| Arc::clone(local.0.get().unwrap()));
                counted.send(()).unwrap();
                wait_dropped.recv().unwrap();
                // Nobody else writes this thread's cells: they are as the
                // drop left them.
                let cells = block.existing(slot).unwrap();
                [
                    &cells.admitted,
                    &cells.rejected,
                    &cells.timed_out,
                    &cells.last,
                ]
                .map(|c| c.load(Ordering::Relaxed))
            })
        };
        wait_counted.recv().unwrap();
        assert_eq!(
            first.sum(),
            Sum {
                admitted: 1,
                rejected: 1,
                timed_out: 1
            }
        );
        drop(Arc::into_inner(first).expect("the worker let go of it"));
        dropped.send(()).unwrap();
        assert_eq!(worker.join().unwrap(), [0; 4]);
    }

    #[test]
    fn an_untimed_counter_counts_but_keeps_no_time() {
        let counts = PerThreadCounts::new(false);
        counts.record(Event::Rejected);
        counts.record(Event::TimedOut);
        assert_eq!(counts.sum().rejected, 1);
        assert_eq!(counts.sum().timed_out, 1);
        assert_eq!(counts.last_rejection(), None);
    }

    #[test]
    fn the_warning_is_claimed_once_and_keeps_the_slot() {
        let counts = PerThreadCounts::new(true);
        assert!(counts.claim_warning());
        counts.record(Event::Admitted);
        assert!(!counts.claim_warning());
        assert_eq!(counts.sum().admitted, 1);
    }

    #[test]
    fn a_time_resolves_like_the_table_says() {
        let last = AtomicU64::new(QUIET);
        assert_eq!(resolve(&last), 0, "never");
        let before = now_stamp();
        record_time(&last);
        let v = last.load(Ordering::Relaxed);
        assert_eq!(v & STATE, ONE);
        assert!(v & !STATE >= before);
        record_time(&last);
        assert_eq!(last.load(Ordering::Relaxed), (v & !STATE) | MANY);
        // The common path: no clock, no write.
        record_time(&last);
        assert_eq!(last.load(Ordering::Relaxed), (v & !STATE) | MANY);
        thread::sleep(Duration::from_millis(2));
        let observed = resolve(&last);
        assert!(observed > v & !STATE, "several resolve to the observation");
        assert_eq!(last.load(Ordering::Relaxed), observed);
        // The time never goes back, and saturates.
        let top = !STATE;
        last.store(top, Ordering::Relaxed);
        record_time(&last);
        assert_eq!(last.load(Ordering::Relaxed), top | ONE);
        assert_eq!(resolve(&last), top);
    }
}
