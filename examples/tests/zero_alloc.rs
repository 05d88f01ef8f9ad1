//! Zero heap allocations per acquire, wait and release, proven with a
//! counting global allocator, on these paths: core's async path (polled by
//! hand), the blocking path (`acquire_blocking`, parked and handed off),
//! the tokio path (core's `acquire` awaited in a tokio task), the tower
//! layer in both modes (failing fast, and waiting with a budget), admitted
//! and rejected requests alike, with its default boxed errors (one
//! allocation per rejection, asserted exactly) and with `typed_errors`
//! (none), the same layer over an adaptive compartment and over an
//! adaptive registry domain (each admitted request timed and recording a
//! sample, in both modes), each of those with a weight function (every
//! request taking two seats), and the
//! registry's adaptive sample path (a seat by name that records a sample
//! and moves the limit when given back). Each wait is
//! real: the waiter is queued (`state().waiting == 1`) before the holder
//! releases (or its budget runs out), and the seat reaches it by hand-off.
//!
//! Allocations are counted per [`Meter`], and only on the threads that
//! joined it: the test's own thread, the waiter thread it spawns, the
//! tokio runtime's workers. The test harness's threads (and other tests
//! running in parallel) never join, so their allocations are not counted,
//! and the tests may run side by side. Every path is warmed up first (the
//! std thread waker is made once per thread, tokio grows its queues once),
//! then counted over several rounds. `an_injected_allocation_is_counted`
//! checks that the meter does see an allocation on a participating thread,
//! and `allocations_on_other_threads_are_not_counted` that it ignores the
//! rest.
//!
//! The same harness measures tokio's `Semaphore` and async-lock's per wait,
//! for comparison; their figures are printed (`--nocapture`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::hint::black_box;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};
use std::thread;
use std::time::Duration;

use bulkhead_core::{Admission, Bulkhead, Config, OwnedSeat};
use bulkhead_std::{BlockingAcquire, MaxWait, StdLock};
use bulkhead_tokio::{BoxErrors, BulkheadLayer, LayerHandle};

/// Counts every allocation (and reallocation) made on a thread that joined
/// a [`Meter`], into that meter.
struct Counting;

thread_local! {
    /// The meter this thread counts into, if any. A `const`-initialised
    /// `Cell` of a reference has no destructor, so reading it never
    /// allocates or registers anything (it is read inside the allocator).
    static METER: Cell<Option<&'static AtomicUsize>> = const { Cell::new(None) };
}

