//! Regression tests for soundness defects found in review: a lock that
//! panics, a future re-polled after a panic, and reconfiguration at the
//! limit. They run under miri too, except the one that needs a child
//! process to watch the process abort.

use std::boxed::Box;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use super::memory::drop_panicking_waker;
use super::{Task, TestLock, boxed, fifo, ready_err};
use crate::{Admission, Bulkhead, Config, Error, MAX_CONCURRENT_LIMIT, RawLock};

/// A lock that panics before running the closure, `refusals` times, as
/// embassy's `ThreadModeRawMutex` does outside thread mode (allowed by
/// promise 4 of `RawLock`).
#[derive(Default)]
struct RefusingLock {
    inner: TestLock,
    refusals: AtomicUsize,
}

impl RefusingLock {
    fn refuse(&self, times: usize) {
        self.refusals.store(times, Ordering::SeqCst);
    }

    fn check(&self) {
        let refused = self
            .refusals
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if refused {
            panic!("RefusingLock: refused to lock");
        }
    }
}

// SAFETY: delegates to `TestLock`, which keeps promises 1 to 3; the panic
// comes before `f` and without the lock held (promise 4).
unsafe impl RawLock for RefusingLock {
    unsafe fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
        self.check();
        // SAFETY: forwarded from our own caller.
        unsafe { self.inner.with_lock(f) }
    }
    unsafe fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        self.check();
        // SAFETY: forwarded from our own caller.
        unsafe { self.inner.try_with_lock(f) }
    }
    // This test reads no counts.
    fn counts(&self) -> crate::Counts {
        crate::Counts::NONE
    }
}

fn refusing(config: Config) -> Bulkhead<RefusingLock> {
    Bulkhead::with_lock(config, RefusingLock::default()).unwrap()
}

/// Defect 1: dropping a queued future whose lock panics once. Before the
/// fix the unwind freed the future while its node was still linked, and
/// the release below walked freed memory (miri: a dangling `&Node`).
#[cfg(feature = "barging")]
#[test]
fn a_queued_future_dropped_while_the_lock_panics_once_is_unlinked() {
    for admission in [
        Admission::Fifo,
        Admission::Barging,
        Admission::BoundedBarging,
    ] {
        let b = refusing(Config::new("refusing", 1).admission(admission));
        let held = b.try_acquire().unwrap();
        let t = Task::new();
        let mut waiter = boxed(b.acquire());
        assert!(t.poll(waiter.as_mut()).is_pending());
        assert_eq!(b.state().waiting, 1);
        b.raw_lock().refuse(1);
        let dropped = catch_unwind(AssertUnwindSafe(|| drop(waiter)));
        assert!(dropped.is_err(), "the lock's panic propagates");
        assert_eq!(b.state().waiting, 0, "the node was unlinked anyway");
        drop(held); // must not touch the freed node
        let s = b.state();
        assert_eq!((s.active, s.waiting), (0, 0));
        assert!(b.try_acquire().is_ok(), "{admission:?}: nothing stranded");
    }
}

/// Defect 1, the same through `abandon` and `time_out`: the future
/// outlives the panic and is inert afterwards.
#[test]
fn abandon_and_time_out_survive_a_lock_that_panics_once() {
    let b = refusing(Config::new("refusing", 1));
    let held = b.try_acquire().unwrap();
    let t = Task::new();
    let mut a = boxed(b.acquire());
    let mut d = boxed(b.acquire());
    assert!(t.poll(a.as_mut()).is_pending());
    assert!(t.poll(d.as_mut()).is_pending());
    b.raw_lock().refuse(1);
    assert!(catch_unwind(AssertUnwindSafe(|| a.as_mut().abandon())).is_err());
    b.raw_lock().refuse(1);
    let timed_out = catch_unwind(AssertUnwindSafe(|| {
        let _ = d.as_mut().time_out(core::time::Duration::ZERO);
    }));
    assert!(timed_out.is_err());
    assert_eq!(b.state().waiting, 0);
    drop((a, d));
    drop(held);
    assert_eq!(b.state().active, 0);
    assert!(b.try_acquire().is_ok());
}

