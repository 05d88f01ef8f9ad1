//! The simulated service behind the `demo` binary.
//!
//! A fixed pool of worker threads serves a steady stream of requests for
//! two dependencies: a slow, failing `database` whose latency spikes for a
//! while, and a fast `cache`. Requests wait in one shared queue, as in a
//! thread-per-request server. Latency is measured from a request's arrival
//! to its completion, so time spent queued behind stuck workers counts.
//!
//! - **Without bulkheads**, every worker ends up inside a slow database
//!   call during the spike, and cache requests queue behind them.
//! - **With bulkheads**, the database has its own compartment of a few
//!   seats and a short wait budget: surplus database calls are turned away
//!   in milliseconds, workers stay free, and cache latency stays flat.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use bulkhead_std::MaxWait;
use bulkhead_std::prelude::*;
use bulkhead_std::{Bulkhead, Config, Error};

/// The two dependencies the service calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dependency {
    /// Slow, sometimes failing, and spiking.
    Database,
    /// Fast.
    Cache,
}

/// The shape of one run.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    /// How long requests keep arriving, per phase.
    pub duration: Duration,
    /// Time between two arrivals.
    pub interarrival: Duration,
    /// Worker threads serving the queue.
    pub workers: usize,
    /// One request in this many goes to the database; the rest to the cache.
    pub database_every: usize,
    /// A normal database call.
    pub database_latency: Duration,
    /// A database call during the spike.
    pub database_spike_latency: Duration,
    /// When the spike starts and ends, as fractions of `duration`.
    pub spike: (f64, f64),
    /// One database call in this many fails (a business error).
    pub database_fails_every: usize,
    /// A cache call.
    pub cache_latency: Duration,
    /// Seats of the database compartment in the bulkhead phase.
    pub database_seats: usize,
    /// Wait budget for a database seat in the bulkhead phase.
    pub database_budget: Duration,
    /// Seats of the cache compartment in the bulkhead phase.
    pub cache_seats: usize,
}

impl Scenario {
    /// The demo's settings: about 5 s per phase.
    pub const fn demo() -> Self {
        Self {
            duration: Duration::from_secs(5),
            interarrival: Duration::from_micros(1500),
            workers: 16,
            database_every: 3,
            database_latency: Duration::from_millis(4),
            database_spike_latency: Duration::from_millis(150),
            spike: (0.2, 0.6),
            database_fails_every: 10,
            cache_latency: Duration::from_micros(500),
            database_seats: 3,
            database_budget: Duration::from_millis(20),
            // As many as there are workers: the cache compartment keeps
            // other dependencies out of the cache's share, and the cache is
            // never the bottleneck itself.
            cache_seats: 16,
        }
    }

    /// The same shape, `factor` times shorter (for tests).
    pub fn shortened(self, factor: u32) -> Self {
        Self {
            duration: self.duration / factor,
            ..self
        }
    }
}

/// What happened to one dependency's calls in one phase.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// Requests that arrived.
    pub calls: usize,
    /// Calls that got into the dependency (successes and business errors).
    pub admitted: usize,
    /// Calls turned away at once (compartment full).
    pub rejected: usize,
    /// Calls whose wait budget ran out.
    pub timed_out: usize,
    /// Arrival-to-completion latencies of every call, sorted.
    pub latencies: Vec<Duration>,
    /// Every call as (arrival offset from the phase start, latency), in
    /// completion order: the demo's `--svg` chart.
    pub timeline: Vec<(Duration, Duration)>,
}

impl Tally {
    /// The `p`-th percentile latency (0.0..=1.0), or zero with no calls.
    pub fn percentile(&self, p: f64) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((self.latencies.len() - 1) as f64 * p).round() as usize;
        self.latencies[rank]
    }

    /// The `p` percentile of the calls that arrived in `[from, to)` (offsets
    /// from the phase start), from the timeline.
    pub fn percentile_between(&self, from: Duration, to: Duration, p: f64) -> Duration {
        let mut window: Vec<Duration> = self
            .timeline
            .iter()
            .filter(|&&(arrived, _)| arrived >= from && arrived < to)
            .map(|&(_, latency)| latency)
            .collect();
        if window.is_empty() {
            return Duration::ZERO;
        }
        window.sort_unstable();
        window[((window.len() - 1) as f64 * p).round() as usize]
    }

    /// The slowest call.
    pub fn max(&self) -> Duration {
        self.latencies.last().copied().unwrap_or_default()
    }
}

/// One phase's results.
#[derive(Debug, Clone, Default)]
pub struct PhaseResult {
    /// The database's calls.
    pub database: Tally,
    /// The cache's calls.
    pub cache: Tally,
}

/// The two compartments of the bulkhead phase.
struct Compartments {
    database: Bulkhead,
    cache: Bulkhead,
    budget: Duration,
}

struct Request {
    dependency: Dependency,
    arrived: Instant,
    seq: usize,
}

enum Outcome {
    Admitted,
    Rejected,
    TimedOut,
}

