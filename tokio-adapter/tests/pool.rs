//! The dedicated blocking pool: its own threads, a bounded queue, the
//! execution timeout, panics, cancellation and shutdown.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use bulkhead_tokio::{BlockingPool, Error, RunError};
use tokio::runtime::Builder;
use tokio::time::Instant;

/// A job that blocks its worker until the returned sender is used (or
/// dropped).
fn gate() -> (mpsc::Sender<()>, impl FnOnce() + Send + 'static) {
    let (open, wait) = mpsc::channel::<()>();
    (open, move || {
        let _ = wait.recv();
    })
}

async fn until(mut done: impl FnMut() -> bool) {
    while !done() {
        tokio::task::yield_now().await;
    }
}

#[test]
fn its_threads_are_its_own_even_when_tokios_blocking_pool_is_full() {
    // tokio's shared blocking pool has one thread, and it is stuck.
    let rt = Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let pool = BlockingPool::builder("reports")
        .max_workers(2)
        .build()
        .unwrap();
    rt.block_on(async {
        let (unstick, stuck) = gate();
        let shared = tokio::task::spawn_blocking(stuck);
        let tokio_thread = tokio::task::spawn_blocking(|| thread::current().id());

        // The pool still runs jobs, on threads named after it.
        let (name, id) = pool
            .run(|| {
                (
                    thread::current().name().map(str::to_owned),
                    thread::current().id(),
                )
            })
            .await
            .unwrap();
        let name = name.unwrap();
        assert!(name == "reports-0" || name == "reports-1", "{name}");
        assert!(!tokio_thread.is_finished(), "tokio's pool is still stuck");

        unstick.send(()).unwrap();
        shared.await.unwrap();
        assert_ne!(
            tokio_thread.await.unwrap(),
            id,
            "not a tokio blocking thread"
        );
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn it_rejects_at_once_on_a_full_queue() {
    let pool = BlockingPool::builder("disk")
        .max_workers(1)
        .queue_capacity(1)
        .build()
        .unwrap();
    let (open, running) = gate();
    let first = pool.spawn(running).unwrap();
    until(|| pool.state().running == 1).await;
    let queued = pool.spawn(|| "queued").unwrap();
    let state = pool.state();
    assert_eq!(
        (state.running, state.queued, state.compartment.active),
        (1, 1, 2)
    );

    let err = pool.run(|| "third").await.unwrap_err();
    assert!(matches!(
        err.rejection(),
        Some(Error::Full {
            name: "disk",
            max_concurrent: 2,
            active: 2
        })
    ));
    assert!(matches!(pool.spawn(|| ()), Err(Error::Full { .. })));
    assert_eq!(pool.state().compartment.rejected, 2);

    open.send(()).unwrap();
    first.await.unwrap();
    assert_eq!(queued.await.unwrap(), "queued");
    assert_eq!(pool.state().compartment.active, 0);
    assert_eq!(pool.run(|| 1).await.unwrap(), 1, "the seats are free again");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn it_reports_the_execution_timeout() {
    let pool = BlockingPool::builder("pdf")
        .max_workers(1)
        .execution_timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let (open, slow) = gate();
    let start = Instant::now();
    let err = pool.run(slow).await.unwrap_err();
    assert!(
        matches!(err, RunError::TimedOut { name: "pdf", limit } if limit == Duration::from_secs(5))
    );
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(5),
        "paused clock: exact"
    );
    // The closure still runs and keeps its worker and its seat.
    assert_eq!(pool.state().compartment.active, 1);
    assert!(matches!(pool.spawn(|| ()), Err(Error::Full { .. })));
    open.send(()).unwrap();
    until(|| pool.state().compartment.active == 0).await;
    // No quick job here: a paused clock jumps to the next deadline as soon
    // as the runtime is idle, also while a pool thread works (see `Job`).
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quick_job_is_not_affected_by_the_execution_timeout() {
    let pool = BlockingPool::builder("pdf")
        .max_workers(1)
        .execution_timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    for i in 0..10 {
        assert_eq!(pool.run(move || i).await.unwrap(), i);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_job_is_reported_and_its_worker_survives() {
    let pool = BlockingPool::builder("fragile")
        .max_workers(1)
        .build()
        .unwrap();
    let err = pool.run(|| -> u8 { panic!("boom") }).await.unwrap_err();
    assert!(matches!(err, RunError::Panicked { .. }));
    assert!(err.to_string().contains("boom"), "{err}");
    assert_eq!(
        pool.run(|| 2).await.unwrap(),
        2,
        "the single worker is still alive"
    );
    assert_eq!(pool.state().compartment.active, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_dropped_before_it_starts_is_skipped_and_frees_its_seat() {
    let pool = BlockingPool::builder("q")
        .max_workers(1)
        .queue_capacity(1)
        .build()
        .unwrap();
    let (open, running) = gate();
    let first = pool.spawn(running).unwrap();
    until(|| pool.state().running == 1).await;
    let ran = Arc::new(AtomicBool::new(false));
    let ran2 = ran.clone();
    let queued = pool
        .spawn(move || ran2.store(true, Ordering::SeqCst))
        .unwrap();
    // Cancel it in a select!, as a client that hangs up would.
    tokio::select! {
        biased;
        _ = std::future::ready(()) => {}
        _ = queued => unreachable!(),
    }
    open.send(()).unwrap();
    first.await.unwrap();
    until(|| pool.state().compartment.active == 0).await;
    assert!(!ran.load(Ordering::SeqCst), "a cancelled job does not run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_pool_never_hangs_an_awaiting_task() {
    let pool = BlockingPool::builder("gone")
        .max_workers(1)
        .queue_capacity(2)
        .build()
        .unwrap();
    let compartment = pool.bulkhead().clone();
    let (open, running) = gate();
    let first = pool
        .spawn(move || {
            running();
            "finished"
        })
        .unwrap();
    until(|| pool.state().running == 1).await;
    let queued: Vec<_> = (0..2)
        .map(|i| tokio::spawn(pool.spawn(move || i).unwrap()))
        .collect();
    drop(pool);
    for job in queued {
        let err = tokio::time::timeout(Duration::from_secs(10), job)
            .await
            .expect("never hangs")
            .unwrap()
            .unwrap_err();
        assert!(
            matches!(err, RunError::Shutdown { name: "gone" }),
            "{err:?}"
        );
    }
    // The running job completes and delivers its value.
    open.send(()).unwrap();
    assert_eq!(first.await.unwrap(), "finished");
    assert_eq!(compartment.state().active, 0);
}

#[test]
fn jobs_can_be_spawned_outside_a_runtime_and_awaited_inside() {
    let pool = BlockingPool::builder("sync")
        .max_workers(2)
        .execution_timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let job = pool.spawn(|| 40 + 2).unwrap();
    let rt = Builder::new_current_thread().enable_all().build().unwrap();
    assert_eq!(rt.block_on(job).unwrap(), 42);
}

#[test]
fn a_pool_needs_a_worker() {
    let err = BlockingPool::builder("none")
        .max_workers(0)
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("max_concurrent = 0"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_pool_refuses_new_jobs_and_finishes_queued_ones() {
    let pool = BlockingPool::builder("closing")
        .max_workers(1)
        .queue_capacity(1)
        .build()
        .unwrap();
    let job = pool.spawn(|| "done").unwrap();
    pool.close();
    assert!(matches!(pool.spawn(|| ""), Err(Error::Closed { .. })));
    assert_eq!(job.await.unwrap(), "done");
}
