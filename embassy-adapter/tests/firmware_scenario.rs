//! The firmware scenario (see `scenario/mod.rs`) on the host: embassy-time's
//! std driver, critical-section's std implementation, the tasks joined on
//! one thread, and a second thread standing in for the SysTick interrupt.
//!
//! `firmware/` runs the very same file on emulated Cortex-M3 and Cortex-M0
//! boards (`.ci/firmware.sh`).

mod scenario;
mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use bulkhead_embassy::{Bulkhead, new_static, raw::CriticalSectionRawMutex};
use scenario::{Compartment, Fair, ROLES, Scenario};
use support::run_all;

static OURS: Scenario<Bulkhead<CriticalSectionRawMutex>> =
    Scenario::new(new_static("flash", 1), new_static("radio", 2));

static FAIR: Scenario<Fair> = Scenario::new(Fair::new(1), Fair::new(2));

#[test]
fn scenario_with_bulkhead() {
    run(&OURS);
}

/// The comparison build of the firmware, checked here so that its
/// footprint figures describe a program that works.
#[test]
fn scenario_with_fair_semaphore() {
    run(&FAIR);
}

fn run<C: Compartment>(scenario: &'static Scenario<C>)
where
    Scenario<C>: Sync,
{
    let stop = Arc::new(AtomicBool::new(false));
    let isr = {
        let stop = Arc::clone(&stop);
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                scenario.interrupt_tick(embassy_time::Instant::now());
                thread::sleep(Duration::from_millis(1));
            }
        })
    };

    let mut roles: Vec<Pin<Box<dyn Future<Output = ()>>>> = vec![
        Box::pin(scenario.flash_owner()),
        Box::pin(scenario.flash_waiter()),
        Box::pin(scenario.flash_impatient()),
        Box::pin(scenario.flash_probe()),
        Box::pin(scenario.radio_user()),
        Box::pin(scenario.radio_user()),
        Box::pin(scenario.radio_user()),
        Box::pin(scenario.radio_probe()),
    ];
    assert_eq!(roles.len(), ROLES as usize);
    run_all(&mut roles);
    // The waiter only finishes after the "interrupt" gave its seat back.
    stop.store(true, Ordering::Relaxed);
    isr.join().unwrap();

    let mut summary = String::new();
    let passed = scenario.report(&mut summary).unwrap();
    print!("{summary}");
    assert!(passed, "scenario failed:\n{summary}");
}
