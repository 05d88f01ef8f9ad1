//! Criterion benches of groups a–f (see `BENCHMARKS.md`): our compartment
//! against tokio, maitake-sync, async-lock and embassy-sync semaphores, a
//! `Mutex` + `Condvar` semaphore and the bare-atomic floor, each group in
//! one run.
//!
//! `cargo bench -p bulkhead-examples --bench peers` (about 2 minutes);
//! a group alone: `cargo bench -p bulkhead-examples --bench peers -- c2`.
//! The contended groups (c, d, f) run for a fixed window per sample and
//! report time per critical section, so lower is better everywhere.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use bulkhead_core::Admission;
use bulkhead_examples::peers::{
    self, AsyncSem, BlockingSem, CondvarSemaphore, EmbassyFair, Floor, Hold, Throughput, poll_once,
};
use criterion::{
    BenchmarkGroup, Criterion, criterion_group, criterion_main, measurement::WallTime,
};
use embassy_sync::semaphore::Semaphore as _;

/// One contended sample.
const WINDOW: Duration = Duration::from_millis(50);

fn quick<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    g
}

/// Per-operation time of a contended run, as criterion's `iter_custom` wants.
fn per_iters(t: Throughput, iters: u64) -> Duration {
    Duration::from_secs_f64(t.elapsed.as_secs_f64() * iters as f64 / t.ops.max(1) as f64)
}

fn a_uncontended_try(c: &mut Criterion) {
    let mut g = quick(c, "a_uncontended_try_acquire_release");
    let floor = Floor::new(4);
    let fifo = peers::ours(4, Admission::Fifo);
    let barging = peers::ours(4, Admission::Barging);
    let tokio = tokio::sync::Semaphore::new(4);
    let maitake = maitake_sync::Semaphore::new(4);
    let alock = async_lock::Semaphore::new(4);
    let embassy = EmbassyFair::new(4);
    let cv = CondvarSemaphore::new(4);
    g.bench_function("floor", |b| {
        b.iter(|| black_box(&floor).try_acquire().is_some())
    });
    g.bench_function("ours_fifo", |b| {
        b.iter(|| black_box(&fifo).try_acquire().is_ok())
    });
    g.bench_function("ours_barging", |b| {
        b.iter(|| black_box(&barging).try_acquire().is_ok())
    });
    g.bench_function("tokio", |b| {
        b.iter(|| black_box(&tokio).try_acquire().is_ok())
    });
    g.bench_function("maitake", |b| {
        b.iter(|| black_box(&maitake).try_acquire(1).is_ok())
    });
    g.bench_function("async_lock", |b| {
        b.iter(|| black_box(&alock).try_acquire().is_some())
    });
    g.bench_function("embassy_fair", |b| {
        b.iter(|| black_box(&embassy).try_acquire(1).is_some())
    });
    g.bench_function("mutex_condvar", |b| {
        b.iter(|| black_box(&cv).try_acquire().is_some())
    });
    g.finish();
}

fn b_uncontended_async(c: &mut Criterion) {
    let mut g = quick(c, "b_uncontended_async_acquire_release");
    let fifo = peers::ours(4, Admission::Fifo);
    let barging = peers::ours(4, Admission::Barging);
    let tokio = tokio::sync::Semaphore::new(4);
    let maitake = maitake_sync::Semaphore::new(4);
    let alock = async_lock::Semaphore::new(4);
    let embassy = EmbassyFair::new(4);
    g.bench_function("ours_fifo", |b| {
        b.iter(|| poll_once(black_box(&fifo).acquire()).is_ok())
    });
    g.bench_function("ours_barging", |b| {
        b.iter(|| poll_once(black_box(&barging).acquire()).is_ok())
    });
    g.bench_function("tokio", |b| {
        b.iter(|| poll_once(black_box(&tokio).acquire()).is_ok())
    });
    g.bench_function("maitake", |b| {
        b.iter(|| poll_once(black_box(&maitake).acquire(1)).is_ok())
    });
    g.bench_function("async_lock", |b| {
        b.iter(|| drop(poll_once(black_box(&alock).acquire())))
    });
    g.bench_function("embassy_fair", |b| {
        b.iter(|| {
            poll_once(embassy_sync::semaphore::Semaphore::acquire(
                black_box(&embassy),
                1,
            ))
            .is_ok()
        })
    });
    g.finish();
}

