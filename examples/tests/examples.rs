//! Runs every example binary end to end (the demo has its own, shortened
//! test in `demo.rs`; `bench-compare` is a benchmark, run by hand), so that
//! each keeps working and finishing by itself (they assert their own
//! results).

use std::process::Command;
use std::time::{Duration, Instant};

fn run(exe: &str) {
    run_with(exe, &[]);
}

fn run_with(exe: &str, args: &[&str]) -> String {
    let start = Instant::now();
    let out = Command::new(exe)
        .args(args)
        .output()
        .expect("run the example");
    assert!(
        out.status.success(),
        "{exe} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{exe} took too long"
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn blocking_threads() {
    run(env!("CARGO_BIN_EXE_blocking_threads"));
}

#[test]
fn async_std() {
    run(env!("CARGO_BIN_EXE_async_std"));
}

#[test]
fn scoped_resources() {
    run(env!("CARGO_BIN_EXE_scoped_resources"));
}

#[test]
fn registry_config() {
    run(env!("CARGO_BIN_EXE_registry_config"));
}

#[test]
fn prometheus_demo() {
    let text = run_with(env!("CARGO_BIN_EXE_prometheus"), &["--demo"]);
    assert!(text.contains("bulkhead_admitted_total"), "{text}");
}

#[test]
fn http_service_demo() {
    let text = run_with(env!("CARGO_BIN_EXE_http_service"), &["--demo"]);
    assert!(text.contains("x 503"), "the flood was shed: {text}");
}
