//! Randomized schedules with more threads and tasks than loom can explore:
//! more waiters than one drain's batch, bursts of releases, resizes up and
//! down, close, cancellation and time-outs, in both admission modes.
//!
//! Every test checks, independently of the compartment's own counters:
//! never more callers inside than the limit allows (see `Tracker`), every
//! waiter resolves (a lost wake-up parks a thread forever, which shuttle
//! reports as a deadlock), no seat is lost once everyone has left, and, in
//! FIFO mode, that seats go to waiters in line order.
#![cfg(bulkhead_shuttle)]

use bulkhead_core::{Admission, Config, Error, Seat, ShuttleLock};
use bulkhead_shuttle_tests::{
    Gate, Tracker, Waiter, WaiterHandle, assert_no_lost_seats, check, compartment, random,
    spawn_waiter, wait_until, with_config, yield_times,
};
use shuttle::sync::Arc;
use shuttle::sync::atomic::{AtomicUsize, Ordering::SeqCst};
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

/// Queues one waiter per entry of `styles` on `b`, one after another, so
/// that line order is spawn order. Waiter `i` enters through `tracker`,
/// waits at `hold` while inside, and leaves; leavers (time-outs, cancels)
/// may leave once `start` opens.
fn line_up(
    b: &Arc<bulkhead_shuttle_tests::ShuttleBulkhead>,
    styles: &[Waiter],
    tracker: &Tracker,
    start: &Gate,
    hold: &Gate,
) -> Vec<(Waiter, WaiterHandle<()>)> {
    let queued = b.state().waiting;
    styles
        .iter()
        .enumerate()
        .map(|(i, &style)| {
            let (t, hold) = (tracker.clone(), hold.clone());
            let since = tracker.wait_begins();
            let handle = spawn_waiter(b, style, start, move |seat| {
                let inside = t.enter(i, since);
                hold.pass();
                yield_times(random(3));
                drop(inside);
                drop(seat);
            });
            wait_until(|| b.state().waiting == queued + i + 1);
            (style, handle)
        })
        .collect()
}

/// `n` waiters in the default mix: tasks and parked threads alternate, and
/// with `leavers` every third one times out or cancels.
fn mix(n: usize, leavers: bool) -> Vec<Waiter> {
    (0..n).map(|i| Waiter::nth(i, leavers)).collect()
}

/// Joins everyone; each must have got a seat, `Closed` (if `closed`), or,
/// for a leaver, left.
fn join_all(waiters: Vec<(Waiter, WaiterHandle<()>)>, closed: bool) {
    for (style, w) in waiters {
        match w.join() {
            Some(Ok(())) => {}
            Some(Err(Error::Closed { .. })) if closed => {}
            None if style.may_leave() => {}
            other => panic!("{style:?} waiter ended with {other:?}"),
        }
    }
}

/// One grow hands ten seats to twelve waiters: more than one drain's batch
/// (8), so the drain's re-drain after the unlock is exercised. In FIFO mode
/// the ten must be the ten oldest. A shrink below the holders then leaves a
/// debt that the releases pay before the last two get in.
fn grow_past_a_batch_then_shrink(mode: Admission) {
    const WAITERS: usize = 12;
    const GRANTED: usize = 10;
    let b = compartment(1, mode);
    let tracker = Tracker::new(1);
    let (start, hold) = (Gate::default(), Gate::default());
    let seat = b.try_acquire().unwrap();
    let me = tracker.enter(usize::MAX, 0);
    // Waiters entering after the shrink were granted after it (every seat
    // was held when it happened): they must see its lower limit.
    let after_shrink = Arc::new(AtomicUsize::new(usize::MAX));
    let waiters: Vec<_> = (0..WAITERS)
        .map(|i| {
            let (t, hold, after_shrink) = (tracker.clone(), hold.clone(), after_shrink.clone());
            let since = tracker.wait_begins();
            let h = spawn_waiter(&b, Waiter::nth(i, false), &start, move |seat| {
                let since = match after_shrink.load(SeqCst) {
                    usize::MAX => since,
                    shrink => shrink,
                };
                let inside = t.enter(i, since);
                hold.pass();
                yield_times(random(3));
                drop(inside);
                drop(seat);
            });
            wait_until(|| b.state().waiting == i + 1);
            h
        })
        .collect();

    tracker.resize(&b, 1 + GRANTED);
    wait_until(|| tracker.entered().len() == GRANTED + 1);
    if mode == Admission::Fifo {
        let mut first = tracker.entered()[1..].to_vec();
        first.sort_unstable();
        assert_eq!(
            first,
            (0..GRANTED).collect::<Vec<_>>(),
            "not the oldest waiters"
        );
    }
    assert_eq!(b.state().waiting, WAITERS - GRANTED);

    tracker.resize(&b, 3);
    after_shrink.store(tracker.wait_begins(), SeqCst);
    hold.open();
    start.open();
    drop(me);
    drop(seat);
    for h in waiters {
        assert!(
            matches!(h.join(), Some(Ok(()))),
            "a waiter did not get a seat"
        );
    }
    assert_eq!(tracker.entered().len(), WAITERS + 1);
    assert_no_lost_seats(&b);
    assert_eq!(b.state().max_concurrent, 3);
}