/// Defect 1: a lock that panics while a future re-polls leaves the node
/// linked and the future alive, which is sound; the next poll or the drop
/// then works.
#[cfg(feature = "barging")]
#[test]
fn a_lock_that_panics_during_a_repoll_leaves_the_future_usable() {
    let b = refusing(Config::new("refusing", 1).admission(Admission::Barging));
    let held = b.try_acquire().unwrap();
    let t = Task::new();
    let mut waiter = boxed(b.acquire());
    assert!(t.poll(waiter.as_mut()).is_pending());
    b.raw_lock().refuse(1);
    assert!(catch_unwind(AssertUnwindSafe(|| t.poll(waiter.as_mut()))).is_err());
    assert_eq!(b.state().waiting, 1, "still in line");
    drop(held);
    assert!(matches!(t.poll(waiter.as_mut()), Poll::Ready(Ok(_))));
}

/// Defect 1: when the lock panics inside `enqueue`, the node was never
/// linked, so dropping the future needs no lock at all, even one that
/// keeps refusing.
#[test]
fn a_future_whose_enqueue_was_refused_is_dropped_without_the_lock() {
    let b = refusing(Config::new("refusing", 1));
    let held = b.try_acquire().unwrap();
    let t = Task::new();
    let mut waiter = boxed(b.acquire());
    b.raw_lock().refuse(usize::MAX);
    assert!(catch_unwind(AssertUnwindSafe(|| t.poll(waiter.as_mut()))).is_err());
    drop(waiter); // would panic if it took the lock
    b.raw_lock().refuse(0);
    drop(held);
    assert!(b.try_acquire().is_ok());
}

/// Defect 1: a lock that keeps refusing while a queued future is dropped.
/// The node cannot be unlinked, so the process must abort rather than free
/// it. Runs the scenario in a child process (the test binary itself) and
/// checks that it aborted with core's message, not with undefined
/// behaviour or an ordinary panic.
#[test]
#[cfg_attr(miri, ignore = "needs a child process")]
fn a_queued_future_dropped_while_the_lock_keeps_panicking_aborts() {
    const CHILD: &str = "BULKHEAD_CORE_ABORT_CHILD";
    const NAME: &str =
        "tests::soundness::a_queued_future_dropped_while_the_lock_keeps_panicking_aborts";
    if std::env::var_os(CHILD).is_some() {
        let b = refusing(Config::new("refusing", 1));
        // Kept from dropping while the panic unwinds, whose release would
        // take the lock again.
        let _held = core::mem::ManuallyDrop::new(b.try_acquire().unwrap());
        let mut waiter = boxed(b.acquire());
        assert!(Task::new().poll(waiter.as_mut()).is_pending());
        b.raw_lock().refuse(usize::MAX);
        drop(waiter);
        unreachable!("dropping a linked future whose lock refuses must abort");
    }
    let stderr = super::run_aborting_child(NAME, CHILD);
    assert!(
        stderr.contains("panic in a destructor during cleanup"),
        "not core's abort:\n{stderr}"
    );
    assert_eq!(
        stderr.matches("RefusingLock: refused to lock").count(),
        2,
        "not the lock's panic, then core's retry while unwinding:\n{stderr}"
    );
}

