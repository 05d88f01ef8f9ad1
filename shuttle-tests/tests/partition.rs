//! Randomized schedules of a partitioned compartment
//! (`bulkhead_core::partition`): three partitions, waiters for 1 or 2
//! seats in every style (task, parked thread, time-out, cancel, try),
//! resizes that move percentage shares, live reconfiguration of the
//! priorities, and `close` in half the runs.
//!
//! The partitions are declared borrowers first: `batch` (25 %, may borrow
//! up to 4), `bulk` (25 %, half of it reserved, a queue limit of 2) and
//! last `live` (2 seats, the highest priority). Serving the lines in
//! declaration order, or the first eligible head, would hand freed seats
//! to the borrowers first.
//!
//! Checked independently of the compartment's counters: never more seats
//! held than the highest limit since the holder's wait began (each holder
//! enters the `Tracker` once per seat of its weight), never more held by
//! `batch` than its borrowing limit allows, every waiter resolves (a lost
//! wake-up parks a thread forever: a shuttle deadlock), and at the end
//! every partition's counts are back to zero and exactly the limit's seats
//! can be taken again.
//!
//! And at every decision that hands out seats, from core's view of the
//! table at that moment (`Partitioned::observe_decisions`, shuttle builds
//! only), the rule behind the reclaim bound of
//! `core/src/partition/table.rs`: a partition takes seats beyond its share
//! only if no other partition's eligible waiter ranks above it (below its
//! share before at or above it, then by priority). So once a waiter below
//! its share is the best-ranked eligible one, no partition at or above its
//! share takes a seat beyond its share until that waiter is served.
#![cfg(bulkhead_shuttle)]

use std::pin::pin;

use bulkhead_core::partition::{Amount, PartitionConfig, PartitionSeat, Partitioned, SectionView};
use bulkhead_core::{Error, Name, ShuttleLock};
use bulkhead_shuttle_tests::{Gate, Tracker, check, poll_then_leave, random, yield_times};
use shuttle::sync::Arc;
use shuttle::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use shuttle::thread;

type ShuttlePartitioned = Partitioned<ShuttleLock>;

/// The reclaim bound, checked at every decision that hands out seats (see
/// the module's documentation): partition `i` takes `w` seats beyond its
/// share only if no other partition's eligible head ranks above it, and a
/// partition below its share with a waiting, eligible head always ranks
/// above one at or above its share.
fn reclaim_bound(views: &[SectionView], i: usize, w: usize) {
    let v = &views[i];
    if v.active + w <= v.share {
        return; // the guaranteed lane: within its own share
    }
    let eligible = |v: &SectionView| v.head.is_some_and(|h| v.active + h <= v.may_hold);
    let rank = |v: &SectionView| (v.active < v.share, v.priority);
    for (j, other) in views.iter().enumerate() {
        assert!(
            j == i || !eligible(other) || rank(other) <= rank(v),
            "partition {i} took {w} seats beyond its share while partition {j}'s eligible \
             waiter ranked above it: {views:?}"
        );
    }
}

/// `batch` may hold its share plus this many seats.
const BATCH_BORROW: usize = 4;

/// The three partitions, `live` at `live_priority`.
fn configs(live_priority: u8) -> [PartitionConfig; 3] {
    [
        PartitionConfig::new("batch", Amount::Percent(25)).borrow(Amount::Seats(BATCH_BORROW)),
        PartitionConfig::new("bulk", Amount::Percent(25))
            .lendable(Amount::Percent(50))
            .max_waiting(2),
        PartitionConfig::new("live", Amount::Seats(2)).priority(live_priority),
    ]
}

/// Takes seats of every partition in turn, one at a time, until none
/// admits another: with every borrowing limit but batch's unbounded, that
/// is exactly the limit (no seat lost, none extra). Gives them back.
fn assert_no_lost_seats(p: &ShuttlePartitioned) {
    let s = p.state();
    assert_eq!((s.active, s.waiting), (0, 0), "not quiescent: {s:?}");
    for (id, name) in p.partitions() {
        let ps = p.partition_state(id).unwrap();
        assert_eq!(
            (ps.active, ps.borrowed, ps.lent, ps.waiting),
            (0, 0, 0, 0),
            "{name}: {ps:?}"
        );
    }
    if s.closed {
        for (id, _) in p.partitions() {
            assert!(matches!(p.try_acquire(id), Err(Error::Closed { .. })));
        }
        return;
    }
    let mut seats = Vec::new();
    loop {
        let before = seats.len();
        for (id, _) in p.partitions() {
            if let Ok(seat) = p.try_acquire(id) {
                seats.push(seat);
            }
        }
        if seats.len() == before {
            break;
        }
    }
    assert_eq!(seats.len(), s.max_concurrent, "seats taken at the end");
    drop(seats);
    assert_eq!(p.state().active, 0);
}

