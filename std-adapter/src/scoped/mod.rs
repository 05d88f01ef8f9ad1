//! Resource-scoped compartments: a compartment that owns its own
//! dependency (a client, a connection pool, a handle), so that one
//! business context can never exhaust another's connections.
//!
//! A [`Scoped<R>`] is a compartment ([`Bulkhead`]: seats, a wait budget,
//! the same rejections, snapshots and registry entry as any other) plus
//! one resource of type `R` and its initialiser:
//!
//! - **Opened on first entry**, not at construction. Concurrent first
//!   entries run the initialiser exactly once; the others wait for it
//!   within their own wait budget and then borrow it. An entry while it is
//!   open borrows it too; there is never a second copy.
//! - **A failed opening** gives [`ScopeError::Open`] naming the
//!   compartment and the resource, gives the seat back, and is not
//!   cached: the entries that waited on that attempt get its error, and
//!   the next entry tries again.
//! - **Entering** takes a seat and gives `&R` for as long as the seat is
//!   held ([`Entered`]). [`execute`](Scoped::execute) and
//!   [`run_with_timer`](Scoped::run_with_timer) also set the **ambient
//!   scope**: inside them, [`resolve`] and [`current`] find this
//!   compartment's resource instead of the application's default, while an
//!   explicitly passed resource always wins.
//! - **Shutdown** ([`shutdown_blocking`](Scoped::shutdown_blocking),
//!   [`shutdown_with_timer`](Scoped::shutdown_with_timer)) closes the
//!   compartment (new entries get [`Error::Closed`]), waits at most a
//!   bound for the holders to finish, then closes the resource: by `Drop`,
//!   or with a close hook ([`on_close`](Scoped::on_close),
//!   [`on_close_async`](Scoped::on_close_async)). The registry's
//!   [`shutdown`](crate::registry::Registry::shutdown) closes every scoped
//!   compartment in reverse order of opening.
//!
//! # Nothing is closed while it can be reached
//!
//! Every entry keeps a reference-counted handle ([`Shared`]) to the open
//! resource for as long as its seat is held, so the resource cannot be
//! dropped under a live borrow: that is guaranteed by ownership, not by
//! timing. If the shutdown bound expires while holders remain, the
//! shutdown returns [`CloseOutcome::Deferred`] and the **last holder**
//! closes the resource when it lets go (a sync hook runs then; an async
//! hook cannot run from a `Drop`, so the resource is dropped and a
//! warning logged).
//!
//! # Runs
//!
//! A compartment belongs to one run of the application: after its
//! shutdown it admits nobody, like core's `close`. A later run (a new
//! registry, the next test with its own runtime) builds its compartment
//! again with [`Scoped::renewed`], and that one opens its resource afresh.
//! A resource bound to one async runtime (most async clients are) should
//! not outlive that runtime, so close it with the run. A compartment
//! shared by two overlapping runs (registered in both registries) is one
//! compartment: the later run borrows what the first opened, and the
//! first shutdown closes it for both; give runs whose lifetimes differ
//! their own compartments.
//!
//! # Examples
//!
//! ```
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::sync::Arc;
//! use std::time::Duration;
//! use bulkhead_std::Config;
//! use bulkhead_std::scoped::{self, CloseOutcome, Opener, Scoped};
//!
//! struct Pool { name: &'static str }
//!
//! let opened = Arc::new(AtomicUsize::new(0));
//! let counter = opened.clone();
//! let checkout = Scoped::new(
//!     Config::new("checkout", 4),
//!     "checkout-pool",
//!     Opener::blocking(move || {
//!         counter.fetch_add(1, Ordering::Relaxed);
//!         Ok::<_, std::io::Error>(Pool { name: "checkout" })
//!     }),
//! )?
//! .max_wait(Duration::from_millis(50));
//! assert_eq!(opened.load(Ordering::Relaxed), 0); // not opened at construction
//!
//! let app_pool = Pool { name: "app" };
//! let used = checkout.execute(|pool| {
//!     // Code that asks for the default pool gets the compartment's.
//!     assert_eq!(scoped::resolve(None, &app_pool).name, "checkout");
//!     pool.name
//! })?;
//! assert_eq!((used, opened.load(Ordering::Relaxed)), ("checkout", 1));
//!
//! let report = checkout.shutdown_blocking(Duration::from_secs(1));
//! assert_eq!(report.outcome, CloseOutcome::Closed);
//! assert!(checkout.enter_blocking().is_err()); // closed for good
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod ambient;
mod error;
mod slot;

