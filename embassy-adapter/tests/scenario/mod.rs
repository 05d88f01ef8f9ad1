//! The firmware scenario, shared word for word by the QEMU firmware
//! (`firmware/src/main.rs` includes this file with `#[path]`) and the host
//! test `tests/firmware_scenario.rs`.
//!
//! Two compartments, "flash" (1 seat) and "radio" (2 seats), are shared by
//! eight tasks. The outcome of every call is fixed by the order of events,
//! not by timing: waits are ordered with flags that a task sets in the same
//! poll in which it joins the line, and the only timing assumption is that
//! a 5 ms budget runs out before a 2 s one.
//!
//! - `flash_owner` takes the flash seat and parks it in [`Scenario::slot`];
//!   the interrupt handler ([`Scenario::interrupt_tick`], SysTick on the
//!   device, a thread on the host) drops it there 20 ms later.
//! - `flash_waiter` waits (2 s budget) and is handed that seat by the
//!   interrupt handler. It keeps it until `flash_impatient` is done.
//! - `flash_impatient` queues behind it with a 5 ms budget and times out,
//!   on purpose.
//! - `flash_probe` fails fast while the seat is taken.
//! - three `radio_user`s take a radio seat four times each (2 s budget),
//!   and `radio_probe` fails fast while both radio seats are taken.
//!
//! Every holder counts itself in and out, so the peak number inside each
//! compartment is measured, and checked against its limit.
//!
//! The scenario is generic over [`Compartment`], so that the same program
//! can be built with embassy-sync's `FairSemaphore` for a footprint
//! comparison.

#![allow(dead_code)]

use core::cell::{Cell, RefCell};
use core::fmt::{self, Write};
use core::future::Future;

use bulkhead_embassy::{EmbassyAcquire, Error, Seat, raw::RawMutex};
use critical_section::Mutex;
use embassy_sync::blocking_mutex::raw::CriticalSectionRawMutex;
use embassy_sync::semaphore::{FairSemaphore, Semaphore, SemaphoreReleaser};
use embassy_time::{Duration, Instant, Timer};

/// Uses of the scenario's roles; the runner waits for all of them.
pub const ROLES: u32 = 8;
/// How many radio users, and how many rounds each.
pub const RADIO_USERS: u32 = 3;
pub const RADIO_ROUNDS: u32 = 4;

/// How long the interrupt handler keeps the parked flash seat.
const PARK_FOR: Duration = Duration::from_millis(20);
/// A budget that must never run out in this scenario.
const PATIENT: Duration = Duration::from_secs(2);
/// A budget that must run out: the seat is handed to an earlier waiter.
const IMPATIENT: Duration = Duration::from_millis(5);
/// How long a radio user keeps its seat per round.
const RADIO_HOLD: Duration = Duration::from_millis(5);

// === Compartment: what the scenario needs from a primitive ===

/// Why a compartment turned a caller away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// No seat, no wait budget (or a full wait queue).
    Full,
    /// The wait budget ran out.
    Timeout,
}

/// A concurrency limiter the scenario can drive.
pub trait Compartment: Sync + 'static {
    /// Proof of a taken seat; gives it back on drop.
    type Permit<'a>
    where
        Self: 'a;
    /// Printed in the summary.
    const PRIMITIVE: &'static str;
    /// Takes a seat now or fails.
    fn try_enter(&self) -> Option<Self::Permit<'_>>;
    /// Waits at most `budget` for a seat.
    fn enter_within(
        &self,
        budget: Duration,
    ) -> impl Future<Output = Result<Self::Permit<'_>, Refused>>;
    /// Callers waiting now.
    fn waiting(&self) -> usize;
    /// `(rejected, timed_out, active)` as counted by the compartment (for
    /// `FairSemaphore`, which counts nothing, by its wrapper [`Fair`]).
    fn own_counters(&self) -> (usize, usize, usize);
}

impl<M: RawMutex + Sync + 'static> Compartment for bulkhead_embassy::Bulkhead<M> {
    type Permit<'a> = Seat<'a, M>;
    const PRIMITIVE: &'static str = "bulkhead";

    fn try_enter(&self) -> Option<Self::Permit<'_>> {
        self.try_acquire().ok()
    }

    async fn enter_within(&self, budget: Duration) -> Result<Self::Permit<'_>, Refused> {
        match self.acquire_within(budget).await {
            Ok(seat) => Ok(seat),
            Err(Error::Timeout { .. }) => Err(Refused::Timeout),
            Err(_) => Err(Refused::Full),
        }
    }

    fn waiting(&self) -> usize {
        self.state().waiting
    }

    fn own_counters(&self) -> (usize, usize, usize) {
        let s = self.state();
        (s.rejected, s.timed_out, s.active)
    }
}