/// Defect 3: the queue is full and dropping the discarded waker panics, so
/// the first poll unwinds before it can report `QueueFull`. The next poll
/// must run the attempt again (and count the rejection), not sit in
/// `Pending` with no waker registered.
#[cfg(all(feature = "barging", feature = "queue-limits"))]
#[test]
fn a_poll_cut_short_on_the_queue_full_path_runs_again() {
    static ARMED: AtomicBool = AtomicBool::new(false);
    for admission in [
        Admission::Fifo,
        Admission::Barging,
        Admission::BoundedBarging,
    ] {
        let b = super::with_config(Config::new("q", 1).max_waiting(0).admission(admission));
        let held = b.try_acquire().unwrap();
        let mut waiter = boxed(b.acquire());
        let waker = drop_panicking_waker(&ARMED);
        ARMED.store(true, Ordering::SeqCst);
        let first = catch_unwind(AssertUnwindSafe(|| {
            let _ = waiter.as_mut().poll(&mut Context::from_waker(&waker));
        }));
        assert!(first.is_err(), "dropping the stale waker panicked");
        let t = Task::new();
        let err = ready_err(t.poll(waiter.as_mut()));
        assert!(matches!(err, Error::QueueFull { .. }), "{err:?}");
        assert_eq!(b.state().rejected, 1, "{admission:?}: counted once");
        drop(held);
    }
}

/// Defect 3, the other outcome: the seat was freed between the cut-short
/// poll and the next one, which then takes it.
#[cfg(feature = "queue-limits")]
#[test]
fn a_poll_cut_short_on_the_queue_full_path_may_get_a_seat_next_time() {
    static ARMED: AtomicBool = AtomicBool::new(false);
    let b = super::with_config(Config::new("q", 1).max_waiting(0));
    let held = b.try_acquire().unwrap();
    let mut waiter = boxed(b.acquire());
    let waker = drop_panicking_waker(&ARMED);
    ARMED.store(true, Ordering::SeqCst);
    let first = catch_unwind(AssertUnwindSafe(|| {
        let _ = waiter.as_mut().poll(&mut Context::from_waker(&waker));
    }));
    assert!(first.is_err());
    drop(held);
    assert!(matches!(
        Task::new().poll(waiter.as_mut()),
        Poll::Ready(Ok(_))
    ));
    drop(waiter);
    assert_eq!(b.state().active, 0);
}

/// Defect 4: growing a compartment at the limit to the limit (a no-op)
/// tripped a debug assertion.
#[test]
fn setting_the_limit_on_an_idle_compartment_at_the_limit_is_a_no_op() {
    let b = fifo(MAX_CONCURRENT_LIMIT);
    assert_eq!(
        b.set_max_concurrent(MAX_CONCURRENT_LIMIT),
        Ok(MAX_CONCURRENT_LIMIT)
    );
    assert_eq!(b.state().available(), MAX_CONCURRENT_LIMIT);
    let seat = b.try_acquire().unwrap();
    assert_eq!(
        b.set_max_concurrent(MAX_CONCURRENT_LIMIT),
        Ok(MAX_CONCURRENT_LIMIT)
    );
    drop(seat);
    assert_eq!(b.state().active, 0);
    assert_eq!(b.set_max_concurrent(3), Ok(MAX_CONCURRENT_LIMIT));
    assert_eq!(b.set_max_concurrent(3), Ok(3));
    assert_eq!(b.state().available(), 3);
}

/// Defect 2, why locking is `unsafe`: a release made while someone else
/// holds the compartment's lock finds its try refused and leaves the seat
/// to that "holder", which never hands it on. The FIFO waiter is stranded
/// next to a free seat. Safe code cannot do this any more (see the
/// `compile_fail` example on `RawLock`); this test shows what the `unsafe`
/// contract of `with_lock` rules out.
#[test]
fn a_release_under_a_foreign_lock_section_strands_the_waiter() {
    let b = fifo(1);
    let held = b.try_acquire().unwrap();
    let t = Task::new();
    let mut waiter = boxed(b.acquire());
    assert!(t.poll(waiter.as_mut()).is_pending());
    // SAFETY: deliberately breaks the caller contract of `with_lock` (only
    // core locks a compartment's lock); the effect is a stranded waiter,
    // not memory unsafety, which is what this test shows.
    unsafe { b.raw_lock().with_lock(|| drop(held)) };
    let s = b.state();
    assert_eq!((s.active, s.waiting, t.wakes()), (0, 1, 0), "stranded");
    assert!(b.try_acquire().is_err(), "FIFO: the seat is the waiter's");
    // Any later section hands it on again.
    b.set_max_concurrent(1).unwrap();
    assert!(matches!(t.poll(waiter.as_mut()), Poll::Ready(Ok(_))));
}

