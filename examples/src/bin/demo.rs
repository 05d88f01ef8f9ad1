//! The README's first command: a service whose worker pool calls a slow,
//! spiking database and a fast cache, run twice: without bulkheads (the
//! database spike takes every worker and cache calls starve) and with one
//! compartment per dependency (database calls are turned away quickly and
//! cache latency stays flat).
//!
//! Run it with `cargo run -p bulkhead-examples --bin demo`; add
//! `-- --svg latency.svg` to also write a chart of cache latency over time
//! in both phases.
//!
//! `-- --adaptive` runs the adaptive variant instead: the database
//! compartment starts with a wrong static guess and finds its limit (on
//! simulated time, in well under a second); it prints the limit over time,
//! and `--adaptive --svg limit.svg` charts it.

use std::io::{IsTerminal, Write};

use bulkhead_examples::simulation::{PhaseResult, Scenario, Tally, conclusion, ms, run_phase};

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let adaptive = args.first().is_some_and(|a| a == "--adaptive");
    if adaptive {
        args.remove(0);
    }
    let svg_path = match &args[..] {
        [] => None,
        [flag, path] if flag == "--svg" => Some(path.clone()),
        _ => {
            eprintln!("usage: demo [--adaptive] [--svg PATH]");
            std::process::exit(2);
        }
    };
    if adaptive {
        adaptive_demo(svg_path);
        return;
    }
    let s = Scenario::demo();
    println!(
        "bulkhead demo: {} workers serve a request every {:?}; 1 in {} goes to a `database` whose calls take {:?},",
        s.workers, s.interarrival, s.database_every, s.database_latency
    );
    println!(
        "then {:?} during a spike from {:.0}% to {:.0}% of each {:?} phase; the rest go to a `cache` ({:?}).",
        s.database_spike_latency,
        s.spike.0 * 100.0,
        s.spike.1 * 100.0,
        s.duration,
        s.cache_latency
    );
    println!(
        "Phase 2 gives the database {} seats and a {:?} wait budget, and the cache {} seats.\n",
        s.database_seats, s.database_budget, s.cache_seats
    );

    let without = phase("phase 1, no bulkheads", &s, false);
    let with = phase("phase 2, one compartment per dependency", &s, true);

    println!(
        "\n{:<10} {:<14} {:>6} {:>9} {:>9} {:>10} {:>10} {:>10} {:>10}",
        "dependency", "phase", "calls", "admitted", "rejected", "timed out", "p50", "p99", "max"
    );
    for (name, a, b) in [
        ("database", &without.database, &with.database),
        ("cache", &without.cache, &with.cache),
    ] {
        row(name, "no bulkheads", a);
        row(name, "bulkheads", b);
    }
    println!(
        "\n\"rejected\" counts callers turned away at once (no wait budget, or a full queue); the database \
         has a {} wait budget,\nso a caller that finds it full waits up to that budget and, if no seat frees up, \
         counts as \"timed out\" instead.",
        ms(s.database_budget)
    );
    println!("\n{}", conclusion(&without, &with, &s));
    if let Some(path) = svg_path {
        let chart = bulkhead_examples::svg::latency_chart(&without, &with, &s);
        match std::fs::write(&path, chart) {
            Ok(()) => println!("wrote a chart of cache latency over time to {path}"),
            Err(e) => {
                eprintln!("could not write {path}: {e}");
                std::process::exit(1);
            }
        }
    }
}

/// Runs a phase with a live progress line (redrawn in place on a terminal,
/// a few plain lines otherwise).
fn phase(label: &str, s: &Scenario, bulkheads: bool) -> PhaseResult {
    let live = std::io::stderr().is_terminal();
    let mut ticks = 0;
    let result = run_phase(s, bulkheads, |arrived, done| {
        let queued = arrived - done.min(arrived);
        if live {
            eprint!("\r{label}: {arrived} requests arrived, {done} served, {queued} queued      ");
            let _ = std::io::stderr().flush();
        } else if ticks % 10 == 0 {
            eprintln!("{label}: {arrived} requests arrived, {done} served, {queued} queued");
        }
        ticks += 1;
    });
    if live {
        eprintln!("\r{label}: done{:50}", "");
    }
    result
}

fn row(name: &str, phase: &str, t: &Tally) {
    println!(
        "{name:<10} {phase:<14} {:>6} {:>9} {:>9} {:>10} {:>10} {:>10} {:>10}",
        t.calls,
        t.admitted,
        t.rejected,
        t.timed_out,
        ms(t.percentile(0.5)),
        ms(t.percentile(0.99)),
        ms(t.max())
    );
}

/// The adaptive variant: a wrong static guess, kept or adapted.
fn adaptive_demo(svg_path: Option<String>) {
    use bulkhead_examples::adaptive::{self, DEMO_GUESS};
    let s = adaptive::demo_scenario();
    println!(
        "bulkhead demo, adaptive: a `database` with {} servers (10 ms per call) gets {} calls/s; \
         its capacity halves from 10 s to 20 s.",
        s.capacity, s.rate
    );
    println!(
        "The compartment starts with a guess of {DEMO_GUESS} seats. Simulated time: every figure is reproducible.\n"
    );
    let (fixed, adapted) = adaptive::run_demo(&s);
    println!("limit over time (adaptive, Vegas):");
    for second in (0..30).step_by(2) {
        let t = second * 1_000_000_000;
        let limit = adapted
            .limit_trace
            .iter()
            .find(|(at, _)| *at >= t)
            .map_or(0, |&(_, l)| l);
        println!(
            "  t = {second:>2} s  capacity {:>2}  limit {limit:>3}  {}",
            s.capacity_at(t),
            "#".repeat(limit.min(80))
        );
    }
    println!();
    for r in [&fixed, &adapted] {
        println!("{}", r.summary_line());
    }
    if let Some(path) = svg_path {
        match std::fs::write(&path, adaptive::limit_chart(&adapted, &s)) {
            Ok(()) => println!("\nwrote {path}"),
            Err(e) => {
                eprintln!("demo: cannot write {path}: {e}");
                std::process::exit(1);
            }
        }
    }
}