/// embassy-sync's `FairSemaphore`, with room for 8 waiters, as the
/// comparison primitive. `FairSemaphore` counts nothing, so the wrapper
/// keeps the counts our compartment keeps (rejections, timeouts, seats
/// taken, callers waiting): both programs print and check the same lines
/// from the same state, and the footprint comparison is like for like.
pub struct Fair {
    semaphore: FairSemaphore<CriticalSectionRawMutex, 8>,
    rejected: Count,
    timed_out: Count,
    active: Count,
    waiting: Count,
}

impl Fair {
    /// A semaphore with `permits` permits.
    pub const fn new(permits: usize) -> Self {
        Self {
            semaphore: FairSemaphore::new(permits),
            rejected: Count::new(),
            timed_out: Count::new(),
            active: Count::new(),
            waiting: Count::new(),
        }
    }

    /// A permit taken: counted as active until it is dropped. The permit
    /// is given back by [`FairPermit`]'s drop, after it was counted out.
    fn permit(
        &self,
        releaser: SemaphoreReleaser<'_, FairSemaphore<CriticalSectionRawMutex, 8>>,
    ) -> FairPermit<'_> {
        releaser.disarm();
        self.active.add(1);
        FairPermit(self)
    }

    fn try_take(&self) -> Result<FairPermit<'_>, Refused> {
        match self.semaphore.try_acquire(1) {
            Some(releaser) => Ok(self.permit(releaser)),
            None => {
                self.rejected.add(1);
                Err(Refused::Full)
            }
        }
    }
}

/// A `FairSemaphore` permit, counted out of [`Fair`]'s active seats on
/// drop, before the permit itself goes back.
pub struct FairPermit<'a>(&'a Fair);

impl Drop for FairPermit<'_> {
    fn drop(&mut self) {
        self.0.active.sub(1);
        self.0.semaphore.release(1);
    }
}

/// A caller in [`Fair`]'s line, counted out when its wait ends however it
/// ends.
struct FairWaiting<'a>(&'a Count);

impl Drop for FairWaiting<'_> {
    fn drop(&mut self) {
        self.0.sub(1);
    }
}

impl Compartment for Fair {
    type Permit<'a> = FairPermit<'a>;
    const PRIMITIVE: &'static str = "fair-semaphore";

    fn try_enter(&self) -> Option<Self::Permit<'_>> {
        self.try_take().ok()
    }

    async fn enter_within(&self, budget: Duration) -> Result<Self::Permit<'_>, Refused> {
        if budget.as_ticks() == 0 {
            return self.try_take();
        }
        self.waiting.add(1);
        let waiting = FairWaiting(&self.waiting);
        let outcome = embassy_time::with_timeout(budget, self.semaphore.acquire(1)).await;
        drop(waiting);
        match outcome {
            Ok(Ok(releaser)) => Ok(self.permit(releaser)),
            Ok(Err(_queue_full)) => {
                self.rejected.add(1);
                Err(Refused::Full)
            }
            Err(_timeout) => {
                self.timed_out.add(1);
                Err(Refused::Timeout)
            }
        }
    }

    fn waiting(&self) -> usize {
        self.waiting.get() as usize
    }

    fn own_counters(&self) -> (usize, usize, usize) {
        (
            self.rejected.get() as usize,
            self.timed_out.get() as usize,
            self.active.get() as usize,
        )
    }
}

// === Counters, usable from tasks and interrupt handlers alike ===

/// A counter in a critical section: works without CAS (thumbv6m).
pub struct Count(Mutex<Cell<u32>>);

impl Count {
    pub const fn new() -> Self {
        Self(Mutex::new(Cell::new(0)))
    }

    pub fn add(&self, n: u32) {
        critical_section::with(|cs| {
            let c = self.0.borrow(cs);
            c.set(c.get().saturating_add(n));
        });
    }

