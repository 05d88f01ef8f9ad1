//! The bulkhead scenario (`../tests/scenario/mod.rs`, shared with the host
//! test) as firmware: eight embassy tasks on the thread-mode executor, two
//! `static` compartments, a seat given back from the SysTick interrupt, and
//! a summary over semihosting. Exits with success only if every check
//! passed.
//!
//! Built with no feature it is the minimal build: bulkhead-embassy with
//! only `time`, the one feature the scenario needs. With `--features full`
//! it is built with bulkhead-embassy's default features (every core
//! feature, none of them used). With `--features fair-semaphore` the same
//! program uses embassy-sync's `FairSemaphore`, for the footprint
//! comparison. With `--features
//! adaptive` it also runs an adaptive compartment (`src/adaptive.rs`), and
//! with `--features weights` the weighted-seat scenario
//! (`../tests/scenario/weights.rs`, shared with the host test), and with
//! `--features partitions` the partitioned-compartment scenario
//! (`../tests/scenario/partitions.rs`, shared with the host test; its
//! seats are given back from the SysTick interrupt).

#![no_std]
#![no_main]

use core::fmt;

use cortex_m_semihosting::{debug, hprint};
use embassy_executor::Spawner;
use embassy_time::{Duration, Instant, Timer};
use panic_semihosting as _;

#[cfg(feature = "adaptive")]
mod adaptive;
#[cfg(feature = "partitions")]
#[path = "../../tests/scenario/partitions.rs"]
mod partitions;
#[path = "../../tests/scenario/mod.rs"]
mod scenario;
mod systick;
#[cfg(feature = "weights")]
#[path = "../../tests/scenario/weights.rs"]
mod weights;

use scenario::{ROLES, Scenario};

#[cfg(not(feature = "fair-semaphore"))]
static SCENARIO: Scenario<
    bulkhead_embassy::Bulkhead<bulkhead_embassy::raw::CriticalSectionRawMutex>,
> = Scenario::new(
    bulkhead_embassy::new_static("flash", 1),
    bulkhead_embassy::new_static("radio", 2),
);

#[cfg(feature = "fair-semaphore")]
static SCENARIO: Scenario<scenario::Fair> =
    Scenario::new(scenario::Fair::new(1), scenario::Fair::new(2));

#[cfg(feature = "weights")]
static WEIGHTS: weights::Weights<bulkhead_embassy::raw::CriticalSectionRawMutex> =
    weights::Weights::new();

#[cfg(feature = "partitions")]
static PARTITIONS: partitions::Partitions = partitions::Partitions::new();

/// Called by the SysTick handler on every tick, in interrupt context.
fn on_tick(now: Instant) {
    SCENARIO.interrupt_tick(now);
    #[cfg(feature = "partitions")]
    PARTITIONS.interrupt_tick();
}

#[embassy_executor::task]
async fn flash_owner() {
    SCENARIO.flash_owner().await;
}

#[embassy_executor::task]
async fn flash_waiter() {
    SCENARIO.flash_waiter().await;
}

#[embassy_executor::task]
async fn flash_impatient() {
    SCENARIO.flash_impatient().await;
}

#[embassy_executor::task]
async fn flash_probe() {
    SCENARIO.flash_probe().await;
}

#[embassy_executor::task(pool_size = 3)]
async fn radio_user() {
    SCENARIO.radio_user().await;
}

#[cfg(feature = "adaptive")]
#[embassy_executor::task(pool_size = 4)]
async fn sensor_user() {
    adaptive::sensor_user().await;
}

#[embassy_executor::task]
async fn radio_probe() {
    SCENARIO.radio_probe().await;
}

#[cfg(feature = "weights")]
#[embassy_executor::task]
async fn dma_holder() {
    WEIGHTS.dma_holder().await;
}

#[cfg(feature = "weights")]
#[embassy_executor::task]
async fn dma_heavy() {
    WEIGHTS.dma_heavy().await;
}

#[cfg(feature = "weights")]
#[embassy_executor::task(pool_size = 2)]
async fn dma_light(index: u32) {
    WEIGHTS.dma_light(index).await;
}

#[cfg(feature = "weights")]
#[embassy_executor::task]
async fn uart_owner() {
    WEIGHTS.uart_owner().await;
}

