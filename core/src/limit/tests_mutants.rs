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