    /// Takes `n` off, stopping at zero.
    pub fn sub(&self, n: u32) {
        critical_section::with(|cs| {
            let c = self.0.borrow(cs);
            c.set(c.get().saturating_sub(n));
        });
    }

    /// The current value.
    pub fn get(&self) -> u32 {
        critical_section::with(|cs| self.0.borrow(cs).get())
    }
}

/// What happened in one compartment, as seen by its callers.
pub struct Stats {
    /// `(inside, peak)`, updated together.
    inside: Mutex<Cell<(u32, u32)>>,
    admitted: Count,
    rejected: Count,
    timed_out: Count,
}

impl Stats {
    const fn new() -> Self {
        Self {
            inside: Mutex::new(Cell::new((0, 0))),
            admitted: Count::new(),
            rejected: Count::new(),
            timed_out: Count::new(),
        }
    }

    fn inside(&self) -> u32 {
        critical_section::with(|cs| self.inside.borrow(cs).get().0)
    }

    fn peak(&self) -> u32 {
        critical_section::with(|cs| self.inside.borrow(cs).get().1)
    }
}

/// A seat held by the scenario: counted in on creation, counted out on
/// drop *before* the seat itself is given back, so that the count can never
/// run ahead of the compartment.
pub struct Inside<'s, P> {
    stats: &'s Stats,
    _permit: P,
}

impl<'s, P> Inside<'s, P> {
    fn enter(stats: &'s Stats, permit: P) -> Self {
        stats.admitted.add(1);
        critical_section::with(|cs| {
            let cell = stats.inside.borrow(cs);
            let (inside, peak) = cell.get();
            cell.set((inside + 1, peak.max(inside + 1)));
        });
        Self {
            stats,
            _permit: permit,
        }
    }
}

impl<P> Drop for Inside<'_, P> {
    fn drop(&mut self) {
        critical_section::with(|cs| {
            let cell = self.stats.inside.borrow(cs);
            let (inside, peak) = cell.get();
            cell.set((inside.saturating_sub(1), peak));
        });
        // `_permit` is dropped after this: the seat is given back now.
    }
}

/// A one-way flag.
pub struct Flag(Mutex<Cell<bool>>);

impl Flag {
    pub const fn new() -> Self {
        Self(Mutex::new(Cell::new(false)))
    }

    pub fn set(&self) {
        critical_section::with(|cs| self.0.borrow(cs).set(true));
    }

    pub fn get(&self) -> bool {
        critical_section::with(|cs| self.0.borrow(cs).get())
    }
}

/// Up to 8 one-byte marks, in the order they were logged.
pub struct Log(Mutex<Cell<([u8; 8], usize)>>);

impl Log {
    pub const fn new() -> Self {
        Self(Mutex::new(Cell::new(([0; 8], 0))))
    }

    pub fn push(&self, mark: u8) {
        critical_section::with(|cs| {
            let cell = self.0.borrow(cs);
            let (mut marks, len) = cell.get();
            if len < marks.len() {
                marks[len] = mark;
                cell.set((marks, len + 1));
            }
        });
    }

    pub fn get(&self) -> ([u8; 8], usize) {
        critical_section::with(|cs| self.0.borrow(cs).get())
    }

    pub fn is(&self, expected: &[u8]) -> bool {
        let (marks, len) = self.get();
        &marks[..len] == expected
    }

    pub fn write(&self, out: &mut impl Write) -> fmt::Result {
        let (marks, len) = self.get();
        for &mark in &marks[..len] {
            out.write_char(char::from(mark))?;
        }
        Ok(())
    }
}

// === The scenario ===

type Parked<C> = (
    Inside<'static, <C as Compartment>::Permit<'static>>,
    Instant,
);

/// Two compartments, their callers' statistics, and the interrupt handler's
/// parking slot. Lives in a `static`.
pub struct Scenario<C: Compartment> {
    /// One seat.
    pub flash: C,
    /// Two seats.
    pub radio: C,
    flash_stats: Stats,
    radio_stats: Stats,
    /// A flash seat the interrupt handler gives back at the given instant.
    slot: Mutex<RefCell<Option<Parked<C>>>>,
    isr_released: Count,
    isr_handed_off: Count,
    waiter_queued: Flag,
    impatient_done: Flag,
    finished: Count,
    /// The first thing that went wrong, if anything did.
    failure: Mutex<Cell<Option<&'static str>>>,
}

