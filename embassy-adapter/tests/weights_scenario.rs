//! The weighted-seat firmware scenario (see `scenario/weights.rs`) on the
//! host: embassy-time's std driver, critical-section's std implementation,
//! and the tasks joined on one thread.
//!
//! `firmware/` runs the very same file on emulated Cortex-M3 and Cortex-M0
//! boards (`.ci/firmware.sh`, the `weights` variant).

mod scenario;
mod support;
#[path = "scenario/weights.rs"]
mod weights;

use std::future::Future;
use std::pin::Pin;

use bulkhead_embassy::raw::CriticalSectionRawMutex;
use support::run_all;
use weights::{LIGHTS, ROLES, UART_WAITERS, Weights};

static WEIGHTS: Weights<CriticalSectionRawMutex> = Weights::new();

#[test]
fn weighted_scenario() {
    let w = &WEIGHTS;
    let mut roles: Vec<Pin<Box<dyn Future<Output = ()>>>> =
        vec![Box::pin(w.dma_holder()), Box::pin(w.dma_heavy())];
    for index in 0..LIGHTS {
        roles.push(Box::pin(w.dma_light(index)));
    }
    roles.push(Box::pin(w.uart_owner()));
    for index in 0..UART_WAITERS {
        roles.push(Box::pin(w.uart_waiter(index)));
    }
    assert_eq!(roles.len(), ROLES as usize);
    run_all(&mut roles);

    let mut summary = String::new();
    let passed = w.report(&mut summary).unwrap();
    print!("{summary}");
    assert!(passed, "weighted scenario failed:\n{summary}");
}
