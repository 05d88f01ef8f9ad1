//! A discrete-event simulation of a dependency with a capacity knee, for
//! comparing adaptive limits (`adaptive-sim`, and the demo's adaptive run).
//!
//! # The dependency
//!
//! `C` servers, each taking 10 ms (±5 % jitter) per call, in front of a
//! FIFO queue: up to `C` concurrent calls the round trip is the service
//! time; above `C`, calls queue and the round trip grows with the queue.
//! `C` halves partway through the run (the servers in use finish their
//! calls; no new call starts until fewer than `C` are busy) and later
//! recovers.
//!
//! # The callers
//!
//! Calls arrive as a Poisson stream (more than the dependency can serve at
//! full capacity). Each arrival tries for a seat and is shed at once if the
//! compartment is full (fail fast, no queue). A caller gives up after its
//! own timeout; the dependency still serves the abandoned call when its
//! turn comes, so a long queue wastes capacity on answers nobody waits
//! for, and goodput falls.
//!
//! # Time
//!
//! Entirely simulated: an event queue ordered by simulated nanoseconds and
//! a seeded generator. Every figure is the same on every machine and every
//! run. Our compartments are the real `bulkhead_core::limit::Adaptive`
//! with an injected clock that reads the simulated time. tower-acc's layer
//! reads `std::time::Instant` itself, so it cannot run on simulated time;
//! its public `Algorithm` implementations are driven by the same event loop
//! instead, fed exactly what its layer feeds them (round trip, in-flight
//! count after the call, error flag).

use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use bulkhead_core::Bulkhead;
use bulkhead_core::limit::{
    Adaptive, Aimd, AimdParams, AnyLimit, CallOutcome, Fraction, Gradient2, Gradient2Params, Limit,
    Vegas, VegasParams, Windowed,
};
use bulkhead_std::StdLock;

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;

/// The shape of one run.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    /// Simulated length of the run.
    pub duration: u64,
    /// When the capacity halves, and when it recovers (ns).
    pub drop_at: u64,
    /// When the capacity recovers (ns).
    pub recover_at: u64,
    /// Concurrent calls the dependency serves at base latency, normally.
    pub capacity: usize,
    /// Base service time (ns).
    pub service: u64,
    /// Mean arrival rate, calls per second.
    pub rate: u64,
    /// Callers give up after this long (ns).
    pub timeout: u64,
    /// Seed of the generator.
    pub seed: u64,
}

impl Scenario {
    /// The benchmark's scenario: 60 s, capacity 40 halving to 20 from 20 s
    /// to 40 s, 10 ms calls, 5000 calls/s offered (1.25x full capacity,
    /// 2.5x the halved one), 100 ms caller timeout.
    pub const BENCH: Scenario = Scenario {
        duration: 60 * SEC,
        drop_at: 20 * SEC,
        recover_at: 40 * SEC,
        capacity: 40,
        service: 10 * MS,
        rate: 5000,
        timeout: 100 * MS,
        seed: 42,
    };

    /// The dependency's knee at simulated time `t`.
    pub fn capacity_at(&self, t: u64) -> usize {
        if (self.drop_at..self.recover_at).contains(&t) {
            self.capacity / 2
        } else {
            self.capacity
        }
    }
}

/// The figures of one run.
#[derive(Debug, Clone)]
pub struct Report {
    /// The contender.
    pub name: String,
    /// Calls completed within the caller's timeout, per simulated second.
    pub goodput: f64,
    /// Median round trip of those calls (ms).
    pub p50_ms: f64,
    /// 99th percentile round trip of those calls (ms).
    pub p99_ms: f64,
    /// Share of arrivals turned away by the compartment.
    pub shed: f64,
    /// Share of admitted calls the caller gave up on.
    pub timed_out: f64,
    /// Seconds from the capacity drop until the limit is within ±10 % of
    /// the new capacity and stays there until the recovery; `None` if it
    /// is outside the band when the recovery comes.
    pub converge_drop_s: Option<f64>,
    /// The same from the recovery to the end of the run.
    pub converge_recover_s: Option<f64>,
    /// Standard deviation of the limit over the last 10 s of each phase.
    pub limit_std_dev: f64,
    /// Mean limit over the last 10 s of each phase (capacity 40, 20, 40).
    pub steady_limits: [f64; 3],
    /// The limit every 10 ms, for charts.
    pub limit_trace: Vec<(u64, usize)>,
    /// The lowest and highest limit in effect in each 10 ms slot (slot
    /// start, lowest, highest): what the convergence times are read from.
    pub limit_extremes: Vec<(u64, usize, usize)>,
}