fn count_one() {
    // `try_with`: during thread teardown the slot may be gone; such late
    // allocations belong to no measurement.
    let _ = METER.try_with(|meter| {
        if let Some(count) = meter.get() {
            count.fetch_add(1, Ordering::Relaxed);
        }
    });
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees are passed through; counting reads a
// thread-local `Cell` and bumps a relaxed atomic, and neither allocates nor
// unwinds.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: forwarded as is; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        // SAFETY: as above; `ptr` came from this allocator, i.e. `System`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// One measurement's allocation count, shared by the threads that join it.
/// Reads are ordered after the counted threads' work by the same atomics
/// (`SeqCst` hand-shakes, joins) that the paths use to wait for each other.
#[derive(Clone, Copy)]
struct Meter(&'static AtomicUsize);

impl Meter {
    /// A new meter; the calling thread joins it.
    fn new() -> Self {
        // Leaked: a few bytes per test, allocated before anyone counts.
        let meter = Self(Box::leak(Box::new(AtomicUsize::new(0))));
        meter.join();
        meter
    }

    /// Counts this thread's allocations into this meter from now on.
    fn join(self) {
        METER.with(|m| m.set(Some(self.0)));
    }

    fn allocs(self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// An allocation a path makes on purpose, to check that the meter sees it.
fn injected_allocation(inject: bool) {
    if inject {
        black_box(Box::new(0u64));
    }
}

type Ours = Bulkhead<StdLock>;

fn ours(admission: Admission) -> Ours {
    ours_with(admission, 1)
}

fn ours_with(admission: Admission, seats: usize) -> Ours {
    Ours::from_config(Config::new("alloc", seats).admission(admission)).unwrap()
}

/// A waker that counts its wake-ups and owns nothing.
static WAKES: AtomicUsize = AtomicUsize::new(0);
static COUNTING_VTABLE: RawWakerVTable = RawWakerVTable::new(
    |p| RawWaker::new(p, &COUNTING_VTABLE),
    |_| {
        WAKES.fetch_add(1, Ordering::SeqCst);
    },
    |_| {
        WAKES.fetch_add(1, Ordering::SeqCst);
    },
    |_| {},
);

fn counting_waker() -> Waker {
    // SAFETY: the vtable's functions ignore the data pointer, never free
    // anything, and are thread-safe (one atomic increment).
    unsafe { Waker::from_raw(RawWaker::new(std::ptr::null(), &COUNTING_VTABLE)) }
}

const ROUNDS: usize = 20;

/// Core's async path by hand: hold the only seat, poll a waiter (queued,
/// Pending), release (hand-off wakes it), poll again (Ready), release.
/// Returns allocations over `ROUNDS` waits.
fn core_async(admission: Admission, inject: bool) -> usize {
    let meter = Meter::new();
    let b = ours(admission);
    let waker = counting_waker();
    let mut cx = Context::from_waker(&waker);
    let mut total = 0;
    for round in 0..=ROUNDS {
        let wakes = WAKES.load(Ordering::SeqCst);
        let before = meter.allocs();
        let holder = b.try_acquire().unwrap();
        let mut waiter = pin!(b.acquire());
        assert!(waiter.as_mut().poll(&mut cx).is_pending());
        assert_eq!(b.state().waiting, 1, "a real wait: the waiter is queued");
        drop(holder);
        assert!(WAKES.load(Ordering::SeqCst) > wakes, "woken by the release");
        let Poll::Ready(Ok(seat)) = waiter.as_mut().poll(&mut cx) else {
            panic!("handed off")
        };
        black_box(&seat);
        injected_allocation(inject);
        drop(seat);
        let after = meter.allocs();
        if round > 0 {
            total += after - before;
        }
    }
    assert_eq!(b.state().active, 0);
    total
}

/// The blocking path: a waiter thread blocks in `acquire_blocking`, the
/// test thread releases once it is queued. Counts both threads; an
/// injected allocation is made on the waiter thread.
fn blocking(admission: Admission, inject: bool) -> usize {
    let meter = Meter::new();
    let b = Arc::new(ours(admission));
    let go = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let waiter = {
        let (b, go, done) = (b.clone(), go.clone(), done.clone());
        thread::spawn(move || {
            meter.join();
            for round in 1..=ROUNDS + 1 {
                while go.load(Ordering::SeqCst) < round {
                    thread::yield_now();
                }
                let seat = b.acquire_blocking(Duration::from_secs(30)).unwrap();
                black_box(&seat);
                injected_allocation(inject);
                drop(seat);
                done.store(round, Ordering::SeqCst);
            }
        })
    };
    let mut total = 0;
    for round in 1..=ROUNDS + 1 {
        // Round 1 warms up: it makes the waiter thread's cached waker.
        let holder = b.try_acquire().unwrap();
        let before = meter.allocs();
        go.store(round, Ordering::SeqCst);
        while b.state().waiting == 0 {
            thread::yield_now();
        }
        // Let it park for real.
        thread::sleep(Duration::from_micros(200));
        drop(holder);
        while done.load(Ordering::SeqCst) < round {
            thread::yield_now();
        }
        let after = meter.allocs();
        if round > 1 {
            total += after - before;
        }
    }
    waiter.join().unwrap();
    assert_eq!(b.state().active, 0);
    total
}

/// The tokio path: core's `acquire` awaited in a task on a multi-thread
/// runtime, queued behind a seat that another task releases. Every worker
/// counts; the window is inside the waiting task, so spawns and joins are
/// outside it. An injected allocation is made by the releasing task.
fn tokio_path(admission: Admission, inject: bool) -> usize {
    let meter = Meter::new();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .on_thread_start(move || meter.join())
        .build()
        .unwrap();
    let b = Arc::new(ours(admission));
    rt.block_on(async {
        let b2 = b.clone();
        tokio::spawn(async move {
            let mut total = 0;
            for round in 0..=ROUNDS {
                let holder = OwnedSeat::try_acquire(b2.clone()).unwrap();
                let releaser = {
                    let b3 = b2.clone();
                    tokio::spawn(async move {
                        while b3.state().waiting == 0 {
                            tokio::task::yield_now().await;
                        }
                        injected_allocation(inject);
                        drop(holder);
                    })
                };
                let before = meter.allocs();
                let seat = b2.acquire().await.unwrap();
                black_box(&seat);
                drop(seat);
                let after = meter.allocs();
                releaser.await.unwrap();
                if round > 0 {
                    total += after - before;
                }
            }
            total
        })
        .await
        .unwrap()
    })
}

/// An inner service that answers at once, allocating nothing.
#[derive(Clone)]
struct Echo;

impl tower_service::Service<usize> for Echo {
    type Response = usize;
    type Error = std::convert::Infallible;
    type Future = std::future::Ready<Result<usize, Self::Error>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, n: usize) -> Self::Future {
        std::future::ready(Ok(n))
    }
}

/// One tower-layer scenario of [`tower_path`].
#[derive(Clone, Copy, Debug)]
struct TowerCase {
    /// Wait for a seat (a budget) rather than fail fast.
    wait: bool,
    /// Every request finds the only seat taken, and is rejected: at once
    /// (`Full`) failing fast, after its budget (`Timeout`) waiting.
    reject: bool,
    /// The layer's errors are `ServiceError`s (`typed_errors`), not boxed.
    typed: bool,
    /// The layer has a weight function, and every request takes both
    /// seats of a two-seat compartment: one seat taken by someone else
    /// makes it wait (or be rejected), as the only seat does unweighted.
    weighted: bool,
    /// What the layer is built over.
    over: Over,
}

impl TowerCase {
    /// The compartment's seats, and each request's weight.
    fn seats(self) -> usize {
        if self.weighted { 2 } else { 1 }
    }
}

/// The weight function of a weighted [`TowerCase`].
fn both_seats(_: &usize) -> usize {
    2
}

/// What a [`TowerCase`]'s layer admits requests through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Over {
    /// A compartment (`Arc<Bulkhead>`): nothing is recorded.
    Compartment,
    /// An adaptive compartment (`Arc<Adaptive>`): each admitted request is
    /// timed and records a sample, classified by a closure, when its
    /// response completes.
    Adaptive,
    /// An adaptive registry domain (`from_registry`): as `Adaptive`,
    /// through the registry's controller.
    Domain,
}

impl Over {
    const ALL: [Over; 3] = [Over::Compartment, Over::Adaptive, Over::Domain];
}

/// The budget of a waiting request that is to be admitted: it never runs out.
const LONG_WAIT: Duration = Duration::from_secs(30);
/// The budget of a waiting request that is to be rejected.
const SHORT_WAIT: Duration = Duration::from_millis(1);

/// The tower layer, polled by hand inside a tokio runtime (its waits use
/// tokio's timer). Admitted, failing fast: each call is admitted and
/// answered. Admitted, waiting: each call queues behind the only seat (its
/// response future is `Pending`, queued), the holder releases, and the next
/// poll calls the inner service. Rejected: the only seat is held
/// throughout; failing fast the response is `Full` at once, waiting it is
/// queued, then `Timeout` once its budget has passed. Counts every call,
/// response future, hand-off and rejection. Weighted, the same with two
/// seats, each request taking both and the holder one.
fn tower_path(case: TowerCase, inject: bool) -> usize {
    let max_wait = match (case.wait, case.reject) {
        (false, _) => MaxWait::FailFast,
        (true, false) => MaxWait::UpTo(LONG_WAIT),
        (true, true) => MaxWait::UpTo(SHORT_WAIT),
    };
    let seats = case.seats();
    match case.over {
        Over::Compartment => {
            let b = Arc::new(ours_with(Admission::Fifo, seats));
            let layer = BulkheadLayer::new(Arc::clone(&b)).max_wait(max_wait);
            assert!(!layer.is_adaptive());
            layer_rounds(layer, &b, case, inject)
        }
        Over::Adaptive => {
            use bulkhead_std::bulkhead_core::limit::{Aimd, AimdParams};
            // Pinned (`min = max`) so that the scenarios' seat count
            // holds; each sample still goes through the controller.
            let pinned = Aimd::new(AimdParams {
                initial: seats,
                min: seats,
                max: seats,
                ..AimdParams::DEFAULT
            })
            .unwrap();
            let adaptive: Arc<bulkhead_std::Adaptive<Aimd>> =
                Arc::new(bulkhead_std::Adaptive::new(
                    ours_with(Admission::Fifo, seats),
                    pinned,
                    bulkhead_std::StdClock,
                ));
            let layer = BulkheadLayer::new(Arc::clone(&adaptive)).max_wait(max_wait);
            counted_samples(layer, adaptive.bulkhead(), case, inject)
        }
        Over::Domain => {
            use bulkhead_std::registry::{DomainConfig, Registry};
            use bulkhead_std::{Algorithm, LimitConfig};

            let registry = Registry::local();
            // Pinned, as above.
            let pinned = LimitConfig {
                min: Some(seats),
                max: Some(seats),
                ..LimitConfig::new(Algorithm::Aimd)
            };
            let name = "alloc-tower-adaptive";
            registry
                .get_or_create(name, DomainConfig::new(seats).limit(pinned))
                .unwrap();
            let b = registry.get(name).unwrap();
            let layer = BulkheadLayer::from_registry(&registry, name)
                .unwrap()
                .max_wait(max_wait);
            counted_samples(layer, &b, case, inject)
        }
    }
}

/// [`tower_path`] through an adaptive layer, whose classifier counts its
/// calls: that proves that every admitted request of the counted rounds
/// recorded a sample (it is called only for a timed seat) and that no
/// rejection did.
fn counted_samples<H: LayerHandle>(
    layer: BulkheadLayer<H>,
    b: &Ours,
    case: TowerCase,
    inject: bool,
) -> usize {
    use bulkhead_std::bulkhead_core::limit::CallOutcome;

    let classified = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&classified);
    let layer = layer.classify(move |r: &Result<usize, std::convert::Infallible>| {
        counter.fetch_add(1, Ordering::Relaxed);
        match r {
            Ok(n) if n.is_multiple_of(2) => CallOutcome::Dropped,
            _ => CallOutcome::Success,
        }
    });
    assert!(layer.is_adaptive());
    let total = layer_rounds(layer, b, case, inject);
    let expected = if case.reject { 0 } else { ROUNDS + 1 };
    assert_eq!(
        classified.load(Ordering::Relaxed),
        expected,
        "{case:?}: one sample per admitted request, none per rejection"
    );
    total
}

/// [`tower_rounds`] through `layer`'s service, with boxed or typed errors
/// and a weight function as `case` says.
fn layer_rounds<H, K>(
    layer: BulkheadLayer<H, BoxErrors, K>,
    b: &Ours,
    case: TowerCase,
    inject: bool,
) -> usize
where
    H: LayerHandle,
    K: bulkhead_tokio::ClassifyResponse<usize, std::convert::Infallible> + Clone,
{
    use tower::Layer;

    match (case.typed, case.weighted) {
        (true, true) => tower_rounds(
            layer.weight(both_seats).typed_errors().layer(Echo),
            b,
            case,
            inject,
        ),
        (true, false) => tower_rounds(layer.typed_errors().layer(Echo), b, case, inject),
        (false, true) => tower_rounds(layer.weight(both_seats).layer(Echo), b, case, inject),
        (false, false) => tower_rounds(layer.layer(Echo), b, case, inject),
    }
}

fn tower_rounds<S>(mut svc: S, b: &Ours, case: TowerCase, inject: bool) -> usize
where
    S: tower_service::Service<usize, Response = usize>,
    S::Error: std::fmt::Debug,
{
    let meter = Meter::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let waker = counting_waker();
        let mut cx = Context::from_waker(&waker);
        let mut total = 0;
        for round in 0..=ROUNDS {
            let before = meter.allocs();
            assert!(svc.poll_ready(&mut cx).is_ready());
            let holder = (case.wait || case.reject).then(|| b.try_acquire().unwrap());
            let mut response = pin!(svc.call(round));
            if case.wait {
                assert!(response.as_mut().poll(&mut cx).is_pending());
                assert_eq!(b.state().waiting, 1, "a real wait: the request is queued");
                if case.reject {
                    // Let the runtime's timer pass the budget.
                    tokio::time::sleep(SHORT_WAIT * 3).await;
                } else {
                    drop(holder);
                }
            }
            let outcome = loop {
                match response.as_mut().poll(&mut cx) {
                    Poll::Ready(outcome) => break outcome,
                    // The timer may fire a little after the sleep ended.
                    Poll::Pending => tokio::time::sleep(SHORT_WAIT).await,
                }
            };
            match outcome {
                Ok(n) => {
                    assert!(!case.reject, "{case:?}: admitted");
                    assert_eq!(n, round);
                }
                Err(e) => assert!(case.reject, "{case:?}: rejected with {e:?}"),
            }
            injected_allocation(inject);
            let after = meter.allocs();
            if round > 0 {
                total += after - before;
            }
        }
        assert_eq!(b.state().active, 0);
        assert_eq!(b.state().max_concurrent, case.seats());
        total
    })
}

