//! Randomized schedule tests of bulkhead-core, beyond loom's bounds; see
//! `README.md`. Without `--cfg bulkhead_shuttle` this crate is empty.
//!
//! loom enumerates every interleaving of at most three threads up to a
//! preemption bound. These tests run a dozen threads and tasks at once
//! (more waiters than one drain's batch, resizes, close, cancellation and
//! time-outs) under shuttle's randomized schedulers, which switch threads at
//! every atomic access and lock operation of core. A failure prints the
//! schedule, which replays it exactly (`BULKHEAD_SHUTTLE_REPLAY`).
//!
//! This file holds what the tests share: the runner, compartments built
//! with `bulkhead_core::ShuttleLock`, the two waiter styles, and the independent checks.

#![cfg(bulkhead_shuttle)]

use std::pin::{Pin, pin};
use std::sync::Arc as StdArc;
use std::task::{Context, Poll, Wake, Waker};

use bulkhead_core::partition::{AcquirePartition, PartitionHandle, PartitionSeat};
use bulkhead_core::{Acquire, Admission, Bulkhead, Config, Error, Seat, ShuttleLock};
use shuttle::rand::{Rng, thread_rng};
use shuttle::scheduler::{PctScheduler, RandomScheduler};
use shuttle::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use shuttle::sync::{Arc, Mutex};
use shuttle::thread;

/// The compartment type every test uses.
pub type ShuttleBulkhead = Bulkhead<ShuttleLock>;

/// A shared compartment with `max` seats and the given admission mode.
pub fn compartment(max: usize, admission: Admission) -> Arc<ShuttleBulkhead> {
    with_config(Config::new("shuttle", max).admission(admission))
}

/// A shared compartment built from `config`.
pub fn with_config(config: Config) -> Arc<ShuttleBulkhead> {
    Arc::new(Bulkhead::with_lock(config, ShuttleLock::new()).unwrap())
}

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v.parse().unwrap_or_else(|_| {
            panic!("{name}={v:?} is not a number; unset it or give an integer")
        }),
        Err(_) => default,
    }
}

/// Runs `test` under shuttle: `BULKHEAD_SHUTTLE_ITERATIONS` schedules
/// (default 200) from the random scheduler, then as many from the PCT
/// scheduler (depth 3), which is good at bugs that need a few ill-timed
/// preemptions. `BULKHEAD_SHUTTLE_SEED` fixes the first seed (default:
/// fresh each run, printed); `BULKHEAD_SHUTTLE_REPLAY` replays the schedule
/// that a failure printed instead.
pub fn check(test: impl Fn() + Send + Sync + 'static) {
    let mut config = shuttle::Config::new();
    // Shuttle treats every ordering as SeqCst; core's orderings are loom's
    // and the mutation script's business, so the warning is noise here.
    config.silence_warnings = true;
    if let Ok(schedule) = std::env::var("BULKHEAD_SHUTTLE_REPLAY") {
        let mut replay = shuttle::Config::new();
        replay.silence_warnings = true;
        shuttle::Runner::new(
            shuttle::scheduler::ReplayScheduler::new_from_encoded(&schedule),
            replay,
        )
        .run(test);
        return;
    }
    let iterations = env_number("BULKHEAD_SHUTTLE_ITERATIONS", 200) as usize;
    let seed = env_number(
        "BULKHEAD_SHUTTLE_SEED",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
    );
    eprintln!(
        "shuttle: {iterations} random + {iterations} PCT schedules, BULKHEAD_SHUTTLE_SEED={seed}"
    );
    let test = StdArc::new(test);
    let random = {
        let test = test.clone();
        move || test()
    };
    shuttle::Runner::new(
        RandomScheduler::new_from_seed(seed, iterations),
        config.clone(),
    )
    .run(random);
    shuttle::Runner::new(
        PctScheduler::new_from_seed(seed.wrapping_add(1), 3, iterations),
        config,
    )
    .run(move || test());
}

/// A random number in `0..n`, from shuttle's scheduler-controlled source
/// (so that a replayed schedule makes the same choices).
pub fn random(n: usize) -> usize {
    thread_rng().gen_range(0..n)
}

/// Lets other threads run, `n` times.
pub fn yield_times(n: usize) {
    for _ in 0..n {
        thread::yield_now();
    }
}

/// Yields until `done()` holds. Shuttle reports a deadlock or a step
/// limit if it never does.
pub fn wait_until(mut done: impl FnMut() -> bool) {
    while !done() {
        thread::yield_now();
    }
}

/// The ways a waiter in these tests waits and gives up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waiter {
    /// An async task (`.await` on the future, woken by shuttle's executor).
    Task,
    /// A blocking thread that parks between polls, like bulkhead-std.
    Thread,
    /// A thread that re-polls a few times, then times out (`time_out`).
    TimesOut,
    /// A thread that polls a few times, then drops the future.
    Cancels,
}

