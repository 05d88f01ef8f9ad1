//! Bounded waits for a partition's seat through embassy-time, on its std
//! driver.

#![cfg(all(feature = "partitions", feature = "time"))]

mod support;

use std::pin::pin;
use std::task::Poll;
use std::thread;

use bulkhead_embassy::partition::{Amount, PartitionConfig, PartitionId};
use bulkhead_embassy::raw::CriticalSectionRawMutex;
use bulkhead_embassy::{EmbassyAcquirePartition, Error, PartitionSeat, Partitioned};
use embassy_time::{Duration, Instant};
use support::{block_on, poll_once};

type Cs = CriticalSectionRawMutex;

/// Four seats: `isr` (share 2, priority 1) and `background` (share 2,
/// borrows up to the whole compartment).
fn compartment() -> (Partitioned<Cs>, PartitionId, PartitionId) {
    let p: Partitioned<Cs> = Partitioned::new(
        "bus",
        4,
        &[
            PartitionConfig::new("isr", Amount::Seats(2)).priority(1),
            PartitionConfig::new("background", Amount::Seats(2)),
        ],
    )
    .unwrap();
    let (isr, background) = (p.id("isr").unwrap(), p.id("background").unwrap());
    (p, isr, background)
}

/// `(active, borrowed, lent, waiting, rejected, timed_out)` of `id`.
fn counts(p: &Partitioned<Cs>, id: PartitionId) -> (usize, usize, usize, usize, usize, usize) {
    let s = p.partition_state(id).unwrap();
    (
        s.active,
        s.borrowed,
        s.lent,
        s.waiting,
        s.rejected,
        s.timed_out,
    )
}

/// All four seats, taken by `background`: two of its own, two borrowed.
fn flood(p: &Partitioned<Cs>, background: PartitionId) -> Vec<PartitionSeat<'_, Cs>> {
    (0..4).map(|_| p.try_acquire(background).unwrap()).collect()
}

#[test]
fn zero_budget_fails_fast_with_partition_full() {
    let (p, isr, background) = compartment();
    let _seats = flood(&p, background);
    let err = block_on(p.acquire_within(isr, Duration::from_ticks(0))).unwrap_err();
    assert!(matches!(
        &err,
        Error::PartitionFull { partition, active: 0, share: 2, .. } if partition == "isr"
    ));
    assert_eq!(counts(&p, isr), (0, 0, 2, 0, 1, 0));
}

#[test]
fn zero_budget_takes_a_free_seat() {
    let (p, isr, _) = compartment();
    let seat = block_on(p.acquire_within(isr, Duration::from_ticks(0))).unwrap();
    assert_eq!(seat.partition(), isr);
    assert_eq!(counts(&p, isr).0, 1);
    drop(seat);
    assert_eq!(counts(&p, isr).0, 0);
}

#[test]
fn past_deadline_fails_fast() {
    let (p, isr, background) = compartment();
    let _seats = flood(&p, background);
    let err = block_on(p.acquire_until(isr, Instant::from_ticks(0))).unwrap_err();
    assert!(matches!(err, Error::PartitionFull { .. }));
    assert_eq!(counts(&p, isr), (0, 0, 2, 0, 1, 0));
}

#[test]
fn budget_runs_out_and_counts_in_the_partition() {
    let (p, isr, background) = compartment();
    let _seats = flood(&p, background);
    let start = Instant::now();
    let err = block_on(p.acquire_within(isr, Duration::from_millis(10))).unwrap_err();
    assert!(start.elapsed() >= Duration::from_millis(10));
    assert!(
        matches!(&err, Error::Timeout { budget, .. } if *budget == core::time::Duration::from_millis(10)),
        "{err}"
    );
    // The partition is named where names can be made at run time (core's
    // `alloc`, on when a std crate shares the build).
    assert!(matches!(err.name().as_str(), "bus" | "bus/isr"), "{err}");
    assert_eq!(counts(&p, isr), (0, 0, 2, 0, 0, 1));
    assert_eq!(counts(&p, background).5, 0);
}