/// tokio's `Semaphore`, the same hand-rolled wait as `core_async`.
fn tokio_semaphore_per_wait() -> usize {
    let meter = Meter::new();
    let s = tokio::sync::Semaphore::new(1);
    let waker = counting_waker();
    let mut cx = Context::from_waker(&waker);
    let mut total = 0;
    for round in 0..=ROUNDS {
        let before = meter.allocs();
        let holder = s.try_acquire().unwrap();
        let mut waiter = pin!(s.acquire());
        assert!(waiter.as_mut().poll(&mut cx).is_pending());
        drop(holder);
        let Poll::Ready(Ok(permit)) = waiter.as_mut().poll(&mut cx) else {
            panic!("handed off")
        };
        drop(permit);
        let after = meter.allocs();
        if round > 0 {
            total += after - before;
        }
    }
    total
}

/// async-lock's `Semaphore`, the same hand-rolled wait.
fn async_lock_per_async_wait() -> usize {
    let meter = Meter::new();
    let s = async_lock::Semaphore::new(1);
    let waker = counting_waker();
    let mut cx = Context::from_waker(&waker);
    let mut total = 0;
    for round in 0..=ROUNDS {
        let before = meter.allocs();
        let holder = s.try_acquire().unwrap();
        let mut waiter = pin!(s.acquire());
        assert!(waiter.as_mut().poll(&mut cx).is_pending());
        drop(holder);
        let Poll::Ready(guard) = waiter.as_mut().poll(&mut cx) else {
            panic!("woken and free")
        };
        drop(guard);
        let after = meter.allocs();
        if round > 0 {
            total += after - before;
        }
    }
    total
}

