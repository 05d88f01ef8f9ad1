//! The demo's effect, on a shortened run: with one compartment per
//! dependency, the cache's p99 latency stays under the database's wait
//! budget and no cache call is turned away, while without bulkheads the
//! database spike drags the cache's latency far above it.
//!
//! Latency is wall-clock time on a shared 2-core machine, where the
//! scheduler alone can stall a thread for tens of milliseconds when other
//! work runs. So the scenario runs up to three times and must show the
//! effect in one of them; every attempt's figures are reported on failure.

use bulkhead_examples::simulation::{Scenario, run_phase};

#[test]
fn bulkheads_keep_the_cache_fast_during_the_database_spike() {
    let s = Scenario::demo().shortened(4);
    let mut attempts = Vec::new();
    for _ in 0..3 {
        let without = run_phase(&s, false, |_, _| {});
        let with = run_phase(&s, true, |_, _| {});
        // Structural facts hold on every run, however loaded the machine.
        assert_eq!(
            with.cache.rejected + with.cache.timed_out,
            0,
            "the cache must never be turned away"
        );
        assert_eq!(with.cache.admitted, with.cache.calls);
        assert!(
            with.database.rejected + with.database.timed_out > 0,
            "surplus database calls must be shed"
        );
        assert_eq!(with.database.calls, without.database.calls);

        let (before, after) = (without.cache.percentile(0.99), with.cache.percentile(0.99));
        if after < s.database_budget && before > after * 5 {
            return;
        }
        attempts.push((before, after));
    }
    panic!(
        "cache p99 (without, with bulkheads) per attempt: {attempts:?}; with bulkheads it must stay under \
         the database budget {:?} and be at least 5x lower than without",
        s.database_budget
    );
}

/// The `--svg` chart is a well-formed document with one dot per cache call.
#[test]
fn svg_chart_has_a_dot_per_cache_call() {
    let s = Scenario::demo().shortened(20);
    let (without, with) = (
        run_phase(&s, false, |_, _| {}),
        run_phase(&s, true, |_, _| {}),
    );
    let svg = bulkhead_examples::svg::latency_chart(&without, &with, &s);
    assert!(svg.starts_with("<svg ") && svg.trim_end().ends_with("</svg>"));
    let dots = svg.matches("<circle ").count();
    assert_eq!(dots, without.cache.calls + with.cache.calls);
}
