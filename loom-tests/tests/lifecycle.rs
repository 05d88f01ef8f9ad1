//! Close, live reconfiguration and the queue limit, racing seat traffic.
#![cfg(bulkhead_loom)]

use bulkhead_core::{Admission, Config, Error, OwnedSeat};
use bulkhead_loom_tests::{
    Inside, acquire_async, acquire_blocking, assert_quiescent, fifo, granted, queued, with_config,
};
use loom::thread;

/// Close races a waiter and a release. The waiter ends with a seat or with
/// `Closed`; nothing is stranded or leaked.
#[test]
fn close_racing_acquire_and_release() {
    loom::model(|| {
        let b = fifo(1);
        let seat = b.try_acquire().unwrap();
        let waiter = {
            let b = b.clone();
            thread::spawn(move || match acquire_async(&b) {
                Ok(seat) => drop(seat),
                Err(e) => assert_eq!(
                    e,
                    Error::Closed {
                        name: "loom".into()
                    }
                ),
            })
        };
        let closer = {
            let b = b.clone();
            thread::spawn(move || b.close())
        };
        drop(seat);
        waiter.join().unwrap();
        closer.join().unwrap();
        assert!(b.try_acquire().is_err());
        assert_quiescent(&b);
    });
}

/// Growing and shrinking race a release and a waiter. The number inside
/// never exceeds the largest limit in force, and the waiter is admitted
/// once the limit allows.
#[test]
fn set_max_concurrent_racing_release_and_acquire() {
    loom::model(|| {
        let b = fifo(1);
        let inside = Inside::new();
        let seat = inside.hold(2, b.try_acquire().unwrap());
        let waiter = {
            let (b, inside) = (b.clone(), inside.clone());
            thread::spawn(move || drop(inside.hold(2, acquire_blocking(&b).unwrap())))
        };
        let resizer = {
            let b = b.clone();
            thread::spawn(move || {
                b.set_max_concurrent(0).unwrap(); // pause
                b.set_max_concurrent(2).unwrap(); // grow: wakes the waiter
            })
        };
        drop(seat);
        waiter.join().unwrap();
        resizer.join().unwrap();
        assert_eq!(b.state().max_concurrent, 2);
        assert_quiescent(&b);
    });
}

/// A shrink leaves a debt while two releases land; the debt is paid
/// exactly once (bug class 10 in docs/bug-classes.md).
#[test]
fn shrink_debt_with_concurrent_releases() {
    loom::model(|| {
        let b = fifo(2);
        let s1 = OwnedSeat::try_acquire(b.clone()).unwrap();
        let s2 = b.try_acquire().unwrap();
        let shrinker = {
            let b = b.clone();
            thread::spawn(move || assert_eq!(b.set_max_concurrent(1), Ok(2)))
        };
        let releaser = thread::spawn(move || drop(s1));
        drop(s2);
        shrinker.join().unwrap();
        releaser.join().unwrap();
        let s = b.state();
        assert_eq!((s.max_concurrent, s.active, s.available()), (1, 0, 1));
        let only = b.try_acquire().unwrap();
        assert!(b.try_acquire().is_err(), "regrowth over-admitted");
        drop(only);
    });
}

/// The queue limit at its boundary: with one seat held and room for one
/// waiter, of two arrivals at most one is turned away, and every turned
/// away caller is counted.
#[test]
fn queue_limit_at_its_boundary() {
    loom::model(|| {
        let b = with_config(Config::new("loom", 1).max_waiting(1));
        let seat = b.try_acquire().unwrap();
        let arrivals: Vec<_> = (0..2)
            .map(|_| {
                let b = b.clone();
                thread::spawn(move || match acquire_async(&b) {
                    Ok(seat) => {
                        drop(seat);
                        false
                    }
                    Err(Error::QueueFull { max_waiting: 1, .. }) => true,
                    Err(e) => panic!("unexpected {e}"),
                })
            })
            .collect();
        drop(seat);
        let turned_away: usize = arrivals
            .into_iter()
            .map(|t| usize::from(t.join().unwrap()))
            .sum();
        assert!(turned_away <= 1);
        assert_eq!(b.state().rejected, turned_away);
        assert_quiescent(&b);
    });
}

/// Barging with a queue limit: the one place in the queue is taken (by a
/// waiter polled on the main thread), so an arrival that finds no seat is
/// turned away at once, and one that finds the seat a racing release just
/// freed barges in. Either way the rejection is counted exactly when it
/// happens, and the queued waiter is still admitted afterwards.
#[test]
fn barging_queue_limit_at_its_boundary() {
    loom::model(|| {
        let b = with_config(
            Config::new("loom", 1)
                .admission(Admission::Barging)
                .max_waiting(1),
        );
        let seat = OwnedSeat::try_acquire(b.clone()).unwrap();
        let first = queued(&b);
        let arrival = {
            let b = b.clone();
            thread::spawn(move || match acquire_async(&b) {
                Ok(seat) => {
                    drop(seat);
                    false
                }
                Err(Error::QueueFull { max_waiting: 1, .. }) => true,
                Err(e) => panic!("unexpected {e}"),
            })
        };
        let releaser = thread::spawn(move || drop(seat));
        releaser.join().unwrap();
        let turned_away = arrival.join().unwrap();
        assert_eq!(b.state().rejected, usize::from(turned_away));
        drop(granted(first));
        assert_quiescent(&b);
    });
}

/// Barging: a release races `close` while a waiter is queued. The release
/// owes a wake-up that close must cancel, or the release would loop
/// forever asking for another drain (found by the proptest model).
#[test]
fn barging_release_racing_close() {
    loom::model(|| {
        let b = bulkhead_loom_tests::barging(1);
        let seat = OwnedSeat::try_acquire(b.clone()).unwrap();
        let waiter = {
            let b = b.clone();
            thread::spawn(move || match acquire_async(&b) {
                Ok(seat) => drop(seat),
                Err(e) => assert_eq!(
                    e,
                    Error::Closed {
                        name: "loom".into()
                    }
                ),
            })
        };
        let releaser = thread::spawn(move || drop(seat));
        b.close();
        releaser.join().unwrap();
        waiter.join().unwrap();
        assert_quiescent(&b);
    });
}
