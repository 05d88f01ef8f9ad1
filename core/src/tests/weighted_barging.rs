//! Barging with weighted waiters: who is woken when a seat comes back.

use std::boxed::Box;

use super::{Task, with_config};
use crate::{Admission, Config};

/// `acquire_many`'s documentation says that in the barging modes "a
/// waiter is woken when enough seats are free for its weight". The
/// barging drain stops at the first waiter not yet woken whose weight does
/// not fit the uncovered seats, so a lighter waiter behind it is not
/// woken, however long the seat stays free (only newcomers take it).
/// Here a waiter for 3 and a waiter for 1 wait; one seat comes back while
/// a seat of 2 is held for as long as its holder likes: the waiter for 1
/// is never woken next to the free seat.
///
/// Ignored: either the documentation or `drain_barging` should change
/// (the lead's call; see the report). It fails today.
#[test]
#[ignore = "documented barging wake-up for weighted waiters not implemented: the drain stops at a heavier waiter"]
fn barging_wakes_a_light_waiter_behind_a_heavy_one_when_its_seat_is_free() {
    let b = with_config(Config::new("gpu", 3).admission(Admission::Barging));
    let one = b.try_acquire().unwrap();
    let two = b.try_acquire_many(2).unwrap();
    let (heavy_task, light_task) = (Task::new(), Task::new());
    let mut heavy = Box::pin(b.acquire_many(3));
    let mut light = Box::pin(b.acquire_many(1));
    assert!(heavy_task.poll(heavy.as_mut()).is_pending());
    assert!(light_task.poll(light.as_mut()).is_pending());
    drop(one);
    // One seat free, enough for the waiter for 1.
    assert_eq!(b.state().active, 2);
    assert_eq!(
        light_task.wakes(),
        1,
        "the waiter for 1 was not woken, with a seat free for it"
    );
    assert!(light_task.poll(light.as_mut()).is_ready());
    drop(two);
}
