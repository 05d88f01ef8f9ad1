//! Findings of an independent review of the engine after issues 12 and 13.
//! Each test demonstrates one defect (and passes once it is fixed), or
//! covers a path no other test reached. They run under miri too.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::Poll;

use super::{Task, TestLock, boxed};
use crate::{Admission, Bulkhead, Config, Error, OwnedSeat, RawLock};

/// The review's test lock: a `TestLock` whose admission hook can be made
/// to panic once (the hook is an adapter's code; `Seat::new` documents
/// that a panicking hook gives the seat back as it unwinds), and which can
/// refuse (panic before `f`, `RawLock` promise 4) every call made while
/// the thread is not unwinding, as embassy's `ThreadModeRawMutex` does on
/// every call from the wrong context. A call made while unwinding would,
/// with such a lock, be a second panic and abort the process; this lock
/// only counts it (and runs `f`), so that a test can see it.
#[derive(Default)]
pub(crate) struct ReviewLock {
    inner: TestLock,
    pub(crate) panic_on_admission: AtomicBool,
    pub(crate) panic_on_rejection: AtomicBool,
    pub(crate) refusing: AtomicBool,
    pub(crate) calls_while_unwinding: AtomicUsize,
}

impl ReviewLock {
    fn check(&self) {
        if !self.refusing.load(Ordering::SeqCst) {
            return;
        }
        if std::thread::panicking() {
            self.calls_while_unwinding.fetch_add(1, Ordering::SeqCst);
        } else {
            panic!("ReviewLock: refused");
        }
    }
}

// SAFETY: delegates to `TestLock`, which keeps promises 1 to 3; a refusal
// panics before `f`, without the lock held (promise 4). The hook is not
// part of the lock's safety promises.
unsafe impl RawLock for ReviewLock {
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
    /// Counts first, then panics if asked to: the count is the lock's.
    fn record_rejection(&self) {
        self.inner.record_rejection();
        if self.panic_on_rejection.swap(false, Ordering::SeqCst) {
            panic!("rejection hook panicked");
        }
    }
    fn record_timeout(&self) {
        self.inner.record_timeout();
    }
    fn counts(&self) -> crate::Counts {
        self.inner.counts()
    }
    fn record_admission(&self) {
        if self.panic_on_admission.swap(false, Ordering::SeqCst) {
            panic!("admission hook panicked");
        }
    }
}

fn review_lock(config: Config) -> Bulkhead<ReviewLock> {
    Bulkhead::with_lock(config, ReviewLock::default()).unwrap()
}

/// Free seats, counted by taking them all (and giving them back).
fn free_seats<L: RawLock>(b: &Bulkhead<L>) -> usize {
    let mut seats = std::vec::Vec::new();
    while let Ok(seat) = b.try_acquire() {
        seats.push(seat);
        if seats.len() > 16 {
            break;
        }
    }
    seats.len()
}

/// A seat handed over to a queued future (FIFO grant, or a barging re-poll
/// that takes a free seat) whose admission hook panics as the future
/// resolves. The unwinding `Seat` gives the seat back; the future must then
/// not give it back a second time when it is dropped. Before the fix the
/// future stayed `Queued` with a `Granted` node, so its `Drop` released the
/// seat again: two free seats in a compartment of one (a debug assertion
/// in debug builds, over-admission in release builds).
#[cfg(feature = "barging")]
#[test]
fn review_a_panicking_admission_hook_after_a_hand_off_gives_the_seat_back_once() {
    for admission in [
        Admission::Fifo,
        Admission::Barging,
        Admission::BoundedBarging,
    ] {
        let b = review_lock(Config::new("hook", 1).admission(admission));
        let held = b.try_acquire().unwrap();
        let t = Task::new();
        let mut waiter = boxed(b.acquire());
        assert!(t.poll(waiter.as_mut()).is_pending());
        drop(held); // FIFO: granted; barging: notified
        b.raw_lock()
            .panic_on_admission
            .store(true, Ordering::SeqCst);
        let polled = catch_unwind(AssertUnwindSafe(|| {
            let _ = t.poll(waiter.as_mut());
        }));
        assert!(
            polled.is_err(),
            "{admission:?}: the hook's panic propagates"
        );
        assert_eq!(b.state().active, 0, "{admission:?}: the seat went back");
        let dropped = catch_unwind(AssertUnwindSafe(|| drop(waiter)));
        assert!(
            dropped.is_ok(),
            "{admission:?}: dropping the future panicked"
        );
        assert_eq!(
            free_seats(&b),
            1,
            "{admission:?}: the seat was given back twice"
        );
    }
}