/// async-lock's `acquire_blocking`, parked and woken like `blocking`.
fn async_lock_per_blocking_wait() -> usize {
    let meter = Meter::new();
    let s = Arc::new(async_lock::Semaphore::new(1));
    let go = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let queued = Arc::new(AtomicBool::new(false));
    let waiter = {
        let (s, go, done, queued) = (s.clone(), go.clone(), done.clone(), queued.clone());
        thread::spawn(move || {
            meter.join();
            for round in 1..=ROUNDS + 1 {
                while go.load(Ordering::SeqCst) < round {
                    thread::yield_now();
                }
                queued.store(true, Ordering::SeqCst);
                let guard = s.acquire_blocking();
                drop(guard);
                done.store(round, Ordering::SeqCst);
            }
        })
    };
    let mut total = 0;
    for round in 1..=ROUNDS + 1 {
        let holder = s.try_acquire().unwrap();
        let before = meter.allocs();
        go.store(round, Ordering::SeqCst);
        while !queued.swap(false, Ordering::SeqCst) {
            thread::yield_now();
        }
        // async-lock has no waiter count: give it time to park.
        thread::sleep(Duration::from_millis(2));
        drop(holder);
        while done.load(Ordering::SeqCst) < round {
            thread::yield_now();
        }
        let after = meter.allocs();
        if round > 1 {
            total += after - before;
        }
    }
    waiter.join().unwrap();
    total
}

