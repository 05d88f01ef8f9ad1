//! How long one grow takes with `n` waiters queued, FIFO against barging:
//! `set_max_concurrent(n + 1)` hands a seat (FIFO) or a wake-up (barging)
//! to every waiter, a batch per lock section. Both admission modes run in
//! the same process, in turn, and the median of several runs is printed.
//!
//! ```sh
//! cargo run --release -p bulkhead-core --example section_cost
//! ```
//!
//! Each section's work is bounded by a constant (see `RawLock`'s docs), so
//! a grow is O(n) in both modes; an earlier barging drain walked
//! the whole notified prefix in every section, and a grow was O(n^2).

use std::pin::Pin;
use std::task::{Context, Waker};
use std::time::{Duration, Instant};

use bulkhead_core::{Acquire, Admission, Bulkhead, Config, CsLock};

fn grow_once(admission: Admission, n: usize) -> Duration {
    let b: Bulkhead<CsLock> =
        Bulkhead::from_config(Config::new("grow", 1).admission(admission)).expect("valid settings");
    let held = b.try_acquire().expect("a free seat");
    let mut cx = Context::from_waker(Waker::noop());
    let mut waiters: Vec<Pin<Box<Acquire<'_, CsLock>>>> =
        (0..n).map(|_| Box::pin(b.acquire())).collect();
    for w in &mut waiters {
        assert!(w.as_mut().poll(&mut cx).is_pending());
    }
    let start = Instant::now();
    b.set_max_concurrent(n + 1).expect("within the limit");
    let took = start.elapsed();
    drop(waiters);
    drop(held);
    assert_eq!(b.state().active, 0);
    took
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    const RUNS: usize = 9;
    println!("| waiters | FIFO | barging | barging / FIFO |");
    println!("|---|---|---|---|");
    for n in [2_000, 8_000] {
        let mut fifo = Vec::new();
        let mut barging = Vec::new();
        for _ in 0..RUNS {
            fifo.push(grow_once(Admission::Fifo, n));
            barging.push(grow_once(Admission::Barging, n));
        }
        let (f, b) = (median(fifo), median(barging));
        println!(
            "| {n} | {:.0} µs | {:.0} µs | {:.2} |",
            f.as_secs_f64() * 1e6,
            b.as_secs_f64() * 1e6,
            b.as_secs_f64() / f.as_secs_f64()
        );
    }
}
