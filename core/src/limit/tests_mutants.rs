//! Controller behaviour that `cargo mutants` found untested (see
//! docs/mutants.md); here because it sets the controller's private flag
//! and drop bits, as a racing sampler would.

use super::*;
use crate::sync::Ordering;
use crate::{Bulkhead, CsLock};

/// With a window of one sample, a drop bit left by a racing sampler whose
/// count went with the previous window still backs off: the next sample
/// goes through the window's aggregate, not around it.
#[test]
fn a_window_of_one_replays_a_drop_bit_left_without_a_count() {
    let b: Bulkhead<CsLock> = Bulkhead::new("db", 10).unwrap();
    let aimd = Aimd::new(AimdParams {
        initial: 10,
        min: 1,
        max: 20,
        ..AimdParams::DEFAULT
    })
    .unwrap();
    let c = Controller::new(aimd);
    let busy = Sample::from_nanos(1_000_000, 10, CallOutcome::Success);
    // The first sample learns the window (1) and goes up: 10 -> 11.
    assert_eq!(c.record(&b, &busy), Recorded::Changed { old: 10, new: 11 });
    // A racing sampler's drop bit, its count already taken.
    c.missed.store(1, Ordering::Relaxed);
    assert_eq!(
        c.record(&b, &busy),
        Recorded::Changed { old: 11, new: 9 },
        "floor(0.9 x 11): the drop, not the success"
    );
    assert_eq!(c.missed.load(Ordering::Relaxed), 0, "the bit was taken");
}

/// With a window of one sample, samples that lost the flag while another
/// sampler held it go to the algorithm with the next one, as one window.
#[test]
fn a_window_of_one_takes_the_samples_that_waited_for_the_flag() {
    let b: Bulkhead<CsLock> = Bulkhead::new("db", 10).unwrap();
    let aimd = Aimd::new(AimdParams {
        initial: 10,
        min: 1,
        max: 20,
        ..AimdParams::DEFAULT
    })
    .unwrap();
    let c = Controller::new(aimd);
    let sample = |in_flight| Sample::from_nanos(1_000_000, in_flight, CallOutcome::Success);
    // Learn the window (1): busy, so 10 -> 11.
    assert_eq!(
        c.record(&b, &sample(10)),
        Recorded::Changed { old: 10, new: 11 }
    );
    // Two busy samples wait while another sampler holds the flag.
    assert_eq!(c.busy.swap(1, Ordering::Acquire), 0);
    assert_eq!(c.record(&b, &sample(11)), Recorded::Skipped);
    assert_eq!(c.record(&b, &sample(11)), Recorded::Skipped);
    c.busy.store(0, Ordering::Release);
    // An idle sample alone would hold; with the busy ones it is + 1.
    assert_eq!(
        c.record(&b, &sample(1)),
        Recorded::Changed { old: 11, new: 12 },
        "the window's largest in-flight count, 11 of 11"
    );
}
