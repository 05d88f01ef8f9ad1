//! Entering a scoped compartment: from a thread, from async code, with
//! the ambient scope set around work; and the guard, [`Entered`].

use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::pin::{Pin, pin};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bulkhead_core::Error;

use super::slot::{Holder, Shared, Step};
use super::{Opening, Scope, ScopeError, Scoped, ambient};
use crate::Seat;
use crate::blocking::BlockingAcquire;
use crate::detect::event_loop;
use crate::wait_timer::Timed;

impl<R: Send + Sync + 'static> Scoped<R> {
    /// Enters from a thread: takes a seat within the compartment's wait
    /// budget, opens the resource if nobody has yet (or waits, within the
    /// same budget, for the entry that is opening it), and returns the
    /// guard. Dropping the guard gives the seat back, also while a panic
    /// unwinds.
    ///
    /// This does not set the ambient scope (a guard may move to another
    /// thread); [`execute`](Self::execute) does, or
    /// `entered.scope().with(..)`.
    ///
    /// On a thread that drives an event loop the verdict is immediate, as
    /// for [`BlockingAcquire::acquire_blocking`]: no wait for a seat or for
    /// another entry's opening.
    ///
    /// # Cancel safety
    /// Not applicable: the call blocks until it has a verdict. If the
    /// initialiser panics, the panic propagates, the seat is given back
    /// and the next entry opens instead.
    ///
    /// # Memory ordering
    /// Everything the initialiser did happens-before everything any entry
    /// does with the resource: it is published under the slot's mutex,
    /// which every entry takes. The seat itself orders as every seat (see
    /// [`Bulkhead`](bulkhead_core::Bulkhead#memory-ordering)).
    ///
    /// # Errors
    /// [`ScopeError::Rejected`] (no seat), [`ScopeError::Open`] (the
    /// initialiser failed, now or in the attempt this entry waited on),
    /// [`ScopeError::OpenTimeout`], and [`ScopeError::NeedsAsyncEntry`] for
    /// an async initialiser that would have to run on an event-loop thread.
    ///
    /// # Examples
    /// ```
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{Opener, Scoped};
    ///
    /// let db = Scoped::new(Config::new("db", 2), "db", Opener::blocking(|_| Ok::<_, std::io::Error>(40)))?;
    /// let inside = db.enter_blocking()?;
    /// assert_eq!(*inside + 2, 42);
    /// assert_eq!(db.state().active, 1);
    /// drop(inside);
    /// assert_eq!(db.state().active, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn enter_blocking(&self) -> Result<Entered<'_, R>, ScopeError> {
        // Outer `None`: fail fast, which never waits and reads no clock.
        // Inner `None`: no deadline (forever, or a budget too large to add
        // to now).
        let deadline = match self.max_wait.budget() {
            Some(budget) => Some(Instant::now().checked_add(budget)),
            None if self.max_wait.is_unbounded() => Some(None),
            None => None,
        };
        let seat = self.bulkhead.acquire_blocking(self.max_wait)?;
        let (holder, mut step) = self.admit()?;
        loop {
            match step {
                Step::Ready(resource) => return Ok(Entered::new(resource, holder, seat)),
                Step::Open(ticket) => {
                    if self.opener.is_async() && event_loop().is_some() {
                        // Driving it here could block the very loop it
                        // needs. Unfinished, the ticket wakes a waiter
                        // to open instead.
                        drop(ticket);
                        return Err(ScopeError::NeedsAsyncEntry {
                            compartment: self.name.clone(),
                            resource: self.slot.resource,
                        });
                    }
                    let resource = ticket.finish(self.opener.open_blocking(&self.opening()))?;
                    return Ok(Entered::new(resource, holder, seat));
                }
                Step::Wait(version) => {
                    let waited = match deadline {
                        Some(deadline) if event_loop().is_none() => {
                            self.slot.wait_blocking(version, deadline)
                        }
                        _ => false,
                    };
                    if !waited {
                        return Err(self.open_timeout());
                    }
                }
                Step::Fail(e) => return Err(e),
            }
            step = holder.step();
        }
    }

    /// Enters from async code on any runtime, waiting at most the
    /// compartment's budget on the caller's runtime timer: `sleep` turns
    /// the budget into a future that completes when it has elapsed
    /// (`tokio::time::sleep`, `async_io::Timer::after`, …). One timer
    /// bounds the wait for a seat and the wait for another entry's
    /// opening together. An async initialiser is awaited here; a blocking
    /// one runs on this task's thread.
    ///
    /// # Cancel safety
    /// Dropping the future at any point loses nothing: a caller waiting
    /// for a seat leaves the line; one waiting for the opening leaves the
    /// slot; one running the initialiser drops it unfinished and another
    /// entry opens instead. Any seat taken is given back.
    ///
    /// # Memory ordering
    /// As [`enter_blocking`](Self::enter_blocking).
    ///
    /// # Errors
    /// As [`enter_blocking`](Self::enter_blocking).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{Opener, Scoped};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let api = Scoped::new(Config::new("api", 2), "api-client", Opener::future(|_| async { Ok::<_, std::io::Error>("client") }))?
    ///     .max_wait(Duration::from_millis(100));
    /// let inside = api.enter_timeout(tokio::time::sleep).await?;
    /// assert_eq!(*inside, "client");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn enter_timeout<T: Future>(
        &self,
        sleep: impl FnOnce(Duration) -> T,
    ) -> Result<Entered<'_, R>, ScopeError> {
        let Some(budget) = self.max_wait.budget() else {
            if self.max_wait.is_unbounded() {
                let seat = Timed::new(self.bulkhead.acquire(), &self.bulkhead).await?;
                return self.enter_async::<T>(seat, Limit::Forever).await;
            }
            let seat = self.bulkhead.try_acquire()?;
            return self.enter_async::<T>(seat, Limit::FailFast).await;
        };
        let mut timer = pin!(sleep(budget));
        let seat = Timed::new(
            self.bulkhead.acquire_timeout(budget, |_| timer.as_mut()),
            &self.bulkhead,
        )
        .await?;
        self.enter_async(seat, Limit::Timer(timer)).await
    }

    /// The part of an async entry after the seat: open, or wait for the
    /// opening within `limit`.
    async fn enter_async<'a, T: Future>(
        &'a self,
        seat: Seat<'a>,
        mut limit: Limit<'_, T>,
    ) -> Result<Entered<'a, R>, ScopeError> {
        let (holder, mut step) = self.admit()?;
        loop {
            match step {
                Step::Ready(resource) => return Ok(Entered::new(resource, holder, seat)),
                Step::Open(ticket) => {
                    let resource = ticket.finish(self.opener.open_async(&self.opening()).await)?;
                    return Ok(Entered::new(resource, holder, seat));
                }
                Step::Wait(version) => match &mut limit {
                    Limit::FailFast => return Err(self.open_timeout()),
                    Limit::Forever => self.slot.changed(version).await,
                    Limit::Timer(timer) => {
                        if let Either::Second =
                            race(self.slot.changed(version), timer.as_mut()).await
                        {
                            return Err(self.open_timeout());
                        }
                    }
                },
                Step::Fail(e) => return Err(e),
            }
            step = holder.step();
        }
    }

    /// What the opener is told: the settings as they stand now.
    fn opening(&self) -> Opening {
        Opening {
            compartment: self.name.clone(),
            resource: self.slot.resource,
            max_concurrent: self.bulkhead.max_concurrent(),
            max_wait: self.max_wait,
        }
    }

    fn admit(&self) -> Result<(Holder<'_, R>, Step<'_, R>), ScopeError> {
        self.slot.admit().ok_or(ScopeError::Rejected(Error::Closed {
            name: self.name.clone(),
        }))
    }

    fn open_timeout(&self) -> ScopeError {
        ScopeError::OpenTimeout {
            compartment: self.name.clone(),
            resource: self.slot.resource,
            budget: self.max_wait.budget().unwrap_or(Duration::ZERO),
        }
    }

    /// Runs `work` on this thread inside the compartment: enters as
    /// [`enter_blocking`](Self::enter_blocking), then runs `work` with the
    /// resource and with the ambient scope set, so that [`resolve`](super::resolve) and
    /// [`current`](super::current) find this compartment's resource. The seat is given
    /// back and the previous scope restored when `work` returns or
    /// panics; a panic leaves the resource open for the next entry.
    ///
    /// # Errors
    /// As [`enter_blocking`](Self::enter_blocking); `work` has then not
    /// run.
    ///
    /// # Examples
    /// ```
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{self, Opener, Scoped};
    ///
    /// let reports = Scoped::new(Config::new("reports", 1), "reports-db", Opener::blocking(|_| Ok::<_, std::io::Error>("reports-db")))?;
    /// let name = reports.execute(|db| (*db, scoped::current::<&str>().is_some()))?;
    /// assert_eq!(name, ("reports-db", true));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn execute<T>(&self, work: impl FnOnce(&R) -> T) -> Result<T, ScopeError> {
        let entered = self.enter_blocking()?;
        Ok(entered.scope().with(|| work(&entered)))
    }

    /// Runs the future `work` inside the compartment: enters as
    /// [`enter_timeout`](Self::enter_timeout), then polls `work`
    /// with the ambient scope set for each poll (task-local: tasks that
    /// `work` spawns do not inherit it; see [`Scope`]). The seat is held
    /// until `work` completes.
    ///
    /// # Cancel safety
    /// Dropping the future loses nothing: before admission as
    /// [`enter_timeout`](Self::enter_timeout); after it, `work` is
    /// dropped unfinished and the seat given back.
    ///
    /// # Errors
    /// As [`enter_blocking`](Self::enter_blocking); `work` has then not
    /// been polled.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{self, Opener, Scoped};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let checkout = Scoped::new(Config::new("checkout", 2), "checkout-db", Opener::blocking(|_| Ok::<_, std::io::Error>(5_u32)))?;
    /// let out = checkout
    ///     .run_timeout(
    ///         async {
    ///             tokio::task::yield_now().await; // still in scope after a suspension
    ///             *scoped::current::<u32>().unwrap() * 2
    ///         },
    ///         tokio::time::sleep,
    ///     )
    ///     .await?;
    /// assert_eq!(out, 10);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn run_timeout<F: Future, T: Future>(
        &self,
        work: F,
        sleep: impl FnOnce(Duration) -> T,
    ) -> Result<F::Output, ScopeError> {
        let entered = self.enter_timeout(sleep).await?;
        let output = entered.scope().wrap(work).await;
        drop(entered);
        Ok(output)
    }
}

