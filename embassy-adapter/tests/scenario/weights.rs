//! The weighted-seat scenario, shared word for word by the QEMU firmware
//! (`firmware/src/main.rs` includes this file with `#[path]` when built
//! with `--features weights`) and the host test `tests/weights_scenario.rs`.
//! It uses the counters and flags of the main scenario (`scenario/mod.rs`),
//! which both include as `crate::scenario`.
//!
//! Two `static` compartments, shared by eight tasks. As in the main
//! scenario, every outcome is fixed by the order of events, not by timing:
//! each task waits for a flag that the previous step sets.
//!
//! **"dma"**, 3 seats (channels), first come first served:
//!
//! 1. `dma_holder` takes all three as one seat of weight 2 merged with one
//!    of weight 1, then splits one off again (3 held, in two seats).
//! 2. `dma_heavy` queues for two channels at once.
//! 3. The holder gives one channel back: one is free, but the heavy
//!    waiter needs two, so the free one is kept for it. A newcomer's
//!    `try_acquire` is refused, and so is a weight above the limit.
//! 4. Two `dma_light` tasks queue for one channel each, *with a channel
//!    free*: neither may pass the heavy waiter.
//! 5. The holder splits one more channel off and gives it back: two are
//!    free, and they go to the heavy waiter, not the lights.
//! 6. The holder gives back its last channel: the first light gets it.
//! 7. The heavy task splits one channel off its seat and gives it back
//!    early: the second light gets it.
//!
//! The tasks log themselves as they are admitted (`H`, then each light's
//! index), so the order checked is `H01`. Every holder counts its weight
//! in and out, and the peak is checked against the limit.
//!
//! **"uart"**, 1 seat, newest first ([`QueueOrder::Lifo`]), at most 2
//! waiters, built from a `const` [`Config`]: three `uart_waiter`s queue in
//! turn behind `uart_owner`; the third arrival drops the oldest waiter
//! (drop-oldest, `QueueFull`), and the seat then goes to the newest first:
//! served order `21`, one dropped.

#![allow(dead_code)]

use core::cell::Cell;
use core::fmt::{self, Write};

use bulkhead_embassy::{Bulkhead, Config, EmbassyAcquire, Error, QueueOrder, raw::RawMutex};
use critical_section::Mutex;
use embassy_time::{Duration, Timer};

use crate::scenario::{Count, Flag, Log};

/// Uses of the scenario's roles; the runner waits for all of them.
pub const ROLES: u32 = 8;
/// How many light (weight 1) DMA users.
pub const LIGHTS: u32 = 2;
/// How many UART waiters.
pub const UART_WAITERS: u32 = 3;

/// DMA channels.
const CHANNELS: usize = 3;
/// A budget that must never run out in this scenario.
const PATIENT: Duration = Duration::from_secs(2);

/// The two compartments and their callers' records. Lives in a `static`.
pub struct Weights<M: RawMutex + 'static> {
    /// Three channels, oldest first.
    pub dma: Bulkhead<M>,
    /// One seat, newest first, at most two waiters.
    pub uart: Bulkhead<M>,
    /// `(seats held by the callers, peak)`, by weight.
    dma_inside: Mutex<Cell<(u32, u32)>>,
    dma_order: Log,
    dma_held: Flag,
    heavy_queued: Flag,
    one_free: Flag,
    lights_queued: Count,
    heavy_admitted: Flag,
    lights_admitted: Count,
    uart_held: Flag,
    uart_queued: Count,
    uart_order: Log,
    uart_dropped: Count,
    finished: Count,
    /// The first thing that went wrong, if anything did.
    failure: Mutex<Cell<Option<&'static str>>>,
}