/// The registry's adaptive path: a seat taken by name from an adaptive
/// compartment, timed, and given back with a sample, half of them drops,
/// so that the limit moves (and, with feature `metrics`, the change is
/// published; no recorder is installed here, so the recorder's own cost
/// is not counted), then the same through `execute` with an `Err`.
/// Returns the allocations and the limit changes in the counted rounds.
fn registry_adaptive(inject: bool) -> (usize, usize) {
    use bulkhead_std::bulkhead_core::limit::CallOutcome;
    use bulkhead_std::registry::{DomainConfig, Registry};
    use bulkhead_std::{Algorithm, LimitConfig};

    let registry = Registry::local();
    let limit = LimitConfig {
        min: Some(1),
        max: Some(8),
        window: Some(1),
        ..LimitConfig::new(Algorithm::Aimd)
    };
    let name = "alloc-adaptive";
    registry
        .get_or_create(name, DomainConfig::new(2).limit(limit))
        .unwrap();
    let round = |i: usize| {
        let seat = registry.acquire_blocking(name).unwrap();
        injected_allocation(inject);
        let outcome = if i.is_multiple_of(2) {
            CallOutcome::Dropped
        } else {
            CallOutcome::Success
        };
        black_box(seat.record(outcome));
        let r = registry.execute(name, || Err::<(), _>("503")).unwrap();
        black_box(r.is_err());
    };
    // Warm up: the first change makes the metrics labels of the name.
    (0..4).for_each(round);
    let changes = || {
        registry
            .domain(name)
            .unwrap()
            .controller()
            .unwrap()
            .changes()
    };
    let changes_before = changes();
    let meter = Meter::new();
    (0..ROUNDS).for_each(round);
    let allocs = meter.allocs();
    (allocs, changes() - changes_before)
}

