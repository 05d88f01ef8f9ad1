//! The README's first command: a service whose worker pool calls a slow,
//! spiking database and a fast cache, run twice: without bulkheads (the
//! database spike takes every worker and cache calls starve) and with one
//! compartment per dependency (database calls are turned away quickly and
//! cache latency stays flat).
//!
//! Run it with `cargo run -p bulkhead-examples --bin demo`; add
//! `-- --svg latency.svg` to also write a chart of cache latency over time
//! in both phases.

use std::io::{IsTerminal, Write};

use bulkhead_examples::simulation::{PhaseResult, Scenario, Tally, conclusion, ms, run_phase};

fn main() {
    let mut args = std::env::args().skip(1);
    let svg_path = match (args.next().as_deref(), args.next(), args.next()) {
        (None, ..) => None,
        (Some("--svg"), Some(path), None) => Some(path),
        _ => {
            eprintln!("usage: demo [--svg PATH]");
            std::process::exit(2);
        }
    };
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
