//! An HTTP service with two routes behind two compartments: `/slow` calls a
//! slow upstream (4 seats, callers wait at most 50 ms for one), `/fast`
//! reads a cache (64 seats, fail fast). Flooding `/slow` fills only its own
//! compartment: the excess gets `503 Service Unavailable` quickly, and
//! `/fast` answers as fast as ever.
//!
//! Run `cargo run -p bulkhead-examples --bin http_service` and follow the
//! printed `curl` lines (port 3000, or the first argument), or
//! `cargo run -p bulkhead-examples --bin http_service -- --demo` to start
//! the server on a free port, flood it, print what happened, and exit.
//!
//! hyper 1 (HTTP/1 only) and hyper-util: the lean choice. The bulkhead is
//! an ordinary tower layer, so the same code works under axum.

use std::convert::Infallible;
use std::future::{Future, Ready, poll_fn, ready};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bulkhead_tokio::{BoxError, Bulkhead, BulkheadService, HttpRejection};
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tower_service::Service;

/// How long the slow upstream takes per call.
const UPSTREAM_LATENCY: Duration = Duration::from_millis(300);

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// The slow dependency: a remote API that takes 300 ms.
#[derive(Clone)]
struct SlowUpstream;

impl Service<()> for SlowUpstream {
    type Response = &'static str;
    type Error = Infallible;
    type Future = BoxFuture<Result<&'static str, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, (): ()) -> Self::Future {
        Box::pin(async {
            tokio::time::sleep(UPSTREAM_LATENCY).await;
            Ok("the upstream answered\n")
        })
    }
}

/// The fast dependency: an in-process cache.
#[derive(Clone)]
struct Cache;

impl Service<()> for Cache {
    type Response = &'static str;
    type Error = Infallible;
    type Future = Ready<Result<&'static str, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, (): ()) -> Self::Future {
        ready(Ok("cache hit\n"))
    }
}

/// Routes requests to the two compartment-guarded dependencies.
#[derive(Clone)]
struct App {
    upstream: BulkheadService<SlowUpstream>,
    cache: BulkheadService<Cache>,
}

impl Service<Request<Incoming>> for App {
    type Response = Response<Full<Bytes>>;
    type Error = Infallible;
    type Future = BoxFuture<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(())) // each route drives its own readiness in `route`
    }

    fn call(&mut self, request: Request<Incoming>) -> Self::Future {
        match request.uri().path() {
            "/slow" => Box::pin(route(self.upstream.clone())),
            "/fast" => Box::pin(route(self.cache.clone())),
            _ => Box::pin(ready(Ok(text(
                StatusCode::NOT_FOUND,
                "try /fast or /slow\n".into(),
            )))),
        }
    }
}

/// Calls one guarded dependency and turns its answer into a response.
async fn route<S>(mut service: S) -> Result<Response<Full<Bytes>>, Infallible>
where
    S: Service<(), Response = &'static str, Error = BoxError>,
{
    let result = match poll_fn(|cx| service.poll_ready(cx)).await {
        Ok(()) => service.call(()).await,
        Err(e) => Err(e),
    };
    Ok(match result {
        Ok(body) => text(StatusCode::OK, body.into()),
        // A bulkhead rejection (Full, Timeout, QueueFull, Closed): one call
        // gives 503, with Retry-After unless the compartment is closed.
        Err(e) => match HttpRejection::find(&e) {
            Some(rejection) => {
                let mut response = rejection.response::<Full<Bytes>>();
                *response.body_mut() = Full::new(Bytes::from(format!("{e}\n")));
                response
            }
            None => text(StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")),
        },
    })
}

fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
}

/// Accepts connections forever, one task per connection.
async fn serve(listener: TcpListener, app: App) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                eprintln!("accept failed: {e}");
                continue;
            }
        };
        let service = TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service);
            if let Err(e) = connection.await {
                eprintln!("connection error: {e}");
            }
        });
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let demo = std::env::args().any(|arg| arg == "--demo");
    let port: u16 = match std::env::args().nth(1).filter(|arg| arg != "--demo") {
        Some(port) => port.parse()?,
        None => 3000,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let upstream = Arc::new(Bulkhead::new("slow_upstream", 4)?);
        let cache = Arc::new(Bulkhead::new("cache", 64)?);
        let app = App {
            upstream: BulkheadService::new(SlowUpstream, upstream.clone())
                .max_wait(Duration::from_millis(50)),
            cache: BulkheadService::new(Cache, cache.clone()),
        };
        // Loopback only; port 0 (a free port) for the demo.
        let listener = TcpListener::bind(("127.0.0.1", if demo { 0 } else { port })).await?;
        let addr = listener.local_addr()?;
        println!("listening on http://{addr}");
        println!("try:   curl -i http://{addr}/fast    and    curl -i http://{addr}/slow");
        println!(
            "flood: for i in $(seq 20); do curl -s -o /dev/null -w '%{{http_code}} ' http://{addr}/slow & done; \
             sleep 0.1; curl -s -w '%{{time_total}}s\\n' http://{addr}/fast; wait"
        );
        if !demo {
            serve(listener, app).await;
            return Ok(());
        }
        tokio::spawn(serve(listener, app));
        flood(addr, &upstream, &cache).await
    })
}

/// The `--demo` run: 20 concurrent calls to `/slow`, and meanwhile 10
/// calls to `/fast`; prints what each route saw.
async fn flood(
    addr: SocketAddr,
    upstream: &Bulkhead,
    cache: &Bulkhead,
) -> Result<(), Box<dyn std::error::Error>> {
    let slow: Vec<_> = (0..20).map(|_| tokio::spawn(get(addr, "/slow"))).collect();
    tokio::time::sleep(Duration::from_millis(20)).await;
    println!(
        "\n/slow under a flood of 20: {} of 4 seats taken, {} waiting",
        upstream.state().active,
        upstream.state().waiting
    );
    let mut fast_worst = Duration::ZERO;
    for _ in 0..10 {
        let (status, took) = get(addr, "/fast").await?;
        if status != 200 {
            return Err(format!("/fast answered {status} during the flood").into());
        }
        fast_worst = fast_worst.max(took);
    }
    let mut statuses = std::collections::BTreeMap::<u16, (usize, Duration)>::new();
    for call in slow {
        let (status, took) = call.await??;
        let entry = statuses.entry(status).or_default();
        entry.0 += 1;
        entry.1 = entry.1.max(took);
    }
    for (status, (count, worst)) in &statuses {
        println!("/slow: {count:>2} x {status}, slowest after {worst:.0?}");
    }
    println!("/fast: 10 x 200 during the flood, slowest after {fast_worst:.1?}");
    println!();
    println!(
        "{:<14} {:>5} {:>7} {:>8} {:>9} {:>10}",
        "compartment", "seats", "active", "waiting", "rejected", "timed out"
    );
    for b in [upstream, cache] {
        let s = b.state();
        println!(
            "{:<14} {:>5} {:>7} {:>8} {:>9} {:>10}",
            s.name, s.max_concurrent, s.active, s.waiting, s.rejected, s.timed_out
        );
    }
    Ok(())
}

/// A minimal HTTP/1 GET: the status code and how long it took.
async fn get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, Duration)> {
    let start = Instant::now();
    let mut stream = TcpStream::connect(addr).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await?;
    let status = std::str::from_utf8(&response)
        .ok()
        .and_then(|r| r.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| std::io::Error::other("not an HTTP response"))?;
    Ok((status, start.elapsed()))
}