use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bulkhead_core::{Config, ConfigError, Error, State};

use crate::blocking::BlockingAcquire;
use crate::detect::event_loop;
use crate::{Bulkhead, Seat};

pub use ambient::{InScope, Resolved, Scope, current, in_current_scope, resolve};
pub use error::{BoxError, OpenError, ScopeError};
pub use slot::{ResourceState, Shared};

use slot::{BoxFuture, Closer, Finished, Holder, Slot, Step};

/// The initialiser of a scoped compartment's resource: a blocking
/// function or an async one. It runs on first entry, inside that entry's
/// seat, and again after a failure or in a [`renewed`](Scoped::renewed)
/// compartment.
///
/// ```
/// use bulkhead_std::scoped::Opener;
///
/// let blocking: Opener<String> = Opener::blocking(|| Ok::<_, std::io::Error>("client".to_owned()));
/// let future: Opener<String> = Opener::future(|| async { Ok::<_, std::io::Error>("client".to_owned()) });
/// # drop((blocking, future));
/// ```
pub struct Opener<R>(Arc<OpenerKind<R>>);

enum OpenerKind<R> {
    Blocking(Box<dyn Fn() -> Result<R, BoxError> + Send + Sync>),
    Async(Box<dyn Fn() -> BoxFuture<Result<R, BoxError>> + Send + Sync>),
}

impl<R> Clone for Opener<R> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<R: 'static> Opener<R> {
    /// A blocking initialiser. From async code it runs on the entering
    /// task's thread; a slow one belongs in [`future`](Self::future).
    /// Its error may be any `Into<BoxError>`: an error type or a string.
    ///
    /// ```
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{Opener, Scoped};
    ///
    /// let path = std::env::temp_dir();
    /// let dir = Scoped::new(Config::new("files", 2), "temp-dir", Opener::blocking(move || {
    ///     std::fs::read_dir(&path).map(|entries| entries.count())
    /// }))?;
    /// assert!(dir.execute(|count| *count < usize::MAX).unwrap());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn blocking<E: Into<BoxError>>(
        open: impl Fn() -> Result<R, E> + Send + Sync + 'static,
    ) -> Self {
        Self(Arc::new(OpenerKind::Blocking(Box::new(move || {
            open().map_err(Into::into)
        }))))
    }

    /// An async initialiser. Async entries await it; a blocking entry
    /// ([`enter_blocking`](Scoped::enter_blocking)) drives it on its own
    /// thread, so a future that needs a runtime's reactor (a tokio socket)
    /// must then be entered from a thread inside that runtime (a
    /// `spawn_blocking` thread) or from async code. On a thread that
    /// drives an event loop a blocking entry refuses to drive it
    /// ([`ScopeError::NeedsAsyncEntry`]) rather than block that loop.
    ///
    /// ```
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{Opener, Scoped};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    /// let addr = listener.local_addr()?;
    /// let api = Scoped::new(Config::new("api", 2), "api-connection", Opener::future(move || async move {
    ///     tokio::task::yield_now().await; // an async client would connect here
    ///     std::net::TcpStream::connect(addr)
    /// }))?;
    /// let connected = api.run_with_timer(tokio::time::sleep, async { true }).await?;
    /// assert!(connected);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn future<F, E>(open: impl Fn() -> F + Send + Sync + 'static) -> Self
    where
        F: Future<Output = Result<R, E>> + Send + 'static,
        E: Into<BoxError>,
    {
        Self(Arc::new(OpenerKind::Async(Box::new(move || {
            let opening = open();
            Box::pin(async move { opening.await.map_err(Into::into) })
        }))))
    }

    fn is_async(&self) -> bool {
        matches!(&*self.0, OpenerKind::Async(_))
    }

    fn open_blocking(&self) -> Result<R, BoxError> {
        match &*self.0 {
            OpenerKind::Blocking(open) => open(),
            OpenerKind::Async(open) => block_on(open()),
        }
    }

    async fn open_async(&self) -> Result<R, BoxError> {
        match &*self.0 {
            OpenerKind::Blocking(open) => open(),
            OpenerKind::Async(open) => open().await,
        }
    }
}