impl Report {
    /// The one-line summary the demo prints and the README quotes (a test
    /// compares the two, so the README's figures are the program's).
    pub fn summary_line(&self) -> String {
        format!(
            "{:<18} goodput {:>5.0}/s  p50 {:>5.1} ms  p99 {:>6.1} ms  shed {:>4.1} %  timed out {:>4.1} %",
            self.name,
            self.goodput,
            self.p50_ms,
            self.p99_ms,
            100.0 * self.shed,
            100.0 * self.timed_out
        )
    }
}

/// Something that admits calls and learns from them.
trait Gate {
    fn limit(&self) -> usize;
    /// Takes a seat if the limit allows; returns a ticket.
    fn try_admit(&mut self, now: u64) -> Option<usize>;
    /// The call behind `ticket` ended at `now`.
    fn complete(&mut self, ticket: usize, now: u64, outcome: CallOutcome);
}

/// Ours: the real adaptive compartment, with a simulated clock.
struct Ours<'c, C: Fn() -> u64> {
    adaptive: &'c Adaptive<StdLock, Windowed<AnyLimit>, C>,
    seats: Slab<bulkhead_core::limit::AdaptiveSeat<'c, StdLock, Windowed<AnyLimit>, C>>,
}

impl<'c, C: Fn() -> u64> Gate for Ours<'c, C> {
    fn limit(&self) -> usize {
        self.adaptive.limit()
    }
    fn try_admit(&mut self, _now: u64) -> Option<usize> {
        let seat = self.adaptive.try_acquire().ok()?;
        Some(self.seats.insert(seat))
    }
    fn complete(&mut self, ticket: usize, _now: u64, outcome: CallOutcome) {
        if let Some(seat) = self.seats.remove(ticket) {
            let _ = seat.record(outcome);
        }
    }
}

/// tower-acc's algorithm, fed as its layer feeds it.
struct Peer<A: tower_acc::Algorithm> {
    algorithm: A,
    in_flight: usize,
    started: Slab<u64>,
}

impl<A: tower_acc::Algorithm> Gate for Peer<A> {
    fn limit(&self) -> usize {
        self.algorithm.max_concurrency()
    }
    fn try_admit(&mut self, now: u64) -> Option<usize> {
        // Its layer shrinks by forgetting free permits and retrying later,
        // so admission is simply "fewer in flight than the limit".
        if self.in_flight >= self.algorithm.max_concurrency() {
            return None;
        }
        self.in_flight += 1;
        Some(self.started.insert(now))
    }
    fn complete(&mut self, ticket: usize, now: u64, outcome: CallOutcome) {
        let Some(started) = self.started.remove(ticket) else {
            return;
        };
        self.in_flight -= 1;
        let rtt = Duration::from_nanos(now - started);
        // Its layer counts in-flight calls after the permit is returned.
        self.algorithm
            .update(rtt, self.in_flight, outcome != CallOutcome::Success, false);
    }
}

/// A fixed limit.
struct Static {
    limit: usize,
    in_flight: usize,
    next: usize,
}

impl Gate for Static {
    fn limit(&self) -> usize {
        self.limit
    }
    fn try_admit(&mut self, _now: u64) -> Option<usize> {
        if self.in_flight >= self.limit {
            return None;
        }
        self.in_flight += 1;
        self.next += 1;
        Some(self.next)
    }
    fn complete(&mut self, _ticket: usize, _now: u64, _outcome: CallOutcome) {
        self.in_flight -= 1;
    }
}

/// A tiny slab: tickets index a vector of optional entries.
struct Slab<T> {
    entries: Vec<Option<T>>,
    free: Vec<usize>,
}

impl<T> Slab<T> {
    fn new() -> Self {
        Self {
            entries: Vec::new(),
            free: Vec::new(),
        }
    }
    fn insert(&mut self, value: T) -> usize {
        if let Some(i) = self.free.pop() {
            self.entries[i] = Some(value);
            i
        } else {
            self.entries.push(Some(value));
            self.entries.len() - 1
        }
    }
    fn remove(&mut self, i: usize) -> Option<T> {
        let value = self.entries.get_mut(i)?.take();
        if value.is_some() {
            self.free.push(i);
        }
        value
    }
}

