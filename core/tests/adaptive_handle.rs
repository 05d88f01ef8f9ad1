//! An adaptive compartment behind an `Arc` is a [`Handle`]: owned seats and
//! owned waits over it need no wrapper type, and count against its
//! compartment. Small enough for miri.

use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bulkhead_core::limit::{Adaptive, Aimd, AimdParams};
use bulkhead_core::{Bulkhead, CsLock, Handle, OwnedSeat};

type Api = Adaptive<CsLock, Aimd, fn() -> u64>;

fn zero() -> u64 {
    0
}

fn api(seats: usize) -> Arc<Api> {
    let aimd = Aimd::new(AimdParams {
        initial: seats,
        min: 1,
        max: 8,
        ..AimdParams::DEFAULT
    })
    .unwrap();
    Arc::new(Adaptive::new(
        Bulkhead::new("api", seats).unwrap(),
        aimd,
        zero as fn() -> u64,
    ))
}

#[test]
fn an_owned_wait_over_an_adaptive_compartment_is_handed_the_seat() {
    let api = api(1);
    let held = OwnedSeat::try_acquire(Arc::clone(&api)).unwrap();
    assert!(std::ptr::eq(held.handle().bulkhead(), api.bulkhead()));
    let mut wait = pin!(OwnedSeat::acquire(Arc::clone(&api)));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(wait.as_mut().poll(&mut cx).is_pending());
    assert_eq!(api.bulkhead().state().waiting, 1);
    drop(held); // handed to the waiter
    let Poll::Ready(Ok(seat)) = wait.as_mut().poll(&mut cx) else {
        panic!("the freed seat goes to the owned wait")
    };
    assert_eq!(api.bulkhead().state().active, 1);
    drop(seat);
    let state = api.bulkhead().state();
    assert_eq!((state.active, state.waiting), (0, 0));
    // No sample was recorded: an owned seat is not an adaptive seat.
    assert_eq!(api.limit(), 1);
}
