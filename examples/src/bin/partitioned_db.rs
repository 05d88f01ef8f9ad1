//! One 32-seat database, two kinds of traffic: `live` requests, which
//! arrive in bursts and must be fast, and a `batch` flood that never stops.
//! The same load runs against four set-ups, round-robin in one process:
//!
//! - **walled**: two plain compartments, `live` 24 and `batch` 8. Live is
//!   safe, but batch never uses live's idle seats;
//! - **shared**: one plain compartment of 32. Batch uses every seat, and
//!   live queues behind the flood;
//! - **partitioned**: one [`Partitioned`] compartment, `live` guaranteed
//!   24 with priority 1, `batch` guaranteed 8 and allowed to borrow 16 of
//!   live's idle seats. A live caller past the idle seats reclaims a
//!   borrowed one: it waits for a running batch call to end (running work
//!   is never pre-empted), and gets that seat before any batch caller;
//! - **partitioned, live reserves 20** (for comparison): as above, but
//!   live lends only 4 of its 24, so batch holds at most 12 and a burst of
//!   up to 20 never waits.
//!
//! Run it with `cargo run -p bulkhead-examples --bin partitioned_db`. It
//! runs two loads: batch calls of 2 ms, then of 50 ms, and prints batch
//! and live calls per second and live latency (from arrival to
//! completion) for each set-up, then checks what holds on any machine.
//! `-- --quick` runs only the first load.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bulkhead_core::partition::{Amount, PartitionConfig, PartitionId, Partitioned};
use bulkhead_examples::peers::Ours;
use bulkhead_std::StdLock;

/// The database's seats.
const SEATS: usize = 32;
/// Live's guaranteed share (and its wall in the walled set-up).
const LIVE_SHARE: usize = 24;
/// Batch's guaranteed share (and its wall).
const BATCH_SHARE: usize = 8;
/// How many of live's idle seats batch may borrow.
const BATCH_BORROW: usize = 16;
/// Batch callers, each calling again as soon as a call ends.
const BATCH_WORKERS: usize = 96;
/// A live burst arrives this often...
const BURST_EVERY: Duration = Duration::from_millis(40);
/// ...with this many calls (fewest, most), drawn from a fixed seed.
const BURST: (usize, usize) = (9, 20);
/// One live call's time on the database.
const LIVE_CALL: Duration = Duration::from_millis(2);
/// Measured windows per set-up, round-robin over the set-ups.
const ROUNDS: usize = 3;
/// One measured window.
const WINDOW: Duration = Duration::from_millis(400);

/// Which traffic a call belongs to.
#[derive(Clone, Copy)]
enum Class {
    Live,
    Batch,
}

/// One way to put the database behind compartments.
enum Setup {
    Walled {
        live: Ours,
        batch: Ours,
    },
    Shared(Ours),
    Partitioned {
        /// Boxed: it holds every partition's settings inline.
        db: Box<Partitioned<StdLock>>,
        live: PartitionId,
        batch: PartitionId,
    },
}

impl Setup {
    fn walled() -> Self {
        Self::Walled {
            live: Ours::new("db-live", LIVE_SHARE).expect("valid compartment"),
            batch: Ours::new("db-batch", BATCH_SHARE).expect("valid compartment"),
        }
    }

    fn shared() -> Self {
        Self::Shared(Ours::new("db", SEATS).expect("valid compartment"))
    }

    /// The partitioned compartment; `live_lends` is how much of its share
    /// live lends when idle.
    fn partitioned(live_lends: Amount) -> Self {
        let db = Partitioned::new(
            "db",
            SEATS,
            &[
                PartitionConfig::new("live", Amount::Seats(LIVE_SHARE))
                    .priority(1)
                    .lendable(live_lends),
                PartitionConfig::new("batch", Amount::Seats(BATCH_SHARE))
                    .borrow(Amount::Seats(BATCH_BORROW)),
            ],
        )
        .expect("valid partitions");
        let (live, batch) = (
            db.id("live").expect("declared"),
            db.id("batch").expect("declared"),
        );
        Self::Partitioned {
            db: Box::new(db),
            live,
            batch,
        }
    }

    /// Takes a seat for `class`, holds it for `call`, gives it back;
    /// returns when it had the seat.
    async fn call(&self, class: Class, call: Duration) -> Instant {
        let seated;
        match self {
            Self::Walled { live, batch } => {
                let b = match class {
                    Class::Live => live,
                    Class::Batch => batch,
                };
                let _seat = b.acquire().await.expect("never closed");
                seated = Instant::now();
                tokio::time::sleep(call).await;
            }
            Self::Shared(b) => {
                let _seat = b.acquire().await.expect("never closed");
                seated = Instant::now();
                tokio::time::sleep(call).await;
            }
            Self::Partitioned { db, live, batch } => {
                let id = match class {
                    Class::Live => *live,
                    Class::Batch => *batch,
                };
                let _seat = db.acquire(id).await.expect("never closed");
                seated = Instant::now();
                tokio::time::sleep(call).await;
            }
        }
        seated
    }

