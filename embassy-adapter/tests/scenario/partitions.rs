//! The partitioned-compartment scenario, shared word for word by the QEMU
//! firmware (`firmware/src/main.rs` includes this file with `#[path]` when
//! built with `--features partitions`) and the host test
//! `tests/partitions_scenario.rs`. It uses the counters, flags and log of
//! the main scenario (`scenario/mod.rs`), which both include as
//! `crate::scenario`.
//!
//! One compartment, "bus", 4 seats, two partitions:
//!
//! - **`isr`**: share 2, priority 1, lends its idle seats;
//! - **`background`**: share 2, may borrow up to the whole compartment.
//!
//! 1. Six `background` tasks flood it: four get seats (two of their own,
//!    two borrowed from `isr`), two wait in `background`'s line. Each task
//!    parks its seat with the interrupt handler.
//! 2. The interrupt handler ([`Partitions::interrupt_tick`], SysTick on the
//!    device, a thread on the host) tries to take an `isr` seat: refused,
//!    the borrowed seats are still running. It wakes the two `isr` tasks,
//!    which wait for a seat (5 s budget).
//! 3. The handler gives the parked seats back, one per tick, from interrupt
//!    context; a partition seat's release takes the compartment's lock,
//!    which is why the compartment uses `CriticalSectionRawMutex`. After
//!    each release it checks both partitions' `(active, borrowed, lent,
//!    waiting)` against [`STEPS`]: the first two freed seats go to the
//!    `isr` waiters, though the `background` waiters queued earlier; then
//!    `background` borrows again as `isr` goes idle.
//! 4. At last the handler takes an `isr` seat itself, and gives it back.
//!
//! Every outcome is fixed by the order of events, not by timing: the
//! handler moves to the next step only once every seat handed out has been
//! parked (so the tasks' log, `BBBBIIBB`, is fixed too), and no budget runs
//! out. A mismatch fails the run, naming the step.

#![allow(dead_code)]

use core::cell::{Cell, RefCell};
use core::fmt::{self, Write};

use bulkhead_embassy::partition::{Amount, PartitionConfig, PartitionId};
use bulkhead_embassy::raw::CriticalSectionRawMutex;
use bulkhead_embassy::{EmbassyAcquirePartition, Error, PartitionSeat, Partitioned};
use critical_section::Mutex;
use embassy_sync::once_lock::OnceLock;
use embassy_sync::signal::Signal;
use embassy_time::Duration;

use crate::scenario::{Count, Log};

/// Uses of the scenario's roles; the runner waits for all of them.
pub const ROLES: u32 = BACKGROUND_TASKS + ISR_TASKS;
/// Tasks of each partition.
pub const BACKGROUND_TASKS: u32 = 6;
pub const ISR_TASKS: u32 = 2;

/// The compartment's limit.
const SEATS: usize = 4;
/// A budget that must never run out in this scenario.
const PATIENT: Duration = Duration::from_secs(5);
/// Ticks the handler waits for the tasks at one step before it gives up.
const STALL_TICKS: u32 = 5000;
/// What the tasks log as they get their seats, in order.
const ORDER: &[u8] = b"BBBBIIBB";

type Cs = CriticalSectionRawMutex;
type Seat = PartitionSeat<'static, Cs>;

/// A partition's `(active, borrowed, lent, waiting)`.
pub type Counts = (usize, usize, usize, usize);

/// Which partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Isr,
    Background,
}

/// What the handler does at a step, before it checks the counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Nothing: the flood and both `isr` waiters are in place.
    Start,
    /// Gives back one parked seat of the partition.
    Release(Part),
    /// Takes an `isr` seat itself (checked while held, then given back).
    TakeIsr,
}

/// One step: the action, then both partitions' expected counts.
pub struct Step {
    pub action: Action,
    pub isr: Counts,
    pub background: Counts,
}

const fn step(action: Action, isr: Counts, background: Counts) -> Step {
    Step {
        action,
        isr,
        background,
    }
}

use Action::{Release, Start, TakeIsr};
use Part::{Background, Isr};

