//! `StdLock` counts per thread (see `std-adapter/src/counts.rs`, "Exact
//! counts"): each thread counts into cells only it writes, a read sums
//! every live thread's cells and the counts exited threads left behind.
//! This test drives every way a count moves while readers sum: threads
//! that exit mid-way and new ones spawned after, counts made in
//! thread-local destructors, arrays that grow, compartments dropped and
//! recreated (their slot, and the cells that go with it, given out again)
//! while the threads that counted on them live on. It checks that a read
//! never goes backwards, never misses an event that finished before it
//! began, never counts one that had not begun, and that the final counts
//! are exactly what was done.
//!
//! One test function, so that the first phase sees a process whose table
//! of counts nobody else has touched.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Barrier, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, SystemTime};

use bulkhead_std::prelude::*;
use bulkhead_std::{Bulkhead, Config, Error, MaxWait, StdLock};

/// Worker threads alive at once.
const THREADS: usize = 8;
/// Generations of workers: each worker spawns its successor half-way.
const GENERATIONS: usize = 3;
/// Rounds per worker; a round counts one admission and one rejection.
const ROUNDS: u64 = 2_000;
/// Every this many rounds, a queue-full rejection and a fail-fast one.
const QUEUE_EVERY: u64 = 10;
/// Every this many rounds, a time-out (a 1 ms wait).
const TIMEOUT_EVERY: u64 = 50;
/// Every this many rounds, a worker counts on a compartment of its own.
const OWN_EVERY: u64 = 100;
/// Admissions per gen-0 worker on the compartment that is dropped, and on
/// its successor.
const DOOMED: u64 = 300;
/// Compartments per grower thread (well past the smallest array).
const GROWN: usize = 150;
/// Rejections counted in each worker's thread-local destructors.
const ON_EXIT: u64 = 7;
/// Threads that count only in their thread-local destructors.
const SILENT: usize = 4;

/// What a reader checks a sum against: `begun` is bumped before an event,
/// `finished` after it.
#[derive(Default)]
struct Truth {
    begun: AtomicU64,
    finished: AtomicU64,
}

impl Truth {
    fn event<T>(&self, f: impl FnOnce() -> T) -> T {
        self.begun.fetch_add(1, SeqCst);
        let r = f();
        self.finished.fetch_add(1, SeqCst);
        r
    }

    /// Reads `sum` between the two bounds and checks it against them and
    /// against the previous read.
    fn check(&self, what: &str, previous: &mut u64, sum: impl FnOnce() -> u64) {
        let finished = self.finished.load(SeqCst);
        let now = sum();
        let begun = self.begun.load(SeqCst);
        assert!(
            now >= finished,
            "{what}: read {now}, but {finished} had finished before the read"
        );
        assert!(
            now <= begun,
            "{what}: read {now}, but only {begun} had begun after the read"
        );
        assert!(
            now >= *previous,
            "{what}: went back from {previous} to {now}"
        );
        *previous = now;
    }
}

