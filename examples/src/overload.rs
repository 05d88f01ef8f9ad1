//! Scenario l of `bench-compare`: a service at twice its capacity, each
//! caller with a latency budget, comparing oldest-first and newest-first
//! waiting (see `BENCHMARKS.md`, "l").
//!
//! Calls arrive on a fixed schedule (one every [`Settings::interval`], no
//! randomness), each as its own tokio task. A call waits for a seat until
//! its budget runs out (measured from its scheduled arrival), holds the
//! seat for [`Settings::service`] (a timer, as a call to a dependency
//! would), and gives it back. A call is *served within budget* if it got a
//! seat and finished within [`Settings::budget`] of its arrival.
//!
//! Benchmark scaffolding, not API.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bulkhead_core::Error;
use tokio::time::Instant;

use crate::peers::Ours;

/// The shape of one run.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Seats of the compartment (or permits of the semaphore).
    pub seats: usize,
    /// How long a served call holds its seat.
    pub service: Duration,
    /// The time between two arrivals.
    pub interval: Duration,
    /// Each call's budget, from its arrival: its wait is bounded by it,
    /// and it counts as served within budget only if it finished within it.
    pub budget: Duration,
    /// Arrivals before this much time are not counted (the queue fills).
    pub warm_up: Duration,
    /// Arrivals counted after the warm-up.
    pub measured: Duration,
}

impl Settings {
    /// Arrivals per second over what the seats can serve per second.
    pub fn overload(&self) -> f64 {
        let capacity = self.seats as f64 / self.service.as_secs_f64();
        let arrivals = 1.0 / self.interval.as_secs_f64();
        arrivals / capacity
    }
}

/// Why a call got no seat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GaveUp {
    /// Its budget ran out while it waited.
    TimedOut,
    /// Turned away: the queue was full, or (newest first) a newer call took
    /// its place in a full queue.
    Refused,
}

/// A semaphore whose callers wait for a seat until a deadline.
pub trait BoundedSem: Send + Sync + 'static {
    /// What holding a seat looks like.
    type Guard<'a>: Send
    where
        Self: 'a;
    /// Waits for a seat until `deadline`.
    fn acquire_until(
        &self,
        deadline: Instant,
    ) -> impl Future<Output = Result<Self::Guard<'_>, GaveUp>> + Send;
}

impl BoundedSem for Ours {
    type Guard<'a> = bulkhead_core::Seat<'a, bulkhead_std::StdLock>;
    /// The compartment's own bounded wait, on tokio's timer.
    async fn acquire_until(&self, deadline: Instant) -> Result<Self::Guard<'_>, GaveUp> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.acquire_timeout(left, tokio::time::sleep).await {
            Ok(seat) => Ok(seat),
            Err(Error::Timeout { .. }) => Err(GaveUp::TimedOut),
            // A zero budget left is fail fast: full, not a timeout.
            Err(Error::Full { .. }) => Err(GaveUp::TimedOut),
            Err(Error::QueueFull { .. }) => Err(GaveUp::Refused),
            Err(e) => panic!("unexpected refusal: {e}"),
        }
    }
}

impl BoundedSem for tokio::sync::Semaphore {
    type Guard<'a> = tokio::sync::SemaphorePermit<'a>;
    /// `tokio::time::timeout_at` around `acquire`, as tokio's users write.
    async fn acquire_until(&self, deadline: Instant) -> Result<Self::Guard<'_>, GaveUp> {
        match tokio::time::timeout_at(deadline, self.acquire()).await {
            Ok(permit) => Ok(permit.expect("open")),
            Err(_) => Err(GaveUp::TimedOut),
        }
    }
}