in_every_mode!(
    grow_past_a_batch_then_shrink:
    fifo_grow_past_a_batch_then_shrink,
    barging_grow_past_a_batch_then_shrink,
    bounded_grow_past_a_batch_then_shrink
);

/// Twelve seats held by three threads are released in a burst while twelve
/// waiters queue: concurrent releases whose lock tries fail hand their
/// seats on through whoever holds the lock.
fn burst_of_releases(mode: Admission) {
    const SEATS: usize = 12;
    const RELEASERS: usize = 3;
    let b = compartment(SEATS, mode);
    let tracker = Tracker::new(SEATS);
    let (start, hold, release) = (Gate::default(), Gate::default(), Gate::default());
    let releasers: Vec<_> = (0..RELEASERS)
        .map(|_| {
            let (b, release) = (b.clone(), release.clone());
            thread::spawn(move || {
                let mut seats: Vec<_> = (0..SEATS / RELEASERS)
                    .map(|_| b.try_acquire().unwrap())
                    .collect();
                release.pass();
                while !seats.is_empty() {
                    drop(seats.swap_remove(random(seats.len())));
                    yield_times(random(2));
                }
            })
        })
        .collect();
    wait_until(|| b.state().active == SEATS);
    let waiters = line_up(&b, &mix(SEATS, false), &tracker, &start, &hold);
    hold.open();
    release.open();
    for r in releasers {
        r.join().unwrap();
    }
    join_all(waiters, false);
    assert_no_lost_seats(&b);
}

in_every_mode!(
    burst_of_releases: fifo_burst_of_releases,
    barging_burst_of_releases,
    bounded_burst_of_releases
);

/// Ten waiters in line, a third of which time out or cancel at random
/// moments, possibly just after a seat was handed to them (it must pass
/// on), while the seats are released. With one seat in FIFO mode, seats
/// go strictly in line order.
fn leavers_in_line(mode: Admission, seats: usize) {
    const WAITERS: usize = 10;
    let b = compartment(seats, mode);
    let tracker = Tracker::new(seats);
    let (start, hold, release) = (Gate::default(), Gate::default(), Gate::default());
    let releaser = {
        let (b, release) = (b.clone(), release.clone());
        thread::spawn(move || {
            let mut held: Vec<_> = (0..seats).map(|_| b.try_acquire().unwrap()).collect();
            release.pass();
            while let Some(seat) = held.pop() {
                yield_times(random(4));
                drop(seat);
            }
        })
    };
    wait_until(|| b.state().active == seats);
    let waiters = line_up(&b, &mix(WAITERS, true), &tracker, &start, &hold);
    hold.open();
    start.open();
    release.open();
    releaser.join().unwrap();
    join_all(waiters, false);
    if mode == Admission::Fifo && seats == 1 {
        let entered = tracker.entered();
        assert!(
            entered.windows(2).all(|w| w[0] < w[1]),
            "seats out of line order: {entered:?}"
        );
    }
    assert_no_lost_seats(&b);
}

#[test]
fn fifo_leavers_in_line_one_seat() {
    check(|| leavers_in_line(Admission::Fifo, 1));
}

#[test]
fn fifo_leavers_in_line_three_seats() {
    check(|| leavers_in_line(Admission::Fifo, 3));
}

#[test]
fn barging_leavers_in_line() {
    check(|| leavers_in_line(Admission::Barging, 2));
}

#[test]
fn bounded_leavers_in_line() {
    check(|| leavers_in_line(Admission::BoundedBarging, 1));
}

