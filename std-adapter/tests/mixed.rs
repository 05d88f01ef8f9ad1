//! Blocking threads and tokio tasks share one compartment.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use bulkhead_std::Bulkhead;
use bulkhead_std::prelude::*;

const SEATS: usize = 3;
const ROUNDS: usize = 100;
const PATIENCE: Duration = Duration::from_secs(60);

fn check_inside(inside: &AtomicUsize) {
    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
    assert!(now <= SEATS, "{now} inside a {SEATS}-seat compartment");
}

#[test]
fn threads_and_tokio_tasks_never_exceed_the_limit() {
    let b = Arc::new(Bulkhead::new("shared", SEATS).unwrap());
    let inside = Arc::new(AtomicUsize::new(0));
    let max_seen = Arc::new(AtomicUsize::new(0));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();

    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (b, inside) = (b.clone(), inside.clone());
            thread::spawn(move || {
                for _ in 0..ROUNDS {
                    let seat = b.acquire_blocking(PATIENCE).unwrap();
                    check_inside(&inside);
                    thread::yield_now();
                    inside.fetch_sub(1, Ordering::SeqCst);
                    drop(seat);
                }
            })
        })
        .collect();

    rt.block_on(async {
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let (b, inside, max_seen) = (b.clone(), inside.clone(), max_seen.clone());
                tokio::spawn(async move {
                    for _ in 0..ROUNDS {
                        let seat = b
                            .acquire_timeout(PATIENCE, tokio::time::sleep)
                            .await
                            .unwrap();
                        check_inside(&inside);
                        max_seen.fetch_max(b.state().active, Ordering::Relaxed);
                        tokio::task::yield_now().await; // hold the seat across a suspension
                        inside.fetch_sub(1, Ordering::SeqCst);
                        drop(seat);
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
    for t in threads {
        t.join().unwrap();
    }
    let s = b.state();
    assert_eq!((s.active, s.waiting, s.timed_out), (0, 0, 0));
    assert!(max_seen.load(Ordering::Relaxed) <= SEATS);
}

#[test]
fn a_task_and_a_thread_queue_in_one_fifo_line() {
    let b = Arc::new(Bulkhead::new("line", 1).unwrap());
    let first = bulkhead_std::OwnedSeat::try_acquire(b.clone()).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_time()
        .build()
        .unwrap();
    // A task queues first, then a thread.
    let task = {
        let b = b.clone();
        rt.spawn(async move {
            let _seat = b
                .acquire_timeout(PATIENCE, tokio::time::sleep)
                .await
                .unwrap();
            b.state().waiting
        })
    };
    while b.state().waiting < 1 {
        thread::yield_now();
    }
    let thread = {
        let b = b.clone();
        thread::spawn(move || b.acquire_blocking(PATIENCE).map(drop))
    };
    while b.state().waiting < 2 {
        thread::yield_now();
    }
    drop(first);
    // The task was first in line, so it got the seat while the thread
    // still waited behind it.
    assert_eq!(rt.block_on(task).unwrap(), 1);
    thread.join().unwrap().unwrap();
}