/// The expected counts, `(active, borrowed, lent, waiting)`, after each
/// step. `lent` counts `isr`'s idle seats that `background` holds beyond
/// its share.
pub const STEPS: [Step; 10] = [
    // Background holds all four (two borrowed from isr); two of each wait.
    step(Start, (0, 0, 2, 2), (4, 2, 0, 2)),
    // A freed seat goes to isr (below its share), not the older background waiter.
    step(Release(Background), (1, 0, 1, 1), (3, 1, 0, 2)),
    step(Release(Background), (2, 0, 0, 0), (2, 0, 0, 2)),
    // isr gives one back: background borrows it again.
    step(Release(Isr), (1, 0, 1, 0), (3, 1, 0, 1)),
    step(Release(Background), (1, 0, 1, 0), (3, 1, 0, 0)),
    step(Release(Isr), (0, 0, 1, 0), (3, 1, 0, 0)),
    step(Release(Background), (0, 0, 0, 0), (2, 0, 0, 0)),
    step(Release(Background), (0, 0, 0, 0), (1, 0, 0, 0)),
    step(Release(Background), (0, 0, 0, 0), (0, 0, 0, 0)),
    // All idle: the handler's own try is admitted now.
    step(TakeIsr, (1, 0, 0, 0), (0, 0, 0, 0)),
];

/// Where the handler is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for the flood; then tries an `isr` seat and wakes the
    /// `isr` tasks.
    Flood,
    /// Waiting for both `isr` tasks to queue; then checks step 0.
    Queue,
    /// Next, this step of [`STEPS`].
    Step(usize),
    Done,
}

/// The first thing that went wrong.
#[derive(Debug, Clone, Copy)]
struct Failure {
    step: usize,
    what: &'static str,
    /// Both partitions' counts, for a mismatch.
    got: Option<(Counts, Counts)>,
}

/// The compartment and its partitions' ids, built at start-up.
struct Bus {
    compartment: Partitioned<Cs>,
    isr: PartitionId,
    background: PartitionId,
}

/// Seats parked with the handler, by partition.
struct Parked {
    isr: [Option<Seat>; SEATS],
    background: [Option<Seat>; SEATS],
}

impl Parked {
    fn slots(&mut self, part: Part) -> &mut [Option<Seat>; SEATS] {
        match part {
            Part::Isr => &mut self.isr,
            Part::Background => &mut self.background,
        }
    }

    fn len(&self) -> usize {
        self.isr.iter().chain(&self.background).flatten().count()
    }
}

/// The scenario's state. Lives in a `static`.
pub struct Partitions {
    /// Built by [`start`](Self::start): `Partitioned::new` checks the
    /// partitions, so it is not `const`. Set before the handler or any
    /// task can look (the firmware's `main` and the host test's thread
    /// both start it first), so `OnceLock`'s relaxed flag suffices.
    bus: OnceLock<Bus>,
    parked: Mutex<RefCell<Parked>>,
    /// One per `isr` task: a `Signal` holds one waker.
    wake: [Signal<Cs, ()>; ISR_TASKS as usize],
    phase: Mutex<Cell<Phase>>,
    /// Ticks spent at the current step.
    stalled: Mutex<Cell<u32>>,
    /// Steps checked and passed.
    passed: Count,
    /// The handler's `isr` tries that were refused.
    refused: Count,
    order: Log,
    finished: Count,
    failure: Mutex<Cell<Option<Failure>>>,
}

impl Partitions {
    pub const fn new() -> Self {
        Self {
            bus: OnceLock::new(),
            parked: Mutex::new(RefCell::new(Parked {
                isr: [const { None }; SEATS],
                background: [const { None }; SEATS],
            })),
            wake: [const { Signal::new() }; ISR_TASKS as usize],
            phase: Mutex::new(Cell::new(Phase::Flood)),
            stalled: Mutex::new(Cell::new(0)),
            passed: Count::new(),
            refused: Count::new(),
            order: Log::new(),
            finished: Count::new(),
            failure: Mutex::new(Cell::new(None)),
        }
    }

    /// Builds the compartment. Call before spawning the tasks.
    pub fn start(&self) {
        // Checked without `expect`: its `Debug` formatting would weigh
        // more in flash than the scenario itself.
        let Ok(compartment) = Partitioned::new(
            "bus",
            SEATS,
            &[
                PartitionConfig::new("isr", Amount::Seats(2)).priority(1),
                PartitionConfig::new("background", Amount::Seats(2)),
            ],
        ) else {
            return self.fail(0, "the compartment's configuration was refused", None);
        };
        let (Ok(isr), Ok(background)) = (compartment.id("isr"), compartment.id("background"))
        else {
            return self.fail(0, "a partition is missing", None);
        };
        if self
            .bus
            .init(Bus {
                compartment,
                isr,
                background,
            })
            .is_err()
        {
            self.fail(0, "started twice", None);
        }
    }

