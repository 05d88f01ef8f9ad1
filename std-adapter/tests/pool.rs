//! The thread-pool compartment. Tasks are held with channels, never with
//! sleeps, so every ordering asserted here is one the pool guarantees.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use bulkhead_std::{
    BuildError, Error, Kind, PoolConfig, PoolError, Shutdown, TaskHandle, ThreadPoolBulkhead,
};

const PATIENCE: Duration = Duration::from_secs(60);

/// Submits a task that reports it started, then blocks until released.
fn blocker(pool: &ThreadPoolBulkhead) -> (TaskHandle<&'static str>, Receiver<()>, Sender<()>) {
    let (started_tx, started) = channel();
    let (release, release_rx) = channel::<()>();
    let handle = pool
        .spawn(move || {
            started_tx.send(()).unwrap();
            let _ = release_rx.recv_timeout(PATIENCE);
            "released"
        })
        .unwrap();
    (handle, started, release)
}

#[test]
fn capacity_is_workers_plus_queue_and_the_state_counts_it() {
    let pool = ThreadPoolBulkhead::new(PoolConfig::new("pool", 2).queue_capacity(2)).unwrap();
    let (a, a_started, a_go) = blocker(&pool);
    let (b, b_started, b_go) = blocker(&pool);
    a_started.recv_timeout(PATIENCE).unwrap();
    b_started.recv_timeout(PATIENCE).unwrap();
    // Both workers busy: the next two queue, the fifth is rejected at once.
    let q1 = pool.spawn(|| 1).unwrap();
    let q2 = pool.spawn(|| 2).unwrap();
    let s = pool.snapshot();
    assert_eq!(s.kind, Kind::ThreadPool);
    assert_eq!((s.max_concurrent, s.queue_size), (4, 2));
    assert_eq!((s.active, s.waiting), (4, 2));
    let start = Instant::now();
    let err = pool.spawn(|| 3).unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "submission waited"
    );
    assert_eq!(
        err,
        PoolError::Rejected(Error::Full {
            name: "pool".into(),
            max_concurrent: 4,
            active: 4
        })
    );
    let s = pool.snapshot();
    assert_eq!(s.rejected, 1);
    assert!(s.last_rejection.is_some());
    a_go.send(()).unwrap();
    b_go.send(()).unwrap();
    assert_eq!(a.join(), Ok("released"));
    assert_eq!(b.join(), Ok("released"));
    assert_eq!(q1.join(), Ok(1));
    assert_eq!(q2.join(), Ok(2));
    let s = pool.snapshot();
    assert_eq!((s.active, s.waiting), (0, 0));
}

#[test]
fn workers_are_named_after_the_pool() {
    let pool = ThreadPoolBulkhead::new(PoolConfig::new("reports", 1)).unwrap();
    let name = pool
        .execute(|| std::thread::current().name().map(str::to_owned))
        .unwrap();
    assert_eq!(name.as_deref(), Some("reports-0"));
}

#[test]
fn an_overrunning_task_times_out_distinctly_and_keeps_its_seat_until_it_returns() {
    const TIMEOUT: Duration = Duration::from_millis(50);
    let pool =
        ThreadPoolBulkhead::new(PoolConfig::new("slow", 1).execution_timeout(TIMEOUT)).unwrap();
    let (handle, started, release) = blocker(&pool);
    started.recv_timeout(PATIENCE).unwrap();
    let submitted = Instant::now();
    let err = handle.join().unwrap_err();
    assert!(submitted.elapsed() < TIMEOUT + Duration::from_secs(10));
    assert_eq!(
        err,
        PoolError::Timeout {
            name: "slow".into(),
            timeout: TIMEOUT
        }
    );
    assert!(err.to_string().contains("execution timeout"));
    let s = pool.snapshot();
    assert_eq!((s.timed_out, s.active), (1, 1), "the work still runs");
    // Its worker is busy, so there is no room (no queue).
    assert!(matches!(
        pool.spawn(|| ()),
        Err(PoolError::Rejected(Error::Full { .. }))
    ));
    release.send(()).unwrap();
    pool.shutdown(Shutdown::Drain);
    assert!(pool.await_termination(PATIENCE));
    assert_eq!(pool.snapshot().active, 0);
}

