//! Group g of `bench-compare`: tower layers in front of a service whose call
//! takes about 1 µs, in one process, with no network.
//!
//! The contenders are our `BulkheadLayer`, tower's `ConcurrencyLimitLayer`
//! (with `LoadShedLayer` in front of it for fail fast), and
//! `tower-resilience-bulkhead`. Each caller is a tokio task that owns a
//! clone of the layered service (as a server's connection task does) and
//! loops `poll_ready`, `call`, `.await`. The bare service, without a layer,
//! is the baseline from which the added latency is computed. A rejected
//! caller yields to the executor before its next request, as a server that
//! answers 503 and reads the next request from its socket would.

use std::convert::Infallible;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tower_service::Service;

use crate::peers::work;

/// Seats of every contender's compartment (its concurrency limit).
pub const SEATS: usize = 16;
/// Every `SAMPLE`-th request of a caller is timed, so that the two clock
/// reads per timed request stay a small part of a ~1 µs call.
pub const SAMPLE: u64 = 4;
/// Latency samples kept per caller and window (no growth while timed).
const SAMPLES_PER_CALLER: usize = 1 << 14;

/// The inner service: about 1 µs of work, split around one yield to the
/// executor, so that a request holds its seat across a reschedule and
/// concurrent callers really contend for seats.
#[derive(Debug, Clone, Copy)]
pub struct Work {
    /// Iterations of [`work`] for half of the call.
    pub half_iters: u32,
}

impl Service<u32> for Work {
    type Response = u32;
    type Error = Infallible;
    type Future = WorkFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: u32) -> WorkFuture {
        WorkFuture {
            request,
            half_iters: self.half_iters,
            yielded: false,
        }
    }
}

/// The response future of [`Work`]: work, yield once, work, respond.
#[derive(Debug)]
pub struct WorkFuture {
    request: u32,
    half_iters: u32,
    yielded: bool,
}

impl Future for WorkFuture {
    type Output = Result<u32, Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        std::hint::black_box(work(self.half_iters));
        if !self.yielded {
            self.yielded = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        Poll::Ready(Ok(self.request))
    }
}

/// Whether a layer rejects at once or waits (bounded where it can).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Reject at once when every seat is taken.
    FailFast,
    /// Wait for a seat: up to 1 s where the layer bounds waits.
    Wait,
}

/// What one window of one contender achieved.
#[derive(Debug, Default, Clone)]
pub struct Window {
    /// Requests that got a response from the inner service.
    pub served: u64,
    /// Requests the layer turned away.
    pub rejected: u64,
    /// Wall time of the window.
    pub elapsed: Duration,
    /// Sampled latencies of served requests, `poll_ready` to response.
    pub latencies: Vec<Duration>,
}

/// `callers` tasks on `rt`, each with its own clone of `proto`, for about
/// `window`, or for `per_caller` requests each if given (then untimed).
pub fn run<S>(
    rt: &tokio::runtime::Runtime,
    proto: &S,
    callers: usize,
    window: Duration,
    per_caller: Option<u64>,
) -> Window
where
    S: Service<u32, Response = u32> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Send,
{
    let stop = Arc::new(AtomicBool::new(false));
    let timed = per_caller.is_none();
    let start = Instant::now();
    let handles: Vec<_> = (0..callers)
        .map(|_| {
            let mut svc = proto.clone();
            let stop = Arc::clone(&stop);
            rt.spawn(async move {
                let mut w = Window::default();
                if timed {
                    w.latencies.reserve_exact(SAMPLES_PER_CALLER);
                }
                let mut i = 0u64;
                while per_caller.map_or(!stop.load(Ordering::Relaxed), |n| i < n) {
                    i += 1;
                    let t = (timed
                        && i.is_multiple_of(SAMPLE)
                        && w.latencies.len() < SAMPLES_PER_CALLER)
                        .then(Instant::now);
                    let served = match poll_fn(|cx| svc.poll_ready(cx)).await {
                        Ok(()) => svc.call(i as u32).await.is_ok(),
                        Err(_) => false,
                    };
                    if served {
                        w.served += 1;
                        if let Some(t) = t {
                            w.latencies.push(t.elapsed());
                        }
                    } else {
                        // A server answers 503 and takes its next request
                        // from the network: the caller yields, so that a
                        // rejection never spins ahead of the seat holders.
                        w.rejected += 1;
                        tokio::task::yield_now().await;
                    }
                }
                w
            })
        })
        .collect();
    if timed {
        std::thread::sleep(window);
        stop.store(true, Ordering::Relaxed);
    }
    let mut total = Window::default();
    for h in handles {
        let w = rt.block_on(h).expect("caller task");
        total.served += w.served;
        total.rejected += w.rejected;
        total.latencies.extend(w.latencies);
    }
    total.elapsed = start.elapsed();
    total
}

