//! Resource-scoped compartments: `checkout` and `reports` each own a
//! client pool (real keep-alive HTTP/1 connections to a backend on
//! 127.0.0.1), so a flood of reports cannot take checkout's connections.
//!
//! The handlers never name a pool: they ask for the default one with
//! `scoped::resolve(None, &app_pool)`. Outside a compartment that is the
//! application's shared pool; inside a scoped compartment it is the
//! compartment's own.
//!
//! 1. **Shared pool.** `checkout` and `reports` are plain compartments (4
//!    seats each) over the application's one pool of 4 connections. The
//!    report flood keeps its 4 seats busy, so it holds every connection and
//!    checkout queues for one.
//! 2. **Scoped pools.** The same handlers inside scoped compartments
//!    registered by name: each opens its own pool of 4 connections on first
//!    entry. Checkout never waits for a connection; reports never reach
//!    checkout's.
//!
//! Then the registry shuts down: scoped compartments close in reverse order
//! of opening, each after its holders finish, and the backend sees every
//! connection closed.
//!
//! `cargo run -p bulkhead-examples --bin scoped_resources` (about 1.5 s).

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bulkhead_tokio::bulkhead_std::registry::{DomainConfig, Registry};
use bulkhead_tokio::bulkhead_std::scoped::{self, Opener, Scoped};
use bulkhead_tokio::prelude::*;
use bulkhead_tokio::{Bulkhead, Config, MaxWait};
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Bytes, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How long the backend takes per route.
const CHECKOUT_WORK: Duration = Duration::from_millis(2);
const REPORT_WORK: Duration = Duration::from_millis(60);
/// How long each phase floods.
const PHASE: Duration = Duration::from_millis(500);
/// Connections per pool, and seats per compartment.
const POOL_SIZE: usize = 4;

/// The backend: an HTTP/1 server on 127.0.0.1 that counts its open
/// connections.
struct Backend {
    addr: SocketAddr,
    open_connections: Arc<AtomicUsize>,
    accepted: Arc<AtomicUsize>,
}

async fn start_backend() -> std::io::Result<Backend> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let open_connections = Arc::new(AtomicUsize::new(0));
    let accepted = Arc::new(AtomicUsize::new(0));
    let (open, count) = (open_connections.clone(), accepted.clone());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            open.fetch_add(1, Ordering::SeqCst);
            let open = open.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(|request: Request<Incoming>| async move {
                    let work = match request.uri().path() {
                        "/checkout" => CHECKOUT_WORK,
                        _ => REPORT_WORK,
                    };
                    tokio::time::sleep(work).await;
                    Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"ok"))))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
                open.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    Ok(Backend {
        addr,
        open_connections,
        accepted,
    })
}

/// A client pool: `size` keep-alive connections to the backend, opened
/// together, and what it served.
struct ConnPool {
    label: &'static str,
    idle: Mutex<Vec<SendRequest<Empty<Bytes>>>>,
    available: tokio::sync::Semaphore,
    size: usize,
    in_use: AtomicUsize,
    peak_in_use: AtomicUsize,
    waited_for_connection: AtomicUsize,
    served: Mutex<BTreeMap<&'static str, usize>>,
}

impl ConnPool {
    async fn open(label: &'static str, addr: SocketAddr, size: usize) -> Result<Self, BoxError> {
        let mut idle = Vec::with_capacity(size);
        for _ in 0..size {
            let stream = TcpStream::connect(addr).await?;
            let (sender, connection) =
                hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
            tokio::spawn(connection);
            idle.push(sender);
        }
        println!("  opened pool `{label}`: {size} connections");
        Ok(Self {
            label,
            idle: Mutex::new(idle),
            available: tokio::sync::Semaphore::new(size),
            size,
            in_use: AtomicUsize::new(0),
            peak_in_use: AtomicUsize::new(0),
            waited_for_connection: AtomicUsize::new(0),
            served: Mutex::new(BTreeMap::new()),
        })
    }

    /// GET `path` on a pooled connection, waiting for one if all are busy.
    async fn get(&self, path: &'static str) -> Result<(), BoxError> {
        let permit = match self.available.try_acquire() {
            Ok(permit) => permit,
            Err(_) => {
                self.waited_for_connection.fetch_add(1, Ordering::Relaxed);
                self.available.acquire().await?
            }
        };
        let in_use = self.in_use.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak_in_use.fetch_max(in_use, Ordering::Relaxed);
        let mut sender = self.lock_idle().pop().ok_or("the pool lost a connection")?;
        let result = async {
            sender.ready().await?;
            let request = Request::get(path).body(Empty::new())?;
            sender
                .send_request(request)
                .await?
                .into_body()
                .collect()
                .await?;
            Ok::<_, BoxError>(())
        }
        .await;
        self.lock_idle().push(sender);
        self.in_use.fetch_sub(1, Ordering::Relaxed);
        drop(permit);
        *self
            .served
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(path)
            .or_default() += 1;
        result
    }

