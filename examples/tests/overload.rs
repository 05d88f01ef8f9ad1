//! The accounting of `bench-compare`'s overload scenario (group l): every
//! call lands in exactly one outcome, and a newest-first compartment with
//! a queue limit turns calls away (drop-oldest) where an oldest-first one
//! without a limit makes them time out. Behaviour only: the figures are
//! the benchmark's (`BENCHMARKS.md`), never asserted here.

use std::sync::Arc;
use std::time::Duration;

use bulkhead_core::{Config, QueueOrder};
use bulkhead_examples::overload::{self, Settings};
use bulkhead_examples::peers::{self, Ours};

/// One seat held 4 ms, a call every millisecond (four times what the seat
/// serves), a 10 ms budget: the line grows with every service time.
const SMALL: Settings = Settings {
    seats: 1,
    service: Duration::from_millis(4),
    interval: Duration::from_millis(1),
    budget: Duration::from_millis(10),
    warm_up: Duration::from_millis(5),
    measured: Duration::from_millis(60),
};

fn compartment(order: QueueOrder, limit: Option<usize>) -> Arc<Ours> {
    let mut config = Config::new("overload", SMALL.seats).queue_order(order);
    if let Some(n) = limit {
        config = config.max_waiting(n);
    }
    Arc::new(Ours::from_config(config).expect("valid compartment"))
}

fn assert_every_call_counted_once(run: &overload::Run) {
    // 65 ms of arrivals, one a millisecond, the first 5 not counted.
    assert_eq!(run.calls, 60);
    assert_eq!(
        run.within + run.late + run.timed_out + run.refused,
        run.calls,
        "{run:?}"
    );
    assert_eq!(run.served.len() as u64, run.within + run.late);
    assert_eq!(run.gave_up.len() as u64, run.timed_out + run.refused);
    assert!(
        run.served.iter().all(|d| *d >= SMALL.service),
        "a served call holds its seat for the service time: {run:?}"
    );
}

#[test]
fn newest_first_with_a_queue_limit_turns_the_oldest_away() {
    let rt = peers::runtime(2);
    let lifo = compartment(QueueOrder::Lifo, Some(2));
    let run = overload::run(&rt, &lifo, &SMALL);
    assert_every_call_counted_once(&run);
    // Four arrivals per service time and room for two waiters: each
    // arrival into a full line drops the oldest waiter.
    assert!(run.refused > 0, "{run:?}");
    assert_eq!(lifo.state().active, 0, "every seat given back");
}

#[test]
fn oldest_first_without_a_limit_makes_callers_time_out() {
    let rt = peers::runtime(2);
    let fifo = compartment(QueueOrder::Fifo, None);
    let run = overload::run(&rt, &fifo, &SMALL);
    assert_every_call_counted_once(&run);
    assert_eq!(run.refused, 0, "no queue limit: {run:?}");
    assert!(run.timed_out > 0, "{run:?}");

    let tokio = Arc::new(tokio::sync::Semaphore::new(SMALL.seats));
    let run = overload::run(&rt, &tokio, &SMALL);
    assert_every_call_counted_once(&run);
    assert_eq!(run.refused, 0, "{run:?}");
}
