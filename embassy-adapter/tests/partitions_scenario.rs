//! The partitioned-compartment firmware scenario (see
//! `scenario/partitions.rs`) on the host: embassy-time's std driver,
//! critical-section's std implementation, the tasks joined on one thread,
//! and a second thread standing in for the SysTick interrupt.
//!
//! `firmware/` runs the very same file on emulated Cortex-M3 and Cortex-M0
//! boards (`.ci/firmware.sh`, the `partitions` variant).

#![cfg(all(feature = "partitions", feature = "time"))]

#[path = "scenario/partitions.rs"]
mod partitions;
mod scenario;
mod support;

use std::future::Future;
use std::pin::Pin;
use std::thread;
use std::time::{Duration, Instant};

use partitions::{BACKGROUND_TASKS, ISR_TASKS, Partitions, ROLES};
use support::run_all;

static PARTITIONS: Partitions = Partitions::new();

#[test]
fn partitioned_scenario() {
    let p = &PARTITIONS;
    // Built before the "interrupt" thread starts: it only looks after.
    p.start();
    let isr = thread::spawn(move || {
        let started = Instant::now();
        // The handler gives up on its own after a 5 s stall; this bound
        // only keeps a broken build from hanging the test.
        while !p.done() && started.elapsed() < Duration::from_secs(30) {
            p.interrupt_tick();
            thread::sleep(Duration::from_millis(1));
        }
    });

    let mut roles: Vec<Pin<Box<dyn Future<Output = ()>>>> = Vec::new();
    for _ in 0..BACKGROUND_TASKS {
        roles.push(Box::pin(p.background()));
    }
    for index in 0..ISR_TASKS as usize {
        roles.push(Box::pin(p.isr(index)));
    }
    assert_eq!(roles.len(), ROLES as usize);
    run_all(&mut roles);
    isr.join().unwrap();

    let mut summary = String::new();
    let passed = p.report(&mut summary).unwrap();
    print!("{summary}");
    assert!(passed, "partitioned scenario failed:\n{summary}");
}
