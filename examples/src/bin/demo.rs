//! The README's first command: a slow dependency saturates its own
//! compartment, and callers are turned away at once (fail fast) or after a
//! bounded wait, while another dependency's compartment stays open.
//!
//! Run it with `cargo run -p bulkhead-examples --bin demo`.

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use bulkhead_std::{BlockingAcquire, Bulkhead, Error};

/// How long one call to the slow "database" holds its seat.
const DB_CALL: Duration = Duration::from_millis(200);
const WORKERS: usize = 6;

#[derive(Default, Debug)]
struct Tally {
    admitted: usize,
    rejected: usize,
    timed_out: usize,
}

/// `WORKERS` threads call the database at once, each with `max_wait`.
fn burst(db: &Arc<Bulkhead>, max_wait: Option<Duration>) -> Tally {
    let start = Arc::new(Barrier::new(WORKERS));
    let handles: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (db, start) = (db.clone(), start.clone());
            thread::spawn(move || {
                start.wait();
                match db.acquire_blocking(max_wait) {
                    Ok(_seat) => {
                        thread::sleep(DB_CALL); // the slow query, holding the seat
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            })
        })
        .collect();
    let outcomes: Vec<_> = handles
        .into_iter()
        .map(|h| h.join().expect("worker panicked"))
        .collect();
    let mut tally = Tally::default();
    for outcome in outcomes {
        match outcome {
            Ok(()) => tally.admitted += 1,
            Err(Error::Timeout { .. }) => tally.timed_out += 1,
            Err(_) => tally.rejected += 1,
        }
    }
    tally
}

fn main() {
    let db = Arc::new(Bulkhead::new("database", 2).expect("valid settings"));
    let cache = Bulkhead::new("cache", 4).expect("valid settings");

    println!(
        "bulkhead demo: {WORKERS} workers hit a `database` compartment of 2 seats; each call holds its seat {DB_CALL:?}.\n"
    );
    println!(
        "{:<34} {:>8} {:>8} {:>9} {:>9}",
        "wait budget", "admitted", "rejected", "timed out", "took"
    );

    for (label, budget) in [
        ("none (fail fast)", None),
        (
            "50 ms (shorter than one call)",
            Some(Duration::from_millis(50)),
        ),
        ("1 s (long enough for all)", Some(Duration::from_secs(1))),
    ] {
        let started = Instant::now();
        let t = burst(&db, budget);
        println!(
            "{label:<34} {:>8} {:>8} {:>9} {:>8.0?}",
            t.admitted,
            t.rejected,
            t.timed_out,
            started.elapsed()
        );
    }

    // While the database compartment is saturated, the cache is untouched.
    let hog: Vec<_> = (0..2)
        .map(|_| db.try_acquire().expect("database is idle again"))
        .collect();
    let started = Instant::now();
    let cache_calls = (0..1000)
        .filter(|_| cache.acquire_blocking(None).is_ok())
        .count();
    println!(
        "\nwith every database seat taken, {cache_calls}/1000 cache calls were admitted in {:?}: one slow dependency cannot starve another.",
        started.elapsed()
    );
    assert_eq!(db.state().available(), 0);
    drop(hog);

    let s = db.state();
    println!(
        "database totals: rejected {}, timed out {}, active now {}, waiting now {}.",
        s.rejected, s.timed_out, s.active, s.waiting
    );
}