impl<R> fmt::Debug for Opener<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match &*self.0 {
            OpenerKind::Blocking(_) => "Opener::blocking",
            OpenerKind::Async(_) => "Opener::future",
        })
    }
}

/// A compartment that owns a resource `R`, opened on first entry and
/// closed at shutdown. See the [module docs](self) for the semantics.
pub struct Scoped<R> {
    bulkhead: Arc<Bulkhead>,
    config: Config,
    max_wait: Option<Duration>,
    opener: Opener<R>,
    slot: Slot<R>,
}

impl<R: Send + Sync + 'static> Scoped<R> {
    /// A compartment built from `config` whose resource, called
    /// `resource` in errors, logs and metrics, is opened by `opener` on
    /// first entry. Fails fast until given a [`max_wait`](Self::max_wait).
    ///
    /// # Errors
    /// As [`Config::validate`]: zero or too many seats.
    ///
    /// # Examples
    /// ```
    /// use bulkhead_std::{Config, ConfigError};
    /// use bulkhead_std::scoped::{Opener, Scoped};
    ///
    /// let ok = Scoped::new(Config::new("reports", 2), "reports-db", Opener::blocking(|| Ok::<_, std::io::Error>(())));
    /// assert!(ok.is_ok());
    /// let zero = Scoped::new(Config::new("reports", 0), "reports-db", Opener::blocking(|| Ok::<_, std::io::Error>(())));
    /// assert!(matches!(zero, Err(ConfigError::ZeroCapacity { name: "reports" })));
    /// ```
    pub fn new(
        config: Config,
        resource: &'static str,
        opener: Opener<R>,
    ) -> Result<Self, ConfigError> {
        let bulkhead = Arc::new(Bulkhead::from_config(config)?);
        Ok(Self {
            bulkhead,
            config,
            max_wait: None,
            opener,
            slot: Slot::new(config.name, resource, Closer::Drop),
        })
    }

    /// Lets entries wait at most `max_wait`, for a seat and for another
    /// entry's opening together. Zero fails fast (the default).
    #[must_use]
    pub fn max_wait(mut self, max_wait: Duration) -> Self {
        self.max_wait = (!max_wait.is_zero()).then_some(max_wait);
        self
    }

    /// Closes the resource with `hook` at shutdown instead of dropping it.
    ///
    /// ```
    /// use std::sync::{Arc, atomic::{AtomicBool, Ordering}};
    /// use std::time::Duration;
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{Opener, Scoped};
    ///
    /// let flushed = Arc::new(AtomicBool::new(false));
    /// let seen = flushed.clone();
    /// let audit = Scoped::new(Config::new("audit", 1), "audit-log", Opener::blocking(|| Ok::<_, std::io::Error>(vec!["boot"])))?
    ///     .on_close(move |log| seen.store(log == ["boot"], Ordering::Relaxed));
    /// audit.execute(|_| ())?;
    /// audit.shutdown_blocking(Duration::from_secs(1));
    /// assert!(flushed.load(Ordering::Relaxed));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn on_close(mut self, hook: impl Fn(R) + Send + Sync + 'static) -> Self {
        self.slot.closer = Arc::new(Closer::Blocking(Box::new(hook)));
        self
    }

    /// Closes the resource with the async `hook` at shutdown (a pool's
    /// `close().await`). An async shutdown awaits it; a blocking one
    /// drives it on the calling thread (see [`Opener::future`] for what
    /// that needs), except on a thread that drives an event loop, and a
    /// last holder's drop after an expired bound cannot await it: the
    /// resource is then dropped instead, with a `tracing` warning.
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{CloseOutcome, Opener, Scoped};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = Scoped::new(Config::new("pool", 1), "pool", Opener::blocking(|| Ok::<_, std::io::Error>(3_u8)))?
    ///     .on_close_async(|n| async move { tokio::time::sleep(Duration::from_millis(n.into())).await });
    /// pool.enter_with_timer(tokio::time::sleep).await?;
    /// let report = pool.shutdown_with_timer(Duration::from_secs(1), tokio::time::sleep).await;
    /// assert_eq!(report.outcome, CloseOutcome::Closed);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    #[must_use]
    pub fn on_close_async<F>(mut self, hook: impl Fn(R) -> F + Send + Sync + 'static) -> Self
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.slot.closer = Arc::new(Closer::Async(Box::new(move |r| Box::pin(hook(r)))));
        self
    }

    /// The same compartment built again for a later run: same settings,
    /// initialiser and close hook, fresh seats, resource not yet opened.
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{Opener, Scoped};
    ///
    /// let first = Scoped::new(Config::new("db", 1), "db", Opener::blocking(|| Ok::<_, std::io::Error>(())))?;
    /// first.execute(|_| ())?;
    /// first.shutdown_blocking(Duration::from_secs(1));
    /// let next = first.renewed();
    /// assert!(!next.resource_state().open); // opens on its own first entry
    /// assert!(next.execute(|_| ()).is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn renewed(&self) -> Self {
        let bulkhead = match Bulkhead::from_config(self.config) {
            Ok(b) => Arc::new(b),
            // The same config was validated by `new`.
            Err(e) => unreachable!("a validated config was refused: {e}"),
        };
        let mut slot = Slot::new(self.config.name, self.slot.resource, Closer::Drop);
        slot.closer = Arc::clone(&self.slot.closer);
        Self {
            bulkhead,
            config: self.config,
            max_wait: self.max_wait,
            opener: self.opener.clone(),
            slot,
        }
    }

    /// The compartment's name.
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{Opener, Scoped};
    ///
    /// let db = Scoped::new(Config::new("orders", 3), "orders-db", Opener::blocking(|| Ok::<_, std::io::Error>(())))?
    ///     .max_wait(Duration::from_millis(20));
    /// assert_eq!((db.name(), db.resource_name()), ("orders", "orders-db"));
    /// assert_eq!(db.wait_budget(), Some(Duration::from_millis(20)));
    /// assert_eq!(db.bulkhead().name(), "orders");
    /// assert_eq!(db.state().max_concurrent, 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn name(&self) -> &'static str {
        self.config.name
    }

    /// The settings it was built with.
    pub(crate) fn core_config(&self) -> Config {
        self.config
    }

    /// The resource's name, as given to [`new`](Self::new) (example at
    /// [`name`](Self::name)).
    pub fn resource_name(&self) -> &'static str {
        self.slot.resource
    }

    /// The entries' wait budget; `None` fails fast (example at
    /// [`name`](Self::name)).
    pub fn wait_budget(&self) -> Option<Duration> {
        self.max_wait
    }

    /// The compartment itself: its seats, state and settings, as for any
    /// compartment (reconfigure it live with `set_max_concurrent`; example
    /// at [`name`](Self::name)).
    pub fn bulkhead(&self) -> &Arc<Bulkhead> {
        &self.bulkhead
    }

    /// The compartment's seat counters (example at [`name`](Self::name)).
    pub fn state(&self) -> State {
        self.bulkhead.state()
    }

    /// Whether the resource is open, and its counters.
    ///
    /// ```
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{Opener, Scoped};
    ///
    /// let db = Scoped::new(Config::new("db", 1), "db", Opener::blocking(|| Ok::<_, std::io::Error>(())))?;
    /// assert!(!db.resource_state().open);
    /// let inside = db.enter_blocking()?;
    /// let s = db.resource_state();
    /// assert!(s.open && s.holders == 1 && s.opens == 1);
    /// # drop(inside);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn resource_state(&self) -> ResourceState {
        self.slot.state()
    }

    /// When the resource was opened, in a process-wide order (larger is
    /// later); `None` while it is not open. The registry closes scoped
    /// compartments from the largest down.
    ///
    /// ```
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{Opener, Scoped};
    ///
    /// let open = || Opener::blocking(|| Ok::<_, std::io::Error>(()));
    /// let (a, b) = (Scoped::new(Config::new("a", 1), "a", open())?, Scoped::new(Config::new("b", 1), "b", open())?);
    /// assert_eq!(a.opened_order(), None);
    /// b.execute(|_| ())?;
    /// a.execute(|_| ())?;
    /// assert!(a.opened_order() > b.opened_order());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn opened_order(&self) -> Option<u64> {
        self.slot.opened_order()
    }

    /// Enters from a thread: takes a seat within the compartment's wait
    /// budget, opens the resource if nobody has yet (or waits, within the
    /// same budget, for the entry that is opening it), and returns the
    /// guard. Dropping the guard gives the seat back, also while a panic
    /// unwinds.
    ///
    /// This does not set the ambient scope (a guard may move to another
    /// thread); [`execute`](Self::execute) does, or
    /// `entered.scope().run(..)`.
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
    /// let db = Scoped::new(Config::new("db", 2), "db", Opener::blocking(|| Ok::<_, std::io::Error>(40)))?;
    /// let inside = db.enter_blocking()?;
    /// assert_eq!(*inside + 2, 42);
    /// assert_eq!(db.state().active, 1);
    /// drop(inside);
    /// assert_eq!(db.state().active, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn enter_blocking(&self) -> Result<Entered<'_, R>, ScopeError> {
        // Outer `None`: fail fast, which never waits and reads no clock.
        // Inner `None`: a budget too large to add to now, no deadline.
        let deadline = self
            .max_wait
            .map(|budget| Instant::now().checked_add(budget));
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
                            compartment: self.config.name,
                            resource: self.slot.resource,
                        });
                    }
                    let resource = ticket.finish(self.opener.open_blocking())?;
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
    /// let api = Scoped::new(Config::new("api", 2), "api-client", Opener::future(|| async { Ok::<_, std::io::Error>("client") }))?
    ///     .max_wait(Duration::from_millis(100));
    /// let inside = api.enter_with_timer(tokio::time::sleep).await?;
    /// assert_eq!(*inside, "client");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn enter_with_timer<T: Future>(
        &self,
        sleep: impl FnOnce(Duration) -> T,
    ) -> Result<Entered<'_, R>, ScopeError> {
        let Some(budget) = self.max_wait else {
            let seat = self.bulkhead.try_acquire()?;
            return self.enter_async::<T>(seat, None).await;
        };
        let mut timer = pin!(sleep(budget));
        let seat = self
            .bulkhead
            .acquire_timeout(budget, timer.as_mut())
            .await?;
        self.enter_async(seat, Some(timer)).await
    }

    /// The part of an async entry after the seat: open, or wait for the
    /// opening until `timer` fires (`None`: fail fast).
    async fn enter_async<'a, T: Future>(
        &'a self,
        seat: Seat<'a>,
        mut timer: Option<Pin<&mut T>>,
    ) -> Result<Entered<'a, R>, ScopeError> {
        let (holder, mut step) = self.admit()?;
        loop {
            match step {
                Step::Ready(resource) => return Ok(Entered::new(resource, holder, seat)),
                Step::Open(ticket) => {
                    let resource = ticket.finish(self.opener.open_async().await)?;
                    return Ok(Entered::new(resource, holder, seat));
                }
                Step::Wait(version) => match timer.as_mut() {
                    None => return Err(self.open_timeout()),
                    Some(timer) => {
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

    fn admit(&self) -> Result<(Holder<'_, R>, Step<'_, R>), ScopeError> {
        self.slot.admit().ok_or(ScopeError::Rejected(Error::Closed {
            name: self.config.name,
        }))
    }

    fn open_timeout(&self) -> ScopeError {
        ScopeError::OpenTimeout {
            compartment: self.config.name,
            resource: self.slot.resource,
            budget: self.max_wait.unwrap_or(Duration::ZERO),
        }
    }

    /// Runs `work` on this thread inside the compartment: enters as
    /// [`enter_blocking`](Self::enter_blocking), then runs `work` with the
    /// resource and with the ambient scope set, so that [`resolve`] and
    /// [`current`] find this compartment's resource. The seat is given
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
    /// let reports = Scoped::new(Config::new("reports", 1), "reports-db", Opener::blocking(|| Ok::<_, std::io::Error>("reports-db")))?;
    /// let name = reports.execute(|db| (*db, scoped::current::<&str>().is_some()))?;
    /// assert_eq!(name, ("reports-db", true));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn execute<T>(&self, work: impl FnOnce(&R) -> T) -> Result<T, ScopeError> {
        let entered = self.enter_blocking()?;
        Ok(entered.scope().run(|| work(&entered)))
    }

    /// Runs the future `work` inside the compartment: enters as
    /// [`enter_with_timer`](Self::enter_with_timer), then polls `work`
    /// with the ambient scope set for each poll (task-local: tasks that
    /// `work` spawns do not inherit it; see [`Scope`]). The seat is held
    /// until `work` completes.
    ///
    /// # Cancel safety
    /// Dropping the future loses nothing: before admission as
    /// [`enter_with_timer`](Self::enter_with_timer); after it, `work` is
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
    /// let checkout = Scoped::new(Config::new("checkout", 2), "checkout-db", Opener::blocking(|| Ok::<_, std::io::Error>(5_u32)))?;
    /// let out = checkout
    ///     .run_with_timer(tokio::time::sleep, async {
    ///         tokio::task::yield_now().await; // still in scope after a suspension
    ///         *scoped::current::<u32>().unwrap() * 2
    ///     })
    ///     .await?;
    /// assert_eq!(out, 10);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn run_with_timer<F: Future, T: Future>(
        &self,
        sleep: impl FnOnce(Duration) -> T,
        work: F,
    ) -> Result<F::Output, ScopeError> {
        let entered = self.enter_with_timer(sleep).await?;
        let output = entered.scope().wrap(work).await;
        drop(entered);
        Ok(output)
    }

    /// Shuts the compartment down from a thread: closes it (new entries
    /// get [`Error::Closed`], waiters are turned away), waits at most
    /// `bound` for the holders to finish, then closes the resource with
    /// its close hook (or drops it). Idempotent.
    ///
    /// If holders remain when `bound` expires, the resource is **not**
    /// closed under them: the report says
    /// [`CloseOutcome::Deferred`], and the last holder closes it.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{CloseOutcome, Opener, Scoped};
    ///
    /// let db = Scoped::new(Config::new("db", 1), "db", Opener::blocking(|| Ok::<_, std::io::Error>(())))?;
    /// let inside = db.enter_blocking()?;
    /// let report = db.shutdown_blocking(Duration::from_millis(10));
    /// assert_eq!(report.outcome, CloseOutcome::Deferred { holders: 1 });
    /// drop(inside); // the last holder closes it
    /// assert_eq!(db.shutdown_blocking(Duration::ZERO).outcome, CloseOutcome::AlreadyClosed);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shutdown_blocking(&self, bound: Duration) -> ShutdownReport {
        let started = Instant::now();
        self.bulkhead.close();
        let (mut version, mut holders) = self.slot.begin_close();
        let deadline = started.checked_add(bound);
        while holders > 0 && self.slot.wait_blocking(version, deadline) {
            (version, holders) = self.slot.holders();
        }
        let outcome = match self.finish_close() {
            Ok(resource) => {
                self.slot.closer.close_blocking(self.config.name, resource);
                CloseOutcome::Closed
            }
            Err(outcome) => outcome,
        };
        self.report(outcome, started)
    }

    /// As [`shutdown_blocking`](Self::shutdown_blocking), from async code:
    /// waits for the holders with the runtime timer `sleep` and awaits an
    /// async close hook.
    ///
    /// # Cancel safety
    /// Dropping the future after the compartment was closed leaves it
    /// closed with its resource open; a later shutdown call finishes the
    /// job. Dropping it while an async close hook runs drops that hook's
    /// future.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{CloseOutcome, Opener, Scoped};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let db = Scoped::new(Config::new("db", 1), "db", Opener::blocking(|| Ok::<_, std::io::Error>(())))?;
    /// assert_eq!(db.shutdown_with_timer(Duration::from_secs(1), tokio::time::sleep).await.outcome, CloseOutcome::NeverOpened);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn shutdown_with_timer<T: Future>(
        &self,
        bound: Duration,
        sleep: impl FnOnce(Duration) -> T,
    ) -> ShutdownReport {
        let started = Instant::now();
        self.bulkhead.close();
        let (mut version, mut holders) = self.slot.begin_close();
        if holders > 0 {
            let mut timer = pin!(sleep(bound));
            while holders > 0 {
                if let Either::Second = race(self.slot.changed(version), timer.as_mut()).await {
                    break;
                }
                (version, holders) = self.slot.holders();
            }
        }
        let outcome = match self.finish_close() {
            Ok(resource) => {
                self.slot.closer.close_async(resource).await;
                CloseOutcome::Closed
            }
            Err(outcome) => outcome,
        };
        self.report(outcome, started)
    }

    /// Ends a shutdown: the resource to close now, or what happened
    /// instead.
    fn finish_close(&self) -> Result<R, CloseOutcome> {
        Err(match self.slot.finish_close() {
            Finished::Close(resource) => return Ok(resource),
            Finished::NeverOpened => CloseOutcome::NeverOpened,
            Finished::Deferred { holders } => {
                tracing::warn!(
                    compartment = self.config.name,
                    resource = self.slot.resource,
                    holders,
                    "bulkhead: shutdown bound expired with holders inside; the last holder \
                     closes the resource"
                );
                CloseOutcome::Deferred { holders }
            }
            Finished::AlreadyClosed => CloseOutcome::AlreadyClosed,
        })
    }

    fn report(&self, outcome: CloseOutcome, started: Instant) -> ShutdownReport {
        ShutdownReport {
            compartment: self.config.name,
            resource: self.slot.resource,
            outcome,
            took: started.elapsed(),
        }
    }
}

