//! loom model checks of bulkhead-core. See `README.md` for how to run them;
//! without `--cfg bulkhead_loom` this crate is empty.
//!
//! This file holds the helpers the models share: compartments built with
//! loom's lock, the two waiter styles (an async task driven by loom's
//! `block_on`, and a blocking thread that parks), and an independent count
//! of callers inside.

#![cfg(bulkhead_loom)]

use std::pin::{Pin, pin};
use std::sync::Arc as StdArc;
use std::task::{Context, Poll, Wake, Waker};

use bulkhead_core::Name;
use bulkhead_core::partition::{PartitionConfig, Partitioned};
use bulkhead_core::{
    Acquire, AcquireOwned, Admission, Bulkhead, Config, Error, LoomLock, OwnedSeat, Seat,
};
use loom::sync::Arc;
use loom::sync::Notify;
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};

/// The compartment type every model uses.
pub type LoomBulkhead = Bulkhead<LoomLock>;

/// A shared FIFO compartment with `max` seats.
pub fn fifo(max: usize) -> Arc<LoomBulkhead> {
    with_config(Config::new("loom", max))
}

/// A shared barging compartment with `max` seats.
pub fn barging(max: usize) -> Arc<LoomBulkhead> {
    with_config(Config::new("loom", max).admission(Admission::Barging))
}

/// A shared compartment built from `config`.
pub fn with_config(config: Config) -> Arc<LoomBulkhead> {
    Arc::new(Bulkhead::with_lock(config, LoomLock::new()).unwrap())
}

/// The async waiter: an `acquire()` future driven by loom's `block_on`,
/// which parks the loom thread until the future's waker fires. A lost
/// wake-up shows up as a loom deadlock.
pub fn acquire_async(b: &LoomBulkhead) -> Result<Seat<'_, LoomLock>, Error> {
    loom::future::block_on(b.acquire())
}

/// Wakes a blocked loom thread: the blocking-thread waiter style that
/// `bulkhead-std` uses (a parked thread and a waker that unparks it).
///
/// It is built on `loom::sync::Notify`, whose permit behaves like a real
/// park token. loom 0.7's own `thread::park` loses a pending unpark when
/// another thread takes a mutex that the to-be-parked thread is also
/// trying to take, which produced false deadlocks here.
struct Unparker(Notify);

impl Wake for Unparker {
    fn wake(self: StdArc<Self>) {
        self.0.notify();
    }
}

/// The blocking waiter: polls the same future from a plain thread and
/// blocks between polls, as a thread parked in `bulkhead-std` does.
pub fn acquire_blocking(b: &LoomBulkhead) -> Result<Seat<'_, LoomLock>, Error> {
    poll_until_ready(b, false)
}

/// A blocking waiter that polls once more right after it queued, without
/// waiting for a wake-up (as after a spurious wake-up, or a `select!` that
/// polls every branch): its re-poll races whatever hands it a seat.
pub fn acquire_re_polling(b: &LoomBulkhead) -> Result<Seat<'_, LoomLock>, Error> {
    poll_until_ready(b, true)
}

fn poll_until_ready(b: &LoomBulkhead, re_poll_at_once: bool) -> Result<Seat<'_, LoomLock>, Error> {
    let unparker = StdArc::new(Unparker(Notify::new()));
    let waker = Waker::from(unparker.clone());
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(b.acquire());
    let mut re_poll = re_poll_at_once;
    loop {
        match fut.as_mut().poll(&mut cx) {
            Poll::Ready(result) => return result,
            Poll::Pending if re_poll => re_poll = false,
            Poll::Pending => unparker.0.wait(),
        }
    }
}

/// A blocking waiter whose deadline passes right after its first poll:
/// it queues, then gives up through `time_out`, which races whatever
/// other threads do in between.
pub fn acquire_then_time_out(b: &LoomBulkhead) -> Result<Seat<'_, LoomLock>, Error> {
    let mut cx = Context::from_waker(Waker::noop());
    let mut fut = pin!(b.acquire());
    match fut.as_mut().poll(&mut cx) {
        Poll::Ready(result) => result,
        Poll::Pending => fut.time_out(core::time::Duration::from_millis(1)),
    }
}

/// Counts callers inside independently of the compartment, and checks the
/// limit each time one enters.
#[derive(Debug, Clone)]
pub struct Inside(Arc<AtomicUsize>);

impl Inside {
    /// A new counter; clones share it.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Self(Arc::new(AtomicUsize::new(0)))
    }

    /// Counts the holder of `seat` inside until the returned guard drops,
    /// and asserts that no more than `limit` are inside at once. The guard
    /// leaves before it gives the seat back: leaving after the release
    /// would count a legitimate successor twice.
    pub fn hold<S>(&self, limit: usize, seat: S) -> Held<S> {
        let now = self.0.fetch_add(1, SeqCst) + 1;
        assert!(
            now <= limit,
            "{now} callers inside a compartment of {limit}"
        );
        Held {
            inside: self.clone(),
            seat: Some(seat),
        }
    }
}