    fn fail(&self, step: usize, what: &'static str, got: Option<(Counts, Counts)>) {
        critical_section::with(|cs| {
            let f = self.failure.borrow(cs);
            if f.get().is_none() {
                f.set(Some(Failure { step, what, got }));
            }
        });
    }

    fn phase(&self) -> Phase {
        critical_section::with(|cs| self.phase.borrow(cs).get())
    }

    fn set_phase(&self, phase: Phase) {
        critical_section::with(|cs| {
            self.phase.borrow(cs).set(phase);
            self.stalled.borrow(cs).set(0);
        });
    }

    /// How many roles have finished.
    pub fn finished(&self) -> u32 {
        self.finished.get()
    }

    /// Whether the handler has run every step (or given up).
    pub fn done(&self) -> bool {
        self.phase() == Phase::Done
    }

    fn park(&self, part: Part, seat: Seat) {
        let refused = critical_section::with(|cs| {
            let mut parked = self.parked.borrow_ref_mut(cs);
            match parked.slots(part).iter_mut().find(|s| s.is_none()) {
                Some(slot) => {
                    *slot = Some(seat);
                    None
                }
                None => Some(seat),
            }
        });
        if refused.is_some() {
            self.fail(0, "more seats held than the compartment has", None);
        }
    }

    fn unpark(&self, part: Part) -> Option<Seat> {
        critical_section::with(|cs| {
            let mut parked = self.parked.borrow_ref_mut(cs);
            parked.slots(part).iter_mut().find_map(Option::take)
        })
    }

    fn parked(&self) -> usize {
        critical_section::with(|cs| self.parked.borrow_ref(cs).len())
    }

    // --- the tasks ---

    /// Waits for a `background` seat and parks it with the handler.
    pub async fn background(&'static self) {
        self.take(Part::Background, b'B').await;
    }

    /// Waits until the handler wakes it, then for an `isr` seat, and parks
    /// it with the handler.
    pub async fn isr(&'static self, index: usize) {
        self.wake[index].wait().await;
        self.take(Part::Isr, b'I').await;
    }

    async fn take(&'static self, part: Part, mark: u8) {
        if let Some(bus) = self.bus.try_get() {
            let id = match part {
                Part::Isr => bus.isr,
                Part::Background => bus.background,
            };
            match bus.compartment.acquire_within(id, PATIENT).await {
                Ok(seat) => {
                    self.order.push(mark);
                    self.park(part, seat);
                }
                Err(Error::Timeout { .. }) => self.fail(0, "a patient wait timed out", None),
                Err(_) => self.fail(0, "a patient wait was turned away", None),
            }
        } else {
            self.fail(0, "a task ran before the compartment was built", None);
        }
        self.finished.add(1);
    }

    // --- the interrupt handler ---

    /// Called from an interrupt handler (SysTick on the device) or a thread
    /// standing in for one, every tick: moves the scenario on by at most
    /// one step. Seats are given back and taken right here.
    pub fn interrupt_tick(&self) {
        let Some(bus) = self.bus.try_get() else {
            return;
        };
        let p = &bus.compartment;
        match self.phase() {
            Phase::Flood => {
                let flooded = p
                    .partition_state(bus.background)
                    .is_ok_and(|s| s.active == SEATS && s.waiting == 2)
                    && self.parked() == SEATS;
                if !flooded {
                    return self.stall(0, "the background tasks never filled the compartment");
                }
                match p.try_acquire(bus.isr) {
                    Err(Error::PartitionFull { .. }) => self.refused.add(1),
                    Err(_) => self.fail(0, "the handler's isr try failed, but not as full", None),
                    Ok(seat) => {
                        drop(seat);
                        self.fail(0, "the handler got an isr seat while all were taken", None);
                    }
                }
                for signal in &self.wake {
                    signal.signal(());
                }
                self.set_phase(Phase::Queue);
            }
            Phase::Queue => {
                if p.partition_state(bus.isr)
                    .is_ok_and(|s| s.waiting == ISR_TASKS as usize)
                {
                    self.check(bus, 0);
                    self.set_phase(Phase::Step(1));
                } else {
                    self.stall(0, "the isr tasks never queued");
                }
            }
            Phase::Step(k) => {
                // Every seat handed out is parked: the tasks are done with
                // the previous step.
                if self.parked() != p.state().active {
                    return self.stall(k, "a granted seat was never parked");
                }
                match STEPS[k].action {
                    Action::Start => {}
                    Action::Release(part) => match self.unpark(part) {
                        Some(seat) => drop(seat),
                        None => self.fail(k, "no parked seat of that partition", None),
                    },
                    Action::TakeIsr => match p.try_acquire(bus.isr) {
                        Ok(seat) => {
                            self.check(bus, k);
                            drop(seat);
                        }
                        Err(_) => self.fail(k, "the handler was refused an idle isr seat", None),
                    },
                }
                if STEPS[k].action != Action::TakeIsr {
                    self.check(bus, k);
                }
                let next = k + 1;
                self.set_phase(if next < STEPS.len() {
                    Phase::Step(next)
                } else {
                    Phase::Done
                });
            }
            Phase::Done => {}
        }
    }

