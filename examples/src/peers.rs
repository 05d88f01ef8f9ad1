//! The contenders of the benchmarks, behind two small traits, and the
//! scenarios that drive them. Shared by `benches/peers.rs` (criterion) and
//! the `bench-compare` binary, so both measure exactly the same code.
//!
//! Everything here is benchmark scaffolding, not API: the textbook
//! `Mutex` + `Condvar` semaphore and the bare-atomic floor are written in
//! the plainest possible way on purpose.

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Condvar, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use bulkhead_core::{Admission, Config};
use bulkhead_std::{BlockingAcquire, StdLock};
use embassy_sync::blocking_mutex::raw::CriticalSectionRawMutex;

use crate::wait_times::{self, WaitHistogram};

/// Core's compartment with std's lock: the type every scenario measures.
pub type Ours = bulkhead_core::Bulkhead<StdLock>;

/// embassy-sync's FIFO semaphore, with room for 64 waiters (scenario c).
pub type EmbassyFair = embassy_sync::semaphore::FairSemaphore<CriticalSectionRawMutex, 64>;

/// A compartment of ours with `seats` seats and the given admission order.
pub fn ours(seats: usize, admission: Admission) -> Ours {
    Ours::from_config(Config::new("bench", seats).admission(admission))
        .expect("valid bench compartment")
}

// ---------------------------------------------------------------------------
// The two baselines written here.

/// The hardware floor: a bare counter of taken seats. A CAS loop takes a
/// seat while fewer than `max` are taken; `fetch_sub` gives it back. No
/// waiting, no flags, no counters.
#[derive(Debug)]
pub struct Floor {
    taken: AtomicUsize,
    max: usize,
}

impl Floor {
    /// A floor with `max` seats.
    pub const fn new(max: usize) -> Self {
        Self {
            taken: AtomicUsize::new(0),
            max,
        }
    }

    /// Takes a seat if one is free.
    #[inline]
    pub fn try_acquire(&self) -> Option<FloorSeat<'_>> {
        let mut n = self.taken.load(Ordering::Relaxed);
        loop {
            if n >= self.max {
                return None;
            }
            match self
                .taken
                .compare_exchange_weak(n, n + 1, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return Some(FloorSeat(self)),
                Err(actual) => n = actual,
            }
        }
    }

    /// Spins (yielding the CPU between tries) until a seat is free.
    pub fn acquire_spin(&self) -> FloorSeat<'_> {
        loop {
            if let Some(seat) = self.try_acquire() {
                return seat;
            }
            thread::yield_now();
        }
    }
}

/// A seat of [`Floor`]; given back on drop.
#[derive(Debug)]
pub struct FloorSeat<'a>(&'a Floor);

impl Drop for FloorSeat<'_> {
    #[inline]
    fn drop(&mut self) {
        self.0.taken.fetch_sub(1, Ordering::Release);
    }
}

/// The textbook semaphore: a `Mutex<(available, waiting)>` and a `Condvar`.
/// A release notifies only if someone waits.
#[derive(Debug)]
pub struct CondvarSemaphore {
    state: Mutex<CvState>,
    cv: Condvar,
}

#[derive(Debug)]
struct CvState {
    available: usize,
    waiting: usize,
}

impl CondvarSemaphore {
    /// A semaphore with `permits` permits.
    pub const fn new(permits: usize) -> Self {
        Self {
            state: Mutex::new(CvState {
                available: permits,
                waiting: 0,
            }),
            cv: Condvar::new(),
        }
    }

    /// Takes a permit if one is free.
    #[inline]
    pub fn try_acquire(&self) -> Option<CondvarPermit<'_>> {
        let mut s = self.state.lock().unwrap();
        if s.available == 0 {
            return None;
        }
        s.available -= 1;
        Some(CondvarPermit(self))
    }

    /// Waits for a permit.
    pub fn acquire(&self) -> CondvarPermit<'_> {
        let mut s = self.state.lock().unwrap();
        while s.available == 0 {
            s.waiting += 1;
            s = self.cv.wait(s).unwrap();
            s.waiting -= 1;
        }
        s.available -= 1;
        CondvarPermit(self)
    }
}

/// A permit of [`CondvarSemaphore`]; given back on drop.
#[derive(Debug)]
pub struct CondvarPermit<'a>(&'a CondvarSemaphore);