/// A waker that closes a compartment when it is cloned (which `poll` does
/// between its fast path and `enqueue`), and whose next drop panics once
/// armed: it drives `enqueue` onto its `Closed` path and cuts it short.
struct ClosingWaker {
    bulkhead: &'static super::TestBulkhead,
    armed: AtomicBool,
}

fn closing_waker(w: &'static ClosingWaker) -> std::task::Waker {
    use std::task::{RawWaker, RawWakerVTable};
    fn get(data: *const ()) -> &'static ClosingWaker {
        // SAFETY: `data` is the `&'static ClosingWaker` the waker was made of.
        unsafe { &*data.cast::<ClosingWaker>() }
    }
    fn clone(data: *const ()) -> RawWaker {
        get(data).bulkhead.close();
        RawWaker::new(data, &VTABLE)
    }
    fn noop(_: *const ()) {}
    fn drop(data: *const ()) {
        if get(data).armed.swap(false, Ordering::SeqCst) {
            panic!("waker panicked on drop");
        }
    }
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, noop, noop, drop);
    // SAFETY: the data pointer is `'static` and never freed; clone copies
    // it (closing a compartment is thread-safe), wake does nothing, drop
    // only reads the flag.
    unsafe { std::task::Waker::from_raw(RawWaker::new((w as *const ClosingWaker).cast(), &VTABLE)) }
}

/// Defect 3, the `Closed` path: the compartment closes between the fast
/// path and `enqueue`, and dropping the discarded waker panics. The next
/// poll must report `Closed`.
#[test]
fn a_poll_cut_short_on_the_closed_path_reports_closed_next_time() {
    let b: &'static super::TestBulkhead = super::leak(fifo(1));
    let held = b.try_acquire().unwrap();
    let w: &'static ClosingWaker = super::leak(ClosingWaker {
        bulkhead: b,
        armed: AtomicBool::new(true),
    });
    let waker = closing_waker(w);
    let mut waiter = boxed(b.acquire());
    let first = catch_unwind(AssertUnwindSafe(|| {
        let _ = waiter.as_mut().poll(&mut Context::from_waker(&waker));
    }));
    assert!(first.is_err(), "dropping the stale waker panicked");
    let err = ready_err(Task::new().poll(waiter.as_mut()));
    assert_eq!(
        err,
        Error::Closed {
            name: "test".into()
        }
    );
    drop(held);
    assert_eq!(b.state().active, 0);
}

type Hook = Box<dyn FnOnce() + Send>;

/// A lock that runs a hook once before it locks, and one once just after
/// (inside, before the closure): on one thread, the second stands for a
/// release on another thread whose try finds the lock held.
#[derive(Default)]
struct HookLock {
    inner: TestLock,
    before: std::sync::Mutex<Option<Hook>>,
    inside: std::sync::Mutex<Option<Hook>>,
}

// SAFETY: delegates to `TestLock`; the hooks are the test's own code and
// only give seats back, which core supports from anywhere (a release whose
// try fails while the hook runs inside the lock is exactly the delegated
// release of rule 1).
unsafe impl RawLock for HookLock {
    unsafe fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
        let before = self.before.lock().unwrap().take();
        if let Some(hook) = before {
            hook();
        }
        // SAFETY: forwarded from our own caller.
        unsafe {
            self.inner.with_lock(|| {
                let inside = self.inside.lock().unwrap().take();
                if let Some(hook) = inside {
                    hook();
                }
                f()
            })
        }
    }
    unsafe fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        // SAFETY: forwarded from our own caller.
        unsafe { self.inner.try_with_lock(f) }
    }
    // This test reads no counts.
    fn counts(&self) -> crate::Counts {
        crate::Counts::NONE
    }
}