fn c_contended_async(c: &mut Criterion) {
    let rt = peers::runtime(2);
    let w = peers::calibrate_work(Duration::from_nanos(45));
    for (name, hold) in [
        ("c1_async_no_await_holding", Hold::Plain),
        ("c2_async_yield_holding", Hold::Yield),
    ] {
        let mut g = quick(c, name);
        fn bench<S: AsyncSem>(
            g: &mut BenchmarkGroup<'_, WallTime>,
            id: &str,
            rt: &tokio::runtime::Runtime,
            s: S,
            w: u32,
            hold: Hold,
        ) {
            let s = Arc::new(s);
            g.bench_function(id, |b| {
                b.iter_custom(|iters| {
                    per_iters(peers::run_async(rt, &s, 64, w, hold, WINDOW, false), iters)
                })
            });
        }
        bench(
            &mut g,
            "ours_fifo",
            &rt,
            peers::ours(4, Admission::Fifo),
            w,
            hold,
        );
        bench(
            &mut g,
            "ours_barging",
            &rt,
            peers::ours(4, Admission::Barging),
            w,
            hold,
        );
        bench(
            &mut g,
            "tokio",
            &rt,
            tokio::sync::Semaphore::new(4),
            w,
            hold,
        );
        bench(
            &mut g,
            "maitake",
            &rt,
            maitake_sync::Semaphore::new(4),
            w,
            hold,
        );
        bench(
            &mut g,
            "async_lock",
            &rt,
            async_lock::Semaphore::new(4),
            w,
            hold,
        );
        bench(&mut g, "embassy_fair", &rt, EmbassyFair::new(4), w, hold);
        g.finish();
    }
}

fn d_contended_blocking(c: &mut Criterion) {
    let w = peers::calibrate_work(Duration::from_nanos(45));
    let mut g = quick(c, "d_blocking_8_threads_2_seats");
    fn bench<S: BlockingSem>(g: &mut BenchmarkGroup<'_, WallTime>, id: &str, s: S, w: u32) {
        let s = Arc::new(s);
        g.bench_function(id, |b| {
            b.iter_custom(|iters| {
                per_iters(peers::run_blocking(&s, 8, w, WINDOW).throughput, iters)
            })
        });
    }
    bench(&mut g, "floor_spin", Floor::new(2), w);
    bench(&mut g, "ours_fifo", peers::ours(2, Admission::Fifo), w);
    bench(
        &mut g,
        "ours_barging",
        peers::ours(2, Admission::Barging),
        w,
    );
    bench(&mut g, "tokio_block_on", tokio::sync::Semaphore::new(2), w);
    bench(
        &mut g,
        "maitake_block_on",
        maitake_sync::Semaphore::new(2),
        w,
    );
    bench(
        &mut g,
        "async_lock_acquire_blocking",
        async_lock::Semaphore::new(2),
        w,
    );
    bench(&mut g, "embassy_fair_block_on", EmbassyFair::new(2), w);
    bench(&mut g, "mutex_condvar", CondvarSemaphore::new(2), w);
    g.finish();
}

fn e_rejection(c: &mut Criterion) {
    let mut g = quick(c, "e_rejection_when_full");
    let floor = Floor::new(1);
    let fifo = peers::ours(1, Admission::Fifo);
    let tokio = tokio::sync::Semaphore::new(1);
    let maitake = maitake_sync::Semaphore::new(1);
    let alock = async_lock::Semaphore::new(1);
    let embassy = EmbassyFair::new(1);
    let cv = CondvarSemaphore::new(1);
    let _held = (
        floor.try_acquire(),
        fifo.try_acquire(),
        tokio.try_acquire(),
        maitake.try_acquire(1),
        alock.try_acquire(),
        embassy.try_acquire(1),
        cv.try_acquire(),
    );
    g.bench_function("floor", |b| {
        b.iter(|| black_box(&floor).try_acquire().is_some())
    });
    g.bench_function("ours_fifo", |b| {
        b.iter(|| black_box(&fifo).try_acquire().is_ok())
    });
    g.bench_function("tokio", |b| {
        b.iter(|| black_box(&tokio).try_acquire().is_ok())
    });
    g.bench_function("maitake", |b| {
        b.iter(|| black_box(&maitake).try_acquire(1).is_ok())
    });
    g.bench_function("async_lock", |b| {
        b.iter(|| black_box(&alock).try_acquire().is_some())
    });
    g.bench_function("embassy_fair", |b| {
        b.iter(|| black_box(&embassy).try_acquire(1).is_some())
    });
    g.bench_function("mutex_condvar", |b| {
        b.iter(|| black_box(&cv).try_acquire().is_some())
    });
    g.finish();
}

fn f_mixed(c: &mut Criterion) {
    let rt = peers::runtime(2);
    let w = peers::calibrate_work(Duration::from_nanos(45));
    let mut g = quick(c, "f_mixed_threads_and_tasks");
    for (id, admission) in [
        ("ours_fifo", Admission::Fifo),
        ("ours_barging", Admission::Barging),
    ] {
        let b = Arc::new(peers::ours(4, admission));
        g.bench_function(id, |bench| {
            bench.iter_custom(|iters| per_iters(peers::run_mixed(&rt, &b, 4, 32, w, WINDOW), iters))
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    a_uncontended_try,
    b_uncontended_async,
    c_contended_async,
    d_contended_blocking,
    e_rejection,
    f_mixed
);
criterion_main!(benches);
