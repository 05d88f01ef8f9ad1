//! Threads waiting on a partitioned compartment: `BlockingAcquirePartition`
//! (the plain compartment's wait loop over core's partition waits) and
//! `Inspect` for `Partitioned`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use bulkhead_std::partition::{Amount, PartitionConfig, PartitionId, Partitioned};
use bulkhead_std::prelude::*;
use bulkhead_std::{Error, Kind, MaxWait};

const LONG: Duration = Duration::from_secs(60);

/// Spins until `check` holds (a thread has queued, say), failing after
/// `LONG` rather than hanging the suite.
fn until(what: &str, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < LONG, "gave up waiting until {what}");
        thread::yield_now();
    }
}

fn waiting(p: &Partitioned, id: PartitionId) -> usize {
    p.partition_state(id).unwrap().waiting
}

/// Every partition's and the compartment's counts are back to zero.
fn assert_idle(p: &Partitioned) {
    for (id, name) in p.partitions() {
        let s = p.partition_state(id).unwrap();
        assert_eq!((s.active, s.waiting), (0, 0), "partition `{name}`");
    }
    let s = p.state();
    assert_eq!((s.active, s.waiting), (0, 0));
}

/// `live` 4 (lends all of it), `batch` 2 (may borrow up to the limit).
fn live_and_batch(max: usize) -> Partitioned {
    Partitioned::new(
        "db",
        max,
        &[
            PartitionConfig::new("live", Amount::Seats(max - 2)).priority(1),
            PartitionConfig::new("batch", Amount::Seats(2)),
        ],
    )
    .unwrap()
}

#[test]
fn threads_block_and_never_exceed_what_a_partition_may_hold() {
    let p = Partitioned::new(
        "db",
        4,
        &[
            PartitionConfig::new("live", Amount::Seats(3)).lendable(Amount::Seats(1)),
            PartitionConfig::new("batch", Amount::Seats(1)).borrow(Amount::Seats(1)),
        ],
    )
    .unwrap();
    let (live, batch) = (p.id("live").unwrap(), p.id("batch").unwrap());
    let held = [AtomicUsize::new(0), AtomicUsize::new(0)];
    let peak = [AtomicUsize::new(0), AtomicUsize::new(0)];
    let total_peak = AtomicUsize::new(0);
    let total = AtomicUsize::new(0);
    thread::scope(|s| {
        for t in 0..12 {
            let (id, k) = if t % 2 == 0 { (live, 0) } else { (batch, 1) };
            let (p, held, peak, total, total_peak) = (&p, &held, &peak, &total, &total_peak);
            s.spawn(move || {
                for _ in 0..50 {
                    let seat = p.acquire_blocking(id, LONG).unwrap();
                    assert_eq!(seat.partition(), id);
                    let now = held[k].fetch_add(1, Ordering::SeqCst) + 1;
                    peak[k].fetch_max(now, Ordering::SeqCst);
                    let all = total.fetch_add(1, Ordering::SeqCst) + 1;
                    total_peak.fetch_max(all, Ordering::SeqCst);
                    thread::yield_now();
                    held[k].fetch_sub(1, Ordering::SeqCst);
                    total.fetch_sub(1, Ordering::SeqCst);
                    drop(seat);
                }
            });
        }
    });
    // live may hold 3 + batch's 1 lendable (batch lends all by default);
    // batch its share 1 + 1 borrowed; together never more than 4.
    assert!(peak[0].load(Ordering::SeqCst) <= 4);
    assert!(peak[1].load(Ordering::SeqCst) <= 2, "batch may hold 2");
    assert!(total_peak.load(Ordering::SeqCst) <= 4);
    let s = p.snapshot();
    assert_eq!(
        (s.kind, s.admitted, s.timed_out),
        (Kind::Partitioned, 600, 0)
    );
    assert_idle(&p);
}

#[test]
fn a_lender_reclaims_freed_seats_before_any_waiting_borrower() {
    let p = live_and_batch(4);
    let (live, batch) = (p.id("live").unwrap(), p.id("batch").unwrap());
    // Night: batch holds all 4 seats, 2 of them borrowed from live.
    let mut night: Vec<_> = (0..4)
        .map(|_| p.acquire_blocking(batch, MaxWait::FailFast).unwrap())
        .collect();
    assert_eq!(p.partition_state(live).unwrap().lent, 2);
    let served = AtomicUsize::new(0);
    thread::scope(|s| {
        // A flood of batch callers queues first...
        let flood: Vec<_> = (0..6)
            .map(|_| {
                let (p, served) = (&p, &served);
                s.spawn(move || {
                    let seat = p.acquire_blocking(batch, LONG)?;
                    served.fetch_add(1, Ordering::SeqCst);
                    drop(seat);
                    Ok::<_, Error>(())
                })
            })
            .collect();
        until("the flood queued", || waiting(&p, batch) == 6);
        // ...then two live callers.
        let lenders: Vec<_> = (0..2)
            .map(|_| {
                let p = &p;
                s.spawn(move || p.acquire_blocking(live, LONG))
            })
            .collect();
        until("live queued", || waiting(&p, live) == 2);

        // The two seats batch gives back go to live, not to the flood
        // that waited longer.
        drop(night.pop());
        drop(night.pop());
        let live_seats: Vec<_> = lenders
            .into_iter()
            .map(|h| h.join().unwrap().unwrap())
            .collect();
        let (l, b) = (
            p.partition_state(live).unwrap(),
            p.partition_state(batch).unwrap(),
        );
        assert_eq!((l.active, l.waiting), (2, 0));
        assert_eq!((b.active, b.borrowed, b.waiting), (2, 0, 6));
        assert_eq!(served.load(Ordering::SeqCst), 0, "no borrower was served");

        // Day ends: every seat back, and the flood drains.
        drop(live_seats);
        night.clear();
        for h in flood {
            h.join().unwrap().unwrap();
        }
    });
    assert_eq!(served.load(Ordering::SeqCst), 6);
    assert_idle(&p);
}

