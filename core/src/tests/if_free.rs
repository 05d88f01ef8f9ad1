//! `acquire_if_free`: the try that counts nothing. It must admit exactly
//! when `try_acquire` would, in every state a compartment can be in, and
//! on a miss count nothing, in the compartment or through the lock.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::task::Poll;
use std::vec::Vec;

use super::{Task, TestLock, boxed};
use crate::{AcquireOwned, Admission, Bulkhead, Config, MAX_CONCURRENT_LIMIT, OwnedSeat, RawLock};

/// A lock that counts what core reports to it.
#[derive(Default)]
struct HookLock {
    inner: TestLock,
    rejections: AtomicUsize,
    admissions: AtomicUsize,
}

// SAFETY: delegates locking to `TestLock`, which upholds the contract.
unsafe impl RawLock for HookLock {
    unsafe fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
        // SAFETY: forwarded from our own caller, who upholds the contract.
        unsafe { self.inner.with_lock(f) }
    }
    unsafe fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        // SAFETY: as above.
        unsafe { self.inner.try_with_lock(f) }
    }
    fn record_rejection(&self) {
        self.rejections.fetch_add(1, SeqCst);
        self.inner.record_rejection();
    }
    fn record_timeout(&self) {
        self.inner.record_timeout();
    }
    fn counts(&self) -> crate::Counts {
        self.inner.counts()
    }
    fn record_admission(&self) {
        self.admissions.fetch_add(1, SeqCst);
    }
}

type Hooked = Arc<Bulkhead<HookLock>>;

/// A compartment state to probe, built the same way twice.
#[derive(Debug, Clone, Copy)]
struct Scenario {
    admission: Admission,
    /// Seats held by callers.
    held: usize,
    /// The weight of one waiter that joins the line, if any.
    waiter: Option<usize>,
    /// Held seats given back after the waiter queued.
    release: usize,
    /// The limit is lowered to this after the rest is set up.
    shrink_to: Option<usize>,
    close: bool,
}

const MAX: usize = 3;

/// What a scenario leaves held: seats and a waiter, kept until the probe
/// is done.
struct Built {
    b: Hooked,
    _seats: Vec<OwnedSeat<Hooked>>,
    _waiter: Option<Pin<std::boxed::Box<AcquireOwned<Hooked>>>>,
}

fn build(s: Scenario) -> Built {
    let config = Config::new("if-free", MAX).admission(s.admission);
    let b = Arc::new(Bulkhead::with_lock(config, HookLock::default()).unwrap());
    let mut seats: Vec<_> = (0..s.held)
        .map(|_| OwnedSeat::try_acquire(b.clone()).unwrap())
        .collect();
    let task = Task::new();
    let mut waiter = None;
    if let Some(weight) = s.waiter {
        let mut w = boxed(OwnedSeat::acquire_many(b.clone(), weight));
        match task.poll(w.as_mut()) {
            Poll::Pending => waiter = Some(w),
            Poll::Ready(Ok(seat)) => seats.push(seat),
            Poll::Ready(Err(e)) => panic!("{s:?}: the waiter was refused: {e}"),
        }
    }
    for _ in 0..s.release {
        drop(seats.pop());
    }
    if let Some(max) = s.shrink_to {
        b.set_max_concurrent(max).unwrap();
    }
    if s.close {
        b.close();
    }
    Built {
        b,
        _seats: seats,
        _waiter: waiter,
    }
}

fn scenarios() -> impl Iterator<Item = Scenario> {
    let admissions = [
        Admission::Fifo,
        Admission::Barging,
        Admission::BoundedBarging,
    ];
    admissions.into_iter().flat_map(|admission| {
        (0..=MAX).flat_map(move |held| {
            [None, Some(1), Some(2), Some(MAX)]
                .into_iter()
                .flat_map(move |waiter| {
                    (0..=held.min(1)).flat_map(move |release| {
                        [None, Some(1)].into_iter().flat_map(move |shrink_to| {
                            [false, true].into_iter().map(move |close| Scenario {
                                admission,
                                held,
                                waiter,
                                release,
                                shrink_to,
                                close,
                            })
                        })
                    })
                })
        })
    })
}

fn rejections(b: &Hooked) -> usize {
    b.raw_lock().rejections.load(SeqCst)
}

fn admissions(b: &Hooked) -> usize {
    b.raw_lock().admissions.load(SeqCst)
}