/// xorshift64*: small, seeded, good enough for arrivals and jitter.
struct Rng(u64);

impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (x >> 11) as f64 / (1u64 << 53) as f64
    }
    /// An exponential variate with mean `mean`.
    fn exp(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.next_f64()).ln()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// A server finishes a call.
    ServiceEnd {
        call: usize,
    },
    /// The capacity changes; queued calls may start.
    CapacityChange,
    /// The caller's timeout expires.
    CallerTimeout {
        call: usize,
    },
    Arrival,
}

struct Call {
    ticket: usize,
    start: u64,
    /// The caller has its answer, or gave up.
    caller_done: bool,
}

/// The dependency: busy servers and a FIFO queue of calls.
struct Dependency {
    busy: usize,
    queue: std::collections::VecDeque<usize>,
}

impl Dependency {
    /// Starts queued calls while servers are free at time `t`.
    fn start_queued(
        &mut self,
        t: u64,
        scenario: &Scenario,
        rng: &mut Rng,
        events: &mut BinaryHeap<Reverse<(u64, Event)>>,
    ) {
        while self.busy < scenario.capacity_at(t) {
            let Some(call) = self.queue.pop_front() else {
                return;
            };
            self.busy += 1;
            let jitter = 0.95 + 0.1 * rng.next_f64();
            let service = (scenario.service as f64 * jitter) as u64;
            events.push(Reverse((t + service, Event::ServiceEnd { call })));
        }
    }
}

/// Runs `gate` through `scenario`; `now` is the simulated clock the gate's
/// own clock reads.
fn run(name: &str, scenario: &Scenario, gate: &mut dyn Gate, now: &Cell<u64>) -> Report {
    let mut rng = Rng(scenario.seed);
    let mut events: BinaryHeap<Reverse<(u64, Event)>> = BinaryHeap::new();
    let mut calls: Vec<Call> = Vec::new();
    let mut dependency = Dependency {
        busy: 0,
        queue: Default::default(),
    };
    let (mut arrivals, mut shed, mut timed_out, mut admitted) = (0u64, 0u64, 0u64, 0u64);
    let mut latencies: Vec<u64> = Vec::new();
    let mut trace = Vec::new();
    // The lowest and highest limit in effect during each 10 ms slot, so
    // that no excursion between two trace points escapes the convergence
    // check.
    let mut extremes: Vec<(u64, usize, usize)> = Vec::new();
    let mut next_trace = 0u64;
    let mean_gap = SEC as f64 / scenario.rate as f64;
    events.push(Reverse((0, Event::Arrival)));
    events.push(Reverse((scenario.drop_at, Event::CapacityChange)));
    events.push(Reverse((scenario.recover_at, Event::CapacityChange)));

    while let Some(Reverse((t, event))) = events.pop() {
        if t >= scenario.duration {
            break;
        }
        while next_trace <= t {
            let limit = gate.limit();
            trace.push((next_trace, limit));
            extremes.push((next_trace, limit, limit));
            next_trace += 10 * MS;
        }
        now.set(t);
        match event {
            Event::Arrival => {
                arrivals += 1;
                let gap = rng.exp(mean_gap) as u64;
                events.push(Reverse((t + gap.max(1), Event::Arrival)));
                let Some(ticket) = gate.try_admit(t) else {
                    shed += 1;
                    continue;
                };
                admitted += 1;
                let call = calls.len();
                calls.push(Call {
                    ticket,
                    start: t,
                    caller_done: false,
                });
                events.push(Reverse((
                    t + scenario.timeout,
                    Event::CallerTimeout { call },
                )));
                dependency.queue.push_back(call);
                dependency.start_queued(t, scenario, &mut rng, &mut events);
            }
            Event::CapacityChange => {
                dependency.start_queued(t, scenario, &mut rng, &mut events);
            }
            Event::CallerTimeout { call } => {
                let c = &mut calls[call];
                if !c.caller_done {
                    c.caller_done = true;
                    timed_out += 1;
                    gate.complete(c.ticket, t, CallOutcome::Timeout);
                }
            }
            Event::ServiceEnd { call } => {
                dependency.busy -= 1;
                let c = &mut calls[call];
                if !c.caller_done {
                    c.caller_done = true;
                    latencies.push(t - c.start);
                    gate.complete(c.ticket, t, CallOutcome::Success);
                }
                dependency.start_queued(t, scenario, &mut rng, &mut events);
            }
        }
        if let Some(slot) = extremes.last_mut() {
            let limit = gate.limit();
            slot.1 = slot.1.min(limit);
            slot.2 = slot.2.max(limit);
        }
    }
    latencies.sort_unstable();
    let pct = |p: f64| {
        if latencies.is_empty() {
            return f64::NAN;
        }
        let i = ((latencies.len() as f64 * p) as usize).min(latencies.len() - 1);
        latencies[i] as f64 / MS as f64
    };
    let secs = scenario.duration as f64 / SEC as f64;
    Report {
        name: name.into(),
        goodput: latencies.len() as f64 / secs,
        p50_ms: pct(0.50),
        p99_ms: pct(0.99),
        shed: shed as f64 / arrivals.max(1) as f64,
        timed_out: timed_out as f64 / admitted.max(1) as f64,
        converge_drop_s: converge(
            &extremes,
            scenario.drop_at,
            scenario.recover_at,
            scenario.capacity / 2,
        ),
        converge_recover_s: converge(
            &extremes,
            scenario.recover_at,
            scenario.duration,
            scenario.capacity,
        ),
        limit_std_dev: steady_std_dev(&trace, scenario).0,
        steady_limits: steady_std_dev(&trace, scenario).1,
        limit_trace: trace,
        limit_extremes: extremes,
    }
}