/// The same through the owned wait: its inner `Acquire` resolves, and the
/// hook panics before `AcquireOwned` can take the seat.
#[test]
fn review_a_panicking_admission_hook_in_an_owned_wait_gives_the_seat_back_once() {
    let b = std::sync::Arc::new(review_lock(Config::new("hook", 1)));
    let held = b.try_acquire().unwrap();
    let t = Task::new();
    let mut waiter = boxed(OwnedSeat::acquire(b.clone()));
    assert!(t.poll(waiter.as_mut()).is_pending());
    drop(held);
    b.raw_lock()
        .panic_on_admission
        .store(true, Ordering::SeqCst);
    assert!(
        catch_unwind(AssertUnwindSafe(|| {
            let _ = t.poll(waiter.as_mut());
        }))
        .is_err()
    );
    let dropped = catch_unwind(AssertUnwindSafe(|| drop(waiter)));
    assert!(dropped.is_ok(), "dropping the owned wait panicked");
    assert_eq!(free_seats(&*b), 1, "the seat was given back twice");
}

/// Rule 7 with notified waiters: a barging grow notifies every waiter
/// (taking their wakers out), and a close before they re-poll hands each a
/// `Closed` verdict. Those verdicts wake nobody (the wakers are gone), so a
/// drain loop that stops only when the batch of wakers is full walks the
/// whole notified prefix in one section: O(n) under the lock (with
/// `CsLock`, with interrupts masked).
#[cfg(feature = "barging")]
#[test]
fn review_closing_with_many_notified_waiters_stays_within_the_section_bound() {
    let n = 30;
    let b = super::with_config(Config::new("bound", 1).admission(Admission::Barging));
    let held = b.try_acquire().unwrap();
    let t = Task::new();
    let mut waiters: std::vec::Vec<_> = (0..n).map(|_| boxed(b.acquire())).collect();
    for w in &mut waiters {
        assert!(t.poll(w.as_mut()).is_pending());
    }
    b.set_max_concurrent(n + 1).unwrap(); // every waiter is notified
    assert_eq!(t.wakes(), n);
    b.engine().take_max_section_visits();
    b.close();
    // Exactly a full batch of verdicts per section: a counter that stopped
    // counting would pass an upper bound alone.
    let visits = b.engine().take_max_section_visits();
    assert_eq!(
        visits,
        crate::engine::SECTION_BATCH,
        "a close reached {visits} nodes in one section"
    );
    for w in &mut waiters {
        assert!(matches!(
            t.poll(w.as_mut()),
            Poll::Ready(Err(Error::Closed { .. }))
        ));
    }
    assert_eq!(b.state().waiting, 0);
    drop(held);
}

/// `RawLock`'s docs: "A refused release keeps its seat counted as free but
/// may leave a waiter asleep." Before the fix, the release's `Batch` ran
/// rule 1's re-check while the refusal unwound, found a drain owed (a
/// waiter and a free seat) and tried the lock again: with a lock that
/// refuses that context every time, a second panic while unwinding, which
/// aborts. A batch whose section never ran owes no re-check (it never held
/// the lock, so no failed try relies on it).
#[cfg(feature = "barging")]
#[test]
fn review_a_refused_release_does_not_lock_again_while_unwinding() {
    for admission in [
        Admission::Fifo,
        Admission::Barging,
        Admission::BoundedBarging,
    ] {
        let b = review_lock(Config::new("refused", 1).admission(admission));
        let held = b.try_acquire().unwrap();
        let t = Task::new();
        let mut waiter = boxed(b.acquire());
        assert!(t.poll(waiter.as_mut()).is_pending());
        b.raw_lock().refusing.store(true, Ordering::SeqCst);
        assert!(catch_unwind(AssertUnwindSafe(|| drop(held))).is_err());
        b.raw_lock().refusing.store(false, Ordering::SeqCst);
        assert_eq!(
            b.raw_lock().calls_while_unwinding.load(Ordering::SeqCst),
            0,
            "{admission:?}: the lock was taken again while the refusal unwound"
        );
        // As documented: the seat is free, and the waiter gets it at its
        // next poll (whose section drains).
        assert_eq!(b.state().active, 0);
        assert!(matches!(t.poll(waiter.as_mut()), Poll::Ready(Ok(_))));
    }
}

