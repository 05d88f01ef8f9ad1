//! Tests from an independent review of the partition code: each failed on
//! the code before its fix (a granted seat given back twice when `abandon`
//! unwound, a seat leaked when a waker in the taking section panicked,
//! wakers cloned and dropped under the lock, a partition that could hold
//! nothing, reconfiguring while paused, `try_acquire` and a wait
//! disagreeing on equal ranks).
extern crate std;

use std::boxed::Box;
use std::cell::Cell;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Wake, Waker};
use std::vec::Vec;

use super::*;
use crate::RawLock;

std::thread_local! {
    static IN_LOCK: Cell<bool> = const { Cell::new(false) };
}

/// A std-mutex lock that can be told to panic (before running the
/// closure, as promise 4 allows) on its next call, and that flags "held"
/// in a thread-local while its closure runs.
#[derive(Default)]
struct ReviewLock {
    m: Mutex<()>,
    panic_next: AtomicBool,
}

// SAFETY: a std mutex: mutual exclusion with release/acquire, no spurious try failure (the try locks), unlock on unwind (a guard); a refusal panics before `f` (promise 4).
unsafe impl RawLock for ReviewLock {
    unsafe fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
        if self.panic_next.swap(false, Ordering::SeqCst) {
            panic!("lock refuses this context");
        }
        let _g = self.m.lock().unwrap_or_else(|e| e.into_inner());
        struct Flag;
        impl Drop for Flag {
            fn drop(&mut self) {
                IN_LOCK.with(|c| c.set(false));
            }
        }
        IN_LOCK.with(|c| c.set(true));
        let _flag = Flag;
        f()
    }
    unsafe fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        // SAFETY: forwarded from our own caller.
        Some(unsafe { self.with_lock(f) })
    }
    // This test reads no counts.
    fn counts(&self) -> crate::Counts {
        crate::Counts::NONE
    }
}

impl crate::lock::ConstInit for ReviewLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self {
        m: Mutex::new(()),
        panic_next: AtomicBool::new(false),
    };
}

struct Count(AtomicUsize);
impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}
fn counting() -> (Arc<Count>, Waker) {
    let c = Arc::new(Count(AtomicUsize::new(0)));
    (c.clone(), Waker::from(c))
}
fn poll<F: Future>(f: Pin<&mut F>, w: &Waker) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(w))
}

/// A waker that, when woken, calls back into the compartment (as an
/// executor that polls inline may), catching what the call does.
struct Reentrant {
    db: Arc<Partitioned<crate::CsLock>>,
    id: PartitionId,
    outcome: Mutex<Option<std::thread::Result<Result<(), Error>>>>,
}
impl Wake for Reentrant {
    fn wake(self: Arc<Self>) {
        let db = self.db.clone();
        let id = self.id;
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            db.try_acquire(id)
                .map(core::mem::forget::<PartitionSeat<&_>>)
        }));
        *self.outcome.lock().unwrap() = Some(r);
    }
}
struct Bomb;
impl Wake for Bomb {
    fn wake(self: Arc<Self>) {
        panic!("waker");
    }
}

/// Finding 2: a section that takes a seat (`take_now`, `start`) also
/// serves, and runs other tasks' wakers before it returns; if one of them
/// panics, the taken seat is counted and never given back.
#[test]
fn r2_a_panicking_waker_in_a_taking_section_leaks_the_seat() {
    let db = Arc::new(
        Partitioned::<crate::CsLock>::new(
            "db",
            20,
            &[
                PartitionConfig::new("a", Amount::Seats(10)),
                PartitionConfig::new("b", Amount::Seats(10)).lendable(Amount::Seats(0)),
            ],
        )
        .unwrap(),
    );
    let (a, b) = (db.id("a").unwrap(), db.id("b").unwrap());
    let many = db.try_acquire_many(a, 10).unwrap();
    let re = Arc::new(Reentrant {
        db: db.clone(),
        id: b,
        outcome: Mutex::new(None),
    });
    let re_waker = Waker::from(re.clone());
    let bomb = Waker::from(Arc::new(Bomb));
    let (_, w) = counting();
    let mut waits: Vec<_> = (0..10).map(|_| Box::pin(db.acquire(a))).collect();
    for (k, f) in waits.iter_mut().enumerate() {
        let waker = match k {
            0 => &re_waker,
            8 => &bomb,
            _ => &w,
        };
        assert!(poll(f.as_mut(), waker).is_pending());
    }
    // The release grants 8 (a full batch); waking the first waiter calls
    // try_acquire(b), whose section serves waiters 9 and 10; waiter 9's
    // waker panics inside that try_acquire.
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(many)));
    std::eprintln!("release panicked: {}", r.is_err());
    let outcome = re.outcome.lock().unwrap().take().expect("woken");
    assert!(
        outcome.is_err(),
        "try_acquire(b) panicked: no seat returned"
    );
    drop(waits); // every granted wait gives its seat back
    let s = db.partition_state(b).unwrap();
    assert_eq!(s.active, 0, "b holds {} seat(s) nobody has", s.active);
}

