//! The cost of one adaptive-limit sample (`Controller::record`), with the
//! std lock, on one thread: the path every call takes when it gives its
//! seat back. `cargo bench -p bulkhead-examples --bench adaptive`.

use std::hint::black_box;
use std::time::Duration;

use bulkhead_core::Bulkhead;
use bulkhead_core::limit::{
    Aimd, AimdParams, AnyLimit, CallOutcome, Controller, Gradient2, Gradient2Params, Sample, Vegas,
    VegasParams, Windowed,
};
use bulkhead_std::StdLock;
use criterion::{Criterion, criterion_group, criterion_main};

fn algorithms() -> Vec<(&'static str, AnyLimit)> {
    vec![
        (
            "aimd",
            Aimd::new(AimdParams {
                min: 1,
                ..AimdParams::DEFAULT
            })
            .unwrap()
            .into(),
        ),
        ("vegas", Vegas::new(VegasParams::DEFAULT).unwrap().into()),
        (
            "gradient2",
            Gradient2::new(Gradient2Params {
                min: 1,
                ..Gradient2Params::DEFAULT
            })
            .unwrap()
            .into(),
        ),
    ]
}

fn samples(c: &mut Criterion) {
    let mut group = c.benchmark_group("adaptive sample");
    for (name, algorithm) in algorithms() {
        // Steady state: an app-limited success, so the limit holds and the
        // lock is never taken. This is the common case.
        let b: Bulkhead<StdLock> = Bulkhead::new("db", 20).unwrap();
        let ctrl = Controller::new(algorithm.clone());
        let idle = Sample::new(Duration::from_millis(5), 1, CallOutcome::Success);
        group.bench_function(format!("{name}, per sample, limit holds"), |bench| {
            bench.iter(|| black_box(ctrl.record(&b, black_box(&idle))))
        });
        // Busy: alternating fast and slow successes with the compartment
        // full, so the algorithm moves and the limit is re-applied (lock).
        let b: Bulkhead<StdLock> = Bulkhead::new("db", 20).unwrap();
        let ctrl = Controller::new(algorithm.clone());
        let mut i = 0u64;
        group.bench_function(format!("{name}, per sample, limit moving"), |bench| {
            bench.iter(|| {
                i += 1;
                let rtt = if i % 64 < 32 { 5_000_000 } else { 50_000_000 };
                let outcome = if i.is_multiple_of(97) {
                    CallOutcome::Dropped
                } else {
                    CallOutcome::Success
                };
                let s = Sample::from_nanos(rtt, 200, outcome);
                black_box(ctrl.record(&b, &s))
            })
        });
        // Windowed, steady state (what the simulation and bulkhead-std's
        // default run): most samples only add to the open window; one in
        // max(10, limit) closes it and runs the algorithm, which holds.
        let b: Bulkhead<StdLock> = Bulkhead::new("db", 20).unwrap();
        let ctrl = Controller::new(Windowed::new(algorithm.clone(), 10));
        group.bench_function(format!("{name}, windowed, limit holds"), |bench| {
            bench.iter(|| black_box(ctrl.record(&b, black_box(&idle))))
        });
        // Windowed, moving: most samples only add to the window.
        let b: Bulkhead<StdLock> = Bulkhead::new("db", 20).unwrap();
        let ctrl = Controller::new(Windowed::new(algorithm, 10));
        let mut i = 0u64;
        group.bench_function(format!("{name}, windowed, limit moving"), |bench| {
            bench.iter(|| {
                i += 1;
                let rtt = if i % 640 < 320 { 5_000_000 } else { 50_000_000 };
                let s = Sample::from_nanos(rtt, 200, CallOutcome::Success);
                black_box(ctrl.record(&b, &s))
            })
        });
    }
    group.bench_function("std::time::Instant::now, for scale", |bench| {
        bench.iter(|| black_box(std::time::Instant::now()))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    targets = samples
}
criterion_main!(benches);
