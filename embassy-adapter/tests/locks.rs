//! Each embassy-sync raw mutex as a compartment's lock.

mod support;

use std::pin::{Pin, pin};
use std::sync::mpsc;
use std::task::Poll;
use std::thread;

use bulkhead_embassy::raw::{CriticalSectionRawMutex, NoopRawMutex, ThreadModeRawMutex};
use bulkhead_embassy::{Bulkhead, Config, new_static};
use support::{poll_once, run_all};

/// Three callers, one seat: each waits its turn, in order, and the count
/// inside never exceeds one.
fn hand_off_in_order<M: bulkhead_embassy::raw::RawMutex>(b: &Bulkhead<M>) {
    let order = std::cell::RefCell::new(Vec::new());
    let inside = std::cell::Cell::new(0);
    let caller = |id: u32| {
        let (order, inside) = (&order, &inside);
        async move {
            let _seat = b.acquire().await.unwrap();
            inside.set(inside.get() + 1);
            assert!(
                inside.get() <= 1,
                "two callers inside a one-seat compartment"
            );
            order.borrow_mut().push(id);
            // Let the others queue (or find the compartment full).
            let mut yielded = false;
            std::future::poll_fn(|cx| {
                if yielded {
                    Poll::Ready(())
                } else {
                    yielded = true;
                    cx.waker().wake_by_ref();
                    Poll::Pending
                }
            })
            .await;
            inside.set(inside.get() - 1);
        }
    };
    let mut futures: Vec<Pin<Box<dyn Future<Output = ()> + '_>>> = vec![
        Box::pin(caller(1)),
        Box::pin(caller(2)),
        Box::pin(caller(3)),
    ];
    run_all(&mut futures);
    assert_eq!(*order.borrow(), [1, 2, 3]);
    assert_eq!(b.state().active, 0);
}

#[test]
fn critical_section_mutex_hands_off_in_order() {
    static SHARED: Bulkhead<CriticalSectionRawMutex> = new_static("shared", 1);
    hand_off_in_order(&SHARED);
}

#[test]
fn noop_mutex_compartment_lives_on_the_stack() {
    // `!Sync`: it cannot be a `static`, and needs no `static_cell` when its
    // users run in one async scope.
    let local: Bulkhead<NoopRawMutex> = Bulkhead::from_config(Config::new("local", 1)).unwrap();
    hand_off_in_order(&local);
}

#[test]
fn thread_mode_mutex_works_in_thread_mode() {
    static THREAD_MODE: Bulkhead<ThreadModeRawMutex> = new_static("thread_mode", 1);
    // On std, embassy-sync's "thread mode" is the thread named `main`.
    thread::Builder::new()
        .name("main".into())
        .spawn(|| hand_off_in_order(&THREAD_MODE))
        .unwrap()
        .join()
        .unwrap();
}

/// A seat of a thread-mode compartment given back outside thread mode (an
/// interrupt handler on a device, any thread but `main` on a host) while
/// someone waits needs the lock there, and embassy-sync's mutex refuses
/// with a panic. Where panics unwind (a host), core's cleanup retries the
/// lock while unwinding, so the process aborts; that is why this runs in a
/// child process.
#[test]
fn thread_mode_release_outside_thread_mode_is_fatal_when_someone_waits() {
    const CHILD: &str = "BULKHEAD_EMBASSY_THREAD_MODE_CHILD";
    const NAME: &str = "thread_mode_release_outside_thread_mode_is_fatal_when_someone_waits";
    if std::env::var_os(CHILD).is_some() {
        release_outside_thread_mode_with_a_waiter();
        unreachable!("the release above must not return");
    }
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", NAME, "--test-threads=1", "--nocapture"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&child.stderr);
    assert!(!child.status.success(), "the child survived:\n{stderr}");
    assert!(
        stderr.contains("ThreadModeMutex can only be locked from thread mode"),
        "{stderr}"
    );
}

fn release_outside_thread_mode_with_a_waiter() {
    static THREAD_MODE: Bulkhead<ThreadModeRawMutex> = new_static("thread_mode", 1);
    let (seat_tx, seat_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let _main = thread::Builder::new()
        .name("main".into())
        .spawn(move || {
            let seat = THREAD_MODE.try_acquire().unwrap();
            let mut waiter = pin!(THREAD_MODE.acquire());
            assert!(poll_once(waiter.as_mut()).is_pending());
            seat_tx.send(seat).unwrap();
            let _ = done_rx.recv();
        })
        .unwrap();
    let seat = seat_rx.recv().unwrap();
    // Not thread mode for this mutex: the release needs the lock, because
    // a waiter is queued.
    drop(seat);
    drop(done_tx);
}