/// Barging: leavers at the front of the line are woken (notified) by a
/// release and leave instead of taking the seat. Each must pass its
/// wake-up on, or the parked threads behind it sleep while a seat is free.
#[test]
fn barging_notified_leavers_pass_the_wake_up_on() {
    check(|| {
        let b = compartment(1, Admission::Barging);
        let tracker = Tracker::new(1);
        let (start, hold) = (Gate::default(), Gate::default());
        let seat = b.try_acquire().unwrap();
        let styles = [
            Waiter::Cancels,
            Waiter::TimesOut,
            Waiter::Thread,
            Waiter::Cancels,
            Waiter::Thread,
            Waiter::TimesOut,
            Waiter::Thread,
            Waiter::Task,
        ];
        let waiters = line_up(&b, &styles, &tracker, &start, &hold);
        hold.open();
        start.open();
        yield_times(random(4));
        drop(seat);
        join_all(waiters, false);
        assert_no_lost_seats(&b);
    });
}

/// Close races releases, a resize and waiters that wait, time out and
/// cancel: every waiter resolves (a seat, `Closed`, or it left), and the
/// closed compartment ends with nobody inside or waiting.
fn close_racing_everything(mode: Admission) {
    const WAITERS: usize = 8;
    let b = compartment(2, mode);
    let tracker = Tracker::new(2);
    let (start, hold) = (Gate::default(), Gate::default());
    let releaser = {
        let (b, start) = (b.clone(), start.clone());
        thread::spawn(move || {
            let seats = (b.try_acquire().unwrap(), b.try_acquire().unwrap());
            start.pass();
            yield_times(random(4));
            drop(seats.0);
            yield_times(random(4));
            drop(seats.1);
        })
    };
    wait_until(|| b.state().active == 2);
    let waiters = line_up(&b, &mix(WAITERS, true), &tracker, &start, &hold);
    let resizer = {
        let (b, t, start) = (b.clone(), tracker.clone(), start.clone());
        thread::spawn(move || {
            start.pass();
            t.resize(&b, 3);
            yield_times(random(4));
            t.resize(&b, 1);
        })
    };
    hold.open();
    start.open();
    yield_times(random(8));
    b.close();
    assert!(matches!(b.try_acquire(), Err(Error::Closed { .. })));
    join_all(waiters, true);
    releaser.join().unwrap();
    resizer.join().unwrap();
    assert!(b.state().closed);
    assert_no_lost_seats(&b);
}

in_every_mode!(
    close_racing_everything:
    fifo_close_racing_everything,
    barging_close_racing_everything,
    bounded_close_racing_everything
);

/// Six workers each make three random calls (wait as a task or a thread,
/// time out, cancel, or try) against a compartment with a queue limit,
/// while a seventh thread resizes it at random. Afterwards no seat may be
/// lost; then it closes.
fn random_workload(mode: Admission) {
    const WORKERS: usize = 6;
    const CALLS: usize = 3;
    let b = with_config(Config::new("shuttle", 2).admission(mode).max_waiting(4));
    let tracker = Tracker::new(2);
    let start = Gate::default();
    start.open();
    let resizer = {
        let (b, t) = (b.clone(), tracker.clone());
        thread::spawn(move || {
            for _ in 0..3 {
                yield_times(random(6));
                t.resize(&b, 1 + random(4));
            }
        })
    };
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (b, t, start) = (b.clone(), tracker.clone(), start.clone());
            thread::spawn(move || {
                for call in 0..CALLS {
                    let id = w * CALLS + call;
                    let since = t.wait_begins();
                    let enter = |seat: Seat<'_, ShuttleLock>| {
                        let inside = t.enter(id, since);
                        yield_times(random(3));
                        drop(inside);
                        drop(seat);
                    };
                    let result = match random(5) {
                        4 => Some(b.try_acquire().map(enter)),
                        k => {
                            let style = [
                                Waiter::Task,
                                Waiter::Thread,
                                Waiter::TimesOut,
                                Waiter::Cancels,
                            ][k];
                            bulkhead_shuttle_tests::wait_in_style(&b, style, &start, enter)
                        }
                    };
                    match result {
                        None | Some(Ok(())) => {}
                        Some(Err(Error::Full { .. } | Error::QueueFull { .. })) => {}
                        Some(Err(e)) => panic!("unexpected {e:?}"),
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    resizer.join().unwrap();
    assert_no_lost_seats(&b);
    b.close();
    assert_no_lost_seats(&b);
}

in_every_mode!(
    random_workload: fifo_random_workload,
    barging_random_workload,
    bounded_random_workload
);