#[test]
fn a_timed_out_handle_waits_at_least_the_timeout() {
    const TIMEOUT: Duration = Duration::from_millis(50);
    let pool =
        ThreadPoolBulkhead::new(PoolConfig::new("slow", 1).execution_timeout(TIMEOUT)).unwrap();
    let start = Instant::now();
    let (handle, _started, release) = blocker(&pool);
    assert!(matches!(handle.join(), Err(PoolError::Timeout { .. })));
    assert!(start.elapsed() >= TIMEOUT);
    release.send(()).unwrap();
}

#[test]
fn shutdown_drain_runs_the_queue() {
    let pool = ThreadPoolBulkhead::new(PoolConfig::new("drain", 1).queue_capacity(3)).unwrap();
    let (first, started, release) = blocker(&pool);
    started.recv_timeout(PATIENCE).unwrap();
    let queued: Vec<_> = (0..3).map(|i| pool.spawn(move || i).unwrap()).collect();
    pool.shutdown(Shutdown::Drain);
    assert!(matches!(
        pool.spawn(|| 9),
        Err(PoolError::Rejected(Error::Closed { name })) if name == "drain"
    ));
    assert!(pool.snapshot().closed);
    release.send(()).unwrap();
    assert_eq!(first.join(), Ok("released"));
    let results: Vec<_> = queued.into_iter().map(TaskHandle::join).collect();
    assert_eq!(results, [Ok(0), Ok(1), Ok(2)]);
    assert!(pool.await_termination(PATIENCE));
}

#[test]
fn shutdown_cancel_cancels_the_queue_and_finishes_the_running_task() {
    let pool = ThreadPoolBulkhead::new(PoolConfig::new("cancel", 1).queue_capacity(3)).unwrap();
    let (first, started, release) = blocker(&pool);
    started.recv_timeout(PATIENCE).unwrap();
    let queued: Vec<_> = (0..3)
        .map(|_| {
            pool.spawn(|| unreachable!("cancelled tasks never run"))
                .unwrap()
        })
        .collect();
    pool.shutdown(Shutdown::Cancel);
    // Cancelled handles resolve before `shutdown` returns; their seats are back.
    let s = pool.snapshot();
    assert_eq!((s.active, s.waiting), (1, 0));
    for h in queued {
        let err: PoolError = h.join().unwrap_err();
        assert_eq!(
            err,
            PoolError::Cancelled {
                name: "cancel".into()
            }
        );
        assert!(err.to_string().contains("Shutdown::Drain"));
    }
    release.send(()).unwrap();
    assert_eq!(first.join(), Ok("released"));
    assert!(pool.await_termination(PATIENCE));
    assert_eq!(pool.snapshot().active, 0);
}

#[test]
fn await_termination_is_bounded() {
    let pool = ThreadPoolBulkhead::new(PoolConfig::new("stuck", 1)).unwrap();
    let (_h, started, release) = blocker(&pool);
    started.recv_timeout(PATIENCE).unwrap();
    pool.shutdown(Shutdown::Cancel);
    assert!(!pool.await_termination(Duration::from_millis(10)));
    release.send(()).unwrap();
    assert!(pool.await_termination(PATIENCE));
}

#[test]
fn dropping_the_pool_never_hangs_a_waiter() {
    let pool = ThreadPoolBulkhead::new(PoolConfig::new("dropped", 1).queue_capacity(2)).unwrap();
    let (first, started, release) = blocker(&pool);
    started.recv_timeout(PATIENCE).unwrap();
    let queued = pool.spawn(|| "ran after the drop").unwrap();
    let start = Instant::now();
    drop(pool); // drains, without waiting for the blocked worker
    assert!(start.elapsed() < Duration::from_secs(10), "drop blocked");
    release.send(()).unwrap();
    assert_eq!(first.join(), Ok("released"));
    assert_eq!(queued.join(), Ok("ran after the drop"));
}

