//! async-std tasks sharing a compartment through bulkhead-std's
//! `Run::run_timeout` with async-std's timer, `bulkhead_std::sleep_async_std`
//! (feature `async-std`), then the same with smol's timer,
//! `bulkhead_std::sleep_smol` (feature `smol`).
//!
//! async-std is discontinued upstream in favour of smol. The `async-std`
//! feature is kept for existing programs; new code should use `smol` (or
//! any runtime's own timer: every `_timeout` method takes one).
//!
//! Run it with `cargo run -p bulkhead-examples --bin async_std`.
//! It finishes in well under a second.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bulkhead_std::MaxWait;
use bulkhead_std::prelude::*; // BlockingAcquire, Execute, Run, Inspect
use bulkhead_std::{Bulkhead, Error, sleep_async_std, sleep_smol};

/// Calls the "search" dependency (2 seats) from `tasks` async-std tasks:
/// each waits at most `budget` for a seat, then holds it for `work`.
/// Returns (admitted, timed out).
async fn async_std_tasks(
    search: &Arc<Bulkhead>,
    tasks: usize,
    budget: Duration,
    work: Duration,
) -> (usize, usize) {
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let search = Arc::clone(search);
            async_std::task::spawn(async move {
                // Queues in the compartment's FIFO line without blocking the
                // executor; async-std's timer bounds the wait. The seat is
                // held for the call and given back when it returns.
                let call = async_std::task::sleep(work);
                search.run_timeout(budget, call, sleep_async_std).await
            })
        })
        .collect();
    let (mut admitted, mut timed_out) = (0, 0);
    for handle in handles {
        match handle.await {
            Ok(()) => admitted += 1,
            Err(Error::Timeout { .. }) => timed_out += 1,
            Err(e) => panic!("unexpected: {e}"),
        }
    }
    (admitted, timed_out)
}

fn main() {
    let start = Instant::now();
    let search = Arc::new(Bulkhead::new("search", 2).expect("valid settings"));

    // async-std: 6 tasks, 2 seats, 20 ms of work each. With a 100 ms budget
    // everyone gets in (three rounds of 20 ms); with a 5 ms budget only the
    // first two do.
    async_std::task::block_on(async {
        let (admitted, timed_out) = async_std_tasks(
            &search,
            6,
            Duration::from_millis(100),
            Duration::from_millis(20),
        )
        .await;
        println!("async-std, 100 ms budget: {admitted} admitted, {timed_out} timed out");
        assert_eq!((admitted, timed_out), (6, 0));

        let (admitted, timed_out) = async_std_tasks(
            &search,
            6,
            Duration::from_millis(5),
            Duration::from_millis(50),
        )
        .await;
        println!("async-std,   5 ms budget: {admitted} admitted, {timed_out} timed out");
        assert_eq!(admitted + timed_out, 6);
        assert!(timed_out >= 1, "the 5 ms budget turned some tasks away");
    });

    // smol's timer (`async_io::Timer`) works under any executor; here under
    // async-io's own `block_on`. `MaxWait::FailFast` is the immediate
    // verdict.
    async_io::block_on(async {
        let first = search.try_acquire().expect("a free seat");
        let second = search.try_acquire().expect("a free seat");
        let call = async { "searched" };
        match search
            .run_timeout(MaxWait::FailFast, call, sleep_smol)
            .await
        {
            Err(e @ Error::Full { .. }) => println!("smol, no budget, while full: {e}"),
            other => panic!("expected Full, got {other:?}"),
        }
        drop(first); // a seat comes free, so a budgeted wait succeeds at once
        let call = async { "searched" };
        let answer = search
            .run_timeout(Duration::from_millis(10), call, sleep_smol)
            .await
            .expect("the freed seat");
        println!("smol, 10 ms budget after a release: {answer}");
        drop(second);
    });

    let s = search.snapshot();
    println!(
        "search: {} active, {} rejected, {} timed out; done in {:.0?}",
        s.active,
        s.rejected,
        s.timed_out,
        start.elapsed()
    );
    assert_eq!(s.active, 0);
}