/// Seconds from `from` until the limit enters ±10 % of `target` and stays
/// there until `until` (the next capacity change, or the end of the run);
/// `None` if it is outside the band at the last trace point before `until`.
fn converge(extremes: &[(u64, usize, usize)], from: u64, until: u64, target: usize) -> Option<f64> {
    // Integer bounds: 0.9 × 20 = 18 and 1.1 × 20 = 22 are inside.
    let inside = |l: usize| 10 * l >= 9 * target && 10 * l <= 11 * target;
    let slots: Vec<_> = extremes
        .iter()
        .filter(|(t, _, _)| (from..until).contains(t))
        .collect();
    // The last slot that left the band; the limit has stayed inside since
    // the slot after it.
    let since =
        |slot: Option<&&(u64, usize, usize)>| slot.map(|(t, _, _)| (t - from) as f64 / SEC as f64);
    match slots
        .iter()
        .rposition(|(_, lo, hi)| !inside(*lo) || !inside(*hi))
    {
        None => since(slots.first()),
        Some(i) => since(slots.get(i + 1)),
    }
}

/// Standard deviation of the limit over the last 10 s of each of the three
/// phases, pooled around each phase's own mean.
fn steady_std_dev(trace: &[(u64, usize)], s: &Scenario) -> (f64, [f64; 3]) {
    let phases = [
        (0, s.drop_at),
        (s.drop_at, s.recover_at),
        (s.recover_at, s.duration),
    ];
    let (mut sum_sq, mut n) = (0.0, 0usize);
    let mut means = [0.0; 3];
    for (phase, (start, end)) in phases.into_iter().enumerate() {
        let from = end.saturating_sub(10 * SEC).max(start);
        let values: Vec<f64> = trace
            .iter()
            .filter(|(t, _)| (from..end).contains(t))
            .map(|(_, l)| *l as f64)
            .collect();
        if values.is_empty() {
            continue;
        }
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        means[phase] = mean;
        sum_sq += values.iter().map(|v| (v - mean).powi(2)).sum::<f64>();
        n += values.len();
    }
    let std_dev = if n == 0 {
        0.0
    } else {
        (sum_sq / n as f64).sqrt()
    };
    (std_dev, means)
}

/// The smallest window of our contenders, in samples.
pub const WINDOW: u32 = 10;

/// The bounds every adaptive contender gets.
pub const MIN: usize = 4;
/// The upper bound every adaptive contender gets.
pub const MAX: usize = 200;
/// Where every adaptive contender starts.
pub const INITIAL: usize = 20;

