//! An embassy-time driver on the Cortex-M SysTick timer: a 1 kHz tick
//! interrupt that counts time and wakes expired timers. QEMU's SysTick
//! follows host time, so durations are only roughly right: the scenario
//! never asserts an exact one.

use core::cell::{Cell, RefCell};
use core::task::Waker;

use cortex_m::peripheral::SYST;
use cortex_m::peripheral::syst::SystClkSource;
use cortex_m_rt::exception;
use critical_section::Mutex;
use embassy_time_driver::{Driver, TICK_HZ};
use embassy_time_queue_utils::Queue;

/// The core clock SysTick counts, as QEMU models each board.
#[cfg(board = "lm3s6965")]
const CORE_HZ: u64 = 12_000_000;
#[cfg(board = "microbit")]
const CORE_HZ: u64 = 16_000_000;

struct SysTickDriver {
    ticks: Mutex<Cell<u64>>,
    queue: Mutex<RefCell<Queue>>,
}

impl Driver for SysTickDriver {
    fn now(&self) -> u64 {
        critical_section::with(|cs| self.ticks.borrow(cs).get())
    }

    fn schedule_wake(&self, at: u64, waker: &Waker) {
        // The tick interrupt checks the queue every tick, so there is no
        // alarm to program: a wake-up due now fires at the next tick.
        critical_section::with(|cs| {
            self.queue.borrow_ref_mut(cs).schedule_wake(at, waker);
        });
    }
}

embassy_time_driver::time_driver_impl!(static DRIVER: SysTickDriver = SysTickDriver {
    ticks: Mutex::new(Cell::new(0)),
    queue: Mutex::new(RefCell::new(Queue::new())),
});

/// Starts the tick interrupt.
pub fn start(mut syst: SYST) {
    const RELOAD: u64 = CORE_HZ / TICK_HZ - 1;
    const _: () = assert!(
        RELOAD > 0 && RELOAD < (1 << 24),
        "SysTick reload out of range"
    );
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(RELOAD as u32);
    syst.clear_current();
    syst.enable_interrupt();
    syst.enable_counter();
}

#[exception]
fn SysTick() {
    let now = critical_section::with(|cs| {
        let ticks = DRIVER.ticks.borrow(cs);
        ticks.set(ticks.get() + 1);
        ticks.get()
    });
    critical_section::with(|cs| {
        DRIVER.queue.borrow_ref_mut(cs).next_expiration(now);
    });
    crate::on_tick(embassy_time::Instant::from_ticks(now));
}