impl<C: Compartment> Scenario<C> {
    /// A scenario over `flash` (must have 1 seat) and `radio` (2 seats).
    pub const fn new(flash: C, radio: C) -> Self {
        Self {
            flash,
            radio,
            flash_stats: Stats::new(),
            radio_stats: Stats::new(),
            slot: Mutex::new(RefCell::new(None)),
            isr_released: Count::new(),
            isr_handed_off: Count::new(),
            waiter_queued: Flag::new(),
            impatient_done: Flag::new(),
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

    // --- flash ---

    /// Takes the flash seat, and parks it for the interrupt handler to give
    /// back once a waiter is in line.
    pub async fn flash_owner(&'static self) {
        match self.flash.try_enter() {
            Some(permit) => {
                let inside = Inside::enter(&self.flash_stats, permit);
                self.until("flash_owner: the waiter never queued", || {
                    self.waiter_queued.get()
                })
                .await;
                let at = Instant::now().saturating_add(PARK_FOR);
                critical_section::with(|cs| {
                    *self.slot.borrow_ref_mut(cs) = Some((inside, at));
                });
            }
            None => self.fail("flash_owner: the idle flash compartment refused"),
        }
        self.finished.add(1);
    }

    /// Waits for the seat the interrupt handler gives back.
    pub async fn flash_waiter(&'static self) {
        if self
            .until("flash_waiter: the owner never got in", || {
                self.flash_stats.inside() == 1
            })
            .await
        {
            let wait = self.flash.enter_within(PATIENT);
            // Set in the same poll in which `wait` joins the line: whoever
            // sees the flag runs after this waiter queued.
            self.waiter_queued.set();
            match wait.await {
                Ok(permit) => {
                    let _inside = Inside::enter(&self.flash_stats, permit);
                    self.until("flash_waiter: the impatient caller never finished", || {
                        self.impatient_done.get()
                    })
                    .await;
                    Timer::after(Duration::from_millis(2)).await;
                }
                Err(_) => self.fail("flash_waiter: was refused a seat the ISR gave back"),
            }
        }
        self.finished.add(1);
    }

    /// Queues behind the waiter with a short budget, which runs out.
    pub async fn flash_impatient(&'static self) {
        if self
            .until("flash_impatient: the waiter never queued", || {
                self.waiter_queued.get()
            })
            .await
        {
            match self.flash.enter_within(IMPATIENT).await {
                Err(Refused::Timeout) => self.flash_stats.timed_out.add(1),
                Err(Refused::Full) => {
                    self.flash_stats.rejected.add(1);
                    self.fail("flash_impatient: turned away instead of timing out");
                }
                Ok(permit) => {
                    let _inside = Inside::enter(&self.flash_stats, permit);
                    self.fail("flash_impatient: jumped the line");
                }
            }
        }
        self.impatient_done.set();
        self.finished.add(1);
    }

    /// Fails fast while the seat is taken.
    pub async fn flash_probe(&'static self) {
        if self
            .until("flash_probe: the owner never got in", || {
                self.flash_stats.inside() == 1
            })
            .await
        {
            match self.flash.try_enter() {
                None => self.flash_stats.rejected.add(1),
                Some(permit) => {
                    let _inside = Inside::enter(&self.flash_stats, permit);
                    self.fail("flash_probe: admitted beyond the limit");
                }
            }
        }
        self.finished.add(1);
    }

    // --- radio ---

    /// Takes a radio seat [`RADIO_ROUNDS`] times.
    pub async fn radio_user(&'static self) {
        for _ in 0..RADIO_ROUNDS {
            match self.radio.enter_within(PATIENT).await {
                Ok(permit) => {
                    let _inside = Inside::enter(&self.radio_stats, permit);
                    Timer::after(RADIO_HOLD).await;
                }
                Err(Refused::Timeout) => {
                    self.radio_stats.timed_out.add(1);
                    self.fail("radio_user: a patient wait timed out");
                }
                Err(Refused::Full) => {
                    self.radio_stats.rejected.add(1);
                    self.fail("radio_user: a patient wait was turned away");
                }
            }
        }
        self.finished.add(1);
    }

    /// Fails fast while both radio seats are taken.
    pub async fn radio_probe(&'static self) {
        if self
            .until("radio_probe: the radio never filled up", || {
                self.radio_stats.inside() == 2
            })
            .await
        {
            // Nothing can run between the check and this call on the
            // device (cooperative tasks, and no interrupt releases radio
            // seats); on the host, all tasks share one thread.
            match self.radio.try_enter() {
                None => self.radio_stats.rejected.add(1),
                Some(permit) => {
                    let _inside = Inside::enter(&self.radio_stats, permit);
                    self.fail("radio_probe: admitted beyond the limit");
                }
            }
        }
        self.finished.add(1);
    }

    // --- the interrupt handler ---

    /// Called from an interrupt handler (SysTick on the device) or a
    /// thread standing in for one: gives the parked flash seat back once
    /// its time has come. The seat is dropped right here, in interrupt
    /// context.
    pub fn interrupt_tick(&self, now: Instant) {
        let parked = critical_section::with(|cs| {
            let mut slot = self.slot.borrow_ref_mut(cs);
            match &*slot {
                Some((_, at)) if *at <= now => slot.take(),
                _ => None,
            }
        });
        if let Some((inside, _)) = parked {
            if self.flash.waiting() > 0 {
                self.isr_handed_off.add(1);
            }
            drop(inside);
            self.isr_released.add(1);
        }
    }

    /// Whether the interrupt handler still holds a seat.
    pub fn slot_empty(&self) -> bool {
        critical_section::with(|cs| self.slot.borrow_ref(cs).is_none())
    }

    // --- the verdict ---

    /// Checks everything and writes the summary. Call once every role has
    /// finished. Returns whether the scenario passed.
    pub fn report(&self, out: &mut impl Write) -> Result<bool, fmt::Error> {
        let mut ok = true;
        writeln!(out, "bulkhead-scenario: primitive={}", C::PRIMITIVE)?;
        ok &= self.report_one(out, "flash", &self.flash, &self.flash_stats, 1, (2, 1, 1))?;
        let radio = (RADIO_USERS * RADIO_ROUNDS, 1, 0);
        ok &= self.report_one(out, "radio", &self.radio, &self.radio_stats, 2, radio)?;

        let released = self.isr_released.get();
        let handed_off = self.isr_handed_off.get();
        writeln!(out, "isr: released={released} handed_off={handed_off}")?;
        ok &= released == 1 && handed_off == 1 && self.slot_empty();

        let finished = self.finished.get();
        if finished != ROLES {
            writeln!(out, "FAIL: {finished} of {ROLES} roles finished")?;
            ok = false;
        }
        if let Some(why) = critical_section::with(|cs| self.failure.borrow(cs).get()) {
            writeln!(out, "FAIL: {why}")?;
            ok = false;
        }
        writeln!(out, "RESULT: {}", if ok { "PASS" } else { "FAIL" })?;
        Ok(ok)
    }

    fn report_one(
        &self,
        out: &mut impl Write,
        name: &str,
        compartment: &C,
        stats: &Stats,
        limit: u32,
        (admitted, rejected, timed_out): (u32, u32, u32),
    ) -> Result<bool, fmt::Error> {
        let peak = stats.peak();
        let got = (
            stats.admitted.get(),
            stats.rejected.get(),
            stats.timed_out.get(),
        );
        writeln!(
            out,
            "{name}: limit={limit} peak={peak} admitted={} rejected={} timed_out={}",
            got.0, got.1, got.2
        )?;
        let mut ok = peak <= limit && got == (admitted, rejected, timed_out);
        if !ok {
            writeln!(
                out,
                "FAIL: {name}: expected peak<={limit} admitted={admitted} \
                 rejected={rejected} timed_out={timed_out}"
            )?;
        }
        // The compartment's own counters must agree with its callers', and
        // every seat must be back: the next caller gets in at once.
        let (own_rejected, own_timed_out, active) = compartment.own_counters();
        writeln!(
            out,
            "{name}: own counters rejected={own_rejected} timed_out={own_timed_out} active={active}"
        )?;
        if (own_rejected, own_timed_out, active) != (rejected as usize, timed_out as usize, 0) {
            writeln!(out, "FAIL: {name}: its own counters disagree")?;
            ok = false;
        }
        let free = compartment.try_enter().is_some();
        if !free {
            writeln!(out, "FAIL: {name}: a seat was lost")?;
            ok = false;
        }
        Ok(ok)
    }
}