impl Drop for CondvarPermit<'_> {
    #[inline]
    fn drop(&mut self) {
        let mut s = self.0.state.lock().unwrap();
        s.available += 1;
        if s.waiting > 0 {
            self.0.cv.notify_one();
        }
    }
}

// ---------------------------------------------------------------------------
// Executor bits.

/// Unparks the thread it was made on.
struct ThreadWaker(Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

thread_local! {
    static THREAD_WAKER: Waker = Waker::from(Arc::new(ThreadWaker(thread::current())));
}

/// Runs `fut` to completion on this thread, parking between polls: the
/// minimal `block_on` a blocking caller of an async-only semaphore (tokio,
/// maitake, embassy) would write. The waker is cached per thread.
pub fn block_on<F: Future>(fut: F) -> F::Output {
    let waker = THREAD_WAKER.with(Waker::clone);
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(fut);
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
        thread::park();
    }
}

/// Polls `fut` once with a no-op waker; it must be ready (scenario b).
#[inline(always)]
pub fn poll_once<F: Future>(fut: F) -> F::Output {
    let mut cx = Context::from_waker(Waker::noop());
    match pin!(fut).poll(&mut cx) {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("uncontended acquire was not ready"),
    }
}

// ---------------------------------------------------------------------------
// Work inside the critical section.

/// Busy work: `iters` dependent multiply-adds the optimiser cannot remove.
#[inline(never)]
pub fn work(iters: u32) -> u64 {
    let mut x = black_box(0x9E37_79B9_7F4A_7C15_u64);
    for i in 0..iters {
        x = black_box(
            x.wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(u64::from(i)),
        );
    }
    x
}

/// How many [`work`] iterations take about `target` per call on this
/// machine, measured the way the scenarios call it (back to back, short).
pub fn calibrate_work(target: Duration) -> u32 {
    let mut iters = 32u32;
    for _ in 0..6 {
        let mut best = f64::MAX;
        for _ in 0..5 {
            let calls = 20_000u32;
            let t = Instant::now();
            for _ in 0..calls {
                black_box(work(black_box(iters)));
            }
            best = best.min(t.elapsed().as_secs_f64() / f64::from(calls));
        }
        let scaled = f64::from(iters) * target.as_secs_f64() / best;
        iters = (scaled.round() as u32).clamp(1, 100_000);
    }
    iters
}

// ---------------------------------------------------------------------------
// Contended scenarios (c, d, f), generic over the contender.

/// A semaphore that async tasks can wait on.
pub trait AsyncSem: Send + Sync + 'static {
    /// What holding a seat looks like.
    type Guard<'a>: Send
    where
        Self: 'a;
    /// Waits for a seat.
    fn acquire(&self) -> impl Future<Output = Self::Guard<'_>> + Send;
}

/// A semaphore that threads can block on.
pub trait BlockingSem: Send + Sync + 'static {
    /// What holding a seat looks like.
    type Guard<'a>
    where
        Self: 'a;
    /// Blocks until a seat is free.
    fn acquire_blocking(&self) -> Self::Guard<'_>;
}

impl AsyncSem for Ours {
    type Guard<'a> = bulkhead_core::Seat<'a, StdLock>;
    #[inline]
    async fn acquire(&self) -> Self::Guard<'_> {
        Ours::acquire(self).await.expect("open compartment")
    }
}

/// Ours through bulkhead-tokio's `acquire_within(MaxWait::Forever)`: the
/// same wait as core's `acquire`, plus tokio's cooperative budget (each
/// poll spends a unit, as tokio's semaphore does).
pub struct OursTokio(pub Ours);

impl AsyncSem for OursTokio {
    type Guard<'a> = bulkhead_core::Seat<'a, StdLock>;
    #[inline]
    async fn acquire(&self) -> Self::Guard<'_> {
        bulkhead_tokio::TokioAcquire::acquire_within(&self.0, bulkhead_core::MaxWait::Forever)
            .await
            .expect("open compartment")
    }
}

impl BlockingSem for Ours {
    type Guard<'a> = bulkhead_core::Seat<'a, StdLock>;
    #[inline]
    fn acquire_blocking(&self) -> Self::Guard<'_> {
        BlockingAcquire::acquire_blocking(self, Duration::from_secs(3600))
            .expect("seat within an hour")
    }
}

