//! Registry metrics served as Prometheus text on a local port.
//!
//! ```sh
//! cargo run -p bulkhead-examples --bin prometheus              # 60 s of load
//! cargo run -p bulkhead-examples --bin prometheus -- --demo    # 3 s, prints one scrape
//! cargo run -p bulkhead-examples --bin prometheus -- --seconds 120 --port 9100
//! ```
//!
//! The exporter (`metrics-exporter-prometheus`, without its HTTP stack)
//! renders the text; a std `TcpListener` serves it at `/metrics`. Worker
//! threads call the registry's `database` (2 seats, 20 ms wait budget)
//! and `cache` compartments (30 ms calls), so the database's rejections and wait times
//! show up. The program always exits by itself.
//!
//! The wait histogram is exported with buckets, not as a summary: with
//! metrics-exporter-prometheus 0.18 a summary's quantiles can disagree
//! with its own `_sum` and `_count`. Its rolling summary drops a sample
//! that is older than the newest bucket's start, while still counting it,
//! and samples reach it newest block first; so the quantiles then cover
//! only the last few samples (checked: 200 samples recorded at once gave
//! quantiles over the last 8). Buckets have no such window, so
//! `bulkhead_wait_seconds_bucket`, `_sum` and `_count` always agree.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use bulkhead_std::MaxWait;
use bulkhead_std::metrics::MetricsUpdater;
use bulkhead_std::registry::{DomainConfig, Registry};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

struct Args {
    seconds: u64,
    port: u16,
    demo: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        seconds: 60,
        port: 0,
        demo: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut number = |what: &str| -> Result<u64, String> {
            let v = it.next().ok_or(format!("{what} needs a value"))?;
            v.parse()
                .map_err(|_| format!("{what}: {v:?} is not a number"))
        };
        match arg.as_str() {
            "--demo" => {
                args.demo = true;
                args.seconds = 3;
            }
            "--seconds" => args.seconds = number("--seconds")?,
            "--port" => {
                args.port = u16::try_from(number("--port")?).map_err(|_| "--port: too large")?;
            }
            other => {
                return Err(format!(
                    "unknown argument {other:?}; use --demo, --seconds N, --port N"
                ));
            }
        }
    }
    Ok(args)
}

fn serve(listener: TcpListener, handle: PrometheusHandle, done: Arc<AtomicBool>) {
    listener.set_nonblocking(true).ok();
    while !done.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => answer(stream, &handle),
            Err(_) => thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn answer(mut stream: TcpStream, handle: &PrometheusHandle) {
    stream.set_nonblocking(false).ok();
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok();
    let mut request_line = String::new();
    if BufReader::new(&stream)
        .read_line(&mut request_line)
        .is_err()
    {
        return;
    }
    let (status, body) = if request_line.starts_with("GET /metrics") {
        ("200 OK", handle.render())
    } else {
        ("404 Not Found", "try /metrics\n".to_owned())
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; version=0.0.4\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}

fn scrape(addr: std::net::SocketAddr) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(addr)?;
    stream.write_all(b"GET /metrics HTTP/1.1\r\nhost: localhost\r\n\r\n")?;
    let mut text = String::new();
    stream.read_to_string(&mut text)?;
    Ok(text)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full(bulkhead_std::metrics::WAIT_SECONDS.to_owned()),
            &[0.001, 0.005, 0.01, 0.015, 0.02, 0.05, 0.1, 0.5, 1.0],
        )?
        .install_recorder()?;
    let registry = Arc::new(Registry::builder().build()?);
    registry.reconfigure(
        "database",
        DomainConfig::new(2).max_wait(MaxWait::from_millis(20)),
    )?;
    let updater = MetricsUpdater::start(&registry, Duration::from_millis(500))?;

    let listener = TcpListener::bind(("127.0.0.1", args.port))?;
    let addr = listener.local_addr()?;
    println!(
        "serving Prometheus metrics at http://{addr}/metrics for {} s",
        args.seconds
    );
    let done = Arc::new(AtomicBool::new(false));
    let server = {
        let done = done.clone();
        thread::spawn(move || serve(listener, handle, done))
    };

    let until = Instant::now() + Duration::from_secs(args.seconds);
    let workers: Vec<_> = (0..6)
        .map(|i| {
            let registry = registry.clone();
            thread::spawn(move || {
                let domain = if i % 3 == 0 { "cache" } else { "database" };
                while Instant::now() < until {
                    // Rejections are expected: they are what the metrics show.
                    let _ = registry.execute(domain, || thread::sleep(Duration::from_millis(30)));
                }
            })
        })
        .collect();
    for worker in workers {
        let _ = worker.join();
    }
    if args.demo {
        bulkhead_std::metrics::publish_registry(&registry);
        let text = scrape(addr)?;
        for line in text
            .lines()
            .filter(|l| l.starts_with("bulkhead_") && l.contains("database"))
        {
            println!("{line}");
        }
    }
    updater.stop();
    done.store(true, Ordering::Relaxed);
    let _ = server.join();
    Ok(())
}