    /// Counts a tick without progress; gives up after [`STALL_TICKS`].
    fn stall(&self, step: usize, what: &'static str) {
        let stalled = critical_section::with(|cs| {
            let c = self.stalled.borrow(cs);
            c.set(c.get() + 1);
            c.get()
        });
        if stalled > STALL_TICKS {
            self.fail(step, what, None);
            self.set_phase(Phase::Done);
        }
    }

    /// Checks both partitions against step `k`.
    fn check(&self, bus: &Bus, k: usize) {
        let counts = |id| {
            bus.compartment
                .partition_state(id)
                .map(|s| (s.active, s.borrowed, s.lent, s.waiting))
                .unwrap_or((usize::MAX, 0, 0, 0))
        };
        let got = (counts(bus.isr), counts(bus.background));
        if got == (STEPS[k].isr, STEPS[k].background) {
            self.passed.add(1);
        } else {
            self.fail(k, "counts differ", Some(got));
        }
    }

    // --- the verdict ---

    /// Checks everything and writes the summary. Call once every role has
    /// finished and the handler is done. Returns whether the scenario
    /// passed.
    pub fn report(&self, out: &mut impl Write) -> Result<bool, fmt::Error> {
        let passed = self.passed.get();
        let refused = self.refused.get();
        write!(out, "partitions: steps={passed} order=")?;
        self.order.write(out)?;
        let mut ok = passed as usize == STEPS.len() && self.order.is(ORDER) && refused == 1;
        match self.bus.try_get() {
            Some(bus) => {
                let p = &bus.compartment;
                let state = p.state();
                let (isr, background) = (
                    p.partition_state(bus.isr).ok(),
                    p.partition_state(bus.background).ok(),
                );
                let rejected = isr.as_ref().map_or(usize::MAX, |s| s.rejected);
                writeln!(
                    out,
                    " refused={refused} rejected={rejected} timed_out={} active={} waiting={}",
                    state.timed_out, state.active, state.waiting
                )?;
                // The handler's refused try is the only rejection.
                ok &= rejected == 1
                    && background.is_some_and(|s| s.rejected == 0)
                    && (state.timed_out, state.active, state.waiting) == (0, 0, 0)
                    && self.parked() == 0;
            }
            None => {
                writeln!(out)?;
                writeln!(out, "FAIL: partitions: the compartment was never built")?;
                ok = false;
            }
        }
        let finished = self.finished.get();
        if finished != ROLES {
            writeln!(
                out,
                "FAIL: partitions: {finished} of {ROLES} roles finished"
            )?;
            ok = false;
        }
        if let Some(f) = critical_section::with(|cs| self.failure.borrow(cs).get()) {
            write!(out, "FAIL: partitions: step {}: {}", f.step, f.what)?;
            if let Some((isr, background)) = f.got {
                let want = &STEPS[f.step];
                write!(out, "; (active, borrowed, lent, waiting) isr=")?;
                write_counts(out, isr)?;
                write!(out, " background=")?;
                write_counts(out, background)?;
                write!(out, ", expected isr=")?;
                write_counts(out, want.isr)?;
                write!(out, " background=")?;
                write_counts(out, want.background)?;
            }
            writeln!(out)?;
            ok = false;
        }
        if !self.order.is(ORDER) {
            write!(
                out,
                "FAIL: partitions: seats went out in the wrong order, expected "
            )?;
            for &mark in ORDER {
                out.write_char(char::from(mark))?;
            }
            writeln!(out)?;
        }
        writeln!(out, "partitions: {}", if ok { "PASS" } else { "FAIL" })?;
        Ok(ok)
    }
}

/// Writes `(active, borrowed, lent, waiting)` with `Display` only: `Debug`
/// for tuples would cost flash for a line printed only on failure.
fn write_counts(out: &mut impl Write, (a, b, l, w): Counts) -> fmt::Result {
    write!(out, "({a}, {b}, {l}, {w})")
}
