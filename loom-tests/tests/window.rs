//! The atomicity of the adaptive window and of the compartment's counters.
//!
//! The open window of a [`Controller`] is five relaxed atomics (count,
//! round-trip sum, largest in-flight count, drop bits, size), each written
//! by a read-modify-write that samplers race without the flag, and taken
//! by a swap under it. Orderings do not matter there; atomicity does: a
//! read-modify-write split into a load and a store (a *torn* one) loses
//! the write of a sampler that comes between the two. The models check
//! what each field promises, whatever the interleaving:
//! - samples that race into one window are all in its aggregate: its mean
//!   round trip, its largest in-flight count and its worst outcome (a
//!   drop and a timeout racing: the drop wins) are exact;
//! - a sample that races the close is counted in exactly one window, its
//!   round trip summed in exactly one, its in-flight count and its drop
//!   kept in one (loom-tests/README.md: "every sample is counted in
//!   exactly one window");
//! - two callers turned away at once, or timing out at once, are counted
//!   twice.
//!
//! `scripts/mutate-orderings --torn` tears each read-modify-write in core
//! in turn; every torn one in the window and in `Counter` fails a model
//! here (but the `fetch_update` loops of targets narrower than 64 bits,
//! which a 64-bit host does not compile).
#![cfg(bulkhead_loom)]

use bulkhead_core::limit::{CallOutcome, Controller, Limit, Recorded, Sample};
use bulkhead_core::{Error, OwnedSeat};
use bulkhead_loom_tests::{acquire_then_time_out, fifo};
use loom::sync::Arc;
use loom::thread;

/// A unit of round trip that keeps every mean in these models exact: a
/// multiple of 6, so that any window of up to three samples of whole units
/// divides evenly, and of 256, the unit the window sums in on targets
/// narrower than 64 bits.
const U: u64 = 1536;

/// Records every aggregate it is fed; windows of `window` samples.
#[derive(Debug)]
struct Recording {
    window: usize,
    windows: Vec<Sample>,
}

impl Recording {
    fn new(window: usize) -> Self {
        Self {
            window,
            windows: Vec::new(),
        }
    }
}

impl Limit for Recording {
    fn limit(&self) -> usize {
        2
    }
    fn update(&mut self, sample: &Sample) -> usize {
        self.update_window(sample)
    }
    fn window(&self) -> usize {
        self.window
    }
    fn update_window(&mut self, aggregate: &Sample) -> usize {
        self.windows.push(*aggregate);
        2
    }
}

fn sample(units: u64, in_flight: usize, outcome: CallOutcome) -> Sample {
    Sample::from_nanos(units * U, in_flight, outcome)
}

/// Two samplers, a drop and a timeout, add to one window of 4 at once (the
/// first sample has opened it; neither racer fills it, so none takes the
/// flag), then a fourth sample closes it. The one aggregate must hold all
/// four samples: their mean round trip, their largest in-flight count (the
/// drop's, raced by the timeout's smaller one) and the drop, raced by the
/// timeout's bit.
#[test]
fn samples_racing_into_one_window_are_all_in_its_aggregate() {
    loom::model(|| {
        let b = fifo(2);
        let c = Arc::new(Controller::new(Recording::new(4)));
        // The first sample learns the window size and stays in the window.
        assert!(!matches!(
            c.record(&b, &sample(1, 1, CallOutcome::Success)),
            Recorded::Added | Recorded::Skipped
        ));
        let racers: Vec<_> = [
            sample(2, 3, CallOutcome::Dropped),
            sample(4, 2, CallOutcome::Timeout),
        ]
        .into_iter()
        .map(|s| {
            let (b, c) = (b.clone(), c.clone());
            thread::spawn(move || c.record(&b, &s))
        })
        .collect();
        for r in racers {
            assert_eq!(
                r.join().unwrap(),
                Recorded::Added,
                "a racer closed the window"
            );
        }
        let last = c.record(&b, &sample(1, 1, CallOutcome::Success));
        let windows = c.try_inspect(|a| a.windows.clone()).unwrap();
        assert_eq!(
            windows,
            [sample(2, 3, CallOutcome::Dropped)],
            "one window of four samples: mean (1 + 2 + 4 + 1) / 4 = 2 units, \
             largest in-flight 3, a drop; the fourth sample returned {last:?}"
        );
    });
}