    /// Seats held now, over every compartment of the set-up.
    fn active(&self) -> usize {
        match self {
            Self::Walled { live, batch } => live.state().active + batch.state().active,
            Self::Shared(b) => b.state().active,
            Self::Partitioned { db, .. } => db.state().active,
        }
    }
}

/// What one set-up did over its windows.
#[derive(Default)]
struct Tally {
    batch_calls: u64,
    /// Each live call's latency: from its arrival to its end.
    live: Vec<Duration>,
    /// Each live call's wait: from its arrival to holding its seat.
    waits: Vec<Duration>,
    measured: Duration,
}

impl Tally {
    fn batch_per_s(&self) -> f64 {
        self.batch_calls as f64 / self.measured.as_secs_f64()
    }

    fn live_per_s(&self) -> f64 {
        self.live.len() as f64 / self.measured.as_secs_f64()
    }

    /// The `q`-quantile of live latency, in ms.
    fn live_ms(&self, q: f64) -> f64 {
        quantile_ms(&self.live, q)
    }

    /// The `q`-quantile of live waits, in ms.
    fn wait_ms(&self, q: f64) -> f64 {
        quantile_ms(&self.waits, q)
    }
}

/// The `q`-quantile of `v` (nearest rank), in ms.
fn quantile_ms(v: &[Duration], q: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort();
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1].as_secs_f64() * 1e3
}

/// A small xorshift: the same bursts for every set-up, no dependency.
struct Rng(u64);

impl Rng {
    fn burst(&mut self) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        BURST.0 + (self.0 % (BURST.1 - BURST.0 + 1) as u64) as usize
    }
}

