//! Partitioned compartments (`bulkhead_core::partition`): the rules of
//! `core/src/partition/table.rs` under races between releases, newcomers,
//! resizes, `close` and waiters that give up.
//!
//! Every decision is made under the compartment's lock, so the races here
//! are about *which* section runs first: a release against a newcomer's
//! admission, a release against a resize, a release against `close`, a
//! grant against the waiter's own drop. Each model asserts the outcome
//! every order must give (who holds seats, who still waits) and, through
//! counting wakers checked after the threads are joined, that no waiter
//! owed a verdict was left unwoken. Each ends by giving everything back and
//! checking that every partition's counts return to zero.
//!
//! The two partitions are `live` (the lender, whose seats a borrower takes
//! while it is idle) and `batch` (the borrower); which is declared first
//! is chosen per model so that serving in declaration order, or the first
//! eligible head, would pick the wrong one.
#![cfg(bulkhead_loom)]

use std::time::Duration;

use bulkhead_core::Error;
use bulkhead_core::partition::{
    Amount, PartitionConfig, PartitionId, PartitionSeat, PartitionState,
};
use bulkhead_loom_tests::{
    LoomPartitioned, partitioned, queued_counting, still_waiting, woken_then_done,
};
use loom::sync::Arc;
use loom::sync::atomic::Ordering::SeqCst;
use loom::thread;

type Seat = PartitionSeat<Arc<LoomPartitioned>>;

/// The ids of `live` and `batch`.
fn ids(p: &LoomPartitioned) -> (PartitionId, PartitionId) {
    (p.id("live").unwrap(), p.id("batch").unwrap())
}

/// `n` seats of partition `id`, taken at once; each must be admitted.
fn take(p: &Arc<LoomPartitioned>, id: PartitionId, n: usize) -> Vec<Seat> {
    (0..n)
        .map(|_| PartitionSeat::try_acquire(p.clone(), id).unwrap())
        .collect()
}

fn state(p: &LoomPartitioned, id: PartitionId) -> PartitionState {
    p.partition_state(id).unwrap()
}

/// Nobody holds or waits for a seat of any partition, and the compartment
/// agrees; an open compartment admits a fresh caller of each.
fn assert_quiescent(p: &LoomPartitioned) {
    let s = p.state();
    assert_eq!((s.active, s.waiting), (0, 0), "not quiescent: {s:?}");
    for (id, _) in p.partitions() {
        let ps = state(p, id);
        assert_eq!((ps.active, ps.waiting, ps.lent), (0, 0, 0), "{ps:?}");
        if !s.closed {
            assert!(p.try_acquire(id).is_ok(), "a free seat was refused: {ps:?}");
        }
    }
}

/// (a) The lender `live` waits for 2 seats of its share while the borrower
/// `batch` holds all 4. A batch seat is released while a batch newcomer
/// tries: whether it runs before the release (no free seat) or after (one
/// free seat, kept for live, rule 5: live's head ranks higher), the
/// newcomer is refused; the next release completes live's 2.
#[test]
fn a_borrower_newcomer_racing_a_release_takes_no_seat_kept_for_the_lender() {
    loom::model(|| {
        let p = partitioned(
            4,
            &[
                PartitionConfig::new("live", Amount::Seats(2)),
                PartitionConfig::new("batch", Amount::Seats(2)),
            ],
        );
        let (live, batch) = ids(&p);
        let mut held = take(&p, batch, 4);
        let (lw, lw_woken) =
            queued_counting(PartitionSeat::acquire_many(p.clone(), live, 2), "live");
        let released = held.pop().unwrap();
        let releaser = thread::spawn(move || drop(released));
        let newcomer = {
            let p = p.clone();
            thread::spawn(move || PartitionSeat::try_acquire(p, batch).map(drop))
        };
        releaser.join().unwrap();
        let newcomer = newcomer.join().unwrap();
        assert!(
            matches!(newcomer, Err(Error::PartitionFull { .. })),
            "the batch newcomer took a seat kept for live: {newcomer:?}"
        );
        assert_eq!(state(&p, batch).active, 3);
        drop(held.pop());
        let seat = woken_then_done(lw, &lw_woken, "live's waiter for 2").unwrap();
        assert_eq!(state(&p, live).active, 2);
        drop((seat, held));
        assert_quiescent(&p);
    });
}