    fn lock_idle(&self) -> std::sync::MutexGuard<'_, Vec<SendRequest<Empty<Bytes>>>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn served(&self, path: &str) -> usize {
        self.served
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(path)
            .copied()
            .unwrap_or(0)
    }

    fn print_usage(&self) {
        println!(
            "  pool `{}`: {} connections, peak in use {}, served /checkout {} and /report {}, \
             {} requests waited for a connection",
            self.label,
            self.size,
            self.peak_in_use.load(Ordering::Relaxed),
            self.served("/checkout"),
            self.served("/report"),
            self.waited_for_connection.load(Ordering::Relaxed),
        );
    }

    /// The async close hook: drops the connections, which closes them.
    async fn close(self) {
        let connections = std::mem::take(&mut *self.lock_idle());
        println!(
            "  closing pool `{}` ({} connections)",
            self.label,
            connections.len()
        );
        drop(connections);
        tokio::task::yield_now().await;
    }
}

/// The handlers: they use whatever pool `resolve` gives them.
async fn checkout_request(app_pool: &ConnPool) -> Result<(), BoxError> {
    scoped::resolve(None, app_pool).get("/checkout").await
}

async fn report_request(app_pool: &ConnPool) -> Result<(), BoxError> {
    scoped::resolve(None, app_pool).get("/report").await
}

/// Checkout latencies, in milliseconds.
#[derive(Default)]
struct Latencies(Vec<f64>);

impl Latencies {
    fn summary(&mut self) -> String {
        self.0.sort_by(f64::total_cmp);
        let at = |q: f64| self.0[((self.0.len() - 1) as f64 * q) as usize];
        format!(
            "{} checkouts, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            self.0.len(),
            at(0.5),
            at(0.99),
            at(1.0)
        )
    }
}

