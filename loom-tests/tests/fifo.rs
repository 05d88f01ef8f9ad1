//! FIFO hand-off: wake-ups, the delegated release, and memory ordering.
#![cfg(bulkhead_loom)]

use bulkhead_core::OwnedSeat;
use bulkhead_loom_tests::{
    Inside, acquire_async, acquire_blocking, acquire_re_polling, assert_quiescent, fifo, granted,
    queued, release_while_a_waiter_links, two_quick_releases,
};
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

/// Two threads compete for one seat; both must get it, in turn
/// (bug class 3 in docs/bug-classes.md: check-then-enqueue must not lose the wake-up).
#[test]
fn two_async_waiters_share_one_seat() {
    loom::model(|| {
        let b = fifo(1);
        let inside = Inside::new();
        let t = {
            let (b, inside) = (b.clone(), inside.clone());
            thread::spawn(move || drop(inside.hold(1, acquire_async(&b).unwrap())))
        };
        drop(inside.hold(1, acquire_async(&b).unwrap()));
        t.join().unwrap();
        assert_quiescent(&b);
    });
}

/// The same with the blocking-thread waiter style.
#[test]
fn blocking_and_async_waiters_share_one_seat() {
    loom::model(|| {
        let b = fifo(1);
        let inside = Inside::new();
        let t = {
            let (b, inside) = (b.clone(), inside.clone());
            thread::spawn(move || drop(inside.hold(1, acquire_blocking(&b).unwrap())))
        };
        drop(inside.hold(1, acquire_async(&b).unwrap()));
        t.join().unwrap();
        assert_quiescent(&b);
    });
}

/// Two releases in quick succession with two waiters: both must wake
/// (bug class 4 in docs/bug-classes.md; async-lock had it:
/// <https://github.com/smol-rs/async-lock/issues/18>).
#[test]
fn two_quick_releases_wake_two_waiters() {
    loom::model(|| two_quick_releases(fifo(2)));
}

/// A release lands while another thread holds the list lock (here: a
/// waiter linking itself). The release must not wait, and the holder must
/// hand the seat on before it leaves (rule 1 in core/src/engine.rs).
#[test]
fn release_while_the_lock_is_held_is_delegated() {
    loom::model(|| release_while_a_waiter_links(fifo(1)));
}

/// Work done under a seat happens-before the next holder's work, whichever
/// way the seat travels: fast path or hand-off (bug class 15 in docs/bug-classes.md).
/// loom's `UnsafeCell` reports a data race otherwise.
#[test]
fn data_written_under_a_seat_is_visible_to_the_next_holder() {
    loom::model(|| {
        let b = fifo(1);
        let data = Arc::new(UnsafeCell::new(0usize));
        let t = {
            let (b, data) = (b.clone(), data.clone());
            thread::spawn(move || {
                let _seat = acquire_async(&b).unwrap();
                // SAFETY: the seat excludes the other writer.
                data.with_mut(|d| unsafe { *d += 1 });
            })
        };
        {
            let _seat = acquire_blocking(&b).unwrap();
            // SAFETY: as above.
            data.with_mut(|d| unsafe { *d += 1 });
        }
        t.join().unwrap();
        // SAFETY: both writers have finished.
        assert_eq!(data.with(|d| unsafe { *d }), 2);
    });
}

/// One drain grants two waiters while the previous holders' releases land.
/// Each waiter reads what the releasing holder wrote; only a model with two
/// seats handed over in one drain catches a Relaxed drain CAS.
#[test]
fn one_drain_granting_two_waiters_publishes_both_holders_work() {
    loom::model(|| {
        let b = fifo(1);
        let data = Arc::new(UnsafeCell::new(0usize));
        let held = b.try_acquire().unwrap();
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let (b, data) = (b.clone(), data.clone());
                thread::spawn(move || {
                    let _seat = acquire_async(&b).unwrap();
                    // SAFETY: readers only read; the one write happened
                    // under the seat they were handed, so it must be
                    // visible to them (loom reports a race if it is not).
                    data.with(|d| unsafe { assert_eq!(*d, 1) });
                })
            })
            .collect();
        // SAFETY: `held` excludes everyone else.
        data.with_mut(|d| unsafe { *d = 1 });
        // Grows to 2 and releases: both waiters may be granted in one drain.
        b.set_max_concurrent(2).unwrap();
        drop(held);
        for w in waiters {
            w.join().unwrap();
        }
        assert_quiescent(&b);
    });
}

/// The drain that grants a waiter runs on a third thread: the releaser's
/// try fails because a second waiter holds the lock to link itself, so
/// that waiter's section hands the released seat on. The grant CAS must
/// acquire the releaser's work to pass it on (bug class 15 in
/// docs/bug-classes.md): with a `Relaxed` CAS, the granted waiter's
/// access races the releaser's write, and loom reports it.
#[test]
fn a_drain_on_a_third_thread_publishes_the_releasers_work() {
    loom::model(|| {
        let b = fifo(1);
        let data = Arc::new(UnsafeCell::new(0usize));
        let held = b.try_acquire().unwrap();
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let (b, data) = (b.clone(), data.clone());
                thread::spawn(move || {
                    let _seat = acquire_async(&b).unwrap();
                    // SAFETY: the seat excludes every other access.
                    data.with_mut(|d| unsafe { *d += 1 });
                })
            })
            .collect();
        // SAFETY: `held` excludes everyone else.
        data.with_mut(|d| unsafe { *d = 1 });
        drop(held);
        for w in waiters {
            w.join().unwrap();
        }
        // SAFETY: every writer has finished.
        assert_eq!(data.with(|d| unsafe { *d }), 3);
        assert_quiescent(&b);
    });
}

/// One grow hands on more seats than a batch holds (loom builds use a
/// batch of 2), while a release races the re-drain that `finish` runs
/// after waking the full batch. Every waiter must be granted and woken:
/// the one beyond the batch is granted by the re-drain, on whichever
/// thread wins the lock (bug class 4 in docs/bug-classes.md).
#[test]
fn more_grants_than_a_batch_while_a_release_races_the_re_drain() {
    loom::model(|| {
        let b = fifo(1);
        let seat = OwnedSeat::try_acquire(b.clone()).unwrap();
        let first = queued(&b);
        let second = queued(&b);
        let third = {
            let b = b.clone();
            thread::spawn(move || drop(acquire_async(&b).unwrap()))
        };
        let releaser = thread::spawn(move || drop(seat));
        b.set_max_concurrent(4).unwrap();
        releaser.join().unwrap();
        third.join().unwrap();
        drop(granted(first));
        drop(granted(second));
        assert_quiescent(&b);
    });
}

/// A queued FIFO waiter polls again while a release grants it the seat.
/// The re-poll must notice a verdict stored since its unlocked check and
/// leave it alone: overwriting `GRANTED` with `WAITING` would lose the
/// seat and leave an unlinked node waiting forever.
#[test]
fn a_fifo_re_poll_racing_a_grant() {
    loom::model(|| {
        let b = fifo(1);
        let seat = b.try_acquire().unwrap();
        let waiter = {
            let b = b.clone();
            thread::spawn(move || drop(acquire_re_polling(&b).unwrap()))
        };
        drop(seat);
        waiter.join().unwrap();
        assert_quiescent(&b);
    });
}