/// A seat counted by [`Inside`].
#[derive(Debug)]
pub struct Held<S> {
    inside: Inside,
    seat: Option<S>,
}

impl<S> Drop for Held<S> {
    fn drop(&mut self) {
        self.inside.0.fetch_sub(1, SeqCst);
        drop(self.seat.take());
    }
}

/// Asserts that the compartment is quiescent: nobody inside or waiting,
/// every seat free, and a fresh caller admitted.
pub fn assert_quiescent(b: &LoomBulkhead) {
    let s = b.state();
    assert_eq!((s.active, s.waiting), (0, 0), "not quiescent: {s:?}");
    if !s.closed && s.max_concurrent > 0 {
        assert!(b.try_acquire().is_ok(), "a free seat was refused: {s:?}");
    }
}

/// Polls an `acquire()` once and drops it: a waiter cancelled at whatever
/// point it had reached (queued, handed a seat, or finished).
pub fn poll_once_then_drop(b: &LoomBulkhead) {
    let mut cx = Context::from_waker(Waker::noop());
    let mut fut = pin!(b.acquire());
    if let Poll::Ready(result) = fut.as_mut().poll(&mut cx) {
        drop(result.unwrap());
    }
}

/// A waiter that queues and gives up through its wait budget.
pub fn time_out_early(b: &LoomBulkhead) {
    let _ = acquire_then_time_out(b);
}

/// The shape several models share. The main thread holds the only seat;
/// one thread leaves the line early (`leave`: cancels or times out);
/// another waits (`wait`) and gives its seat back; the main thread releases.
/// Whatever the interleaving, the waiter must get a seat (a lost wake-up
/// is a loom deadlock) and the compartment must end quiescent.
pub fn leaver_and_waiter(
    b: Arc<LoomBulkhead>,
    leave: fn(&LoomBulkhead),
    wait: for<'a> fn(&'a LoomBulkhead) -> Result<Seat<'a, LoomLock>, Error>,
) {
    let seat = b.try_acquire().unwrap();
    let leaver = {
        let b = b.clone();
        loom::thread::spawn(move || leave(&b))
    };
    let waiter = {
        let b = b.clone();
        loom::thread::spawn(move || drop(wait(&b).unwrap()))
    };
    drop(seat);
    leaver.join().unwrap();
    waiter.join().unwrap();
    assert_quiescent(&b);
}

/// The delegated release: the only seat is released while a blocking
/// waiter may hold the lock to link itself, so the release's try may fail
/// and the holder must hand the seat on (rule 1 in core/src/engine.rs).
/// The waiter must get the seat (a lost wake-up is a loom deadlock).
pub fn release_while_a_waiter_links(b: Arc<LoomBulkhead>) {
    let seat = OwnedSeat::try_acquire(b.clone()).unwrap();
    let waiter = {
        let b = b.clone();
        loom::thread::spawn(move || drop(acquire_blocking(&b).unwrap()))
    };
    let releaser = loom::thread::spawn(move || drop(seat));
    releaser.join().unwrap();
    waiter.join().unwrap();
    assert_quiescent(&b);
}

/// Two seats are released in quick succession while two waiters (one
/// async, one blocking) wait: both must wake (bug class 4 in docs/bug-classes.md).
pub fn two_quick_releases(b: Arc<LoomBulkhead>) {
    let s1 = b.try_acquire().unwrap();
    let s2 = b.try_acquire().unwrap();
    let waiters: Vec<_> = (0..2)
        .map(|i| {
            let b = b.clone();
            loom::thread::spawn(move || {
                let seat = if i == 0 {
                    acquire_async(&b)
                } else {
                    acquire_blocking(&b)
                };
                drop(seat.unwrap());
            })
        })
        .collect();
    drop(s1);
    drop(s2);
    for w in waiters {
        w.join().unwrap();
    }
    assert_quiescent(&b);
}

/// An `acquire()` future polled once, on the calling thread, with a waker
/// that does nothing: a waiter that is queued without a thread of its own,
/// so that a model can have more waiters than threads. Panics if it was
/// not queued.
pub fn queued(b: &LoomBulkhead) -> Pin<Box<Acquire<'_, LoomLock>>> {
    let mut fut = Box::pin(b.acquire());
    let poll = fut.as_mut().poll(&mut Context::from_waker(Waker::noop()));
    assert!(poll.is_pending(), "expected to queue: {:?}", b.state());
    fut
}

/// Polls a [`queued`] waiter again and returns its seat; panics if it has
/// not been granted one.
pub fn granted<'a>(mut fut: Pin<Box<Acquire<'a, LoomLock>>>) -> Seat<'a, LoomLock> {
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(result) => result.unwrap(),
        Poll::Pending => panic!("a queued waiter was never granted"),
    }
}

/// Counts the wake-ups of a [`Watched`] waiter.
struct WakeCount(AtomicUsize);

