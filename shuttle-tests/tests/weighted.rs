//! Randomized schedules with weighted seats and queue order: waiters for
//! 1 to 3 seats, resizes (also below a queued waiter's weight), flips of
//! the queue order, drop-oldest under a queue limit, and `close`.
//!
//! Every test checks, independently of the compartment's own counters:
//! never more *seats* held than the limit allows (each holder enters the
//! `Tracker` once per seat of its weight), every waiter resolves (a lost
//! wake-up parks a thread forever, which shuttle reports as a deadlock),
//! and once everyone has left nobody is waiting, no seat is held and every
//! seat can be taken again.
#![cfg(bulkhead_shuttle)]

use std::pin::pin;

use bulkhead_core::{Admission, Config, Error, OwnedSeat, QueueOrder, Seat, ShuttleLock};
use bulkhead_shuttle_tests::{
    Gate, Tracker, assert_no_lost_seats, check, poll_then_leave, random, with_config, yield_times,
};
use shuttle::thread;

/// Three tests that run `scenario` under shuttle, one per admission mode.
macro_rules! in_every_mode {
    ($scenario:ident: $fifo:ident, $barging:ident, $bounded:ident) => {
        #[test]
        fn $fifo() {
            check(|| $scenario(Admission::Fifo));
        }

        #[test]
        fn $barging() {
            check(|| $scenario(Admission::Barging));
        }

        #[test]
        fn $bounded() {
            check(|| $scenario(Admission::BoundedBarging));
        }
    };
}

/// Six workers each make three calls for 1 to 3 seats (wait as a task or
/// a thread, time out, cancel, or try), against a compartment of 3 seats
/// with a queue limit of 1 to 3 (with 1, a drop-oldest empties the queue
/// before the newcomer links) whose order starts at random. A seventh thread
/// resizes it three times to 1..=4 seats (a limit of 1 or 2 is below some
/// queued weights: those waiters are refused) and flips the queue order
/// (newest first drops the oldest waiter when the queue is full); in half
/// the runs it then closes the compartment while the workers still run.
fn weighted_workload(mode: Admission) {
    const WORKERS: usize = 6;
    const CALLS: usize = 3;
    let order = if random(2) == 0 {
        QueueOrder::Fifo
    } else {
        QueueOrder::Lifo
    };
    let b = with_config(
        Config::new("shuttle", 3)
            .admission(mode)
            .max_waiting(1 + random(3))
            .queue_order(order),
    );
    let tracker = Tracker::new(3);
    let start = Gate::default();
    start.open();
    let closes = random(2) == 0;
    let changer = {
        let (b, t) = (b.clone(), tracker.clone());
        thread::spawn(move || {
            for _ in 0..3 {
                yield_times(random(6));
                t.resize(&b, 1 + random(4));
                yield_times(random(3));
                let order = if random(2) == 0 {
                    QueueOrder::Fifo
                } else {
                    QueueOrder::Lifo
                };
                b.set_queue_order(order);
            }
            if closes {
                yield_times(random(6));
                b.close();
            }
        })
    };
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (b, t, start) = (b.clone(), tracker.clone(), start.clone());
            thread::spawn(move || {
                for call in 0..CALLS {
                    let id = w * CALLS + call;
                    let weight = 1 + random(3);
                    let since = t.wait_begins();
                    // One `Tracker` entry per seat: the limit check then
                    // bounds the seats held, not the holders.
                    let enter = |seat: Seat<'_, ShuttleLock>| {
                        assert_eq!(seat.weight(), weight, "a seat of the wrong weight");
                        let inside: Vec<_> = (0..weight).map(|_| t.enter(id, since)).collect();
                        yield_times(random(3));
                        drop(inside);
                        drop(seat);
                    };
                    let result = match random(5) {
                        0 => Some(b.try_acquire_many(weight).map(enter)),
                        1 => Some(shuttle::future::block_on(b.acquire_many(weight)).map(enter)),
                        2 => Some(
                            bulkhead_shuttle_tests::block(pin!(b.acquire_many(weight))).map(enter),
                        ),
                        k => {
                            poll_then_leave(pin!(b.acquire_many(weight)), &start, random(4), k == 3)
                                .map(|r| r.map(enter))
                        }
                    };
                    match result {
                        None | Some(Ok(())) => {}
                        Some(Err(
                            Error::Full { .. }
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
    assert_no_lost_seats(&b);
    b.close();
    assert_no_lost_seats(&b);
}

in_every_mode!(
    weighted_workload: fifo_weighted_workload,
    barging_weighted_workload,
    bounded_weighted_workload
);

/// A waiter for 3 at the head of a FIFO line while lighter ones queue
/// behind it, and the limit shrinks to 2 (below its weight) while seats
/// come back one by one: the head is refused with `WeightAboveLimit`, and
/// the seats kept for it go to the waiters behind (no seat lost). In
/// newest-first order with a queue limit, the later arrivals drop the
/// oldest instead.
fn a_shrink_below_the_head(order: QueueOrder) {
    let b = with_config(Config::new("shuttle", 3).max_waiting(3).queue_order(order));
    let tracker = Tracker::new(3);
    let held: Vec<_> = (0..3)
        .map(|_| OwnedSeat::try_acquire(b.clone()).unwrap())
        .collect();
    let heavy = {
        let b = b.clone();
        thread::spawn(move || match shuttle::future::block_on(b.acquire_many(3)) {
            Ok(seat) => drop(seat),
            Err(Error::WeightAboveLimit { weight: 3, .. } | Error::QueueFull { .. }) => {}
            Err(e) => panic!("the heavy waiter: {e:?}"),
        })
    };
    let light: Vec<_> = (0..3)
        .map(|i| {
            let (b, t) = (b.clone(), tracker.clone());
            thread::spawn(move || {
                yield_times(random(3));
                let since = t.wait_begins();
                match bulkhead_shuttle_tests::block(pin!(b.acquire())) {
                    Ok(seat) => {
                        let inside = t.enter(i, since);
                        yield_times(random(2));
                        drop(inside);
                        drop(seat);
                    }
                    Err(Error::QueueFull { .. }) => {}
                    Err(e) => panic!("light waiter {i}: {e:?}"),
                }
            })
        })
        .collect();
    let releaser = thread::spawn(move || {
        for seat in held {
            yield_times(random(3));
            drop(seat);
        }
    });
    yield_times(random(4));
    tracker.resize(&b, 2);
    releaser.join().unwrap();
    heavy.join().unwrap();
    for l in light {
        l.join().unwrap();
    }
    assert_no_lost_seats(&b);
}

#[test]
fn fifo_a_shrink_below_the_head() {
    check(|| a_shrink_below_the_head(QueueOrder::Fifo));
}

#[test]
fn lifo_a_shrink_below_the_head() {
    check(|| a_shrink_below_the_head(QueueOrder::Lifo));
}