/// Inside a scoped compartment: a seat and the open resource. Dereferences
/// to the resource; dropping it gives the seat back, also while a panic
/// unwinds.
///
/// ```
/// use bulkhead_std::Config;
/// use bulkhead_std::scoped::{Opener, Scoped};
///
/// let db = Scoped::new(Config::new("db", 1), "db", Opener::blocking(|_| Ok::<_, std::io::Error>(String::from("conn"))))?;
/// let inside = db.enter_blocking()?;
/// assert_eq!(inside.len(), 4);
/// assert_eq!(inside.compartment(), "db");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "the seat is given back as soon as the guard is dropped"]
pub struct Entered<'a, R> {
    // Dropped in this order: the resource handle first, so that a
    // shutdown woken by the holder count finds no handle of this entry.
    resource: Shared<R>,
    holder: Holder<'a, R>,
    seat: Seat<'a>,
}

impl<'a, R> Entered<'a, R> {
    fn new(resource: Shared<R>, holder: Holder<'a, R>, seat: Seat<'a>) -> Self {
        Self {
            resource,
            holder,
            seat,
        }
    }

    /// The compartment's name (example at [`Entered`]).
    pub fn compartment(&self) -> &str {
        self.seat.bulkhead().name()
    }

    /// Another handle to the resource (it keeps the resource alive, not
    /// the seat; example at [`Shared`]).
    pub fn shared(&self) -> Shared<R> {
        self.resource.clone()
    }
}