impl<M: RawMutex + 'static> Weights<M> {
    /// The scenario, in a `static`: the compartments are built at compile
    /// time, the LIFO one from a `const` [`Config`].
    pub const fn new() -> Self {
        Self {
            dma: bulkhead_embassy::new_static("dma", CHANNELS),
            uart: Bulkhead::<M>::from_config_static(
                Config::new("uart", 1)
                    .max_waiting(2)
                    .queue_order(QueueOrder::Lifo),
            ),
            dma_inside: Mutex::new(Cell::new((0, 0))),
            dma_order: Log::new(),
            dma_held: Flag::new(),
            heavy_queued: Flag::new(),
            one_free: Flag::new(),
            lights_queued: Count::new(),
            heavy_admitted: Flag::new(),
            lights_admitted: Count::new(),
            uart_held: Flag::new(),
            uart_queued: Count::new(),
            uart_order: Log::new(),
            uart_dropped: Count::new(),
            finished: Count::new(),
            failure: Mutex::new(Cell::new(None)),
        }
    }

    fn fail(&self, why: &'static str) {
        critical_section::with(|cs| {
            let f = self.failure.borrow(cs);
            if f.get().is_none() {
                f.set(Some(why));
            }
        });
    }

    /// Fails with `why` unless `ok`; returns `ok`.
    fn check(&self, ok: bool, why: &'static str) -> bool {
        if !ok {
            self.fail(why);
        }
        ok
    }

    /// How many roles have finished.
    pub fn finished(&self) -> u32 {
        self.finished.get()
    }

    /// Polls `cond` every millisecond for at most 5 s.
    async fn until(&self, what: &'static str, cond: impl Fn() -> bool) -> bool {
        for _ in 0..5000 {
            if cond() {
                return true;
            }
            Timer::after(Duration::from_millis(1)).await;
        }
        self.fail(what);
        false
    }

    /// Counts `n` DMA channels in (`true`) or out, and the peak.
    fn dma_count(&self, n: u32, taken: bool) {
        critical_section::with(|cs| {
            let cell = self.dma_inside.borrow(cs);
            let (inside, peak) = cell.get();
            let inside = if taken {
                inside + n
            } else {
                inside.saturating_sub(n)
            };
            cell.set((inside, peak.max(inside)));
        });
    }

    /// `(active, waiting)` as the DMA compartment counts them.
    fn dma_state(&self) -> (usize, usize) {
        let s = self.dma.state();
        (s.active, s.waiting)
    }

    // --- dma ---

    /// Holds all three channels, then gives them back one by one at the
    /// steps the other DMA roles wait for.
    pub async fn dma_holder(&'static self) {
        self.holder_steps().await;
        self.finished.add(1);
    }

    async fn holder_steps(&'static self) {
        let (Ok(mut seat), Ok(one)) = (self.dma.try_acquire_many(2), self.dma.try_acquire()) else {
            return self.fail("dma_holder: the idle compartment refused");
        };
        self.dma_count(3, true);
        let merged = seat.merge(one).is_ok();
        if !self.check(
            merged && seat.weight() == 3,
            "dma_holder: merge did not make one seat of 3",
        ) {
            return;
        }
        let Ok(early) = seat.split(1) else {
            return self.fail("dma_holder: split(1) of a seat of 3 failed");
        };
        if !self.check(
            (seat.weight(), early.weight(), self.dma_state()) == (2, 1, (3, 0)),
            "dma_holder: split changed the compartment's count",
        ) {
            return;
        }
        self.dma_held.set();
        if !self
            .until("dma_holder: the heavy task never queued", || {
                self.heavy_queued.get()
            })
            .await
        {
            return;
        }

        // One channel free; the head of the line needs two.
        self.dma_count(1, false);
        drop(early);
        let newcomer = self.dma.try_acquire();
        self.check(
            matches!(newcomer, Err(Error::Full { .. })),
            "dma_holder: a newcomer took the channel kept for the heavy waiter",
        );
        drop(newcomer);
        self.check(
            matches!(
                self.dma.try_acquire_many(CHANNELS + 1),
                Err(Error::WeightAboveLimit { weight: 4, .. })
            ),
            "dma_holder: a weight above the limit was not refused as such",
        );
        self.check(
            self.dma_state() == (2, 1),
            "dma_holder: the heavy waiter got a channel too early",
        );
        self.one_free.set();
        if !self
            .until("dma_holder: the light tasks never queued", || {
                self.lights_queued.get() == LIGHTS
            })
            .await
        {
            return;
        }
        self.check(
            self.dma_state() == (2, 3),
            "dma_holder: a light task passed the heavy one",
        );

        // Two free: both go to the heavy waiter, at the head.
        let Ok(second) = seat.split(1) else {
            return self.fail("dma_holder: split(1) of a seat of 2 failed");
        };
        self.dma_count(1, false);
        drop(second);
        self.check(
            self.dma_state() == (3, 2),
            "dma_holder: the freed channels did not go to the heavy waiter",
        );
        if !self
            .until("dma_holder: the heavy task was never admitted", || {
                self.heavy_admitted.get()
            })
            .await
        {
            return;
        }
        // The last channel: the first light's.
        self.dma_count(1, false);
        drop(seat);
    }

    /// Waits for two channels at once, then gives one back early.
    pub async fn dma_heavy(&'static self) {
        if self
            .until("dma_heavy: the holder never took the channels", || {
                self.dma_held.get()
            })
            .await
        {
            let wait = self.dma.acquire_many_within(2, PATIENT);
            // Set in the same poll in which `wait` joins the line.
            self.heavy_queued.set();
            match wait.await {
                Ok(mut seat) => {
                    self.dma_count(2, true);
                    self.dma_order.push(b'H');
                    self.check(
                        seat.weight() == 2,
                        "dma_heavy: admitted with the wrong weight",
                    );
                    self.heavy_admitted.set();
                    if self
                        .until("dma_heavy: the first light was never admitted", || {
                            self.lights_admitted.get() == 1
                        })
                        .await
                    {
                        match seat.split(1) {
                            Ok(part) => {
                                self.dma_count(1, false);
                                drop(part);
                                self.check(
                                    seat.weight() == 1 && self.dma_state() == (3, 0),
                                    "dma_heavy: the channel given back early did not go to the second light",
                                );
                            }
                            Err(_) => self.fail("dma_heavy: split(1) of a seat of 2 failed"),
                        }
                        self.until("dma_heavy: the second light was never admitted", || {
                            self.lights_admitted.get() == LIGHTS
                        })
                        .await;
                    }
                    self.dma_count(seat.weight() as u32, false);
                }
                Err(_) => self.fail("dma_heavy: a patient wait for two channels was refused"),
            }
        }
        self.finished.add(1);
    }

    /// Light task `index` (0 or 1): queues for one channel while one is
    /// free, behind the heavy waiter.
    pub async fn dma_light(&'static self, index: u32) {
        if self
            .until("dma_light: its turn to queue never came", || {
                self.one_free.get() && self.lights_queued.get() == index
            })
            .await
        {
            let wait = self.dma.acquire_within(PATIENT);
            self.lights_queued.add(1);
            match wait.await {
                Ok(seat) => {
                    self.dma_count(1, true);
                    // `index` is 0 or 1, so the mark is an ASCII digit.
                    self.dma_order.push(b'0' + index as u8);
                    self.lights_admitted.add(1);
                    // Held until both lights are in, so that the second
                    // one's channel can only be the heavy task's.
                    self.until("dma_light: the other light was never admitted", || {
                        self.lights_admitted.get() == LIGHTS
                    })
                    .await;
                    self.dma_count(1, false);
                    drop(seat);
                }
                Err(_) => self.fail("dma_light: a patient wait was refused"),
            }
        }
        self.finished.add(1);
    }

    // --- uart ---

    /// Holds the UART seat until three waiters have come.
    pub async fn uart_owner(&'static self) {
        match self.uart.try_acquire() {
            Ok(seat) => {
                self.uart_held.set();
                self.until("uart_owner: the waiters never queued", || {
                    self.uart_queued.get() == UART_WAITERS
                })
                .await;
                // The third arrival dropped the first: two wait.
                self.check(
                    self.uart.state().waiting == 2,
                    "uart_owner: a full newest-first queue did not drop its oldest waiter",
                );
                drop(seat);
            }
            Err(_) => self.fail("uart_owner: the idle compartment refused"),
        }
        self.finished.add(1);
    }

    /// Waiter `index` (0 to 2) queues after the ones before it.
    pub async fn uart_waiter(&'static self, index: u32) {
        if self
            .until("uart_waiter: its turn to queue never came", || {
                self.uart_held.get() && self.uart_queued.get() == index
            })
            .await
        {
            let wait = self.uart.acquire_within(PATIENT);
            self.uart_queued.add(1);
            match wait.await {
                Ok(seat) => {
                    // `index` is below 3, so the mark is an ASCII digit.
                    self.uart_order.push(b'0' + index as u8);
                    Timer::after(Duration::from_millis(1)).await;
                    drop(seat);
                }
                Err(Error::QueueFull { .. }) => self.uart_dropped.add(1),
                Err(_) => self.fail("uart_waiter: refused other than by drop-oldest"),
            }
        }
        self.finished.add(1);
    }

    // --- the verdict ---

    /// Checks everything and writes the summary. Call once every role has
    /// finished. Returns whether the scenario passed.
    pub fn report(&self, out: &mut impl Write) -> Result<bool, fmt::Error> {
        let mut ok = true;

        let peak = critical_section::with(|cs| self.dma_inside.borrow(cs).get().1);
        let s = self.dma.state();
        write!(out, "weights-dma: limit={CHANNELS} peak={peak} order=")?;
        self.dma_order.write(out)?;
        writeln!(
            out,
            " rejected={} timed_out={} active={} waiting={}",
            s.rejected, s.timed_out, s.active, s.waiting
        )?;
        ok &= peak as usize == CHANNELS
            && self.dma_order.is(b"H01")
            && (s.rejected, s.timed_out, s.active, s.waiting) == (2, 0, 0, 0);
        // Every channel is back: all three at once, at once.
        ok &= self.dma.try_acquire_many(CHANNELS).is_ok();

        let s = self.uart.state();
        let order = match self.uart.queue_order() {
            QueueOrder::Fifo => "fifo",
            QueueOrder::Lifo => "lifo",
        };
        write!(out, "weights-uart: order={order} served=")?;
        self.uart_order.write(out)?;
        let dropped = self.uart_dropped.get();
        writeln!(
            out,
            " dropped={dropped} rejected={} active={} waiting={}",
            s.rejected, s.active, s.waiting
        )?;
        ok &= self.uart_order.is(b"21")
            && dropped == 1
            && (s.rejected, s.active, s.waiting) == (1, 0, 0);

        let finished = self.finished.get();
        if finished != ROLES {
            writeln!(out, "FAIL: weights: {finished} of {ROLES} roles finished")?;
            ok = false;
        }
        if let Some(why) = critical_section::with(|cs| self.failure.borrow(cs).get()) {
            writeln!(out, "FAIL: {why}")?;
            ok = false;
        }
        writeln!(out, "weights: {}", if ok { "PASS" } else { "FAIL" })?;
        Ok(ok)
    }
}