/// After a first sample (a timeout, which opens a window of 2), two
/// samplers race: whichever fills the window closes it, and the other's
/// sample goes into that window or the next, field by field (its count,
/// round trip, in-flight count and drop bit are each taken by a swap that
/// it may come before or after). Then samples are recorded one by one
/// until the second window closes.
///
/// Every sample must be in exactly one window. The Limit sees each
/// window's mean, not its count, so the counts are derived: nothing races
/// the second window, so it holds exactly 2 (the window size), and the
/// first holds the rest. Then the means times the counts must add up to
/// the round trips recorded (a count lost or taken twice, or a round trip
/// lost, breaks it); the racer's in-flight count, the largest, must be some
/// window's; its drop must be in exactly one window, and the timeout in the
/// first.
#[test]
fn a_sample_racing_the_close_is_counted_in_exactly_one_window() {
    loom::model(|| {
        let b = fifo(2);
        let c = Arc::new(Controller::new(Recording::new(2)));
        c.record(&b, &sample(100, 1, CallOutcome::Timeout));
        let racers: Vec<_> = [
            sample(1, 1, CallOutcome::Success),
            sample(10, 3, CallOutcome::Dropped),
        ]
        .into_iter()
        .map(|s| {
            let (b, c) = (b.clone(), c.clone());
            thread::spawn(move || {
                c.record(&b, &s);
            })
        })
        .collect();
        for r in racers {
            r.join().unwrap();
        }
        // One window is closed; the racer that lost it, if any, is in the
        // next. Fill that one.
        let mut drain = 0;
        loop {
            drain += 1;
            assert!(
                drain <= 2,
                "a window of 2 took more than 2 samples to close"
            );
            match c.record(&b, &sample(1, 1, CallOutcome::Success)) {
                Recorded::Added => {}
                Recorded::Skipped => panic!("the flag was left taken"),
                _ => break,
            }
        }
        let windows = c.try_inspect(|a| a.windows.clone()).unwrap();
        assert_eq!(windows.len(), 2, "windows closed: {windows:?}");
        let counts = [1 + drain, 2];
        let rtt: u64 = windows
            .iter()
            .zip(counts)
            .map(|(w, n)| w.rtt_nanos * n as u64)
            .sum();
        assert_eq!(
            rtt,
            (100 + 1 + 10 + drain) * U,
            "a count or a round trip was lost or taken twice: windows {windows:?} \
             of {counts:?} samples"
        );
        assert_eq!(
            windows.iter().map(|w| w.in_flight).max(),
            Some(3),
            "the largest in-flight count was lost: {windows:?}"
        );
        let drops = windows
            .iter()
            .filter(|w| w.outcome == CallOutcome::Dropped)
            .count();
        assert_eq!(drops, 1, "the drop was lost or fed twice: {windows:?}");
        assert!(
            windows[0].outcome.is_overload(),
            "the timeout was lost: {windows:?}"
        );
    });
}

/// Two callers find the compartment full at once: both are turned away,
/// and both are counted.
#[test]
fn two_racing_rejections_are_counted_twice() {
    loom::model(|| {
        let b = fifo(1);
        let _held = OwnedSeat::try_acquire(b.clone()).unwrap();
        let callers: Vec<_> = (0..2)
            .map(|_| {
                let b = b.clone();
                thread::spawn(move || matches!(b.try_acquire(), Err(Error::Full { .. })))
            })
            .collect();
        for t in callers {
            assert!(
                t.join().unwrap(),
                "a caller got a seat of a full compartment"
            );
        }
        assert_eq!(b.state().rejected, 2, "a racing rejection was not counted");
    });
}

/// Two waiters time out at once while the one seat stays held: both are
/// counted.
#[test]
fn two_racing_timeouts_are_counted_twice() {
    loom::model(|| {
        let b = fifo(1);
        let _held = OwnedSeat::try_acquire(b.clone()).unwrap();
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let b = b.clone();
                thread::spawn(move || {
                    matches!(acquire_then_time_out(&b), Err(Error::Timeout { .. }))
                })
            })
            .collect();
        for t in waiters {
            assert!(t.join().unwrap(), "a waiter did not time out");
        }
        assert_eq!(b.state().timed_out, 2, "a racing timeout was not counted");
    });
}
