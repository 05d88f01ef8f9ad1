//! A queued waiter of a thread-mode compartment dropped outside thread mode.
//!
//! embassy-sync's `ThreadModeRawMutex` panics when locked outside thread
//! mode (on a host: on any thread not named `main`), before running the
//! closure. Dropping a queued `acquire()` future must unlink its node under
//! that lock. Core retries while the panic unwinds, and the second refusal
//! aborts the process: the future's memory is never freed while its node is
//! still linked. (Before that fix the unwind freed the future with its node
//! linked, and the next release walked freed memory: a use-after-free from
//! safe code.) The abort needs a child process to observe.

mod support;

use std::pin::Pin;
use std::sync::mpsc;
use std::thread;

use bulkhead_embassy::raw::ThreadModeRawMutex;
use bulkhead_embassy::{Bulkhead, new_static};
use support::poll_once;

const CHILD: &str = "BULKHEAD_EMBASSY_THREAD_MODE_DROP_CHILD";
const REFUSAL: &str = "ThreadModeMutex can only be locked from thread mode";

#[test]
#[cfg_attr(
    miri,
    ignore = "needs a child process; run the child under miri with the env var"
)]
fn a_queued_waiter_dropped_outside_thread_mode_aborts_instead_of_dangling() {
    const NAME: &str = "a_queued_waiter_dropped_outside_thread_mode_aborts_instead_of_dangling";
    if std::env::var_os(CHILD).is_some() {
        drop_a_queued_waiter_outside_thread_mode();
        return;
    }
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", NAME, "--test-threads=1", "--nocapture"])
        .env(CHILD, "1")
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&child.stderr);
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            child.status.signal(),
            Some(6),
            "the child did not abort (SIGABRT): {:?}\n{stderr}",
            child.status
        );
    }
    assert!(!child.status.success(), "the child survived:\n{stderr}");
    assert_eq!(
        stderr.matches(REFUSAL).count(),
        2,
        "expected the refusal, then core's retry while unwinding:\n{stderr}"
    );
    assert!(
        stderr.contains("panic in a destructor during cleanup"),
        "{stderr}"
    );
}

/// The scenario: `main` holds the only seat and polls a waiter until it is
/// queued, then hands the waiter to this thread, which drops it. If the
/// drop returned (it must not), `main` releases its seat, and that release
/// would walk the waiter's freed node.
fn drop_a_queued_waiter_outside_thread_mode() {
    static THREAD_MODE: Bulkhead<ThreadModeRawMutex> = new_static("thread_mode", 1);
    type Waiter = Pin<
        Box<bulkhead_embassy::Acquire<'static, bulkhead_embassy::EmbassyLock<ThreadModeRawMutex>>>,
    >;
    let (waiter_tx, waiter_rx) = mpsc::channel::<Waiter>();
    let (dropped_tx, dropped_rx) = mpsc::channel::<()>();
    let main = thread::Builder::new()
        .name("main".into())
        .spawn(move || {
            let seat = THREAD_MODE.try_acquire().unwrap();
            let mut waiter = Box::pin(THREAD_MODE.acquire());
            assert!(poll_once(waiter.as_mut()).is_pending());
            assert_eq!(THREAD_MODE.state().waiting, 1);
            waiter_tx.send(waiter).unwrap();
            let _ = dropped_rx.recv();
            drop(seat); // the release drains the list in thread mode
        })
        .unwrap();
    let waiter = waiter_rx.recv().unwrap();
    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(waiter)));
    assert!(dropped.is_err());
    drop(dropped_tx);
    main.join().unwrap();
    panic!(
        "the waiter was dropped and the compartment survived: waiting = {}",
        THREAD_MODE.state().waiting
    );
}
