//! Runs the small example binaries end to end, so that each keeps working
//! and finishing by itself (they assert their own results).

use std::process::Command;
use std::time::{Duration, Instant};

fn run(exe: &str) {
    let start = Instant::now();
    let out = Command::new(exe).output().expect("run the example");
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
