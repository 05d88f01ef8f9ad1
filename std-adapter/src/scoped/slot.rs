//! The resource slot of a scoped compartment: its one state machine.
//!
//! | phase | event | next phase | notes |
//! |---|---|---|---|
//! | `Unopened` | an entry finds no failure newer than it saw | `Opening` | that entry runs the initialiser |
//! | `Unopened` | an entry finds a failure newer than it saw | `Unopened` | it returns that failure (it waited on that attempt) |
//! | `Opening` | the initialiser returns `Ok` | `Open` | waiters wake and borrow it |
//! | `Opening` | the initialiser returns `Err` | `Unopened` | `failures += 1`; the waiters of that attempt get its error |
//! | `Opening` | the opening entry is cancelled or panics | `Unopened` | no failure counted: a waiter opens instead |
//! | `Open` | an entry | `Open` | it borrows the open resource |
//! | any | shutdown begins | same, `closing` | no new holders; holders finish |
//! | any | shutdown ends (holders gone, or the bound expired) | `Closed` | the resource is closed now, or by its last holder |
//! | `Closed` | an initialiser that was running returns `Ok` | `Closed` | the fresh resource goes to its entry and is closed by its last holder |
//!
//! `holders` counts the entries between taking a seat and dropping their
//! guard; it only grows while not `closing`, so a shutdown that sees it
//! reach zero has no holder left that could reach the resource. Every
//! change bumps `version` and wakes all waiters (threads on the condvar,
//! tasks through their wakers); each re-reads the phase.
//!
//! An entry into an open slot takes the lock once (admission and its
//! step together). `holders` is an atomic so that leaving takes no lock:
//! it only grows under the lock (where `closing` is checked), and the
//! holder that brings it to zero then takes the lock to wake a shutdown.
//! Either that critical section comes after the shutdown's (which set
//! `closing`), and it wakes the shutdown, or it comes before, and the
//! mutex makes the decrement visible to the shutdown's read of `holders`
//! in its own critical section: no wake-up is lost.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use super::error::{BoxError, OpenError, ScopeError};
use bulkhead_core::Name;

/// A boxed, `Send` future, as async initialisers and close hooks return.
pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// How a resource is closed: dropped, or handed to a hook.
pub(crate) enum Closer<R> {
    Drop,
    Blocking(Box<dyn Fn(R) + Send + Sync>),
    Async(Box<dyn Fn(R) -> BoxFuture<()> + Send + Sync>),
}

impl<R> Closer<R> {
    /// Closes `resource` on this thread, driving an async hook here
    /// unless this thread drives an event loop (it could need that loop).
    pub(crate) fn close_blocking(&self, compartment: &str, resource: R) {
        match self {
            Closer::Drop => drop(resource),
            Closer::Blocking(hook) => hook(resource),
            Closer::Async(hook) if crate::event_loop().is_none() => {
                crate::park::block_on(hook(resource));
            }
            Closer::Async(_) => {
                tracing::warn!(
                    compartment,
                    "bulkhead: a blocking shutdown on an event-loop thread cannot drive the \
                     async close hook of a scoped resource; the resource was dropped instead \
                     (shut down from async code to run the hook)"
                );
                drop(resource);
            }
        }
    }

    /// Closes `resource`, awaiting an async hook.
    pub(crate) async fn close_async(&self, resource: R) {
        match self {
            Closer::Drop => drop(resource),
            Closer::Blocking(hook) => hook(resource),
            Closer::Async(hook) => hook(resource).await,
        }
    }

    /// Closes `resource` on this thread, from a `Drop`: an async hook
    /// cannot be awaited here, so the resource is dropped instead (and
    /// the skip logged).
    fn close_in_drop(&self, compartment: &str, resource: R) {
        match self {
            Closer::Drop | Closer::Blocking(_) => self.close_blocking(compartment, resource),
            Closer::Async(_) => {
                tracing::warn!(
                    compartment,
                    "bulkhead: the last holder of a scoped resource dropped it after the shutdown \
                     bound expired; its async close hook cannot run from a drop, so the resource \
                     was dropped instead"
                );
                drop(resource);
            }
        }
    }
}

/// Process-wide order of openings, for "close in reverse order of opening".
static OPEN_ORDER: AtomicU64 = AtomicU64::new(1);

/// The open resource and, once a shutdown has handed it over, the hook
/// its last holder closes it with.
struct Held<R> {
    value: Option<R>,
    compartment: Name,
    /// Set when the shutdown bound expired with the resource still
    /// reachable: the last `Shared` to go closes it.
    deferred: Mutex<Option<Arc<Closer<R>>>>,
}

