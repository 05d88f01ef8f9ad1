//! The adaptive-limit feedback path racing acquire, release and resize.
//!
//! Samples are recorded through [`Controller::record`], which takes the
//! algorithm's try-flag and applies its limit with a lock *try*. The
//! models check that, whatever the interleaving:
//! - two samplers never touch the algorithm at once (loom's `UnsafeCell`
//!   tracking fails the model otherwise);
//! - a drop recorded while another sampler holds the flag is fed to the
//!   algorithm exactly once, by a later sample;
//! - a limit change racing an enqueue or a release never strands a waiter
//!   (a lost wake-up is a loom deadlock) and never loses a seat;
//! - a change deferred because the lock was busy is applied by the next
//!   sample, and a manual resize is undone by it;
//! - with a window of several samples, added without the flag, a full
//!   window is always closed (by its filler or, if that one lost the flag,
//!   by the next sample), and a drop in it reaches the algorithm exactly
//!   once.
//!
//! That every sample is counted in exactly one window, and that the
//! window's aggregate is exact, is checked in window.rs.
#![cfg(bulkhead_loom)]

use bulkhead_core::OwnedSeat;
use bulkhead_core::limit::{
    Aimd, AimdParams, CallOutcome, Controller, Limit, Recorded, Sample, Windowed,
};
use bulkhead_loom_tests::{Inside, LoomBulkhead, acquire_async, assert_quiescent, fifo};
use loom::sync::Arc;
use loom::thread;

fn sample(in_flight: usize, outcome: CallOutcome) -> Sample {
    Sample::from_nanos(1_000, in_flight, outcome)
}

fn aimd(initial: usize, max: usize) -> Aimd {
    Aimd::new(AimdParams {
        initial,
        min: 1,
        max,
        ..AimdParams::DEFAULT
    })
    .unwrap()
}

/// Counts what the algorithm was fed; drops push the limit to 1, anything
/// else to 2.
#[derive(Debug, Default)]
struct Counting {
    samples: usize,
    drops: usize,
    limit: usize,
}

impl Limit for Counting {
    fn limit(&self) -> usize {
        self.limit
    }
    fn update(&mut self, sample: &Sample) -> usize {
        self.samples += 1;
        if sample.outcome.is_overload() {
            self.drops += 1;
            self.limit = 1;
        } else {
            self.limit = 2;
        }
        self.limit
    }
}

/// Two samplers race for the flag: one records a drop, the other a
/// success. Afterwards one more sample is recorded; by then the drop must
/// have been fed exactly once (alone, or in an aggregate with a sample
/// that waited in the window), and the compartment must have the
/// algorithm's limit.
#[test]
fn racing_samplers_share_the_algorithm_and_keep_the_drop() {
    loom::model(|| {
        let b = fifo(2);
        let c = Arc::new(Controller::new(Counting {
            limit: 2,
            ..Counting::default()
        }));
        let samplers: Vec<_> = [CallOutcome::Dropped, CallOutcome::Success]
            .into_iter()
            .map(|outcome| {
                let (b, c) = (b.clone(), c.clone());
                thread::spawn(move || {
                    c.record(&b, &sample(2, outcome));
                })
            })
            .collect();
        for s in samplers {
            s.join().unwrap();
        }
        // With a swap-based flag (losers write TAKEN over TAKEN) loom 0.7
        // reports the flag stuck here: its RMW atomicity bug (reported
        // upstream: https://github.com/tokio-rs/loom/issues/254) lets the
        // holder's release slip between a
        // loser's read and write. The compare-exchange flag has no such
        // write, and is what the real hardware semantics require anyway.
        let r = c.record(&b, &sample(2, CallOutcome::Success));
        assert!(!matches!(r, Recorded::Skipped), "the flag was left taken");
        let (drops, samples, limit) = c
            .try_inspect(|a| (a.drops, a.samples, a.limit))
            .expect("nobody else samples now");
        assert_eq!(drops, 1, "the drop was lost or fed twice");
        assert!(samples >= 2, "the final sample was not fed");
        // The limit is 1 if the drop waited in the window for the final
        // sample (its aggregate is a drop), 2 otherwise; either way the
        // compartment has it.
        assert_eq!(b.state().max_concurrent, limit);
    });
}

