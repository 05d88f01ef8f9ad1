//! Short versions of benchmark groups a–g, p (partitioned), w and l in one process, against the
//! peers, printed as markdown with our ratio against each peer.
//!
//! Run it with `cargo run --release -p bulkhead-examples --bin bench-compare`
//! (about 30 s). Every figure is the median of several repeats, and the
//! repeats of one group run round-robin over the contenders, so machine
//! noise hits all of them alike. Only ratios within one run mean anything.
//! `BENCHMARKS.md` explains the method and keeps a copy of the table.

use std::cell::RefCell;
use std::hint::black_box;
use std::mem::size_of;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bulkhead_core::partition::{Amount, PartitionConfig, PartitionId, Partitioned};
use bulkhead_core::{Admission, Config, QueueOrder};
use bulkhead_examples::alloc_count::{self, CountingAlloc};
use bulkhead_examples::layers::{self, Mode};
use bulkhead_examples::overload;
use bulkhead_examples::peers::{
    self, CondvarSemaphore, EmbassyFair, Floor, Hold, Ours, Throughput, poll_once, work,
};
use bulkhead_examples::wait_times::WaitHistogram;
use embassy_sync::semaphore::Semaphore as _;

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Repeats of each single-thread figure (groups a, b, e).
const MICRO_REPEATS: usize = 9;
/// Operations per single-thread repeat.
const MICRO_OPS: u64 = 1_000_000;
/// Repeats of each contended figure (groups c, d, f).
const CONTENDED_REPEATS: usize = 5;
/// Length of one contended repeat.
const WINDOW: Duration = Duration::from_millis(120);

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// ns per call of `f`, over `n` calls.
#[inline(always)]
fn ns_per_op(n: u64, mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        f();
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

type Bench<'a> = (&'static str, Box<dyn FnMut() -> f64 + 'a>);

/// Runs every bench `repeats` times, round-robin, and returns the medians.
fn run_all(benches: Vec<Bench<'_>>, repeats: usize) -> Vec<(&'static str, f64)> {
    run_all_with(benches, repeats, median)
}

/// As [`run_all`], reducing each bench's samples with `reduce`.
fn run_all_with(
    benches: Vec<Bench<'_>>,
    repeats: usize,
    reduce: fn(Vec<f64>) -> f64,
) -> Vec<(&'static str, f64)> {
    let mut benches = benches;
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); benches.len()];
    // One untimed warm-up round.
    for (_, f) in &mut benches {
        f();
    }
    for _ in 0..repeats {
        for (i, (_, f)) in benches.iter_mut().enumerate() {
            samples[i].push(f());
        }
    }
    benches
        .iter()
        .zip(samples)
        .map(|((name, _), s)| (*name, reduce(s)))
        .collect()
}

fn leak<T>(t: T) -> &'static T {
    Box::leak(Box::new(t))
}

