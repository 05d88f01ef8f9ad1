//! `adaptive-sim`: adaptive limits against a dependency with a capacity
//! knee, on simulated time. See `bulkhead_examples::adaptive` for the model
//! and `BENCHMARKS.md` for the figures.

use bulkhead_examples::adaptive::{self, Report, Scenario};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [mode, n, rest @ ..] = &args[..]
        && mode == "--sample-loop"
    {
        // For instruction counts under callgrind: run with n and 2n and
        // divide the difference by n. An optional third argument picks one
        // path: `windowed` or `plain`.
        sample_loop(
            n.parse().expect("a count"),
            rest.first().map(String::as_str),
        );
        return;
    }
    let mut scenario = Scenario::BENCH;
    // `SEED=n` reruns the table with another arrival and jitter sequence.
    if let Some(seed) = std::env::var("SEED").ok().and_then(|s| s.parse().ok()) {
        scenario.seed = seed;
    }
    let mut rows: Vec<Report> = adaptive::our_algorithms(&scenario)
        .into_iter()
        .map(|(name, algorithm)| adaptive::run_ours(name, &scenario, algorithm, adaptive::INITIAL))
        .collect();
    rows.push(adaptive::best_static(&scenario));
    rows.extend(adaptive::run_peers(&scenario));
    if std::env::var_os("DUMP").is_some() {
        rows.iter().for_each(dump);
    }

    let fmt_s = |s: Option<f64>| s.map_or("never".to_string(), |s| format!("{s:.2} s"));
    println!(
        "| contender | goodput (calls/s) | p50 (ms) | p99 (ms) | shed | timed out | converge after drop | after recovery | limit std dev | steady limit (C = 40 / 20 / 40) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        println!(
            "| {} | {:.0} | {:.1} | {:.1} | {:.1} % | {:.2} % | {} | {} | {:.2} | {:.0} / {:.0} / {:.0} |",
            r.name,
            r.goodput,
            r.p50_ms,
            r.p99_ms,
            100.0 * r.shed,
            100.0 * r.timed_out,
            fmt_s(r.converge_drop_s),
            fmt_s(r.converge_recover_s),
            r.limit_std_dev,
            r.steady_limits[0],
            r.steady_limits[1],
            r.steady_limits[2]
        );
    }
}

#[allow(dead_code)]
fn dump(r: &Report) {
    let line: Vec<String> = r
        .limit_trace
        .iter()
        .step_by(50)
        .map(|(_, l)| l.to_string())
        .collect();
    eprintln!("{}: {}", r.name, line.join(" "));
}

/// `n` steady-state samples (the limit holds) through each algorithm, plain
/// and windowed (or only one of the two).
fn sample_loop(n: u64, only: Option<&str>) {
    use bulkhead_core::limit::{CallOutcome, Controller, Sample, Windowed};
    use std::hint::black_box;
    let bulkhead: bulkhead_core::Bulkhead<bulkhead_std::StdLock> =
        bulkhead_core::Bulkhead::new("db", adaptive::INITIAL).expect("valid");
    for (_, algorithm) in adaptive::our_algorithms(&Scenario::BENCH) {
        let plain = Controller::new(algorithm.clone());
        let windowed = Controller::new(Windowed::new(algorithm, adaptive::WINDOW));
        let idle = Sample::from_nanos(5_000_000, 1, CallOutcome::Success);
        for _ in 0..n {
            if only != Some("windowed") {
                black_box(plain.record(&bulkhead, black_box(&idle)));
            }
            if only != Some("plain") {
                black_box(windowed.record(&bulkhead, black_box(&idle)));
            }
        }
    }
}