static CLONES_UNDER_LOCK: AtomicUsize = AtomicUsize::new(0);
fn probe_waker() -> Waker {
    fn clone(_: *const ()) -> RawWaker {
        if IN_LOCK.with(|c| c.get()) {
            CLONES_UNDER_LOCK.fetch_add(1, Ordering::SeqCst);
        }
        RawWaker::new(core::ptr::null(), &VTABLE)
    }
    fn noop(_: *const ()) {}
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, noop, noop, noop);
    // SAFETY: the vtable's functions ignore the null data pointer.
    unsafe { Waker::from_raw(RawWaker::new(core::ptr::null(), &VTABLE)) }
}

/// Finding 3: `start` clones the waker inside the section.
#[test]
fn r3_a_waker_is_cloned_under_the_lock() {
    let db: Partitioned<ReviewLock> =
        Partitioned::new("db", 1, &[PartitionConfig::new("a", Amount::Seats(1))]).unwrap();
    let a = db.id("a").unwrap();
    let held = db.try_acquire(a).unwrap();
    let w = probe_waker();
    let mut f = pin!(db.acquire(a));
    assert!(poll(f.as_mut(), &w).is_pending());
    assert_eq!(
        CLONES_UNDER_LOCK.load(Ordering::SeqCst),
        0,
        "waker cloned under the lock"
    );
    drop(held);
}

/// Finding 4: a partition that could never hold a seat (the others
/// reserve every seat) is refused when built, instead of hanging its
/// waiters.
#[test]
fn r4_a_partition_that_could_hold_nothing_is_refused() {
    let r = Partitioned::<crate::CsLock>::new(
        "db",
        4,
        &[
            PartitionConfig::new("a", Amount::Seats(4)).lendable(Amount::Seats(0)),
            PartitionConfig::new("b", Amount::Seats(0)),
        ],
    );
    let e = r.expect_err("refused");
    assert!(
        matches!(&e, ConfigError::EmptyPartition { partition, .. } if partition == "b"),
        "{e}"
    );
}

/// Finding 5: reconfigure while paused (limit 0) resolves at 0.
#[test]
fn r5_reconfigure_while_paused_is_refused() {
    let db = Partitioned::<crate::CsLock>::new(
        "db",
        4,
        &[
            PartitionConfig::new("a", Amount::Seats(2)),
            PartitionConfig::new("b", Amount::Seats(2)),
        ],
    )
    .unwrap();
    db.set_max_concurrent(0).unwrap();
    let r = db.reconfigure(&[
        PartitionConfig::new("a", Amount::Seats(2)).priority(3),
        PartitionConfig::new("b", Amount::Seats(2)),
    ]);
    assert!(r.is_ok(), "{}", r.unwrap_err());
}

std::thread_local! {
    static BEFORE_LOCK: core::cell::RefCell<Option<Box<dyn FnOnce()>>> =
        const { core::cell::RefCell::new(None) };
}

/// A std-mutex lock whose next `with_lock` on this thread first runs a
/// hook (a stand-in for the thread being descheduled just before it takes
/// the mutex).
#[derive(Default)]
struct HookLock(Mutex<()>);
// SAFETY: as `ReviewLock`: a std mutex, and the hook runs before it is taken.
unsafe impl RawLock for HookLock {
    unsafe fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
        if let Some(hook) = BEFORE_LOCK.with(|h| h.borrow_mut().take()) {
            hook();
        }
        let _g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f()
    }
    unsafe fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        // SAFETY: forwarded from our own caller.
        Some(unsafe { self.with_lock(f) })
    }
    // This test reads no counts.
    fn counts(&self) -> crate::Counts {
        crate::Counts::NONE
    }
}