/// Every sample of a registry compartment, and every limit change it
/// causes, allocates nothing.
#[test]
fn the_registrys_adaptive_sample_path_allocates_nothing() {
    let (allocs, changes) = registry_adaptive(false);
    assert!(changes > 0, "the limit moved in the counted rounds");
    assert_eq!(allocs, 0, "the registry's adaptive path allocated");
    let (injected, _) = registry_adaptive(true);
    assert_eq!(injected, ROUNDS, "the meter sees the path's thread");
}

fn per_wait(total: usize) -> f64 {
    total as f64 / ROUNDS as f64
}

#[test]
fn zero_allocations_per_acquire_wait_release() {
    for admission in [
        Admission::Fifo,
        Admission::Barging,
        Admission::BoundedBarging,
    ] {
        let a = core_async(admission, false);
        let b = blocking(admission, false);
        let t = tokio_path(admission, false);
        println!(
            "ours {admission:?}: allocations per wait: core async {}, blocking {}, tokio {}",
            per_wait(a),
            per_wait(b),
            per_wait(t)
        );
        assert_eq!(a, 0, "core's async path allocated ({admission:?})");
        assert_eq!(b, 0, "the blocking path allocated ({admission:?})");
        assert_eq!(t, 0, "the tokio path allocated ({admission:?})");
    }
    let layers = Over::ALL.into_iter().flat_map(|o| {
        [(false, false), (true, false), (false, true), (true, true)]
            .map(|(typed, weighted)| (typed, weighted, o))
    });
    for (typed, weighted, over) in layers {
        let errors = format!(
            "{} errors, over {}{}",
            if typed { "typed" } else { "boxed" },
            match over {
                Over::Compartment => "a compartment",
                Over::Adaptive => "an adaptive compartment",
                Over::Domain => "an adaptive registry domain",
            },
            if weighted { ", weighted" } else { "" }
        );
        let per_request = |wait, reject| {
            tower_path(
                TowerCase {
                    wait,
                    reject,
                    typed,
                    weighted,
                    over,
                },
                false,
            )
        };
        let (fast_ok, fast_rejected) = (per_request(false, false), per_request(false, true));
        let (wait_ok, wait_rejected) = (per_request(true, false), per_request(true, true));
        println!(
            "ours: allocations per request through the tower layer, {errors}: \
             fail fast {} admitted, {} rejected; waiting {} admitted, {} rejected",
            per_wait(fast_ok),
            per_wait(fast_rejected),
            per_wait(wait_ok),
            per_wait(wait_rejected)
        );
        assert_eq!(
            fast_ok, 0,
            "the tower layer allocated, failing fast ({errors})"
        );
        assert_eq!(
            wait_ok, 0,
            "the tower layer allocated, waiting for a seat ({errors})"
        );
        if typed {
            assert_eq!(
                fast_rejected, 0,
                "a typed rejection allocated, failing fast"
            );
            assert_eq!(
                wait_rejected, 0,
                "a typed rejection allocated, after a wait"
            );
        } else {
            // The default `BoxError` boxes our (non-zero-sized) `Error`:
            // exactly one allocation per rejection, nothing else.
            assert_eq!(fast_rejected, ROUNDS, "one box per rejection, failing fast");
            assert_eq!(wait_rejected, ROUNDS, "one box per rejection, after a wait");
        }
    }
}