/// (b) `batch` (declared first) waits longer, for a seat beyond its
/// share; `live`, below its share, waits for 2. Two seats come back on two
/// threads, in either order: the first is kept for live (the best-ranked
/// eligible head, rule 4) even when it alone would fit batch's waiter, and
/// live gets both; batch's waiter still waits.
#[test]
fn a_release_goes_to_the_lender_not_to_the_borrower_waiting_longer() {
    loom::model(|| {
        let p = partitioned(
            4,
            &[
                PartitionConfig::new("batch", Amount::Seats(2)),
                PartitionConfig::new("live", Amount::Seats(2)),
            ],
        );
        let (live, batch) = ids(&p);
        let mut b = take(&p, batch, 3);
        let mut l = take(&p, live, 1);
        let (mut bw, bw_woken) = queued_counting(PartitionSeat::acquire(p.clone(), batch), "batch");
        let (lw, lw_woken) =
            queued_counting(PartitionSeat::acquire_many(p.clone(), live, 2), "live");
        let (b1, l1) = (b.pop().unwrap(), l.pop().unwrap());
        let t1 = thread::spawn(move || drop(b1));
        let t2 = thread::spawn(move || drop(l1));
        t1.join().unwrap();
        t2.join().unwrap();
        let seat = woken_then_done(lw, &lw_woken, "live's waiter for 2").unwrap();
        still_waiting(&mut bw, &bw_woken, "batch's waiter, beyond its share");
        assert_eq!((state(&p, live).active, state(&p, batch).active), (2, 2));
        // Live's seats back: now batch's waiter fits.
        drop(seat);
        let seat = woken_then_done(bw, &bw_woken, "batch's waiter").unwrap();
        drop((seat, b));
        assert_quiescent(&p);
    });
}

/// (c) Percentage shares of 50 % each, limit 2, `batch` holding both
/// seats; a waiter in each line. The limit grows to 4 while a batch seat is
/// released: in either order live's waiter gets a seat of its share and
/// batch's waiter a seat (within its new share of 2, or borrowed), and
/// both are woken.
#[test]
fn a_grow_racing_a_release_moves_percentage_shares_and_serves_both_lines() {
    loom::model(|| {
        let p = partitioned(
            2,
            &[
                PartitionConfig::new("live", Amount::Percent(50)),
                PartitionConfig::new("batch", Amount::Percent(50)),
            ],
        );
        let (live, batch) = ids(&p);
        let mut b = take(&p, batch, 2);
        let (lw, lw_woken) = queued_counting(PartitionSeat::acquire(p.clone(), live), "live");
        let (bw, bw_woken) = queued_counting(PartitionSeat::acquire(p.clone(), batch), "batch");
        let b1 = b.pop().unwrap();
        let releaser = thread::spawn(move || drop(b1));
        let resizer = {
            let p = p.clone();
            thread::spawn(move || assert_eq!(p.set_max_concurrent(4), Ok(2)))
        };
        releaser.join().unwrap();
        resizer.join().unwrap();
        // The wake-ups first: any later section (even a read of the state)
        // serves, and would hide a resize that did not.
        let ls = woken_then_done(lw, &lw_woken, "live's waiter").unwrap();
        let bs = woken_then_done(bw, &bw_woken, "batch's waiter").unwrap();
        assert_eq!((state(&p, live).share, state(&p, batch).share), (2, 2));
        assert_eq!(p.state().active, 3);
        drop((ls, bs, b));
        assert_quiescent(&p);
    });
}

/// (c) A shrink racing a release. `live` has a share of 2 seats and waits
/// for both; `batch` (50 %) holds 3 of 4 and has a waiter of its own. The
/// limit shrinks to 3 while a batch seat comes back. Released first, the
/// seat completes live's 2 at the old limit; shrunk first, the freed seat
/// is not enough for live at the new limit and is kept for it, although
/// batch's waiter would fit. Either way batch's waiter gets nothing before
/// live, and the next release completes live's wait.
#[test]
fn a_shrink_racing_a_release_keeps_the_freed_seat_for_the_lender() {
    loom::model(|| {
        let p = partitioned(
            4,
            &[
                PartitionConfig::new("batch", Amount::Percent(50)),
                PartitionConfig::new("live", Amount::Seats(2)),
            ],
        );
        let (live, batch) = ids(&p);
        let mut b = take(&p, batch, 3);
        let (mut lw, lw_woken) =
            queued_counting(PartitionSeat::acquire_many(p.clone(), live, 2), "live");
        let (mut bw, bw_woken) = queued_counting(PartitionSeat::acquire(p.clone(), batch), "batch");
        let b1 = b.pop().unwrap();
        let releaser = thread::spawn(move || drop(b1));
        let resizer = {
            let p = p.clone();
            thread::spawn(move || assert_eq!(p.set_max_concurrent(3), Ok(4)))
        };
        releaser.join().unwrap();
        resizer.join().unwrap();
        // Read before any section serves again: was live served already?
        let live_served = lw_woken.0.load(SeqCst) > 0;
        still_waiting(&mut bw, &bw_woken, "batch's waiter, while live waits");
        let live_seat = if live_served {
            // Released first: live served at the old limit.
            assert_eq!(state(&p, live).active, 2);
            woken_then_done(lw, &lw_woken, "live's waiter").unwrap()
        } else {
            // Shrunk first: the freed seat is kept for live.
            still_waiting(&mut lw, &lw_woken, "live's waiter for 2 with 2 held of 3");
            assert_eq!(p.state().active, 2);
            drop(b.pop());
            woken_then_done(lw, &lw_woken, "live's waiter").unwrap()
        };
        drop(live_seat);
        let seat = woken_then_done(bw, &bw_woken, "batch's waiter").unwrap();
        drop((seat, b));
        assert_quiescent(&p);
    });
}