#[test]
fn expired_budgets_are_counted_in_the_partition_and_the_compartment() {
    let p = Partitioned::new(
        "db",
        2,
        &[
            PartitionConfig::new("live", Amount::Seats(1)).lendable(Amount::Seats(0)),
            PartitionConfig::new("batch", Amount::Seats(1)),
        ],
    )
    .unwrap();
    let (live, batch) = (p.id("live").unwrap(), p.id("batch").unwrap());
    let held = p.acquire_blocking(batch, MaxWait::FailFast).unwrap();
    let budget = Duration::from_millis(20);
    thread::scope(|s| {
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let p = &p;
                s.spawn(move || {
                    let start = Instant::now();
                    let err = p.acquire_blocking(batch, budget).unwrap_err();
                    (err, start.elapsed())
                })
            })
            .collect();
        for h in waiters {
            let (err, waited) = h.join().unwrap();
            assert!(
                matches!(err, Error::Timeout { budget: b, .. } if b == budget),
                "{err:?}"
            );
            assert!(waited >= budget, "gave up after {waited:?}");
        }
    });
    let b = p.partition_state(batch).unwrap();
    assert_eq!((b.timed_out, b.rejected, b.waiting), (3, 0, 0));
    assert_eq!(p.partition_state(live).unwrap().timed_out, 0);
    let s = p.snapshot();
    assert_eq!((s.timed_out, s.active), (3, 1));
    assert!(s.last_rejection.is_some(), "a timeout is a rejection");
    // Live's reserved seat stayed free for live all along.
    drop(p.acquire_blocking(live, MaxWait::FailFast).unwrap());
    drop(held);
    assert_idle(&p);
}

#[test]
fn fail_fast_answers_partition_full_and_counts_it() {
    let p = live_and_batch(4);
    let batch = p.id("batch").unwrap();
    let held = p
        .acquire_many_blocking(batch, 4, MaxWait::FailFast)
        .unwrap();
    assert_eq!(held.weight(), 4);
    let start = Instant::now();
    let err = p.acquire_blocking(batch, Duration::ZERO).unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(
        matches!(err, Error::PartitionFull { ref partition, active: 4, share: 2, may_hold: 4, .. } if partition.as_str() == "batch"),
        "{err:?}"
    );
    assert_eq!(p.partition_state(batch).unwrap().rejected, 1);
    drop(held);
    assert_idle(&p);
}

#[test]
fn close_wakes_every_blocked_thread_with_closed() {
    let p = live_and_batch(4);
    let (live, batch) = (p.id("live").unwrap(), p.id("batch").unwrap());
    let held = p
        .acquire_many_blocking(batch, 4, MaxWait::FailFast)
        .unwrap();
    thread::scope(|s| {
        let waiters: Vec<_> = [live, batch, live, batch]
            .into_iter()
            .map(|id| {
                let p = &p;
                s.spawn(move || p.acquire_blocking(id, MaxWait::Forever))
            })
            .collect();
        until("all queued", || p.state().waiting == 4);
        p.close();
        for h in waiters {
            let err = h.join().unwrap().unwrap_err();
            assert!(matches!(err, Error::Closed { .. }), "{err:?}");
        }
    });
    // Seats held stay valid; newcomers are refused.
    assert_eq!(p.state().active, 4);
    assert!(matches!(
        p.acquire_blocking(live, LONG),
        Err(Error::Closed { .. })
    ));
    drop(held);
    assert_idle(&p);
    assert!(p.snapshot().closed);
}

