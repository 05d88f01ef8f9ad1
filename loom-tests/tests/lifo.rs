//! Newest-first order (`QueueOrder::Lifo`): the newest waiter is served
//! first, and a full queue drops its oldest waiter to make room for the
//! newcomer (drop-oldest). Each model races the drop, or a change of the
//! order, against a release that hands a seat on.
#![cfg(bulkhead_loom)]

use bulkhead_core::{Config, Error, OwnedSeat, QueueOrder};
use bulkhead_loom_tests::{
    LoomBulkhead, assert_quiescent, queued_many, with_config, woken_then_done,
};
use loom::sync::Arc;
use loom::sync::atomic::Ordering::SeqCst;
use loom::thread;

fn lifo(max: usize, max_waiting: Option<usize>) -> Arc<LoomBulkhead> {
    let config = Config::new("loom", max).queue_order(QueueOrder::Lifo);
    with_config(match max_waiting {
        Some(n) => config.max_waiting(n),
        None => config,
    })
}

/// Drop-oldest racing a grant. Queue limit 1: the oldest waiter (for
/// `weight` seats, `weight` being 1 or 2 of `weight` seats in all) waits
/// while a newcomer for 1 arrives, and the holder of the last seat it
/// needs gives it back. Either the release hands the oldest its seats
/// first (and the newcomer waits for them), or the newcomer drops it
/// (`QueueFull`, counted once) and takes its place, or a seat. Nobody is
/// left waiting and every seat comes back. A drop that empties the queue
/// clears `WAITERS`; the newcomer must publish it again before it links,
/// or the release skips the lock and the newcomer sleeps next to a free
/// seat.
#[test]
fn drop_oldest_racing_a_grant() {
    for weight in [1, 2] {
        loom::model(move || {
            let b = lifo(weight, Some(1));
            // All seats but one are free and kept for the oldest.
            let mut held = OwnedSeat::try_acquire_many(b.clone(), weight).unwrap();
            if weight > 1 {
                drop(held.split(weight - 1).unwrap());
            }
            let (oldest, _) = queued_many(&b, weight);
            let oldest = thread::spawn(move || match loom::future::block_on(oldest) {
                Ok(seat) => {
                    assert_eq!(seat.weight(), weight);
                    false
                }
                Err(Error::QueueFull { max_waiting, .. }) => {
                    assert_eq!(max_waiting, 1);
                    true
                }
                Err(e) => panic!("the oldest waiter: {e}"),
            });
            let newcomer = {
                let b = b.clone();
                thread::spawn(move || {
                    drop(loom::future::block_on(b.acquire()).unwrap());
                })
            };
            drop(held);
            let dropped = oldest.join().unwrap();
            newcomer.join().unwrap();
            assert_eq!(
                b.state().rejected,
                usize::from(dropped),
                "a dropped waiter is counted once"
            );
            assert_quiescent(&b);
        });
    }
}

/// Newest first, and the order changed while a release hands a seat on:
/// two waiters queue in newest-first order; a release races
/// `set_queue_order(Fifo)`, which changes where newcomers join but keeps
/// the waiters in their places. The newer waiter gets the seat, the older
/// one stays queued (not woken), and gets the seat when the newer gives it
/// back.
#[test]
fn the_newest_is_served_first_while_the_order_flips() {
    loom::model(|| {
        let b = lifo(1, None);
        let held = OwnedSeat::try_acquire(b.clone()).unwrap();
        let (older, older_woken) = queued_many(&b, 1);
        let (newer, newer_woken) = queued_many(&b, 1);
        let releaser = thread::spawn(move || drop(held));
        assert_eq!(b.set_queue_order(QueueOrder::Fifo), QueueOrder::Lifo);
        releaser.join().unwrap();
        assert_eq!(
            older_woken.0.load(SeqCst),
            0,
            "the older waiter was served before the newer one"
        );
        drop(woken_then_done(newer, &newer_woken, "the newer waiter").unwrap());
        drop(woken_then_done(older, &older_woken, "the older waiter").unwrap());
        assert_quiescent(&b);
    });
}