impl Waiter {
    /// The style for waiter number `i`: tasks and threads alternate, and
    /// when `leavers` is set every third waiter times out or cancels.
    pub fn nth(i: usize, leavers: bool) -> Self {
        match (leavers, i % 6) {
            (true, 2) => Waiter::TimesOut,
            (true, 5) => Waiter::Cancels,
            (_, k) if k % 2 == 0 => Waiter::Task,
            _ => Waiter::Thread,
        }
    }

    /// Whether this waiter may leave the line without a seat.
    pub fn may_leave(self) -> bool {
        matches!(self, Waiter::TimesOut | Waiter::Cancels)
    }
}

struct Unparker(thread::Thread);

impl Wake for Unparker {
    fn wake(self: StdArc<Self>) {
        self.0.unpark();
    }
}

/// Polls `fut` from the current thread, parking between polls, as a
/// blocking caller does. A lost wake-up parks it forever: shuttle reports
/// the deadlock.
pub fn block<F: Future>(fut: Pin<&mut F>) -> F::Output {
    let waker = Waker::from(StdArc::new(Unparker(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = fut;
    loop {
        match fut.as_mut().poll(&mut cx) {
            Poll::Ready(result) => return result,
            Poll::Pending => thread::park(),
        }
    }
}

/// A wait that can give up when its budget runs out: a plain
/// compartment's [`Acquire`] and a partition's `AcquirePartition`.
pub trait TimeOut<T>: Future<Output = Result<T, Error>> {
    /// Gives up: the seat if one was handed over meanwhile, else the
    /// verdict that came first or `Error::Timeout`.
    fn give_up(self: Pin<&mut Self>, budget: core::time::Duration) -> Self::Output;
}

impl<'a> TimeOut<Seat<'a, ShuttleLock>> for Acquire<'a, ShuttleLock> {
    fn give_up(self: Pin<&mut Self>, budget: core::time::Duration) -> Self::Output {
        self.time_out(budget)
    }
}

impl<P: PartitionHandle> TimeOut<PartitionSeat<P>> for AcquirePartition<P> {
    fn give_up(self: Pin<&mut Self>, budget: core::time::Duration) -> Self::Output {
        self.time_out(budget)
    }
}

/// Polls `fut` once; if it queued, waits at `start`, then re-polls up to
/// `polls` more times with a no-op waker, yielding between polls (a
/// re-poll may race a grant), and gives up by `time_out` or by dropping
/// it. `Ok` if a seat was handed over before it gave up.
pub fn poll_then_leave<T, F: TimeOut<T>>(
    mut fut: Pin<&mut F>,
    start: &Gate,
    polls: usize,
    time_out: bool,
) -> Option<Result<T, Error>> {
    let mut cx = Context::from_waker(Waker::noop());
    for poll in 0..=polls {
        if let Poll::Ready(result) = fut.as_mut().poll(&mut cx) {
            return Some(result);
        }
        if poll == 0 {
            start.pass();
        }
        yield_times(random(3));
    }
    if time_out {
        match fut.give_up(core::time::Duration::from_millis(1)) {
            Err(Error::Timeout { .. }) => None,
            result => Some(result),
        }
    } else {
        None // dropped here: a seat handed over meanwhile must pass on
    }
}

/// Waits in `style` for a seat of `b`, then runs `inside` with it.
/// Returns `None` if the waiter left the line without a seat. Leavers
/// queue, then wait for `start` before they may leave, so that a test can
/// line everyone up in a known order first.
pub fn wait_in_style<R>(
    b: &ShuttleBulkhead,
    style: Waiter,
    start: &Gate,
    inside: impl FnOnce(Seat<'_, ShuttleLock>) -> R,
) -> Option<Result<R, Error>> {
    let fut = pin!(b.acquire());
    let result = match style {
        Waiter::Task => shuttle::future::block_on(fut),
        Waiter::Thread => block(fut),
        Waiter::TimesOut => poll_then_leave(fut, start, random(4), true)?,
        Waiter::Cancels => poll_then_leave(fut, start, random(4), false)?,
    };
    Some(result.map(inside))
}

/// Spawns a waiter: an async task for [`Waiter::Task`], a thread
/// otherwise. The handle's result is what [`wait_in_style`] returned.
pub fn spawn_waiter<R: Send + 'static>(
    b: &Arc<ShuttleBulkhead>,
    style: Waiter,
    start: &Gate,
    inside: impl FnOnce(Seat<'_, ShuttleLock>) -> R + Send + 'static,
) -> WaiterHandle<R> {
    let (b, start) = (b.clone(), start.clone());
    match style {
        Waiter::Task => WaiterHandle::Task(shuttle::future::spawn(async move {
            let result = b.acquire().await;
            Some(result.map(inside))
        })),
        _ => WaiterHandle::Thread(thread::spawn(move || {
            wait_in_style(&b, style, &start, inside)
        })),
    }
}

/// A spawned waiter, thread or task.
pub enum WaiterHandle<R> {
    /// An async task.
    Task(shuttle::future::JoinHandle<Option<Result<R, Error>>>),
    /// A thread.
    Thread(thread::JoinHandle<Option<Result<R, Error>>>),
}

impl<R> WaiterHandle<R> {
    /// Waits for the waiter to finish; panics if it panicked.
    pub fn join(self) -> Option<Result<R, Error>> {
        match self {
            WaiterHandle::Task(h) => shuttle::future::block_on(h).expect("waiter task failed"),
            WaiterHandle::Thread(h) => h.join().expect("waiter thread panicked"),
        }
    }
}

/// The independent checks: how many callers are inside (counted outside
/// the compartment), the history of limits the test set, and the order in
/// which waiters got in.
///
/// The limit check is sound while limits change: a caller counted inside
/// was granted its seat at some moment between the start of its wait and
/// its entry, when at most the limit of that moment were inside; so at
/// entry at most the highest limit since the wait began can be inside.
/// Tests record a grow before making it and a shrink after it, so the
/// history never shows a limit lower than the compartment's.
#[derive(Clone)]
pub struct Tracker(Arc<TrackerState>);

struct TrackerState {
    inside: AtomicUsize,
    limits: Mutex<Vec<usize>>,
    entered: Mutex<Vec<usize>>,
}

impl Tracker {
    /// A tracker for a compartment that starts with `max` seats.
    pub fn new(max: usize) -> Self {
        Self(Arc::new(TrackerState {
            inside: AtomicUsize::new(0),
            limits: Mutex::new(vec![max]),
            entered: Mutex::new(Vec::new()),
        }))
    }

    /// Where a wait begins in the limit history; pass it to [`enter`].
    ///
    /// [`enter`]: Self::enter
    pub fn wait_begins(&self) -> usize {
        self.0.limits.lock().unwrap().len() - 1
    }

    /// Records a new limit (before a grow, after a shrink).
    pub fn set_limit(&self, max: usize) {
        self.0.limits.lock().unwrap().push(max);
    }

    /// Changes the compartment's limit and records it in the right order.
    pub fn resize(&self, b: &ShuttleBulkhead, max: usize) {
        let old = b.state().max_concurrent;
        if max >= old {
            self.set_limit(max);
            b.set_max_concurrent(max).unwrap();
        } else {
            b.set_max_concurrent(max).unwrap();
            self.set_limit(max);
        }
    }

    /// Counts waiter `id`, whose wait began at `since`, inside until the
    /// guard drops, and checks the limit.
    pub fn enter(&self, id: usize, since: usize) -> Inside {
        let now = self.0.inside.fetch_add(1, SeqCst) + 1;
        let limit = *self.0.limits.lock().unwrap()[since..].iter().max().unwrap();
        assert!(
            now <= limit,
            "{now} callers inside, but the limit was at most {limit} since waiter {id} began"
        );
        self.0.entered.lock().unwrap().push(id);
        Inside(self.clone())
    }

    /// How many are inside now.
    pub fn inside(&self) -> usize {
        self.0.inside.load(SeqCst)
    }

    /// The waiters that got in, in the order they did.
    pub fn entered(&self) -> Vec<usize> {
        self.0.entered.lock().unwrap().clone()
    }
}

/// A caller counted inside by a [`Tracker`]; leaves when dropped (before
/// its seat is given back, so that a successor is never counted twice).
pub struct Inside(Tracker);

impl Drop for Inside {
    fn drop(&mut self) {
        self.0.0.inside.fetch_sub(1, SeqCst);
    }
}

/// A gate that holders wait at until the test opens it.
#[derive(Clone, Default)]
pub struct Gate(Arc<AtomicUsize>);

impl Gate {
    /// Opens the gate for everyone waiting at it.
    pub fn open(&self) {
        self.0.store(1, SeqCst);
    }

    /// Yields until the gate is open.
    pub fn pass(&self) {
        wait_until(|| self.0.load(SeqCst) != 0);
    }
}

/// Asserts that the compartment is quiescent and lost no seat: nobody
/// inside or waiting, and exactly `max_concurrent` seats can be taken.
pub fn assert_no_lost_seats(b: &ShuttleBulkhead) {
    let s = b.state();
    assert_eq!((s.active, s.waiting), (0, 0), "not quiescent: {s:?}");
    if s.closed {
        assert!(matches!(b.try_acquire(), Err(Error::Closed { .. })));
        return;
    }
    let seats: Vec<_> = (0..s.max_concurrent)
        .map(|i| {
            b.try_acquire()
                .unwrap_or_else(|e| panic!("seat {i} of {} was lost: {e:?}", s.max_concurrent))
        })
        .collect();
    assert!(
        b.try_acquire().is_err(),
        "more than {} seats: {s:?}",
        s.max_concurrent
    );
    drop(seats);
}