#[test]
fn owned_and_weighted_seats_move_between_threads() {
    let p = Arc::new(live_and_batch(4));
    let (live, batch) = (p.id("live").unwrap(), p.id("batch").unwrap());
    let heavy = p.acquire_many_blocking_owned(batch, 3, LONG).unwrap();
    let light = p.try_acquire_owned(live).unwrap();
    assert!(matches!(
        p.try_acquire_many_owned(live, 2),
        Err(Error::PartitionFull { .. })
    ));
    // A weighted owned wait is handed the seats the heavy seat frees.
    let p2 = Arc::clone(&p);
    let waiter = thread::spawn(move || p2.acquire_many_blocking_owned(live, 3, LONG));
    until("the weighted wait queued", || waiting(&p, live) == 1);
    thread::spawn(move || drop(heavy)).join().unwrap();
    let three = waiter.join().unwrap().unwrap();
    assert_eq!((three.weight(), three.partition()), (3, live));
    assert_eq!(p.partition_state(live).unwrap().active, 4);
    // An owned blocking wait that times out drops its `Arc` clone.
    let before = Arc::strong_count(&p);
    assert!(matches!(
        p.acquire_blocking_owned(batch, Duration::from_millis(5)),
        Err(Error::Timeout { .. })
    ));
    assert_eq!(Arc::strong_count(&p), before);
    thread::spawn(move || drop((three, light))).join().unwrap();
    assert_eq!(Arc::strong_count(&p), 1);
    assert_idle(&p);
}

#[test]
fn bad_requests_are_refused_with_the_reason() {
    let p = live_and_batch(4);
    let other = live_and_batch(4);
    let batch = p.id("batch").unwrap();
    assert!(matches!(
        p.acquire_blocking(other.id("batch").unwrap(), LONG),
        Err(Error::ForeignPartition { .. })
    ));
    assert!(matches!(
        p.acquire_many_blocking(batch, 0, LONG),
        Err(Error::ZeroWeight { .. })
    ));
    let start = Instant::now();
    assert!(matches!(
        p.acquire_many_blocking(batch, 5, LONG),
        Err(Error::WeightAboveLimit {
            weight: 5,
            max_concurrent: 4,
            ..
        })
    ));
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "no wait could help"
    );
    let err = p.id("reports").unwrap_err();
    assert!(err.to_string().contains("`live`, `batch`"), "{err}");
    assert_idle(&p);
}

#[cfg(feature = "tokio")]
#[test]
fn on_a_current_thread_runtime_the_verdict_is_immediate() {
    let p = Arc::new(live_and_batch(4));
    let batch = p.id("batch").unwrap();
    let held = p
        .acquire_many_blocking_owned(batch, 4, MaxWait::FailFast)
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let p2 = Arc::clone(&p);
    let (err, took) = rt.block_on(async move {
        assert_eq!(
            bulkhead_std::event_loop(),
            Some(bulkhead_std::EventLoop::Tokio)
        );
        let start = Instant::now();
        let err = p2.acquire_blocking(batch, LONG).unwrap_err();
        (err, start.elapsed())
    });
    assert!(took < Duration::from_secs(30), "blocked the event loop");
    // A partition's refusal keeps its figures, on an event loop too.
    assert!(
        matches!(
            err,
            Error::PartitionFull {
                active: 4,
                may_hold: 4,
                ..
            }
        ),
        "{err:?}"
    );
    let b = p.partition_state(batch).unwrap();
    assert_eq!((b.waiting, b.timed_out, b.rejected), (0, 0, 1));
    // Off the loop, on a spawn_blocking thread, the same call waits.
    let p3 = Arc::clone(&p);
    let waiter = rt.spawn_blocking(move || p3.acquire_blocking(batch, LONG).map(drop));
    until("the spawn_blocking thread queued", || {
        waiting(&p, batch) == 1
    });
    drop(held);
    rt.block_on(waiter).unwrap().unwrap();
    assert_idle(&p);
}

#[cfg(feature = "metrics")]
#[test]
fn a_blocking_partition_wait_is_recorded_in_the_wait_histogram() {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let p = Arc::new(
        Partitioned::new(
            "partitioned-waits",
            1,
            &[PartitionConfig::new("only", Amount::Seats(1))],
        )
        .unwrap(),
    );
    let only = p.id("only").unwrap();
    metrics::with_local_recorder(&recorder, || {
        bulkhead_std::metrics::describe();
        let held = p.try_acquire_owned(only).unwrap();
        let p2 = Arc::clone(&p);
        let releaser = thread::spawn(move || {
            until("the waiter queued", || waiting(&p2, only) == 1);
            drop(held);
        });
        drop(p.acquire_blocking(only, LONG).unwrap());
        releaser.join().unwrap();
        // A caller that did not queue records nothing.
        drop(p.acquire_blocking(only, LONG).unwrap());
    });
    let samples: usize = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(k, ..)| {
            k.key().name() == bulkhead_std::metrics::WAIT_SECONDS
                && k.key().labels().any(|l| l.value() == "partitioned-waits")
        })
        .map(|(.., v)| match v {
            DebugValue::Histogram(samples) => samples.len(),
            other => panic!("{other:?}"),
        })
        .sum();
    assert_eq!(samples, 1);
    assert_idle(&p);
}
