//! Stress: OS threads and tokio tasks share one compartment and perform
//! random try_acquire, waits, cancellations, timeouts, reconfigurations
//! and finally close. An independent counter, kept inside the guarded
//! section, checks the limit continuously; at quiescence every seat must be
//! back and nobody may be waiting.
//!
//! `BULKHEAD_STRESS_OPS` sets the operations per worker (default 20000,
//! about a few seconds in debug); raise it for soak runs.
#![cfg(not(miri))]

use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::{Duration, Instant};

#[cfg(feature = "barging")]
use bulkhead_core::{Admission, CsLock};
use bulkhead_core::{Bulkhead, Config, Error, RawLock};

mod watchdog;

/// A per-compartment std mutex, as bulkhead-std provides.
#[derive(Default)]
struct TestLock(Mutex<()>);

// SAFETY: std's mutex excludes, orders, never fails `try_lock` spuriously,
// and unlocks on unwind.
unsafe impl RawLock for TestLock {
    unsafe fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
        let _g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f()
    }
    unsafe fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        let _g = match self.0.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        Some(f())
    }
    // This test reads no counts.
    fn counts(&self) -> bulkhead_core::Counts {
        bulkhead_core::Counts::NONE
    }
}

fn ops() -> usize {
    std::env::var("BULKHEAD_STRESS_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}

/// xorshift64*: a tiny, seedable generator so runs are reproducible.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// Counts callers inside and checks the limit on every entry.
struct Inside {
    now: AtomicUsize,
    peak: AtomicUsize,
    /// The largest limit that may be in force while the check runs.
    bound: AtomicUsize,
}

impl Inside {
    fn enter(&self) {
        let now = self.now.fetch_add(1, SeqCst) + 1;
        self.peak.fetch_max(now, SeqCst);
        let bound = self.bound.load(SeqCst);
        assert!(now <= bound, "{now} callers inside, limit {bound}");
    }
    fn leave(&self) {
        self.now.fetch_sub(1, SeqCst);
    }
}

struct Shared<L: RawLock> {
    b: Bulkhead<L>,
    inside: Inside,
    closing: AtomicBool,
    admitted: AtomicUsize,
}

impl<L: RawLock> Shared<L> {
    /// The guarded section: counted, with a little work in it.
    fn hold(&self, work: u64) {
        self.inside.enter();
        self.admitted.fetch_add(1, SeqCst);
        for _ in 0..work {
            std::hint::spin_loop();
        }
        self.inside.leave();
    }
}

struct Unpark(thread::Thread);
impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// A blocking caller: waits with `park_timeout` up to `budget`.
fn thread_worker<L: RawLock + Sync>(s: &Shared<L>, seed: u64) {
    let mut rng = Rng(seed);
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    for _ in 0..ops() {
        match rng.below(4) {
            0 => {
                if let Ok(seat) = s.b.try_acquire() {
                    s.hold(rng.below(200));
                    drop(seat);
                }
            }
            1 => {
                // Cancel after one poll: queued, maybe granted, then dropped.
                let mut f = pin!(s.b.acquire());
                if let Poll::Ready(Ok(seat)) = f.as_mut().poll(&mut cx) {
                    s.hold(rng.below(200));
                    drop(seat);
                }
            }
            _ => {
                let budget = Duration::from_micros(50 + rng.below(2000));
                let deadline = Instant::now() + budget;
                let mut f = pin!(s.b.acquire());
                let result = loop {
                    if let Poll::Ready(r) = f.as_mut().poll(&mut cx) {
                        break r;
                    }
                    let now = Instant::now();
                    if now >= deadline {
                        break f.as_mut().time_out(budget);
                    }
                    thread::park_timeout(deadline - now);
                };
                match result {
                    Ok(seat) => {
                        s.hold(rng.below(200));
                        drop(seat);
                    }
                    Err(Error::Closed { .. }) => assert!(s.closing.load(SeqCst)),
                    Err(_) => {}
                }
            }
        }
    }
}

/// An async caller on tokio: waits, times out, gets cancelled by
/// `tokio::time::timeout`, and yields while holding its seat.
async fn task_worker<L: RawLock + Sync>(s: Arc<Shared<L>>, seed: u64) {
    let mut rng = Rng(seed);
    for _ in 0..ops() {
        match rng.below(4) {
            0 => {
                if let Ok(seat) = s.b.try_acquire() {
                    s.hold(rng.below(200));
                    drop(seat);
                }
            }
            1 => {
                // Cancellation at an arbitrary point of the wait.
                let wait = Duration::from_micros(rng.below(1500));
                if let Ok(Ok(seat)) = tokio::time::timeout(wait, s.b.acquire()).await {
                    s.hold(rng.below(200));
                    tokio::task::yield_now().await;
                    drop(seat);
                }
            }
            _ => {
                let budget = Duration::from_micros(50 + rng.below(2000));
                match s.b.acquire_timeout(budget, tokio::time::sleep).await {
                    Ok(seat) => {
                        s.hold(rng.below(200));
                        tokio::task::yield_now().await;
                        drop(seat);
                    }
                    Err(Error::Closed { .. }) => assert!(s.closing.load(SeqCst)),
                    Err(_) => {}
                }
            }
        }
    }
}

fn run<L: RawLock + Send + Sync + 'static>(config: Config, lock: L, resize: bool) {
    let max = config.max_concurrent;
    let s = Arc::new(Shared {
        b: Bulkhead::with_lock(config, lock).unwrap(),
        inside: Inside {
            now: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            bound: AtomicUsize::new(max),
        },
        closing: AtomicBool::new(false),
        admitted: AtomicUsize::new(0),
    });
    if resize {
        // Limits move within 1..=max+1; holders may outlive a shrink, so
        // the continuous check uses the largest limit in the range.
        s.inside.bound.store(max + 1, SeqCst);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let tasks: Vec<_> = (0..6)
        .map(|i| rt.spawn(task_worker(s.clone(), 0x9E37_79B9 + i)))
        .collect();
    let threads: Vec<_> = (0..3)
        .map(|i| {
            let s = s.clone();
            thread::spawn(move || thread_worker(&s, 0xC0FF_EE00 + i))
        })
        .collect();
    let resizer = resize.then(|| {
        let s = s.clone();
        thread::spawn(move || {
            let mut rng = Rng(7);
            for _ in 0..ops() / 10 {
                s.b.set_max_concurrent(1 + rng.below(max as u64 + 1) as usize)
                    .unwrap();
                thread::sleep(Duration::from_micros(200));
            }
            s.b.set_max_concurrent(max).unwrap();
        })
    });
    for t in threads {
        t.join().unwrap();
    }
    if let Some(r) = resizer {
        r.join().unwrap();
    }
    rt.block_on(async {
        for t in tasks {
            t.await.unwrap();
        }
    });
    // Quiescence: every seat is back, nobody waits, nothing is reserved.
    let st = s.b.state();
    assert_eq!((st.active, st.waiting), (0, 0), "not quiescent: {st:?}");
    assert_eq!(st.available(), max);
    assert!(s.admitted.load(SeqCst) > 0);
    // Close with waiters parked: all of them leave with Closed.
    let held: Vec<_> = (0..max).map(|_| s.b.try_acquire().unwrap()).collect();
    s.closing.store(true, SeqCst);
    let waiters: Vec<_> = (0..4)
        .map(|_| {
            let s = s.clone();
            rt.spawn(async move { s.b.acquire().await.map(drop) })
        })
        .collect();
    let queued = watchdog::watch("4 waiters to queue before the close");
    while s.b.state().waiting < 4 {
        thread::yield_now();
    }
    drop(queued);
    s.b.close();
    let closed = watchdog::watch("the close to wake its 4 waiters with `Closed`");
    rt.block_on(async {
        for w in waiters {
            assert!(matches!(w.await.unwrap(), Err(Error::Closed { .. })));
        }
    });
    drop(closed);
    drop(held);
    let st = s.b.state();
    assert_eq!(
        (st.active, st.waiting, st.closed),
        (0, 0, true),
        "after close: {st:?}"
    );
    assert!(s.inside.peak.load(SeqCst) >= 1);
}

#[cfg(feature = "queue-limits")]
#[test]
fn stress_fifo() {
    run(
        Config::new("stress", 3).max_waiting(8),
        TestLock::default(),
        false,
    );
}

#[cfg(feature = "barging")]
#[test]
fn stress_barging() {
    run(
        Config::new("stress", 3).admission(Admission::Barging),
        TestLock::default(),
        false,
    );
}

#[test]
fn stress_fifo_with_reconfiguration() {
    run(Config::new("stress", 3), TestLock::default(), true);
}

#[cfg(feature = "barging")]
#[test]
fn stress_barging_with_reconfiguration_on_a_critical_section_lock() {
    run(
        Config::new("stress", 2).admission(Admission::Barging),
        CsLock::new(),
        true,
    );
}