/// A drop shrinks the limit from 2 to 1 while the other holder releases
/// and a waiter queues. The waiter must get a seat, never more than two
/// are inside, and the compartment ends quiescent at the new limit.
#[test]
fn shrink_racing_release_and_waiter() {
    loom::model(|| {
        let b = fifo(2);
        let c = Arc::new(Controller::new(aimd(2, 2)));
        let inside = Inside::new();
        let first = inside.hold(2, OwnedSeat::try_acquire(b.clone()).unwrap());
        let second = inside.hold(2, OwnedSeat::try_acquire(b.clone()).unwrap());
        let waiter = {
            let (b, inside) = (b.clone(), inside.clone());
            thread::spawn(move || drop(inside.hold(2, acquire_async(&b).unwrap())))
        };
        let failing = {
            let (b, c) = (b.clone(), c.clone());
            thread::spawn(move || {
                // The call that held `first` failed: sample, then release.
                c.record(&b, &sample(2, CallOutcome::Dropped));
                drop(first);
            })
        };
        drop(second);
        failing.join().unwrap();
        waiter.join().unwrap();
        settle(&b, &c);
        assert_quiescent(&b);
    });
}

/// A success grows the limit from 1 to 2 while a waiter is enqueueing
/// (so the lock may be busy and the growth deferred). The waiter must get
/// a seat either from the growth or from the holder's release, and the
/// next sample must apply a deferred growth.
#[test]
fn growth_racing_an_enqueue_is_applied_or_deferred_never_lost() {
    loom::model(|| {
        let b = fifo(1);
        let c = Arc::new(Controller::new(aimd(1, 2)));
        let held = OwnedSeat::try_acquire(b.clone()).unwrap();
        let waiter = {
            let b = b.clone();
            thread::spawn(move || drop(acquire_async(&b).unwrap()))
        };
        let grower = {
            let (b, c) = (b.clone(), c.clone());
            thread::spawn(move || {
                c.record(&b, &sample(1, CallOutcome::Success));
            })
        };
        grower.join().unwrap();
        drop(held);
        waiter.join().unwrap();
        settle(&b, &c);
        assert_eq!(b.state().max_concurrent, 2, "the growth was forgotten");
        assert_quiescent(&b);
    });
}

/// A manual resize races a sample: whatever order they apply in, no seat
/// is lost, and the next sample brings the compartment back to the
/// algorithm's limit.
#[test]
fn manual_resize_racing_a_sample() {
    loom::model(|| {
        let b = fifo(2);
        let c = Arc::new(Controller::new(aimd(2, 4)));
        let held = OwnedSeat::try_acquire(b.clone()).unwrap();
        let resizer = {
            let b = b.clone();
            thread::spawn(move || {
                b.set_max_concurrent(1).unwrap();
            })
        };
        let sampler = {
            let (b, c) = (b.clone(), c.clone());
            thread::spawn(move || {
                c.record(&b, &sample(2, CallOutcome::Success));
            })
        };
        resizer.join().unwrap();
        sampler.join().unwrap();
        drop(held);
        settle(&b, &c);
        assert_quiescent(&b);
    });
}

/// Counts windows and their drops; asks for windows of 2.
#[derive(Debug, Default)]
struct Windows {
    windows: usize,
    drops: usize,
}

impl Limit for Windows {
    fn limit(&self) -> usize {
        2
    }
    fn update(&mut self, sample: &Sample) -> usize {
        self.update_window(sample)
    }
    fn window(&self) -> usize {
        2
    }
    fn update_window(&mut self, aggregate: &Sample) -> usize {
        self.windows += 1;
        if aggregate.outcome.is_overload() {
            self.drops += 1;
        }
        2
    }
}