/// Ours, but taking a free seat with core's non-counting try
/// (`acquire_if_free`) before `acquire_blocking`: no wait future is made
/// and no thread waker is looked up unless the caller must wait. A miss
/// counts nothing, so it is valid in every admission mode.
#[derive(Debug)]
pub struct TryFirst(pub Ours);

impl BlockingSem for TryFirst {
    type Guard<'a> = bulkhead_core::Seat<'a, StdLock>;
    #[inline]
    fn acquire_blocking(&self) -> Self::Guard<'_> {
        match self.0.acquire_if_free() {
            Some(seat) => seat,
            None => BlockingSem::acquire_blocking(&self.0),
        }
    }
}

impl AsyncSem for tokio::sync::Semaphore {
    type Guard<'a> = tokio::sync::SemaphorePermit<'a>;
    #[inline]
    async fn acquire(&self) -> Self::Guard<'_> {
        tokio::sync::Semaphore::acquire(self).await.expect("open")
    }
}

impl BlockingSem for tokio::sync::Semaphore {
    type Guard<'a> = tokio::sync::SemaphorePermit<'a>;
    fn acquire_blocking(&self) -> Self::Guard<'_> {
        block_on(tokio::sync::Semaphore::acquire(self)).expect("open")
    }
}

impl AsyncSem for maitake_sync::Semaphore {
    type Guard<'a> = maitake_sync::semaphore::Permit<'a>;
    #[inline]
    async fn acquire(&self) -> Self::Guard<'_> {
        maitake_sync::Semaphore::acquire(self, 1)
            .await
            .expect("open")
    }
}

impl BlockingSem for maitake_sync::Semaphore {
    type Guard<'a> = maitake_sync::semaphore::Permit<'a>;
    fn acquire_blocking(&self) -> Self::Guard<'_> {
        block_on(maitake_sync::Semaphore::acquire(self, 1)).expect("open")
    }
}

impl AsyncSem for async_lock::Semaphore {
    type Guard<'a> = async_lock::SemaphoreGuard<'a>;
    #[inline]
    async fn acquire(&self) -> Self::Guard<'_> {
        async_lock::Semaphore::acquire(self).await
    }
}

impl BlockingSem for async_lock::Semaphore {
    type Guard<'a> = async_lock::SemaphoreGuard<'a>;
    fn acquire_blocking(&self) -> Self::Guard<'_> {
        async_lock::Semaphore::acquire_blocking(self)
    }
}

impl AsyncSem for EmbassyFair {
    type Guard<'a> = embassy_sync::semaphore::SemaphoreReleaser<'a, EmbassyFair>;
    #[inline]
    async fn acquire(&self) -> Self::Guard<'_> {
        embassy_sync::semaphore::Semaphore::acquire(self, 1)
            .await
            .expect("64 waiters at most")
    }
}

impl BlockingSem for EmbassyFair {
    type Guard<'a> = embassy_sync::semaphore::SemaphoreReleaser<'a, EmbassyFair>;
    fn acquire_blocking(&self) -> Self::Guard<'_> {
        block_on(embassy_sync::semaphore::Semaphore::acquire(self, 1)).expect("8 waiters at most")
    }
}

impl BlockingSem for CondvarSemaphore {
    type Guard<'a> = CondvarPermit<'a>;
    fn acquire_blocking(&self) -> Self::Guard<'_> {
        self.acquire()
    }
}

impl BlockingSem for Floor {
    type Guard<'a> = FloorSeat<'a>;
    fn acquire_blocking(&self) -> Self::Guard<'_> {
        self.acquire_spin()
    }
}

/// What a contended run achieved.
#[derive(Debug, Clone, Copy)]
pub struct Throughput {
    /// Critical sections completed.
    pub ops: u64,
    /// Wall time from start to the last worker's exit.
    pub elapsed: Duration,
}

impl Throughput {
    /// Millions of critical sections per second.
    pub fn mops(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64() / 1e6
    }
}

/// How the tasks of scenario c hold their seat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// c1: work, no await while holding.
    Plain,
    /// c2: work and one `tokio::task::yield_now().await` while holding.
    Yield,
}