fn find(rows: &[(&'static str, f64)], name: &str) -> f64 {
    rows.iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no row {name}"))
        .1
}

/// Prints one group: a row per contender, with ours ÷ it.
fn table(title: &str, unit: &str, rows: &[(&'static str, f64)], ours: &[&str]) {
    table_with(title, unit, rows, ours, None);
}

/// A last column of a group's table: its heading, and its cell for the
/// contender with this name.
type Extra<'a> = (&'a str, &'a dyn Fn(&str) -> String);

/// As [`table`], with one more column.
fn table_with(
    title: &str,
    unit: &str,
    rows: &[(&'static str, f64)],
    ours: &[&str],
    extra: Option<Extra<'_>>,
) {
    println!("\n#### {title}\n");
    print!("| contender | {unit} |");
    for o in ours {
        print!(" {o} ÷ it |");
    }
    if let Some((heading, _)) = extra {
        print!(" {heading} |");
    }
    println!();
    print!("|---|---:|");
    for _ in ours {
        print!("---:|");
    }
    if extra.is_some() {
        print!("---:|");
    }
    println!();
    for (name, v) in rows {
        print!("| {name} | {v:.2} |");
        for o in ours {
            let r = find(rows, o) / v;
            print!(" {r:.2}× |");
        }
        if let Some((_, cell)) = extra {
            print!(" {} |", cell(name));
        }
        println!();
    }
}

/// Group d's contenders, each recording its waiting times: `run_all` gets
/// the throughput of each repeat; the waits of the timed repeats (not the
/// warm-up) are merged per contender.
#[derive(Default)]
struct DWaits(Vec<(&'static str, Rc<RefCell<WaitHistogram>>)>);

impl DWaits {
    fn bench<S: peers::BlockingSem>(&mut self, name: &'static str, s: S, w: u32) -> Bench<'static> {
        let waits = Rc::new(RefCell::new(WaitHistogram::new()));
        self.0.push((name, Rc::clone(&waits)));
        let s = Arc::new(s);
        let mut warm_up = true;
        let f = move || {
            let run = peers::run_blocking(&s, 8, w, WINDOW);
            if !std::mem::take(&mut warm_up) {
                waits.borrow_mut().merge(&run.waits);
            }
            run.throughput.mops()
        };
        (name, Box::new(f))
    }

    fn get(&self, name: &str) -> std::cell::Ref<'_, WaitHistogram> {
        self.0
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("no contender {name}"))
            .1
            .borrow()
    }

    /// p50 / p99 / p99.9 / max in µs.
    fn summary_us(&self, name: &str) -> String {
        self.get(name).summary_us()
    }
}

const FIFO: &str = "ours FIFO";
/// Ours with a weight of 1 given at run time: `try_acquire_many(1)` with
/// the weight behind `black_box`, so the weighted path is not folded into
/// the one-seat one.
const FIFO_MANY: &str = "ours FIFO, try_acquire_many(1)";
const BARGING: &str = "ours barging";
const BOUNDED: &str = "ours bounded barging";
const TRY_FIRST: &str = "ours barging, acquire_if_free first (info only)";

/// `bench-compare d <contender>`: only group d, one contender, for one
/// second, printing its operation count: for `strace -c -f` or a profiler.
fn single_d(which: &str, work_iters: u32) {
    fn one<S: peers::BlockingSem>(s: S, w: u32) -> peers::BlockingRun {
        peers::run_blocking(&Arc::new(s), 8, w, Duration::from_secs(1))
    }
    let t = match which {
        "fifo" => one(peers::ours(2, Admission::Fifo), work_iters),
        "barging" => one(peers::ours(2, Admission::Barging), work_iters),
        "bounded" => one(peers::ours(2, Admission::BoundedBarging), work_iters),
        "barging-try-first" => one(
            peers::TryFirst(peers::ours(2, Admission::Barging)),
            work_iters,
        ),
        "fifo-try-first" => one(peers::TryFirst(peers::ours(2, Admission::Fifo)), work_iters),
        "tokio" => one(tokio::sync::Semaphore::new(2), work_iters),
        "maitake" => one(maitake_sync::Semaphore::new(2), work_iters),
        "async-lock" => one(async_lock::Semaphore::new(2), work_iters),
        "condvar" => one(CondvarSemaphore::new(2), work_iters),
        other => {
            panic!(
                "unknown contender {other}: fifo, barging, bounded, barging-try-first, fifo-try-first, tokio, maitake, async-lock, condvar"
            )
        }
    };
    let (waits, t) = (&t.waits, t.throughput);
    println!(
        "{which}: {} ops in {:?} = {:.2} Mops/s; wait per acquire p50 / p99 / p99.9 / max: {} µs",
        t.ops,
        t.elapsed,
        t.mops(),
        waits.summary_us()
    );
}

/// `bench-compare c1`: group c1 only, with ours both through core's
/// `acquire` and through bulkhead-tokio's `acquire_within` (which spends
/// tokio's cooperative budget, as tokio's semaphore does), next to tokio
/// constrained and unconstrained, in one run.
fn only_c1(work_iters: u32) {
    let rt = peers::runtime(2);
    fn one<S: peers::AsyncSem>(
        rt: &tokio::runtime::Runtime,
        s: &Arc<S>,
        w: u32,
        free: bool,
    ) -> f64 {
        peers::run_async(rt, s, 64, w, Hold::Plain, WINDOW, free).mops()
    }
    let core = Arc::new(peers::ours(4, Admission::Fifo));
    let adapter = Arc::new(peers::OursTokio(peers::ours(4, Admission::Fifo)));
    let tokio = Arc::new(tokio::sync::Semaphore::new(4));
    let w = work_iters;
    let rt = &rt;
    let rows = run_all(
        vec![
            (
                "ours FIFO, core acquire (no coop)",
                Box::new(|| one(rt, &core, w, false)),
            ),
            (
                "ours FIFO, bulkhead-tokio acquire_within (coop)",
                Box::new(|| one(rt, &adapter, w, false)),
            ),
            (
                "ours FIFO, bulkhead-tokio acquire_within (unconstrained)",
                Box::new(|| one(rt, &adapter, w, true)),
            ),
            ("tokio", Box::new(|| one(rt, &tokio, w, false))),
            (
                "tokio (unconstrained)",
                Box::new(|| one(rt, &tokio, w, true)),
            ),
        ],
        CONTENDED_REPEATS,
    );
    let tokio_v = rows
        .iter()
        .find(|(n, _)| *n == "tokio")
        .map_or(f64::NAN, |r| r.1);
    println!("c1. 2 workers, 64 tasks, 4 seats (Mops/s, median of {CONTENDED_REPEATS})");
    for (name, v) in &rows {
        println!("{name:<50} {v:>7.2}  ({:.2}x tokio)", v / tokio_v);
    }
}

/// `bench-compare callgrind`: 1,000,000 uncontended try_acquire + release
/// of ours and of the floor, each in its own non-inlined function, for
/// `valgrind --tool=callgrind` (see `BENCHMARKS.md`).
#[inline(never)]
fn cg_ours(b: &Ours, n: u32) {
    for _ in 0..n {
        let s = black_box(b).try_acquire();
        black_box(s.is_ok());
    }
}

/// As [`cg_ours`], through `try_acquire_many` with a weight of 1 the
/// compiler cannot see.
#[inline(never)]
fn cg_ours_many(b: &Ours, n: u32) {
    for _ in 0..n {
        let s = black_box(b).try_acquire_many(black_box(1));
        black_box(s.is_ok());
    }
}

/// `n` requests through `svc`, a layer over [`layers::Immediate`], each
/// admitted at once: `poll_ready`, `call` and one poll of the response.
/// No runtime: no contender touches a timer when it admits at once.
#[inline(always)]
fn cg_layer<S: tower_service::Service<u32, Response = u32>>(mut svc: S, n: u32) {
    use std::future::Future as _;
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    for i in 0..n {
        assert!(svc.poll_ready(&mut cx).is_ready());
        let response = std::pin::pin!(svc.call(black_box(i)));
        black_box(response.poll(&mut cx).is_ready());
    }
}

/// Group g's own cost, waiting mode, ours (for callgrind).
#[inline(never)]
fn cg_layer_ours_wait(n: u32) {
    use tower::Layer as _;
    let ours = Arc::new(peers::ours(layers::SEATS, Admission::Fifo));
    let layer = bulkhead_tokio::BulkheadLayer::new(ours).max_wait(Duration::from_secs(1));
    cg_layer(layer.typed_errors().layer(layers::Immediate), n);
}

/// Group g's own cost, waiting mode, tower's `ConcurrencyLimit`.
#[inline(never)]
fn cg_layer_tower_wait(n: u32) {
    let svc = tower::ServiceBuilder::new()
        .concurrency_limit(layers::SEATS)
        .service(layers::Immediate);
    cg_layer(svc, n);
}

/// Group g's own cost, failing fast, ours.
#[inline(never)]
fn cg_layer_ours_fail_fast(n: u32) {
    use tower::Layer as _;
    let ours = Arc::new(peers::ours(layers::SEATS, Admission::Fifo));
    let layer = bulkhead_tokio::BulkheadLayer::new(ours);
    cg_layer(layer.typed_errors().layer(layers::Immediate), n);
}

/// Group g's own cost, failing fast, tower's `LoadShed` + `ConcurrencyLimit`.
#[inline(never)]
fn cg_layer_tower_shed(n: u32) {
    let svc = tower::ServiceBuilder::new()
        .load_shed()
        .concurrency_limit(layers::SEATS)
        .service(layers::Immediate);
    cg_layer(svc, n);
}

/// As [`cg_ours`], on a partitioned compartment's first partition.
#[inline(never)]
fn cg_partitioned(p: &Partitioned<bulkhead_std::StdLock>, id: PartitionId, n: u32) {
    for _ in 0..n {
        let s = black_box(p).try_acquire(black_box(id));
        black_box(s.is_ok());
    }
}

#[inline(never)]
fn cg_floor(f: &Floor, n: u32) {
    for _ in 0..n {
        let s = black_box(f).try_acquire();
        black_box(s.is_some());
    }
}

/// Rejections (every seat held) of ours with the default `StdLock`, of
/// tokio, and of the floor with a `fetch_add` counter, for callgrind.
#[inline(never)]
fn cg_reject_ours(b: &Ours, n: u32) {
    for _ in 0..n {
        black_box(black_box(b).try_acquire().is_err());
    }
}

#[inline(never)]
fn cg_reject_tokio(t: &tokio::sync::Semaphore, n: u32) {
    for _ in 0..n {
        black_box(black_box(t).try_acquire().is_err());
    }
}

#[inline(never)]
fn cg_reject_floor_counted(f: &Floor, counted: &std::sync::atomic::AtomicUsize, n: u32) {
    for _ in 0..n {
        if black_box(f).try_acquire().is_none() {
            counted.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// What the rejection path paid per rejection before: one wall-clock read.
#[inline(never)]
fn cg_clock(n: u32) {
    for _ in 0..n {
        black_box(std::time::SystemTime::now());
    }
}

#[inline(never)]
fn cg_tokio(t: &tokio::sync::Semaphore, n: u32) {
    for _ in 0..n {
        let s = black_box(t).try_acquire();
        black_box(s.is_ok());
    }
}

/// Every contender's semaphore with `seats` seats, leaked for the run.
struct TrySet {
    floor: &'static Floor,
    fifo: &'static peers::Ours,
    barging: &'static peers::Ours,
    tokio: &'static tokio::sync::Semaphore,
    maitake: &'static maitake_sync::Semaphore,
    alock: &'static async_lock::Semaphore,
    embassy: &'static EmbassyFair,
    cv: &'static CondvarSemaphore,
}

impl TrySet {
    fn new(seats: usize) -> Self {
        Self {
            floor: leak(Floor::new(seats)),
            fifo: leak(peers::ours(seats, Admission::Fifo)),
            barging: leak(peers::ours(seats, Admission::Barging)),
            tokio: leak(tokio::sync::Semaphore::new(seats)),
            maitake: leak(maitake_sync::Semaphore::new(seats)),
            alock: leak(async_lock::Semaphore::new(seats)),
            embassy: leak(EmbassyFair::new(seats)),
            cv: leak(CondvarSemaphore::new(seats)),
        }
    }

    /// One `try_acquire` + drop per operation, for every contender: groups
    /// a (seats free) and e (every seat held) share this loop.
    fn benches(&self, n: u64) -> Vec<Bench<'static>> {
        let Self {
            floor,
            fifo,
            barging,
            tokio,
            maitake,
            alock,
            embassy,
            cv,
        } = *self;
        vec![
            (
                "floor (bare atomic)",
                Box::new(move || {
                    ns_per_op(n, || {
                        black_box(black_box(floor).try_acquire().is_some());
                    })
                }),
            ),
            (
                FIFO,
                Box::new(move || {
                    ns_per_op(n, || {
                        black_box(black_box(fifo).try_acquire().is_ok());
                    })
                }),
            ),
            (
                FIFO_MANY,
                Box::new(move || {
                    ns_per_op(n, || {
                        black_box(black_box(fifo).try_acquire_many(black_box(1)).is_ok());
                    })
                }),
            ),
            (
                BARGING,
                Box::new(move || {
                    ns_per_op(n, || {
                        black_box(black_box(barging).try_acquire().is_ok());
                    })
                }),
            ),
            (
                "tokio",
                Box::new(move || {
                    ns_per_op(n, || {
                        black_box(black_box(tokio).try_acquire().is_ok());
                    })
                }),
            ),
            (
                "maitake-sync",
                Box::new(move || {
                    ns_per_op(n, || {
                        black_box(black_box(maitake).try_acquire(1).is_ok());
                    })
                }),
            ),
            (
                "async-lock",
                Box::new(move || {
                    ns_per_op(n, || {
                        black_box(black_box(alock).try_acquire().is_some());
                    })
                }),
            ),
            (
                "embassy Fair",
                Box::new(move || {
                    ns_per_op(n, || {
                        black_box(black_box(embassy).try_acquire(1).is_some());
                    })
                }),
            ),
            (
                "Mutex+Condvar",
                Box::new(move || {
                    ns_per_op(n, || {
                        black_box(black_box(cv).try_acquire().is_some());
                    })
                }),
            ),
        ]
    }
}

/// One contender of group g: a window of it, and its allocations per
/// request, each with a number of callers.
struct LayerBench {
    name: &'static str,
    window: Box<dyn Fn(usize) -> layers::Window>,
    allocs: Box<dyn Fn(usize) -> f64>,
}

fn layer_bench<S>(name: &'static str, rt: &Arc<tokio::runtime::Runtime>, proto: S) -> LayerBench
where
    S: tower_service::Service<u32, Response = u32> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Send,
{
    let (rt1, p1) = (Arc::clone(rt), proto.clone());
    let rt2 = Arc::clone(rt);
    LayerBench {
        name,
        window: Box::new(move |callers| layers::run(&rt1, &p1, callers, G_WINDOW, None)),
        allocs: Box::new(move |callers| {
            alloc_count::count_process(true);
            let a = layers::allocs_per_request(&rt2, &proto, callers, &alloc_count::process_allocs);
            alloc_count::count_process(false);
            a
        }),
    }
}

const G_REPEATS: usize = 3;
const G_WINDOW: Duration = Duration::from_millis(100);
const G_OURS: &str = "ours (`BulkheadLayer`)";
const G_OURS_TYPED: &str = "ours, `typed_errors()`";
const G_BARE: &str = "bare service (no layer)";
const G_TOWER_SHED: &str = "tower `LoadShed` + `ConcurrencyLimit`";
const G_TOWER_WAIT: &str = "tower `ConcurrencyLimit` (waits in `poll_ready`, unbounded)";
const G_RESILIENCE: &str = "tower-resilience-bulkhead 0.14";

/// One row of group g.
struct GRow {
    name: &'static str,
    served: f64,
    rejected: f64,
    p50: Duration,
    p99: Duration,
    allocs: f64,
}

/// Group g for one mode and one number of callers: the contenders' windows
/// run round-robin; throughput is the median window, latencies are pooled.
fn group_g(benches: &[LayerBench], callers: usize) -> Vec<GRow> {
    for b in benches {
        (b.window)(callers); // warm-up
    }
    let mut windows: Vec<Vec<layers::Window>> = benches.iter().map(|_| Vec::new()).collect();
    for _ in 0..G_REPEATS {
        for (i, b) in benches.iter().enumerate() {
            windows[i].push((b.window)(callers));
        }
    }
    benches
        .iter()
        .zip(windows)
        .map(|(b, ws)| {
            let rate = |f: fn(&layers::Window) -> u64| {
                median(
                    ws.iter()
                        .map(|w| f(w) as f64 / w.elapsed.as_secs_f64())
                        .collect(),
                )
            };
            let mut lat: Vec<Duration> = ws.iter().flat_map(|w| w.latencies.clone()).collect();
            GRow {
                name: b.name,
                served: rate(|w| w.served),
                rejected: rate(|w| w.rejected),
                p50: layers::quantile(&mut lat, 0.5),
                p99: layers::quantile(&mut lat, 0.99),
                allocs: (b.allocs)(callers),
            }
        })
        .collect()
}

fn print_g(title: &str, rows: &[GRow]) {
    let ours = rows.iter().find(|r| r.name == G_OURS).expect("ours");
    let bare = rows.iter().find(|r| r.name == G_BARE).expect("bare");
    println!("\n#### {title}\n");
    println!(
        "| contender | served (k req/s) | rejected (k req/s) | p50 (µs) | p99 (µs) | added p50 (µs) | added p99 (µs) | allocations per request | ours ÷ it (served) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    for r in rows {
        println!(
            "| {} | {:.1} | {:.1} | {:.2} | {:.2} | {:+.2} | {:+.2} | {:.2} | {:.2}× |",
            r.name,
            r.served / 1e3,
            r.rejected / 1e3,
            us(r.p50),
            us(r.p99),
            us(r.p50) - us(bare.p50),
            us(r.p99) - us(bare.p99),
            r.allocs,
            ours.served / r.served
        );
    }
}

/// Receives each layered service of group g ([`g_layers`]).
trait LayerVisitor {
    fn visit<S>(&mut self, name: &'static str, svc: S)
    where
        S: tower_service::Service<u32, Response = u32> + Clone + Send + 'static,
        S::Future: Send,
        S::Error: Send;
}

/// The contenders of group g in `mode`, each over `SEATS` seats, in front
/// of `inner`, handed to `visitor` one by one; the bare `inner` first.
fn g_layers<I, V>(mode: Mode, inner: I, visitor: &mut V)
where
    I: tower_service::Service<u32, Response = u32, Error = std::convert::Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    I::Future: Send + 'static,
    V: LayerVisitor,
{
    use tower::Layer as _;
    use tower::ServiceBuilder;
    let ours = Arc::new(peers::ours(layers::SEATS, Admission::Fifo));
    let ours = bulkhead_tokio::BulkheadLayer::new(ours).max_wait(match mode {
        Mode::FailFast => bulkhead_core::MaxWait::FailFast,
        Mode::Wait => bulkhead_core::MaxWait::up_to(Duration::from_secs(1)),
    });
    let resilience =
        tower_resilience_bulkhead::BulkheadLayer::builder().max_concurrent_calls(layers::SEATS);
    let resilience = match mode {
        Mode::FailFast => resilience.reject_when_full(),
        Mode::Wait => resilience.max_wait_duration(Duration::from_secs(1)),
    }
    .build()
    .expect("valid tower-resilience settings");
    visitor.visit(G_BARE, inner.clone());
    visitor.visit(G_OURS, ours.layer(inner.clone()));
    visitor.visit(
        G_OURS_TYPED,
        ours.clone().typed_errors().layer(inner.clone()),
    );
    match mode {
        Mode::FailFast => visitor.visit(
            G_TOWER_SHED,
            ServiceBuilder::new()
                .load_shed()
                .concurrency_limit(layers::SEATS)
                .service(inner.clone()),
        ),
        Mode::Wait => visitor.visit(
            G_TOWER_WAIT,
            ServiceBuilder::new()
                .concurrency_limit(layers::SEATS)
                .service(inner.clone()),
        ),
    }
    visitor.visit(G_RESILIENCE, resilience.layer(inner));
}

/// The contenders of group g in `mode`, over the ~1 µs service.
fn g_contenders(rt: &Arc<tokio::runtime::Runtime>, half_iters: u32, mode: Mode) -> Vec<LayerBench> {
    struct Benches<'a>(&'a Arc<tokio::runtime::Runtime>, Vec<LayerBench>);
    impl LayerVisitor for Benches<'_> {
        fn visit<S>(&mut self, name: &'static str, svc: S)
        where
            S: tower_service::Service<u32, Response = u32> + Clone + Send + 'static,
            S::Future: Send,
            S::Error: Send,
        {
            self.1.push(layer_bench(name, self.0, svc));
        }
    }
    let mut benches = Benches(rt, Vec::new());
    g_layers(mode, layers::Work { half_iters }, &mut benches);
    benches.1
}

/// Requests per repeat of the layer-cost table: about 1 ms for ours, short
/// enough that most repeats run without being preempted on a loaded machine.
const G_COST_REQUESTS: u64 = 20_000;
/// Repeats of each layer-cost figure (round-robin; the median is reported).
const G_COST_REPEATS: usize = 21;

/// The layers' own cost in `mode`, one caller, over a service that answers
/// at once: ns and allocations per admitted request (and, failing fast,
/// per rejected one), median of `G_COST_REPEATS` round-robin repeats.
fn g_costs(rt: &Arc<tokio::runtime::Runtime>, mode: Mode) {
    #[derive(Default)]
    struct Costs {
        names: Vec<&'static str>,
        runs: Vec<Box<dyn Fn(bool) -> layers::Cost>>,
    }
    struct Collect<'a>(&'a Arc<tokio::runtime::Runtime>, Costs);
    impl LayerVisitor for Collect<'_> {
        fn visit<S>(&mut self, name: &'static str, svc: S)
        where
            S: tower_service::Service<u32, Response = u32> + Clone + Send + 'static,
            S::Future: Send,
            S::Error: Send,
        {
            let rt = Arc::clone(self.0);
            self.1.names.push(name);
            self.1.runs.push(Box::new(move |reject| {
                layers::layer_cost(
                    &rt,
                    &svc,
                    layers::SEATS,
                    reject,
                    G_COST_REQUESTS,
                    &alloc_count::thread_allocs,
                )
            }));
        }
    }
    let mut collect = Collect(rt, Costs::default());
    g_layers(mode, layers::Immediate, &mut collect);
    let Costs { names, runs } = collect.1;
    let measure = |reject: bool| -> Vec<layers::Cost> {
        let active: Vec<usize> = (0..names.len())
            .filter(|&i| !reject || (names[i] != G_BARE && names[i] != G_TOWER_WAIT))
            .collect();
        let mut samples = vec![Vec::new(); names.len()];
        let mut allocs = vec![0.0; names.len()];
        for &i in &active {
            runs[i](reject); // warm-up
        }
        for _ in 0..G_COST_REPEATS {
            for &i in &active {
                let c = runs[i](reject);
                samples[i].push(c.ns_per_request);
                allocs[i] = c.allocs_per_request;
            }
        }
        samples
            .into_iter()
            .zip(allocs)
            .map(|(s, a)| layers::Cost {
                ns_per_request: if s.is_empty() { f64::NAN } else { median(s) },
                allocs_per_request: a,
            })
            .collect()
    };
    let admitted = measure(false);
    let rejected = match mode {
        Mode::FailFast => measure(true),
        Mode::Wait => Vec::new(),
    };
    let bare = admitted[names.iter().position(|n| *n == G_BARE).expect("bare")].ns_per_request;
    let ours = names.iter().position(|n| *n == G_OURS).expect("ours");
    let what = match mode {
        Mode::FailFast => "fail fast",
        Mode::Wait => "bounded wait (1 s), uncontended: every request is admitted at once",
    };
    println!(
        "\n#### g. the layer's own cost, {what}: one caller, a service that answers at once, \
         {G_COST_REQUESTS} requests, median of {G_COST_REPEATS}\n"
    );
    print!(
        "| contender | admitted: ns per request | the layer's own (− bare) | it ÷ ours (own) | allocations per admitted request |"
    );
    if !rejected.is_empty() {
        print!(" rejected: ns per request | it ÷ ours | allocations per rejection |");
    }
    println!();
    println!(
        "|---|---:|---:|---:|---:|{}",
        if rejected.is_empty() {
            ""
        } else {
            "---:|---:|---:|"
        }
    );
    let own = |i: usize| admitted[i].ns_per_request - bare;
    for (i, name) in names.iter().enumerate() {
        let ratio = |x: f64, ours: f64| {
            if name == &G_BARE || !x.is_finite() {
                "".to_string()
            } else {
                format!("{:.2}×", x / ours)
            }
        };
        print!(
            "| {name} | {:.1} | {:+.1} | {} | {:.2} |",
            admitted[i].ns_per_request,
            own(i),
            ratio(own(i), own(ours)),
            admitted[i].allocs_per_request
        );
        if let Some(r) = rejected.get(i) {
            if r.ns_per_request.is_finite() {
                print!(
                    " {:.1} | {} | {:.2} |",
                    r.ns_per_request,
                    ratio(r.ns_per_request, rejected[ours].ns_per_request),
                    r.allocs_per_request
                );
            } else {
                print!(" | | |");
            }
        }
        println!();
    }
}

/// Group g, in both modes at 1 and 64 callers: prints the four tables and
/// returns, per (mode, callers), ours ÷ the best peer and ours' allocations.
/// One (mode, callers) cell of group g, for the target table.
struct GTarget {
    mode: Mode,
    callers: usize,
    best_peer: &'static str,
    /// Served requests/s, ours (default, boxed errors) ÷ the best peer.
    served_ratio: f64,
    /// The same with `typed_errors()`.
    served_ratio_typed: f64,
    /// Allocations per request, boxed errors / typed errors.
    allocs: f64,
    allocs_typed: f64,
}

fn run_g(rt: &Arc<tokio::runtime::Runtime>) -> Vec<GTarget> {
    let half_iters = peers::calibrate_work(Duration::from_nanos(500));
    let call_ns = 2.0
        * ns_per_op(100_000, || {
            black_box(peers::work(black_box(half_iters)));
        });
    println!(
        "\n#### g. tower layers, {} seats, a service of {call_ns:.0} ns of work around one yield, 2 workers\n\n\
         Median of {G_REPEATS} × {} ms windows; latency from `poll_ready` to the response, every {}th request, pooled; \
         \"added\" is against the bare service at the same percentile.",
        layers::SEATS,
        G_WINDOW.as_millis(),
        layers::SAMPLE
    );
    let mut out = Vec::new();
    for mode in [Mode::FailFast, Mode::Wait] {
        let benches = g_contenders(rt, half_iters, mode);
        for callers in [1, 64] {
            let rows = group_g(&benches, callers);
            let what = match mode {
                Mode::FailFast => "fail fast",
                Mode::Wait => "bounded wait (1 s)",
            };
            print_g(&format!("g. {what}, {callers} concurrent callers"), &rows);
            let ours = rows.iter().find(|r| r.name == G_OURS).expect("ours");
            let typed = rows.iter().find(|r| r.name == G_OURS_TYPED).expect("typed");
            let best = rows
                .iter()
                .filter(|r| ![G_OURS, G_OURS_TYPED, G_BARE].contains(&r.name))
                .max_by(|a, b| a.served.total_cmp(&b.served))
                .expect("a peer");
            out.push(GTarget {
                mode,
                callers,
                best_peer: best.name,
                served_ratio: ours.served / best.served,
                served_ratio_typed: typed.served / best.served,
                allocs: ours.allocs,
                allocs_typed: typed.allocs,
            });
        }
        g_costs(rt, mode);
    }
    out
}

/// Group a: uncontended `try_acquire` + release, every contender.
fn group_a() -> Vec<(&'static str, f64)> {
    let a = run_all(TrySet::new(4).benches(MICRO_OPS), MICRO_REPEATS);
    table(
        "a. uncontended try_acquire + release (ns/op, lower is better)",
        "ns/op",
        &a,
        &[FIFO, FIFO_MANY, BARGING],
    );
    a
}

/// Group a in short repeats (`A_SHORT_OPS` operations, about 0.5 ms),
/// the fastest of `A_SHORT_REPEATS`: on a loaded machine most short
/// repeats run without being preempted, and the fastest is the cost of
/// the code, where a median of long repeats measures the load too.
fn group_a_short() -> Vec<(&'static str, f64)> {
    let a = run_all_with(TrySet::new(4).benches(A_SHORT_OPS), A_SHORT_REPEATS, |s| {
        s.into_iter().fold(f64::INFINITY, f64::min)
    });
    table(
        &format!(
            "a, short repeats: fastest of {A_SHORT_REPEATS} × {A_SHORT_OPS} ops (ns/op, lower is better)"
        ),
        "ns/op",
        &a,
        &[FIFO, FIFO_MANY, BARGING],
    );
    a
}

/// Operations per short repeat of group a.
const A_SHORT_OPS: u64 = 100_000;
/// Short repeats of group a.
const A_SHORT_REPEATS: usize = 301;

/// Ours, partitioned: a seat of the first of two partitions.
const PARTITIONED: &str = "ours partitioned (2 partitions)";
/// The floor's row, as group a names it.
const FLOOR: &str = "floor (bare atomic)";

/// A partitioned compartment of `seats` seats, split evenly between two
/// partitions, and the first partition's id.
fn partitioned(seats: usize) -> (&'static Partitioned<bulkhead_std::StdLock>, PartitionId) {
    let p = leak(
        Partitioned::new(
            "bench",
            seats,
            &[
                PartitionConfig::new("live", Amount::Percent(50)),
                PartitionConfig::new("batch", Amount::Percent(50)),
            ],
        )
        .expect("valid bench partitions"),
    );
    (p, p.id("live").expect("declared"))
}

/// Group p's contenders: uncontended `try_acquire` + release of the
/// floor, a plain compartment and a partitioned one (4 seats each).
fn p_benches(n: u64) -> Vec<Bench<'static>> {
    let floor = leak(Floor::new(4));
    let fifo = leak(peers::ours(4, Admission::Fifo));
    let (part, live) = partitioned(4);
    vec![
        (
            FLOOR,
            Box::new(move || {
                ns_per_op(n, || {
                    black_box(black_box(floor).try_acquire().is_some());
                })
            }),
        ),
        (
            FIFO,
            Box::new(move || {
                ns_per_op(n, || {
                    black_box(black_box(fifo).try_acquire().is_ok());
                })
            }),
        ),
        (
            PARTITIONED,
            Box::new(move || {
                ns_per_op(n, || {
                    black_box(black_box(part).try_acquire(black_box(live)).is_ok());
                })
            }),
        ),
    ]
}

/// Group p: uncontended `try_acquire` + release of a partitioned
/// compartment against the floor and a plain compartment, in long
/// repeats (median) and in short ones (fastest), as group a. Returns the
/// short repeats' rows: on a loaded machine they are the cost of the code.
fn group_p() -> Vec<(&'static str, f64)> {
    let long = run_all(p_benches(MICRO_OPS), MICRO_REPEATS);
    table(
        "p. uncontended try_acquire + release, partitioned compartment (ns/op, lower is better)",
        "ns/op",
        &long,
        &[PARTITIONED],
    );
    let short = run_all_with(p_benches(A_SHORT_OPS), A_SHORT_REPEATS, |s| {
        s.into_iter().fold(f64::INFINITY, f64::min)
    });
    table(
        &format!(
            "p, short repeats: fastest of {A_SHORT_REPEATS} × {A_SHORT_OPS} ops (ns/op, lower is better)"
        ),
        "ns/op",
        &short,
        &[PARTITIONED],
    );
    for (what, rows) in [("median", &long), ("fastest", &short)] {
        println!(
            "\np ({what}): partitioned ÷ floor {:.2}×; partitioned ÷ plain (ours FIFO) {:.2}×; plain ÷ floor {:.2}×",
            find(rows, PARTITIONED) / find(rows, FLOOR),
            find(rows, PARTITIONED) / find(rows, FIFO),
            find(rows, FIFO) / find(rows, FLOOR),
        );
    }
    short
}

/// `bench-compare w2 <contender>`: only group w2, one contender, for one
/// second: for a profiler.
fn single_w2(which: &str, work_iters: u32) {
    fn one<S: peers::WeightedSem>(s: S, w: u32) -> peers::Throughput {
        let rt = peers::runtime(2);
        peers::run_weighted(
            &rt,
            &Arc::new(s),
            W_TASKS,
            w,
            Hold::Yield,
            Duration::from_secs(1),
        )
    }
    let t = match which {
        "fifo" => one(peers::ours(W_SEATS, Admission::Fifo), work_iters),
        "barging" => one(peers::ours(W_SEATS, Admission::Barging), work_iters),
        "tokio" => one(tokio::sync::Semaphore::new(W_SEATS), work_iters),
        "maitake" => one(maitake_sync::Semaphore::new(W_SEATS), work_iters),
        other => panic!("unknown contender {other}: fifo, barging, tokio, maitake"),
    };
    println!(
        "w2 {which}: {} ops in {:?} = {:.2} Mops/s",
        t.ops,
        t.elapsed,
        t.mops()
    );
}

/// Seats of group w.
const W_SEATS: usize = 8;
/// Tasks of group w (weights 1–4, as many of each).
const W_TASKS: usize = 64;
/// The peers of group w's target.
const W_PEERS: [&str; 2] = ["tokio", "maitake-sync"];
/// A peer of group w outside the target (it has a weighted `acquire` too).
const W_EMBASSY: &str = "embassy Fair";

/// Group w: weighted seats. 64 tasks of weights 1, 2, 3, 4 on 8 seats,
/// each looping acquire-many / work / release, on the 2-worker runtime;
/// in w1 nothing is awaited while holding (as c1), in w2 one yield is
/// (as c2).
fn group_w(rt: &tokio::runtime::Runtime, work_iters: u32, hold: Hold) -> Vec<(&'static str, f64)> {
    fn one<S: peers::WeightedSem>(
        rt: &tokio::runtime::Runtime,
        s: &Arc<S>,
        w: u32,
        hold: Hold,
    ) -> f64 {
        peers::run_weighted(rt, s, W_TASKS, w, hold, WINDOW).mops()
    }
    let fifo = Arc::new(peers::ours(W_SEATS, Admission::Fifo));
    let barging = Arc::new(peers::ours(W_SEATS, Admission::Barging));
    let tokio = Arc::new(tokio::sync::Semaphore::new(W_SEATS));
    let maitake = Arc::new(maitake_sync::Semaphore::new(W_SEATS));
    let embassy = Arc::new(EmbassyFair::new(W_SEATS));
    let w = work_iters;
    let rows = run_all(
        vec![
            (FIFO, Box::new(|| one(rt, &fifo, w, hold))),
            (BARGING, Box::new(|| one(rt, &barging, w, hold))),
            (W_PEERS[0], Box::new(|| one(rt, &tokio, w, hold))),
            (W_PEERS[1], Box::new(|| one(rt, &maitake, w, hold))),
            (W_EMBASSY, Box::new(|| one(rt, &embassy, w, hold))),
        ],
        CONTENDED_REPEATS,
    );
    for b in [&fifo, &barging] {
        assert_eq!(b.state().active, 0, "every seat given back");
    }
    let what = match hold {
        Hold::Plain => format!(
            "w1. weighted: 2 workers, {W_TASKS} tasks of weights 1–4, {W_SEATS} seats, work only while holding"
        ),
        Hold::Yield => "w2. same, one yield_now while holding".to_string(),
    };
    table(
        &format!("{what} (Mops/s = millions of acquisitions per second, higher is better)"),
        "Mops/s",
        &rows,
        &[FIFO, BARGING],
    );
    rows
}

/// The schedule of group l: 8 seats held 10 ms per call (800 calls/s),
/// a call every 625 µs (1600 calls/s, twice that), a 50 ms budget each;
/// 0.5 s to fill the queue, then 3 s counted.
const L_SETTINGS: overload::Settings = overload::Settings {
    seats: 8,
    service: Duration::from_millis(10),
    interval: Duration::from_micros(625),
    budget: Duration::from_millis(50),
    warm_up: Duration::from_millis(500),
    measured: Duration::from_secs(3),
};
/// The queue limit of the newest-first row: the calls the seats can serve
/// in the part of a budget left after one service time,
/// 8 × (50 − 10) ms ÷ 10 ms.
const L_QUEUE: usize = 32;
/// Repeats of each contender of group l, round-robin.
const L_REPEATS: usize = 3;
const L_FIFO: &str = "ours FIFO, no queue limit";
const L_FIFO_LIMIT: &str = "ours FIFO, queue limit 32";
/// A FIFO queue limit sized to the service time: its waits (16 × 10 ms ÷
/// 8 seats) plus a service fit the budget. Information only: it needs the
/// service time known and steady.
const L_FIFO_TUNED: &str = "ours FIFO, queue limit 16 (tuned to the service time; info only)";
const L_LIFO: &str = "ours LIFO, queue limit 32 (drop-oldest)";
const L_LIFO_UNLIMITED: &str = "ours LIFO, no queue limit";
const L_TOKIO: &str = "tokio + `timeout_at`";
/// The contenders of group l that serve the oldest waiter first.
const L_FIFO_ROWS: [&str; 3] = [L_FIFO, L_FIFO_LIMIT, L_TOKIO];

/// Group l: a service at twice its capacity, a budget per call; returns
/// each contender's merged run and the within-budget rate of each repeat.
fn group_l(rt: &tokio::runtime::Runtime) -> Vec<(&'static str, overload::Run, Vec<f64>)> {
    type LBench<'a> = (&'static str, Box<dyn Fn() -> overload::Run + 'a>);
    fn one<S: overload::BoundedSem>(rt: &tokio::runtime::Runtime, s: &Arc<S>) -> overload::Run {
        overload::run(rt, s, &L_SETTINGS)
    }
    let compartment = |limit: Option<usize>, order: QueueOrder| {
        let mut config = Config::new("bench", L_SETTINGS.seats).queue_order(order);
        if let Some(n) = limit {
            config = config.max_waiting(n);
        }
        Arc::new(peers::Ours::from_config(config).expect("valid bench compartment"))
    };
    let fifo = compartment(None, QueueOrder::Fifo);
    let fifo_limit = compartment(Some(L_QUEUE), QueueOrder::Fifo);
    let fifo_tuned = compartment(Some(L_QUEUE / 2), QueueOrder::Fifo);
    let lifo = compartment(Some(L_QUEUE), QueueOrder::Lifo);
    let lifo_unlimited = compartment(None, QueueOrder::Lifo);
    let tokio = Arc::new(tokio::sync::Semaphore::new(L_SETTINGS.seats));
    let benches: Vec<LBench<'_>> = vec![
        (L_FIFO, Box::new(|| one(rt, &fifo))),
        (L_FIFO_LIMIT, Box::new(|| one(rt, &fifo_limit))),
        (L_FIFO_TUNED, Box::new(|| one(rt, &fifo_tuned))),
        (L_LIFO, Box::new(|| one(rt, &lifo))),
        (L_LIFO_UNLIMITED, Box::new(|| one(rt, &lifo_unlimited))),
        (L_TOKIO, Box::new(|| one(rt, &tokio))),
    ];
    let mut merged: Vec<overload::Run> = vec![overload::Run::default(); benches.len()];
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); benches.len()];
    for _ in 0..L_REPEATS {
        for (i, (_, f)) in benches.iter().enumerate() {
            let run = f();
            rates[i].push(run.within_rate());
            merged[i].merge(&run);
        }
    }
    for b in [&fifo, &fifo_limit, &fifo_tuned, &lifo, &lifo_unlimited] {
        assert_eq!(b.state().active, 0, "every seat given back");
    }
    let s = L_SETTINGS;
    println!(
        "\n#### l. a service at {:.1}× its capacity: {} seats held {} ms per call, a call every {} µs, a {} ms budget each; {} × {} s counted after {} ms, pooled\n",
        s.overload(),
        s.seats,
        s.service.as_millis(),
        s.interval.as_micros(),
        s.budget.as_millis(),
        L_REPEATS,
        s.measured.as_secs(),
        s.warm_up.as_millis()
    );
    println!(
        "| contender | calls | served within budget | per repeat (%) | served late | timed out | refused | served p50 (ms) | served p99 (ms) | gave up after, p50 (ms) | LIFO ÷ it (within budget) |"
    );
    println!("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    let lifo_row = benches
        .iter()
        .position(|(n, _)| *n == L_LIFO)
        .expect("the LIFO row");
    let lifo_rate = merged[lifo_row].within_rate();
    let pct = |n: u64, all: u64| 100.0 * n as f64 / all as f64;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut out = Vec::new();
    for (((name, _), mut run), rates) in benches.into_iter().zip(merged).zip(rates) {
        let p50 = layers::quantile(&mut run.served, 0.5);
        let p99 = layers::quantile(&mut run.served, 0.99);
        let gave_up = layers::quantile(&mut run.gave_up, 0.5);
        let per: Vec<String> = rates.iter().map(|r| format!("{:.1}", r * 100.0)).collect();
        println!(
            "| {name} | {} | {:.1} % | {} | {:.1} % | {:.1} % | {:.1} % | {:.1} | {:.1} | {:.1} | {} |",
            run.calls,
            pct(run.within, run.calls),
            per.join(" / "),
            pct(run.late, run.calls),
            pct(run.timed_out, run.calls),
            pct(run.refused, run.calls),
            ms(p50),
            ms(p99),
            ms(gave_up),
            ratio(lifo_rate, run.within_rate())
        );
        out.push((name, run, rates));
    }
    let lag = out
        .iter()
        .map(|(_, r, _)| r.max_spawn_lag)
        .max()
        .unwrap_or_default();
    let late: u64 = out.iter().map(|(_, r, _)| r.late_spawns).sum();
    let calls: u64 = out.iter().map(|(_, r, _)| r.calls).sum();
    println!(
        "\nLatency is from each call's scheduled arrival. Arrivals spawned more than 1 ms late: {late} of {calls}; the latest {:.2} ms.",
        ms(lag)
    );
    out
}

/// `x ÷ y` as a ratio, or "∞" if `y` is zero.
fn ratio(x: f64, y: f64) -> String {
    if y == 0.0 {
        "∞".into()
    } else {
        format!("{:.2}×", x / y)
    }
}

/// The target rows of groups w and l.
fn wl_targets(
    w: &[(Hold, Vec<(&'static str, f64)>)],
    l: &[(&'static str, overload::Run, Vec<f64>)],
) -> Vec<(String, String, f64, bool)> {
    let mut rows = Vec::new();
    for (hold, w) in w {
        let group = match hold {
            Hold::Plain => "w1",
            Hold::Yield => "w2",
        };
        let best_peer = W_PEERS
            .iter()
            .map(|n| (*n, find(w, n)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .expect("a peer");
        for ours in [FIFO, BARGING] {
            let r = find(w, ours) / best_peer.1;
            rows.push((
                format!("{group}: {ours} ÷ best peer ({})", best_peer.0),
                "≥ 1.50×".into(),
                r,
                r >= 1.5,
            ));
        }
        rows.push((
            format!("{group}: ours FIFO ÷ embassy Fair (outside the target's peers)"),
            "(info)".into(),
            find(w, FIFO) / find(w, W_EMBASSY),
            true,
        ));
    }
    if l.is_empty() {
        return rows;
    }
    let rate = |name: &str| {
        l.iter()
            .find(|(n, _, _)| *n == name)
            .map(|(_, run, _)| run.within_rate())
            .unwrap_or_else(|| panic!("no row {name}"))
    };
    let (best_fifo, best_fifo_rate) = L_FIFO_ROWS
        .iter()
        .map(|n| (*n, rate(n)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .expect("a FIFO row");
    let rl = rate(L_LIFO) / best_fifo_rate;
    rows.push((
        format!("l: ours LIFO ÷ best FIFO contender ({best_fifo}), served within budget"),
        "> 1.00×".into(),
        rl,
        rl > 1.0,
    ));
    rows
}

fn print_targets(rows: Vec<(String, String, f64, bool)>) {
    println!("\n#### targets\n");
    println!("| target | wanted | measured | met |\n|---|---|---:|---|");
    for (name, want, r, ok) in rows {
        // Allocation rows are counts, every other row a ratio.
        let measured = if want == "0" {
            format!("{r:.2}")
        } else if r.is_infinite() {
            "∞ (it serves none)".into()
        } else {
            format!("{r:.2}×")
        };
        let met = if want == "(info)" {
            "(info)"
        } else if ok {
            "yes"
        } else {
            "**no**"
        };
        println!("| {name} | {want} | {measured} | {met} |");
    }
}

/// Group e's row of a counted miss with no error built.
const E_COUNT_ONLY: &str = "ours, `acquire_if_free` + the lock's count (no error built)";

/// Group e: a rejection when every seat is held, one thread.
fn group_e() -> Vec<(&'static str, f64)> {
    let set = TrySet::new(1);
    // Held for the rest of the process.
    std::mem::forget((
        set.floor.try_acquire(),
        set.fifo.try_acquire(),
        set.barging.try_acquire(),
        set.tokio.try_acquire(),
        set.maitake.try_acquire(1),
        set.alock.try_acquire(),
        set.embassy.try_acquire(1),
        set.cv.try_acquire(),
    ));
    // What counting a rejection costs, on top of the floor.
    let counted = leak(std::sync::atomic::AtomicUsize::new(0));
    let (floor, n) = (set.floor, MICRO_OPS);
    let mut benches = set.benches(n);
    let extra: [Bench<'static>; 2] = [
        (
            "floor + fetch_add counter",
            Box::new(move || {
                ns_per_op(n, || {
                    let s = black_box(floor).try_acquire();
                    if s.is_none() {
                        counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    black_box(s.is_some());
                })
            }),
        ),
        (
            "floor + load/store counter",
            Box::new(move || {
                ns_per_op(n, || {
                    let s = black_box(floor).try_acquire();
                    if s.is_none() {
                        let c = counted.load(std::sync::atomic::Ordering::Relaxed);
                        counted.store(c + 1, std::sync::atomic::Ordering::Relaxed);
                    }
                    black_box(s.is_some());
                })
            }),
        ),
    ];
    benches.splice(1..1, extra);
    // Ours without the rejection timestamp of `StdLock::new`.
    let untimed = leak(
        peers::Ours::with_lock(
            bulkhead_core::Config::new("bench", 1),
            bulkhead_std::StdLock::untimed(),
        )
        .expect("valid bench compartment"),
    );
    std::mem::forget(untimed.try_acquire());
    benches.push((
        "ours FIFO, StdLock::untimed",
        Box::new(move || {
            ns_per_op(n, || {
                black_box(black_box(untimed).try_acquire().is_ok());
            })
        }),
    ));
    // What bounds the rejection: the count alone (a non-counting miss,
    // then the lock's count, as `try_acquire` makes it, with no error
    // built), and neither.
    let fifo = set.fifo;
    benches.push((
        E_COUNT_ONLY,
        Box::new(move || {
            ns_per_op(n, || {
                let s = black_box(fifo).acquire_if_free();
                if s.is_none() {
                    bulkhead_core::RawLock::record_rejection(fifo.raw_lock());
                }
                black_box(s.is_some());
            })
        }),
    ));
    benches.push((
        "ours, `acquire_if_free` (no count, no error)",
        Box::new(move || {
            ns_per_op(n, || {
                black_box(black_box(fifo).acquire_if_free().is_some());
            })
        }),
    ));
    let e = run_all(benches, MICRO_REPEATS);
    table(
        "e. rejection when full, fail fast (ns/op, lower is better)",
        "ns/op",
        &e,
        &[FIFO],
    );
    e
}

/// Group e2: `threads` threads rejected on one full compartment at once;
/// ns per rejection per thread (each thread's wall time ÷ its rejections),
/// median of `MICRO_REPEATS`. Ours counts every rejection: the counts read
/// after each window must be exactly the rejections made.
fn group_e2(threads: usize) -> Vec<(&'static str, f64)> {
    fn parallel(threads: usize, n: u64, f: &(dyn Fn() + Sync)) -> f64 {
        let start = std::sync::Barrier::new(threads);
        let times: Vec<f64> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        let t = Instant::now();
                        for _ in 0..n {
                            f();
                        }
                        t.elapsed().as_nanos() as f64 / n as f64
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        times.iter().sum::<f64>() / times.len() as f64
    }
    let n = MICRO_OPS;
    let ours = leak(peers::ours(1, Admission::Fifo));
    let untimed = leak(
        peers::Ours::with_lock(Config::new("bench", 1), bulkhead_std::StdLock::untimed())
            .expect("valid bench compartment"),
    );
    let tokio = leak(tokio::sync::Semaphore::new(1));
    let floor = leak(Floor::new(1));
    let shared = leak(std::sync::atomic::AtomicUsize::new(0));
    std::mem::forget((
        ours.try_acquire(),
        untimed.try_acquire(),
        tokio.try_acquire(),
        floor.try_acquire(),
    ));
    // Ours: the window's rejections, then a check that every one of them
    // was counted.
    let counted = move |b: &'static peers::Ours| -> Box<dyn Fn() -> f64> {
        Box::new(move || {
            let before = b.state().rejected;
            let t = parallel(threads, n, &|| {
                black_box(black_box(b).try_acquire().is_ok());
            });
            assert_eq!(
                b.state().rejected - before,
                threads * n as usize,
                "every rejection is counted exactly"
            );
            t
        })
    };
    let benches: Vec<Bench<'static>> = vec![
        (
            "floor + shared fetch_add counter",
            Box::new(move || {
                parallel(threads, n, &|| {
                    if black_box(floor).try_acquire().is_none() {
                        shared.fetch_add(1, Ordering::Relaxed);
                    }
                })
            }),
        ),
        (FIFO, counted(ours)),
        ("ours FIFO, StdLock::untimed", counted(untimed)),
        (
            "tokio",
            Box::new(move || {
                parallel(threads, n, &|| {
                    black_box(black_box(tokio).try_acquire().is_ok());
                })
            }),
        ),
    ];
    let rows = run_all(benches, MICRO_REPEATS);
    table(
        &format!(
            "e2. {threads} threads rejected on one full compartment (ns per rejection per thread, lower is better)"
        ),
        "ns/op",
        &rows,
        &[FIFO],
    );
    println!(
        "
ours ÷ tokio: {:.2}×; untimed ÷ tokio: {:.2}×",
        find(&rows, FIFO) / find(&rows, "tokio"),
        find(&rows, "ours FIFO, StdLock::untimed") / find(&rows, "tokio")
    );
    rows
}

fn main() {
    let started = Instant::now();
    if std::env::args().nth(1).as_deref() == Some("callgrind") {
        let n = 1_000_000;
        cg_ours(&peers::ours(4, Admission::Fifo), n);
        cg_ours_many(&peers::ours(4, Admission::Fifo), n);
        let (part, live) = partitioned(4);
        cg_partitioned(part, live, n);
        cg_floor(&Floor::new(4), n);
        cg_tokio(&tokio::sync::Semaphore::new(4), n);
        let (ours, tokio, floor) = (
            peers::ours(1, Admission::Fifo),
            tokio::sync::Semaphore::new(1),
            Floor::new(1),
        );
        let _held = (ours.try_acquire(), tokio.try_acquire(), floor.try_acquire());
        cg_reject_ours(&ours, n);
        cg_reject_tokio(&tokio, n);
        cg_reject_floor_counted(&floor, &std::sync::atomic::AtomicUsize::new(0), n);
        cg_clock(n / 10);
        cg_layer_ours_wait(n / 10);
        cg_layer_tower_wait(n / 10);
        cg_layer_ours_fail_fast(n / 10);
        cg_layer_tower_shed(n / 10);
        return;
    }
    let work_iters = peers::calibrate_work(Duration::from_nanos(45));
    let args: Vec<String> = std::env::args().skip(1).collect();
    match &args[..] {
        [] => {}
        [group] if group == "g" => {
            run_g(&Arc::new(peers::runtime(2)));
            return;
        }
        [group] if group == "c1" => return only_c1(work_iters),
        [group] if group == "e" => {
            let e = group_e();
            println!(
                "\nours FIFO ÷ tokio: {:.2}×; the count alone ÷ tokio: {:.2}×",
                find(&e, FIFO) / find(&e, "tokio"),
                find(&e, E_COUNT_ONLY) / find(&e, "tokio")
            );
            return;
        }
        [group] if group == "e2" => {
            group_e2(2);
            return;
        }
        [group] if group == "p" => {
            group_p();
            return;
        }
        [group] if group == "a" => {
            for a in [group_a(), group_a_short()] {
                let r = |name| find(&a, name) / find(&a, "floor (bare atomic)");
                println!(
                    "\nours FIFO ÷ floor: {:.2}×; try_acquire_many(1) ÷ floor: {:.2}×",
                    r(FIFO),
                    r(FIFO_MANY)
                );
            }
            return;
        }
        [group] if group == "w" || group == "l" || group == "wl" => {
            let rt = peers::runtime(2);
            let w: Vec<_> = if group.contains('w') {
                [Hold::Plain, Hold::Yield]
                    .into_iter()
                    .map(|hold| (hold, group_w(&rt, work_iters, hold)))
                    .collect()
            } else {
                Vec::new()
            };
            let l = if group.contains('l') {
                group_l(&rt)
            } else {
                Vec::new()
            };
            print_targets(wl_targets(&w, &l));
            return;
        }
        [group, which] if group == "d" => return single_d(which, work_iters),
        [group, which] if group == "w2" => return single_w2(which, work_iters),
        _ => {
            eprintln!(
                "bench-compare: unknown arguments {args:?}\nusage: bench-compare [a | c1 | e | e2 | p | g | w | l | wl | d <contender> | w2 <contender>]"
            );
            std::process::exit(2);
        }
    }
    let work_ns = ns_per_op(200_000, || {
        black_box(work(black_box(work_iters)));
    });
    println!("## bench-compare\n");
    println!(
        "cores: {}; critical-section work: {work_iters} iterations = {work_ns:.1} ns; \
         single-thread figures: median of {MICRO_REPEATS} × {MICRO_OPS} ops; \
         contended: median of {CONTENDED_REPEATS} × {} ms windows",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        WINDOW.as_millis()
    );

    // -- a. uncontended try_acquire + release ------------------------------
    let a = group_a();

    // -- p. the same on a partitioned compartment --------------------------
    let p = group_p();

    // -- e. rejection when full ---------------------------------------------
    let e = group_e();

    // -- e2. the same, two threads at once ----------------------------------
    let e2 = group_e2(2);

    // -- b. uncontended async acquire + release, polled once ----------------
    let b = {
        let fifo = leak(peers::ours(4, Admission::Fifo));
        let barging = leak(peers::ours(4, Admission::Barging));
        let tokio = leak(tokio::sync::Semaphore::new(4));
        let maitake = leak(maitake_sync::Semaphore::new(4));
        let alock = leak(async_lock::Semaphore::new(4));
        let embassy = leak(EmbassyFair::new(4));
        let n = MICRO_OPS;
        run_all(
            vec![
                (
                    FIFO,
                    Box::new(move || {
                        ns_per_op(n, || {
                            let s = poll_once(black_box(fifo).acquire());
                            black_box(s.is_ok());
                        })
                    }),
                ),
                (
                    BARGING,
                    Box::new(move || {
                        ns_per_op(n, || {
                            let s = poll_once(black_box(barging).acquire());
                            black_box(s.is_ok());
                        })
                    }),
                ),
                (
                    "tokio",
                    Box::new(move || {
                        ns_per_op(n, || {
                            let s = poll_once(black_box(tokio).acquire());
                            black_box(s.is_ok());
                        })
                    }),
                ),
                (
                    "maitake-sync",
                    Box::new(move || {
                        ns_per_op(n, || {
                            let s = poll_once(black_box(maitake).acquire(1));
                            black_box(s.is_ok());
                        })
                    }),
                ),
                (
                    "async-lock",
                    Box::new(move || {
                        ns_per_op(n, || {
                            let s = poll_once(black_box(alock).acquire());
                            black_box(&s);
                        })
                    }),
                ),
                (
                    "embassy Fair",
                    Box::new(move || {
                        ns_per_op(n, || {
                            let s = poll_once(black_box(embassy).acquire(1));
                            black_box(s.is_ok());
                        })
                    }),
                ),
            ],
            MICRO_REPEATS,
        )
    };
    table(
        "b. uncontended async acquire + release, polled once (ns/op, lower is better)",
        "ns/op",
        &b,
        &[FIFO, BARGING],
    );

    // -- c. contended async: 2 workers, 64 tasks, 4 seats --------------------
    let rt = Arc::new(peers::runtime(2));
    let c = |hold: Hold| {
        let fifo = Arc::new(peers::ours(4, Admission::Fifo));
        let barging = Arc::new(peers::ours(4, Admission::Barging));
        let tokio = Arc::new(tokio::sync::Semaphore::new(4));
        let maitake = Arc::new(maitake_sync::Semaphore::new(4));
        let alock = Arc::new(async_lock::Semaphore::new(4));
        let embassy = Arc::new(EmbassyFair::new(4));
        let rt = &rt;
        fn one<S: peers::AsyncSem>(
            rt: &tokio::runtime::Runtime,
            s: &Arc<S>,
            w: u32,
            hold: Hold,
            unconstrained: bool,
        ) -> f64 {
            peers::run_async(rt, s, 64, w, hold, WINDOW, unconstrained).mops()
        }
        let w = work_iters;
        run_all(
            vec![
                (FIFO, Box::new(move || one(rt, &fifo, w, hold, false))),
                (BARGING, Box::new(move || one(rt, &barging, w, hold, false))),
                (
                    "tokio",
                    Box::new({
                        let tokio = tokio.clone();
                        move || one(rt, &tokio, w, hold, false)
                    }),
                ),
                (
                    "tokio (unconstrained; info only)",
                    Box::new(move || one(rt, &tokio, w, hold, true)),
                ),
                (
                    "maitake-sync",
                    Box::new(move || one(rt, &maitake, w, hold, false)),
                ),
                (
                    "async-lock",
                    Box::new(move || one(rt, &alock, w, hold, false)),
                ),
                (
                    "embassy Fair",
                    Box::new(move || one(rt, &embassy, w, hold, false)),
                ),
            ],
            CONTENDED_REPEATS,
        )
    };
    let c1 = c(Hold::Plain);
    table(
        "c1. 2 workers, 64 tasks, 4 seats, work only while holding (Mops/s, higher is better)",
        "Mops/s",
        &c1,
        &[FIFO, BARGING],
    );
    let c2 = c(Hold::Yield);
    table(
        "c2. same, one yield_now while holding (Mops/s, higher is better)",
        "Mops/s",
        &c2,
        &[FIFO, BARGING],
    );

    // -- d. contended blocking: 8 threads, 2 seats ---------------------------
    let (d, d_waits) = {
        let mut waits = DWaits::default();
        let w = work_iters;
        let benches = vec![
            waits.bench("floor (spin + yield)", Floor::new(2), w),
            waits.bench(FIFO, peers::ours(2, Admission::Fifo), w),
            waits.bench(BARGING, peers::ours(2, Admission::Barging), w),
            waits.bench(BOUNDED, peers::ours(2, Admission::BoundedBarging), w),
            waits.bench(
                TRY_FIRST,
                peers::TryFirst(peers::ours(2, Admission::Barging)),
                w,
            ),
            waits.bench("tokio (block_on per op)", tokio::sync::Semaphore::new(2), w),
            waits.bench(
                "maitake-sync (block_on per op)",
                maitake_sync::Semaphore::new(2),
                w,
            ),
            waits.bench(
                "async-lock (acquire_blocking)",
                async_lock::Semaphore::new(2),
                w,
            ),
            waits.bench("embassy Fair (block_on per op)", EmbassyFair::new(2), w),
            waits.bench("Mutex+Condvar", CondvarSemaphore::new(2), w),
        ];
        (run_all(benches, CONTENDED_REPEATS), waits)
    };
    table_with(
        "d. 8 threads, 2 seats, blocking (Mops/s, higher is better; wait = from calling acquire to holding the seat, over all timed repeats)",
        "Mops/s",
        &d,
        &[FIFO, BARGING, BOUNDED],
        Some(("wait p50 / p99 / p99.9 / max (µs)", &|name| {
            d_waits.summary_us(name)
        })),
    );

    // -- f. mixed: blocking threads and async tasks share one compartment ---
    let f = {
        let fifo = Arc::new(peers::ours(4, Admission::Fifo));
        let barging = Arc::new(peers::ours(4, Admission::Barging));
        let rt = &rt;
        let w = work_iters;
        let one = move |b: &Arc<Ours>| -> f64 {
            let t: Throughput = peers::run_mixed(rt, b, 4, 32, w, WINDOW);
            assert_eq!(b.state().active, 0, "every seat given back");
            t.mops()
        };
        let (fc, bc) = (fifo.clone(), barging.clone());
        run_all(
            vec![
                (FIFO, Box::new(move || one(&fc))),
                (BARGING, Box::new(move || one(&bc))),
            ],
            3,
        )
    };
    table(
        "f. mixed: 4 blocking threads + 32 tasks on 2 workers, 4 seats (Mops/s; no peer can share one count)",
        "Mops/s",
        &f,
        &[FIFO],
    );

    // -- g. the tower layer against what users pick instead -----------------
    let g = run_g(&rt);

    // -- w. weighted seats; l. newest first under overload -------------------
    let w: Vec<_> = [Hold::Plain, Hold::Yield]
        .into_iter()
        .map(|hold| (hold, group_w(&rt, work_iters, hold)))
        .collect();
    let l = group_l(&rt);

    // -- sizes ---------------------------------------------------------------
    let ours_c = peers::ours(1, Admission::Fifo);
    let tokio_s = tokio::sync::Semaphore::new(1);
    let maitake_s = maitake_sync::Semaphore::new(1);
    let alock_s = async_lock::Semaphore::new(1);
    let embassy_s = EmbassyFair::new(1);
    let sizes = [
        (
            "ours (`Bulkhead<StdLock>` / `Seat` / `Acquire`)",
            size_of::<Ours>(),
            size_of::<bulkhead_core::Seat<'_, bulkhead_std::StdLock>>(),
            size_of_val(&ours_c.acquire()),
        ),
        (
            "tokio (`Semaphore` / `SemaphorePermit` / `Acquire`)",
            size_of::<tokio::sync::Semaphore>(),
            size_of::<tokio::sync::SemaphorePermit<'_>>(),
            size_of_val(&tokio_s.acquire()),
        ),
        (
            "maitake-sync",
            size_of::<maitake_sync::Semaphore>(),
            size_of::<maitake_sync::semaphore::Permit<'_>>(),
            size_of_val(&maitake_s.acquire(1)),
        ),
        (
            "async-lock",
            size_of::<async_lock::Semaphore>(),
            size_of::<async_lock::SemaphoreGuard<'_>>(),
            size_of_val(&alock_s.acquire()),
        ),
        (
            "embassy Fair (N = 64 waiters)",
            size_of::<EmbassyFair>(),
            size_of::<embassy_sync::semaphore::SemaphoreReleaser<'_, EmbassyFair>>(),
            size_of_val(&embassy_s.acquire(1)),
        ),
    ];
    println!("\n#### sizes (bytes)\n");
    println!("| type | compartment | seat | acquire future |\n|---|---:|---:|---:|");
    for (name, c, s, f) in sizes {
        println!("| {name} | {c} | {s} | {f} |");
    }
    println!(
        "\n`OwnedSeat<Arc<Bulkhead<StdLock>>>`: {} bytes; `AcquireTimeout` with a tokio `Sleep`: {} bytes.",
        size_of::<bulkhead_core::OwnedSeat<Arc<Ours>>>(),
        {
            let _g = rt.enter();
            size_of_val(&ours_c.acquire_timeout(Duration::from_millis(1), tokio::time::sleep))
        },
    );

    // -- targets -----------------------------------------
    let best = |rows: &[(&'static str, f64)], names: &[&str], higher: bool| -> (String, f64) {
        let mut it = names.iter().map(|n| (n.to_string(), find(rows, n)));
        let first = it.next().expect("a peer");
        it.fold(first, |acc, x| {
            if (higher && x.1 > acc.1) || (!higher && x.1 < acc.1) {
                x
            } else {
                acc
            }
        })
    };
    let peers_b = ["tokio", "maitake-sync", "async-lock", "embassy Fair"];
    let (b_best, b_best_v) = best(&b, &peers_b, false);
    let (c1_best, c1_best_v) = best(&c1, &peers_b, true);
    let (d_fifo_peer, d_fifo_v) = best(
        &d,
        &["tokio (block_on per op)", "maitake-sync (block_on per op)"],
        true,
    );
    let mut rows: Vec<(String, String, f64, bool)> = vec![
        {
            let r = find(&a, FIFO) / find(&a, "floor (bare atomic)");
            ("a: ours ÷ floor".into(), "≤ 1.15×".into(), r, r <= 1.15)
        },
        {
            let r = find(&b, FIFO) / b_best_v;
            (
                format!("b: ours ÷ best peer ({b_best})"),
                "≤ 0.80×".into(),
                r,
                r <= 0.8,
            )
        },
        {
            let r = find(&c1, FIFO) / c1_best_v;
            (
                format!("c1: ours ÷ best peer ({c1_best})"),
                "≥ 1.10×".into(),
                r,
                r >= 1.1,
            )
        },
    ];
    // c2, round 2's wording: no peer ahead, so ours ÷ the best peer, per mode.
    for mode in [FIFO, BARGING] {
        let (peer, v) = best(&c2, &peers_b, true);
        let r = find(&c2, mode) / v;
        rows.push((
            format!("c2: {mode} ÷ best peer ({peer})"),
            "≥ 1.00×".into(),
            r,
            r >= 1.0,
        ));
    }
    rows.extend([
        {
            let r = find(&d, BARGING) / find(&d, "async-lock (acquire_blocking)");
            (
                "d: ours barging ÷ async-lock".into(),
                "≥ 1.20×".into(),
                r,
                r >= 1.2,
            )
        },
        {
            let r = find(&d, FIFO) / d_fifo_v;
            (
                format!("d: ours FIFO ÷ {d_fifo_peer}"),
                "≥ 3×".into(),
                r,
                r >= 3.0,
            )
        },
        {
            let r = find(&e, FIFO) / find(&e, "tokio");
            (
                "e: ours (default `StdLock`) ÷ tokio".into(),
                "≤ 1.50×".into(),
                r,
                r <= 1.5,
            )
        },
        {
            let r = find(&e2, FIFO) / find(&e2, "tokio");
            (
                "e2: 2 threads, ours (default `StdLock`) ÷ tokio".into(),
                "≤ 1.50×".into(),
                r,
                r <= 1.5,
            )
        },
    ]);
    for t in &g {
        let what = match t.mode {
            Mode::FailFast => "fail fast",
            Mode::Wait => "wait",
        };
        let (callers, peer) = (t.callers, t.best_peer);
        for (ours, r) in [
            ("ours", t.served_ratio),
            ("ours typed", t.served_ratio_typed),
        ] {
            rows.push((
                format!("g, {what}, {callers} callers: {ours} ÷ best peer ({peer}), served req/s"),
                "≥ 1.50×".into(),
                r,
                r >= 1.5,
            ));
        }
        rows.push((
            format!("g, {what}, {callers} callers: allocations per request, `typed_errors()` (default boxed: {:.2})", t.allocs),
            "0".into(),
            t.allocs_typed,
            t.allocs_typed == 0.0,
        ));
    }
    rows.push({
        let r = find(&a, FIFO_MANY) / find(&a, "floor (bare atomic)");
        (
            "a: ours, `try_acquire_many(1)` ÷ floor".into(),
            "≤ 1.15×".into(),
            r,
            r <= 1.15,
        )
    });
    rows.push({
        let r = find(&p, PARTITIONED) / find(&p, FLOOR);
        (
            "p: ours partitioned ÷ floor (short repeats)".into(),
            "≤ 2.00×".into(),
            r,
            r <= 2.0,
        )
    });
    rows.push((
        "p: ours partitioned ÷ ours plain (short repeats)".into(),
        "(info)".into(),
        find(&p, PARTITIONED) / find(&p, FIFO),
        true,
    ));
    rows.extend(wl_targets(&w, &l));
    print_targets(rows);
    {
        let r = find(&d, BOUNDED) / find(&d, BARGING);
        println!(
            "| d: ours bounded barging ÷ ours barging (FIFO alternative) | ≥ 0.80× | {r:.2}× | {} |",
            if r >= 0.8 { "yes" } else { "**no**" }
        );
    }
    for mode in [FIFO, BARGING, BOUNDED] {
        println!(
            "| d, {mode}: wait per acquire p50 / p99 / p99.9 / max | reported (fairness made visible) | {} µs | (info) |",
            d_waits.summary_us(mode)
        );
    }
    let c = size_of::<Ours>();
    let fut = size_of_val(&ours_c.acquire());
    println!(
        "| size: compartment / acquire future | ≤ 64 / ≤ 64 bytes | {c} / {fut} | {} |",
        if c <= 64 && fut <= 64 {
            "yes"
        } else {
            "**no**"
        }
    );
    println!("\nran in {:.1} s", started.elapsed().as_secs_f64());
}