/// The meter is not blind: one allocation per round, made on the thread
/// that is not the test's own where a path has one, is counted in full.
#[test]
fn an_injected_allocation_is_counted() {
    let a = core_async(Admission::Fifo, true);
    let b = blocking(Admission::Fifo, true);
    let t = tokio_path(Admission::Fifo, true);
    assert_eq!(a, ROUNDS, "core async, on the test thread");
    assert_eq!(b, ROUNDS, "blocking, on the waiter thread");
    assert_eq!(t, ROUNDS, "tokio, in the releasing task");
    for (wait, reject) in [(false, false), (false, true), (true, false), (true, true)] {
        for over in Over::ALL {
            for weighted in [false, true] {
                let case = TowerCase {
                    wait,
                    reject,
                    typed: true,
                    weighted,
                    over,
                };
                assert_eq!(tower_path(case, true), ROUNDS, "tower, {case:?}");
            }
        }
    }
}

/// Allocations on a thread that did not join the meter (the harness, a
/// test running alongside) are not counted: a noisy thread allocating all
/// through a measurement leaves it at zero, while its own meter sees it.
/// With process-wide counting this test failed.
#[test]
fn allocations_on_other_threads_are_not_counted() {
    let stop = Arc::new(AtomicBool::new(false));
    let noise = {
        let stop = stop.clone();
        thread::spawn(move || {
            let meter = Meter::new();
            while !stop.load(Ordering::SeqCst) {
                black_box(vec![0u8; 64]);
                thread::yield_now();
            }
            meter.allocs()
        })
    };
    let quiet = core_async(Admission::Fifo, false);
    let quiet_blocking = blocking(Admission::Fifo, false);
    stop.store(true, Ordering::SeqCst);
    let noisy = noise.join().unwrap();
    assert!(noisy > 0, "the noise thread allocated");
    assert_eq!((quiet, quiet_blocking), (0, 0), "noise was counted");
}

#[test]
fn peers_allocations_per_wait() {
    let tokio = tokio_semaphore_per_wait();
    let al_async = async_lock_per_async_wait();
    let al_blocking = async_lock_per_blocking_wait();
    println!(
        "peers: allocations per wait: tokio Semaphore {}, async-lock async {}, async-lock acquire_blocking {}",
        per_wait(tokio),
        per_wait(al_async),
        per_wait(al_blocking)
    );
    assert_eq!(tokio, 0, "tokio's semaphore is allocation-free too");
    // The harness can see an allocation: async-lock boxes a listener per wait.
    assert!(
        al_async >= ROUNDS,
        "the counter must see async-lock's listener"
    );
}