/// What one run counted, over the calls that arrived after the warm-up.
#[derive(Debug, Clone, Default)]
pub struct Run {
    /// Calls that arrived.
    pub calls: u64,
    /// Got a seat and finished within the budget.
    pub within: u64,
    /// Got a seat but finished after the budget.
    pub late: u64,
    /// Gave up waiting when the budget ran out.
    pub timed_out: u64,
    /// Turned away by a full queue (or dropped from it).
    pub refused: u64,
    /// From arrival to finish, of every call that got a seat.
    pub served: Vec<Duration>,
    /// From arrival to giving up, of every call that got no seat.
    pub gave_up: Vec<Duration>,
    /// Arrivals spawned more than 1 ms after they were due.
    pub late_spawns: u64,
    /// How late the arrivals were spawned, at most (the schedule's own
    /// error; every latency above counts it).
    pub max_spawn_lag: Duration,
}

impl Run {
    /// Calls served within budget ÷ all calls.
    pub fn within_rate(&self) -> f64 {
        self.within as f64 / self.calls as f64
    }

    /// Adds another run's counts and latencies to this one.
    pub fn merge(&mut self, other: &Run) {
        self.calls += other.calls;
        self.within += other.within;
        self.late += other.late;
        self.timed_out += other.timed_out;
        self.refused += other.refused;
        self.served.extend_from_slice(&other.served);
        self.gave_up.extend_from_slice(&other.gave_up);
        self.late_spawns += other.late_spawns;
        self.max_spawn_lag = self.max_spawn_lag.max(other.max_spawn_lag);
    }
}

/// One call's fate: a seat and its latency from arrival to finish, or why
/// it gave up and when, from its arrival.
type Outcome = Result<Duration, (GaveUp, Duration)>;

/// Runs the schedule of `settings` against `sem` on `rt`. This thread
/// spawns the arrivals, sleeping until each is due; an arrival spawned
/// late still counts its latency from when it was due.
pub fn run<S: BoundedSem>(rt: &tokio::runtime::Runtime, sem: &Arc<S>, settings: &Settings) -> Run {
    let Settings {
        service,
        interval,
        budget,
        warm_up,
        measured,
        ..
    } = *settings;
    let arrivals = |d: Duration| (d.as_nanos() / interval.as_nanos()) as u32;
    let (total, skip) = (arrivals(warm_up + measured), arrivals(warm_up));
    let start = std::time::Instant::now();
    let mut max_spawn_lag = Duration::ZERO;
    let mut late_spawns = Vec::with_capacity(total as usize);
    let mut handles = Vec::with_capacity(total as usize);
    for k in 0..total {
        let due = start + interval * k;
        let now = std::time::Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        } else {
            max_spawn_lag = max_spawn_lag.max(now - due);
        }
        late_spawns.push(now.saturating_duration_since(due) > Duration::from_millis(1));
        let sem = Arc::clone(sem);
        let arrival = Instant::from_std(due);
        handles.push(rt.spawn(async move {
            let seat = match sem.acquire_until(arrival + budget).await {
                Ok(seat) => seat,
                Err(why) => return Err((why, arrival.elapsed())),
            };
            tokio::time::sleep(service).await;
            drop(seat);
            Ok(arrival.elapsed())
        }));
    }
    let outcomes: Vec<Outcome> = rt.block_on(async {
        let mut out = Vec::with_capacity(handles.len());
        for h in handles {
            out.push(h.await.expect("call task"));
        }
        out
    });
    let mut run = Run {
        max_spawn_lag,
        late_spawns: late_spawns[skip as usize..].iter().filter(|l| **l).count() as u64,
        ..Run::default()
    };
    for outcome in &outcomes[skip as usize..] {
        run.calls += 1;
        if let Err((_, after)) = outcome {
            run.gave_up.push(*after);
        }
        match *outcome {
            Ok(latency) => {
                run.served.push(latency);
                if latency <= budget {
                    run.within += 1;
                } else {
                    run.late += 1;
                }
            }
            Err((GaveUp::TimedOut, _)) => run.timed_out += 1,
            Err((GaveUp::Refused, _)) => run.refused += 1,
        }
    }
    run
}
