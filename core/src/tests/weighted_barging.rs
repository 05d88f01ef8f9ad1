//! Barging with weighted waiters: who is woken when a seat comes back.

use std::boxed::Box;
use std::vec::Vec;

use super::{Task, with_config};
use crate::{Admission, Config};

/// `acquire_many`'s documentation says that in the barging modes a waiter
/// is woken when enough seats are free for its weight: a lighter waiter
/// behind a heavier one that does not fit is woken for a free seat it can
/// use. A waiter for 3 and a waiter for 1 wait; one seat comes back while
/// a seat of 2 stays held: the waiter for 1 is woken and takes it.
#[test]
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
    assert_eq!(
        heavy_task.wakes(),
        0,
        "the waiter for 3 cannot use one seat"
    );
    drop(two);
}

/// The same with the light waiter further back than one lock section
/// looks: a waiter for 3, then eight waiters for 2, then a waiter for 1;
/// one seat comes back while a seat of 2 stays held. The search for a
/// waiter that fits stops at the section's bound (rule 7) and records the
/// word as stuck (rule 10), so the waiter for 1 is not woken for that seat
/// (newcomers may still take it): the documented limit of the look-behind,
/// "among the waiters one section looks at". Every section that changes
/// the line drains again, so it is woken as soon as it comes within reach.
#[test]
fn barging_looks_behind_a_heavy_waiter_only_as_far_as_one_section_reaches() {
    let b = with_config(Config::new("gpu", 3).admission(Admission::Barging));
    let one = b.try_acquire().unwrap();
    let two = b.try_acquire_many(2).unwrap();
    let tasks: Vec<Task> = (0..10).map(|_| Task::new()).collect();
    let mut waiters: Vec<_> = [3, 2, 2, 2, 2, 2, 2, 2, 2, 1]
        .into_iter()
        .map(|weight| Box::pin(b.acquire_many(weight)))
        .collect();
    for (task, waiter) in tasks.iter().zip(&mut waiters) {
        assert!(task.poll(waiter.as_mut()).is_pending());
    }
    drop(one);
    assert_eq!(b.state().active, 2);
    assert_eq!(tasks[9].wakes(), 0, "beyond one section's look-behind");
    // The waiter for 3 leaves: the seat is looked for again, still out of
    // reach; then a waiter for 2 leaves, and the waiter for 1 is within
    // one section's reach.
    drop(waiters.remove(0));
    assert_eq!(
        tasks[9].wakes(),
        0,
        "still beyond one section's look-behind"
    );
    drop(waiters.remove(0));
    assert_eq!(tasks[9].wakes(), 1, "woken once it came within reach");
    assert!(tasks[9].poll(waiters[7].as_mut()).is_ready());
    drop(waiters);
    drop(two);
}
