//! A watchdog for tests that wait on another thread, shared by core's unit
//! tests (`core/src/tests.rs` includes this file) and its integration
//! tests (`mod watchdog;`).
//!
//! A lost wake-up leaves a parked thread, or an awaited task, waiting for
//! good; the test harness would then hang until an outer timeout kills it,
//! with no test named. [`watch`] returns a guard; if the guard is not
//! dropped within [`LIMIT`], the watchdog prints the test's name and what
//! it waited for, then aborts the test binary. Aborting is the only way
//! out: the stuck thread cannot be stopped, and a panic on the watchdog's
//! own thread would fail nothing. Under miri the watchdog does nothing:
//! its clock is virtual, so no limit would mean anything.

use std::string::String;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

/// How long a watched wait may take: far above what these waits need on a
/// loaded machine (well under a second), far below an outer timeout.
pub const LIMIT: Duration = Duration::from_secs(10);

/// Until dropped, the watchdog of one wait.
#[must_use = "the watchdog stops watching when the guard is dropped"]
pub struct Watchdog {
    _done: Option<mpsc::Sender<()>>,
}

/// Watches the current test until the returned guard is dropped: `what`
/// says what the test waits for (printed if it never comes).
pub fn watch(what: &'static str) -> Watchdog {
    if cfg!(miri) {
        return Watchdog { _done: None };
    }
    // libtest runs each test on a thread named after it.
    let test = String::from(std::thread::current().name().unwrap_or("<unnamed test>"));
    let (done, dropped) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        if let Err(RecvTimeoutError::Timeout) = dropped.recv_timeout(LIMIT) {
            // Straight to stderr: the harness's capture dies with the
            // process.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "watchdog: test `{test}` still waits for {what} after {LIMIT:?} \
                 (a lost wake-up?); aborting"
            );
            std::process::abort();
        }
    });
    Watchdog { _done: Some(done) }
}