/// Eight flood clients retry reports for `PHASE` while one client runs
/// checkouts back to back; `enter_*` wrap each request in its
/// compartment. Returns the checkout latencies and the count of rejected
/// reports.
async fn flood<C, R, CF, RF>(checkout: C, reports: R) -> (Latencies, usize)
where
    C: Fn() -> CF,
    R: Fn() -> RF + Clone + Send + 'static,
    CF: Future<Output = Result<(), BoxError>>,
    RF: Future<Output = Result<(), BoxError>> + Send,
{
    let end = Instant::now() + PHASE;
    let rejected = Arc::new(AtomicUsize::new(0));
    let flooders: Vec<_> = (0..8)
        .map(|_| {
            let (reports, rejected) = (reports.clone(), rejected.clone());
            tokio::spawn(async move {
                while Instant::now() < end {
                    if reports().await.is_err() {
                        rejected.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(20)).await; // the flood is on
    let mut latencies = Latencies::default();
    while Instant::now() < end {
        let started = Instant::now();
        checkout().await.expect("every checkout succeeds");
        latencies.0.push(started.elapsed().as_secs_f64() * 1e3);
    }
    for f in flooders {
        f.await.expect("a flood client panicked");
    }
    (latencies, rejected.load(Ordering::Relaxed))
}

fn main() -> Result<(), BoxError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(run())
}

async fn run() -> Result<(), BoxError> {
    let backend = start_backend().await?;
    let addr = backend.addr;
    println!("backend on {addr}: /checkout takes {CHECKOUT_WORK:?}, /report {REPORT_WORK:?}");

    // 1. Plain compartments over the application's one shared pool.
    println!("\n1. plain compartments, one shared pool (the application's default)");
    let app_pool = Arc::new(ConnPool::open("app", addr, POOL_SIZE).await?);
    let checkout_seats = Arc::new(Bulkhead::from_config(Config::new("checkout", POOL_SIZE))?);
    let report_seats = Arc::new(Bulkhead::from_config(Config::new("reports", POOL_SIZE))?);
    let (app, seats) = (app_pool.clone(), checkout_seats.clone());
    let plain_checkout = move || {
        let (app, seats) = (app.clone(), seats.clone());
        async move {
            let _seat = seats.acquire_within(Duration::from_secs(2)).await?;
            checkout_request(&app).await
        }
    };
    let (app, seats) = (app_pool.clone(), report_seats.clone());
    let plain_report = move || {
        let (app, seats) = (app.clone(), seats.clone());
        async move {
            let _seat = seats.acquire_within(MaxWait::FailFast).await?;
            report_request(&app).await
        }
    };
    let (mut shared_latency, shared_rejected) = flood(plain_checkout, plain_report).await;
    println!("  {}", shared_latency.summary());
    println!("  reports rejected by their compartment: {shared_rejected}");
    app_pool.print_usage();
    assert!(app_pool.served("/report") > 0 && app_pool.served("/checkout") > 0);

    // 2. Scoped compartments, registered by name, each with its own pool.
    println!("\n2. scoped compartments, each with its own pool (opened on first entry)");
    let registry = Arc::new(Registry::local());
    let checkout = registry.create_scoped(
        "checkout",
        DomainConfig::new(POOL_SIZE).max_wait(MaxWait::up_to(Duration::from_secs(2))),
        |config| {
            Ok(Scoped::new(
                config,
                "checkout-pool",
                // One connection per seat, whatever overrides the limit.
                Opener::future(move |opening| {
                    ConnPool::open("checkout", addr, opening.max_concurrent)
                }),
            )?
            .on_close_async(ConnPool::close))
        },
    )?;
    let reports = registry.create_scoped("reports", DomainConfig::new(POOL_SIZE), |config| {
        Ok(Scoped::new(
            config,
            "reports-pool",
            Opener::future(move |opening| ConnPool::open("reports", addr, opening.max_concurrent)),
        )?
        .on_close_async(ConnPool::close))
    })?;
    assert!(
        !registry.resource_states()["checkout"].open,
        "not opened yet"
    );
    let (app, scoped_checkout) = (app_pool.clone(), checkout.clone());
    let checkout_in_scope = move || {
        let (app, checkout) = (app.clone(), scoped_checkout.clone());
        async move { checkout.run_within(checkout_request(&app)).await? }
    };
    let (app, scoped_reports) = (app_pool.clone(), reports.clone());
    let report_in_scope = move || {
        let (app, reports) = (app.clone(), scoped_reports.clone());
        async move { reports.run_within(report_request(&app)).await? }
    };
    let app_served_before = app_pool.served("/checkout") + app_pool.served("/report");
    let (mut scoped_latency, scoped_rejected) = flood(checkout_in_scope, report_in_scope).await;
    println!("  {}", scoped_latency.summary());
    println!("  reports rejected by their compartment: {scoped_rejected}");
    let checkout_pool = checkout.enter_within().await?.shared();
    let reports_pool = reports.enter_within().await?.shared();
    checkout_pool.print_usage();
    reports_pool.print_usage();
    for (name, state) in registry.resource_states() {
        println!(
            "  registry: `{name}` resource open = {}, opened {} time(s), {} seat(s) held",
            state.open, state.opens, state.holders
        );
    }

    // What the example shows, checked.
    assert_eq!(
        checkout_pool.served("/report"),
        0,
        "reports reached checkout's pool"
    );
    assert_eq!(reports_pool.served("/checkout"), 0);
    assert_eq!(
        checkout_pool.waited_for_connection.load(Ordering::Relaxed),
        0,
        "a checkout waited for a connection"
    );
    assert!(reports_pool.peak_in_use.load(Ordering::Relaxed) <= POOL_SIZE);
    assert_eq!(
        app_pool.served("/checkout") + app_pool.served("/report"),
        app_served_before,
        "scoped handlers used the application's pool"
    );
    drop((checkout_pool, reports_pool));

    // 3. Shutdown: reverse order of opening, then the backend sees the
    // connections go.
    println!("\n3. registry shutdown (reverse order of opening)");
    let reports_closed = registry.shutdown_within(Duration::from_secs(2)).await;
    for report in &reports_closed {
        println!(
            "  `{}` ({}): {:?} after {:?}",
            report.compartment, report.resource, report.outcome, report.took
        );
    }
    drop(app_pool);
    let deadline = Instant::now() + Duration::from_secs(5);
    while backend.open_connections.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    println!(
        "  backend: {} connections accepted in all, {} still open",
        backend.accepted.load(Ordering::SeqCst),
        backend.open_connections.load(Ordering::SeqCst)
    );
    assert_eq!(backend.open_connections.load(Ordering::SeqCst), 0);
    assert_eq!(backend.accepted.load(Ordering::SeqCst), 3 * POOL_SIZE);
    assert!(checkout.enter_within().await.is_err(), "closed for good");
    Ok(())
}