/// In every scenario and for every weight (0, within the limit, above it,
/// above any limit), the non-counting try admits exactly when
/// `try_acquire_many` does, leaves the same number of seats held, and
/// never counts a miss: not in `State::rejected`, not through the lock.
#[test]
fn admits_exactly_when_try_acquire_would_and_never_counts_a_miss() {
    let weights = [0, 1, 2, MAX, MAX + 1, MAX_CONCURRENT_LIMIT + 1];
    let (mut admitted, mut missed, mut counted) = (0, 0, 0);
    for s in scenarios() {
        for weight in weights {
            let quiet = build(s);
            let (rejected, hooked) = (quiet.b.state().rejected, rejections(&quiet.b));
            let before = admissions(&quiet.b);
            let seat = quiet.b.acquire_many_if_free(weight);
            let quiet_state = quiet.b.state();

            let loud = build(s);
            let loud_rejected = loud.b.state().rejected;
            let verdict = loud.b.try_acquire_many(weight);
            let loud_state = loud.b.state();

            assert_eq!(
                seat.is_some(),
                verdict.is_ok(),
                "{s:?}, weight {weight}: if_free {:?}, try_acquire {verdict:?}",
                seat.as_ref().map(|s| s.weight()),
            );
            assert_eq!(
                quiet_state.active, loud_state.active,
                "{s:?}, weight {weight}"
            );
            assert_eq!(
                quiet_state.waiting, loud_state.waiting,
                "{s:?}, weight {weight}"
            );
            // Nothing counted on a miss; an admission is an admission.
            assert_eq!(quiet_state.rejected, rejected, "{s:?}, weight {weight}");
            assert_eq!(rejections(&quiet.b), hooked, "{s:?}, weight {weight}");
            let expected = before + usize::from(seat.is_some());
            assert_eq!(admissions(&quiet.b), expected, "{s:?}, weight {weight}");
            if let Some(seat) = &seat {
                assert_eq!(seat.weight(), weight);
                admitted += 1;
            } else {
                missed += 1;
                // The counting try counted this very miss (unless the weight
                // was 0 or the compartment closed): the scenarios reach the
                // paths that count.
                counted += loud_state.rejected - loud_rejected;
            }
        }
    }
    // The matrix reaches both verdicts and the counted refusals (`Full`,
    // `WeightAboveLimit`), so the assertions above compared something.
    assert!(
        admitted > 50 && missed > 50 && counted > 50,
        "{admitted} {missed} {counted}"
    );
}

/// FIFO: a seat freed while a heavier waiter heads the line is the
/// waiter's; the non-counting try does not take it, as `try_acquire` does
/// not, and the waiter gets it once the rest is freed. Barging takes it.
#[test]
fn a_fifo_newcomer_never_passes_a_waiter() {
    for admission in [Admission::Fifo, Admission::Barging] {
        let b = Arc::new(
            Bulkhead::with_lock(
                Config::new("line", 2).admission(admission),
                HookLock::default(),
            )
            .unwrap(),
        );
        let first = OwnedSeat::try_acquire(b.clone()).unwrap();
        let second = OwnedSeat::try_acquire(b.clone()).unwrap();
        let task = Task::new();
        let mut heavy = boxed(OwnedSeat::acquire_many(b.clone(), 2));
        assert!(task.poll(heavy.as_mut()).is_pending());
        drop(first); // one seat free, the waiter needs two
        assert_eq!(b.state().active, 1);
        let newcomer = b.acquire_if_free();
        match admission {
            Admission::Fifo => {
                assert!(newcomer.is_none());
                assert!(b.try_acquire().is_err()); // the same verdict, counted
                assert_eq!((b.state().rejected, rejections(&b)), (1, 1));
                drop(second);
                let Poll::Ready(Ok(seat)) = task.poll(heavy.as_mut()) else {
                    panic!("the waiter was passed over");
                };
                assert_eq!(seat.weight(), 2);
            }
            _ => {
                assert!(newcomer.is_some());
                assert_eq!((b.state().rejected, rejections(&b)), (0, 0));
                drop(second);
            }
        }
    }
}

/// The owned form: a seat keeps the handle; a miss gives the very handle
/// back, which then waits, and is handed the seat when it is freed.
#[test]
fn the_owned_form_gives_the_handle_back_on_a_miss() {
    let b = Arc::new(Bulkhead::with_lock(Config::new("owned", 2), HookLock::default()).unwrap());
    let held = OwnedSeat::acquire_many_if_free(b.clone(), 2).unwrap();
    assert_eq!((held.weight(), b.state().active), (2, 2));
    assert_eq!(Arc::strong_count(&b), 2);
    let handle = OwnedSeat::acquire_if_free(b.clone()).unwrap_err();
    assert!(Arc::ptr_eq(&handle, &b));
    // The handle given back is the one passed in: no clone leaked.
    assert_eq!(Arc::strong_count(&b), 3);
    let handle = OwnedSeat::acquire_many_if_free(handle, 0).unwrap_err();
    assert_eq!((b.state().rejected, rejections(&b)), (0, 0));
    let task = Task::new();
    let mut wait = boxed(OwnedSeat::acquire(handle));
    assert!(task.poll(wait.as_mut()).is_pending());
    drop(held);
    let Poll::Ready(Ok(seat)) = task.poll(wait.as_mut()) else {
        panic!("the wait after a miss got no seat");
    };
    assert_eq!(seat.weight(), 1);
    drop(seat);
    drop(wait);
    assert_eq!(Arc::strong_count(&b), 1);
}

/// A closed compartment: a miss, not counted (as `try_acquire`'s `Closed`
/// is not counted either), and the wait that follows says why.
#[test]
fn a_closed_compartment_is_a_miss_and_the_wait_says_closed() {
    let b = super::fifo(1);
    b.close();
    assert!(b.acquire_if_free().is_none());
    assert_eq!(b.state().rejected, 0);
    let task = Task::new();
    let mut wait = boxed(b.acquire());
    assert!(matches!(
        task.poll(wait.as_mut()),
        Poll::Ready(Err(crate::Error::Closed { .. }))
    ));
}