/// Scenario c: `tasks` tasks on `rt` loop acquire / work / release on one
/// semaphore for about `window`. With `unconstrained`, each task body runs
/// in `tokio::task::unconstrained` (information only: never for a target).
pub fn run_async<S: AsyncSem>(
    rt: &tokio::runtime::Runtime,
    sem: &Arc<S>,
    tasks: usize,
    work_iters: u32,
    hold: Hold,
    window: Duration,
    unconstrained: bool,
) -> Throughput {
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let sem = Arc::clone(sem);
            let stop = Arc::clone(&stop);
            let body = async move {
                let mut ops = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let guard = sem.acquire().await;
                    black_box(work(work_iters));
                    if hold == Hold::Yield {
                        tokio::task::yield_now().await;
                    }
                    drop(guard);
                    ops += 1;
                }
                ops
            };
            if unconstrained {
                rt.spawn(async move { tokio::task::unconstrained(body).await })
            } else {
                rt.spawn(body)
            }
        })
        .collect();
    thread::sleep(window);
    stop.store(true, Ordering::Relaxed);
    let ops = rt.block_on(async {
        let mut total = 0;
        for h in handles {
            total += h.await.expect("bench task");
        }
        total
    });
    Throughput {
        ops,
        elapsed: start.elapsed(),
    }
}

/// What a run of scenario d achieved: its throughput, and how long each
/// acquire waited (from calling it to holding the seat).
#[derive(Debug, Clone)]
pub struct BlockingRun {
    /// Critical sections per second.
    pub throughput: Throughput,
    /// Every acquire's waiting time, from all threads.
    pub waits: WaitHistogram,
}

/// Scenario d: `threads` threads loop acquire / work / release on one
/// semaphore, blocking while it is full, for about `window`. Each thread
/// reads the clock before and after each acquire into its own
/// preallocated histogram; they are merged after the window.
pub fn run_blocking<S: BlockingSem>(
    sem: &Arc<S>,
    threads: usize,
    work_iters: u32,
    window: Duration,
) -> BlockingRun {
    let stop = Arc::new(AtomicBool::new(false));
    let barrier = Arc::new(Barrier::new(threads + 1));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let sem = Arc::clone(sem);
            let stop = Arc::clone(&stop);
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                let mut waits = WaitHistogram::new();
                barrier.wait();
                let mut ops = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let asked = wait_times::now();
                    let guard = sem.acquire_blocking();
                    waits.record(wait_times::now().since(asked));
                    black_box(work(work_iters));
                    drop(guard);
                    ops += 1;
                }
                (ops, waits)
            })
        })
        .collect();
    barrier.wait();
    let start = Instant::now();
    thread::sleep(window);
    stop.store(true, Ordering::Relaxed);
    let mut ops = 0;
    let mut waits = WaitHistogram::new();
    for h in handles {
        let (n, w) = h.join().expect("bench thread");
        ops += n;
        waits.merge(&w);
    }
    BlockingRun {
        throughput: Throughput {
            ops,
            elapsed: start.elapsed(),
        },
        waits,
    }
}

/// Scenario f: `threads` blocking threads and `tasks` tasks on `rt` share
/// one compartment for about `window`. Returns the total throughput.
pub fn run_mixed(
    rt: &tokio::runtime::Runtime,
    b: &Arc<Ours>,
    threads: usize,
    tasks: usize,
    work_iters: u32,
    window: Duration,
) -> Throughput {
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let task_handles: Vec<_> = (0..tasks)
        .map(|_| {
            let b = Arc::clone(b);
            let stop = Arc::clone(&stop);
            rt.spawn(async move {
                let mut ops = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let seat = AsyncSem::acquire(&*b).await;
                    black_box(work(work_iters));
                    drop(seat);
                    ops += 1;
                    // A task that never waits would never let the others
                    // run on its worker; yield now and then, as real
                    // request handlers do on I/O.
                    if ops.is_multiple_of(16) {
                        tokio::task::yield_now().await;
                    }
                }
                ops
            })
        })
        .collect();
    let thread_handles: Vec<_> = (0..threads)
        .map(|_| {
            let b = Arc::clone(b);
            let stop = Arc::clone(&stop);
            thread::spawn(move || {
                let mut ops = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let seat = BlockingSem::acquire_blocking(&*b);
                    black_box(work(work_iters));
                    drop(seat);
                    ops += 1;
                }
                ops
            })
        })
        .collect();
    thread::sleep(window);
    stop.store(true, Ordering::Relaxed);
    let mut ops: u64 = thread_handles
        .into_iter()
        .map(|h| h.join().expect("bench thread"))
        .sum();
    ops += rt.block_on(async {
        let mut total = 0;
        for h in task_handles {
            total += h.await.expect("bench task");
        }
        total
    });
    Throughput {
        ops,
        elapsed: start.elapsed(),
    }
}