/// The owned wait's lifetime erasure with a handle that owns its
/// compartment (`Box<Bulkhead>`): the `'static` borrow is made through the
/// box, and resolving moves the box into the seat. Under miri this checks
/// that no borrow made through the box is used after the box moved.
#[test]
fn review_an_owned_wait_on_a_boxed_compartment_moves_the_box_into_the_seat() {
    let t = Task::new();
    let mut wait = boxed(OwnedSeat::acquire(std::boxed::Box::new(super::fifo(1))));
    // The only seat is taken (and leaked) through the future's own handle.
    core::mem::forget(wait.handle().unwrap().try_acquire().unwrap());
    assert!(t.poll(wait.as_mut()).is_pending());
    wait.handle().unwrap().set_max_concurrent(2).unwrap(); // granted
    let Poll::Ready(Ok(seat)) = t.poll(wait.as_mut()) else {
        panic!("the grow hands the new seat to the owned wait")
    };
    assert!(wait.handle().is_none(), "the box moved into the seat");
    drop(wait);
    assert_eq!(seat.handle().state().active, 2);
    drop(seat); // gives the seat back, then frees the box
}

/// A handle that holds its compartment inline: the compartment lives inside
/// the pinned owned wait, and moves with the handle into the seat. Another
/// waiter, leaked while queued on it, stays linked across that move, and
/// the seat's release hands it the seat in the compartment's new place.
#[test]
fn review_an_inline_handle_moves_its_compartment_with_a_leaked_waiter_linked() {
    struct Inline(super::TestBulkhead);
    impl core::ops::Deref for Inline {
        type Target = super::TestBulkhead;
        fn deref(&self) -> &super::TestBulkhead {
            &self.0
        }
    }
    let t = Task::new();
    let mut wait = boxed(OwnedSeat::acquire(Inline(super::fifo(1))));
    core::mem::forget(wait.handle().unwrap().try_acquire().unwrap());
    assert!(t.poll(wait.as_mut()).is_pending());
    let mut leaked = boxed(wait.handle().unwrap().acquire());
    assert!(t.poll(leaked.as_mut()).is_pending());
    keep_leaked(leaked);
    assert_eq!(wait.handle().unwrap().state().waiting, 2);
    wait.handle().unwrap().set_max_concurrent(2).unwrap(); // to `wait`
    let Poll::Ready(Ok(seat)) = t.poll(wait.as_mut()) else {
        panic!("the grow hands the new seat to the owned wait")
    };
    drop(wait);
    let s = seat.handle().state();
    assert_eq!(
        (s.active, s.waiting),
        (2, 1),
        "the leaked waiter moved along"
    );
    drop(seat); // handed to the leaked waiter, in the moved list; then freed
}

/// Leaks a pinned future that borrows something (which `super::leak`, for
/// `'static` values, cannot take), keeping it reachable from a static so
/// that miri's leak check ignores it. It is never touched again.
fn keep_leaked<T>(pinned: std::pin::Pin<std::boxed::Box<T>>) {
    struct Anchor {
        _ptr: *mut (),
    }
    // SAFETY: never dereferenced.
    unsafe impl Send for Anchor {}
    static KEPT: std::sync::Mutex<std::vec::Vec<Anchor>> =
        std::sync::Mutex::new(std::vec::Vec::new());
    // SAFETY: the box is never moved out of, nor freed, so the pinning
    // promise holds.
    let raw = std::boxed::Box::into_raw(unsafe { std::pin::Pin::into_inner_unchecked(pinned) });
    KEPT.lock().unwrap().push(Anchor { _ptr: raw.cast() });
}

