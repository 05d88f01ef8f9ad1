//! An adaptive compartment in firmware: a "sensor" bus whose calls slow
//! down sharply beyond two at once. Four tasks call it repeatedly; every
//! seat times itself with embassy-time and records its outcome, and AIMD
//! moves the limit from 4 towards what the bus sustains.
//!
//! The round trip depends on how many calls were in flight when the call
//! started (2 ms up to two, 8 ms per call beyond), so the outcome does not
//! depend on QEMU's timing: a call started with three or more inside
//! always takes longer than AIMD's 5 ms timeout and backs the limit off.

use core::cell::Cell;
use core::fmt;

use critical_section::Mutex;

use bulkhead_embassy::limit::{Adaptive, Aimd, AimdParams, CallOutcome, Recorded};
use bulkhead_embassy::raw::CriticalSectionRawMutex;
use bulkhead_embassy::{EmbassyAcquire, EmbassyClock, EmbassyLock};
use embassy_time::{Duration, Timer};

pub const TASKS: u32 = 4;
const ROUNDS: u32 = 16;

static SENSOR: Adaptive<EmbassyLock<CriticalSectionRawMutex>, Aimd, EmbassyClock> = Adaptive::new(
    bulkhead_embassy::new_static("sensor", 4),
    match Aimd::new(AimdParams {
        initial: 4,
        min: 1,
        max: 8,
        timeout: core::time::Duration::from_millis(5),
        ..AimdParams::DEFAULT
    }) {
        Ok(aimd) => aimd,
        Err(_) => panic!("sensor: bad AIMD parameters"),
    },
    EmbassyClock,
);

/// Counters in critical sections: thumbv6m has no atomic read-modify-write.
static SAMPLES: Mutex<Cell<u32>> = Mutex::new(Cell::new(0));
static FINISHED: Mutex<Cell<u32>> = Mutex::new(Cell::new(0));
static PEAK: Mutex<Cell<u32>> = Mutex::new(Cell::new(0));

fn update(counter: &Mutex<Cell<u32>>, f: impl FnOnce(u32) -> u32) {
    critical_section::with(|cs| {
        let c = counter.borrow(cs);
        c.set(f(c.get()));
    });
}

fn read(counter: &Mutex<Cell<u32>>) -> u32 {
    critical_section::with(|cs| counter.borrow(cs).get())
}

/// One caller: `ROUNDS` calls, each waiting at most 1 s for a seat.
pub async fn sensor_user() {
    for _ in 0..ROUNDS {
        let Ok(seat) = SENSOR
            .bulkhead()
            .acquire_within(Duration::from_secs(1))
            .await
        else {
            continue;
        };
        let Ok(seat) = SENSOR.track(seat) else {
            continue;
        };
        let inside = seat.in_flight() as u32;
        update(&PEAK, |peak| peak.max(inside));
        let service = if inside <= 2 {
            2
        } else {
            8 * u64::from(inside)
        };
        Timer::after(Duration::from_millis(service)).await;
        // Dropping the seat would record a success too; say it explicitly.
        if seat.record(CallOutcome::Success) != Recorded::Skipped {
            update(&SAMPLES, |n| n + 1);
        }
    }
    update(&FINISHED, |n| n + 1);
}

pub fn finished() -> bool {
    read(&FINISHED) == TASKS
}

/// Prints the summary line `.ci/firmware.sh` checks; returns whether the
/// limit came down from 4 and every call was sampled.
pub fn report(out: &mut impl fmt::Write) -> Result<bool, fmt::Error> {
    let limit = SENSOR.limit();
    let changes = SENSOR.controller().changes();
    let samples = read(&SAMPLES);
    let peak = read(&PEAK);
    writeln!(
        out,
        "adaptive: limit={limit} changes={changes} samples={samples} peak={peak}"
    )?;
    let ok = (1..4).contains(&limit)
        && changes > 0
        && samples == TASKS * ROUNDS
        && peak <= 4
        && SENSOR.bulkhead().state().active == 0;
    Ok(ok)
}