/// A tokio multi-thread runtime with `workers` workers, as scenario c uses.
pub fn runtime(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_time()
        .build()
        .expect("tokio runtime")
}

// ---------------------------------------------------------------------------
// Weighted seats (scenario w).

/// A semaphore that async tasks can take several seats of at once.
pub trait WeightedSem: Send + Sync + 'static {
    /// What holding the seats looks like.
    type Guard<'a>: Send
    where
        Self: 'a;
    /// Waits for `weight` seats at once.
    fn acquire_many(&self, weight: u32) -> impl Future<Output = Self::Guard<'_>> + Send;
}

impl WeightedSem for Ours {
    type Guard<'a> = bulkhead_core::Seat<'a, StdLock>;
    #[inline]
    async fn acquire_many(&self, weight: u32) -> Self::Guard<'_> {
        Ours::acquire_many(self, weight as usize)
            .await
            .expect("open compartment, weight within the limit")
    }
}

impl WeightedSem for tokio::sync::Semaphore {
    type Guard<'a> = tokio::sync::SemaphorePermit<'a>;
    #[inline]
    async fn acquire_many(&self, weight: u32) -> Self::Guard<'_> {
        tokio::sync::Semaphore::acquire_many(self, weight)
            .await
            .expect("open")
    }
}

impl WeightedSem for maitake_sync::Semaphore {
    type Guard<'a> = maitake_sync::semaphore::Permit<'a>;
    #[inline]
    async fn acquire_many(&self, weight: u32) -> Self::Guard<'_> {
        maitake_sync::Semaphore::acquire(self, weight as usize)
            .await
            .expect("open, weight within the permits")
    }
}

impl WeightedSem for EmbassyFair {
    type Guard<'a> = embassy_sync::semaphore::SemaphoreReleaser<'a, EmbassyFair>;
    #[inline]
    async fn acquire_many(&self, weight: u32) -> Self::Guard<'_> {
        embassy_sync::semaphore::Semaphore::acquire(self, weight as usize)
            .await
            .expect("64 waiters at most")
    }
}

/// The weight of task `i` in scenario w: 1, 2, 3, 4, 1, 2, … so each
/// weight has the same number of tasks.
pub const fn task_weight(i: usize) -> u32 {
    (i % 4) as u32 + 1
}

/// Scenario w: `tasks` tasks on `rt`, task `i` of weight
/// [`task_weight(i)`](task_weight), loop acquire-many / work / release on
/// one semaphore for about `window`, holding as `hold` says (as scenario
/// c). Counts operations (acquisitions), whatever their weight.
pub fn run_weighted<S: WeightedSem>(
    rt: &tokio::runtime::Runtime,
    sem: &Arc<S>,
    tasks: usize,
    work_iters: u32,
    hold: Hold,
    window: Duration,
) -> Throughput {
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let handles: Vec<_> = (0..tasks)
        .map(|i| {
            let sem = Arc::clone(sem);
            let stop = Arc::clone(&stop);
            let weight = task_weight(i);
            rt.spawn(async move {
                let mut ops = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let guard = sem.acquire_many(weight).await;
                    black_box(work(work_iters));
                    if hold == Hold::Yield {
                        tokio::task::yield_now().await;
                    }
                    drop(guard);
                    ops += 1;
                }
                ops
            })
        })
        .collect();
    thread::sleep(window);
    stop.store(true, Ordering::Relaxed);
    let ops = rt.block_on(async {
        let mut total = 0;
        for h in handles {
            total += h.await.expect("bench task");
        }
        total
    });
    Throughput {
        ops,
        elapsed: start.elapsed(),
    }
}