impl<R> fmt::Debug for Scoped<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scoped")
            .field("name", &self.config.name)
            .field("resource", &self.slot.resource)
            .field("max_wait", &self.max_wait)
            .field("state", &self.bulkhead.state())
            .field("resource_state", &self.slot.state())
            .finish_non_exhaustive()
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
/// let db = Scoped::new(Config::new("db", 1), "db", Opener::blocking(|| Ok::<_, std::io::Error>(String::from("conn"))))?;
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
    pub fn compartment(&self) -> &'static str {
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
    /// top: run code in it with [`Scope::run`] or [`Scope::wrap`].
    ///
    /// ```
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{self, Opener, Scoped};
    ///
    /// let db = Scoped::new(Config::new("db", 1), "db", Opener::blocking(|| Ok::<_, std::io::Error>(1_i64)))?;
    /// let inside = db.enter_blocking()?;
    /// assert_eq!(inside.scope().run(|| scoped::current::<i64>().map(|r| *r)), Some(1));
    /// assert_eq!(inside.scope().compartments(), ["db"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn scope(&self) -> Scope {
        ambient::with_resource(self.compartment(), &self.resource)
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

/// What a shutdown did.
///
/// ```
/// use std::time::Duration;
/// use bulkhead_std::Config;
/// use bulkhead_std::scoped::{CloseOutcome, Opener, Scoped};
///
/// let db = Scoped::new(Config::new("db", 1), "db-pool", Opener::blocking(|| Ok::<_, std::io::Error>(())))?;
/// db.execute(|_| ())?;
/// let report = db.shutdown_blocking(Duration::from_secs(1));
/// assert_eq!((report.compartment, report.resource, report.outcome), ("db", "db-pool", CloseOutcome::Closed));
/// assert!(report.took < Duration::from_secs(1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShutdownReport {
    /// The compartment.
    pub compartment: &'static str,
    /// Its resource.
    pub resource: &'static str,
    /// What happened to the resource.
    pub outcome: CloseOutcome,
    /// How long the shutdown took (waiting and closing).
    pub took: Duration,
}

/// What a shutdown did with the resource. Examples of each are at
/// [`Scoped::shutdown_blocking`] (`Deferred`, `AlreadyClosed`),
/// [`Scoped::shutdown_with_timer`] (`NeverOpened`) and [`ShutdownReport`]
/// (`Closed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CloseOutcome {
    /// Closed after every holder finished.
    Closed,
    /// It was never opened (or every opening failed): nothing to close.
    NeverOpened,
    /// The bound expired with `holders` entries still inside (or handles
    /// still out): it was not closed under them; the last one closes it.
    Deferred {
        /// Entries still holding a seat when the bound expired.
        holders: usize,
    },
    /// An earlier shutdown already closed it.
    AlreadyClosed,
}

enum Either {
    First,
    Second,
}

/// Polls `first`, then `second`, until one completes.
async fn race<A: Future, B: Future>(first: A, second: B) -> Either {
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

/// Drives `future` on this thread, parking between polls.
fn block_on<T>(future: BoxFuture<T>) -> T {
    let mut future = future;
    let waker = crate::blocking::thread_waker();
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(value) = future.as_mut().poll(&mut cx) {
            return value;
        }
        std::thread::park();
    }
}
