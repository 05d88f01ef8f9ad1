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
