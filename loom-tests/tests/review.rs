//! Models added by an independent review of the engine after issues 12
//! and 13.
#![cfg(bulkhead_loom)]

use core::pin::Pin;
use core::task::{Context, Poll, Waker};

use bulkhead_core::{Error, OwnedSeat};
use bulkhead_loom_tests::{LoomBulkhead, assert_quiescent, barging, queued};
use loom::thread;

/// Barging: more notified waiters than a batch (loom's `BATCH` is 2), whose
/// wakers were taken when they were notified, are closed while a release
/// races the close's re-drain. A close drains them a batch of nodes per
/// section (their verdicts wake nobody, so a batch of wakers never fills);
/// every one must still end `Closed` and the compartment quiescent.
#[test]
fn barging_close_of_notified_waiters_beyond_a_batch_races_a_release() {
    loom::model(|| {
        let b = barging(1);
        let held = OwnedSeat::try_acquire(b.clone()).unwrap();
        let waiters: Vec<_> = (0..3).map(|_| queued(&b)).collect();
        b.set_max_concurrent(4).unwrap(); // notifies all three
        let releaser = thread::spawn(move || drop(held));
        b.close();
        releaser.join().unwrap();
        all_closed(&b, waiters);
    });
}

/// The same with the owned wait, and a notified waiter re-polling (it may
/// take a free seat, or lose to the close) while the close drains the
/// others a batch of nodes at a time and a release races both.
#[test]
fn barging_close_of_notified_owned_waiters_races_a_re_poll_and_a_release() {
    loom::model(|| {
        let b = barging(1);
        let held = OwnedSeat::try_acquire(b.clone()).unwrap();
        let mut waiters: Vec<_> = (0..3)
            .map(|_| {
                let mut w = Box::pin(OwnedSeat::acquire(b.clone()));
                let polled = w.as_mut().poll(&mut Context::from_waker(Waker::noop()));
                assert!(polled.is_pending());
                w
            })
            .collect();
        b.set_max_concurrent(4).unwrap(); // notifies all three
        let mut first = waiters.remove(0);
        let re_poll = thread::spawn(move || {
            match first.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
                Poll::Ready(Ok(seat)) => drop(seat),
                Poll::Ready(Err(e)) => assert!(matches!(e, Error::Closed { .. })),
                Poll::Pending => panic!("a notified waiter with free seats stayed pending"),
            }
        });
        let releaser = thread::spawn(move || drop(held));
        b.close();
        releaser.join().unwrap();
        re_poll.join().unwrap();
        all_closed(&b, waiters);
    });
}

/// Polls each waiter, which must end `Closed`, then checks that the
/// compartment is quiescent.
fn all_closed<F: Future<Output = Result<S, Error>>, S>(
    b: &LoomBulkhead,
    waiters: Vec<Pin<Box<F>>>,
) {
    for mut w in waiters {
        let polled = w.as_mut().poll(&mut Context::from_waker(Waker::noop()));
        assert!(
            matches!(polled, Poll::Ready(Err(Error::Closed { .. }))),
            "a notified waiter was not closed: {:?}",
            b.state()
        );
    }
    assert_quiescent(b);
}