#[test]
fn a_freed_seat_goes_to_the_lender_before_the_borrower() {
    let (p, isr, background) = compartment();
    let mut seats = flood(&p, background);
    // The background waiter queues first, the isr waiter after it.
    let mut bg_wait = pin!(p.acquire_within(background, Duration::from_secs(5)));
    let mut isr_wait = pin!(p.acquire_until(isr, Instant::now() + Duration::from_secs(5)));
    assert!(poll_once(bg_wait.as_mut()).is_pending());
    assert!(poll_once(isr_wait.as_mut()).is_pending());
    assert_eq!(counts(&p, isr), (0, 0, 2, 1, 0, 0));
    assert_eq!(counts(&p, background), (4, 2, 0, 1, 0, 0));

    drop(seats.pop());
    // isr is below its share: the seat is its, though background queued first.
    let Poll::Ready(Ok(isr_seat)) = poll_once(isr_wait.as_mut()) else {
        panic!("the isr waiter did not get the freed seat");
    };
    assert!(poll_once(bg_wait.as_mut()).is_pending());
    assert_eq!(counts(&p, isr), (1, 0, 1, 0, 0, 0));
    assert_eq!(counts(&p, background), (3, 1, 0, 1, 0, 0));

    drop(isr_seat);
    // isr is idle again: background borrows the seat it left.
    let Poll::Ready(Ok(bg_seat)) = poll_once(bg_wait.as_mut()) else {
        panic!("the background waiter did not borrow the idle seat");
    };
    assert_eq!(bg_seat.partition(), background);
    assert_eq!(counts(&p, background), (4, 2, 0, 0, 0, 0));
}

#[test]
fn a_seat_given_back_on_another_thread_wakes_the_waiter() {
    let (p, isr, background) = compartment();
    let seats = flood(&p, background);
    thread::scope(|s| {
        s.spawn(move || {
            thread::sleep(std::time::Duration::from_millis(20));
            drop(seats);
        });
        let seat = block_on(p.acquire_within(isr, Duration::from_secs(5))).unwrap();
        assert_eq!(seat.partition(), isr);
    });
    assert_eq!(counts(&p, isr), (0, 0, 0, 0, 0, 0));
}

#[test]
fn dropping_a_wait_leaves_the_line() {
    let (p, isr, background) = compartment();
    let mut seats = flood(&p, background);
    {
        let mut wait = pin!(p.acquire_within(isr, Duration::from_secs(5)));
        assert!(poll_once(wait.as_mut()).is_pending());
        assert_eq!(counts(&p, isr).3, 1);
    }
    assert_eq!(counts(&p, isr).3, 0);
    drop(seats.pop());
    assert_eq!(p.state().active, 3, "no seat went to the departed waiter");
}

#[test]
fn an_id_of_another_compartment_is_refused() {
    let (p, _, _) = compartment();
    let (_, other_isr, _) = compartment();
    let err = block_on(p.acquire_within(other_isr, Duration::from_millis(5))).unwrap_err();
    assert!(matches!(err, Error::ForeignPartition { .. }));
}

#[test]
fn debug_names_the_future_and_the_partition() {
    let (p, isr, _) = compartment();
    let wait = p.acquire_within(isr, Duration::from_ticks(0));
    let text = format!("{wait:?}");
    assert!(text.starts_with("EmbassyAcquirePartitionWithin"), "{text}");
    assert!(text.contains("\"isr\""), "{text}");
    assert!(text.contains("fail fast"), "{text}");
}

#[cfg(feature = "weights")]
mod weighted {
    use super::*;

    #[test]
    fn many_waits_for_all_its_seats_together() {
        let (p, isr, background) = compartment();
        let mut seats = flood(&p, background);
        let mut wait = pin!(p.acquire_many_within(isr, 2, Duration::from_secs(5)));
        assert!(poll_once(wait.as_mut()).is_pending());
        drop(seats.pop());
        assert!(poll_once(wait.as_mut()).is_pending(), "one seat is not two");
        drop(seats.pop());
        let Poll::Ready(Ok(seat)) = poll_once(wait.as_mut()) else {
            panic!("the weight-2 waiter did not get both freed seats");
        };
        assert_eq!(seat.weight(), 2);
        assert_eq!(counts(&p, isr), (2, 0, 0, 0, 0, 0));
    }

    #[test]
    fn many_until_a_past_deadline_fails_fast() {
        let (p, isr, background) = compartment();
        let _seats = flood(&p, background);
        let err = block_on(p.acquire_many_until(isr, 2, Instant::from_ticks(0))).unwrap_err();
        assert!(matches!(err, Error::PartitionFull { .. }));
        let err = block_on(p.acquire_many_within(isr, 0, Duration::from_millis(5))).unwrap_err();
        assert!(matches!(err, Error::ZeroWeight { .. }));
        let err = block_on(p.acquire_many_within(isr, 5, Duration::from_millis(5))).unwrap_err();
        assert!(matches!(err, Error::WeightAboveLimit { .. }));
    }

    #[test]
    fn many_debug_names_its_future() {
        let (p, isr, _) = compartment();
        let wait = p.acquire_many_within(isr, 2, Duration::from_ticks(0));
        let text = format!("{wait:?}");
        assert!(
            text.starts_with("EmbassyAcquirePartitionManyWithin"),
            "{text}"
        );
        assert!(text.contains("weight: 2"), "{text}");
    }
}