impl Wake for WakeCount {
    fn wake(self: StdArc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// A waiter whose lost wake-up fails an assertion that names its model,
/// rather than a loom deadlock. A deadlock panics inside loom's scheduler,
/// the unwind drops futures that still touch loom objects, and the second
/// panic aborts the test binary (signal 6) with the captured output, so
/// neither the model nor the cause is reported. This waiter parks
/// nowhere: an owned `acquire` polled with a counting waker, which may be
/// queued on one thread and checked on another once every thread that
/// could hand it a seat has been joined.
pub struct Watched {
    fut: Pin<Box<AcquireOwned<Arc<LoomBulkhead>>>>,
    wakes: StdArc<WakeCount>,
}

impl Watched {
    /// An owned `acquire` of `b`, not polled yet.
    pub fn new(b: &Arc<LoomBulkhead>) -> Self {
        Self {
            fut: Box::pin(OwnedSeat::acquire(b.clone())),
            wakes: StdArc::new(WakeCount(AtomicUsize::new(0))),
        }
    }

    /// Polls once with the counting waker.
    pub fn poll(&mut self) -> Poll<Result<OwnedSeat<Arc<LoomBulkhead>>, Error>> {
        let waker = Waker::from(self.wakes.clone());
        self.fut.as_mut().poll(&mut Context::from_waker(&waker))
    }

    /// For a waiter left pending, after the threads that could hand it a
    /// seat are joined and a seat is free: it was woken (a grant or a
    /// notification), and its next poll gets the seat. Panics naming
    /// `model` and `what` otherwise. The count is checked before the poll,
    /// because a barging re-poll takes a free seat whether or not anyone
    /// woke it.
    pub fn woken_then_granted(mut self, model: &str, what: &str) -> OwnedSeat<Arc<LoomBulkhead>> {
        assert!(
            self.wakes.0.load(SeqCst) > 0,
            "{model}: lost wake-up, {what}: the waiter was never woken, \
             with a free seat"
        );
        match self.poll() {
            Poll::Ready(Ok(seat)) => seat,
            Poll::Ready(Err(e)) => panic!("{model}: {what}: {e}"),
            Poll::Pending => panic!("{model}: {what}: woken, but no seat for the waiter"),
        }
    }
}

/// An owned weighted wait, boxed and pinned, as [`queued_many`] makes it.
pub type OwnedWaiter = Pin<Box<AcquireOwned<Arc<LoomBulkhead>>>>;

/// Counts wake-ups, for a waiter queued on the main thread and checked
/// after the racing threads are joined.
pub struct Counting(pub AtomicUsize);

impl Wake for Counting {
    fn wake(self: StdArc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// An owned `acquire_many(weight)` polled once with a counting waker: it
/// must queue.
pub fn queued_many(b: &Arc<LoomBulkhead>, weight: usize) -> (OwnedWaiter, StdArc<Counting>) {
    let state = b.state();
    queued_counting(OwnedSeat::acquire_many(b.clone(), weight), state)
}

/// Any wait, boxed, pinned and polled once with a counting waker: it must
/// queue (`what` is shown if it does not).
pub fn queued_counting<F: Future>(
    fut: F,
    what: impl core::fmt::Debug,
) -> (Pin<Box<F>>, StdArc<Counting>) {
    let count = StdArc::new(Counting(AtomicUsize::new(0)));
    let waker = Waker::from(count.clone());
    let mut w = Box::pin(fut);
    let poll = w.as_mut().poll(&mut Context::from_waker(&waker));
    assert!(poll.is_pending(), "expected to queue: {what:?}");
    (w, count)
}

/// After the races: the waiter was woken (granted, notified or closed
/// out), and its next poll ends its wait. Panics naming `what` otherwise:
/// a waiter never woken while its seats are free is a lost wake-up.
pub fn woken_then_done<F: Future>(
    mut w: Pin<Box<F>>,
    count: &StdArc<Counting>,
    what: &str,
) -> F::Output {
    assert!(
        count.0.load(SeqCst) > 0,
        "lost wake-up: {what} was never woken"
    );
    let waker = Waker::from(count.clone());
    match w.as_mut().poll(&mut Context::from_waker(&waker)) {
        Poll::Ready(result) => result,
        Poll::Pending => panic!("{what} was woken, but its wait did not end"),
    }
}

/// Polls a waiter queued by [`queued_counting`] once more and asserts that
/// its wait goes on: it was handed no seat (`what` names it otherwise).
pub fn still_waiting<F: Future>(w: &mut Pin<Box<F>>, count: &StdArc<Counting>, what: &str) {
    let waker = Waker::from(count.clone());
    let poll = w.as_mut().poll(&mut Context::from_waker(&waker));
    assert!(poll.is_pending(), "{what}: its wait ended");
}

/// A partitioned compartment built with loom's lock.
pub type LoomPartitioned = Partitioned<LoomLock>;

/// A shared partitioned compartment of `max` seats divided into `parts`.
pub fn partitioned(max: usize, parts: &[PartitionConfig]) -> Arc<LoomPartitioned> {
    Arc::new(
        Partitioned::with_lock(Name::from_static("loom"), max, parts, LoomLock::new()).unwrap(),
    )
}