/// After a first sample (the controller learns the window size from it),
/// two samplers, a drop and a success, fill a window of 2
/// while a third thread inspects the algorithm (taking the flag), so the
/// filler may lose the try. Afterwards two more samples must close every
/// full window, and the drop must have reached the algorithm exactly once.
#[test]
fn a_full_window_is_closed_and_its_drop_delivered_once() {
    loom::model(|| {
        let b = fifo(2);
        let c = Arc::new(Controller::new(Windows::default()));
        assert!(matches!(
            c.record(&b, &sample(2, CallOutcome::Success)),
            Recorded::Changed { .. } | Recorded::Unchanged { .. }
        ));
        let samplers: Vec<_> = [CallOutcome::Dropped, CallOutcome::Success]
            .into_iter()
            .map(|outcome| {
                let (b, c) = (b.clone(), c.clone());
                thread::spawn(move || {
                    c.record(&b, &sample(2, outcome));
                })
            })
            .collect();
        let inspector = {
            let c = c.clone();
            thread::spawn(move || {
                let _ = c.try_inspect(|a| a.windows);
            })
        };
        for s in samplers {
            s.join().unwrap();
        }
        inspector.join().unwrap();
        // The window is either closed already or full and waiting: the
        // next sample closes it if need be. A closer may also have taken
        // the window before the drop's bit was visible to it; the bit then
        // goes with the next window, which the sample after fills.
        c.record(&b, &sample(2, CallOutcome::Success));
        let r = c.record(&b, &sample(2, CallOutcome::Success));
        let (windows, drops) = c
            .try_inspect(|a| (a.windows, a.drops))
            .expect("nobody else samples now");
        // The first sample only learns the window size (2) and opens the
        // window; five samples in all close at least one.
        assert!(
            windows >= 1,
            "a full window was left open: {windows} windows, last {r:?}"
        );
        assert_eq!(drops, 1, "the drop was lost or fed twice");
    });
}

/// `Windowed` under the controller: samples racing a window's close are
/// counted once, and the flag is never left taken.
#[test]
fn windowed_samples_racing_the_close_leave_the_flag_free() {
    loom::model(|| {
        let b = fifo(2);
        let c = Arc::new(Controller::new(Windowed::new(aimd(2, 4), 2)));
        c.record(&b, &sample(2, CallOutcome::Success));
        let samplers: Vec<_> = (0..2)
            .map(|_| {
                let (b, c) = (b.clone(), c.clone());
                thread::spawn(move || {
                    c.record(&b, &sample(2, CallOutcome::Dropped));
                })
            })
            .collect();
        for s in samplers {
            s.join().unwrap();
        }
        assert!(c.try_inspect(|_| ()).is_some(), "the flag was left taken");
        settle_windowed(&b, &c);
    });
}

/// Samples until a window closes, then checks the compartment has the
/// algorithm's limit.
fn settle_windowed(b: &Arc<LoomBulkhead>, c: &Controller<Windowed<Aimd>>) {
    for _ in 0..8 {
        if !matches!(
            c.record(b, &sample(1, CallOutcome::Success)),
            Recorded::Added | Recorded::Skipped
        ) {
            break;
        }
    }
    let limit = c.try_inspect(|a| a.limit()).unwrap();
    assert_eq!(b.state().max_concurrent, limit);
}

/// One quiescent sample (app-limited, so the algorithm holds), after
/// which the compartment must have the algorithm's limit.
fn settle(b: &Arc<LoomBulkhead>, c: &Controller<Aimd>) {
    c.record(b, &sample(1, CallOutcome::Success));
    let limit = c.try_inspect(|a| a.limit()).unwrap();
    assert_eq!(
        b.state().max_concurrent,
        limit,
        "a deferred change was not applied"
    );
}