#[test]
fn a_panic_in_a_task_frees_its_seat_and_is_reported_with_its_message() {
    let pool = ThreadPoolBulkhead::new(PoolConfig::new("panicky", 1)).unwrap();
    let h = pool.spawn(|| -> u8 { panic!("boom {}", 7) }).unwrap();
    assert_eq!(
        h.join(),
        Err(PoolError::Panicked {
            name: "panicky".into(),
            message: "boom 7".into()
        })
    );
    let h = pool.spawn(|| std::panic::panic_any(42_u8)).unwrap();
    assert!(
        matches!(h.join(), Err(PoolError::Panicked { message, .. }) if message == "a non-string payload")
    );
    assert_eq!(pool.snapshot().active, 0);
    // The worker survived.
    assert_eq!(pool.execute(|| 5), Ok(5));
}

#[test]
fn a_cancelled_handle_skips_its_queued_task() {
    let pool = ThreadPoolBulkhead::builder("cancel")
        .queue_capacity(1)
        .build()
        .unwrap();
    let (first, started, release) = blocker(&pool);
    started.recv_timeout(PATIENCE).unwrap();
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ran2 = ran.clone();
    let queued = pool
        .spawn(move || ran2.store(true, std::sync::atomic::Ordering::SeqCst))
        .unwrap();
    assert!(queued.cancel());
    assert!(!queued.cancel(), "once");
    assert_eq!(
        queued.join(),
        Err(PoolError::Cancelled {
            name: "cancel".into()
        })
    );
    release.send(()).unwrap();
    assert_eq!(first.join(), Ok("released"));
    assert!(!first_cancel_runs(&pool));
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
    assert_eq!(pool.snapshot().active, 0);
}

/// A running or finished task cannot be cancelled.
fn first_cancel_runs(pool: &ThreadPoolBulkhead) -> bool {
    let done = pool.spawn(|| ()).unwrap();
    while !done.is_finished() {
        std::thread::yield_now();
    }
    done.cancel()
}

#[test]
fn a_handle_can_be_awaited() {
    let pool = ThreadPoolBulkhead::new(PoolConfig::new("async", 2).queue_capacity(2)).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let sum = rt.block_on(async {
        let a = pool.spawn(|| 40).unwrap();
        let b = pool.spawn(|| 2).unwrap();
        a.await.unwrap() + b.await.unwrap()
    });
    assert_eq!(sum, 42);
}

#[test]
fn a_timed_out_handle_resolves_when_awaited() {
    let pool = ThreadPoolBulkhead::new(
        PoolConfig::new("async", 1).execution_timeout(Duration::from_millis(20)),
    )
    .unwrap();
    let (handle, _started, release) = blocker(&pool);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert!(matches!(
        rt.block_on(handle),
        Err(PoolError::Timeout { .. })
    ));
    release.send(()).unwrap();
}

#[test]
fn bad_settings_are_refused() {
    assert!(matches!(
        ThreadPoolBulkhead::new(PoolConfig::new("none", 0).queue_capacity(4)),
        Err(BuildError::ZeroWorkers { name }) if name == "none"
    ));
    let err = ThreadPoolBulkhead::new(PoolConfig::new("huge", usize::MAX)).unwrap_err();
    assert!(matches!(err, BuildError::Config(_)), "{err}");
}

#[test]
fn handles_and_compartments_cross_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<ThreadPoolBulkhead>();
    assert_send_sync::<TaskHandle<u8>>();
    assert_send_sync::<bulkhead_std::Bulkhead>();
    assert_send_sync::<bulkhead_std::OwnedSeat<std::sync::Arc<bulkhead_std::Bulkhead>>>();
    assert_send_sync::<bulkhead_std::StdLock>();
    assert_send_sync::<bulkhead_std::Policy<std::sync::Arc<bulkhead_std::Bulkhead>>>();
}