impl<R> Drop for Held<R> {
    fn drop(&mut self) {
        let closer = self
            .deferred
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let (Some(closer), Some(value)) = (closer, self.value.take()) {
            closer.close_in_drop(&self.compartment, value);
        }
    }
}

/// A shared handle to a compartment's open resource; dereferences to it.
///
/// Entries and [`current`](super::current) hand these out. The resource is
/// never closed while one exists: a shutdown that finds handles still out
/// when its bound expires leaves the closing to the last of them.
///
/// ```
/// use bulkhead_std::Config;
/// use bulkhead_std::scoped::{Opener, Scoped};
///
/// let cache = Scoped::new(Config::new("cache", 2), "cache-map", Opener::blocking(|_| Ok::<_, std::io::Error>(vec![1, 2, 3])))?;
/// let inside = cache.enter_blocking()?;
/// let shared = inside.shared();
/// assert_eq!(shared.len(), 3); // Deref to the resource
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Shared<R>(Arc<Held<R>>);

impl<R> Clone for Shared<R> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<R> Deref for Shared<R> {
    type Target = R;

    fn deref(&self) -> &R {
        match &self.0.value {
            Some(value) => value,
            // `value` is only taken in `Drop` or after `Arc::try_unwrap`,
            // when no `Shared` is left.
            None => unreachable!("a scoped resource was read after it was closed"),
        }
    }
}

impl<R: fmt::Debug> fmt::Debug for Shared<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Shared").field(&**self).finish()
    }
}

impl<R> Shared<R> {
    fn new(compartment: Name, value: R, deferred: Option<Arc<Closer<R>>>) -> Self {
        Self(Arc::new(Held {
            value: Some(value),
            compartment,
            deferred: Mutex::new(deferred),
        }))
    }

    /// Whether two handles lead to the same opening of the resource.
    ///
    /// ```
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{Opener, Scoped};
    ///
    /// let db = Scoped::new(Config::new("db", 2), "db-pool", Opener::blocking(|_| Ok::<_, std::io::Error>(())))?;
    /// let (a, b) = (db.enter_blocking()?, db.enter_blocking()?);
    /// assert!(a.shared().same_as(&b.shared())); // the second borrows the first's
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn same_as(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl<R: Send + Sync + 'static> Shared<R> {
    pub(crate) fn as_any(&self) -> Arc<dyn Any + Send + Sync> {
        Arc::clone(&self.0) as Arc<dyn Any + Send + Sync>
    }

    pub(crate) fn from_any(any: Arc<dyn Any + Send + Sync>) -> Option<Self> {
        any.downcast::<Held<R>>().ok().map(Self)
    }
}

enum Phase<R> {
    Unopened,
    Opening,
    Open(Shared<R>),
    Closed,
}

struct State<R> {
    phase: Phase<R>,
    closing: bool,
    /// Finished attempts that failed, and the latest failure.
    failures: u64,
    last_failure: Option<OpenError>,
    opens: u64,
    /// The process-wide order of the current opening.
    opened_order: Option<u64>,
    version: u64,
    wakers: Vec<(u64, Waker)>,
    next_waiter: u64,
}

/// What an entry does next, decided under the slot's lock.
pub(crate) enum Step<'a, R> {
    /// The resource is open: borrow it.
    Ready(Shared<R>),
    /// Nobody is opening it: run the initialiser, then finish the ticket.
    Open(Ticket<'a, R>),
    /// Another entry is opening it: wait for `version` to change.
    Wait(u64),
    /// Give up with this error.
    Fail(ScopeError),
}

/// The slot: phase, holders and waiters, under one mutex.
pub(crate) struct Slot<R> {
    pub(crate) compartment: Name,
    pub(crate) resource: &'static str,
    pub(crate) closer: Arc<Closer<R>>,
    /// Entries holding a seat; see the module docs for why it is atomic.
    holders: AtomicUsize,
    state: Mutex<State<R>>,
    changed: Condvar,
}

/// What the resource's side of the compartment looks like now; from
/// [`Scoped::resource_state`](super::Scoped::resource_state) (example
/// there) and, for every scoped compartment of a registry,
/// [`Registry::resource_states`](crate::registry::Registry::resource_states).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResourceState {
    /// Whether the resource is open now.
    pub open: bool,
    /// Whether a shutdown began (no new entries) or finished.
    pub closed: bool,
    /// Entries holding a seat now (those waiting for the opening
    /// included).
    pub holders: usize,
    /// Successful openings so far.
    pub opens: u64,
    /// Failed openings so far.
    pub open_failures: u64,
}