/// Runs one phase: with compartments when `bulkheads` is true. `progress`
/// is called about every 100 ms with (requests arrived, requests done).
pub fn run_phase(
    s: &Scenario,
    bulkheads: bool,
    mut progress: impl FnMut(usize, usize),
) -> PhaseResult {
    let compartments = bulkheads.then(|| {
        Arc::new(Compartments {
            database: Bulkhead::from_config(Config::new("database", s.database_seats))
                .expect("valid settings"),
            cache: Bulkhead::from_config(Config::new("cache", s.cache_seats))
                .expect("valid settings"),
            budget: s.database_budget,
        })
    });
    let (queue, requests) = mpsc::channel::<Request>();
    let requests = Arc::new(Mutex::new(requests));
    let results = Arc::new(Mutex::new(PhaseResult::default()));
    let done = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let spike = (s.duration.mul_f64(s.spike.0), s.duration.mul_f64(s.spike.1));
    let workers: Vec<_> = (0..s.workers)
        .map(|_| {
            let (requests, results, done, compartments) = (
                requests.clone(),
                results.clone(),
                done.clone(),
                compartments.clone(),
            );
            let s = *s;
            thread::spawn(move || {
                loop {
                    let next = requests.lock().expect("queue lock").recv();
                    let Ok(request) = next else { return };
                    let outcome = serve(&s, compartments.as_deref(), &request, start, spike);
                    record(&results, &request, outcome, start);
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();

    // The arrival stream, paced against absolute deadlines so that a slow
    // tick does not thin it out.
    let arrivals = (s.duration.as_secs_f64() / s.interarrival.as_secs_f64()) as usize;
    let mut last_report = Instant::now();
    for seq in 0..arrivals {
        let due = start + s.interarrival * seq as u32;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            thread::sleep(wait);
        }
        let dependency = if seq.is_multiple_of(s.database_every) {
            Dependency::Database
        } else {
            Dependency::Cache
        };
        queue
            .send(Request {
                dependency,
                arrived: Instant::now(),
                seq,
            })
            .expect("workers alive");
        if last_report.elapsed() >= Duration::from_millis(100) {
            progress(seq + 1, done.load(Ordering::Relaxed));
            last_report = Instant::now();
        }
    }
    drop(queue);
    while done.load(Ordering::Relaxed) < arrivals {
        progress(arrivals, done.load(Ordering::Relaxed));
        thread::sleep(Duration::from_millis(100));
    }
    for w in workers {
        w.join().expect("worker panicked");
    }
    let mut result = std::mem::take(&mut *results.lock().expect("results lock"));
    result.database.latencies.sort();
    result.cache.latencies.sort();
    result
}

fn serve(
    s: &Scenario,
    c: Option<&Compartments>,
    r: &Request,
    start: Instant,
    spike: (Duration, Duration),
) -> Outcome {
    let call = || match r.dependency {
        Dependency::Cache => {
            thread::sleep(s.cache_latency);
            Ok(())
        }
        Dependency::Database => {
            let now = start.elapsed();
            let spiking = now >= spike.0 && now < spike.1;
            thread::sleep(if spiking {
                s.database_spike_latency
            } else {
                s.database_latency
            });
            if r.seq
                .is_multiple_of(s.database_every * s.database_fails_every)
            {
                Err("database error")
            } else {
                Ok(())
            }
        }
    };
    let Some(c) = c else {
        let _business_result = call();
        return Outcome::Admitted;
    };
    let verdict = match r.dependency {
        Dependency::Database => c.database.execute(c.budget, call),
        // The cache is fast: fail fast if it is ever full.
        Dependency::Cache => c.cache.execute(MaxWait::FailFast, call),
    };
    match verdict {
        Ok(_business_result) => Outcome::Admitted,
        Err(Error::Timeout { .. }) => Outcome::TimedOut,
        Err(_) => Outcome::Rejected,
    }
}

fn record(results: &Mutex<PhaseResult>, r: &Request, outcome: Outcome, start: Instant) {
    let latency = r.arrived.elapsed();
    let mut results = results.lock().expect("results lock");
    let tally = match r.dependency {
        Dependency::Database => &mut results.database,
        Dependency::Cache => &mut results.cache,
    };
    tally.calls += 1;
    tally.latencies.push(latency);
    tally
        .timeline
        .push((r.arrived.duration_since(start), latency));
    match outcome {
        Outcome::Admitted => tally.admitted += 1,
        Outcome::Rejected => tally.rejected += 1,
        Outcome::TimedOut => tally.timed_out += 1,
    }
}

/// The one-line conclusion, computed from the figures.
pub fn conclusion(without: &PhaseResult, with: &PhaseResult, s: &Scenario) -> String {
    // The spike window only: calls that arrived while the database was slow.
    let (from, to) = (s.duration.mul_f64(s.spike.0), s.duration.mul_f64(s.spike.1));
    let (before, after) = (
        without.cache.percentile_between(from, to, 0.99),
        with.cache.percentile_between(from, to, 0.99),
    );
    let factor = before.as_secs_f64() / after.as_secs_f64().max(1e-9);
    let shed = with.database.rejected + with.database.timed_out;
    if after < before && with.cache.rejected == 0 {
        format!(
            "During the database spike (calls arriving {:.1} s to {:.1} s into each phase), bulkheads cut \
             cache p99 latency from {} to {} ({factor:.0}x lower); over each whole phase, {shed} database \
             calls were turned away within {} instead of tying up the {} workers.",
            from.as_secs_f64(),
            to.as_secs_f64(),
            ms(before),
            ms(after),
            ms(s.database_budget),
            s.workers
        )
    } else {
        format!(
            "This run did not show the effect (cache p99 during the spike {} without vs {} with bulkheads, \
             {} cache calls rejected); the machine may be overloaded.",
            ms(before),
            ms(after),
            with.cache.rejected
        )
    }
}

/// A duration in milliseconds, for the table.
pub fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}