impl<R: Send + Sync + 'static> Entered<'_, R> {
    /// The current ambient scope with this compartment's resource lent on
    /// top: run code in it with [`Scope::with`] or [`Scope::wrap`].
    ///
    /// ```
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{self, Opener, Scoped};
    ///
    /// let db = Scoped::new(Config::new("db", 1), "db", Opener::blocking(|_| Ok::<_, std::io::Error>(1_i64)))?;
    /// let inside = db.enter_blocking()?;
    /// assert_eq!(inside.scope().with(|| scoped::current::<i64>().map(|r| *r)), Some(1));
    /// assert_eq!(inside.scope().compartments(), ["db"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn scope(&self) -> Scope {
        ambient::with_resource(self.seat.bulkhead().name_handle(), &self.resource)
    }
}

impl<R> Deref for Entered<'_, R> {
    type Target = R;

    fn deref(&self) -> &R {
        &self.resource
    }
}

impl<R> fmt::Debug for Entered<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let _ = &self.holder;
        f.debug_struct("Entered")
            .field("compartment", &self.compartment())
            .finish_non_exhaustive()
    }
}

/// How long an async entry may wait for another entry's opening.
enum Limit<'t, T> {
    FailFast,
    Timer(Pin<&'t mut T>),
    Forever,
}

pub(super) enum Either {
    First,
    Second,
}

/// Polls `first`, then `second`, until one completes.
pub(super) async fn race<A: Future, B: Future>(first: A, second: B) -> Either {
    let mut first = pin!(first);
    let mut second = pin!(second);
    std::future::poll_fn(|cx: &mut Context<'_>| {
        if first.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Either::First);
        }
        if second.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Either::Second);
        }
        Poll::Pending
    })
    .await
}