impl<R> Slot<R> {
    pub(crate) fn new(compartment: Name, resource: &'static str, closer: Closer<R>) -> Self {
        Self {
            compartment,
            resource,
            closer: Arc::new(closer),
            holders: AtomicUsize::new(0),
            state: Mutex::new(State {
                phase: Phase::Unopened,
                closing: false,
                failures: 0,
                last_failure: None,
                opens: 0,
                opened_order: None,
                version: 0,
                wakers: Vec::new(),
                next_waiter: 0,
            }),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<R>> {
        // Nothing panics under this lock (no foreign code runs there).
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Bumps the version and wakes every waiter, after the lock is
    /// released (a waker may run arbitrary code).
    fn notify(&self, mut state: MutexGuard<'_, State<R>>) {
        state.version = state.version.wrapping_add(1);
        let wakers = std::mem::take(&mut state.wakers);
        drop(state);
        self.changed.notify_all();
        for (_, waker) in wakers {
            waker.wake();
        }
    }

    /// Counts a new holder (the caller has a seat) and gives its first
    /// step, under one lock; `None` once a shutdown began.
    pub(crate) fn admit(&self) -> Option<(Holder<'_, R>, Step<'_, R>)> {
        let mut state = self.lock();
        if state.closing {
            return None;
        }
        self.holders.fetch_add(1, Ordering::AcqRel);
        let holder = Holder {
            slot: self,
            seen_failures: state.failures,
        };
        let step = holder.step_locked(&mut state);
        Some((holder, step))
    }

    pub(crate) fn state(&self) -> ResourceState {
        let state = self.lock();
        ResourceState {
            open: matches!(state.phase, Phase::Open(_)),
            closed: state.closing,
            holders: self.holders.load(Ordering::Acquire),
            opens: state.opens,
            open_failures: state.failures,
        }
    }

    pub(crate) fn opened_order(&self) -> Option<u64> {
        self.lock().opened_order
    }

    /// Blocks until `version` changes or `deadline` passes; false on
    /// timeout.
    pub(crate) fn wait_blocking(&self, version: u64, deadline: Option<Instant>) -> bool {
        let mut state = self.lock();
        while state.version == version {
            match deadline {
                None => {
                    state = self
                        .changed
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner)
                }
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return false;
                    }
                    state = self
                        .changed
                        .wait_timeout(state, deadline - now)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
            }
        }
        true
    }

    /// Resolves when `version` changes.
    pub(crate) fn changed(&self, version: u64) -> Changed<'_, R> {
        Changed {
            slot: self,
            seen: version,
            id: None,
        }
    }

    /// Starts a shutdown: no new holders from now on. Returns the version
    /// to wait on and the holders left.
    pub(crate) fn begin_close(&self) -> (u64, usize) {
        let mut state = self.lock();
        state.closing = true;
        (state.version, self.holders.load(Ordering::Acquire))
    }

    /// The holders left, and the version to wait on for a change.
    pub(crate) fn holders(&self) -> (u64, usize) {
        let state = self.lock();
        (state.version, self.holders.load(Ordering::Acquire))
    }

    /// Ends a shutdown: the slot is `Closed` for good. Returns the
    /// resource when nothing can reach it any more (the caller closes it),
    /// or hands the closing to its last holder.
    pub(crate) fn finish_close(&self) -> Finished<R> {
        let mut state = self.lock();
        state.closing = true;
        let holders = self.holders.load(Ordering::Acquire);
        let finished = match std::mem::replace(&mut state.phase, Phase::Closed) {
            Phase::Open(shared) => match Arc::try_unwrap(shared.0) {
                Ok(mut held) => match held.value.take() {
                    Some(value) => Finished::Close(value),
                    None => Finished::NeverOpened,
                },
                Err(still_shared) => {
                    *still_shared
                        .deferred
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&self.closer));
                    Finished::Deferred { holders }
                }
            },
            Phase::Opening => Finished::Deferred { holders },
            Phase::Closed => Finished::AlreadyClosed,
            Phase::Unopened => Finished::NeverOpened,
        };
        state.opened_order = None;
        self.notify(state);
        finished
    }
}

impl<R> Drop for Slot<R> {
    /// A compartment dropped without a shutdown still closes its resource
    /// with its hook: now if nothing else holds it, else by the last
    /// holder.
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Phase::Open(shared) = std::mem::replace(&mut state.phase, Phase::Closed) {
            *shared
                .0
                .deferred
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&self.closer));
        }
    }
}

/// How a shutdown ended for the slot.
pub(crate) enum Finished<R> {
    /// The caller closes this resource now.
    Close(R),
    /// It was never opened (or its opening failed).
    NeverOpened,
    /// Still reachable: its last holder closes it.
    Deferred { holders: usize },
    /// A shutdown already ran.
    AlreadyClosed,
}

