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
//! that counts owns an array of [`Cells`], one per slot, which it reaches
//! through a thread-local with no destructor (so that reaching it costs a
//! plain load): counting is "the slot's cells in my array, if the array
//! is long enough". A thread grows its array (doubling, under the table's
//! lock, moving its counts) the first time it counts a slot beyond it.
//! Arrays are never freed: an exited thread's array, zeroed, waits in a
//! pool for the next thread, so the memory is bounded by the most threads
//! that counted at once. The global [`Table`] lists every live thread's
//! array, keeps the counts of threads that have exited (`retired`), and
//! the free slots.
//!
//! # Exact counts
//!
//! - A cell is written only by its thread, so a load and a store lose
//!   nothing. Every other write (moving an array, folding an exited
//!   thread's counts, zeroing a dropped compartment's cells) happens under
//!   the table's lock, and so does every read that sums.
//! - A thread moves its own array and folds its own counts when it exits,
//!   so no count of its own is in flight meanwhile; the table's entry
//!   changes in the same step, so a sum sees the counts in exactly one
//!   place. A count made after the thread's exit step (in a later
//!   thread-local destructor) goes straight to `retired`.
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
//! - Counting: a thread-local load, a bounds check, a relaxed load and a
//!   relaxed store (one `inc` on x86_64), and for a rejection one relaxed
//!   load of the thread's own time cell. A thread's first count beyond its
//!   array takes the table's lock and allocates the array (or takes a
//!   pooled one), and a compartment's first count ever takes the lock once
//!   and may grow the table: after that, counting allocates nothing. A
//!   thread's exit step allocates nothing either (the pool has room for
//!   every array).
//! - Reading: the table's lock and one cell per live thread that ever
//!   counted anything.
//! - Memory: 32 bytes per slot per counting thread (arrays of at least 32
//!   slots, doubling up to the highest slot the thread touched).

use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
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
/// counts outside the table's lock; `last` is also resolved by readers
/// (see [`record_time`]).
#[derive(Default)]
struct Cells {
    admitted: AtomicU64,
    rejected: AtomicU64,
    timed_out: AtomicU64,
    /// The thread's last rejection: a time and a state, see [`record_time`].
    last: AtomicU64,
}

impl Cells {
    fn counts(&self) -> [&AtomicU64; 4] {
        [&self.admitted, &self.rejected, &self.timed_out, &self.last]
    }
}

/// The smallest array a thread gets.
const FIRST: usize = 32;

/// A thread's cells, one per slot; leaked, so that the thread-local can
/// hold it as a plain reference.
type Array = &'static [Cells];

/// Every live thread's array, the exited threads' counts, the free slots.
struct Table {
    threads: Vec<Array>,
    /// Zeroed arrays of exited threads (and arrays a thread outgrew), for
    /// the next thread that needs one. Its capacity holds every array
    /// there is, so that pooling one never allocates.
    pool: Vec<Array>,
    retired: Vec<Retired>,
    /// Slots given back, smallest first, so that slots (and the arrays
    /// they need) stay small.
    free: BinaryHeap<Reverse<u32>>,
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    threads: Vec::new(),
    pool: Vec::new(),
    retired: Vec::new(),
    free: BinaryHeap::new(),
});

/// The table, locked. Nothing here panics while it is held except an
/// allocation failure, and the table is consistent at every step, so a
/// poisoned lock is taken as it is.
fn table() -> MutexGuard<'static, Table> {
    TABLE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

thread_local! {
    /// This thread's array; empty until the thread first counts, and again
    /// once it has exited. No destructor, so reading it is one load.
    static ARRAY: Cell<Array> = const { Cell::new(&[]) };
    /// Registered the first time the thread gets an array: its destructor
    /// is the thread's exit step.
    static EXIT: Exit = const { Exit(Cell::new(false)) };
}

/// The thread's exit step, run by its thread-local destructor.
struct Exit(Cell<bool>);

impl Drop for Exit {
    /// Folds this thread's counts into `retired`, zeroes its array, and
    /// moves the array from the live list to the pool, in one step under
    /// the lock. Later counts of this thread go to `retired` directly.
    fn drop(&mut self) {
        let array = ARRAY.with(|a| a.replace(&[]));
        if array.is_empty() {
            return;
        }
        let mut table = table();
        for (slot, cells) in array.iter().enumerate() {
            if let Some(retired) = table.retired.get_mut(slot) {
                add(retired, cells);
            }
            zero(cells);
        }
        table.threads.retain(|a| !same(a, array));
        table.pool.push(array);
    }
}