/// The seat of a future that is granted just as it is dropped, when the
/// same lock section then wakes another waiter whose waker panics. Once,
/// the outcome `Granted` was lost in the unwind, and with it the
/// seat (`active` stayed 1 for good).
#[test]
fn a_seat_granted_as_the_future_is_dropped_survives_a_panicking_waker() {
    let b: &'static Bulkhead<HookLock> =
        super::leak(Bulkhead::with_lock(Config::new("hook", 2), HookLock::default()).unwrap());
    let s1 = b.try_acquire().unwrap();
    let s2 = b.try_acquire().unwrap();
    let mut first = boxed(b.acquire());
    let mut second = boxed(b.acquire());
    let t = Task::new();
    assert!(t.poll(first.as_mut()).is_pending());
    let bad = std::task::Waker::from(std::sync::Arc::new(super::memory::PanickingWaker));
    assert!(
        second
            .as_mut()
            .poll(&mut Context::from_waker(&bad))
            .is_pending()
    );
    // `first`'s drop: its lock-free look sees WAITING; then, before it
    // locks, `s1` goes to `first` (GRANTED); inside its section `s2` is
    // released, its try fails, and the section's drain grants `second`,
    // whose waker panics after the unlock.
    *b.raw_lock().before.lock().unwrap() = Some(Box::new(move || drop(s1)));
    *b.raw_lock().inside.lock().unwrap() = Some(Box::new(move || drop(s2)));
    let dropped = catch_unwind(AssertUnwindSafe(|| drop(first)));
    assert!(dropped.is_err(), "the waker's panic propagates");
    let Poll::Ready(Ok(seat)) = t.poll(second.as_mut()) else {
        panic!("second was granted s2")
    };
    assert_eq!(b.state().active, 1, "first's seat was given back");
    drop(seat);
    assert_eq!(b.state().active, 0);
}

/// The most nodes one lock section may reach through the list: a batch of
/// hand-offs or wake-ups, plus the one node the operation around the drain
/// touches, plus one look at an empty front. The bound `RawLock` documents.
const SECTION_VISITS_BOUND: usize = crate::engine::SECTION_BATCH + 2;

/// The most nodes one section reached since the last call. The tests
/// assert a lower bound too (a phase that has a batch of work to do
/// reaches exactly `SECTION_BATCH`), so that a counter that stops counting
/// fails them instead of passing every upper bound.
fn max_section_visits<L: RawLock>(b: &Bulkhead<L>) -> usize {
    b.engine().take_max_section_visits()
}