/// The `q`-quantile of `samples` (sorted in place).
pub fn quantile(samples: &mut [Duration], q: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.sort_unstable();
    let i = ((samples.len() - 1) as f64 * q).round() as usize;
    samples[i]
}

/// Heap allocations per request of `proto` with `callers` callers: the
/// allocations of a run of 2,000 requests per caller, minus those of a run
/// of none (spawning and joining the callers), divided by the requests.
/// `allocs` reads the process-wide allocation counter.
pub fn allocs_per_request<S>(
    rt: &tokio::runtime::Runtime,
    proto: &S,
    callers: usize,
    allocs: &dyn Fn() -> u64,
) -> f64
where
    S: Service<u32, Response = u32> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Send,
{
    const N: u64 = 2_000;
    let count = |n| {
        let before = allocs();
        let w = run(rt, proto, callers, Duration::ZERO, Some(n));
        (allocs() - before, w.served + w.rejected)
    };
    let (base, _) = count(0);
    let (a, requests) = count(N);
    a.saturating_sub(base) as f64 / requests.max(1) as f64
}

/// The request that [`Immediate`] never answers: a caller holds a seat
/// with it while the layer's own cost of a rejection is measured.
pub const HOLD: u32 = u32::MAX;

/// An inner service that answers at once (or never, for [`HOLD`]), so
/// that [`layer_cost`] times the layer and nothing else.
#[derive(Debug, Clone, Copy, Default)]
pub struct Immediate;

impl Service<u32> for Immediate {
    type Response = u32;
    type Error = Infallible;
    type Future = ImmediateFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: u32) -> ImmediateFuture {
        ImmediateFuture(request)
    }
}

/// The response future of [`Immediate`].
#[derive(Debug)]
pub struct ImmediateFuture(u32);

impl Future for ImmediateFuture {
    type Output = Result<u32, Infallible>;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        match self.0 {
            HOLD => Poll::Pending,
            n => Poll::Ready(Ok(n)),
        }
    }
}

/// The longest a [`layer_cost`] measurement runs.
pub const COST_TIME_LIMIT: Duration = Duration::from_millis(50);

/// What [`layer_cost`] measured: one caller, no contention.
#[derive(Debug, Clone, Copy)]
pub struct Cost {
    /// Wall time per request (`poll_ready`, `call`, the response).
    pub ns_per_request: f64,
    /// Heap allocations per request on the calling thread.
    pub allocs_per_request: f64,
}

/// The cost of `n` requests through `proto` (a layer over [`Immediate`])
/// from one caller, in `rt`, or of as many as fit in [`COST_TIME_LIMIT`]
/// (a layer whose rejection waits for a timer tick does about one per
/// millisecond). With `reject`, `seats` other callers first
/// take every seat with a [`HOLD`] request each, so that every timed
/// request is turned away (it panics if one is served, or, without
/// `reject`, if one is not). `thread_allocs` reads the calling thread's
/// allocation counter.
pub fn layer_cost<S>(
    rt: &tokio::runtime::Runtime,
    proto: &S,
    seats: usize,
    reject: bool,
    n: u64,
    thread_allocs: &dyn Fn() -> u64,
) -> Cost
where
    S: Service<u32, Response = u32> + Clone,
{
    rt.block_on(async {
        let mut holders = Vec::new();
        if reject {
            for _ in 0..seats {
                let mut holder = proto.clone();
                poll_fn(|cx| holder.poll_ready(cx))
                    .await
                    .map_err(|_| "not ready")
                    .expect("a seat for each holder");
                let mut held = Box::pin(holder.call(HOLD));
                let waker = std::task::Waker::noop();
                assert!(
                    held.as_mut()
                        .poll(&mut Context::from_waker(waker))
                        .is_pending(),
                    "a holder keeps its seat"
                );
                holders.push((holder, held));
            }
        }
        let mut svc = proto.clone();
        let allocs = thread_allocs();
        let start = Instant::now();
        let mut done = 0;
        for i in 0..n {
            if i % 64 == 0 && start.elapsed() > COST_TIME_LIMIT {
                break;
            }
            done += 1;
            let served = match poll_fn(|cx| svc.poll_ready(cx)).await {
                Ok(()) => svc.call(std::hint::black_box(i as u32)).await.is_ok(),
                Err(_) => false,
            };
            assert_eq!(served, !reject, "request {i}: served = {served}");
        }
        let elapsed = start.elapsed();
        let allocs = thread_allocs() - allocs;
        drop(holders);
        Cost {
            ns_per_request: elapsed.as_nanos() as f64 / done as f64,
            allocs_per_request: allocs as f64 / done as f64,
        }
    })
}