/// A handle that holds its compartment inline (a safe `Deref`).
struct InlineHandle(super::TestBulkhead);

impl core::ops::Deref for InlineHandle {
    type Target = super::TestBulkhead;
    fn deref(&self) -> &super::TestBulkhead {
        &self.0
    }
}

/// The smallest case of the owned wait's unsound lifetime erasure, from
/// safe code: with a handle that holds its compartment inline, resolving
/// moves the handle out of the future while a `Seat<'static>` borrowing
/// that compartment is still a live (protected) function argument of
/// `settle`. miri (Stacked and Tree Borrows) reports undefined behaviour.
#[test]
fn review_an_owned_wait_on_an_inline_handle_resolves_soundly() {
    let t = Task::new();
    let mut wait = boxed(OwnedSeat::acquire(InlineHandle(super::fifo(1))));
    let Poll::Ready(Ok(seat)) = t.poll(wait.as_mut()) else {
        panic!("a free seat")
    };
    assert_eq!(seat.handle().state().active, 1);
    drop(seat);
    // The same through `abandon` after a hand-off, and `time_out`.
    let mut wait = boxed(OwnedSeat::acquire(InlineHandle(super::fifo(1))));
    core::mem::forget(wait.handle().unwrap().try_acquire().unwrap());
    assert!(t.poll(wait.as_mut()).is_pending());
    wait.handle().unwrap().set_max_concurrent(2).unwrap();
    let seat = wait.as_mut().abandon().expect("handed over");
    assert_eq!(seat.handle().state().active, 2);
    drop(seat);
    let mut wait = boxed(OwnedSeat::acquire(InlineHandle(super::fifo(1))));
    core::mem::forget(wait.handle().unwrap().try_acquire().unwrap());
    assert!(t.poll(wait.as_mut()).is_pending());
    wait.handle().unwrap().set_max_concurrent(2).unwrap();
    let seat = wait.as_mut().time_out(core::time::Duration::ZERO).unwrap();
    assert_eq!(seat.handle().state().active, 2);
    drop(seat);
    // Dropped while queued: the inner wait unlinks its node from the
    // inline compartment before the handle (and the compartment) go.
    let mut wait = boxed(OwnedSeat::acquire(InlineHandle(super::fifo(1))));
    core::mem::forget(wait.handle().unwrap().try_acquire().unwrap());
    assert!(t.poll(wait.as_mut()).is_pending());
    assert_eq!(wait.handle().unwrap().state().waiting, 1);
    drop(wait);
}

/// The rejection hook panics as a wait is turned away (`QueueFull`). The
/// rejection was already counted, so the future must be finished: before
/// the fix it stayed `Queued` with an `Idle` node, and its next poll ran
/// the attempt again and counted the same caller's rejection twice.
#[cfg(feature = "queue-limits")]
#[test]
fn review_a_panicking_rejection_hook_counts_a_queue_full_rejection_once() {
    let b = review_lock(Config::new("q", 1).max_waiting(0));
    let held = b.try_acquire().unwrap();
    let t = Task::new();
    let mut waiter = boxed(b.acquire());
    b.raw_lock()
        .panic_on_rejection
        .store(true, Ordering::SeqCst);
    assert!(
        catch_unwind(AssertUnwindSafe(|| {
            let _ = t.poll(waiter.as_mut());
        }))
        .is_err()
    );
    assert_eq!(b.state().rejected, 1);
    let again = catch_unwind(AssertUnwindSafe(|| {
        let _ = t.poll(waiter.as_mut());
    }));
    assert!(again.is_err(), "a finished future panics when polled again");
    assert_eq!(b.state().rejected, 1, "one caller, one rejection");
    drop(waiter);
    drop(held);
    assert_eq!(free_seats(&b), 1);
}
