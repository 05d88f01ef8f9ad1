//! The one thread pool (bulkhead-std's `ThreadPoolBulkhead`, re-exported)
//! from tokio: its own threads, a bounded queue, the execution timeout,
//! panics as errors, cancellation, `?` into boxed errors, and shutdown.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use bulkhead_tokio::{BuildError, Error, PoolError, Shutdown, ThreadPoolBulkhead};
use tokio::runtime::Builder;

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
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Tasks running on a worker now.
fn running(pool: &ThreadPoolBulkhead) -> usize {
    let s = pool.snapshot();
    s.active - s.waiting
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
    let pool = ThreadPoolBulkhead::builder("reports")
        .max_workers(2)
        .build()
        .unwrap();
    rt.block_on(async {
        let (unstick, stuck) = gate();
        let shared = tokio::task::spawn_blocking(stuck);
        let tokio_thread = tokio::task::spawn_blocking(|| thread::current().id());

        // The pool still runs jobs, on threads named after it.
        let (name, id) = pool
            .spawn(|| {
                (
                    thread::current().name().map(str::to_owned),
                    thread::current().id(),
                )
            })
            .unwrap()
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
    let pool = ThreadPoolBulkhead::builder("disk")
        .max_workers(1)
        .queue_capacity(1)
        .build()
        .unwrap();
    let (open, blocked) = gate();
    let first = pool.spawn(blocked).unwrap();
    until(|| running(&pool) == 1).await;
    let queued = pool.spawn(|| "queued").unwrap();
    let state = pool.snapshot();
    assert_eq!((state.active, state.waiting, state.queue_size), (2, 1, 1));

    let err = pool.spawn(|| "third").unwrap_err();
    assert!(matches!(
        err.rejection(),
        Some(Error::Full {
            name,
            max_concurrent: 2,
            active: 2
        }) if name == "disk"
    ));
    assert!(matches!(
        pool.spawn(|| ()),
        Err(PoolError::Rejected(Error::Full { .. }))
    ));
    assert_eq!(pool.snapshot().rejected, 2);

    open.send(()).unwrap();
    first.await.unwrap();
    assert_eq!(queued.await.unwrap(), "queued");
    assert_eq!(pool.snapshot().active, 0);
    assert_eq!(
        pool.spawn(|| 1).unwrap().await.unwrap(),
        1,
        "the seats are free again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn it_reports_the_execution_timeout_and_skips_a_timed_out_queued_job() {
    let limit = Duration::from_millis(50);
    let pool = ThreadPoolBulkhead::builder("pdf")
        .max_workers(1)
        .queue_capacity(1)
        .execution_timeout(limit)
        .build()
        .unwrap();
    let (open, slow) = gate();
    let start = Instant::now();
    let slow = pool.spawn(slow).unwrap();
    let ran = Arc::new(AtomicBool::new(false));
    let ran2 = ran.clone();
    let queued = pool
        .spawn(move || ran2.store(true, Ordering::SeqCst))
        .unwrap();
    let err = slow.await.unwrap_err();
    assert!(start.elapsed() >= limit);
    assert_eq!(
        err,
        PoolError::Timeout {
            name: "pdf".into(),
            timeout: limit
        }
    );
    assert!(matches!(queued.await, Err(PoolError::Timeout { .. })));
    // The running closure keeps its worker and its seat.
    assert!(pool.snapshot().active >= 1);
    open.send(()).unwrap();
    until(|| pool.snapshot().active == 0).await;
    assert!(
        !ran.load(Ordering::SeqCst),
        "a job whose caller timed out while it was queued is skipped"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quick_job_is_not_affected_by_the_execution_timeout() {
    let pool = ThreadPoolBulkhead::builder("pdf")
        .max_workers(1)
        .execution_timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    for i in 0..10 {
        assert_eq!(pool.spawn(move || i).unwrap().await.unwrap(), i);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_job_is_reported_and_its_worker_survives() {
    let pool = ThreadPoolBulkhead::builder("fragile")
        .max_workers(1)
        .build()
        .unwrap();
    let err = pool
        .spawn(|| -> u8 { panic!("boom") })
        .unwrap()
        .await
        .unwrap_err();
    assert_eq!(
        err,
        PoolError::Panicked {
            name: "fragile".into(),
            message: "boom".into()
        }
    );
    assert!(err.to_string().contains("boom"), "{err}");
    assert_eq!(
        pool.spawn(|| 2).unwrap().await.unwrap(),
        2,
        "the single worker is still alive"
    );
    assert_eq!(pool.snapshot().active, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_convert_with_question_mark_into_boxed_errors() {
    type AnyError = Box<dyn std::error::Error + Send + Sync + 'static>;
    async fn render(pool: &ThreadPoolBulkhead) -> Result<u8, AnyError> {
        let a = pool.spawn(|| 1)?.await?;
        let b: u8 = pool.spawn(|| panic!("render failed"))?.await?;
        Ok(a + b)
    }
    let pool = ThreadPoolBulkhead::builder("render").build().unwrap();
    let err = render(&pool).await.unwrap_err();
    let pool_error = err.downcast_ref::<PoolError>().expect("a PoolError");
    assert!(matches!(pool_error, PoolError::Panicked { .. }));
    fn assert_error<E: std::error::Error + Send + Sync + 'static>() {}
    assert_error::<PoolError>();
    assert_error::<BuildError>();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_cancelled_before_it_starts_is_skipped_and_frees_its_seat() {
    let pool = ThreadPoolBulkhead::builder("q")
        .max_workers(1)
        .queue_capacity(1)
        .build()
        .unwrap();
    let (open, blocked) = gate();
    let first = pool.spawn(blocked).unwrap();
    until(|| running(&pool) == 1).await;
    let ran = Arc::new(AtomicBool::new(false));
    let ran2 = ran.clone();
    // Awaited until a timeout, then cancelled, as for a client that
    // hangs up.
    let mut job = pool
        .spawn(move || ran2.store(true, Ordering::SeqCst))
        .unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(10), &mut job)
            .await
            .is_err()
    );
    assert!(job.cancel(), "still queued");
    assert_eq!(
        pool.snapshot().active,
        1,
        "the cancelled job's seat is free"
    );
    open.send(()).unwrap();
    first.await.unwrap();
    until(|| pool.snapshot().active == 0).await;
    assert!(!ran.load(Ordering::SeqCst), "a cancelled job does not run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_pool_never_hangs_an_awaiting_task() {
    let pool = ThreadPoolBulkhead::builder("gone")
        .max_workers(1)
        .queue_capacity(2)
        .build()
        .unwrap();
    let (open, blocked) = gate();
    let first = pool
        .spawn(move || {
            blocked();
            "finished"
        })
        .unwrap();
    until(|| running(&pool) == 1).await;
    let queued: Vec<_> = (0..2)
        .map(|i| tokio::spawn(pool.spawn(move || i).unwrap()))
        .collect();
    drop(pool); // drains: the queued jobs still run
    open.send(()).unwrap();
    assert_eq!(first.await.unwrap(), "finished");
    for (i, job) in queued.into_iter().enumerate() {
        let value = tokio::time::timeout(Duration::from_secs(10), job)
            .await
            .expect("never hangs")
            .unwrap();
        assert_eq!(value, Ok(i));
    }
}

#[test]
fn jobs_can_be_submitted_outside_a_runtime_and_awaited_inside() {
    let pool = ThreadPoolBulkhead::builder("sync")
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
    let err = ThreadPoolBulkhead::builder("none")
        .max_workers(0)
        .build()
        .unwrap_err();
    assert!(matches!(&err, BuildError::ZeroWorkers { name } if name == "none"));
    assert!(err.to_string().contains("at least 1 worker"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shut_down_pool_refuses_new_jobs_and_finishes_queued_ones() {
    let pool = ThreadPoolBulkhead::builder("closing")
        .max_workers(1)
        .queue_capacity(1)
        .build()
        .unwrap();
    let job = pool.spawn(|| "done").unwrap();
    pool.shutdown(Shutdown::Drain);
    assert!(matches!(
        pool.spawn(|| ""),
        Err(PoolError::Rejected(Error::Closed { .. }))
    ));
    assert_eq!(job.await.unwrap(), "done");
}