/// One window of the load against `setup`: the batch flood starts, runs
/// `warm_up` to fill its seats, then live bursts arrive for `WINDOW`.
/// Live calls that arrived in the window are waited for; then every
/// caller is dropped (a dropped wait leaves its line, a dropped seat is
/// given back).
async fn window(setup: &Arc<Setup>, batch_call: Duration, seed: u64, tally: &mut Tally) {
    let batch_done = Arc::new(AtomicU64::new(0));
    let flood: Vec<_> = (0..BATCH_WORKERS)
        .map(|_| {
            let (setup, done) = (Arc::clone(setup), Arc::clone(&batch_done));
            tokio::spawn(async move {
                loop {
                    setup.call(Class::Batch, batch_call).await;
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    // Long enough for every batch seat to be taken and turned over.
    tokio::time::sleep(batch_call.max(Duration::from_millis(25)) * 2).await;

    let latencies = Arc::new(Mutex::new(Vec::new()));
    let mut rng = Rng(seed);
    let mut live = Vec::new();
    let started = Instant::now();
    let before = batch_done.load(Ordering::Relaxed);
    let mut tick = tokio::time::interval(BURST_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while started.elapsed() < WINDOW {
        tick.tick().await;
        for _ in 0..rng.burst() {
            let (setup, latencies) = (Arc::clone(setup), Arc::clone(&latencies));
            let arrived = Instant::now();
            live.push(tokio::spawn(async move {
                let seated = setup.call(Class::Live, LIVE_CALL).await;
                let done = arrived.elapsed();
                latencies
                    .lock()
                    .expect("no panic")
                    .push((done, seated - arrived));
            }));
        }
    }
    let measured = started.elapsed();
    tally.batch_calls += batch_done.load(Ordering::Relaxed) - before;
    tally.measured += measured;
    for t in live {
        t.await.expect("live call completes");
    }
    for t in &flood {
        t.abort();
    }
    for t in flood {
        assert!(
            t.await.is_err_and(|e| e.is_cancelled()),
            "batch loops only end when cancelled"
        );
    }
    assert_eq!(setup.active(), 0, "every seat given back");
    for &(latency, wait) in latencies.lock().expect("no panic").iter() {
        tally.live.push(latency);
        tally.waits.push(wait);
    }
}

const WALLED: &str = "walled (24 + 8)";
const SHARED: &str = "shared (32)";
const PARTITIONED: &str = "partitioned";
const RESERVED: &str = "partitioned, live reserves 20";

/// Runs the load with `batch_call`, prints the table and the targets,
/// and checks what holds on any machine.
fn run_load(rt: &tokio::runtime::Runtime, batch_call: Duration) {
    let setups: Vec<(&str, Arc<Setup>)> = vec![
        (WALLED, Arc::new(Setup::walled())),
        (SHARED, Arc::new(Setup::shared())),
        (
            PARTITIONED,
            Arc::new(Setup::partitioned(Amount::Percent(100))),
        ),
        (
            RESERVED,
            Arc::new(Setup::partitioned(Amount::Seats(LIVE_SHARE - 20))),
        ),
    ];
    let mut tallies: Vec<Tally> = setups.iter().map(|_| Tally::default()).collect();
    for round in 0..ROUNDS {
        // Every set-up sees the same bursts in a round.
        let seed = 0x9E37_79B9_7F4A_7C15 ^ round as u64;
        for ((_, setup), tally) in setups.iter().zip(&mut tallies) {
            rt.block_on(window(setup, batch_call, seed, tally));
        }
    }

    println!(
        "\n### batch calls of {} ms; live bursts of {}–{} calls of {} ms every {} ms; {BATCH_WORKERS} batch callers\n",
        batch_call.as_millis(),
        BURST.0,
        BURST.1,
        LIVE_CALL.as_millis(),
        BURST_EVERY.as_millis(),
    );
    println!(
        "| set-up | batch calls/s | live calls/s | live p50 (ms) | live p99 (ms) | live wait p99 (ms) | batch ÷ walled | live p99 ÷ walled |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let walled = &tallies[0];
    for ((name, _), t) in setups.iter().zip(&tallies) {
        println!(
            "| {name} | {:.0} | {:.0} | {:.2} | {:.2} | {:.2} | {:.2}× | {:.2}× |",
            t.batch_per_s(),
            t.live_per_s(),
            t.live_ms(0.5),
            t.live_ms(0.99),
            t.wait_ms(0.99),
            t.batch_per_s() / walled.batch_per_s(),
            t.live_ms(0.99) / walled.live_ms(0.99),
        );
    }
    let by = |name: &str| {
        &tallies[setups
            .iter()
            .position(|(n, _)| *n == name)
            .expect("a set-up")]
    };
    let (shared, part) = (by(SHARED), by(PARTITIONED));
    // What holds on any machine: batch may hold 24 seats partitioned and
    // 8 walled; in the shared compartment live queues behind the whole
    // flood, in the partitioned one only for seats being reclaimed.
    assert!(
        part.batch_per_s() > walled.batch_per_s(),
        "partitioned batch throughput ({:.0}/s) should pass the walled pair's ({:.0}/s)",
        part.batch_per_s(),
        walled.batch_per_s()
    );
    assert!(
        shared.live_ms(0.5) > part.live_ms(0.5),
        "batch should delay live more in the shared compartment (live p50 {:.2} ms) than in the partitioned one ({:.2} ms)",
        shared.live_ms(0.5),
        part.live_ms(0.5)
    );
    let (batch, p99) = (
        part.batch_per_s() / walled.batch_per_s(),
        part.live_ms(0.99) / walled.live_ms(0.99),
    );
    let met = |ok: bool| if ok { "met" } else { "not met" };
    println!(
        "\npartitioned against walled: batch throughput {batch:.2}× (target ≥ 1.3×: {}), live p99 {p99:.2}× (target ≤ 1.1×: {})",
        met(batch >= 1.3),
        met(p99 <= 1.1)
    );
    let ms = batch_call.as_millis();
    println!(
        "A burst larger than the {} seats batch leaves idle reclaims borrowed seats: each reclaiming \
         caller waits for a running batch call to end (up to {ms} ms here; running work is never \
         pre-empted), then gets that seat before any batch caller. Live wait p99: {:.2} ms \
         partitioned, {:.2} ms walled. Keeping part of live's share in reserve (`lendable`) \
         removes that wait for bursts up to the reserve, at the cost of batch throughput (last row).",
        SEATS - BATCH_SHARE - BATCH_BORROW,
        part.wait_ms(0.99),
        walled.wait_ms(0.99),
    );
}

fn main() {
    let quick = match std::env::args().nth(1).as_deref() {
        None => false,
        Some("--quick") => true,
        Some(other) => {
            eprintln!("partitioned_db: unknown argument {other}\nusage: partitioned_db [--quick]");
            std::process::exit(2);
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .expect("a tokio runtime");
    let started = Instant::now();
    println!(
        "## one database of {SEATS} seats: live (share {LIVE_SHARE}, priority 1) and batch (share {BATCH_SHARE}, borrows up to {BATCH_BORROW})"
    );
    println!(
        "{ROUNDS} windows of {} ms per set-up, round-robin; latency is from a live call's arrival to its end",
        WINDOW.as_millis()
    );
    let loads: &[u64] = if quick { &[2] } else { &[2, 50] };
    for &ms in loads {
        run_load(&rt, Duration::from_millis(ms));
    }
    println!("\nran in {:.1} s", started.elapsed().as_secs_f64());
}