/// Defect 5: a barging drain walked the whole notified prefix on every
/// section, so growing by `n` with `n` waiters cost O(n^2) under the lock
/// (with `CsLock`, with interrupts masked). Every section must now reach at
/// most a constant number of nodes, whatever the queue length, in both
/// modes, for a grow, a stream of releases, losers re-polling, and close.
#[cfg(feature = "barging")]
#[test]
fn every_lock_section_reaches_a_bounded_number_of_nodes() {
    let n = if cfg!(miri) { 40 } else { 200 };
    for admission in [
        Admission::Fifo,
        Admission::Barging,
        Admission::BoundedBarging,
    ] {
        let b = super::with_config(Config::new("bound", 1).admission(admission));
        let held = b.try_acquire().unwrap();
        let t = Task::new();
        let mut waiters: std::vec::Vec<_> = (0..n).map(|_| boxed(b.acquire())).collect();
        for w in &mut waiters {
            assert!(t.poll(w.as_mut()).is_pending());
        }
        let queued = max_section_visits(&b);
        assert!(
            queued <= SECTION_VISITS_BOUND,
            "{admission:?}: queueing reached {queued} nodes in one section"
        );
        // Grow by n: every waiter is granted (FIFO) or notified (barging),
        // a full batch per section.
        b.set_max_concurrent(n + 1).unwrap();
        let grow = max_section_visits(&b);
        assert_eq!(
            grow,
            crate::engine::SECTION_BATCH,
            "{admission:?}: a grow reached {grow} nodes in one section"
        );
        if admission == Admission::Barging {
            // Shrink back so the notified waiters all lose their races, and
            // re-poll each: every loser goes back to waiting in O(1).
            b.set_max_concurrent(1).unwrap();
            for w in &mut waiters {
                assert!(t.poll(w.as_mut()).is_pending());
            }
            assert_eq!(
                b.engine().inspect_list(|list| list.assert_valid()),
                b.state().waiting
            );
            // Releases one by one, each notifying one waiter, which then
            // takes its seat and gives it back.
            drop(held);
            for w in &mut waiters {
                let Poll::Ready(Ok(seat)) = t.poll(w.as_mut()) else {
                    panic!("a notified waiter found no seat")
                };
                drop(seat);
            }
        } else {
            drop(held);
            for w in &mut waiters {
                assert!(matches!(t.poll(w.as_mut()), Poll::Ready(Ok(_))));
            }
        }
        let rest = max_section_visits(&b);
        // Barging's losers and releases go through the list; in the other
        // modes the grow granted everyone, so the rest reaches nobody.
        let least = usize::from(admission == Admission::Barging);
        assert!(
            (least..=SECTION_VISITS_BOUND).contains(&rest),
            "{admission:?}: reached {rest} nodes in one section"
        );
        std::println!("{admission:?}: a grow {grow}, then at most {rest} nodes per section");
        let s = b.state();
        assert_eq!((s.active, s.waiting), (0, 0), "{admission:?}");
    }
}

/// Defect 5, close: a close with many waiters hands `Closed` verdicts a
/// batch per section.
#[cfg(feature = "barging")]
#[test]
fn closing_a_long_queue_stays_within_the_section_bound() {
    for admission in [
        Admission::Fifo,
        Admission::Barging,
        Admission::BoundedBarging,
    ] {
        let b = super::with_config(Config::new("bound", 1).admission(admission));
        let held = b.try_acquire().unwrap();
        let t = Task::new();
        let mut waiters: std::vec::Vec<_> = (0..50).map(|_| boxed(b.acquire())).collect();
        for w in &mut waiters {
            assert!(t.poll(w.as_mut()).is_pending());
        }
        max_section_visits(&b);
        b.close();
        // A full batch of `Closed` verdicts per section.
        let visits = max_section_visits(&b);
        assert_eq!(
            visits,
            crate::engine::SECTION_BATCH,
            "{admission:?}: a close reached {visits} nodes in one section"
        );
        for w in &mut waiters {
            assert!(matches!(
                t.poll(w.as_mut()),
                Poll::Ready(Err(Error::Closed { .. }))
            ));
        }
        drop(held);
    }
}

/// Defect 1 through the owned wait: `AcquireOwned` drops its inner
/// `Acquire` (which settles its node) before the handle it borrows from.
#[test]
fn an_owned_wait_dropped_while_the_lock_panics_once_is_unlinked() {
    let b: &'static Bulkhead<RefusingLock> = super::leak(refusing(Config::new("owned", 1)));
    let held = b.try_acquire().unwrap();
    let t = Task::new();
    let mut waiter = boxed(crate::OwnedSeat::acquire(b));
    assert!(t.poll(waiter.as_mut()).is_pending());
    b.raw_lock().refuse(1);
    assert!(catch_unwind(AssertUnwindSafe(|| drop(waiter))).is_err());
    assert_eq!(b.state().waiting, 0, "the node was unlinked anyway");
    drop(held);
    assert!(b.try_acquire().is_ok());
}
