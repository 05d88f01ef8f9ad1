//! `TokioClock` across runtimes: a paused runtime's clock runs an hour
//! ahead of a normal runtime's in the same process, and neither clock's
//! readings go back, or stand still, when read from the other runtime.
//!
//! In a binary of their own: the sequence runs in one process, as a test
//! suite that pauses time next to code on a normal runtime does, and no
//! other test reads a clock first.

use std::time::Duration;

use bulkhead_tokio::TokioClock;
use bulkhead_tokio::bulkhead_core::limit::Clock;
use tokio::runtime::{Builder, Runtime};

const HOUR: Duration = Duration::from_secs(3600);

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap()
}

fn paused() -> Runtime {
    Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}

fn normal() -> Runtime {
    Builder::new_current_thread().enable_time().build().unwrap()
}

/// Readings of one clock, asserted never to decrease.
struct Readings {
    what: &'static str,
    last: u64,
}

impl Readings {
    fn new(what: &'static str) -> Self {
        Self { what, last: 0 }
    }

    fn read(&mut self, clock: &TokioClock, when: &str) -> u64 {
        let now = clock.now_nanos();
        assert!(
            now >= self.last,
            "{}: read {} ns {when}, after {} ns: it went back",
            self.what,
            now,
            self.last
        );
        self.last = now;
        now
    }
}

#[test]
fn each_runtime_clock_never_goes_back_and_measures_its_own_time() {
    let outside = TokioClock::new();
    let mut outside_readings = Readings::new("the clock made outside any runtime");
    outside_readings.read(&outside, "at first");

    // A paused runtime, an hour ahead before its clock is first read.
    let a = paused();
    let (clock_a, mut readings_a) = a.block_on(async {
        tokio::time::advance(HOUR).await;
        let clock = TokioClock::new();
        let mut readings = Readings::new("the paused runtime's clock");
        let start = readings.read(&clock, "in the paused runtime");
        tokio::time::advance(HOUR).await;
        let later = readings.read(&clock, "an hour later, in the paused runtime");
        assert!(
            later - start >= nanos(HOUR),
            "advancing the paused clock by an hour moved it {} ns",
            later - start
        );
        // Std's clock, not the paused one: it did not jump two hours.
        let outside_now = outside_readings.read(&outside, "in the paused runtime");
        assert!(
            outside_now < nanos(HOUR),
            "the clock made outside any runtime followed the paused clock: {outside_now} ns"
        );
        (clock, readings)
    });

    // A normal runtime in the same process: real time.
    let b = normal();
    let (clock_b, mut readings_b) = b.block_on(async {
        let clock = TokioClock::new();
        let mut readings = Readings::new("the normal runtime's clock");
        let before = readings.read(&clock, "in the normal runtime");
        readings_a.read(&clock_a, "in the normal runtime");
        tokio::time::sleep(Duration::from_millis(20)).await;
        let after = readings.read(&clock, "after a 20 ms sleep");
        assert!(
            after - before >= nanos(Duration::from_millis(20)),
            "a 20 ms sleep on the normal runtime measured {} ns",
            after - before
        );
        readings_a.read(&clock_a, "after a 20 ms sleep in the normal runtime");
        outside_readings.read(&outside, "in the normal runtime");
        (clock, readings)
    });

    // Back in the paused runtime: each clock still reads its own runtime.
    a.block_on(async {
        readings_b.read(&clock_b, "in the paused runtime");
        let before = readings_a.read(&clock_a, "back in the paused runtime");
        tokio::time::advance(Duration::from_secs(1)).await;
        let after = readings_a.read(&clock_a, "a second later, in the paused runtime");
        assert!(after - before >= nanos(Duration::from_secs(1)));
    });

    // Outside any runtime, and with the paused one gone: still forward.
    drop(a);
    readings_a.read(&clock_a, "after its runtime shut down");
    readings_b.read(&clock_b, "outside any runtime");
    outside_readings.read(&outside, "at the end");
}

#[test]
fn from_handle_reads_that_runtime_from_outside_it() {
    let rt = paused();
    let clock = TokioClock::from_handle(rt.handle().clone());
    let start = clock.now_nanos();
    rt.block_on(tokio::time::advance(HOUR));
    let later = clock.now_nanos();
    assert!(
        later - start >= nanos(HOUR),
        "read outside the runtime, its clock moved {} ns, not an hour",
        later - start
    );
}