/// An entry counted in `holders`; uncounts it when dropped, waking a
/// shutdown that waits for the last one.
pub(crate) struct Holder<'a, R> {
    slot: &'a Slot<R>,
    seen_failures: u64,
}

impl<'a, R> Holder<'a, R> {
    /// The entry's next step.
    pub(crate) fn step(&self) -> Step<'a, R> {
        self.step_locked(&mut self.slot.lock())
    }

    fn step_locked(&self, state: &mut State<R>) -> Step<'a, R> {
        let slot = self.slot;
        match &state.phase {
            Phase::Open(shared) => Step::Ready(shared.clone()),
            Phase::Opening => Step::Wait(state.version),
            Phase::Closed => Step::Fail(ScopeError::Rejected(bulkhead_core::Error::Closed {
                name: slot.compartment.clone(),
            })),
            Phase::Unopened => match &state.last_failure {
                Some(failure) if state.failures > self.seen_failures => {
                    Step::Fail(ScopeError::Open(failure.clone()))
                }
                _ => {
                    state.phase = Phase::Opening;
                    Step::Open(Ticket {
                        slot,
                        finished: false,
                    })
                }
            },
        }
    }
}

impl<R> Drop for Holder<'_, R> {
    fn drop(&mut self) {
        if self.slot.holders.fetch_sub(1, Ordering::AcqRel) == 1 {
            let state = self.slot.lock();
            if state.closing {
                self.slot.notify(state);
            }
        }
    }
}

/// The right to open the resource. Dropped unfinished (the opening entry
/// was cancelled or panicked), it puts the slot back to `Unopened` and
/// wakes a waiter to open instead.
pub(crate) struct Ticket<'a, R> {
    slot: &'a Slot<R>,
    finished: bool,
}

impl<R> Ticket<'_, R> {
    /// Records the initialiser's result and wakes the waiters.
    pub(crate) fn finish(mut self, result: Result<R, BoxError>) -> Result<Shared<R>, ScopeError> {
        self.finished = true;
        let slot = self.slot;
        let mut state = slot.lock();
        let outcome = match result {
            Ok(value) => {
                if matches!(state.phase, Phase::Closed) {
                    // The shutdown ended while this opened: the entry gets
                    // it, and its last holder closes it.
                    Ok(Shared::new(
                        slot.compartment.clone(),
                        value,
                        Some(Arc::clone(&slot.closer)),
                    ))
                } else {
                    let shared = Shared::new(slot.compartment.clone(), value, None);
                    state.phase = Phase::Open(shared.clone());
                    state.opens += 1;
                    state.opened_order = Some(OPEN_ORDER.fetch_add(1, Ordering::Relaxed));
                    Ok(shared)
                }
            }
            Err(source) => {
                let failure = OpenError {
                    compartment: slot.compartment.clone(),
                    resource: slot.resource,
                    source: Arc::from(source),
                };
                if matches!(state.phase, Phase::Opening) {
                    state.phase = Phase::Unopened;
                }
                state.failures += 1;
                state.last_failure = Some(failure.clone());
                Err(ScopeError::Open(failure))
            }
        };
        slot.notify(state);
        outcome
    }
}

impl<R> Drop for Ticket<'_, R> {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let mut state = self.slot.lock();
        if matches!(state.phase, Phase::Opening) {
            state.phase = Phase::Unopened;
        }
        self.slot.notify(state);
    }
}

/// Resolves when the slot's version moves past the one seen. Returned by
/// [`Slot::changed`].
///
/// Cancel safety: dropping it removes its waker; nothing else is held.
pub(crate) struct Changed<'a, R> {
    slot: &'a Slot<R>,
    seen: u64,
    id: Option<u64>,
}

impl<R> Future for Changed<'_, R> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.slot.lock();
        if state.version != self.seen {
            return Poll::Ready(());
        }
        match self.id {
            Some(id) => {
                if let Some((_, waker)) = state.wakers.iter_mut().find(|(i, _)| *i == id) {
                    waker.clone_from(cx.waker());
                } else {
                    state.wakers.push((id, cx.waker().clone()));
                }
            }
            None => {
                let id = state.next_waiter;
                state.next_waiter = id.wrapping_add(1);
                state.wakers.push((id, cx.waker().clone()));
                drop(state);
                self.id = Some(id);
            }
        }
        Poll::Pending
    }
}

impl<R> Drop for Changed<'_, R> {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            self.slot.lock().wakers.retain(|(i, _)| *i != id);
        }
    }
}