/// (d) `close` racing a release while each line has a waiter and each
/// partition holds its one-seat share. Released first, the live seat goes
/// to live's waiter; batch's waiter can only ever get `Closed` (no seat is
/// freed for it before the close). Every waiter is woken with a verdict,
/// and the seats given back after the close (batch's, and live's if its
/// waiter got one) are all counted back: nothing is held at the end.
#[test]
fn close_racing_a_release_gives_every_waiter_a_verdict_and_loses_no_seat() {
    loom::model(|| {
        let p = partitioned(
            2,
            &[
                PartitionConfig::new("batch", Amount::Seats(1)),
                PartitionConfig::new("live", Amount::Seats(1)),
            ],
        );
        let (live, batch) = ids(&p);
        let mut l = take(&p, live, 1);
        let b = take(&p, batch, 1);
        let (lw, lw_woken) = queued_counting(PartitionSeat::acquire(p.clone(), live), "live");
        let (bw, bw_woken) = queued_counting(PartitionSeat::acquire(p.clone(), batch), "batch");
        let closer = {
            let p = p.clone();
            thread::spawn(move || p.close())
        };
        let l1 = l.pop().unwrap();
        let releaser = thread::spawn(move || drop(l1));
        closer.join().unwrap();
        releaser.join().unwrap();
        match woken_then_done(lw, &lw_woken, "live's waiter") {
            Ok(seat) => drop(seat),
            Err(Error::Closed { .. }) => {}
            Err(e) => panic!("live's waiter: {e:?}"),
        }
        let verdict = woken_then_done(bw, &bw_woken, "batch's waiter");
        assert!(
            matches!(verdict, Err(Error::Closed { .. })),
            "batch's waiter: {verdict:?}"
        );
        drop(b);
        assert!(matches!(p.try_acquire(live), Err(Error::Closed { .. })));
        assert_quiescent(&p);
    });
}

/// (e) How the first batch waiter gives up while a live seat is released
/// (which grants it a seat of batch's share).
#[derive(Clone, Copy)]
enum GiveUp {
    /// Drops the future.
    Drop,
    /// Its wait budget runs out: `time_out`, dropping a seat it returns.
    TimeOut,
}

/// (e) Two batch waiters queue while `live` holds both seats. A live seat
/// is released (granting the first batch waiter, below its share) while
/// the first waiter gives up: a seat it was granted just before must pass
/// on to the second waiter, which is woken and served whatever the order.
fn a_waiter_giving_up_passes_on_the_seat_it_was_just_granted(how: GiveUp) {
    loom::model(move || {
        let p = partitioned(
            2,
            &[
                PartitionConfig::new("live", Amount::Seats(1)),
                PartitionConfig::new("batch", Amount::Seats(1)),
            ],
        );
        let (live, batch) = ids(&p);
        let mut l = take(&p, live, 2);
        let (first, _) = queued_counting(PartitionSeat::acquire(p.clone(), batch), "batch");
        let (second, second_woken) =
            queued_counting(PartitionSeat::acquire(p.clone(), batch), "batch");
        let l1 = l.pop().unwrap();
        let releaser = thread::spawn(move || drop(l1));
        let leaver = thread::spawn(move || match how {
            GiveUp::Drop => drop(first),
            GiveUp::TimeOut => {
                let mut first = first;
                match first.as_mut().time_out(Duration::from_millis(1)) {
                    Ok(seat) => drop(seat),
                    Err(Error::Timeout { .. }) => {}
                    Err(e) => panic!("the first waiter: {e:?}"),
                }
            }
        });
        releaser.join().unwrap();
        leaver.join().unwrap();
        let seat = woken_then_done(second, &second_woken, "the second batch waiter").unwrap();
        assert_eq!(state(&p, batch).active, 1);
        drop((seat, l));
        assert_quiescent(&p);
    });
}

#[test]
fn a_dropped_waiter_passes_on_the_seat_it_was_just_granted() {
    a_waiter_giving_up_passes_on_the_seat_it_was_just_granted(GiveUp::Drop);
}

#[test]
fn a_timed_out_waiter_passes_on_the_seat_it_was_just_granted() {
    a_waiter_giving_up_passes_on_the_seat_it_was_just_granted(GiveUp::TimeOut);
}