#[cfg(feature = "weights")]
#[embassy_executor::task(pool_size = 3)]
async fn uart_waiter(index: u32) {
    WEIGHTS.uart_waiter(index).await;
}

#[cfg(feature = "partitions")]
#[embassy_executor::task(pool_size = 6)]
async fn background_user() {
    PARTITIONS.background().await;
}

#[cfg(feature = "partitions")]
#[embassy_executor::task(pool_size = 2)]
async fn isr_user(index: usize) {
    PARTITIONS.isr(index).await;
}

/// Whether the adaptive compartment's callers are done (there are none
/// without the `adaptive` feature).
fn adaptive_finished() -> bool {
    #[cfg(feature = "adaptive")]
    return adaptive::finished();
    #[cfg(not(feature = "adaptive"))]
    return true;
}

/// Whether the weighted-seat scenario's roles are done (there are none
/// without the `weights` feature).
fn weights_finished() -> bool {
    #[cfg(feature = "weights")]
    return WEIGHTS.finished() == weights::ROLES;
    #[cfg(not(feature = "weights"))]
    return true;
}

/// Whether the partitioned scenario's roles and its interrupt handler's
/// steps are done (there are none without the `partitions` feature).
fn partitions_finished() -> bool {
    #[cfg(feature = "partitions")]
    return PARTITIONS.finished() == partitions::ROLES && PARTITIONS.done();
    #[cfg(not(feature = "partitions"))]
    return true;
}

/// Semihosting standard output as a `fmt::Write`.
struct Host;

impl fmt::Write for Host {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        hprint!("{}", s);
        Ok(())
    }
}

#[embassy_executor::main]
async fn main(spawner: Spawner) {
    let peripherals = cortex_m::Peripherals::take().unwrap();
    systick::start(peripherals.SYST);
    let started = Instant::now();
    // Built before any task runs; the tick handler skips the scenario
    // until then.
    #[cfg(feature = "partitions")]
    PARTITIONS.start();

    spawner.spawn(flash_owner().unwrap());
    spawner.spawn(flash_waiter().unwrap());
    spawner.spawn(flash_impatient().unwrap());
    spawner.spawn(flash_probe().unwrap());
    for _ in 0..scenario::RADIO_USERS {
        spawner.spawn(radio_user().unwrap());
    }
    spawner.spawn(radio_probe().unwrap());
    #[cfg(feature = "adaptive")]
    for _ in 0..adaptive::TASKS {
        spawner.spawn(sensor_user().unwrap());
    }
    #[cfg(feature = "weights")]
    {
        spawner.spawn(dma_holder().unwrap());
        spawner.spawn(dma_heavy().unwrap());
        for index in 0..weights::LIGHTS {
            spawner.spawn(dma_light(index).unwrap());
        }
        spawner.spawn(uart_owner().unwrap());
        for index in 0..weights::UART_WAITERS {
            spawner.spawn(uart_waiter(index).unwrap());
        }
    }
    #[cfg(feature = "partitions")]
    {
        for _ in 0..partitions::BACKGROUND_TASKS {
            spawner.spawn(background_user().unwrap());
        }
        for index in 0..partitions::ISR_TASKS as usize {
            spawner.spawn(isr_user(index).unwrap());
        }
    }

    // Every role is bounded (5 s per wait at most); this bound only keeps a
    // broken build from spinning until the outer `timeout`.
    for _ in 0..20_000 {
        if SCENARIO.finished() == ROLES
            && SCENARIO.slot_empty()
            && adaptive_finished()
            && weights_finished()
            && partitions_finished()
        {
            break;
        }
        Timer::after(Duration::from_millis(1)).await;
    }

    let mut host = Host;
    let passed = SCENARIO.report(&mut host).unwrap_or(false);
    #[cfg(feature = "adaptive")]
    let passed = adaptive::report(&mut host).unwrap_or(false) && passed;
    #[cfg(feature = "weights")]
    let passed = WEIGHTS.report(&mut host).unwrap_or(false) && passed;
    #[cfg(feature = "partitions")]
    let passed = PARTITIONS.report(&mut host).unwrap_or(false) && passed;
    let _ = fmt::Write::write_fmt(
        &mut host,
        format_args!("elapsed: {} ms (emulated)\n", started.elapsed().as_millis()),
    );
    debug::exit(if passed {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
    loop {
        cortex_m::asm::wfi();
    }
}
