//! Behaviour that `cargo mutants` over core's logic found untested (see
//! docs/design.md, "Verification"): each test names what it pins down, and
//! would fail if that code were replaced by a constant or its comparison
//! flipped.

use std::format;
use std::sync::Arc;

use super::{Task, boxed, fifo};
use crate::limit::{Adaptive, Aimd, AimdParams, Controller};
use crate::{Bulkhead, CsLock, OwnedSeat};

/// Every `Debug` impl of core names its type and its compartment, and the
/// compartment's shows its state.
#[test]
fn debug_output_names_the_type_and_the_compartment() {
    let b = Arc::new(fifo(1));
    let shown = format!("{b:?}");
    assert!(
        shown.starts_with("Bulkhead")
            && shown.contains("Fifo")
            && shown.contains("\"test\"")
            && shown.contains("max_concurrent: 1"),
        "{shown}"
    );

    let seat = b.try_acquire().unwrap();
    let shown = format!("{seat:?}");
    assert!(
        shown.starts_with("Seat") && shown.contains("\"test\""),
        "{shown}"
    );

    let mut wait = boxed(b.acquire());
    let task = Task::new();
    assert!(task.poll(wait.as_mut()).is_pending());
    let shown = format!("{wait:?}");
    assert!(
        shown.starts_with("Acquire") && shown.contains("\"test\"") && shown.contains("Queued"),
        "{shown}"
    );
    drop(wait);

    let timed = b.acquire_timeout(
        core::time::Duration::from_millis(250),
        core::future::pending::<()>(),
    );
    let shown = format!("{timed:?}");
    assert!(
        shown.starts_with("AcquireTimeout")
            && shown.contains("\"test\"")
            && shown.contains("250ms"),
        "{shown}"
    );
    drop(timed);

    let owned_wait = OwnedSeat::acquire(b.clone());
    let shown = format!("{owned_wait:?}");
    assert!(
        shown.starts_with("AcquireOwned") && shown.contains("\"test\""),
        "{shown}"
    );
    drop(owned_wait);
    drop(seat);

    let owned = OwnedSeat::try_acquire(b.clone()).unwrap();
    let shown = format!("{owned:?}");
    assert!(
        shown.starts_with("OwnedSeat") && shown.contains("\"test\""),
        "{shown}"
    );
    drop(owned);

    let aimd = || {
        Aimd::new(AimdParams {
            initial: 2,
            min: 1,
            ..AimdParams::DEFAULT
        })
        .unwrap()
    };
    let controller = Controller::new(aimd());
    let shown = format!("{controller:?}");
    assert!(
        shown.starts_with("Controller") && shown.contains("changes: 0"),
        "{shown}"
    );
    let adaptive = Adaptive::new(Bulkhead::<CsLock>::new("api", 2).unwrap(), aimd(), || 0u64);
    let shown = format!("{adaptive:?}");
    assert!(
        shown.starts_with("Adaptive") && shown.contains("\"api\"") && shown.contains("Controller"),
        "{shown}"
    );
    let seat = adaptive.try_acquire().unwrap();
    let shown = format!("{seat:?}");
    assert!(
        shown.starts_with("AdaptiveSeat")
            && shown.contains("\"api\"")
            && shown.contains("in_flight: 1"),
        "{shown}"
    );
}

/// `is_closed` is false on an open compartment, and true once closed.
#[test]
fn is_closed_tells_open_from_closed() {
    let b = fifo(2);
    assert!(!b.is_closed());
    let _seat = b.try_acquire().unwrap();
    assert!(!b.is_closed(), "a held seat does not close it");
    b.close();
    assert!(b.is_closed());
    assert!(matches!(
        b.try_acquire().map(drop),
        Err(crate::Error::Closed { .. })
    ));
}

/// A ratio parameter accepts both ends of its documented range and
/// refuses the value just outside each.
#[test]
fn ratio_parameters_accept_both_ends_of_their_range() {
    use crate::limit::Fraction;
    let below = |f: Fraction| Fraction::from_q16(f.to_q16() - 1);
    let above = |f: Fraction| Fraction::from_q16(f.to_q16() + 1);
    let aimd = |backoff| {
        Aimd::new(AimdParams {
            backoff,
            ..AimdParams::DEFAULT
        })
    };
    // backoff: [0.5, 1).
    let half = Fraction::new(1, 2);
    assert!(aimd(half).is_ok(), "0.5 is allowed");
    assert!(aimd(below(half)).is_err(), "below 0.5 is not");
    assert!(
        aimd(below(Fraction::ONE)).is_ok(),
        "just below 1 is allowed"
    );
    assert!(aimd(Fraction::ONE).is_err(), "1 would never back off");
}

/// `Limit` through `&mut T` forwards every method to `T`.
#[test]
fn a_limit_behind_a_mutable_reference_forwards_every_method() {
    use crate::limit::{CallOutcome, Limit, Sample};
    let params = AimdParams {
        initial: 4,
        min: 1,
        max: 10,
        ..AimdParams::DEFAULT
    };
    let busy = Sample::from_nanos(1_000_000, 4, CallOutcome::Success);
    let mut direct = Aimd::new(params).unwrap();
    let mut inner = Aimd::new(params).unwrap();
    {
        let mut by_ref: &mut Aimd = &mut inner;
        assert_eq!(Limit::limit(&by_ref), 4);
        assert_eq!(Limit::window(&by_ref), direct.window());
        assert_eq!(Limit::update(&mut by_ref, &busy), direct.update(&busy));
        assert_eq!(
            Limit::update_window(&mut by_ref, &busy),
            direct.update_window(&busy)
        );
        assert_eq!(Limit::limit(&by_ref), 6, "two increases went through");
    }
    assert_eq!(inner.limit(), direct.limit());
}

/// `MAX_CONCURRENT_LIMIT` is the documented figure for the target: the
/// 32-bit field of the compartment on 64-bit targets, and a quarter of the
/// word's count field (two bits of headroom) on 32-bit ones.
#[test]
fn the_concurrency_limit_is_the_documented_figure() {
    let expected = if cfg!(target_pointer_width = "64") {
        4_294_967_295
    } else {
        67_108_863
    };
    assert_eq!(crate::MAX_CONCURRENT_LIMIT, expected);
}