/// Wakes by blocking until told to go on, after saying it started.
struct Stall {
    started: Mutex<Option<std::sync::mpsc::Sender<()>>>,
    go: Mutex<Option<std::sync::mpsc::Receiver<()>>>,
}
impl Wake for Stall {
    fn wake(self: Arc<Self>) {
        if let Some(tx) = self.started.lock().unwrap().take() {
            tx.send(()).unwrap();
            let rx = self.go.lock().unwrap().take().unwrap();
            rx.recv().unwrap();
        }
    }
}

/// Finding 1 (current tree): `abandon` finds the node linked, another
/// thread grants it before `abandon`'s section runs, and that section's
/// serve runs a panicking waker. `Settle::drop` gives the seat back, the
/// future stays `Queued` + `Granted`, and its `Drop` gives it back again.
#[test]
fn r1b_a_panic_in_abandons_section_releases_a_granted_seat_twice() {
    let db = Arc::new(
        Partitioned::<HookLock>::with_lock(
            crate::Name::from_static("db"),
            20,
            &[PartitionConfig::new("a", Amount::Seats(20))],
            HookLock::default(),
        )
        .unwrap(),
    );
    let a = db.id("a").unwrap();
    let extra = db.try_acquire(a).unwrap(); // held to the end
    let many = PartitionSeat::try_acquire_many(db.clone(), a, 19).unwrap();
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel();
    let stall = Waker::from(Arc::new(Stall {
        started: Mutex::new(Some(started_tx)),
        go: Mutex::new(Some(go_rx)),
    }));
    let bomb = Waker::from(Arc::new(Bomb));
    let (_, w) = counting();
    // f first, then the staller, then 6 more (a batch of 8), then a bomb.
    let mut f = Box::pin(PartitionSeat::acquire(db.clone(), a));
    assert!(poll(f.as_mut(), &w).is_pending());
    let mut others: Vec<_> = (0..8)
        .map(|_| Box::pin(PartitionSeat::acquire(db.clone(), a)))
        .collect();
    for (k, g) in others.iter_mut().enumerate() {
        let waker = match k {
            0 => &stall,
            7 => &bomb,
            _ => &w,
        };
        assert!(poll(g.as_mut(), waker).is_pending());
    }
    assert_eq!(db.partition_state(a).unwrap().waiting, 9);
    let mut t2: Option<std::thread::JoinHandle<()>> = None;
    BEFORE_LOCK.with(|h| {
        *h.borrow_mut() = Some(Box::new({
            let t2 = &mut t2 as *mut Option<std::thread::JoinHandle<()>>;
            let started_rx = started_rx;
            move || {
                // Another thread releases 19 seats: its section grants
                // f and 7 others (a full batch), then it wakes them.
                let h = std::thread::spawn(move || drop(many));
                started_rx.recv().unwrap();
                // SAFETY: the pointer is to a local of this test, alive until `t2` is joined below, and written by this thread only.
                unsafe { *t2 = Some(h) };
            }
        }));
    });
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = f.as_mut().abandon();
    }));
    assert!(r.is_err(), "the bomb went off in abandon's section");
    go_tx.send(()).unwrap();
    t2.take().unwrap().join().unwrap();
    drop(f);
    drop(others);
    let s = db.partition_state(a).unwrap();
    assert_eq!(s.active, 1, "`extra` is held, but active = {}", s.active);
    drop(extra);
}

static DROPS_UNDER_LOCK: AtomicUsize = AtomicUsize::new(0);
fn probe_waker2() -> Waker {
    fn clone(_: *const ()) -> RawWaker {
        RawWaker::new(core::ptr::null(), &VTABLE)
    }
    fn drop_(_: *const ()) {
        if IN_LOCK.with(|c| c.get()) {
            DROPS_UNDER_LOCK.fetch_add(1, Ordering::SeqCst);
        }
    }
    fn noop(_: *const ()) {}
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, noop, noop, drop_);
    // SAFETY: the vtable's functions ignore the null data pointer.
    unsafe { Waker::from_raw(RawWaker::new(core::ptr::null(), &VTABLE)) }
}