/// Vegas with a queue allowance of one call instead of 3–6 (`threshold`,
/// `alpha`, `beta` = 1, 1, 1) and smoothing 0.25: it holds while one call
/// queues, grows while none does, and moves a quarter step per window, so
/// that it settles within 10 % of a capacity of 20 (at most 2 calls
/// above it) despite the queue estimate's rounding up. The reasoning is
/// in docs/adaptive.md ("Why Vegas settles above the capacity").
pub const TIGHT_VEGAS: VegasParams = VegasParams {
    threshold: 1,
    alpha: 1,
    beta: 1,
    smoothing: Fraction::per_mille(250),
    ..VegasParams::DEFAULT
};

/// The name of the [`TIGHT_VEGAS`] contender in the table.
pub const TIGHT_VEGAS_NAME: &str = "bulkhead vegas, queue 1, smoothing 0.25";

/// Our three algorithms, with their default parameters except the shared
/// bounds and, for AIMD, a latency timeout of 2x the base service time
/// (its default of 5 s never fires here, so it would grow to `MAX`); and
/// Vegas without its baseline probe, which shows what the probe costs.
pub fn our_algorithms(scenario: &Scenario) -> Vec<(&'static str, AnyLimit)> {
    let aimd = Aimd::new(AimdParams {
        initial: INITIAL,
        min: MIN,
        max: MAX,
        timeout: Duration::from_nanos(2 * scenario.service),
        ..AimdParams::DEFAULT
    })
    .expect("valid AIMD parameters");
    let vegas = Vegas::new(VegasParams {
        initial: INITIAL,
        min: MIN,
        max: MAX,
        ..VegasParams::DEFAULT
    })
    .expect("valid Vegas parameters");
    let gradient2 = Gradient2::new(Gradient2Params {
        initial: INITIAL,
        min: MIN,
        max: MAX,
        ..Gradient2Params::DEFAULT
    })
    .expect("valid Gradient2 parameters");
    let vegas_np = Vegas::new(VegasParams {
        initial: INITIAL,
        min: MIN,
        max: MAX,
        probe_multiplier: u32::MAX,
        ..VegasParams::DEFAULT
    })
    .expect("valid Vegas parameters");
    let vegas_tight = Vegas::new(VegasParams {
        initial: INITIAL,
        min: MIN,
        max: MAX,
        ..TIGHT_VEGAS
    })
    .expect("valid Vegas parameters");
    vec![
        ("bulkhead aimd", aimd.into()),
        ("bulkhead vegas", vegas.into()),
        ("bulkhead gradient2", gradient2.into()),
        ("bulkhead vegas, no probe", vegas_np.into()),
        (TIGHT_VEGAS_NAME, vegas_tight.into()),
    ]
}

/// Runs one of our algorithms.
pub fn run_ours(
    name: &str,
    scenario: &Scenario,
    algorithm: AnyLimit,
    start_limit: usize,
) -> Report {
    let now = Cell::new(0u64);
    let clock = || now.get();
    let bulkhead: Bulkhead<StdLock> =
        Bulkhead::new("dependency", start_limit).expect("valid compartment");
    let adaptive = Adaptive::new(bulkhead, Windowed::new(algorithm, WINDOW), clock);
    let mut gate = Ours {
        adaptive: &adaptive,
        seats: Slab::new(),
    };
    run(name, scenario, &mut gate, &now)
}

/// Runs a fixed limit.
pub fn run_static(scenario: &Scenario, limit: usize) -> Report {
    let now = Cell::new(0);
    let mut gate = Static {
        limit,
        in_flight: 0,
        next: 0,
    };
    run(&format!("static {limit}"), scenario, &mut gate, &now)
}

/// Runs tower-acc's three algorithms with the same bounds.
pub fn run_peers(scenario: &Scenario) -> Vec<Report> {
    let now = Cell::new(0);
    let aimd = tower_acc::Aimd::builder()
        .initial_limit(INITIAL)
        .min_limit(MIN)
        .max_limit(MAX)
        .timeout(Duration::from_nanos(2 * scenario.service))
        .build();
    let vegas = tower_acc::Vegas::builder()
        .initial_limit(INITIAL)
        .max_limit(MAX)
        .build();
    let gradient2 = tower_acc::Gradient2::builder()
        .initial_limit(INITIAL)
        .min_limit(MIN)
        .max_limit(MAX)
        .build();
    vec![
        run("tower-acc aimd", scenario, &mut peer(aimd), &now),
        run("tower-acc vegas", scenario, &mut peer(vegas), &now),
        run("tower-acc gradient2", scenario, &mut peer(gradient2), &now),
    ]
}