/// Six workers each make three calls for 1 or 2 seats of a random
/// partition; a seventh thread resizes the compartment three times (2 to 6
/// seats: percentage shares move, and at 2 both 25 % shares are 0) and
/// flips live's priority with `reconfigure`, then closes it in half the
/// runs.
fn partitioned_workload() {
    const WORKERS: usize = 6;
    const CALLS: usize = 3;
    let p = Arc::new(
        Partitioned::with_lock(
            Name::from_static("shuttle"),
            4,
            &configs(1),
            ShuttleLock::new(),
        )
        .unwrap(),
    );
    p.observe_decisions(reclaim_bound);
    let ids: Vec<_> = p.partitions().map(|(id, _)| id).collect();
    let tracker = Tracker::new(4);
    // Seats held by batch, counted outside the compartment.
    let batch_inside = Arc::new(AtomicUsize::new(0));
    let start = Gate::default();
    start.open();
    let closes = random(2) == 0;
    let changer = {
        let (p, t) = (p.clone(), tracker.clone());
        thread::spawn(move || {
            for round in 0..3 {
                yield_times(random(6));
                let max = 2 + random(5);
                // A grow is recorded before it is made, a shrink after.
                if max >= p.state().max_concurrent {
                    t.set_limit(max);
                    p.set_max_concurrent(max).unwrap();
                } else {
                    p.set_max_concurrent(max).unwrap();
                    t.set_limit(max);
                }
                yield_times(random(3));
                p.reconfigure(&configs((round % 2) as u8 * 2)).unwrap();
            }
            if closes {
                yield_times(random(6));
                p.close();
            }
        })
    };
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (p, t, start, ids) = (p.clone(), tracker.clone(), start.clone(), ids.clone());
            let batch_inside = batch_inside.clone();
            thread::spawn(move || {
                for call in 0..CALLS {
                    let id = w * CALLS + call;
                    let part = ids[random(ids.len())];
                    let weight = 1 + random(2);
                    let since = t.wait_begins();
                    let enter = |seat: PartitionSeat<Arc<ShuttlePartitioned>>| {
                        assert_eq!(seat.weight(), weight, "a seat of the wrong weight");
                        assert_eq!(seat.partition(), part, "a seat of another partition");
                        let inside: Vec<_> = (0..weight).map(|_| t.enter(id, since)).collect();
                        if part.index() == 0 {
                            let now = batch_inside.fetch_add(weight, SeqCst) + weight;
                            // Its share is at most 25 % of 6 (1 seat).
                            assert!(now <= 1 + BATCH_BORROW, "batch holds {now}");
                        }
                        yield_times(random(3));
                        if part.index() == 0 {
                            batch_inside.fetch_sub(weight, SeqCst);
                        }
                        drop(inside);
                        drop(seat);
                    };
                    let result = match random(5) {
                        0 => Some(
                            PartitionSeat::try_acquire_many(p.clone(), part, weight).map(enter),
                        ),
                        1 => Some(
                            shuttle::future::block_on(PartitionSeat::acquire_many(
                                p.clone(),
                                part,
                                weight,
                            ))
                            .map(enter),
                        ),
                        2 => Some(
                            bulkhead_shuttle_tests::block(pin!(PartitionSeat::acquire_many(
                                p.clone(),
                                part,
                                weight
                            )))
                            .map(enter),
                        ),
                        k => poll_then_leave(
                            pin!(PartitionSeat::acquire_many(p.clone(), part, weight)),
                            &start,
                            random(4),
                            k == 3,
                        )
                        .map(|r| r.map(enter)),
                    };
                    match result {
                        None | Some(Ok(())) => {}
                        Some(Err(
                            Error::PartitionFull { .. }
                            | Error::QueueFull { .. }
                            | Error::WeightAboveLimit { .. },
                        )) => {}
                        Some(Err(Error::Closed { .. })) if closes => {}
                        Some(Err(e)) => panic!("weight {weight}: unexpected {e:?}"),
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    changer.join().unwrap();
    assert_eq!(tracker.inside(), 0);
    assert_no_lost_seats(&p);
    p.close();
    assert_no_lost_seats(&p);
}

#[test]
fn partitioned_workload_with_resizes_and_close() {
    check(partitioned_workload);
}