/// Finding 3b: a newcomer turned away by a full FIFO line drops its waker
/// clone inside `Table::link`, under the lock.
#[test]
fn r3b_a_waker_is_dropped_under_the_lock_on_queue_full() {
    let db: Partitioned<ReviewLock> = Partitioned::new(
        "db",
        1,
        &[PartitionConfig::new("a", Amount::Seats(1)).max_waiting(0)],
    )
    .unwrap();
    let a = db.id("a").unwrap();
    let held = db.try_acquire(a).unwrap();
    let w = probe_waker2();
    let mut f = pin!(db.acquire(a));
    assert!(matches!(
        poll(f.as_mut(), &w),
        Poll::Ready(Err(Error::QueueFull { .. }))
    ));
    assert_eq!(
        DROPS_UNDER_LOCK.load(Ordering::SeqCst),
        0,
        "waker dropped under the lock"
    );
    drop(held);
}

/// Finding 7: on equal ranks `admit` refuses a newcomer that `serve`
/// grants at once when the same caller queues instead.
#[test]
fn r6_try_acquire_refused_while_acquire_is_served_at_once() {
    let db = Partitioned::<crate::CsLock>::new(
        "db",
        4,
        &[
            PartitionConfig::new("a", Amount::Seats(1)),
            PartitionConfig::new("b", Amount::Seats(1)),
        ],
    )
    .unwrap();
    let (a, b) = (db.id("a").unwrap(), db.id("b").unwrap());
    let _a2 = db.try_acquire_many(a, 2).unwrap(); // a above its share
    let _b1 = db.try_acquire(b).unwrap(); // b at its share, A = 3
    let (_, w) = counting();
    let mut bw = pin!(db.acquire_many(b, 2)); // eligible, does not fit
    assert!(poll(bw.as_mut(), &w).is_pending());
    // The same decision twice, from the same state: the try's seat is
    // given back before the wait asks.
    let tried = db.try_acquire(a).map(drop);
    let mut aw = pin!(db.acquire(a));
    let queued = poll(aw.as_mut(), &w);
    assert_eq!(
        tried.is_ok(),
        matches!(queued, Poll::Ready(Ok(_))),
        "try_acquire: {:?}, acquire: {:?}",
        tried,
        queued.map(|r| r.map(|_| ()))
    );
}

/// A core bug found by the shuttle test (`partitioned_workload_with_resizes_and_close`
/// deadlocks on every seed): `reconfigure` resolves the new settings at
/// `max(limit, resumes_at)`, and `resumes_at` is the limit before the
/// last pause, or the limit the compartment was built with. So after a
/// shrink below that limit (no pause at all), `reconfigure` resolves the
/// shares at the old, larger limit: here at 4 while the limit is 2. `b`
/// then keeps a reserve of 1 (its share of 2 less the 1 it lends) out of
/// 2 seats, and a wait of `a` for 2 seats (eligible and not oversized:
/// `a` may hold 3) is never served, with every seat free. The settings
/// should be resolved at the current limit unless it is 0 (they are now;
/// the reference model, which had mirrored the same `max`, follows).
#[test]
fn reconfigure_after_a_shrink_resolves_at_the_current_limit() {
    let configs = [
        PartitionConfig::new("a", Amount::Percent(50)),
        PartitionConfig::new("b", Amount::Percent(50)).lendable(Amount::Seats(1)),
    ];
    let db = Partitioned::<crate::CsLock>::new("db", 4, &configs).unwrap();
    let fresh = Partitioned::<crate::CsLock>::new("db", 2, &configs).unwrap();
    let (a, b) = (db.id("a").unwrap(), db.id("b").unwrap());
    db.set_max_concurrent(2).unwrap();
    db.reconfigure(&configs).unwrap();
    for id in [a, b] {
        assert_eq!(
            db.partition_state(id).unwrap(),
            fresh
                .partition_state(fresh.id(&db.partition_config(id).unwrap().name).unwrap())
                .unwrap(),
            "reconfigured at 2 seats, resolved as at another limit"
        );
    }
    // What it costs: with both seats free, a wait for both is not served.
    let (_, w) = counting();
    let mut wait = pin!(db.acquire_many(a, 2));
    let got = poll(wait.as_mut(), &w);
    assert!(
        matches!(got, Poll::Ready(Ok(_))),
        "a wait for the whole free compartment: {:?}, {:?}",
        got.map(|r| r.map(|_| ())),
        db.state()
    );
}