fn peer<A: tower_acc::Algorithm>(algorithm: A) -> Peer<A> {
    Peer {
        algorithm,
        in_flight: 0,
        started: Slab::new(),
    }
}

/// Every fixed limit from 1 to `MAX`; the best in hindsight is the one
/// with the most goodput (ties: the lower p99).
pub fn best_static(scenario: &Scenario) -> Report {
    (1..=MAX)
        .map(|limit| run_static(scenario, limit))
        .max_by(|a, b| {
            a.goodput
                .total_cmp(&b.goodput)
                .then(b.p99_ms.total_cmp(&a.p99_ms))
        })
        .expect("at least one static limit")
}

/// Checks `Limit` is in scope for callers that inspect algorithms.
#[allow(dead_code)]
fn _uses(l: &AnyLimit) -> usize {
    l.limit()
}

/// The demo's adaptive variant: a `database` of 16 servers whose
/// compartment starts with a wrong static guess of 64 seats. Capacity
/// halves from 10 s to 20 s of a 30 s run (simulated time).
pub fn demo_scenario() -> Scenario {
    Scenario {
        duration: 30 * SEC,
        drop_at: 10 * SEC,
        recover_at: 20 * SEC,
        capacity: 16,
        service: 10 * MS,
        rate: 2000,
        timeout: 100 * MS,
        seed: 7,
    }
}

/// The guess the demo's compartment starts with.
pub const DEMO_GUESS: usize = 64;

/// Runs the demo: the wrong guess kept (static), and the same guess as
/// the starting point of a windowed Vegas limit.
pub fn run_demo(scenario: &Scenario) -> (Report, Report) {
    let fixed = run_static(scenario, DEMO_GUESS);
    let vegas = Vegas::new(VegasParams {
        initial: DEMO_GUESS,
        min: MIN,
        max: MAX,
        ..VegasParams::DEFAULT
    })
    .expect("valid Vegas parameters");
    let adaptive = run_ours("adaptive (vegas)", scenario, vegas.into(), DEMO_GUESS);
    (fixed, adaptive)
}

/// An SVG chart of the adaptive limit over time against the dependency's
/// capacity (no dependency: hand-written SVG).
pub fn limit_chart(report: &Report, scenario: &Scenario) -> String {
    use std::fmt::Write;
    let (w, h, left, top) = (640.0, 300.0, 50.0, 30.0);
    let x_max = scenario.duration as f64 / SEC as f64;
    let y_max = report
        .limit_trace
        .iter()
        .map(|&(_, l)| l as f64)
        .fold(scenario.capacity as f64 * 1.5, f64::max);
    let x = |t: f64| left + t / x_max * w;
    let y = |v: f64| top + h - v / y_max * h;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="12">"#,
        left + w + 20.0,
        top + h + 40.0
    );
    let _ = writeln!(
        svg,
        r#"<text x="{left}" y="18">database compartment: adaptive limit (blue) and capacity (grey), from a guess of {DEMO_GUESS}</text>"#
    );
    let _ = writeln!(
        svg,
        r##"<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="none" stroke="#999"/>"##
    );
    // Capacity as a step line.
    let mut capacity = String::new();
    let mut t = 0;
    while t <= scenario.duration {
        let c = scenario.capacity_at(t.min(scenario.duration - 1)) as f64;
        let _ = write!(capacity, "{:.1},{:.1} ", x(t as f64 / SEC as f64), y(c));
        t += 10 * MS;
    }
    let _ = writeln!(
        svg,
        r##"<polyline points="{capacity}" fill="none" stroke="#bbb" stroke-width="3"/>"##
    );
    let points: String = report
        .limit_trace
        .iter()
        .map(|&(t, l)| format!("{:.1},{:.1} ", x(t as f64 / SEC as f64), y(l as f64)))
        .collect();
    let _ = writeln!(
        svg,
        r##"<polyline points="{points}" fill="none" stroke="#1f77b4" stroke-width="1.5"/>"##
    );
    for tick in 0..=(x_max as u64) / 5 {
        let s = (tick * 5) as f64;
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{s} s</text>"#,
            x(s),
            top + h + 16.0
        );
    }
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{:.0}</text><text x="{:.1}" y="{:.1}" text-anchor="end">0</text>"#,
        left - 4.0,
        top + 10.0,
        y_max,
        left - 4.0,
        top + h
    );
    svg.push_str("</svg>\n");
    svg
}