/// The compartments every worker shares, and the truth about them.
struct Shared {
    /// Room for everyone: admissions.
    open: Bulkhead,
    /// One seat, held: `Full` rejections.
    full: Bulkhead,
    /// One seat, held, no queue: `QueueFull` rejections from a bounded
    /// blocking wait.
    queue: Bulkhead,
    /// One seat, held: time-outs.
    timed: Bulkhead,
    /// One seat, held, untimed lock: `Full` rejections without a time.
    untimed: Bulkhead,
    /// One seat, held: rejections counted in thread-local destructors.
    on_exit: Arc<Bulkhead>,
    admitted: Truth,
    full_rejected: Truth,
    queue_rejected: Truth,
    timed_out: Truth,
    untimed_rejected: Truth,
    exit_rejected: Truth,
    /// The compartment that is dropped and replaced mid-way.
    doomed: Mutex<Arc<Bulkhead>>,
    /// Gen-0 workers and the main thread meet around the replacement.
    doomed_counted: Barrier,
    doomed_replaced: Barrier,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

/// Counts `ON_EXIT` rejections on its compartment when the thread's
/// thread-locals are destroyed.
struct CountOnExit(Option<Arc<Bulkhead>>);

impl Drop for CountOnExit {
    fn drop(&mut self) {
        let Some(b) = self.0.take() else { return };
        for _ in 0..ON_EXIT {
            // The truth was bumped by the worker before it exited: the
            // count lands after `finished`, before the thread is joined.
            assert!(matches!(b.try_acquire(), Err(Error::Full { .. })));
        }
    }
}

thread_local! {
    static ON_EXIT_GUARD: RefCell<CountOnExit> = const { RefCell::new(CountOnExit(None)) };
}

fn arm_on_exit(shared: &Shared) {
    ON_EXIT_GUARD.with(|g| g.borrow_mut().0 = Some(Arc::clone(&shared.on_exit)));
}

/// A thread whose only counts are made by its thread-local destructor:
/// its first count comes while its thread-locals are being destroyed.
fn silent(shared: Arc<Shared>) {
    arm_on_exit(&shared);
    shared.exit_rejected.begun.fetch_add(ON_EXIT, SeqCst);
}

fn worker(shared: Arc<Shared>, generation: usize, index: usize) {
    // Two orders of the guard against this thread's first count: armed
    // first, its destructor is registered before the exit step's and runs
    // after it (the counts go to the exited threads' totals); armed last,
    // it runs before (the counts land in this thread's cells, then are
    // folded). Either way they must all be there.
    let armed_first = index.is_multiple_of(2);
    if armed_first {
        arm_on_exit(&shared);
    }
    // Workers stagger their exits.
    let rounds = ROUNDS - (index as u64 * ROUNDS / (2 * THREADS as u64));
    let mut own = Vec::new();
    for round in 0..rounds {
        shared
            .admitted
            .event(|| drop(shared.open.try_acquire().unwrap()));
        shared.full_rejected.event(|| {
            assert!(matches!(shared.full.try_acquire(), Err(Error::Full { .. })));
        });
        shared.untimed_rejected.event(|| {
            assert!(matches!(
                shared.untimed.try_acquire(),
                Err(Error::Full { .. })
            ));
        });
        if round.is_multiple_of(QUEUE_EVERY) {
            shared.queue_rejected.event(|| {
                let r = shared.queue.acquire_blocking(Duration::from_secs(10));
                assert!(matches!(r, Err(Error::QueueFull { .. })), "{r:?}");
            });
            shared.full_rejected.event(|| {
                let r = shared.full.acquire_blocking(MaxWait::FailFast);
                assert!(matches!(r, Err(Error::Full { .. })), "{r:?}");
            });
        }
        if round.is_multiple_of(TIMEOUT_EVERY) {
            shared.timed_out.event(|| {
                let r = shared.timed.acquire_blocking(Duration::from_millis(1));
                assert!(matches!(r, Err(Error::Timeout { .. })), "{r:?}");
            });
        }
        if round % OWN_EVERY == OWN_EVERY / 2 {
            // A new slot, likely beyond this thread's array (the growers
            // hold many): it grows while the readers sum.
            let b = Bulkhead::new("own", 1).unwrap();
            let seat = b.try_acquire().unwrap();
            for _ in 0..=own.len() {
                assert!(b.try_acquire().is_err());
            }
            drop(seat);
            own.push(b);
        }
        for (i, b) in own.iter().enumerate() {
            let s = b.state();
            assert_eq!((s.rejected, s.timed_out), (i + 1, 0), "own {i}");
            assert_eq!(b.raw_lock().admitted(), 1, "own {i}");
        }
        if generation == 0 && round == 0 {
            let doomed = Arc::clone(&shared.doomed.lock().unwrap());
            for _ in 0..DOOMED {
                drop(doomed.try_acquire().unwrap());
            }
            drop(doomed);
            shared.doomed_counted.wait();
            // The main thread drops it (its slot's cells, ours among
            // them, are zeroed) and puts a new one in its place.
            shared.doomed_replaced.wait();
            let fresh = Arc::clone(&shared.doomed.lock().unwrap());
            for _ in 0..DOOMED {
                drop(fresh.try_acquire().unwrap());
            }
        }
        if round == rounds / 2 && generation + 1 < GENERATIONS {
            let next = Arc::clone(&shared);
            let handle = thread::spawn(move || worker(next, generation + 1, index));
            shared.workers.lock().unwrap().push(handle);
        }
    }
    // Own compartments dropped while other threads count and read.
    drop(own);
    if !armed_first {
        arm_on_exit(&shared);
    }
    // The destructor's counts, owed before this thread is joined.
    shared.exit_rejected.begun.fetch_add(ON_EXIT, SeqCst);
}

/// A grower: many compartments of its own, a known count on each; some
/// dropped and replaced. Every sum is exact at every step, since only this
/// thread counts on them.
fn grower(seed: usize) {
    let mut mine: Vec<(Bulkhead, usize)> = Vec::new();
    for i in 0..GROWN {
        let b = Bulkhead::new("grown", 2).unwrap();
        let n = 1 + (i + seed) % 5;
        for _ in 0..n {
            drop(b.try_acquire().unwrap());
        }
        mine.push((b, n));
        if i % 16 == 15 {
            // Free a low slot and take one: the new compartment may get a
            // slot this thread's (larger) array already holds.
            let (old, _) = mine.swap_remove(i / 3);
            drop(old);
        }
        for (j, (b, n)) in mine.iter().enumerate() {
            assert_eq!(b.raw_lock().admitted(), *n as u64, "grown {j}");
        }
    }
}

fn held(name: &'static str, lock: StdLock) -> Bulkhead {
    Bulkhead::with_lock(Config::new(name, 1), lock).unwrap()
}

#[test]
fn counts_are_exact_across_exits_growth_and_reuse() {
    // Phase 1, alone in the process: a thread outgrows its first array
    // (which goes to the pool), then a freed low slot is given to a new
    // compartment that it counts on. Counting in place keeps the counts
    // beyond the first array's length; moving to the pooled (shorter)
    // array would lose them.
    thread::spawn(|| {
        let mut many: Vec<Bulkhead> = (0..40).map(|_| Bulkhead::new("many", 2).unwrap()).collect();
        for b in &many {
            drop(b.try_acquire().unwrap());
        }
        drop(many.remove(0));
        let next = Bulkhead::new("next", 2).unwrap();
        drop(next.try_acquire().unwrap());
        assert_eq!(next.raw_lock().admitted(), 1);
        for (i, b) in many.iter().enumerate() {
            assert_eq!(b.raw_lock().admitted(), 1, "compartment {i}");
        }
    })
    .join()
    .unwrap();

    // Phase 2: everything at once.
    let shared = Arc::new(Shared {
        open: Bulkhead::new("open", 1_000).unwrap(),
        full: held("full", StdLock::new()),
        queue: Bulkhead::from_config(Config::new("queue", 1).max_waiting(0)).unwrap(),
        timed: held("timed", StdLock::new()),
        untimed: held("untimed", StdLock::untimed()),
        on_exit: Arc::new(held("on_exit", StdLock::new())),
        admitted: Truth::default(),
        full_rejected: Truth::default(),
        queue_rejected: Truth::default(),
        timed_out: Truth::default(),
        untimed_rejected: Truth::default(),
        exit_rejected: Truth::default(),
        doomed: Mutex::new(Arc::new(Bulkhead::new("doomed", 1_000).unwrap())),
        doomed_counted: Barrier::new(THREADS + 1),
        doomed_replaced: Barrier::new(THREADS + 1),
        workers: Mutex::new(Vec::new()),
    });
    let seats = [
        shared.full.try_acquire().unwrap(),
        shared.queue.try_acquire().unwrap(),
        shared.timed.try_acquire().unwrap(),
        shared.untimed.try_acquire().unwrap(),
        shared.on_exit.try_acquire().unwrap(),
    ];
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (shared, done) = (Arc::clone(&shared), Arc::clone(&done));
            thread::spawn(move || {
                let mut last = [0u64; 6];
                let mut last_time: Option<SystemTime> = None;
                let mut reads = 0u64;
                while !done.load(SeqCst) {
                    let s = &*shared;
                    s.admitted
                        .check("admitted", &mut last[0], || s.open.raw_lock().admitted());
                    s.full_rejected
                        .check("full", &mut last[1], || s.full.state().rejected as u64);
                    s.queue_rejected.check("queue full", &mut last[2], || {
                        s.queue.state().rejected as u64
                    });
                    s.timed_out.check("timed out", &mut last[3], || {
                        s.timed.state().timed_out as u64
                    });
                    s.untimed_rejected.check("untimed", &mut last[4], || {
                        s.untimed.state().rejected as u64
                    });
                    // Bumped when a worker ends, before its destructors
                    // count: only the upper bound and the order hold.
                    let exit = s.on_exit.state().rejected as u64;
                    assert!(
                        exit >= last[5],
                        "on exit: went back from {} to {exit}",
                        last[5]
                    );
                    assert!(
                        exit <= s.exit_rejected.begun.load(SeqCst),
                        "on exit: {exit}"
                    );
                    last[5] = exit;
                    // The time races the rejections that set it; it never
                    // goes back.
                    let t = s.full.raw_lock().last_rejection();
                    assert!(t >= last_time, "the last rejection went back");
                    last_time = t;
                    assert_eq!(s.untimed.raw_lock().last_rejection(), None);
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    let silent: Vec<_> = (0..SILENT)
        .map(|_| {
            let shared = Arc::clone(&shared);
            thread::spawn(move || silent(shared))
        })
        .collect();
    let growers: Vec<_> = (0..2).map(|i| thread::spawn(move || grower(i))).collect();
    for index in 0..THREADS {
        let next = Arc::clone(&shared);
        let handle = thread::spawn(move || worker(next, 0, index));
        shared.workers.lock().unwrap().push(handle);
    }

    // The doomed compartment: every gen-0 worker counted on it and lives
    // on; drop it and put a new one in its place, which starts at zero.
    shared.doomed_counted.wait();
    let old = {
        let mut slot = shared.doomed.lock().unwrap();
        std::mem::replace(
            &mut *slot,
            Arc::new(Bulkhead::new("doomed", 1_000).unwrap()),
        )
    };
    let old = Arc::into_inner(old).expect("the workers let go of it");
    assert_eq!(old.raw_lock().admitted(), THREADS as u64 * DOOMED);
    drop(old);
    let fresh = Arc::clone(&shared.doomed.lock().unwrap());
    // Counted first here, so that it takes the slot just freed (the
    // smallest free one) while the workers' cells for it are fresh zeros.
    drop(fresh.try_acquire().unwrap());
    assert_eq!(
        fresh.raw_lock().admitted(),
        1,
        "a new compartment starts at zero"
    );
    shared.doomed_replaced.wait();

    // Join every worker, including those spawned meanwhile.
    loop {
        let Some(handle) = shared.workers.lock().unwrap().pop() else {
            break;
        };
        handle.join().unwrap();
    }
    for t in silent {
        t.join().unwrap();
    }
    for g in growers {
        g.join().unwrap();
    }
    done.store(true, SeqCst);
    let reads: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    assert!(reads > 0, "the readers read");

    // Exact, with every counting thread done.
    let workers = (THREADS * GENERATIONS) as u64;
    let per_worker = |f: &dyn Fn(u64) -> u64| -> u64 {
        (0..GENERATIONS)
            .flat_map(|_| 0..THREADS)
            .map(|index| f(ROUNDS - (index as u64 * ROUNDS / (2 * THREADS as u64))))
            .sum()
    };
    let admitted = per_worker(&|rounds| rounds);
    let queue_full = per_worker(&|rounds| rounds.div_ceil(QUEUE_EVERY));
    let timeouts = per_worker(&|rounds| rounds.div_ceil(TIMEOUT_EVERY));
    let s = &*shared;
    assert_eq!(s.admitted.finished.load(SeqCst), admitted, "the plan ran");
    assert_eq!(s.open.raw_lock().admitted(), admitted);
    assert_eq!(s.open.state().rejected, 0);
    assert_eq!(s.full.state().rejected as u64, admitted + queue_full);
    assert_eq!(s.full.state().timed_out, 0);
    assert_eq!(s.full.raw_lock().admitted(), 1, "the held seat");
    assert_eq!(s.queue.state().rejected as u64, queue_full);
    assert_eq!(s.queue.state().timed_out, 0);
    assert_eq!(s.timed.state().timed_out as u64, timeouts);
    assert_eq!(s.timed.state().rejected, 0, "a time-out is not a rejection");
    assert_eq!(s.untimed.state().rejected as u64, admitted);
    assert_eq!(s.untimed.raw_lock().last_rejection(), None);
    assert_eq!(
        s.on_exit.state().rejected as u64,
        (workers + SILENT as u64) * ON_EXIT
    );
    assert_eq!(
        fresh.raw_lock().admitted(),
        THREADS as u64 * DOOMED + 1,
        "the new compartment counts only its own"
    );
    assert!(s.full.raw_lock().last_rejection().is_some());
    drop(seats);
}