fn same(a: Array, b: Array) -> bool {
    std::ptr::eq(a, b)
}

fn zero(cells: &Cells) {
    for count in cells.counts() {
        count.store(0, Ordering::Relaxed);
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
#[derive(Clone, Copy, PartialEq, Eq)]
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
        // No slot yet: `u32::MAX`, beyond every array.
        let slot = (word & SLOT).wrapping_sub(1);
        match ARRAY.with(Cell::get).get(slot as usize) {
            Some(cells) => count(cells, event, word),
            None => self.record_slow(event),
        }
    }

    /// The slot or the array is missing: assign the slot, grow the array
    /// (or, once the thread has exited, count into `retired`).
    #[cold]
    #[inline(never)]
    fn record_slow(&self, event: Event) {
        let slot = self.slot().unwrap_or_else(|| self.assign());
        let word = self.0.load(Ordering::Relaxed);
        // A slot just assigned may be one this thread's array already
        // holds (a freed one, given out again): count in place. Growing
        // would take the smallest pooled array that holds the slot, which
        // can be shorter than this one, and leave the counts beyond it
        // behind.
        if let Some(cells) = ARRAY.with(Cell::get).get(slot as usize) {
            count(cells, event, word);
            return;
        }
        if EXIT.try_with(|exit| exit.0.set(true)).is_err() {
            // This thread's exit step has run (or is running): its array
            // is gone.
            let mut table = table();
            let retired = &mut table.retired[slot as usize];
            match event {
                Event::Admitted => retired.admitted += 1,
                Event::Rejected => retired.rejected += 1,
                Event::TimedOut => retired.timed_out += 1,
            }
            if word & UNTIMED == 0 && event != Event::Admitted {
                retired.last = retired.last.max(now_stamp());
            }
            return;
        }
        // The array is too short for the slot (checked above).
        let array = grow(slot);
        count(&array[slot as usize], event, word);
    }

    /// Gives this compartment a slot (the smallest free one) the first
    /// time it counts; returns it.
    fn assign(&self) -> u32 {
        let mut table = table();
        // Under the lock, so that a slot is given out once; re-read in
        // case another thread assigned one while this one waited.
        if let Some(slot) = self.slot() {
            return slot;
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
        for cells in table.threads.iter().filter_map(|a| a.get(slot as usize)) {
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
            .threads
            .iter()
            .filter_map(|a| a.get(slot as usize))
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

/// Adds `event` to `cells`, which only this thread writes outside the
/// table's lock: a load and a store.
#[inline]
fn count(cells: &Cells, event: Event, word: u32) {
    let count = match event {
        Event::Admitted => &cells.admitted,
        Event::Rejected => &cells.rejected,
        Event::TimedOut => &cells.timed_out,
    };
    count.store(count.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    if event != Event::Admitted && word & UNTIMED == 0 {
        record_time(&cells.last);
    }
}

/// Gives this thread an array that holds `slot`: the smallest pooled one
/// that does, or a new one, with the thread's counts moved into it; in one
/// step under the lock (see "Exact counts").
fn grow(slot: u32) -> Array {
    let old = ARRAY.with(Cell::get);
    // So the new array is longer than the old one, and takes all of it.
    debug_assert!(slot as usize >= old.len(), "grow only beyond the array");
    let needed = (slot as usize + 1).next_power_of_two().max(FIRST);
    let mut table = table();
    let fits = table
        .pool
        .iter()
        .enumerate()
        .filter(|(_, a)| a.len() >= needed)
        .min_by_key(|(_, a)| a.len())
        .map(|(i, _)| i);
    let new: Array = match fits {
        Some(i) => table.pool.swap_remove(i),
        None => {
            // Room in the pool for every array there is, so that a
            // thread's exit step (which pools its array) never allocates.
            let others = table.threads.len() + 1;
            table.pool.reserve(others);
            Box::leak((0..needed).map(|_| Cells::default()).collect())
        }
    };
    for (from, to) in old.iter().zip(new) {
        for (f, t) in from.counts().into_iter().zip(to.counts()) {
            t.store(f.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        zero(from);
    }
    match table.threads.iter().position(|a| same(a, old)) {
        Some(i) if !old.is_empty() => table.threads[i] = new,
        _ => table.threads.push(new),
    }
    if !old.is_empty() {
        table.pool.push(old);
    }
    ARRAY.with(|a| a.set(new));
    new
}

impl Drop for PerThreadCounts {
    /// Zeroes the slot's cells in every thread and gives the slot back.
    fn drop(&mut self) {
        let Some(slot) = self.slot() else { return };
        let mut table = table();
        for cells in table.threads.iter().filter_map(|a| a.get(slot as usize)) {
            zero(cells);
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
#[inline]
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
    use std::sync::Arc;
    use std::thread;

    #[test]
    fn a_thread_that_grows_its_array_keeps_its_counts() {
        // Enough compartments that this thread's array must grow at least
        // once while it holds counts.
        let many: Vec<PerThreadCounts> =
            (0..3 * FIRST).map(|_| PerThreadCounts::new(true)).collect();
        for (i, c) in many.iter().enumerate() {
            for _ in 0..=i {
                c.record(Event::Admitted);
            }
        }
        for (i, c) in many.iter().enumerate() {
            assert_eq!(c.sum().admitted, i as u64 + 1, "compartment {i}");
        }
        assert!(ARRAY.with(Cell::get).len() >= 3 * FIRST);
    }

    #[test]
    fn a_new_compartment_inside_the_array_counts_in_place() {
        thread::spawn(|| {
            // This thread's array grows past `FIRST` (its first array goes
            // to the pool) and holds every one of these slots.
            let mut many: Vec<PerThreadCounts> =
                (0..2 * FIRST).map(|_| PerThreadCounts::new(true)).collect();
            for c in &many {
                c.record(Event::Admitted);
            }
            let array = ARRAY.with(Cell::get);
            // A slot inside the array, freed and given to a new
            // compartment (the smallest free slot is at most this one).
            drop(many.remove(0));
            let next = PerThreadCounts::new(true);
            next.record(Event::Rejected);
            assert!((next.slot().unwrap() as usize) < array.len());
            // The array is not swapped for another one (a smaller pooled
            // one would leave the counts beyond it behind).
            assert!(same(ARRAY.with(Cell::get), array), "the array moved");
            assert_eq!(next.sum().rejected, 1);
            for (i, c) in many.iter().enumerate() {
                assert_eq!(c.sum().admitted, 1, "compartment {i}");
            }
        })
        .join()
        .unwrap();
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
                counted.send(()).unwrap();
                wait_dropped.recv().unwrap();
                // Nobody else writes this thread's cells: they are as the
                // drop left them.
                let cells = &ARRAY.with(Cell::get)[slot as usize];
                cells.counts().map(|c| c.load(Ordering::Relaxed))
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
    /// Every array is in the table once (live or pooled), and no empty
    /// one is pooled: what moving arrays between threads must keep.
    fn assert_each_array_once() {
        let table = table();
        let all: Vec<Array> = table.threads.iter().chain(&table.pool).copied().collect();
        for (i, a) in all.iter().enumerate() {
            assert!(!a.is_empty(), "an empty array in the table");
            let copies = all.iter().filter(|b| std::ptr::eq(*a, **b)).count();
            assert_eq!(copies, 1, "array {i} is in the table {copies} times");
        }
    }

    #[test]
    fn an_exited_thread_folds_its_counts_into_retired_and_zeroes_its_cells() {
        let counts = PerThreadCounts::new(true);
        let array = thread::scope(|s| {
            s.spawn(|| {
                counts.record(Event::Admitted);
                counts.record(Event::Rejected);
                counts.record(Event::TimedOut);
                counts.record(Event::TimedOut);
                ARRAY.with(Cell::get)
            })
            .join()
            .unwrap()
        });
        let slot = counts.slot().unwrap() as usize;
        // Its array is pooled (or already another thread's), the slot's
        // cells zeroed: only this compartment counts into that slot.
        assert_eq!(
            array[slot].counts().map(|c| c.load(Ordering::Relaxed)),
            [0; 4]
        );
        let retired = table().retired[slot];
        assert_eq!(
            (retired.admitted, retired.rejected, retired.timed_out),
            (1, 1, 2)
        );
        assert!(retired.last > 0, "the rejection's time is kept");
        assert_each_array_once();
    }

    #[test]
    fn a_thread_that_exits_leaves_the_other_threads_counts_in_place() {
        let counts = PerThreadCounts::new(true);
        counts.record(Event::Admitted);
        // Joined: the other thread's exit step has run.
        thread::scope(|s| s.spawn(|| counts.record(Event::Admitted)).join().unwrap());
        // This thread's cells are still summed, also those it writes after
        // the other thread's exit.
        counts.record(Event::Admitted);
        assert_eq!(counts.sum().admitted, 3);
        assert_each_array_once();
    }

    #[test]
    fn counting_into_a_slot_the_array_holds_keeps_the_array() {
        let counts = PerThreadCounts::new(true);
        counts.record(Event::Admitted);
        let array = ARRAY.with(Cell::get);
        counts.record(Event::Rejected);
        counts.record(Event::TimedOut);
        assert!(std::ptr::eq(array, ARRAY.with(Cell::get)), "no new array");
        assert_eq!(
            counts.sum(),
            Sum {
                admitted: 1,
                rejected: 1,
                timed_out: 1
            }
        );
    }

    #[test]
    fn an_outgrown_array_goes_to_the_pool() {
        // A fresh thread, so that its first array is known.
        thread::scope(|s| {
            s.spawn(|| {
                let many: Vec<PerThreadCounts> =
                    (0..2 * FIRST).map(|_| PerThreadCounts::new(true)).collect();
                many[0].record(Event::Admitted);
                let first = ARRAY.with(Cell::get);
                for c in &many {
                    c.record(Event::Admitted);
                }
                let now = ARRAY.with(Cell::get);
                assert!(now.len() > first.len(), "the array grew");
                {
                    let table = table();
                    let held = |a: &Array| std::ptr::eq(*a, first);
                    assert!(
                        table.pool.iter().any(held) || table.threads.iter().any(held),
                        "the outgrown array is pooled (or another thread's now)"
                    );
                }
                assert_each_array_once();
                assert_eq!(many[0].sum().admitted, 2, "moved with the array");
            });
        });
    }

    #[test]
    fn admissions_are_counted_but_not_timed() {
        let counts = PerThreadCounts::new(true);
        counts.record(Event::Admitted);
        counts.record(Event::Admitted);
        assert_eq!(counts.sum().admitted, 2);
        assert_eq!(counts.last_rejection(), None);
        // A rejection made where the array already holds the slot is timed.
        counts.record(Event::Rejected);
        assert!(counts.last_rejection().is_some());
    }

    #[test]
    fn a_rejection_is_timed_when_it_happens() {
        let last = AtomicU64::new(QUIET);
        let before = now_stamp();
        record_time(&last);
        let after = now_stamp();
        let stamp = resolve(&last);
        assert!(
            (before..=after).contains(&stamp),
            "{stamp} not in [{before}, {after}]"
        );
        // One rejection since the last observation keeps its own time,
        // not the time it is observed at.
        last.store(8 | ONE, Ordering::Relaxed);
        assert_eq!(resolve(&last), 8);
        assert_eq!(last.load(Ordering::Relaxed), 8, "observed: quiet");
    }

    #[test]
    fn counts_made_after_a_threads_exit_step_go_to_retired() {
        /// Counts when this thread's thread-locals are destroyed: after the
        /// exit step where thread-local destructors run in the reverse
        /// order of their registration (registered here first).
        struct CountOnExit {
            timed: Arc<PerThreadCounts>,
            admitted_only: Arc<PerThreadCounts>,
            after_exit: Arc<std::sync::atomic::AtomicBool>,
        }
        impl Drop for CountOnExit {
            fn drop(&mut self) {
                let gone = EXIT.try_with(|_| ()).is_err();
                self.after_exit.store(gone, Ordering::Relaxed);
                self.timed.record(Event::Rejected);
                self.timed.record(Event::TimedOut);
                self.admitted_only.record(Event::Admitted);
            }
        }
        thread_local! {
            static LATE: std::cell::RefCell<Option<CountOnExit>> =
                const { std::cell::RefCell::new(None) };
        }
        let timed = Arc::new(PerThreadCounts::new(true));
        let admitted_only = Arc::new(PerThreadCounts::new(true));
        let untimed = Arc::new(PerThreadCounts::new(false));
        let after_exit = Arc::new(std::sync::atomic::AtomicBool::new(false));
        {
            let (timed, admitted_only, untimed, after_exit) = (
                Arc::clone(&timed),
                Arc::clone(&admitted_only),
                Arc::clone(&untimed),
                Arc::clone(&after_exit),
            );
            thread::spawn(move || {
                LATE.with(|late| {
                    *late.borrow_mut() = Some(CountOnExit {
                        timed: Arc::clone(&timed),
                        admitted_only,
                        after_exit,
                    })
                });
                // The thread's first count registers its exit step.
                timed.record(Event::Admitted);
                untimed.record(Event::Rejected);
            })
            .join()
            .unwrap();
        }
        assert_eq!(
            timed.sum(),
            Sum {
                admitted: 1,
                rejected: 1,
                timed_out: 1
            }
        );
        assert_eq!(admitted_only.sum().admitted, 1);
        assert_eq!(untimed.sum().rejected, 1);
        assert_eq!(untimed.last_rejection(), None);
        if after_exit.load(Ordering::Relaxed) {
            // The late counts took the `retired` path: a rejection there
            // is timed, an admission is not.
            assert!(timed.last_rejection().is_some());
            assert_eq!(admitted_only.last_rejection(), None);
        }
    }

    #[test]
    fn a_late_count_on_an_untimed_counter_keeps_no_time() {
        struct CountOnExit(Arc<PerThreadCounts>);
        impl Drop for CountOnExit {
            fn drop(&mut self) {
                self.0.record(Event::Rejected);
            }
        }
        thread_local! {
            static LATE: std::cell::RefCell<Option<CountOnExit>> =
                const { std::cell::RefCell::new(None) };
        }
        let untimed = Arc::new(PerThreadCounts::new(false));
        let other = Arc::new(PerThreadCounts::new(true));
        {
            let (untimed, other) = (Arc::clone(&untimed), Arc::clone(&other));
            thread::spawn(move || {
                LATE.with(|late| *late.borrow_mut() = Some(CountOnExit(untimed)));
                other.record(Event::Admitted);
            })
            .join()
            .unwrap();
        }
        assert_eq!(untimed.sum().rejected, 1);
        assert_eq!(untimed.last_rejection(), None);
    }

    #[test]
    fn a_stamp_reads_back_as_its_time() {
        assert_eq!(to_time(0), None, "never");
        assert_eq!(to_time(8), Some(UNIX_EPOCH + Duration::from_nanos(8)));
        // The state bits are not part of the time.
        assert_eq!(to_time(8 | ONE), Some(UNIX_EPOCH + Duration::from_nanos(8)));
        assert_eq!(to_time(MANY), None);
    }

    #[test]
    fn debug_names_the_slot() {
        let counts = PerThreadCounts::new(true);
        assert_eq!(format!("{counts:?}"), "PerThreadCounts { slot: None, .. }");
        counts.record(Event::Admitted);
        let slot = counts.slot().unwrap();
        assert_eq!(
            format!("{counts:?}"),
            format!("PerThreadCounts {{ slot: Some({slot}), .. }}")
        );
    }

    #[test]
    fn a_first_count_in_a_low_slot_keeps_the_counts_of_higher_ones() {
        thread::scope(|s| {
            s.spawn(|| {
                // A thread whose array holds slots beyond 32 ...
                let mut many: Vec<PerThreadCounts> =
                    (0..2 * FIRST).map(|_| PerThreadCounts::new(true)).collect();
                for c in &many {
                    c.record(Event::Admitted);
                }
                // ... while the pool holds a 32-slot array (another
                // thread's, given back when it exited) ...
                thread::scope(|s| {
                    s.spawn(|| many[0].record(Event::Admitted)).join().unwrap();
                });
                // ... counts a new compartment for the first time, in the
                // low slot that a dropped one gave back.
                drop(many.remove(0));
                let fresh = PerThreadCounts::new(true);
                fresh.record(Event::Admitted);
                assert_eq!(fresh.sum().admitted, 1);
                for (i, c) in many.iter().enumerate() {
                    assert_eq!(c.sum().admitted, 1, "compartment {i}, slot {:?}", c.slot());
                }
            });
        });
    }
}
